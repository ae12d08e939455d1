"""``bench.py ... > /dev/full``: every case was measured and written before the tables
were printed, so the run is ``complete`` with the lost stdout among its ``problems``
(exit 1, the error line saying where the results are), where it was once ``failed``.
``load`` says so once, as a ``RunStatusWarning`` that calls the run complete, and the
report once, as a note; ``bench.py report`` prints no warning line of it (as for a
run that is not complete, the report's note says it)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

from ipc_bench.analysis.results import RunStatusWarning, load

REPO = Path(__file__).resolve().parents[2]

TINY = ("--scenario", "decode-steady", "--num-running", "2", "--steps", "20",
        "--warmup-steps", "2", "--policies", "send,cached", "--codecs", "msgpack",
        "--no-single-process", "--no-floor", "--quiet")
NO_SPACE = "No space left on device"


@pytest.fixture(scope="module")
def full_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    run = tmp_path_factory.mktemp("full_stdout_run") / "run"
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "bench.py", *TINY, "--output", str(run)],
                              cwd=REPO, stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=120)
    return run, proc


def test_the_run_is_complete_with_its_lost_stdout_recorded(full_run):
    run, proc = full_run
    assert (proc.returncode, proc.stderr) == (
        1, f"bench.py: error: cannot write to stdout: {NO_SPACE}; the results are in "
           f"{run}\n")
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["status"], summary["problems"], summary["failed_case"]) == (
        "complete", [f"cannot write to stdout: {NO_SPACE}"], None)
    assert [c["complete"] for c in summary["cases"]] == [True, True]
    steps = pd.read_csv(run / "steps.csv")
    assert sorted(steps["case_id"].unique()) == sorted(c["case_id"] for c in summary["cases"])


def test_load_says_it_once_and_calls_the_run_complete(full_run):
    run, _ = full_run
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = load(run)
    line = (f"{run}: this run is complete, every case measured and written; as it ended: "
            f"cannot write to stdout: {NO_SPACE} (its terminal tables were not printed: "
            f"cd {REPO} && python bench.py report {run} shows them)")
    assert [(w.category, str(w.message)) for w in caught] == [(RunStatusWarning, line)]
    assert results.status == {"run": "complete"}
    assert results.status_warning == {"run": line}
    assert results.status_detail == {"run": ""}
    assert results.warnings == {"run": [line]}
    assert len(results.finished().cases) == 2


def test_the_report_notes_it_once_and_prints_no_warning(full_run, tmp_path):
    run, _ = full_run
    out = tmp_path / "rep"
    proc = subprocess.run([sys.executable, "bench.py", "report", str(run), "--no-figures",
                           "--output", str(out)], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        0, f"report: {out / 'report.html'}\n", "")
    md = (out / "report.md").read_text()
    note = (f"> **Note:** This run is complete, every case measured and written; as it "
            f"ended: cannot write to stdout: {NO_SPACE} (its terminal tables were not "
            f"printed).\n")
    assert md.count(note) == 1
    assert md.count(NO_SPACE) == 1
    assert "failed" not in md.split("## ")[0] and "- status: complete\n" in md
