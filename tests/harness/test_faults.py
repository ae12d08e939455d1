"""Peer failures and interrupts: a killed, crashed or hung runner, a dying scheduler,
SIGINT / SIGTERM to ``bench.py``. Each test checks the exit code or error, the exact
error line, that no child process survives and that the partial results load.

Times (detection, shutdown) are printed for the record (``pytest -s``), never asserted.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from analysis_run import bench_in_process
from fault_helpers import (FAKE_RUNNER, REPO, alive, bench, bench_started, children,
                           end_and_read, fd_line, load_run, steady_case, wait_dead, wait_for,
                           without_load_note)
from run_notes import without_nice_note
from ipc_bench.analysis.cores import SHARED_MARK
from ipc_bench.engine.config import ModelConfig
from ipc_bench.harness.spec import RUNNER_COLUMNS, SCHED_COLUMNS, CaseResult
from ipc_bench.harness.spec import CaseError
from ipc_bench.harness import supervisor
from ipc_bench.harness.supervisor import run_case
from ipc_bench.engine.traces import Trace
from ipc_bench.engine.workloads import TraceWorkload

# ---------------------------------------------------------------------------- in-process


def _kill_at(step: int, sig: int, result: CaseResult, marks: dict):
    """``on_step`` callback: signal the runner once ``step`` steps are done."""

    def on_step(seq: int, *_) -> None:
        if seq == step:
            os.kill(result.runner_pid, sig)
            if sig == signal.SIGKILL:
                wait_dead(result.runner_pid)
            marks["t_signal"] = time.monotonic()
    return on_step


@pytest.mark.parametrize("seed", [1, 2])
def test_runner_sigkill_at_a_random_step_is_reported_with_pid_signal_and_step(seed):
    step = random.Random(seed).randint(1, 400)
    result, marks = CaseResult(spec=steady_case()), {}
    with pytest.raises(CaseError) as err:
        run_case(result.spec, _kill_at(step, signal.SIGKILL, result, marks), result=result)
    detect_s = time.monotonic() - marks["t_signal"]
    pid = result.runner_pid
    # Noticed on the send if ZeroMQ saw the disconnection first, else on the wait.
    assert re.fullmatch(rf"runner process {pid} was killed by SIGKILL, noticed while (sending "
                        rf"SchedulerOutput|waiting for ModelRunnerOutput) for step {step}",
                        str(err.value)), str(err.value)
    assert err.value.step == step and result.failed_step == step
    assert [row[0] for row in result.sched_rows] == list(range(step))
    assert not alive(pid)
    print(f"\nSIGKILL at step {step}: detected and reaped in {detect_s * 1e3:.1f} ms")


def test_hung_runner_times_out_with_its_state_and_is_killed():
    # 4 s, not 1 s: on a loaded machine the case was seen to time out before step 7, and
    # 2 s leaves no room for a 2 s stall of the healthy runner
    spec = steady_case(peer_timeout_s=4.0)
    result, marks = CaseResult(spec=spec), {}
    with pytest.raises(CaseError) as err:
        run_case(spec, _kill_at(7, signal.SIGSTOP, result, marks), result=result)
    detect_s = time.monotonic() - marks["t_signal"]
    assert str(err.value) == (
        f"runner process {result.runner_pid} stopped answering: no ModelRunnerOutput for "
        f"step 7 within 4 s (state T (stopped); killed)")
    assert result.failed_step == 7 and len(result.sched_rows) == 7
    assert not alive(result.runner_pid)
    print(f"\nSIGSTOP at step 7 with --peer-timeout 4: failed after {detect_s:.2f} s")


def _fake(monkeypatch, mode: str, step: int = 3) -> list[str]:
    """The fake runner's command (``run_case(runner_command=)``), faulting as ``mode``."""
    monkeypatch.setenv("FAKE_RUNNER_MODE", mode)
    monkeypatch.setenv("FAKE_RUNNER_STEP", str(step))
    return [sys.executable, str(FAKE_RUNNER)]


def test_runner_exit_code_and_last_stderr_line_are_reported(monkeypatch):
    fake = _fake(monkeypatch, "exit", step=3)
    result = CaseResult(spec=steady_case())
    with pytest.raises(CaseError) as err:
        run_case(result.spec, result=result, runner_command=fake)
    assert str(err.value) == (
        f"runner process {result.runner_pid} exited with code 7 (fake runner: exiting at "
        f"step 3), noticed while waiting for ModelRunnerOutput for step 3")
    assert len(result.sched_rows) == 3 and not alive(result.runner_pid)


def test_runner_gone_between_steps_fails_the_case_at_the_next_step(monkeypatch):
    """A runner that exits while the scheduler waits for its input digests (between
    steps) fails the case at the step it would have run next: every step before it is
    recorded, so steps.csv holds exactly ``failed_step`` rows."""
    fake = _fake(monkeypatch, "exit-on-check")
    spec = steady_case(input_oracle_interval=5)
    result = CaseResult(spec=spec)
    with pytest.raises(CaseError) as err:
        run_case(spec, result=result, runner_command=fake)
    assert str(err.value) == (
        f"runner process {result.runner_pid} exited with code 7 (fake runner: exiting on "
        f"CheckInputs), noticed while waiting for input digests from the runner before "
        f"step 5")
    assert err.value.step == result.failed_step == 5
    assert [row[0] for row in result.sched_rows] == list(range(5))


def test_runner_that_does_not_end_warm_up_in_time_fails_naming_the_wait(monkeypatch):
    """The scheduler waits for each runner's WarmupEnded under --peer-timeout: a
    runner whose collection at the end of warm-up outlasts it fails the case, at the
    step after the pause (the last warm-up step, 4: the first 4 of the 5 warm-up steps
    recorded), naming what was awaited."""
    fake = _fake(monkeypatch, "slow-warmup-collect")
    monkeypatch.setenv("FAKE_RUNNER_DELAY_S", "30")
    spec = steady_case(peer_timeout_s=4.0)  # 4 s: room for a stall of the warm-up steps
    result = CaseResult(spec=spec)
    with pytest.raises(CaseError) as err:
        run_case(spec, result=result, runner_command=fake)
    assert str(err.value) == (
        f"runner process {result.runner_pid} stopped answering: no WarmupEnded (the "
        f"runner's heap collection at the end of warm-up) within 4 s (state S (sleeping); "
        f"killed)")
    assert err.value.step == result.failed_step == 4
    assert [row[0] for row in result.sched_rows] == list(range(4))
    assert result.runner_warmup_collect_ns is None and not alive(result.runner_pid)


@pytest.mark.parametrize("model,work", [
    (ModelConfig(), "imports and builds the null model"),
    (ModelConfig(name="torch", preset="tiny", attention="flex"),
     "imports torch, builds the model and compiles flex_attention once per decode batch "
     "bucket"),
    (ModelConfig(name="torch", preset="tiny"),
     "imports torch, builds the model and, on CUDA (where auto is flex), compiles "
     "flex_attention once per decode batch bucket"),
    (ModelConfig(name="torch", preset="tiny", attention="varlen", cuda_graphs=True),
     "imports torch, builds the model; captures a CUDA graph per bucket"),
])
def test_runner_that_never_answers_the_handshake_fails_after_the_startup_timeout(
        monkeypatch, model, work):
    # minutes for the torch model only: the null model builds in seconds
    minutes = ", which can take minutes" if model.name == "torch" else ""
    """The runner (a torch one compiling flex_attention, say) had not finished starting:
    the line says so, what its start-up does and which option gives it more time, not
    that it stopped answering. On a loaded machine the fake runner may not have connected
    within the 1 s yet, so the Handshake was not even sent: the same line then names that."""
    fake = _fake(monkeypatch, "silent")
    spec = steady_case(startup_timeout_s=1.0)
    spec.model = model
    with pytest.raises(CaseError) as err:
        run_case(spec, runner_command=fake)
    assert re.fullmatch(r"runner process \d+ was still starting when the start-up timeout "
                        r"ran out: (no handshake reply from the runner|could not send "
                        r"Handshake) within 1 s \(state "
                        r"[RS] \((running|sleeping)\); killed\); its start-up "
                        + re.escape(work) + minutes + r": raise "
                        r"--startup-timeout \(now 1 s\)", str(err.value)), str(err.value)
    assert children(os.getpid()) == []


def test_first_step_gets_the_startup_timeout_later_steps_the_peer_timeout(monkeypatch):
    # A runner that stalls on its first step must not fail under --peer-timeout alone.
    # 8 s of start-up: the fake runner must have connected (about 0.5 s alone, over 1 s
    # on a loaded machine, and an interpreter's start alone up to 2.5 s under nice 10)
    # for the wait to be the first step's.
    fake = _fake(monkeypatch, "hang", step=0)
    spec = steady_case(peer_timeout_s=0.2, startup_timeout_s=8.0)
    t0 = time.monotonic()
    with pytest.raises(CaseError) as err:
        run_case(spec, runner_command=fake)
    assert time.monotonic() - t0 >= 8.0
    assert re.fullmatch(r"runner process \d+ was still starting when the start-up timeout "
                        r"ran out: no ModelRunnerOutput for step 0 within 8 s \(state S "
                        r"\(sleeping\); killed\); its start-up imports and builds the null "
                        r"model: raise --startup-timeout \(now 8 s\)",
                        str(err.value)), str(err.value)
    assert err.value.step == 0


def test_a_runner_stopped_at_start_up_is_said_to_be_stopped_not_slow(monkeypatch):
    """SIGSTOP as it starts: more time would not help, so the line says it was stopped
    (was "...; its start-up imports and builds the null model, which can take
    minutes: raise --startup-timeout (now 3 s)")."""
    real_init = supervisor.RunnerProcess.__init__
    pids = []

    def stop_it(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        os.kill(self.pid, signal.SIGSTOP)
        pids.append(self.pid)

    monkeypatch.setattr(supervisor.RunnerProcess, "__init__", stop_it)
    with pytest.raises(CaseError) as err:
        run_case(steady_case(startup_timeout_s=3.0))
    assert re.fullmatch(rf"runner process {pids[0]} was still starting when the start-up "
                        r"timeout ran out: (no handshake reply from the runner|could not "
                        r"send Handshake) within 3 s \(state T \(stopped\); killed\); it "
                        r"was stopped \(SIGSTOP or a debugger\), not slow",
                        str(err.value)), str(err.value)
    assert children(os.getpid()) == []


def test_keepalive_lets_the_runner_wait_through_a_long_idle_gap():
    # Two requests 60 trace-seconds apart at 10x: a 6 s idle gap, twice the peer
    # timeout. Without KeepAlive the runner would give up waiting and exit. The timeout
    # is 3 s (KeepAlive every 0.75 s): on a loaded 2-core machine a step was seen to wait
    # over 1 s for its frame, and a 2 s timeout (KeepAlive every 0.5 s) once ran out.
    trace = Trace(path="t", arrival_s=np.array([0.0, 60.0]), prompt_lens=np.array([5, 7]),
                  output_lens=np.array([3, 4]))
    spec = steady_case(peer_timeout_s=3.0, max_steps=None)
    spec.make_workload = lambda: TraceWorkload(trace, name="gap", seed=0, vocab_size=128_256,
                                               logical_step_s=0.02)
    spec.trace_speedup = 10.0
    result = run_case(spec)
    assert [r["num_output_tokens"] for r in result.requests] == [3, 4]
    assert result.s2r_marker_frames >= 2 + 1  # keepalives (>= 1 per 0.75 s idle) + stop


# ---------------------------------------------------------------------------- the scheduler dies

_SUBREAPER = textwrap.dedent("""
    import ctypes, json, os, signal, subprocess, sys, time
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    assert libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER: orphans come to us
    mode, out_dir = sys.argv[1], sys.argv[2]
    def kids(pid):
        found = []
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    st = open(f"/proc/{d}/stat").read()
                except OSError:
                    continue
                if int(st.rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(d))
        return found
    if mode == "bench":  # SIGKILL python bench.py in the middle of a case
        sched = subprocess.Popen([sys.executable, "bench.py", "--scenario", "decode-steady",
                                  "--num-running", "16", "--steps", "100000",
                                  "--policies", "send", "--codecs", "msgpack",
                                  "--output", out_dir, "--quiet"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while not os.path.exists(os.path.join(out_dir, "steps.partial.csv")):
            time.sleep(0.01)
    else:  # a parent that is gone before the runner can look (before prctl ran)
        sched = subprocess.Popen([sys.executable, "-c",
            "import os, subprocess, sys; env = dict(os.environ, "
            "IPC_BENCH_SCHEDULER_PID=str(os.getpid())); "
            "subprocess.Popen([sys.executable, '-m', 'ipc_bench.harness', "
            "'ipc:///nonexistent/ctl'], env=env, stderr=open(sys.argv[1], 'w')); "
            "os._exit(0)", os.path.join(out_dir, "runner.stderr")])
    while not kids(sched.pid) and sched.poll() is None:
        time.sleep(0.01)
    runner = (kids(sched.pid) or [None])[0]
    if mode == "bench":
        time.sleep(0.3)
        sched.kill()
    t0 = time.monotonic()
    sched.wait()
    if runner is None:
        runner = max(kids(os.getpid()))
    _, status = os.waitpid(runner, 0)
    print(json.dumps(dict(runner=runner, elapsed_s=time.monotonic() - t0,
                          signaled=os.WIFSIGNALED(status),
                          signal=os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
                          code=os.WEXITSTATUS(status) if os.WIFEXITED(status) else None)))
""")


def _subreaper(mode: str, out_dir) -> dict:
    # A SIGKILLed bench.py cannot remove its socket directory: keep it under out_dir.
    tmp = out_dir.parent / "tmp"
    tmp.mkdir(exist_ok=True)
    proc = subprocess.run([sys.executable, "-c", _SUBREAPER, mode, str(out_dir)], cwd=REPO,
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, TMPDIR=str(tmp)))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_runner_dies_with_the_scheduler_by_pdeathsig_and_a_partial_folder_remains(tmp_path):
    run_dir = tmp_path / "run"
    status = _subreaper("bench", run_dir)
    # Killed by SIGKILL (PR_SET_PDEATHSIG), not exited on its own (getppid check: code 3/5).
    assert status["signaled"] and status["signal"] == signal.SIGKILL, status
    summary, frames = load_run(run_dir)
    assert summary["status"] == "incomplete"
    assert summary["running_case"] == "num_running=16/send/msgpack#0"
    partial = frames["steps.partial.csv"]
    assert list(partial.columns[6:]) == list(SCHED_COLUMNS)
    assert len(partial) > 0 and list(partial["seq"]) == list(range(len(partial)))
    print(f"\nscheduler SIGKILLed: runner gone {status['elapsed_s'] * 1e3:.1f} ms later")


def test_runner_exits_when_its_scheduler_died_before_it_started(tmp_path):
    status = _subreaper("early", tmp_path)
    assert not status["signaled"] and status["code"] == 5, status
    line = (tmp_path / "runner.stderr").read_text().strip()
    assert re.fullmatch(r"runner: scheduler process \d+ is gone at start-up", line), line


def test_runner_sets_pdeathsig():
    code = ("import ctypes, signal; from ipc_bench.harness.signals import set_parent_death_signal;"
            "assert set_parent_death_signal(); libc = ctypes.CDLL('libc.so.6');"
            "v = ctypes.c_int(); libc.prctl(2, ctypes.byref(v), 0, 0, 0);"  # PR_GET_PDEATHSIG
            "print(v.value)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, timeout=60)
    assert out.stdout.strip() == str(int(signal.SIGKILL)), out.stderr


# ---------------------------------------------------------------------------- bench.py


def _start_long_run(run_dir, extra=(), **kw):
    proc = bench(["--scenario", "decode-steady", "--num-running", "16", "--steps",
                  "100000", "--policies", "send", "--codecs", "msgpack", "--output",
                  str(run_dir), *extra], **kw)
    # Wait until the case has flushed rows at least once (it is well into its run).
    wait_for(lambda: (run_dir / "steps.partial.csv").exists(), what="first flush")
    runner = wait_for(lambda: children(proc.pid), what="runner process")[0]
    time.sleep(random.Random(os.getpid()).uniform(0.0, 0.5))  # a random step
    return proc, runner


def _check_partial_folder(run_dir, status: str, error: str):
    summary, frames = load_run(run_dir)
    assert summary["status"] == status
    assert summary["failed_case"] == "num_running=16/send/msgpack#0"
    assert summary["running_case"] is None
    case = summary["cases"][0]
    assert case["complete"] is False and case["error"] == error
    steps = frames["steps.csv"]
    assert "steps.partial.csv" not in frames
    assert list(steps["seq"]) == list(range(case["failed_step"]))
    assert steps[list(RUNNER_COLUMNS)].isna().all().all()  # the runner's report never came
    assert len(frames["requests.csv"]) > 0
    return summary, steps


def test_bench_reports_a_runner_killed_mid_run(tmp_path):
    run_dir = tmp_path / "run"
    proc, runner = _start_long_run(run_dir)
    os.kill(runner, signal.SIGKILL)
    t0 = time.monotonic()
    _, err = proc.communicate(timeout=60)
    exit_s = time.monotonic() - t0
    assert proc.returncode == 1
    lines = without_nice_note(without_load_note(err.strip().splitlines()))
    m = re.fullmatch(r"bench\.py: error: num_running=16/send/msgpack#0: runner process "
                     rf"{runner} was killed by SIGKILL, noticed while (?:sending SchedulerOutput for|"
                     r"waiting for ModelRunnerOutput for|waiting for input digests from "
                     r"the runner before) step (\d+)" + re.escape(f"; partial results: {run_dir}"),
                     lines[-1])
    # one line after the run's first (no FAILED progress line); no case finished before
    # it, but the folder holds its measured steps, so it points at them
    assert m and lines[:-1] == [f"ipc-bench: decode-steady, 2 cases -> {run_dir}"], lines
    assert "Traceback" not in err
    assert not alive(runner) and children(proc.pid) == []
    summary, steps = _check_partial_folder(
        run_dir, "failed", lines[-1].split(": ", 3)[-1].rsplit("; partial results: ", 1)[0])
    assert summary["cases"][0]["failed_step"] == int(m.group(1)) == len(steps)
    print(f"\nrunner SIGKILLed at step {m.group(1)}: bench.py exited 1 after {exit_s:.2f} s")


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_bench_interrupted_kills_the_runner_and_keeps_the_results(tmp_path, sig, code):
    run_dir = tmp_path / "run"
    proc, runner = _start_long_run(run_dir)
    proc.send_signal(sig)
    t0 = time.monotonic()
    runner_gone_s = wait_dead(runner, timeout_s=10)
    _, err = proc.communicate(timeout=60)
    exit_s = time.monotonic() - t0
    name = signal.Signals(sig).name
    assert proc.returncode == code
    lines = err.strip().splitlines()
    m = re.fullmatch(rf"bench\.py: num_running=16/send/msgpack#0: interrupted by {name} at "
                     rf"step (\d+) \(steps\.csv seq: warm-up and uncounted steps included\); "
                     rf"partial results: {re.escape(str(run_dir))} \(exit {code}\)", lines[-1])
    assert m, lines
    assert not any("interrupted by" in line for line in lines[:-1]), lines  # one line
    assert "Traceback" not in err and children(proc.pid) == []
    summary, steps = _check_partial_folder(run_dir, "incomplete", f"interrupted by {name}")
    assert summary["cases"][0]["failed_step"] == int(m.group(1)) == len(steps)
    print(f"\n{name}: runner gone after {runner_gone_s * 1e3:.0f} ms, bench.py exited "
          f"after {exit_s * 1e3:.0f} ms")


def test_a_sighup_bench_inherited_as_ignored_stays_ignored(tmp_path):
    """Started with SIGHUP ignored (as ``nohup`` starts it), bench.py and its runner run
    on through a SIGHUP, as its launcher asked; Ctrl-C still ends the run."""
    run_dir = tmp_path / "run"
    proc, runner = _start_long_run(
        run_dir, preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    proc.send_signal(signal.SIGHUP)
    os.kill(runner, signal.SIGHUP)  # a terminal's hangup reaches its whole process group
    partial = run_dir / "steps.partial.csv"  # renamed to steps.csv when the run ends
    rows = partial.stat().st_size
    wait_for(lambda: partial.exists() and partial.stat().st_size > rows, proc=proc,
             what="rows flushed after the SIGHUP")
    assert proc.poll() is None and alive(runner)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith(
        "bench.py: num_running=16/send/msgpack#0: interrupted by SIGINT at step "), err
    assert "SIGHUP" not in err and children(proc.pid) == []


# ---------------------------------------------------------------------------- signals at start-up

_HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _signal_after_start(args: list[str], sig: int, delay_s: float) -> subprocess.Popen:
    """Start ``bench.py ARGS`` and send ``sig`` ``delay_s`` after its first statement.
    With ``PYTHONFAULTHANDLER`` set: a SIGABRT prints every thread's stack
    (``_abort_with_stacks``)."""
    proc = bench(args, env=dict(os.environ, PYTHONFAULTHANDLER="1"))
    wait_for(lambda: bench_started(proc.pid) or proc.poll() is not None, timeout_s=120,
             what="bench.py's first statement")
    time.sleep(delay_s)
    proc.send_signal(sig)
    return proc


def _abort_with_stacks(proc: subprocess.Popen) -> str:
    """End a ``bench.py`` that outlived its signal: SIGABRT, which its fault handler
    answers with every thread's Python stack on stderr (returned after its signal masks
    from ``/proc``), then SIGKILL if it
    is still there; its children and socket folders are removed, so that what fails is
    this test alone, not the next one or the session's leftover check."""
    kids = children(proc.pid)
    try:  # the signal masks first: pending, blocked, ignored or caught
        masks = [ln for ln in Path(f"/proc/{proc.pid}/status").read_text().splitlines()
                 if ln.startswith(("SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt"))]
    except OSError:
        masks = []
    err = end_and_read(proc, signal.SIGABRT, 30.0)
    for pid in kids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for folder in Path(tempfile.gettempdir()).glob(f"ipc-bench-{proc.pid}-*"):
        shutil.rmtree(folder, ignore_errors=True)
    return "\n".join(masks + [err])


def _check_interrupted_folder(run_dir: Path, name: str) -> None:
    """No folder, or a valid one: ``incomplete``, the interrupt named, CSVs loadable."""
    if not run_dir.exists():
        return
    summary, _ = load_run(run_dir)
    assert summary["status"] == "incomplete"
    assert len(summary["problems"]) == 1 and f"interrupted by {name}" in summary["problems"][0]


#: Delays after bench.py's first statement: imports, option checks, metadata, the
#: folder's claim, the runner's start and handshake, the first steps (about 1.5 s in all
#: on the 2-core development machine; later delays land in the first case).
START_DELAYS_S = (0.0, 0.005, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8,
                  0.9, 1.0, 1.1, 1.2, 1.4, 1.7, 2.0)


@pytest.mark.slow
def test_a_signal_at_any_moment_of_the_start_ends_with_its_code_and_one_line(tmp_path):
    outcomes = []
    for i, delay_s in enumerate(START_DELAYS_S):
        sig = _HANDLED[i % 3]
        name, code = signal.Signals(sig).name, 128 + sig
        run_dir = tmp_path / f"run{i}"
        proc = _signal_after_start(
            ["--scenario", "decode-steady", "--num-running", "16", "--steps", "100000",
             "--policies", "send", "--codecs", "msgpack", "--quiet", "--output",
             str(run_dir)], sig, delay_s)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            stacks = _abort_with_stacks(proc)
            pytest.fail(f"bench.py still ran 60 s after {name} at {delay_s} s from its start; "
                        f"its stacks at SIGABRT:\n{stacks}")
        assert (proc.returncode, "Traceback" in err) == (code, False), (delay_s, name, err)
        lines = err.splitlines()  # one line: bench.py's own, or the interrupted case's
        assert len(lines) == 1 and (
            re.fullmatch(rf"bench\.py: interrupted by {name}( after 0 of 2 cases)?"
                         rf"(; run folder \(nothing measured\): {re.escape(str(run_dir))})? "
                         rf"\(exit {code}\)", lines[0])
            or re.fullmatch(rf"bench\.py: num_running=16/send/(msgpack|none)#0: "
                            rf"interrupted by {name} .*?(; (partial results|run "
                            rf"folder \(nothing measured\)): {re.escape(str(run_dir))})? "
                            rf"\(exit {code}\)", lines[0])), lines
        _check_interrupted_folder(run_dir, name)
        outcomes.append((delay_s, name, run_dir.exists()))
    assert children(os.getpid()) == []
    print("\n" + ", ".join(f"{d:g} s {n}: {'folder' if f else 'none'}"
                           for d, n, f in outcomes))


def _quiet_count(run) -> str:
    """What a ``--quiet`` run that stopped before its tables prints on stdout: the count
    of the warnings its ``summary.json`` holds ("" for none, or no summary)."""
    try:
        cases = json.loads((run / "summary.json").read_text())["cases"]
    except FileNotFoundError:
        return ""
    n = sum(len(c.get("warnings") or ()) for c in cases)
    return (f"{n} warning{'' if n == 1 else 's'} recorded in {run / 'summary.json'} "
            "(not shown: --quiet)\n") if n else ""


_TINY = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "50",
         "--warmup-steps", "2", "--policies", "send,cached", "--codecs", "msgpack",
         "--no-single-process", "--quiet"]


def test_a_signal_right_after_the_claim_leaves_a_valid_incomplete_folder(
        tmp_path, monkeypatch, capsys, handlers_restored):
    from ipc_bench import cli
    from ipc_bench.cli import execute
    from ipc_bench.harness.run_folder import RunWriter

    class InterruptedWriter(RunWriter):
        def __init__(self, run_dir, metadata):
            assert (Path(run_dir) / ".claimed").exists()
            os.kill(os.getpid(), signal.SIGINT)  # pending until the folder is written
            super().__init__(run_dir, metadata)

    monkeypatch.setattr(execute, "RunWriter", InterruptedWriter)
    run_dir = tmp_path / "run"
    assert cli.main(_TINY + ["--output", str(run_dir)]) == 130
    assert capsys.readouterr().err == ("bench.py: interrupted by SIGINT after 0 of 2 cases; "
                                       f"run folder (nothing measured): {run_dir} (exit 130)\n")
    summary, frames = load_run(run_dir)
    assert (summary["status"], summary["problems"], summary["cases"]) == (
        "incomplete", ["interrupted by SIGINT after 0 of 2 cases"], [])
    assert [len(f) for f in frames.values()] == [0, 0, 0, 0]  # floor, itl, requests, steps


def test_a_signal_as_the_next_case_is_named_running_writes_that_case_as_interrupted(
        tmp_path, monkeypatch, capsys, handlers_restored):
    """SIGHUP just after ``summary.json`` names the second case as running (before its
    processes start): that case is written as interrupted before its first step (``complete:
    false``), ``running_case`` is cleared, and the first case stays as it was."""
    from ipc_bench import cli
    from ipc_bench.cli import execute
    from ipc_bench.harness.run_folder import RunWriter

    class SignalledWriter(RunWriter):
        def begin_case(self, spec):
            super().begin_case(spec)
            if self.cases:  # the second case: one is written
                os.kill(os.getpid(), signal.SIGHUP)

    monkeypatch.setattr(execute, "RunWriter", SignalledWriter)
    run_dir = tmp_path / "run"
    assert cli.main(_TINY + ["--output", str(run_dir)]) == 129
    assert capsys.readouterr().err == (
        "bench.py: num_running=2/cached/msgpack#0: interrupted by SIGHUP before its first "
        f"step; partial results: {run_dir} (exit 129)\n")
    summary, _ = load_run(run_dir)
    assert (summary["status"], summary["running_case"], summary["failed_case"],
            summary["problems"]) == (
        "incomplete", None, "num_running=2/cached/msgpack#0",
        ["num_running=2/cached/msgpack#0: interrupted by SIGHUP"])
    assert [(c["case_id"], c["complete"]) for c in summary["cases"]] == [
        ("num_running=2/send/msgpack#0", True), ("num_running=2/cached/msgpack#0", False)]


def test_a_signal_while_a_finished_case_is_written_counts_that_case(
        tmp_path, monkeypatch, capsys, handlers_restored):
    """SIGTERM while the first case's results are written: the case is written,
    counted and announced, then the run ends, naming 1 of 2 cases done."""
    from ipc_bench import cli
    from ipc_bench.cli import execute

    record = execute._Run._record

    def record_then_signal(self, result, cpu_before, **kw):
        summary = record(self, result, cpu_before, **kw)
        os.kill(os.getpid(), signal.SIGTERM)  # pending until the case is counted
        return summary

    monkeypatch.setattr(execute._Run, "_record", record_then_signal)
    run_dir = tmp_path / "run"
    assert cli.main([a for a in _TINY if a != "--quiet"] + ["--output", str(run_dir)]) == 143
    err = capsys.readouterr().err.splitlines()
    # the case's line, its warnings (a loaded machine adds "may be noisy" ones), the end
    done = [i for i, line in enumerate(err) if line.startswith("[1/2] ")]
    assert len(done) == 1 and re.fullmatch(
        r"\[1/2\] num_running=2/send/msgpack#0: 50 steps, [\d,]+ tok/s \([\d.]+ s for "
        r"the whole case\)",
        err[done[0]]), err
    warned = err[done[0] + 1:-2]
    assert warned[0] == ("  warning: only 50 counted steps (< 100): step-time noise not "
                         "measured (under 150: 3 blocks of 50) and figures are rough"), err
    assert all(line.startswith("  warning: ") for line in warned), err
    assert err[-2].startswith(  # the count line, then the interrupt's, the last
        f"{len(warned)} measurement warning{'' if len(warned) == 1 else 's'} in 1 of 1 case "
        "(printed under their case lines above"), err
    assert err[-1] == (f"bench.py: interrupted by SIGTERM after 1 of 2 cases; partial results: "
                       f"{run_dir} (exit 143)")
    summary, _ = load_run(run_dir)
    assert (summary["status"], summary["problems"]) == (
        "incomplete", ["interrupted by SIGTERM after 1 of 2 cases"])
    assert [(c["case_id"], c["complete"]) for c in summary["cases"]] == [
        ("num_running=2/send/msgpack#0", True)]


@pytest.mark.parametrize("stop", ["failed case", "SIGTERM between cases"])
def test_a_quiet_run_that_stops_before_its_tables_counts_the_warnings_it_did_not_show(
        tmp_path, monkeypatch, capsys, handlers_restored, stop):
    """--quiet: the first case is written (with its "figures are rough" warning and any
    noise ones), then the second case fails, or SIGTERM comes between the cases; stdout
    holds the count of the warnings written, stderr the one line of the stop."""
    from ipc_bench import cli
    from ipc_bench.cli import execute

    run_case_ = execute.run_case
    record = execute._Run._record
    calls = []

    def run_case_then_fail(case, **kw):
        calls.append(case.case_id)
        if len(calls) == 2:
            raise CaseError("the runner broke (injected)", 3)
        return run_case_(case, **kw)

    def record_then_signal(self, result, cpu_before, **kw):
        summary = record(self, result, cpu_before, **kw)
        os.kill(os.getpid(), signal.SIGTERM)  # pending until the case is counted
        return summary

    if stop == "failed case":
        monkeypatch.setattr(execute, "run_case", run_case_then_fail)
    else:
        monkeypatch.setattr(execute._Run, "_record", record_then_signal)
    run_dir = tmp_path / "run"
    code = cli.main(_TINY + ["--output", str(run_dir)])
    out, err = capsys.readouterr()
    summary, _ = load_run(run_dir)
    written = [c for c in summary["cases"] if c["complete"]]
    assert [c["case_id"] for c in written] == ["num_running=2/send/msgpack#0"]
    recorded = len(written[0]["warnings"])
    assert recorded >= 1 and (
        "only 50 counted steps (< 100): step-time noise not measured (under 150: 3 blocks "
        "of 50) and figures are rough") in written[0]["warnings"]
    plural = "" if recorded == 1 else "s"
    assert out == (f"{recorded} warning{plural} recorded in {run_dir / 'summary.json'} "
                   "(not shown: --quiet)\n")
    if stop == "failed case":
        assert code == 1
        assert err == ("bench.py: error: num_running=2/cached/msgpack#0: the runner broke "
                       f"(injected); partial results: {run_dir}\n")
    else:
        assert code == 143
        assert err == (f"bench.py: interrupted by SIGTERM after 1 of 2 cases; partial results: "
                       f"{run_dir} (exit 143)\n")


def test_a_signal_before_the_claim_leaves_no_folder(tmp_path, monkeypatch, capsys,
                                                    handlers_restored):
    from ipc_bench import cli
    from ipc_bench.cli import execute

    def collect_metadata(**_):
        os.kill(os.getpid(), signal.SIGTERM)
        return {}

    monkeypatch.setattr(execute, "collect_metadata", collect_metadata)
    assert cli.main(_TINY + ["--output", str(tmp_path / "run")]) == 143
    assert capsys.readouterr().err == "bench.py: interrupted by SIGTERM (exit 143)\n"
    assert list(tmp_path.iterdir()) == []


def test_a_signal_after_the_last_case_before_the_checks_says_so(tmp_path, monkeypatch,
                                                                capsys, handlers_restored):
    """SIGTERM after every case was written, before the checks across them: the run is
    incomplete (no digests compared), and the line says every case finished."""
    from ipc_bench import cli
    from ipc_bench.cli import execute

    check = execute.check_digests

    def check_digests(cases):
        os.kill(os.getpid(), signal.SIGTERM)
        return check(cases)

    monkeypatch.setattr(execute, "check_digests", check_digests)
    run_dir = tmp_path / "run"
    assert cli.main(_TINY + ["--output", str(run_dir)]) == 143
    assert capsys.readouterr().err == (
        f"bench.py: interrupted by SIGTERM after both cases, before the checks across them; "
        f"results: {run_dir} (exit 143)\n")
    summary, _ = load_run(run_dir)
    assert (summary["status"], summary["problems"]) == (
        "incomplete", ["interrupted by SIGTERM after both cases, before the checks across "
                       "them"])
    assert [c["complete"] for c in summary["cases"]] == [True, True]


def test_a_signal_while_the_tables_print_keeps_the_status(tmp_path, monkeypatch, capsys,
                                                          handlers_restored):
    from ipc_bench import cli
    from ipc_bench.cli import execute

    def format_tables(cases, method="t"):
        os.kill(os.getpid(), signal.SIGTERM)
        return "tables"

    monkeypatch.setattr(execute, "format_tables", format_tables)
    run_dir = tmp_path / "run"
    assert cli.main(_TINY + ["--output", str(run_dir)]) == 143
    assert capsys.readouterr().err == (f"bench.py: interrupted by SIGTERM while the results "
                                       f"printed; the run is complete: {run_dir} (exit 143)\n")
    summary, _ = load_run(run_dir)
    assert (summary["status"], summary["problems"]) == ("complete", [])
    assert len(summary["cases"]) == 2


# ---------------------------------------------------------------------------- write failures

ENOSPC_LINE = "cannot write results to {run}: No space left on device"


def _no_space(monkeypatch, pattern: str, after: int = 0) -> None:
    """Every write to a run-folder file named like ``pattern`` after the first ``after``
    writes half its data, then fails with ENOSPC (a disk filling up mid-write)."""
    from ipc_bench.harness import run_folder

    real, seen = run_folder.write_fd, [0]

    def write_fd(fd: int, data: bytes, path) -> None:
        if fnmatch.fnmatch(Path(path).name, pattern):
            seen[0] += 1
            if seen[0] > after:
                os.write(fd, data[:len(data) // 2])
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(fd, data, path)

    monkeypatch.setattr(run_folder, "write_fd", write_fd)


def _writer_spec():
    spec = steady_case(2, max_steps=3)
    spec.make_workload()  # a real spec, as a run would pass it
    return spec


@pytest.mark.parametrize("file,write", [
    ("steps.partial.csv", lambda w, spec, r: w.partial_steps(spec, r.sched_rows)),
    ("steps.csv", lambda w, spec, r: w.stream_steps(spec, r.sched_rows)),
    ("requests.csv", lambda w, spec, r: w.stream_requests(spec, r.requests)),
    ("itl.csv", lambda w, spec, r: w.stream_requests(spec, r.requests)),
    ("rss.csv", lambda w, spec, r: w.stream_rss(spec, r.rss_samples)),
    ("steps.csv", lambda w, spec, r: w.add_case(r, {"case_id": spec.case_id})),
    ("floor.csv", lambda w, spec, r: w.add_case(r, {"case_id": spec.case_id})),
    ("summary.json.*.tmp", lambda w, spec, r: w.begin_case(spec)),
    ("summary.json.*.tmp", lambda w, spec, r: w.finish("complete")),
])
def test_every_write_of_the_run_folder_fails_in_one_line_and_keeps_what_was_written(
        file, write, tmp_path, monkeypatch):
    from ipc_bench.harness.run_folder import RunFolderError, RunWriter

    spec = _writer_spec()
    result = run_case(spec)
    result.rss_samples = [(0.5, 1, 2, 3, 4, 5)]
    result.floor_step_ns = [7, 8, 9]
    result.requests[0]["itl_s"] = [0.25]
    writer = RunWriter(tmp_path / "run", {"scenario": "t"})
    # a first successful write of each kind, so there is something to keep
    writer.partial_steps(spec, result.sched_rows[:1])
    writer.stream_rss(spec, result.rss_samples)
    before = {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()}
    _no_space(monkeypatch, file)
    with pytest.raises(RunFolderError) as err:
        write(writer, spec, result)
    assert str(err.value) == ENOSPC_LINE.format(run=tmp_path / "run")
    after = {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()}
    failed = [n for n in before if fnmatch.fnmatch(n, file)] or ["summary.json"]
    for name in failed:
        assert after[name] == before[name], name  # cut back: every row whole
    assert not any(n.endswith(".tmp") for n in after)
    load_run(tmp_path / "run")


_ONE_CASE = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "400",
             "--warmup-steps", "2", "--policies", "send", "--codecs", "msgpack",
             "--no-single-process", "--quiet"]


@pytest.mark.parametrize("pattern,after,status,lost", [
    ("steps.partial.csv", 1, "failed", ""),   # while the case runs: its rows in memory
    # when the case is written (after the header): the rows of the file that failed
    # are counted, every other file is written whole
    ("steps.csv", 1, "failed", "402 of steps.csv (kept in steps.partial.csv)"),
    ("requests.csv", 1, "failed", "2 of requests.csv"),
    ("floor.csv", 1, "failed", "400 of floor.csv"),
    ("summary.json.*.tmp", 2, "incomplete", ""),  # summary.json: its last version stays
    ("*.msgpack", 0, "failed", ""),           # the captured messages
])
def test_a_full_disk_mid_run_is_one_line_exit_1_and_a_loadable_folder(
        pattern, after, status, lost, tmp_path, monkeypatch, capsys):
    from ipc_bench import cli
    from ipc_bench.analysis import capture
    from ipc_bench.analysis.results import load
    from ipc_bench.harness import recording

    monkeypatch.setattr(recording, "FLUSH_INTERVAL_S", 0.0)  # flush after every step
    run = tmp_path / "run"
    where = run
    if pattern == "*.msgpack":
        where = run / "messages"

        def save_captures(run_dir, result, max_messages=200):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(where / "x.msgpack"))

        monkeypatch.setattr(capture, "save_captures", save_captures)
        from ipc_bench.cli import execute
        monkeypatch.setattr(execute, "save_captures", save_captures)
    else:
        _no_space(monkeypatch, pattern, after)
    assert cli.main(_ONE_CASE + ["--output", str(run)]) == 1
    out, err = capsys.readouterr()
    message = ENOSPC_LINE.format(run=where) + (f"; rows not written: {lost}" if lost else "")
    stale = ("" if status == "failed" else " (summary.json could not be updated either: No "
             "space left on device; it still says the run is incomplete and lists no case; "
             "case num_running=2/send/msgpack#0 is not listed, so a report leaves out its "
             "rows on disk: 402 in steps.csv, 2 in requests.csv and 400 in floor.csv)")
    kept = stale or f"; partial results: {run}"  # the line points at what summary.json kept
    assert (out, err) == (_quiet_count(run), f"bench.py: error: {message}{kept}\n")
    summary, frames = load_run(run)
    assert summary["status"] == status
    if status == "failed":
        assert summary["problems"] == [message]
        assert summary["failed_case"] == "num_running=2/send/msgpack#0"
    if pattern in ("steps.csv", "requests.csv", "floor.csv"):
        # the case's other files hold every row of it, once (not again on the retry)
        [case] = summary["cases"]
        n = int(lost.split()[0])
        assert case["rows_not_written"] == {pattern: n}
        rows = {"steps.csv": 402, "requests.csv": 2, "floor.csv": 400}
        for name, want in rows.items():
            assert len(frames[name]) == (0 if name == pattern else want), name
        assert len(frames.get("steps.partial.csv", ())) == (402 if pattern == "steps.csv"
                                                            else 0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = load(run)
    if status == "failed":  # the rows not written are the problem's: no file cut short
        # (the case is listed, finished where only its captured messages or its floor
        # rows failed: test_floor_write_failure)
        held = ("finished" if pattern in ("*.msgpack", "floor.csv") else "not finished "
                "(Results.unfinished names it; Results.finished leaves it out)")
        assert [str(w.message) for w in caught] == [
            f"{run}: this run failed: {loaded.status_detail[run.name]}; 1 case loaded, {held}"]
        assert loaded.status_detail[run.name].startswith(message)
        if pattern in ("*.msgpack", "floor.csv"):  # listed as finished: not running
            assert loaded.status_detail[run.name] == (
                f"{message}; case num_running=2/send/msgpack#0 had finished, its files "
                "being written")
    else:  # summary.json as the case began: a full disk reads as a kill would, so the
        # report names both and asserts neither
        assert loaded.status_detail[run.name].startswith(
            "stopped without finishing its summary (killed, or summary.json could not be "
            "written: a full disk, say): no process holds its lock, no end was recorded, "
            "summary status incomplete, 0 of 1 cases recorded, last case "
            "num_running=2/send/msgpack#0 running (the run started ")
    assert not any(p.name.endswith(".tmp") for p in run.rglob("*"))


def test_a_full_disk_keeps_the_rows_since_the_last_flush_in_steps_partial_csv(
        tmp_path, monkeypatch, capsys):
    """No flush while the case runs (an interval longer than the run): steps.csv
    cannot take its 402 rows when it ends, and steps.partial.csv, which held none,
    takes them all, in order, as a killed run's would be; requests.csv and floor.csv
    are written whole. Before, all three files lost the case's rows."""
    from ipc_bench import cli
    from ipc_bench.analysis.results import load
    from ipc_bench.harness import recording

    monkeypatch.setattr(recording, "FLUSH_INTERVAL_S", 3600.0)
    _no_space(monkeypatch, "steps.csv", after=1)  # its header is written, then no row
    run = tmp_path / "run"
    assert cli.main(_ONE_CASE + ["--output", str(run)]) == 1
    message = (f"{ENOSPC_LINE.format(run=run)}; rows not written: 402 of steps.csv (kept "
               "in steps.partial.csv)")
    assert capsys.readouterr() == (_quiet_count(run),
                                   f"bench.py: error: {message}; partial results: {run}\n")
    summary, frames = load_run(run)
    [case] = summary["cases"]
    assert (case["complete"], case["rows_not_written"], case["steps_kept_in"]) == (
        False, {"steps.csv": 402}, "steps.partial.csv")
    kept = frames["steps.partial.csv"]
    assert kept["seq"].tolist() == list(range(402))
    assert (len(frames["steps.csv"]), len(frames["requests.csv"]),
            len(frames["floor.csv"])) == (0, 2, 400)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = load(run)
    detail = loaded.status_detail[run.name]
    assert detail.startswith(
        f"{message}; case num_running=2/send/msgpack#0 was running, steps.partial.csv "
        "holds 402 rows of it (its modification time ")
    assert [str(w.message) for w in caught] == [
        f"{run}: this run failed: {detail}; 1 case loaded, not finished (Results.unfinished "
        "names it; Results.finished leaves it out)"]


def test_a_case_written_again_after_a_failed_file_writes_each_other_file_once(
        tmp_path, monkeypatch):
    """``RunWriter.add_case`` with requests.csv full: steps.csv, itl.csv and floor.csv
    take the case's rows, requests.csv's are counted; written again (as a case that
    did not finish is), it writes none of them twice and tries requests.csv no more."""
    from ipc_bench.harness.run_folder import RunFolderError, RunWriter

    spec = _writer_spec()
    result = run_case(spec)
    result.floor_step_ns = [7, 8, 9]
    result.requests[0]["itl_s"] = [0.25, 0.5]
    writer = RunWriter(tmp_path / "run", {"scenario": "t"})
    _no_space(monkeypatch, "requests.csv")
    with pytest.raises(RunFolderError) as err:
        writer.add_case(result, {"case_id": spec.case_id})
    assert str(err.value) == ENOSPC_LINE.format(run=tmp_path / "run")
    n = len(result.requests)
    assert writer.rows_not_written == {spec.case_id: {"requests.csv": n}}
    assert writer.unwritten_note(spec.case_id) == f"; rows not written: {n} of requests.csv"
    writer.add_case(result, {"case_id": spec.case_id, "complete": False})
    summary, frames = load_run(tmp_path / "run")
    assert summary["cases"] == [{"case_id": spec.case_id, "complete": False,
                                 "rows_not_written": {"requests.csv": n}}]
    assert (len(frames["steps.csv"]), len(frames["requests.csv"]), len(frames["itl.csv"]),
            len(frames["floor.csv"])) == (len(result.sched_rows), 0, 2, 3)


def test_a_full_disk_before_the_first_case_leaves_no_folder(tmp_path, monkeypatch, capsys):
    from ipc_bench import cli

    _no_space(monkeypatch, "summary.json.*.tmp")
    run = tmp_path / "run"
    assert cli.main(_ONE_CASE + ["--output", str(run)]) == 2
    assert capsys.readouterr() == ("", f"bench.py: error: {ENOSPC_LINE.format(run=run)}\n")
    assert not run.exists()


# --------------------------------------------------------------- out of file descriptors



_TWO_CASES = [*_ONE_CASE[:_ONE_CASE.index("send")], "send,cached",
              *_ONE_CASE[_ONE_CASE.index("send") + 1:]]
_STALE = "; it still says the run is incomplete and lists 1 case, whose results are kept: "


@pytest.mark.parametrize("steps_after,summary_after,rest", [
    # the second case's files are written, its summary is not: its rows are on disk
    (None, 4, f"{_STALE}num_running=2/send/msgpack#0; case num_running=2/cached/msgpack#0 "
              "is not listed, so a report leaves out its rows on disk: 402 in steps.csv, 2 "
              "in requests.csv and 400 in floor.csv)"),
    # steps.csv cannot take the second case's rows either: they stay in steps.partial.csv
    (2, 4, "; rows not written: 402 of steps.csv (kept in steps.partial.csv) (summary.json "
           f"could not be updated either: No space left on device{_STALE}"
           "num_running=2/send/msgpack#0; case num_running=2/cached/msgpack#0 is not listed, "
           "so a report leaves out its rows on disk: 2 in requests.csv, 400 in floor.csv "
           "and 402 in steps.partial.csv)"),
    # the summary cannot name the second case as running: nothing of it was measured
    (None, 3, f"{_STALE}num_running=2/send/msgpack#0; case num_running=2/cached/msgpack#0 is "
              "not listed, and none of its rows reached the folder)"),
])
def test_a_summary_that_cannot_be_updated_names_the_cases_it_lists_and_what_is_lost(
        steps_after, summary_after, rest, tmp_path, monkeypatch, capsys):
    """A full disk as the second of two cases is written: the line says which case the
    summary left on disk lists (its results kept) and, for the other, which of its rows
    reached the folder (a report leaves them out: the summary does not list it) or that
    none did; the folder loads with the first case alone."""
    from ipc_bench import cli
    from ipc_bench.harness import recording

    monkeypatch.setattr(recording, "FLUSH_INTERVAL_S", 0.0)  # flush after every step
    if steps_after is not None:
        _no_space(monkeypatch, "steps.csv", steps_after)
    _no_space(monkeypatch, "summary.json.*.tmp", summary_after)
    run = tmp_path / "run"
    assert cli.main(_TWO_CASES + ["--output", str(run)]) == 1
    line = ENOSPC_LINE.format(run=run)
    if steps_after is None:
        line += " (summary.json could not be updated either: No space left on device"
    assert capsys.readouterr() == (_quiet_count(run), f"bench.py: error: {line}{rest}\n")
    summary, _ = load_run(run)
    assert [c["case_id"] for c in summary["cases"]] == ["num_running=2/send/msgpack#0"]
    assert (summary["status"], summary["running_case"]) == (
        "incomplete", None if summary_after == 3 else "num_running=2/cached/msgpack#0")



def test_a_stale_summary_of_many_cases_names_the_first_and_last_it_lists(tmp_path):
    """Over 3 cases listed, the note names the first and the last (they run in order);
    1 to 3 are each named."""
    from ipc_bench.harness.run_folder import RunWriter

    writer = RunWriter(tmp_path / "run", {"scenario": "t"})
    ids = [f"num_running={n}/send/msgpack#0" for n in (1, 2, 4, 8, 16)]
    for i, case_id in enumerate(ids):
        writer.list_case({"case_id": case_id})
        if i == 2:
            assert writer.held_note(ids[:4], 57) == (
                " and lists 3 cases, whose results are kept: num_running=1/send/msgpack#0, "
                "num_running=2/send/msgpack#0 and num_running=4/send/msgpack#0; case "
                "num_running=8/send/msgpack#0 is not listed, and none of its rows reached "
                "the folder: the 57 steps it measured are lost")
    assert writer.held_note(ids) == (
        " and lists 5 cases, whose results are kept: the first 5 run, "
        "num_running=1/send/msgpack#0 to num_running=16/send/msgpack#0")


def test_a_disk_full_from_the_second_case_on_says_its_measured_steps_are_lost(
        tmp_path, monkeypatch, capsys):
    """Every write fails once the second case has begun (its first flush of
    steps.partial.csv included): the line names the first case as kept and says
    that the step the second measured before the flush failed is lost."""
    from ipc_bench import cli
    from ipc_bench.harness import recording, run_folder

    monkeypatch.setattr(recording, "FLUSH_INTERVAL_S", 0.0)  # flush after every step
    real_begin, real_write, full = run_folder.RunWriter.begin_case, run_folder.write_fd, [False]

    def begin_case(self, spec):
        real_begin(self, spec)
        full[0] = full[0] or spec.policy == "cached"

    def write_fd(fd, data, path):
        if full[0]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real_write(fd, data, path)

    monkeypatch.setattr(run_folder.RunWriter, "begin_case", begin_case)
    monkeypatch.setattr(run_folder, "write_fd", write_fd)
    run = tmp_path / "run"
    assert cli.main(_TWO_CASES + ["--output", str(run)]) == 1
    assert capsys.readouterr() == (_quiet_count(run), (
        f"bench.py: error: {ENOSPC_LINE.format(run=run)}; rows not written: 1 of steps.csv "
        "and 2 of requests.csv (summary.json could not be updated either: No space left on "
        f"device{_STALE}num_running=2/send/msgpack#0; case num_running=2/cached/msgpack#0 is "
        "not listed, and none of its rows reached the folder: the step it measured is "
        "lost)\n"))
    summary, frames = load_run(run)
    assert ([c["case_id"] for c in summary["cases"]], summary["running_case"]) == (
        ["num_running=2/send/msgpack#0"], "num_running=2/cached/msgpack#0")
    assert set(frames["steps.csv"]["case_id"]) == {"num_running=2/send/msgpack#0"}


def _no_descriptor(monkeypatch, pattern: str, after: int = 0,
                   code: int = errno.EMFILE) -> None:
    """Every open of a run-folder file named like ``pattern`` after the first ``after``
    fails as ``os.open`` does when no descriptor is left: ``code``, ``EMFILE`` (the
    process's limit) or ``ENFILE`` (the system's file table)."""
    from ipc_bench.harness import run_folder

    real, seen = run_folder._create, [0]

    def create(path, append: bool = False, create: bool = True) -> int:
        if fnmatch.fnmatch(Path(path).name, pattern):
            seen[0] += 1
            if seen[0] > after:
                raise OSError(code, os.strerror(code), str(path))
        return real(path, append, create)

    monkeypatch.setattr(run_folder, "_create", create)


@pytest.mark.parametrize("code", [errno.EMFILE, errno.ENFILE])
def test_a_results_file_that_cannot_be_opened_for_want_of_descriptors_is_exit_2(
        code, tmp_path, monkeypatch, capsys):
    """steps.csv cannot be opened when the case is written (its 2 opens at the run's
    start went through): was ``cannot write results to DIR: Too many open files``,
    exit 1; now the limit's line, exit 2, and what the other files took is kept as on
    a full disk: the case's rows in steps.partial.csv, requests.csv and floor.csv
    whole, the case listed with its rows not written, the run failed with the line."""
    from ipc_bench import cli
    from ipc_bench.harness import recording

    monkeypatch.setattr(recording, "FLUSH_INTERVAL_S", 0.0)  # flush after every step
    _no_descriptor(monkeypatch, "steps.csv", after=2, code=code)
    run = tmp_path / "run"
    assert cli.main(_ONE_CASE + ["--output", str(run)]) == 2
    message = (f"cannot write results to {run}: {fd_line(code)}; rows not written: 402 "
               "of steps.csv (kept in steps.partial.csv)")
    assert capsys.readouterr() == (_quiet_count(run),
                                   f"bench.py: error: {message}; partial results: {run}\n")
    summary, frames = load_run(run)
    assert (summary["status"], summary["problems"], summary["failed_case"]) == (
        "failed", [message], "num_running=2/send/msgpack#0")
    [case] = summary["cases"]
    assert (case["complete"], case["rows_not_written"], case["steps_kept_in"]) == (
        False, {"steps.csv": 402}, "steps.partial.csv")
    assert frames["steps.partial.csv"]["seq"].tolist() == list(range(402))
    assert (len(frames["steps.csv"]), len(frames["requests.csv"]),
            len(frames["floor.csv"])) == (0, 2, 400)


def test_a_summary_that_cannot_be_opened_either_names_the_limit_once(
        tmp_path, monkeypatch, capsys):
    """Out of descriptors as the case's end is written (summary.json's temporary file
    cannot be opened from then on): exit 2, one line naming the limit, and the
    summary that could not be updated either named with the whole line (the reason
    was cut at the line's last ': '); the case's files are whole."""
    from ipc_bench import cli
    from ipc_bench.harness import run_folder

    real, opened = run_folder._create, []

    def create(path, append: bool = False, create: bool = True) -> int:
        name = Path(path).name
        opened.append(name)
        if name.startswith("summary.json") and opened.count(name) > 2:
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE), str(path))
        return real(path, append, create)

    monkeypatch.setattr(run_folder, "_create", create)
    run = tmp_path / "run"
    assert cli.main(_ONE_CASE + ["--output", str(run)]) == 2
    line = fd_line(errno.EMFILE)
    assert capsys.readouterr() == (_quiet_count(run), (
        f"bench.py: error: cannot write results to {run}: {line} (summary.json could not "
        f"be updated either: {line}; it still says the run is incomplete and lists no case; "
        "case num_running=2/send/msgpack#0 is not listed, so a report leaves out its rows "
        "on disk: 402 in steps.csv, 2 in requests.csv and 400 in floor.csv)\n"))
    summary, frames = load_run(run)
    assert (summary["status"], summary["running_case"]) == (
        "incomplete", "num_running=2/send/msgpack#0")
    assert (len(frames["steps.csv"]), len(frames["requests.csv"]),
            len(frames["floor.csv"])) == (402, 2, 400)


def test_a_run_folder_that_cannot_be_claimed_for_want_of_descriptors_is_exit_2(
        tmp_path, monkeypatch, capsys):
    """The claim's file cannot be opened (EMFILE): the limit's line, exit 2, no folder
    left (was ``cannot write results to DIR: Too many open files``)."""
    from ipc_bench import cli

    real = os.open

    def claim_out_of_fds(path, *args, **kwargs):
        if os.fspath(path).endswith(".claimed"):
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE), os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", claim_out_of_fds)
    run = tmp_path / "out" / "run"
    assert cli.main(_ONE_CASE + ["--output", str(run)]) == 2
    assert capsys.readouterr() == ("", f"bench.py: error: cannot write results to {run}: "
                                       f"{fd_line(errno.EMFILE)}\n")
    assert not (tmp_path / "out").exists()


def test_a_file_size_limit_mid_run_records_the_case_as_other_failures_do(tmp_path):
    """A real limit (RLIMIT_FSIZE: writes past 256 KiB fail with EFBIG), not a stub: 1 ms
    steps, so steps.partial.csv takes a second's rows (about 180 KB, fewer on a loaded
    machine) at each flush until one would pass the limit (the second, or a later one). The case is listed with ``complete: false`` as an
    interrupted one; its rows, which steps.csv cannot take either, stay in
    steps.partial.csv, as a killed run's do, and the report counts them as it does
    there."""
    import datetime
    import resource

    from ipc_bench.analysis.results import load

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, 256 * 1024))

    run = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "bench.py", "--scenario", "decode-steady", "--num-running", "16",
         "--steps", "100000", "--model", "fixed-step", "--step-time-ms", "1", "--policies",
         "send", "--codecs", "msgpack", "--no-single-process", "--quiet", "--output",
         str(run)], cwd=REPO, capture_output=True, text=True, timeout=300, preexec_fn=limit)
    error = (f"cannot write results to {run}: File too large (the file-size limit, "
             "ulimit -f 256: 256 KiB a file)")
    summary, frames = load_run(run)
    assert all(p.stat().st_size <= 256 * 1024 for p in run.iterdir())
    case = "num_running=16/send/msgpack#0"
    [listed] = summary["cases"]
    kept, total = frames["steps.partial.csv"], listed["num_total_steps"]
    # steps.partial.csv takes the rows since its last flush where the limit lets it:
    # the one line counts the rows steps.csv could not take, and those it kept
    message = (f"{error}; rows not written: {total:,} of steps.csv ("
               + ("" if len(kept) == total else f"{len(kept):,} of them ")
               + "kept in steps.partial.csv)")
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        1, "", f"bench.py: error: {message}; partial results: {run}\n")
    assert (summary["status"], summary["problems"], summary["failed_case"],
            summary["running_case"]) == ("failed", [message], case, None)
    assert (listed["case_id"], listed["complete"], listed["error"], listed["steps_kept_in"],
            listed["rows_not_written"]) \
        == (case, False, error, "steps.partial.csv", {"steps.csv": total})
    assert listed["failed_step"] == listed["num_total_steps"]  # every step was measured
    assert len(kept) > 0 and set(kept["case_id"]) == {case}
    assert kept["seq"].tolist() == list(range(len(kept)))
    assert len(frames["steps.csv"]) == 0
    written = datetime.datetime.fromtimestamp(
        (run / "steps.partial.csv").stat().st_mtime, datetime.timezone.utc)
    detail = (f"{message}; case {case} was running, steps.partial.csv holds {len(kept):,} "
              f"rows of it (its modification time {written:%Y-%m-%d %H:%M:%S} UTC)")
    loaded = load(run)
    assert (loaded.status_detail, loaded.warnings) == (
        {run.name: detail}, {run.name: [
            f"{run}: this run failed: {detail}; 1 case loaded, not finished "
            "(Results.unfinished names it; Results.finished leaves it out)"]})
    rep = tmp_path / "rep"  # bench.py report in this process: its report.md is checked
    assert bench_in_process(["report", run, "--output", rep]).returncode == 0
    md = (rep / "report.md").read_text().splitlines()
    assert (f"> **Note:** This run failed: {detail}. No case finished, so it has no figures, "
            "findings or case tables; the rows the unfinished case left in "
            "steps.partial.csv are not used for any figure.") in md
    assert (f"> **Note:** Left out of every finding, table and figure, as it did not "
            f"finish: `{case}` ({error}).") in md


def _messages_fill_the_disk(monkeypatch, summary_fits_after_cleanup: bool):
    """The disk fills while a capture file is written (half of it lands, then ENOSPC);
    while that partial file is on disk, or always when ``summary_fits_after_cleanup``
    is false, every write of summary.json fails with ENOSPC too."""
    from ipc_bench.analysis import capture
    from ipc_bench.harness import run_folder

    def write_file(path, data):
        Path(path).write_bytes(data[:len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    real = run_folder.write_fd
    full = [False]

    def write_fd(fd, data, path):
        path = Path(path)
        if path.name.startswith("summary.json"):
            partial = list((path.parent / "messages").glob("*.tmp"))
            if partial or (full[0] and not summary_fits_after_cleanup):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(fd, data, path)

    def marked(path, data):
        full[0] = True
        write_file(path, data)

    monkeypatch.setattr(capture, "_write_file", marked)
    monkeypatch.setattr(run_folder, "write_fd", write_fd)


def test_a_disk_filled_by_the_captured_messages_leaves_a_failed_summary_with_the_problem(
        tmp_path, monkeypatch, capsys):
    _messages_fill_the_disk(monkeypatch, summary_fits_after_cleanup=True)
    run = tmp_path / "run"
    from ipc_bench import cli
    assert cli.main(_ONE_CASE + ["--output", str(run)]) == 1
    out, err = capsys.readouterr()
    message = ENOSPC_LINE.format(run=run / "messages")
    assert (out, err) == (_quiet_count(run),
                          f"bench.py: error: {message}; partial results: {run}\n")
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["status"], summary["problems"], summary["failed_case"]) == (
        "failed", [message], "num_running=2/send/msgpack#0")
    assert not any(p.name.endswith(".tmp") for p in run.rglob("*"))


def test_a_summary_that_cannot_be_updated_either_is_said_in_the_one_line(
        tmp_path, monkeypatch, capsys):
    _messages_fill_the_disk(monkeypatch, summary_fits_after_cleanup=False)
    run = tmp_path / "run"
    from ipc_bench import cli
    assert cli.main(_ONE_CASE + ["--output", str(run)]) == 1
    out, err = capsys.readouterr()
    assert (out, err) == (_quiet_count(run), (
        f"bench.py: error: {ENOSPC_LINE.format(run=run / 'messages')} (summary.json could "
        "not be updated either: No space left on device; it still says the run is "
        "incomplete and lists 1 case, whose results are kept: num_running=2/send/msgpack#0)"
        "\n"))
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["status"], summary["problems"]) == ("incomplete", [])
    # the last summary written lists the case, complete: the count line counts its warnings
    assert [c["complete"] for c in summary["cases"]] == [True]


# ---------------------------------------------------------------------------- a removed folder


def _remove_at_case(monkeypatch, run: Path, when: str, sig: int = 0) -> None:
    """Remove the run folder (``summary.json`` alone when ``when`` ends ``-summary``;
    rename it to ``RUN_moved`` when it ends ``-moved``) when
    the first case starts (``start``: before its first step) or once it has run
    (``end``: before it is written); ``sig``: then send this process that signal."""
    import shutil

    from ipc_bench.cli import execute

    real, calls = execute.run_case, []

    def remove():
        if when.endswith("-summary"):
            (run / "summary.json").unlink()
        elif when.endswith("-moved"):
            run.rename(run.with_name(run.name + "_moved"))
        else:
            shutil.rmtree(run)
        if sig:
            os.kill(os.getpid(), sig)

    def run_case(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1 and when.startswith("start"):
            remove()
        out = real(*args, **kwargs)
        if len(calls) == 1 and when.startswith("end"):
            remove()
        return out

    monkeypatch.setattr(execute, "run_case", run_case)


@pytest.mark.parametrize("when", ["start", "end"])
def test_a_run_folder_removed_mid_run_is_one_line_and_claims_no_file(
        when, tmp_path, monkeypatch, capsys):
    """The folder is removed while a case runs (its rows cannot be flushed) or after it
    ran (it cannot be written): one line naming the folder and the OS error, saying
    that it is no longer there (moved or removed), exit 1; no line claims a file that
    is not there."""
    from ipc_bench import cli
    from ipc_bench.harness import recording

    monkeypatch.setattr(recording, "FLUSH_INTERVAL_S", 0.0)  # flush after every step
    run = tmp_path / "run"
    _remove_at_case(monkeypatch, run, when)
    assert cli.main(_TINY + ["--output", str(run)]) == 1
    assert capsys.readouterr() == ("", (
        f"bench.py: error: cannot write results to {run}: No such file or directory "
        f"({run} no longer exists: it was moved or removed; what was written "
        "before is wherever it went)\n"))
    assert not run.exists()


def test_a_run_folder_moved_mid_run_is_one_line_that_says_it_may_have_moved(
        tmp_path, monkeypatch, capsys):
    """The folder is renamed while a case runs: the line does not say that nothing was
    kept, since the folder, where it went, holds what was written before."""
    from ipc_bench import cli

    run = tmp_path / "run"
    _remove_at_case(monkeypatch, run, "end-moved")
    assert cli.main(_TINY + ["--output", str(run)]) == 1
    assert capsys.readouterr() == ("", (
        f"bench.py: error: cannot write results to {run}: No such file or directory "
        f"({run} no longer exists: it was moved or removed; what was written before is "
        "wherever it went)\n"))
    assert not run.exists()
    moved = json.loads((tmp_path / "run_moved" / "summary.json").read_text())
    assert (moved["status"], moved["cases"]) == ("incomplete", [])


def test_a_removed_summary_that_cannot_be_written_again_is_said_so(
        tmp_path, monkeypatch, capsys):
    """summary.json removed while the case runs, and the disk full when the case is
    written: the line says the folder has no summary.json, not that it is stale."""
    from ipc_bench import cli

    run = tmp_path / "run"
    _remove_at_case(monkeypatch, run, "end-summary")
    _no_space(monkeypatch, "summary.json.*.tmp", after=2)  # the claim's and the case's start
    assert cli.main(_ONE_CASE + ["--output", str(run)]) == 1
    assert capsys.readouterr() == ("", (
        f"bench.py: error: {ENOSPC_LINE.format(run=run)} (summary.json could not be "
        "written either: No space left on device; the folder has no summary.json)\n"))
    assert not (run / "summary.json").exists()
    assert not any(p.name.endswith(".tmp") for p in run.iterdir())


@pytest.mark.parametrize("when", ["start", "end"])
def test_an_interrupt_after_the_folder_was_removed_points_at_no_results(
        when, tmp_path, monkeypatch, capsys, handlers_restored):
    from ipc_bench import cli

    run = tmp_path / "run"
    _remove_at_case(monkeypatch, run, when, signal.SIGTERM)
    assert cli.main(_TINY + ["--output", str(run)]) == 143
    where = ("before its first step" if when == "start" else
             "at step 52 (steps.csv seq: warm-up and uncounted steps included)")
    assert capsys.readouterr() == ("", (
        f"bench.py: error: cannot write results to {run}: No such file or directory "
        f"({run} no longer exists: it was moved or removed; what was written "
        "before is wherever it went)\n"
        f"bench.py: num_running=2/send/msgpack#0: interrupted by SIGTERM {where} "
        "(exit 143)\n"))
    assert not run.exists()


def test_an_interrupted_case_numbers_its_step_as_steps_csv_seq(
        tmp_path, monkeypatch, capsys, handlers_restored):
    """SIGTERM once the first case's 2 warm-up and 50 counted steps are done: the line
    says step 52 and that the number counts the warm-up, as steps.csv's seq (0 .. 51)
    and the summary's failed_step do."""
    from ipc_bench import cli
    from ipc_bench.cli import execute

    real = execute.run_case

    def run_case(*args, **kwargs):
        out = real(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)
        return out

    monkeypatch.setattr(execute, "run_case", run_case)
    run = tmp_path / "run"
    assert cli.main(_TINY + ["--output", str(run)]) == 143
    assert capsys.readouterr() == ("", (
        "bench.py: num_running=2/send/msgpack#0: interrupted by SIGTERM at step 52 (steps.csv "
        f"seq: warm-up and uncounted steps included); partial results: {run} (exit 143)\n"))
    summary, frames = load_run(run)
    assert [c["failed_step"] for c in summary["cases"]] == [52]
    assert frames["steps.csv"]["seq"].max() == 51


def _interrupt_at_first_case_start(monkeypatch) -> None:
    """SIGINT this process as the first case starts, before its first step."""
    from ipc_bench.cli import execute

    real, calls = execute.run_case, []

    def run_case(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            os.kill(os.getpid(), signal.SIGINT)
        return real(*args, **kwargs)

    monkeypatch.setattr(execute, "run_case", run_case)


def test_an_interrupt_before_anything_was_measured_names_the_folder_it_leaves(
        tmp_path, monkeypatch, capsys, handlers_restored):
    """Nothing measured (no case finished, no step recorded): no partial-results
    pointer, but the folder that stays (a rerun into it is refused) is named as
    holding nothing measured; the case's line is the only one."""
    from ipc_bench import cli

    run = tmp_path / "run"
    _interrupt_at_first_case_start(monkeypatch)
    assert cli.main(_TINY + ["--output", str(run)]) == 130
    assert capsys.readouterr() == ("", "bench.py: num_running=2/send/msgpack#0: "
                                   "interrupted by SIGINT before its first step; run folder "
                                   f"(nothing measured): {run} (exit 130)\n")
    summary, frames = load_run(run)
    assert summary["status"] == "incomplete"
    assert [len(f) for f in frames.values()] == [0, 0, 0, 0]  # floor, itl, requests, steps


@pytest.mark.parametrize("first,removed", [(True, False), (False, False), (False, True)])
def test_a_failed_case_points_at_partial_results_only_where_they_are(
        first, removed, tmp_path, monkeypatch, capsys):
    """One line; it names the folder as an interrupt's does: ``partial results`` when
    it holds a case that finished, ``run folder (nothing measured)`` when the case
    failed before its first step and none finished before it (the folder stays: a
    rerun into it is refused), nothing once the folder is gone."""
    import shutil

    from ipc_bench import cli
    from ipc_bench.cli import execute

    run = tmp_path / "run"
    real_run_case = execute.run_case
    started = []

    def run_case(case, **kwargs):
        started.append(case.case_id)
        if len(started) == 1 and not first:  # the first case finishes
            return real_run_case(case, **kwargs)
        if removed:
            shutil.rmtree(run)
        raise CaseError("runner process 4242 exited with code 3 at step 0", step=0)

    monkeypatch.setattr(execute, "run_case", run_case)
    assert cli.main(_TINY + ["--output", str(run)]) == 1
    lost = (f"bench.py: error: cannot write results to {run}: No such file or directory "
            f"({run} no longer exists: it was moved or removed; what was written "
        "before is wherever it went)\n")
    failed = started[-1]
    assert len(started) == (1 if first else 2)
    assert capsys.readouterr() == (_quiet_count(run), (
        (lost if removed else "")
        + f"bench.py: error: {failed}: runner process 4242 exited with code 3 at step 0"
        + ("" if removed else f"; run folder (nothing measured): {run}" if first
           else f"; partial results: {run}") + "\n"))
    assert run.exists() is not removed
    if first:  # the folder named stays, and a rerun into it is refused
        assert cli.main(_TINY + ["--output", str(run)]) == 2
        assert capsys.readouterr().err == (
            f"bench.py: error: output folder {run} exists and is not empty: it holds a run "
            "(summary.json, status failed); give another --output, or remove that run "
            "first\n")


def test_a_signal_in_the_floor_keeps_the_case_as_finished_without_its_floor(
        tmp_path, monkeypatch, capsys, handlers_restored):
    """SIGINT as the floor's replay starts (after every counted step): the case is
    written as finished with its counted figures and no floor, the run is incomplete,
    the line names the floor and the case's last step, and the report shows the case."""
    from ipc_bench import cli

    replay = supervisor.replay_floor

    def signal_then_replay(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)  # raised by the handler inside the replay
        return replay(*args, **kwargs)

    monkeypatch.setattr(supervisor, "replay_floor", signal_then_replay)
    run_dir = tmp_path / "run"
    assert cli.main(_TINY + ["--output", str(run_dir)]) == 130
    err = capsys.readouterr().err.splitlines()
    summary, frames = load_run(run_dir)
    case = summary["cases"][0]
    last = case["num_total_steps"] - 1
    assert err[-1] == ("bench.py: num_running=2/send/msgpack#0: interrupted by SIGINT while "
                       f"replaying the floor after step {last} (steps.csv seq: warm-up and "
                       f"uncounted steps included); partial results: {run_dir} (exit 130)")
    assert not any("interrupted by" in line for line in err[:-1]), err
    line = f"interrupted by SIGINT while replaying the floor after step {last}"
    assert (summary["status"], summary["problems"]) == (
        "incomplete", [f"num_running=2/send/msgpack#0: {line}"])
    assert [c["case_id"] for c in summary["cases"]] == ["num_running=2/send/msgpack#0"]
    assert case["complete"] is True and case["error"] is None and "failed_step" not in case
    assert case["num_steps"] == 50 and case["output_tokens_per_s"] > 0
    assert case.get("floor_output_tokens_per_s") is None and case["floor_interrupted"] is True
    assert any(w.startswith(f"{line}: the floor's figures") for w in case["warnings"])
    assert list(frames["steps.csv"]["seq"]) == list(range(last + 1))
    assert len(frames["floor.csv"]) == 0
    _assert_reported_without_floor(run_dir, case, tmp_path)


@pytest.mark.parametrize("floor", [True, False])
def test_a_signal_after_the_floor_names_the_wait_for_the_runner_report(
        tmp_path, monkeypatch, capsys, handlers_restored, floor):
    """SIGINT once the floor has been replayed (or, with ``--no-floor``, after the last
    step), while the scheduler waits for the runner's report: the line names that wait
    (it said ``at step N + 1``, a step that never ran, and the case was lost); the case
    is kept as finished with its counted figures and its floor, without the runner's
    per-step columns."""
    from ipc_bench import cli
    from ipc_bench.wire.channel import SchedulerChannel

    recv_control = SchedulerChannel.recv_control

    def signal_at_the_report(self, label, *args, **kwargs):
        if label == "report from the runner":
            os.kill(os.getpid(), signal.SIGINT)  # raised by the handler in the wait
        return recv_control(self, label, *args, **kwargs)

    monkeypatch.setattr(SchedulerChannel, "recv_control", signal_at_the_report)
    run_dir = tmp_path / "run"
    args = _TINY + ["--output", str(run_dir)] + ([] if floor else ["--no-floor"])
    assert cli.main(args) == 130
    err = capsys.readouterr().err.splitlines()
    summary, frames = load_run(run_dir)
    case = summary["cases"][0]
    last = case["num_total_steps"] - 1
    line = ("interrupted by SIGINT while waiting for the runner's report after "
            f"{'the floor, after ' if floor else ''}step {last}")
    assert err[-1] == (f"bench.py: num_running=2/send/msgpack#0: {line} (steps.csv seq: "
                       "warm-up and uncounted steps included); partial results: "
                       f"{run_dir} (exit 130)")
    assert not any("interrupted by" in e for e in err[:-1]), err
    assert (summary["status"], summary["problems"]) == (
        "incomplete", [f"num_running=2/send/msgpack#0: {line}"])
    assert [c["case_id"] for c in summary["cases"]] == ["num_running=2/send/msgpack#0"]
    assert case["complete"] is True and case["error"] is None and "failed_step" not in case
    assert case["report_interrupted"] is True and "floor_interrupted" not in case
    assert case["num_steps"] == 50 and case["output_tokens_per_s"] > 0
    assert (case.get("floor_output_tokens_per_s") is not None) is floor
    assert len(frames["floor.csv"]) == (50 if floor else 0)
    assert f"{line}: the runner's per-step columns (its report) are absent" in case["warnings"]
    assert list(frames["steps.csv"]["seq"]) == list(range(last + 1))


@pytest.mark.parametrize("floor", [True, False])
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSTOP], ids=["killed", "stopped"])
def test_a_runner_lost_while_its_report_is_awaited_keeps_the_case_and_its_floor(
        tmp_path, monkeypatch, capsys, floor, sig):
    """The runner killed (or stopped) as the scheduler tells it to stop and report,
    after the floor (or after the last step with ``--no-floor``): every counted step and
    the floor were measured, so the case is kept as finished, floor and all, without
    the runner's per-step columns, ``report_failed`` holding the line; the run is
    failed, exit 1, one line (the case was written incomplete, its floor lost)."""
    from ipc_bench import cli
    from ipc_bench.wire.channel import SchedulerChannel

    send_marker = SchedulerChannel.send_marker
    pids = []
    phases = supervisor.run_phases

    def phases_then_lose(spec, exchange, result, *args, **kwargs):
        def lose(self, what="a phase marker"):
            if what == "the stop marker":  # before Stop: no report can have left
                pids.append(result.runner_pid)
                os.kill(result.runner_pid, sig)
            return send_marker(self, what)
        monkeypatch.setattr(SchedulerChannel, "send_marker", lose)
        return phases(spec, exchange, result, *args, **kwargs)

    monkeypatch.setattr(supervisor, "run_phases", phases_then_lose)
    run_dir = tmp_path / "run"
    # 4 s: a stall of the healthy run before the stop (2 s was the whole margin)
    args = _TINY + ["--peer-timeout", "4", "--output", str(run_dir)] + (
        [] if floor else ["--no-floor"])
    assert cli.main(args) == 1
    err = capsys.readouterr().err.splitlines()
    case_id = "num_running=2/send/msgpack#0"
    assert len(err) == 1 and err[0].startswith(f"bench.py: error: {case_id}: runner process "
                                               f"{pids[0]} "), err
    line = err[0][len(f"bench.py: error: {case_id}: "):-len(f"; partial results: {run_dir}")]
    if sig == signal.SIGKILL:  # noticed on the marker, on Stop or in the wait
        assert line.startswith(f"runner process {pids[0]} was killed by SIGKILL, noticed "
                               "while "), line
    else:
        assert line == (f"runner process {pids[0]} stopped answering: no report from the "
                        "runner within 4 s (state T (stopped); killed)"), line
    assert not alive(pids[0])
    summary, frames = load_run(run_dir)
    assert (summary["status"], summary["problems"], summary["failed_case"]) == (
        "failed", [f"{case_id}: {line}"], case_id)
    case, = summary["cases"]
    last = case["num_total_steps"] - 1
    assert case["complete"] is True and case["error"] is None and "failed_step" not in case
    assert case["report_failed"] == line and "floor_failed" not in case
    assert case["num_steps"] == 50 and case["output_tokens_per_s"] > 0
    assert (case.get("floor_output_tokens_per_s") is not None) is floor
    assert len(frames["floor.csv"]) == (50 if floor else 0)
    after = "after the floor, after" if floor else "after"
    assert (f"the runner failed while its report was awaited {after} step {last} "
            f"(steps.csv seq: warm-up and uncounted steps included): {line}: the "
            "runner's per-step columns (its report) are absent") in case["warnings"]
    steps = frames["steps.csv"]
    assert list(steps["seq"]) == list(range(last + 1))
    assert steps["runner_update_ns"].isna().all()


def test_a_runner_that_dies_in_the_floor_keeps_the_case_as_finished_without_its_floor(
        tmp_path, monkeypatch, capsys):
    """The runner exits after it read the floor's frame 3 (after every counted step):
    the case is written as finished with its counted figures, no floor and no runner
    columns, ``floor_failed`` holding the line; the run is failed, exit 1, one line;
    the report shows the case with ``-`` for the floor's figures."""
    from ipc_bench import cli
    from ipc_bench.cli import execute

    fake = _fake(monkeypatch, "exit-in-floor", step=3)
    pids = []

    def run_fake(case, **kwargs):
        try:
            return supervisor.run_case(case, runner_command=fake, **kwargs)
        finally:
            pids.append(kwargs["result"].runner_pid)

    monkeypatch.setattr(execute, "run_case", run_fake)
    run_dir = tmp_path / "run"
    assert cli.main(_TINY + ["--output", str(run_dir)]) == 1
    err = capsys.readouterr().err.splitlines()
    case_id = "num_running=2/send/msgpack#0"
    line = (f"runner process {pids[0]} exited with code 7 (fake runner: exiting at floor "
            "frame 3), noticed while waiting for floor reply 3")
    assert err == [f"bench.py: error: {case_id}: {line}; partial results: {run_dir}"], err
    assert not alive(pids[0])
    summary, frames = load_run(run_dir)
    assert (summary["status"], summary["problems"], summary["failed_case"]) == (
        "failed", [f"{case_id}: {line}"], case_id)
    assert [c["case_id"] for c in summary["cases"]] == [case_id]  # cached never ran
    case = summary["cases"][0]
    last = case["num_total_steps"] - 1
    assert case["complete"] is True and case["error"] is None and "failed_step" not in case
    assert case["floor_failed"] == line and "floor_interrupted" not in case
    assert case["num_steps"] == 50 and case["output_tokens_per_s"] > 0
    assert case.get("floor_output_tokens_per_s") is None
    assert (f"the runner failed while replaying the floor after step {last} (steps.csv seq: "
            f"warm-up and uncounted steps included): {line}: the floor's figures (floor "
            "tok/s, x floor) are absent, and so are the runner's per-step columns (its "
            "report comes after the floor)") in case["warnings"]
    steps = frames["steps.csv"]
    assert list(steps["seq"]) == list(range(last + 1))
    assert steps["runner_update_ns"].isna().all()  # the runner's report never came
    assert len(frames["floor.csv"]) == 0
    _assert_reported_without_floor(run_dir, case, tmp_path)


def test_a_runner_stopped_in_the_floor_keeps_the_case_as_finished_without_its_floor(
        tmp_path, monkeypatch, capsys):
    """SIGSTOP to the runner as the floor's replay starts: it stops answering, the
    case is written as finished without its floor (``floor_failed``: the line), exit 1."""
    from ipc_bench import cli

    replay = supervisor.replay_floor
    pids = []

    def stop_then_replay(exchange, *args, **kwargs):
        pids.append(exchange.result.runner_pid)
        os.kill(pids[-1], signal.SIGSTOP)
        return replay(exchange, *args, **kwargs)

    monkeypatch.setattr(supervisor, "replay_floor", stop_then_replay)
    run_dir = tmp_path / "run"
    # 4 s: a stall of the healthy run before the floor (2 s was the whole margin)
    assert cli.main(_TINY + ["--peer-timeout", "4", "--output", str(run_dir)]) == 1
    case_id = "num_running=2/send/msgpack#0"
    line = (f"runner process {pids[0]} stopped answering: no floor-ready message from the "
            "runner within 4 s (state T (stopped); killed)")
    assert capsys.readouterr().err.splitlines() == [
        f"bench.py: error: {case_id}: {line}; partial results: {run_dir}"]
    assert not alive(pids[0])
    summary, frames = load_run(run_dir)
    assert (summary["status"], summary["problems"]) == ("failed", [f"{case_id}: {line}"])
    case, = summary["cases"]
    assert case["complete"] is True and case["floor_failed"] == line
    assert case["num_steps"] == 50 and case.get("floor_output_tokens_per_s") is None
    assert list(frames["steps.csv"]["seq"]) == list(range(case["num_total_steps"]))
    assert len(frames["floor.csv"]) == 0


def _assert_reported_without_floor(run_dir, case: dict, tmp_path) -> None:
    """``bench.py report`` of ``run_dir`` exits 0 and shows ``case`` (a summary's case
    of 50 counted steps, send/msgpack over ipc) as finished: its tok/s, ``-`` for
    floor tok/s and x floor."""
    from ipc_bench.cli import report as report_cli

    assert report_cli.main([str(run_dir), "--output", str(tmp_path / "rep")]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "No case finished" not in md, md
    rate = f"{case['output_tokens_per_s']:,.0f}"
    # on exactly 2 cores a one-runner case's timings are shown marked (analysis.cores):
    # the expectation comes from this process's affinity, which the run inherits
    cores = len(os.sched_getaffinity(0))
    assert case["runner_cores"] == cores
    mark = SHARED_MARK if cores == 2 else ""
    assert re.search(rf"^\| 0 \| send \| msgpack \| ipc{mark} \| 50 \| {rate} \| - \| - \|",
                     md, re.MULTILINE), md


@pytest.mark.parametrize("first", [True, False])
def test_an_internal_error_names_the_run_folder(tmp_path, monkeypatch, capsys,
                                                handlers_restored, first):
    """A bug in a case (an exception the harness does not know) prints its traceback,
    then one line naming the case, the exception and the folder, as a failed case's
    line does: ``partial results`` once a case finished before it, ``nothing
    measured`` when it was the first; exit 1, the run ``failed``."""
    from ipc_bench import cli
    from ipc_bench.cli import execute

    real_run_case, started = execute.run_case, []

    def run_case(case, **kwargs):
        started.append(case.case_id)
        if len(started) == 1 and not first:
            return real_run_case(case, **kwargs)
        raise ZeroDivisionError("injected")

    monkeypatch.setattr(execute, "run_case", run_case)
    run = tmp_path / "run"
    assert cli.main(_TINY + ["--output", str(run)]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last):" in err
    kept = f"run folder (nothing measured): {run}" if first else f"partial results: {run}"
    assert err.splitlines()[-1] == (f"bench.py: internal error in {started[-1]}: "
                                    f"ZeroDivisionError: injected; {kept}")
    summary, _ = load_run(run)
    assert summary["status"] == "failed"
    assert summary["failed_case"] == started[-1]



def test_a_write_failure_counts_streamed_rows_as_measured_steps():
    """The line of a write failure points at partial results where the case that was
    running measured a step, in memory or streamed to its files (a soak case keeps no
    rows in memory), else at a folder with nothing measured."""
    from types import SimpleNamespace

    from ipc_bench.cli.execute import _steps_measured

    def case(rows=(), streamed=None):
        stats = None if streamed is None else SimpleNamespace(num_total_steps=streamed)
        return SimpleNamespace(sched_rows=list(rows), stream_stats=stats)

    assert [_steps_measured(r) for r in (None, case(), case(streamed=0), case([(0,)]),
                                         case(streamed=3))] == [False, False, False, True,
                                                                True]
