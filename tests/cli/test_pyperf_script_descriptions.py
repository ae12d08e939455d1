"""``--help`` of the scripts built on ``pyperf.Runner`` (variant_table.py,
hot_path_bench.py) describes what each measures, in one line, where it said pyperf's
default ``Benchmark``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("script,description", [
    ("variant_table.py",
     "Bytes and microseconds per pure-decode step of each variant of the scheduler <-> "
     "runner hop (send and cached, each codec, uniform and Zipf token ids) and of the "
     "frontend hop, timed with pyperf."),
    ("hot_path_bench.py",
     "Microseconds of the per-step hot path outside the loops, timed with pyperf: "
     "encoding and decoding the step's messages, a channel round trip, the input oracle "
     "and the schedule digest."),
])
def test_help_describes_what_the_script_measures(script, description):
    # wide enough that argparse keeps the description on one line
    env = dict(os.environ, COLUMNS="1000", NO_COLOR="1", PYTHON_COLORS="0")
    proc = subprocess.run([sys.executable, f"scripts/{script}", "--help"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stderr) == (0, "")
    paragraphs = proc.stdout.split("\n\n")
    assert paragraphs[0].startswith(f"usage: {script} [-h]")
    assert paragraphs[1] == description
    assert "Benchmark\n" not in proc.stdout
