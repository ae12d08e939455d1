"""A run given ``--aa`` or ``--async-scheduling`` and no ``--policies`` runs one policy
of the default (send with its A/A copy; cached with its async arm), so a report of it
and the same command without the flag read ``option --policies differs: default
(send) vs default (cached, send)`` and asked to compare with care, over a difference
the user never gave. The Runs section says that the default policies differ because
of the flag, and that the rows both runs have stay comparable."""

from __future__ import annotations

import pytest

from analysis_run import TWO_CASE_ARGS, shared_run
from ipc_bench import cli
from ipc_bench.report.blocks import comparable_rows_line

CARE = "> **Note:** The runs differ in ways that can change the numbers: compare with care."
POLICIES = ("the policies their defaults ran (`--policies` not given, or given as "
            "what a run's flags run without it: `--aa` or "
            "`--async-scheduling` runs one policy alone, so the other policy's rows are one "
            "run's alone)")
AA = "whether A/A copies of the arms ran (`--aa`: their rows are one run's alone)"
ASYNC = "whether cached+async cases ran (`--async-scheduling`: their rows are one run's alone)"
TAIL = ("options that change no figure of a row both runs have, so those rows stay "
        "comparable.")


def _runs_lines(tmp_path, runs) -> list[str]:
    """The Runs section's difference lines of a report of ``runs``: what differs
    between them, the line over them (the notes of the machine's load left out, which
    depend on what else the machine ran)."""
    out = tmp_path / "rep"
    assert cli.main(["report", *map(str, runs), "--no-figures", "--output", str(out)]) == 0
    lines = (out / "report.md").read_text().splitlines()
    section = lines[lines.index("## Runs") + 1:lines.index("## Side by side")]
    assert CARE not in section
    return [line for line in section
            if line.startswith("The runs differ") or
            (line.startswith("- ") and " against " in line.split(":")[0])]


@pytest.mark.parametrize("flag, why, second", [
    ("--aa", "--aa runs one policy alone", AA),
    ("--async-scheduling", "--async-scheduling runs the cached policy alone", ASYNC)])
def test_a_flag_that_narrows_the_default_policies_keeps_the_rows_comparable(
        tmp_path_factory, tmp_path, shared_two_case_run, flag, why, second):
    flagged = shared_run(tmp_path_factory, TWO_CASE_ARGS + [flag])
    bare, mine = (f"{p.parent.name}/{p.name}" for p in (shared_two_case_run, flagged))
    ran = "send" if flag == "--aa" else "cached"
    cases = "A/A copies (--aa)" if flag == "--aa" else "cached+async cases"
    assert _runs_lines(tmp_path, [shared_two_case_run, flagged]) == [
        f"The runs differ only in {POLICIES} and {second}: {TAIL}",
        f"- {mine} against {bare}: default policies differ: {ran} vs cached, send "
        f"(--policies not given: {why})",
        f"- {mine} against {bare}: {cases} differ: run ({flag} given) vs not run "
        "(decode-steady's default)"]


def test_a_narrowed_policies_line_alone_keeps_the_rows_comparable():
    """(A ``--policies`` the user gave does too: test_policies_given_keep_rows.)"""
    assert comparable_rows_line([
        "Y against X: default policies differ: send vs cached, send (--policies not given: "
        "--aa runs one policy alone)"]) == (
        f"The runs differ only in {POLICIES}: an option that changes no figure of a row "
        "both runs have, so those rows stay comparable.")
