"""Two cases of the Runs section's line on runs that differ only in options that change
no figure of a row both have: an ``--aa`` run against an ``--async-scheduling`` run
(send and send' against cached and cached+async) have no row in common, so the line
must not say that "those rows stay comparable"; and a run given ``--policies
send,cached``, the default, against an ``--aa`` run that narrowed the default, differs
by the flag alone, not by a policy choice that asks to compare with care."""

from __future__ import annotations

from analysis_run import TWO_CASE_ARGS, shared_run
from ipc_bench.report.blocks import comparable_rows_line
from runs_section import AA, ASYNC, CARE, NARROWED, runs_lines

def test_the_line_names_a_run_that_shares_no_row_with_the_reference():
    lines = ["Y against X: A/A copies (--aa) differ: run (--aa given) vs not run "
             "(decode-steady's default)"]
    assert comparable_rows_line(lines, ["Y"]) == (
        f"The runs differ only in {AA}: an option that changes no figure of a row both "
        "runs have, but run `Y` has no row in common with the reference: Side by side "
        "says what to run.")
    assert comparable_rows_line(lines + [line.replace("Y", "Z") for line in lines],
                                ["Y", "Z"]).endswith(
        "but runs `Y`, `Z` have no row in common with the reference: Side by side says "
        "what to run.")


def test_an_aa_run_against_an_async_run_says_they_share_no_row(tmp_path_factory, tmp_path):
    aa = shared_run(tmp_path_factory, TWO_CASE_ARGS + ["--aa"])
    both = shared_run(tmp_path_factory, TWO_CASE_ARGS + ["--async-scheduling"])
    name = f"{both.parent.name}/{both.name}"
    section = runs_lines(tmp_path, [aa, both])
    assert section[0] == (
        f"The runs differ only in {NARROWED}, {AA} and {ASYNC}: options that change no "
        f"figure of a row both runs have, but run `{name}` has no row in common with the "
        "reference: Side by side says what to run.")
    assert CARE not in section


def test_policies_given_as_the_default_against_a_narrowed_default(tmp_path_factory,
                                                                  tmp_path):
    given = shared_run(tmp_path_factory, TWO_CASE_ARGS + ["--policies", "send,cached"])
    aa = shared_run(tmp_path_factory, TWO_CASE_ARGS + ["--aa"])
    mine, other = (f"{p.parent.name}/{p.name}" for p in (aa, given))
    assert runs_lines(tmp_path, [given, aa]) == [
        f"The runs differ only in {NARROWED} and {AA}: options that change no figure of a "
        "row both runs have, so those rows stay comparable.",
        f"- {mine} against {other}: default policies differ: send vs cached, send "
        "(--policies not given or given as its default: --aa runs one policy alone)",
        f"- {mine} against {other}: A/A copies (--aa) differ: run (--aa given) vs not run "
        "(decode-steady's default)"]
    assert "(--policies not given: --aa" in "\n".join(
        runs_lines(tmp_path / "bare", [shared_run(tmp_path_factory, TWO_CASE_ARGS), aa]))
