"""``--codecs`` chooses which cases a run runs, as ``--policies`` does: a codec's rows
are measured alike whichever others ran. Runs that differed in their codecs alone read
"The runs differ in ways that can change the numbers: compare with care" where a
``--policies`` difference read that the shared rows stay comparable. A codecs
difference, given or in effect, now counts among the differences that keep the shared
rows comparable, the rows one run lacks shown ``-`` as for policies."""

from __future__ import annotations

from analysis_run import TWO_CASE_ARGS, shared_run
from ipc_bench.report.blocks import comparable_rows_line
from runs_section import ASYNC, CARE, runs_lines

CODECS = ("the codecs they ran (`--codecs` chooses cases alone: a codec's rows are "
          "measured alike whichever others ran, and a codec one run ran alone has its rows "
          "there alone)")
POLICIES = ("the policies they ran (`--policies` chooses cases alone: a policy's rows are "
            "measured alike whichever others ran, and a policy one run ran alone has its "
            "rows there alone)")
#: ``TWO_CASE_ARGS`` (``--codecs msgpack``) with pickle's two cases beside msgpack's.
BOTH_CODECS_ARGS = [("msgpack,pickle" if a == "msgpack" else a) for a in TWO_CASE_ARGS]


def test_a_report_of_runs_that_differ_in_codecs_alone(tmp_path_factory, tmp_path,
                                                      shared_two_case_run):
    both = shared_run(tmp_path_factory, BOTH_CODECS_ARGS)
    mine, bare = (f"{p.parent.name}/{p.name}" for p in (both, shared_two_case_run))
    lines = runs_lines(tmp_path, [shared_two_case_run, both])
    assert lines == [
        f"The runs differ only in {CODECS}: an option that changes no figure of a row both "
        "runs have, so those rows stay comparable.",
        f"- {mine} against {bare}: option --codecs differs: [msgpack, pickle] vs [msgpack]"]
    assert CARE not in lines
    md = (tmp_path / "rep" / "report.md").read_text().splitlines()
    side = md[md.index("## Side by side"):]
    side = side[:next(i for i in range(1, len(side)) if side[i].startswith("## "))]
    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in side
            if ln.startswith("| num_running=4 | ")]
    # three tables (tokens/s, bytes, step time) of four rows: msgpack's with a ratio,
    # pickle's, which the first run lacks, with none; then the effect table's two
    for table in (rows[0:4], rows[4:8], rows[8:12]):
        assert [(r[1], r[2], r[5] == "-") for r in table] == [
            ("send", "msgpack", False), ("cached", "msgpack", False),
            ("send", "pickle", True), ("cached", "pickle", True)]
    assert [(r[1], r[4] == "-") for r in rows[12:]] == [("msgpack", False), ("pickle", True)]
    assert not any("≠" in ln or "(not comparable)" in ln for ln in side)


def test_codecs_given_or_in_effect_keep_the_shared_rows_comparable():
    assert comparable_rows_line([
        "Y against X: option --codecs differs: [msgpack] vs default (msgpack, pickle)"]) == (
        f"The runs differ only in {CODECS}: an option that changes no figure of a row both "
        "runs have, so those rows stay comparable.")
    # in effect, and given, in one report: the codecs named once
    assert comparable_rows_line([
        "Y against X: codecs in effect differ: msgpack vs pickle (--codecs [msgpack, "
        "pickle] in both)",
        "Z against X: option --codecs differs: [pickle] vs [msgpack]",
        "Zc against X: option --policies differs: [cached] vs default (cached, send)",
        "Zc against X: cached+async cases differ: run (--async-scheduling given) vs not run "
        "(decode-steady's default)"], ["Z"]) == (
        f"The runs differ only in {POLICIES}, {CODECS} and {ASYNC}: options that change no "
        "figure of a row both runs have, but run `Z` has no row in common with the "
        "reference: Side by side says what to run.")
    # with any other difference, the care note as before
    assert comparable_rows_line([
        "Y against X: option --codecs differs: [msgpack] vs default (msgpack, pickle)",
        "Y against X: option --vocab-size differs: 32000 vs default (128256)"]) == ""
