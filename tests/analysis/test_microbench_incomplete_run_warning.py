"""``bench.py microbench`` on a run that is not complete (killed, stopped by SIGTERM,
failed as it wrote its files) times the cases that finished, and says so: a warning
line on stderr with the run's state in ``bench.py report``'s words and how many of its
cases finished (``microbench.incomplete_run_text``), and the same in every pyperf
file's metadata (``ipc_bench_run_status``, ``ipc_bench_run_warning``), where it timed
them with nothing saying that the others were left out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyperf
import pytest

from ipc_bench.analysis import microbench
from ipc_bench.analysis.results import read_summary
from microbench_runs import FRAME_RUN, PYPERF, copy_run, finished_run

REPO = Path(__file__).resolve().parents[2]
CASES = ["num_running=1/send/msgpack#0", "num_running=1/send/pickle#0",
         "num_running=1/send/packed#0"]
#: 2026-01-02 03:04:05 UTC, the time a killed run last rewrote its summary.json (a copy:
#: not said where the run recorded its start).
MTIME = 1767323045
TAIL = "1 of its 3 cases finished: the cases it did not finish are not timed"


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory, "incomplete-warning", FRAME_RUN)


def _edit(run: Path, **fields) -> dict:
    """``run``'s summary.json with ``fields`` set, its first case alone finished (the
    cases listed in ``fields["cases"]`` where given, else the first alone) and no end
    recorded; returns it as written."""
    path = run / "summary.json"
    summary = json.loads(path.read_text())
    assert [c["case_id"] for c in summary["cases"]] == CASES
    summary["metadata"].pop("end_time_utc", None)
    summary["metadata"]["start_time_utc"] = "2026-01-02T03:04:00.5+00:00"  # said, not MTIME
    summary.update(cases=summary["cases"][:1], comparisons=[], byte_model=[])
    summary.update(fields)
    path.write_text(json.dumps(summary))
    os.utime(path, (MTIME, MTIME))
    return summary


def _killed(run: Path) -> dict:
    return _edit(run, status="incomplete", running_case=CASES[1], failed_case=None,
                 problems=[])


def test_a_killed_run_is_timed_with_a_warning_and_its_files_say_so(finished, tmp_path):
    run = copy_run(finished, tmp_path)
    _killed(run)
    assert (run / ".claimed").is_file()  # its lock let go: killed, not running
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "bench.py", "microbench", str(run), "--codecs",
                           "msgpack", "--directions", "s2r", "--ops", "encode", *PYPERF,
                           "--output", str(out)], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    warning = (f"{run}: this run is incomplete: stopped without finishing its summary "
               "(killed, or summary.json could not be written: a full disk, say): no "
               "process holds its lock, no end was recorded, summary status incomplete, "
               f"1 of 3 cases recorded, last case {CASES[1]} running (the run "
               f"started 2026-01-02 03:04:00 UTC); {TAIL}")
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("microbench: 1 benchmarks (send: 1) -> ")
    # the command's name first, as every command's warnings read (was "microbench:")
    assert lines[1] == f"bench.py microbench: warning: {warning}"
    meta = pyperf.BenchmarkSuite.load(str(out / "send.json")).get_benchmarks()[0] \
        .get_metadata()
    assert (meta["ipc_bench_run_status"], meta["ipc_bench_run_warning"]) == (
        "incomplete", warning)


def test_a_run_stopped_by_sigterm_names_the_interrupted_case(finished, tmp_path):
    run = copy_run(finished, tmp_path)
    stopped = dict(read_summary(run)["cases"][1], complete=False)
    summary = _edit(run, status="incomplete", running_case=None, failed_case=CASES[1],
                    problems=[f"{CASES[1]}: interrupted by SIGTERM"],
                    cases=read_summary(run)["cases"][:1] + [stopped])
    assert microbench.incomplete_run_text(str(run), summary) == (
        f"{run}: this run is incomplete: {CASES[1]}: interrupted by SIGTERM; {TAIL}")


def test_a_run_whose_disk_filled_after_its_first_case_says_it_failed(finished, tmp_path):
    run = copy_run(finished, tmp_path)
    problem = f"cannot write results to {run}: No space left on device"
    summary = _edit(run, status="failed", running_case=None, failed_case=CASES[1],
                    problems=[problem])
    assert microbench.incomplete_run_text(str(run), summary) == (
        f"{run}: this run failed: {problem}; case {CASES[1]} was running; {TAIL}")
    assert microbench.arm_metadata(str(run), "send") == {
        "description": "ipc-bench captured messages, arm send", "ipc_bench_run": "run",
        "ipc_bench_arm": "send", "ipc_bench_run_status": "failed",
        "ipc_bench_run_warning": f"{run}: this run failed: {problem}; case {CASES[1]} "
                                 f"was running; {TAIL}"}


def test_a_complete_run_gets_no_warning(finished):
    assert microbench.incomplete_run_text(str(finished), read_summary(finished)) is None
    assert microbench.arm_metadata(str(finished), "send") == {
        "description": "ipc-bench captured messages, arm send", "ipc_bench_run": "run",
        "ipc_bench_arm": "send", "ipc_bench_run_status": "complete"}
