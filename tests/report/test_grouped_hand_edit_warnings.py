"""One hand edit of ``summary.json`` repeated in every case (a ``counted_steps:
"many"`` in each ``metadata.cases`` entry, a case's key given twice in each case) is
one warning line, not one per case: the first of the lines, then ``; the same in N
other cases (B, C and M more)``, where the first of them stood, on stderr, from
``results.load`` and in the report's notes on loading. A warning given once, or lines
that differ by more than their case, read as before; every case left out is still
marked so in the Configuration table, the ones the line does not name included."""

from __future__ import annotations

import html
import json
import shutil

import pytest

from analysis_run import run_bench
from ipc_bench.analysis.results import grouped_warnings
from test_hand_edited_summary import NO_FIGURES, _loaded, _report, _warned

#: Four cases: 1 and 2 running, send and cached, msgpack.
RUN = ["--scenario", "decode-steady", "--num-running", "1,2", "--steps", "20",
       "--warmup-steps", "5", "--codecs", "msgpack", "--no-single-process", "--no-floor"]
CASES = ["num_running=1/send/msgpack#0", "num_running=1/cached/msgpack#0",
         "num_running=2/send/msgpack#0", "num_running=2/cached/msgpack#0"]
NOTE = "> **Note:** Loading this run: "


@pytest.fixture(scope="module")
def four_run(tmp_path_factory):
    """A real run of the four ``CASES``."""
    run = tmp_path_factory.mktemp("grouped") / "four"
    run_bench(run, RUN)
    return run


def _edit(four_run, tmp_path, change=None, text=None):
    """A copy of ``four_run`` whose ``summary.json`` is ``change``d (its object edited
    in place), then its JSON text ``text(TEXT)``."""
    run = tmp_path / "run"
    shutil.copytree(four_run, run)
    summary = json.loads((run / "summary.json").read_text())
    assert [c["case_id"] for c in summary["cases"]] == CASES
    if change is not None:
        change(summary)
    written = json.dumps(summary)
    (run / "summary.json").write_text(text(written) if text else written)
    return run


def _notes(tmp_path) -> list[str]:
    """The report's notes on loading (report.md), less their ``NOTE`` and final dot."""
    md = (tmp_path / "rep" / "report.md").read_text().splitlines()
    return [row[len(NOTE):-1] for row in md if row.startswith(NOTE)]


def _html_notes(tmp_path) -> list[str]:
    """The report's notes on loading as report.html says them (unescaped)."""
    page = html.unescape((tmp_path / "rep" / "report.html").read_text())
    return [part.split("</")[0][:-1] for part in page.split("Loading this run: ")[1:]]


def _every_entry(**values):
    """An edit that sets ``values`` in every ``metadata.cases`` entry."""
    return lambda s: [entry.update(values) for entry in s["metadata"]["cases"]]


def test_a_setting_edited_in_every_case_is_one_line(four_run, tmp_path, capsys):
    run = _edit(four_run, tmp_path, _every_entry(counted_steps="many"))
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    line = (f"{run / 'summary.json'}: metadata.cases[0].counted_steps is \"many\", not a "
            f"whole number or null (case '{CASES[0]}'; left out); the same in 3 other cases "
            f"('{CASES[1]}', '{CASES[2]}' and 1 more)")
    assert (code, _warned(err)) == (0, [line])
    assert _loaded(run) == [line]
    assert _notes(tmp_path) == [line]
    assert _html_notes(tmp_path) == [line]


def test_a_key_given_twice_in_every_case_is_one_line(four_run, tmp_path, capsys):
    run = _edit(four_run, tmp_path, text=lambda t: t.replace(
        '"scenario": "decode-steady", "policy"',
        '"scenario": "decode-steady", "scenario": "decode-steady", "policy"'))
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    line = (f"{run / 'summary.json'}: key cases[0].scenario is given 2 times (the last "
            "one read); the same in 3 other cases (cases[1], cases[2] and 1 more)")
    assert (code, _warned(err)) == (0, [line])
    assert _loaded(run) == [line]
    assert _notes(tmp_path) == [line]


def test_lines_alike_but_for_their_case_keep_the_order_they_first_came_in(
        four_run, tmp_path, capsys):
    """Two settings edited in every entry (their lines come entry by entry, so the two
    kinds alternate), a case's ``no_floor`` in two cases only: three lines, each where
    the first of its kind stood, the no_floor one naming its one other case."""
    def change(s):
        _every_entry(counted_steps="many", stream="yes")(s)
        for case in s["cases"][1:3]:
            case["no_floor"] = "x"
    run = _edit(four_run, tmp_path, change)
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    path = run / "summary.json"
    named = f"('{CASES[1]}', '{CASES[2]}' and 1 more)"
    lines = [f"{path}: metadata.cases[0].counted_steps is \"many\", not a whole number or "
             f"null (case '{CASES[0]}'; left out); the same in 3 other cases {named}",
             f"{path}: metadata.cases[0].stream is \"yes\", not true or false (case "
             f"'{CASES[0]}'; left out); the same in 3 other cases {named}",
             f"{path}: case '{CASES[1]}' has no_floor \"x\", not true or false (read as "
             "absent: inferred from the case's settings); the same in 1 other case "
             f"('{CASES[2]}')"]
    assert (code, _warned(err)) == (0, lines)
    assert _loaded(run) == lines
    assert _notes(tmp_path) == lines


def test_a_warning_given_once_or_with_other_words_reads_as_before(
        four_run, tmp_path, capsys):
    """``counted_steps`` edited to two different values, ``no_floor`` in one case: a
    line each, none grouped."""
    def change(s):
        s["metadata"]["cases"][0]["counted_steps"] = "many"
        s["metadata"]["cases"][1]["counted_steps"] = "lots"
        s["cases"][3]["no_floor"] = "x"
    run = _edit(four_run, tmp_path, change)
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    path = run / "summary.json"
    lines = [f"{path}: metadata.cases[0].counted_steps is \"many\", not a whole number or "
             f"null (case '{CASES[0]}'; left out)",
             f"{path}: metadata.cases[1].counted_steps is \"lots\", not a whole number or "
             f"null (case '{CASES[1]}'; left out)",
             f"{path}: case '{CASES[3]}' has no_floor \"x\", not true or false (read as "
             "absent: inferred from the case's settings)"]
    assert (code, _warned(err)) == (0, lines)
    assert _notes(tmp_path) == lines


def test_every_case_left_out_is_marked_so_the_unnamed_ones_too(four_run, tmp_path,
                                                                capsys):
    def change(s):
        for case in s["cases"][1:]:
            case["policy"] = 5
    run = _edit(four_run, tmp_path, change)
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    line = (f"{run / 'summary.json'}: case '{CASES[1]}' has policy 5, not a text (left "
            f"out); the same in 2 other cases ('{CASES[2]}', '{CASES[3]}')")
    assert (code, _warned(err)) == (0, [line])
    md = (tmp_path / "rep" / "report.md").read_text()
    assert [c for c in CASES if f"| 1 case: {c} (left out on loading) |" in md] == CASES[1:]


def test_grouped_warnings_keeps_lines_about_two_cases_and_a_line_given_twice():
    two = "R/steps.csv: case 'a' has the 5 step_ns values of case 'b'"
    again = "R/summary.json: case 'a' has no_floor 1, not true or false"
    other = "R/summary.json: case 'b' has no_floor 1, not true or false"
    lines = [two, "R/steps.csv: case 'c' has the 5 step_ns values of case 'd'",
             again, again, "R: no case named"]
    assert grouped_warnings(lines) == lines[:3] + [again, "R: no case named"]
    assert grouped_warnings([again, "R: x", other]) == [
        f"{again}; the same in 1 other case ('b')", "R: x"]
