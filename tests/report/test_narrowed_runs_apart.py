"""Two cases of the Runs section's line on runs that differ only in options that change
no figure of a row both have: an ``--aa`` run against an ``--async-scheduling`` run
(send and send' against cached and cached+async) have no row in common, so the line
must not say that "those rows stay comparable"; and a run given ``--policies
send,cached``, the default, against an ``--aa`` run that narrowed the default, differs
by the flag alone, not by a policy choice that asks to compare with care."""

from __future__ import annotations

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


def _runs_section(tmp_path, runs) -> list[str]:
    """The Runs section's lines, from the line over its differences to Side by side."""
    out = tmp_path / "rep"
    assert cli.main(["report", *map(str, runs), "--no-figures", "--output", str(out)]) == 0
    lines = (out / "report.md").read_text().splitlines()
    section = lines[lines.index("## Runs") + 1:lines.index("## Side by side")]
    return [line for line in section
            if line.startswith(("The runs differ", "> **Note:** The runs differ")) or
            (line.startswith("- ") and " against " in line.split(":")[0])]


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
    section = _runs_section(tmp_path, [aa, both])
    assert section[0] == (
        f"The runs differ only in {POLICIES}, {AA} and {ASYNC}: options that change no "
        f"figure of a row both runs have, but run `{name}` has no row in common with the "
        "reference: Side by side says what to run.")
    assert CARE not in section


def test_policies_given_as_the_default_against_a_narrowed_default(tmp_path_factory,
                                                                  tmp_path):
    given = shared_run(tmp_path_factory, TWO_CASE_ARGS + ["--policies", "send,cached"])
    aa = shared_run(tmp_path_factory, TWO_CASE_ARGS + ["--aa"])
    mine, other = (f"{p.parent.name}/{p.name}" for p in (aa, given))
    assert _runs_section(tmp_path, [given, aa]) == [
        f"The runs differ only in {POLICIES} and {AA}: options that change no figure of a "
        "row both runs have, so those rows stay comparable.",
        f"- {mine} against {other}: default policies differ: send vs cached, send "
        "(--policies not given or given as its default: --aa runs one policy alone)",
        f"- {mine} against {other}: A/A copies (--aa) differ: run (--aa given) vs not run "
        "(decode-steady's default)"]
    assert "(--policies not given: --aa" in "\n".join(
        _runs_section(tmp_path / "bare", [shared_run(tmp_path_factory, TWO_CASE_ARGS), aa]))
