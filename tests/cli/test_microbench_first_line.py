"""``bench.py microbench RUN``'s stdout begins with its table's heading line (``|
head -1`` shows it), not a blank line: its progress goes to stderr, so nothing on
stdout comes before the table to set it apart from."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from microbench_runs import PYPERF, finished_run

REPO = Path(__file__).resolve().parents[2]
TINY = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "20",
        "--warmup-steps", "2", "--policies", "send,cached", "--codecs", "msgpack",
        "--no-single-process", "--no-floor", "--quiet"]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A finished two-case run folder (send and cached, msgpack), with captures."""
    return finished_run(tmp_path_factory, "mbfirst", TINY)


def test_stdout_begins_with_the_table_heading(run):
    proc = subprocess.run([sys.executable, "bench.py", "microbench", str(run),
                           "--directions", "s2r", *PYPERF], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split("\n")
    # the columns' widths follow the figures timed: the header's words
    assert (lines[0], lines[1].split("  ")[0]) == (
        "in-loop (the run's own timing of these messages) vs pyperf (isolated)", "arm"), \
        proc.stdout
    assert proc.stderr.startswith("microbench: 4 benchmarks (send: 2, cached: 2; the arms "
                                  "interleaved) -> "), proc.stderr
