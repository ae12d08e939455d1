"""A capture file copied over another's name (an r2s capture saved as the s2r one) makes
two captures say they are the same: ``bench.py microbench`` refuses that in one line,
exit 2, where it looped forever ordering the benchmarks; ``interleaved_order`` ends
whatever its plan holds."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ipc_bench.analysis.microbench import interleaved_order
from microbench_runs import capture_path, copy_run, finished_run

REPO = Path(__file__).resolve().parents[2]
TINY = ["--scenario", "decode-steady", "--num-running", "1", "--steps", "20",
        "--warmup-steps", "2", "--policies", "send", "--codecs", "msgpack",
        "--no-single-process", "--no-floor", "--quiet"]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory, "mbdup", TINY)


def test_an_r2s_capture_copied_over_the_s2r_one_is_refused(run, tmp_path):
    copy = copy_run(run, tmp_path)
    r2s, s2r = (capture_path(copy, "msgpack", d) for d in ("r2s", "s2r"))
    shutil.copyfile(r2s, s2r)
    proc = subprocess.run([sys.executable, "bench.py", "microbench", str(copy), "-p", "1",
                           "-n", "1", "-w", "0", "-l", "1"], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        f"bench.py microbench: error: {r2s} and {s2r} hold the same capture (r2s of "
        "num_running=1, arm send, msgpack, repetition 0): one of them was copied over "
        "another file's name or renamed\n")
    assert not (copy / "microbench").exists()


def test_the_order_ends_with_a_name_twice_in_one_arm():
    assert interleaved_order({"send": ["a", "a", "b"], "cached": ["a", "b"]}) == [
        ("cached", "a"), ("send", "a"), ("send", "a"), ("cached", "b"), ("send", "b")]
