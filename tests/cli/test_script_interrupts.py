"""SIGINT / SIGTERM / SIGHUP to the scripts that start processes or write results
(codec_fit, aa_false_positive, oracle_cost, ring_bench): one line on stderr naming the
signal, the exit code and what was kept where; the processes they started stopped
and reaped; no traceback. Each waits for a sign that the work is under way (a run
folder's running case, a printed line, the reader process), not a fixed time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from fault_helpers import children, processes_matching
from script_module import kill_started, start_script

#: How long a script may take to reach the point each test waits for (a loaded 2-core
#: machine starts a bench.py in a few seconds).
START_S = 60


@pytest.fixture(autouse=True)
def _no_group_left():
    yield
    kill_started()


_start = start_script


def _wait_until(proc: subprocess.Popen, ready, what: str) -> None:
    """Poll ``ready()`` until it is true; fail with the script's output if it exits
    first or ``START_S`` passes."""
    deadline = time.monotonic() + START_S
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError(f"{what} never happened (exit {proc.returncode}):\n{err}")
        time.sleep(0.05)


def _in_a_case(run_dir: Path):
    """A ``ready`` test: ``bench.py`` into ``run_dir`` is running a case."""
    def ready() -> bool:
        try:
            return bool(json.loads((run_dir / "summary.json").read_text())["running_case"])
        except (OSError, ValueError, KeyError):
            return False
    return ready


def _alive(pids: list[int]) -> list[int]:
    """Those of ``pids`` that are still a process (a zombie, not reaped, counts)."""
    return [pid for pid in pids if Path(f"/proc/{pid}").exists()]


def _cmdline(pid: int) -> list[bytes]:
    """``/proc/PID/cmdline``'s arguments (none once the process is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def _summary(run_dir: Path) -> tuple[str, list[bool]]:
    data = json.loads((run_dir / "summary.json").read_text())
    return data["status"], [c["complete"] for c in data["cases"]]


def test_codec_fit_ctrl_c_names_the_fit_run_kept(tmp_path, bench_tmpdir):
    """A Ctrl-C (SIGINT to the process group): bench.py writes its run and exits, its
    own interrupt line left out; codec_fit's one line names the run folder and what it
    holds."""
    out = tmp_path / "runs"
    env = dict(os.environ, TMPDIR=str(bench_tmpdir))
    proc = _start("codec_fit", "--output", str(out), "--steps", "30000", "--repeat", "1",
                  env=env)
    _wait_until(proc, lambda: any(_in_a_case(d)() for d in out.glob("fit-*")),
                "the fit run's first case")
    (fit,) = out.glob("fit-*")
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=START_S)
    assert (proc.returncode, stdout) == (130, "")
    assert stderr.splitlines()[1:] == [
        f"codec_fit.py: interrupted by SIGINT; kept: the fit run {fit} is "
        "incomplete (0 cases complete) (exit 130)"]
    assert stderr.startswith("running: ") and stderr.count("\n") == 2, stderr
    assert _summary(fit) == ("incomplete", [False])
    assert processes_matching(str(fit)) == []
    assert not list(out.glob("check1024-*"))


def test_aa_false_positive_sigint_to_it_alone_stops_bench_and_the_busy_process(
        tmp_path, bench_tmpdir):
    """SIGINT to aa_false_positive.py alone (not its group): it passes the signal on to
    the running bench.py, which writes its run ``incomplete``; the busy process is
    stopped; the one line says where the study is and that the run is incomplete."""
    study = tmp_path / "study"
    proc = _start("aa_false_positive", "--load", "busy", "--pairs", "2", "--group-sizes",
                  "2", "--num-running", "4", "--steps", "300000", "--reference-steps",
                  "100", "--reference-pairs", "2", "--output", str(study),
                  env=dict(os.environ, TMPDIR=str(bench_tmpdir)))
    _wait_until(proc, _in_a_case(study / "busy" / "aa"), "the A/A run's first case")
    started = children(proc.pid)  # the busy process and bench.py
    assert len(started) == 2, [_cmdline(p) for p in started]
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=START_S)
    assert (proc.returncode, stdout) == (130, "")
    assert stderr.splitlines()[1:] == [
        f"aa_false_positive.py: interrupted by SIGINT; the study so far is in "
        f"{study} (0 bench.py runs complete); bench.py's run {study}/busy/aa is incomplete "
        "(0 cases complete) (exit 130)"]
    assert stderr.startswith("running: ") and stderr.count("\n") == 2, stderr
    assert _alive(started) == []  # stopped and reaped
    assert _summary(study / "busy" / "aa") == ("incomplete", [False])
    assert not (study / "aa_false_positive.json").exists()


def test_oracle_cost_sigint_before_the_first_row():
    """In-process measuring: one line saying no row was printed; the header stays."""
    proc = _start("oracle_cost", "--num-running", "1,2", "--pairs", "100000")
    header = proc.stdout.readline()  # printed before the first B value is measured
    assert header.split()[:3] == ["B", "off", "us/step"], header
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=START_S)
    assert (proc.returncode, stdout, stderr) == (
        130, "", "oracle_cost.py: interrupted by SIGINT; no row printed "
        "(0 of 2 B values measured) (exit 130)\n")


def test_oracle_cost_bench_sigterm_stops_the_run_and_removes_its_folder(bench_tmpdir):
    """``--bench``: SIGTERM to oracle_cost.py alone reaches the running bench.py, which is
    reaped; the runs' temporary folder is removed and the line says so."""
    env = dict(os.environ, TMPDIR=str(bench_tmpdir))
    proc = _start("oracle_cost", "--bench", "--num-running", "2", "--steps", "300000",
                  "--pairs", "1", env=env)
    _wait_until(proc, lambda: any(_in_a_case(d)() for d in
                                  bench_tmpdir.glob("oracle-cost-*/0-off")),
                "the first bench.py run's first case")
    started = children(proc.pid)
    assert len(started) == 1, started
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=START_S)
    assert (proc.returncode, stdout, stderr) == (
        143, "", "oracle_cost.py: interrupted by SIGTERM; nothing printed: the "
        "runs' temporary folder is removed (exit 143)\n")
    assert _alive(started) == []
    assert list(bench_tmpdir.glob("oracle-cost-*")) == []


def test_ring_bench_hangup_stops_the_reader_and_removes_the_ring(bench_tmpdir):
    """SIGHUP to the process group (a closed terminal): the reader ignores it and is
    killed and reaped by ring_bench, which removes the socket folder and the ring's
    shared memory, and says so in one line."""
    env = dict(os.environ, TMPDIR=str(bench_tmpdir))
    proc = _start("ring_bench", "--sizes", "64", "--iterations", "10000000", "--transports",
                  "ring-block", env=env)
    readers = []

    def reader_started() -> bool:
        readers[:] = [p for p in children(proc.pid)
                      if b"--child" in _cmdline(p)]
        return bool(readers)

    _wait_until(proc, reader_started, "the reader process")
    handle = json.loads(_cmdline(readers[0])[4])
    os.killpg(proc.pid, signal.SIGHUP)
    stdout, stderr = proc.communicate(timeout=START_S)
    assert (proc.returncode, stdout, stderr) == (
        129, "", "ring_bench.py: interrupted by SIGHUP (exit 129)\n")
    assert _alive(readers) == []
    assert not Path("/dev/shm", handle["shm_name"]).exists()
    assert list(bench_tmpdir.glob("ipc-bench-*")) == []
