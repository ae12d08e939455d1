"""A hand-edited ``summary.json`` whose cases lack a timed metric their recorded
send/cached comparison tested (``sched_cpu_ns_per_step`` taken out): the pair table
shows no row of it while the findings' legend counts it among the metrics tested
together by Holm's method. One loading warning says which metric and which cases, in
the report and from ``results.load``; it was left out of the table silently."""

from __future__ import annotations

import json
import shutil
import warnings

import pytest

from ipc_bench import cli
from fault_helpers import one_runner_mark
from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsWarning

KEY = "sched_cpu_ns_per_step"


@pytest.fixture(scope="module")
def good_run(tmp_path_factory, shared_three_repetition_run):
    run = tmp_path_factory.mktemp("family-gap") / "good"
    shutil.copytree(shared_three_repetition_run, run)
    return run


def _without(good_run, tmp_path, which) -> tuple:
    """A copy of ``good_run`` with ``KEY`` taken out of the cases ``which(case)``
    picks; the copy and the send, then the cached case ids, each in summary order."""
    run = tmp_path / "run"
    shutil.copytree(good_run, run)
    summary = json.loads((run / "summary.json").read_text())
    family = summary["comparisons"][0]["family"]
    assert KEY in family and len(family) == 7
    for case in summary["cases"]:
        if which(case):
            del case[KEY]
    (run / "summary.json").write_text(json.dumps(summary))
    ids = [c["case_id"] for arm in ("send", "cached") for c in summary["cases"]
           if c["policy"] == arm]
    return run, ids


def _report(run, tmp_path, capsys) -> tuple[int, list[str], str]:
    code = cli.main(["report", str(run), "--no-figures", "--output", str(tmp_path / "rep")])
    md = (tmp_path / "rep" / "report.md").read_text() if code == 0 else ""
    return code, capsys.readouterr().err.splitlines(), md


def _loaded(run) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResultsWarning)
        load([run])
    return [str(w.message) for w in caught if issubclass(w.category, ResultsWarning)]


def test_every_case_without_it_is_one_warning(good_run, tmp_path, capsys):
    run, ids = _without(good_run, tmp_path, lambda case: True)
    line = (f"{run / 'summary.json'}: cases {ids[0]!r}, {ids[1]!r}, {ids[2]!r} and 3 more "
            f"have no {KEY}, a timed metric their recorded comparisons of send and cached "
            "tested (counted in the Holm adjustment their verdicts give): the pair table "
            "leaves out the pairs without it")
    code, err, md = _report(run, tmp_path, capsys)
    assert (code, err) == (0, [f"bench.py report: warning: {line}"])
    assert f"> **Note:** Loading this run: {line}." in md
    assert "| scheduler CPU µs/step |" not in md  # the row it speaks of
    assert _loaded(run) == [line]


def test_one_case_without_it_is_named(good_run, tmp_path, capsys):
    run, ids = _without(good_run, tmp_path,
                        lambda case: case["policy"] == "cached" and case["repetition"] == 1)
    gone = [i for i in ids if i.endswith("cached/msgpack#1")]
    line = (f"{run / 'summary.json'}: case {gone[0]!r} has no {KEY}, a timed metric its "
            "recorded comparison of send and cached tested (counted in the Holm "
            "adjustment its verdicts give): the pair table leaves out the pairs without it")
    code, err, md = _report(run, tmp_path, capsys)
    assert (code, err) == (0, [f"bench.py report: warning: {line}"])
    assert (f"| num_running=4 | msgpack{one_runner_mark()} | scheduler CPU µs/step | 2 |"
            in md)  # 3 pairs less 1


def test_the_unedited_run_has_no_such_warning(good_run):
    assert [w for w in _loaded(good_run) if KEY in w] == []
