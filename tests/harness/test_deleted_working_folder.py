"""A run started in a working folder since deleted (a shell left in a folder another
command removed) runs: its runner is given ``PYTHONPATH`` without an empty entry,
which Python cannot make absolute there (``Fatal Python error: error evaluating
path``), where every case failed at the runner's start-up with ``runner process N
exited with code 1 (<no Python frame>)``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from fault_helpers import REPO

RUN = ["--scenario", "decode-steady", "--num-running", "1", "--steps", "20",
       "--warmup-steps", "2", "--codecs", "msgpack", "--policies", "send", "--no-floor",
       "--no-single-process", "--quiet"]


def test_a_run_from_a_deleted_folder_runs(tmp_path):
    gone, out = tmp_path / "gone", tmp_path / "out"
    gone.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    script = (f"import os, subprocess, sys; os.chdir({str(gone)!r}); "
              f"os.rmdir({str(gone)!r}); "
              f"sys.exit(subprocess.run([sys.executable, {str(REPO / 'bench.py')!r}, "
              f"*{RUN!r}, '--output', {str(out)!r}]).returncode)")
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "complete"
    assert [c["complete"] for c in summary["cases"]] == [True]
