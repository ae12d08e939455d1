"""A hand-edited ``trace`` in a case whose workload has no trace label (a
decode-steady case: ``num_running=4``) is warned about and read as absent, as a label
field that differs from its workload's is (``metadata_checks._label_field_lines``), where it was
loaded as it was: ``"x"`` would have made the case a trace replay, ``5`` and ``["a"]``
a column of mixed kinds."""

from __future__ import annotations

import json
import shutil
import warnings

import pytest

from ipc_bench import cli
from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsWarning

SEND, CACHED = "num_running=4/send/msgpack#0", "num_running=4/cached/msgpack#0"


@pytest.fixture
def run(shared_two_case_run, tmp_path):
    """A copy of the two-case run whose send case has trace 5 and cached case trace
    ["a"]."""
    run = tmp_path / "run"
    shutil.copytree(shared_two_case_run, run, ignore=shutil.ignore_patterns("report"))
    path = run / "summary.json"
    summary = json.loads(path.read_text())
    assert [c["case_id"] for c in summary["cases"]] == [SEND, CACHED]
    assert all("trace" not in c for c in summary["cases"])
    summary["cases"][0]["trace"] = 5
    summary["cases"][1]["trace"] = ["a"]
    path.write_text(json.dumps(summary))
    return run


def _lines(run) -> list[str]:
    where = run / "summary.json"
    return [f"{where}: case '{SEND}' has trace 5, but its workload is num_running=4, "
            "without a trace (read as absent, its workload's)",
            f"{where}: case '{CACHED}' has trace [\"a\"], but its workload is "
            "num_running=4, without a trace (read as absent, its workload's)"]


def test_a_trace_in_a_steady_case_is_warned_and_read_as_absent(run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResultsWarning)
        loaded = load(run)
    assert [str(w.message) for w in caught] == _lines(run)
    assert loaded.warnings == {"run": _lines(run)}
    assert list(loaded.cases["case_id"]) == [SEND, CACHED]  # both kept
    assert "trace" not in loaded.cases.columns


def test_report_says_it_on_stderr(run, tmp_path, capsys):
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 0
    assert capsys.readouterr().err.splitlines() == [
        f"bench.py report: warning: {line}" for line in _lines(run)]


def test_a_text_trace_does_not_make_a_steady_case_a_replay(run):
    path = run / "summary.json"
    summary = json.loads(path.read_text())
    summary["cases"][0]["trace"] = "azure-conv:10"
    del summary["cases"][1]["trace"]
    path.write_text(json.dumps(summary))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResultsWarning)
        loaded = load(run)
    assert [str(w.message) for w in caught] == [
        f"{path}: case '{SEND}' has trace \"azure-conv:10\", but its workload is "
        "num_running=4, without a trace (read as absent, its workload's)"]
    assert "trace" not in loaded.cases.columns
