"""A run folder whose name begins with "-" (``--output=-x``, given back as ``./-x``):
``bench.py microbench ./-x`` times it (its arm processes and pyperf's workers get
the paths as words no parser reads as an option), and every path the commands print
(``results:``, ``see DIR/summary.json``, ``report:``, microbench's output folder) is
``./-x/...``, which pastes into another command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = str(REPO / "bench.py")
TINY = ["-p", "1", "-n", "1", "-w", "0", "-l", "1", "--min-time", "0.001"]
SETTINGS = "1 process x (0 warm-ups + 1 value) of >= 1 ms; pyperf options: " + " ".join(TINY)


def _bench(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, BENCH, *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def dash_run(tmp_path_factory):
    """``(folder it ran in, the run's result)`` of a one-case run into ``-x``."""
    cwd = tmp_path_factory.mktemp("dash")
    run = _bench(cwd, "--scenario", "decode-steady", "--num-running", "2", "--steps", "20",
                 "--warmup-steps", "0", "--codecs", "msgpack", "--policies", "send",
                 "--no-single-process", "--no-floor", "--output=-x")
    assert run.returncode == 0, run.stderr
    return cwd, run


def test_the_run_names_its_dash_folder_as_a_path_to_paste(dash_run):
    _, run = dash_run
    assert run.stdout.endswith("\nresults: ./-x\n")
    assert run.stderr.splitlines()[-1].endswith(
        " in 1 of 1 case (printed under their case lines above): see ./-x/summary.json, "
        f"or Measurement warnings in python {BENCH} report ./-x")


def test_report_of_a_dash_folder_names_its_file_as_a_path_to_paste(dash_run):
    cwd, _ = dash_run
    proc = _bench(cwd, "report", "./-x", "--no-figures")
    assert (proc.returncode, proc.stdout) == (0, "report: ./-x/report/report.html\n")


@pytest.mark.parametrize("output", [None, "./-mb"])
def test_microbench_times_a_dash_folder(dash_run, output):
    cwd, _ = dash_run
    where = "./-x/microbench" if output is None else output
    proc = _bench(cwd, "microbench", "./-x", *(["--output", output] if output else []),
                  *TINY)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines()[0] == (
        f"microbench: 4 benchmarks (send: 4) -> {where}; {SETTINGS}")
    assert proc.stdout.splitlines()[-2:] == [
        f"stats:   python -m pyperf stats {where}/send.json",
        f"check:   python -m pyperf check {where}/send.json"]
    assert sorted(p.name for p in (cwd / where).iterdir()) == [
        "in_loop_vs_pyperf.json", "send.json"]
