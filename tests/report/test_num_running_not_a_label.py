"""A hand-edited ``num_running`` in a replay case (its workload ``trace=...`` has no
num_running label) is warned about and read as absent, as a ``trace`` in a steady case
is (``metadata_checks._label_field_lines``), where it was loaded as it was and the findings
could name a batch the replay never asked for."""

from __future__ import annotations

import json
import shutil
import warnings

import pytest

from ipc_bench import cli
from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsWarning


@pytest.fixture
def run(shared_timed_run, tmp_path):
    """A copy of the timed replay whose send case has num_running 5 and cached case
    num_running 8; returns (folder, send case, cached case, workload)."""
    source, _, send, cached = shared_timed_run
    run = tmp_path / "run"
    shutil.copytree(source, run, ignore=shutil.ignore_patterns("report"))
    path = run / "summary.json"
    summary = json.loads(path.read_text())
    assert [c["case_id"] for c in summary["cases"]] == [send, cached]
    assert all("num_running" not in c for c in summary["cases"])
    workload = summary["cases"][0]["workload"]
    assert workload == "trace=azure-conv-timed:6"
    summary["cases"][0]["num_running"] = 5
    summary["cases"][1]["num_running"] = 8
    path.write_text(json.dumps(summary))
    return run, send, cached, workload


def _lines(run) -> list[str]:
    folder, send, cached, workload = run
    where = folder / "summary.json"
    return [f"{where}: case '{send}' has num_running 5, but its workload is {workload}, "
            "without a num_running (read as absent, its workload's)",
            f"{where}: case '{cached}' has num_running 8, but its workload is "
            f"{workload}, without a num_running (read as absent, its workload's)"]


def test_a_num_running_in_a_replay_case_is_warned_and_read_as_absent(run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResultsWarning)
        loaded = load(run[0])
    assert [str(w.message) for w in caught] == _lines(run)
    assert loaded.warnings == {"run": _lines(run)}
    assert list(loaded.cases["case_id"]) == [run[1], run[2]]  # both kept
    assert "num_running" not in loaded.cases.columns


def test_report_says_it_on_stderr(run, tmp_path, capsys):
    assert cli.main(["report", str(run[0]), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 0
    assert capsys.readouterr().err.splitlines() == [
        f"bench.py report: warning: {line}" for line in _lines(run)]
