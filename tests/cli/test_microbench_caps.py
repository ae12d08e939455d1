"""``bench.py microbench``'s caps on pyperf's counts (``-p``, ``-n``, ``-w``, ``-l``),
which pyperf itself takes without end: one line, exit 2, before anything starts; a
count at its cap passes; ``--help`` states the caps."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from ipc_bench.analysis.microbench import (PYPERF_COUNT_CAPS, MicrobenchError,
                                           check_pyperf_options)
from ipc_bench.cli.microbench import _Parser, build_parser

REPO = Path(__file__).resolve().parents[2]
P = "worker processes per benchmark, run one after another; --rigorous runs 40"
N = "values per worker process; pyperf's default is 3"
W = "warm-up values per worker process, where pyperf's own calibration of them stops"
L = "loops per value, where pyperf's own calibration of them stops"


def test_pyperf_itself_takes_any_count():
    """What the caps are for: pyperf's parser accepts these as they are."""
    import argparse

    from ipc_bench.analysis.microbench import probe_runner

    parser = argparse.ArgumentParser()
    probe_runner(_argparser=parser)
    args = parser.parse_args(["-p", "100000", "-n", "100000", "-w", "100000",
                              "-l", "2^40"])
    assert (args.processes, args.values, args.warmups, args.loops) == (
        100000, 100000, 100000, 2 ** 40)


def test_a_hundred_thousand_processes_are_refused_before_anything_starts(tmp_path):
    run = tmp_path / "run"
    (run / "messages").mkdir(parents=True)
    proc = subprocess.run([sys.executable, "bench.py", "microbench", str(run), "-p",
                           "100000"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", f"bench.py microbench: error: -p/--processes 100000: expected at most 1000 "
               f"({P})\n")
    assert sorted(p.name for p in run.iterdir()) == ["messages"]  # no microbench/ made


@pytest.mark.parametrize("rest, message", [
    (["-p", "1001"], f"-p/--processes 1001: expected at most 1000 ({P})"),
    (["--processes=100000"], f"-p/--processes 100000: expected at most 1000 ({P})"),
    (["-n", "1001"], f"-n/--values 1001: expected at most 1000 ({N})"),
    (["--values", "5000"], f"-n/--values 5000: expected at most 1000 ({N})"),
    (["-w", "301"], f"-w/--warmups 301: expected at most 300 ({W})"),
    (["-w", "10^3"], f"-w/--warmups 1000: expected at most 300 ({W})"),
    (["-l", "4294967297"],
     f"-l/--loops 4294967297: expected at most 2^32 ({L})"),
    (["--loops=2^33"], f"-l/--loops 8589934592: expected at most 2^32 ({L})"),
    (["-l", "99999999999999999999999"], f"-l/--loops over 2^64: expected at most 2^32 ({L})"),
    (["-l", "-10^100"], f"-l/--loops over 2^64: expected at most 2^32 ({L})"),
    (["-l", "-10^99"], "argument -l/--loops: must be at least 0, got -10^99"),
])
def test_a_count_above_its_cap_is_one_line(rest, message):
    with pytest.raises(MicrobenchError) as info:
        check_pyperf_options(rest, _Parser, False)
    assert str(info.value) == message


def test_a_power_too_large_to_compute_is_refused_at_once():
    """pyperf would compute 10^100000000 (minutes of CPU) before any check."""
    start = time.monotonic()
    with pytest.raises(MicrobenchError) as info:
        check_pyperf_options(["-w", "10^100000000"], _Parser, False)
    assert time.monotonic() - start < 5
    assert str(info.value) == f"-w/--warmups over 2^64: expected at most 300 ({W})"


@pytest.mark.parametrize("rest", [
    ["-p", "1000", "-n", "1000", "-w", "300", "-l", "2^32"],
    ["-p", "1", "-n", "1", "-w", "0", "-l", "0"],
    ["-w", "1^99999", "-l", "0^99999"],
])
def test_counts_up_to_their_caps_pass(rest):
    assert check_pyperf_options(rest, _Parser, False) is None


def test_the_caps_are_those_help_states():
    assert {k: v[1] for k, v in PYPERF_COUNT_CAPS.items()} == {
        "processes": 1000, "values": 1000, "warmups": 300, "loops": 2 ** 32}
    import pyperf._worker

    # the last two are where pyperf's own calibration stops
    assert (pyperf._worker.MAX_WARMUP_VALUES, pyperf._worker.MAX_LOOPS) == (300, 2 ** 32)
    assert " ".join(build_parser().description.split()).endswith(
        "are pyperf's and are passed to it, within caps no real use reaches: -p and -n at "
        "most 1000, -w at most 300, -l at most 2^32 (pyperf's own calibration limits for "
        "the last two), --min-time at most 10 s.")
