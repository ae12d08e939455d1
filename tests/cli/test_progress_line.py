"""Each case's progress line writes its counted steps with thousands separators, as the
tables do."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_progress_line_groups_the_steps_thousands(tmp_path):
    proc = subprocess.run(
        [sys.executable, "bench.py", "--scenario", "decode-steady", "--num-running", "2",
         "--steps", "1000", "--warmup-steps", "5", "--codecs", "msgpack", "--policies",
         "send", "--no-single-process", "--no-floor", "--output", str(tmp_path / "run")],
        cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    progress = [ln for ln in proc.stderr.splitlines() if ln.startswith("[1/")]
    assert len(progress) == 1, proc.stderr
    assert progress[0].startswith("[1/1] num_running=2/send/msgpack#0: 1,000 steps, "), progress
