"""``bench.py microbench RUN -p 0`` (and pyperf's other counts below their least
value, or not whole numbers): refused in the words of the run's options of one whole
number, the option named, exit 2, before anything starts. It printed pyperf's
``argument -p/--processes: invalid strictly_positive value: '0'``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ipc_bench.analysis.microbench import MicrobenchError, check_pyperf_options
from ipc_bench.cli.microbench import _Parser

REPO = Path(__file__).resolve().parents[2]


def test_no_processes_is_refused_in_one_line(tmp_path):
    run = tmp_path / "run"
    (run / "messages").mkdir(parents=True)
    proc = subprocess.run([sys.executable, "bench.py", "microbench", str(run), "-p", "0"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", "bench.py microbench: error: argument -p/--processes: must be at least 1, "
               "got 0\n")
    assert sorted(p.name for p in run.iterdir()) == ["messages"]  # no microbench/ made


@pytest.mark.parametrize("rest, message", [
    (["--processes=0"], "argument -p/--processes: must be at least 1, got 0"),
    (["-p", "-3"], "argument -p/--processes: must be at least 1, got -3"),
    (["-p", "x"], "argument -p/--processes: expected an integer, got 'x'"),
    (["-p", "2^3"], "argument -p/--processes: expected an integer, got '2^3'"),
    (["-n", "0"], "argument -n/--values: must be at least 1, got 0"),
    (["--timeout", "0"], "argument --timeout: must be at least 1, got 0"),
    (["-w", "-1"], "argument -w/--warmups: must be at least 0, got -1"),
    (["-w", "1.5"], "argument -w/--warmups: expected an integer (or X^Y), got '1.5'"),
    (["-l", "-2^3"], "argument -l/--loops: must be at least 0, got -2^3"),
    (["-l", "x^2"], "argument -l/--loops: expected an integer (or X^Y), got 'x^2'"),
])
def test_a_count_below_its_least_is_in_the_run_s_words(rest, message):
    with pytest.raises(MicrobenchError) as info:
        check_pyperf_options(rest, _Parser, False)
    assert str(info.value) == message


def test_counts_pyperf_takes_still_pass():
    assert check_pyperf_options(["-p", "1", "-n", "1", "-w", "0", "-l", "2^10",
                                 "--timeout", "5"], _Parser, False) is None
