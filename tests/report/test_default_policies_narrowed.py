"""A run given ``--aa`` or ``--async-scheduling`` and no ``--policies`` runs one policy
of the default (send with its A/A copy; cached with its async arm), so a report of it
and the same command without the flag read ``option --policies differs: default
(send) vs default (cached, send)`` and asked to compare with care, over a difference
the user never gave. The Runs section says that the default policies differ because
of the flag, and that the rows both runs have stay comparable."""

from __future__ import annotations

import pytest

from analysis_run import TWO_CASE_ARGS, shared_run
from ipc_bench.report.blocks import comparable_rows_line
from runs_section import AA, ASYNC, NARROWED, runs_lines

TAIL = ("options that change no figure of a row both runs have, so those rows stay "
        "comparable.")


@pytest.mark.parametrize("flag, why, second", [
    ("--aa", "--aa runs one policy alone", AA),
    ("--async-scheduling", "--async-scheduling runs the cached policy alone", ASYNC)])
def test_a_flag_that_narrows_the_default_policies_keeps_the_rows_comparable(
        tmp_path_factory, tmp_path, shared_two_case_run, flag, why, second):
    flagged = shared_run(tmp_path_factory, TWO_CASE_ARGS + [flag])
    bare, mine = (f"{p.parent.name}/{p.name}" for p in (shared_two_case_run, flagged))
    ran = "send" if flag == "--aa" else "cached"
    cases = "A/A copies (--aa)" if flag == "--aa" else "cached+async cases"
    assert runs_lines(tmp_path, [shared_two_case_run, flagged]) == [
        f"The runs differ only in {NARROWED} and {second}: {TAIL}",
        f"- {mine} against {bare}: default policies differ: {ran} vs cached, send "
        f"(--policies not given: {why})",
        f"- {mine} against {bare}: {cases} differ: run ({flag} given) vs not run "
        "(decode-steady's default)"]


def test_a_narrowed_policies_line_alone_keeps_the_rows_comparable():
    """(A ``--policies`` the user gave does too: test_policies_given_keep_rows.)"""
    assert comparable_rows_line([
        "Y against X: default policies differ: send vs cached, send (--policies not given: "
        "--aa runs one policy alone)"]) == (
        f"The runs differ only in {NARROWED}: an option that changes no figure of a row "
        "both runs have, so those rows stay comparable.")
