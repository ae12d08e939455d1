"""Runs that differed only in ``--no-floor`` or ``--no-single-process`` got the note "The
runs differ in ways that can change the numbers: compare with care", though those
options change no figure of a row both runs have and no row was marked not
comparable. The Runs section says what differs and that the shared rows stay
comparable; any other difference keeps the care note."""

from __future__ import annotations

from ipc_bench import cli
from ipc_bench.report.blocks import UNLIKE_CELL, comparable_rows_line

CARE = "> **Note:** The runs differ in ways that can change the numbers: compare with care."
FLOOR = ("whether the cases replayed their floors (`--no-floor`: the floor runs after a "
         "case's counted steps, so only `floor tok/s` and `x floor` are missing where it did "
         "not)")
SINGLE = ("whether the single-process cases ran (`--no-single-process`: their rows are one "
          "run's alone)")
ORDER = "the seed of their arms' order (`--order-seed`: the same cases in other orders)"


def test_a_floor_alone_is_said_and_the_rows_stay_comparable():
    assert comparable_rows_line([
        "rNF against rB: floors differ: not run (--no-floor given) vs run (decode-steady's "
        "default)"]) == (
        f"The runs differ only in {FLOOR}: an option that changes no figure of a row both "
        "runs have, so those rows stay comparable.")


def test_several_such_differences_are_named_each_once_in_a_fixed_order():
    assert comparable_rows_line([
        "rOS against rB: option --order-seed differs: 3 vs default (--seed 0)",
        "rE against rB, rOS: single-process cases differ: not run (--no-single-process "
        "given) vs run (decode-steady's default)",
        "rNF against rB: floors differ: not run (--no-floor given) vs run (decode-steady's "
        "default)",
        "rE against rOS: option --order-seed differs: 7 vs 3"]) == (
        f"The runs differ only in {FLOOR}, {SINGLE} and {ORDER}: options that change no "
        "figure of a row both runs have, so those rows stay comparable.")


def test_any_other_difference_leaves_no_such_line():
    assert comparable_rows_line([
        "rNSP against rB: single-process cases differ: not run (--no-single-process given) "
        "vs run (decode-steady's default)",
        "rC against rB: option --vocab-size differs: 32000 vs default (128256)"]) == ""
    assert comparable_rows_line([
        "rBoot against rB: option --ci-method differs: bootstrap vs t"]) == ""
    assert comparable_rows_line([]) == ""


def test_a_report_of_runs_that_differ_in_no_floor_alone(shared_two_case_run,
                                                        shared_floor_run, tmp_path):
    out = tmp_path / "rep"
    assert cli.main(["report", str(shared_floor_run), str(shared_two_case_run),
                     "--no-figures", "--output", str(out)]) == 0
    md = (out / "report.md").read_text()
    lines = md.splitlines()
    assert CARE not in lines
    floor, bare = (f"{p.parent.name}/{p.name}" for p in (shared_floor_run,
                                                        shared_two_case_run))
    at = lines.index(f"The runs differ only in {FLOOR}: an option that changes no figure "
                     "of a row both runs have, so those rows stay comparable.")
    assert lines[at + 2].startswith(f"Reference: run `{floor}`, the first loaded")
    assert lines[at + 4:at + 6] == [
        f"- {bare} against {floor}: floors differ: not run (--no-floor given) vs run "
        "(decode-steady's default)", ""]
    # no row marked unlike (a floor noise note may call a case's floor not comparable
    # with its twin's on a busy machine: that is the machine's, not the option's)
    assert UNLIKE_CELL not in md
