"""A SIGINT that lands while ``bench.py``'s first statements run, before it blocks the
signals (``import signal`` included): Python's handler raises ``KeyboardInterrupt``
there, and ``bench.py`` ends it as every other interrupt, one line and exit 130, no
traceback. The interrupt is made deterministic by an import hook that raises it. Then
real SIGINTs from bench.py's first statement on (the moment it blocks the signals), up
to the first case's steps. Before that statement the interpreter itself is starting
(``site`` running the installed packages' ``.pth`` files), where a SIGINT is Python's
own and bench.py can do nothing (docs/faults.md, Interrupts)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fault_helpers import (INTERRUPT_AT_IMPORT, bench, bench_started, load_run,
                           processes_matching, socket_folders, wait_for)

REPO = Path(__file__).resolve().parents[2]



@pytest.mark.parametrize("at", ["signal", "ipc_bench.errors"])
def test_an_interrupt_in_bench_py_s_first_statements_is_one_line_and_exit_130(at):
    proc = subprocess.run([sys.executable, "-c", INTERRUPT_AT_IMPORT, at, "--list"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stderr, proc.stdout) == (
        130, "bench.py: interrupted by SIGINT (exit 130)\n", "")


#: Delays after bench.py's first statement (its signals seen blocked in /proc): the
#: mask, the imports, the option checks, the run folder's claim, the runner's start.
EARLY_DELAYS_S = (0.0, 0.005, 0.02, 0.05, 0.2, 0.6, 1.5)


@pytest.mark.parametrize("delay_s", EARLY_DELAYS_S)
def test_ctrl_c_early_in_a_run_is_one_line_exit_130_and_leaves_no_process(delay_s, tmp_path):
    """A real SIGINT ``delay_s`` after bench.py's first statement: exit 130, one line
    (bench.py's own before the case, the interrupted case's after), no traceback, no
    runner left and no socket folder; the run folder, where there is one, loads as
    incomplete with the interrupt its problem."""
    run_dir, tmpdir = tmp_path / "run", tmp_path / "tmp"
    tmpdir.mkdir()
    proc = bench(["--scenario", "decode-steady", "--num-running", "4", "--steps", "100000",
                  "--model", "fixed-step", "--step-time-ms", "1", "--policies", "send",
                  "--codecs", "msgpack", "--no-single-process", "--quiet", "--output",
                  str(run_dir)], env=dict(os.environ, TMPDIR=str(tmpdir),
                                          PYTHONFAULTHANDLER="1"))
    try:
        wait_for(lambda: bench_started(proc.pid) or proc.poll() is not None,
                 what="bench.py's first statement")
        time.sleep(delay_s)
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:  # where it stood: faulthandler's stacks
            proc.send_signal(signal.SIGABRT)
            _, err = proc.communicate(timeout=30)
            pytest.fail(f"bench.py ran on 60 s after a SIGINT {delay_s} s in; its "
                        f"threads at SIGABRT:\n{err[-8000:]}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert (proc.returncode, "Traceback" in err, len(err.splitlines())) == (130, False, 1), err
    ran = r"(; run folder \(nothing measured\): .*|; partial results: .*)?"
    assert (re.fullmatch(rf"bench\.py: interrupted by SIGINT( after 0 of 1 cases)?{ran} "
                         r"\(exit 130\)", err.strip())
            or re.fullmatch(r"bench\.py: num_running=4/send/msgpack#0: interrupted by SIGINT "
                            rf"(before its first step|at step \d+ \(.*?\)){ran} \(exit 130\)",
                            err.strip())), err
    assert processes_matching(f"ipc-bench-{proc.pid}-") == []
    assert socket_folders(tmpdir) == []
    if run_dir.exists():
        summary, _ = load_run(run_dir)
        assert summary["status"] == "incomplete"
        # before the case began, the run's own problem counts the cases it ran
        (problem,) = [p.split(": ")[-1] for p in summary["problems"]]
        assert problem in ("interrupted by SIGINT", "interrupted by SIGINT after 0 of 1 cases")
