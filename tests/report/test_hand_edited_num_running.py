"""A case whose ``num_running`` a hand edit made other than its workload's (the
``num_running`` label its ``workload``, ``case_id`` and tables go by) is read with its
workload's, with one warning line naming the case and both values: the findings'
words (``At N running requests``) and the tables' ``num_running=N`` name one batch."""

from __future__ import annotations

import json
import shutil
import warnings

from ipc_bench import cli
from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsWarning

SEND = "num_running=4/send/msgpack#0"


def _edited(shared_two_case_run, tmp_path, **fields):
    run = tmp_path / "run"
    shutil.copytree(shared_two_case_run, run)
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["cases"][0]["case_id"], summary["cases"][0]["num_running"]) == (SEND, 4)
    summary["cases"][0].update(fields)
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def _loaded(run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResultsWarning)
        results = load([run])
    return results, [str(w.message) for w in caught if issubclass(w.category, ResultsWarning)]


def test_a_num_running_other_than_the_workloads_is_read_as_the_workloads(
        shared_two_case_run, tmp_path, capsys):
    run = _edited(shared_two_case_run, tmp_path, num_running=5)
    line = (f"{run}/summary.json: case {SEND!r} has num_running 5, but its workload is "
            "num_running=4 (read as 4, its workload's)")
    results, lines = _loaded(run)
    assert lines == [line]
    assert results.cases["num_running"].tolist() == [4, 4]
    capsys.readouterr()
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 0
    assert capsys.readouterr().err.splitlines() == [f"bench.py report: warning: {line}"]
    md = (tmp_path / "rep" / "report.md").read_text()
    assert f"> **Note:** Loading this run: {line}." in md
    assert "At 5 running" not in md and "At 4 running requests" in md


def test_a_num_running_as_its_workloads_says_nothing(shared_two_case_run, tmp_path):
    results, lines = _loaded(_edited(shared_two_case_run, tmp_path, num_running=4.0))
    assert lines == []
    assert results.cases["num_running"].tolist() == [4, 4]
