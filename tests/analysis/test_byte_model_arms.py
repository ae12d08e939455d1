"""The byte-model line names the policies or arms that ran, never a recording arm as if
it were a policy."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_overhead_byte_model_line_names_the_policies(tmp_path):
    """The overhead scenario's arms (``steps``, ``totals``) are not policies: the bytes
    send's ids add are named ``send - cached``, not ``steps - cached``."""
    proc = subprocess.run(
        [sys.executable, "bench.py", "--scenario", "overhead", "--num-running", "4",
         "--steps", "50", "--warmup-steps", "5", "--repeat", "2", "--quiet",
         "--output", str(tmp_path / "run")],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if " exact" in ln]
    assert len(lines) == 2, proc.stdout
    assert re.fullmatch(
        r"  \[num_running=4,of=send\] msgpack steps: 100/100 exact; send - cached = "
        r"\d+\.\d{3} B per running request on these steps \(uniform ids in a 128,256 "
        r"vocabulary: 4\.975\)", lines[0]), lines[0]
    assert lines[1] == "  [num_running=4,of=cached] msgpack steps: 100/100 exact"
    rows = json.loads((tmp_path / "run" / "summary.json").read_text())["byte_model"]
    send = [r for r in rows if r["policy"] == "send"]
    assert [(r["arm"], r["cached_arm"], r["difference"]) for r in send] == [
        ("steps", None, "send - cached")]
