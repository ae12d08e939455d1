"""A run started under ``nice`` records its nice value and says what it means, in its
notes and its report (the priority was recorded nowhere)."""

from __future__ import annotations

import json
import subprocess
import sys

from analysis_run import REPO, bench_in_process
from ipc_bench.harness.environment import nice_note

NOTE = ("this run runs at nice 7 (a lowered CPU priority): on a busy machine its "
        "processes wait for the others, and its times and tokens/s hold those waits; "
        "bytes are exact whatever the priority")


def test_nice_note_only_above_zero():
    assert nice_note({"niceness": 7}) == NOTE
    for md in ({"niceness": 0}, {"niceness": -5}, {}, {"niceness": True}, {"niceness": "7"}):
        assert nice_note(md) is None


def test_a_run_under_nice_records_and_says_it(tmp_path):
    run = tmp_path / "run"
    proc = subprocess.run(
        ["nice", "-n", "7", sys.executable, "bench.py", "--scenario", "decode-steady",
         "--num-running", "2", "--steps", "10", "--warmup-steps", "1", "--codecs",
         "msgpack", "--policies", "send", "--no-single-process", "--no-floor", "--output",
         str(run)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"note: {NOTE}" in proc.stderr.splitlines()
    assert json.loads((run / "summary.json").read_text())["metadata"]["niceness"] == 7
    proc = bench_in_process(["report", run, "--output", tmp_path / "rep", "--no-figures"])
    assert proc.returncode == 0, proc.stderr
    md = " ".join((tmp_path / "rep" / "report.md").read_text().split())
    assert NOTE[0].upper() + NOTE[1:] + "." in md
