"""``bench.py microbench RUN`` on a run still going that has finished no case says the
run is still running, as ``bench.py report`` says it (a process holds the lock on
its claim file: ``results.unfinished_state``), not that it was stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from analysis_run import bench_in_process
from ipc_bench import cli

ROOT = Path(__file__).resolve().parents[2]

#: Which cases keep messages (``capture.CAPTURE_RULE``).
RULE = ("repetition 0 of each case keeps its counted steps' messages when it finishes, "
        "except the streamed cases of soak")
RUNNING = ("bench.py microbench: error: no captured messages in {} yet: the run is still "
           "running (no case has finished); " + RULE + "\n")
STOPPED = ("bench.py microbench: error: no captured messages in {}: the run was stopped "
           "before any case finished; " + RULE + "\n")


def _unfinished_run(folder: Path, **metadata) -> None:
    from ipc_bench.harness.run_folder import CLAIM_FILE, FORMAT_VERSION

    folder.mkdir()
    (folder / CLAIM_FILE).touch()
    (folder / "summary.json").write_text(json.dumps({
        "format_version": FORMAT_VERSION, "status": "incomplete",
        "running_case": "num_running=1/send/msgpack#0", "failed_case": None,
        "metadata": {"scenario": "decode-steady", **metadata}, "cases": [],
        "comparisons": [], "byte_model": [], "problems": []}))


def test_a_run_holding_its_lock_is_still_running(tmp_path, capsys):
    from ipc_bench.analysis.results import STILL_RUNNING, unfinished_state
    from ipc_bench.harness.run_folder import _hold_claim

    run = tmp_path / "live"
    _unfinished_run(run)
    claim = _hold_claim(run)
    assert claim is not None
    try:
        assert unfinished_state(run) == STILL_RUNNING  # what report reads
        assert cli.main(["microbench", str(run)]) == 2
        assert capsys.readouterr() == ("", RUNNING.format(run / "messages"))
    finally:
        claim.close()
    # the lock let go with no end recorded: killed, so stopped
    assert cli.main(["microbench", str(run)]) == 2
    assert capsys.readouterr() == ("", STOPPED.format(run / "messages"))


def test_a_run_that_recorded_its_end_was_stopped_even_while_locked(tmp_path, capsys):
    """An end recorded (an interrupted run writing its last lines, lock not yet let
    go) is a run that stopped, as report reads it."""
    from ipc_bench.harness.run_folder import _hold_claim

    run = tmp_path / "ending"
    _unfinished_run(run, end_time_utc="2026-12-06T03:00:00+00:00")
    claim = _hold_claim(run)
    try:
        assert cli.main(["microbench", str(run)]) == 2
        assert capsys.readouterr() == ("", STOPPED.format(run / "messages"))
    finally:
        claim.close()


def test_microbench_of_a_real_run_still_going(tmp_path):
    from ipc_bench.harness.run_folder import run_in_progress

    run = tmp_path / "live"
    proc = subprocess.Popen([sys.executable, "bench.py", "--scenario", "decode-steady",
                             "--num-running", "1", "--steps", "100000", "--codecs",
                             "msgpack", "--quiet", "--output", str(run)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not ((run / "summary.json").is_file() and run_in_progress(run)):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        out = bench_in_process(["microbench", run])
        assert (out.returncode, out.stdout, out.stderr) == (
            2, "", RUNNING.format(run / "messages"))
    finally:
        proc.send_signal(signal.SIGTERM)  # the run removes its socket folders
        try:
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
