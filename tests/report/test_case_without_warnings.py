"""A case whose ``warnings`` the loader read as absent (a hand edit left it out, or
left a value that is no list), while the run's other cases keep theirs, carries NaN in
``Results.cases``' ``warnings`` column: the report reads it as no warnings
(``frames.listed``), its findings calling a difference significant included, and
prints the loader's one line about it."""

from __future__ import annotations

import json
import shutil

import pytest

from ipc_bench import cli
from ipc_bench.analysis.frames import listed
from ipc_bench.report import findings

CASE = "num_running=4/cached/msgpack#0"


def test_a_list_cell_of_any_other_value_is_no_list():
    assert [listed(v) for v in (["a"], ("a", "b"), [], float("nan"), None, "abc", 5, {})] \
        == [["a"], ["a", "b"], [], [], [], [], [], []]


def test_the_rough_caveat_reads_a_case_without_warnings():
    text = "x (over 3 repetitions, significant after Holm (p 0.001, adjusted 0.007))."
    rough = {"num_steps": 20, "warnings": ["only 20 counted steps (< 100): figures are rough"]}
    pairs = [({"num_steps": 20, "warnings": float("nan")}, rough)]
    assert findings._rough_caveat(text, pairs) == (
        text + " 1 of its 2 cases' figures are rough: only 20 counted steps (< 100), as its "
        "warning says.")


@pytest.mark.parametrize("value, line", [
    (None, None),
    ("abc", 'has warnings "abc", not a list (read as absent: no warnings recorded)'),
    (5, "has warnings 5, not a list (read as absent: no warnings recorded)"),
    ({}, "has warnings {}, not a list (read as absent: no warnings recorded)")])
def test_the_report_of_a_run_with_one_such_case(
        shared_three_repetition_run, tmp_path, capsys, value, line):
    run = tmp_path / "run"
    shutil.copytree(shared_three_repetition_run, run)
    summary = json.loads((run / "summary.json").read_text())
    case = next(c for c in summary["cases"] if c["case_id"] == CASE)
    if value is None:
        del case["warnings"]
    else:
        case["warnings"] = value
    # the run's comparison finds its tokens/s change significant after Holm
    (comparison,) = summary["comparisons"]
    comparison["metrics"]["output_tokens_per_s"].update(
        significant=True, p_value=0.001, p_adjusted=0.007, verdict="significant")
    (run / "summary.json").write_text(json.dumps(summary))
    capsys.readouterr()
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 0
    warned = [ln for ln in capsys.readouterr().err.splitlines() if "has warnings" in ln]
    assert warned == ([] if line is None else [
        f"bench.py report: warning: {run}/summary.json: case {CASE!r} {line}"])
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "significant after Holm (p 0.001, adjusted 0.007)" in md
