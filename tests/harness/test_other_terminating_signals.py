"""SIGUSR1, SIGUSR2, SIGALRM and the other signals whose default action ends a process
at once (``signals.WHERE_DEFAULT``) stop a run as SIGTERM does: the case stops, what
was measured is written, the runner is reaped, one line names the signal, exit 128 +
its number. They ended it silently before (exit 138 / 140 / 142, the running case lost
as under SIGKILL)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys

import pytest

from fault_helpers import (REPO, alive, bench, bench_started, children, load_run,
                           runners_of, wait_dead, wait_for)
#: ``signals.WHERE_DEFAULT``, spelt out (the test runs on code without it too).
WHERE_DEFAULT = (signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM, signal.SIGVTALRM,
                 signal.SIGPROF, signal.SIGXCPU)


def _defaults() -> None:
    """A child's ``preexec_fn``: these signals at their default action, as a terminal
    starts a command, whatever this process left them at (an in-process test's
    interrupt leaves them ignored, and an ignored one stays ignored)."""
    for sig in WHERE_DEFAULT:
        signal.signal(sig, signal.SIG_DFL)


def _start(run_dir):
    proc = bench(["--scenario", "decode-steady", "--num-running", "16", "--steps",
                  "100000", "--policies", "send", "--codecs", "msgpack", "--quiet",
                  "--output", str(run_dir)], preexec_fn=_defaults)
    wait_for(lambda: (run_dir / "steps.partial.csv").exists(), what="first flush", proc=proc)
    runner = wait_for(lambda: children(proc.pid), what="runner process", proc=proc)[0]
    return proc, runner


@pytest.mark.parametrize("sig", [signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM])
def test_a_terminating_signal_mid_case_writes_what_was_measured(tmp_path, sig):
    run_dir = tmp_path / "run"
    proc, runner = _start(run_dir)
    proc.send_signal(sig)
    wait_dead(runner, timeout_s=30)
    _, err = proc.communicate(timeout=60)
    name, code = signal.Signals(sig).name, 128 + sig
    assert proc.returncode == code, err
    lines = err.strip().splitlines()
    m = re.fullmatch(rf"bench\.py: num_running=16/send/msgpack#0: interrupted by {name} at "
                     rf"step (\d+) \(steps\.csv seq: warm-up and uncounted steps included\); "
                     rf"partial results: {re.escape(str(run_dir))} \(exit {code}\)", lines[-1])
    assert m, lines
    assert not any("interrupted by" in line for line in lines[:-1]), lines
    assert "Traceback" not in err
    assert children(proc.pid) == [] and runners_of(proc.pid) == [] and not alive(runner)
    summary, frames = load_run(run_dir)
    assert (summary["status"], summary["problems"], summary["failed_case"]) == (
        "incomplete", [f"num_running=16/send/msgpack#0: interrupted by {name}"],
        "num_running=16/send/msgpack#0")
    case = summary["cases"][0]
    assert (case["complete"], case["error"]) == (False, f"interrupted by {name}")
    assert case["failed_step"] == int(m.group(1)) == len(frames["steps.csv"]) > 0


def test_a_terminating_signal_at_the_start_waits_for_the_handlers(tmp_path):
    """Blocked in ``bench.py``'s first statement with SIGINT / SIGTERM / SIGHUP: one
    that comes while its modules import ends it with its line, not silently."""
    run_dir = tmp_path / "run"
    proc = bench(["--scenario", "decode-steady", "--num-running", "4", "--steps", "100000",
                  "--policies", "send", "--codecs", "msgpack", "--quiet", "--output",
                  str(run_dir)], preexec_fn=_defaults)
    wait_for(lambda: bench_started(proc.pid) or proc.poll() is not None,
             what="bench.py's first statement")
    proc.send_signal(signal.SIGUSR1)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 138, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("bench.py: ") and \
        lines[0].endswith(" (exit 138)") and "interrupted by SIGUSR1" in lines[0], lines
    assert children(proc.pid) == []


PROBE = """
import signal, sys
from ipc_bench.harness import signals

def mine(signum, frame):
    print("mine", signal.Signals(signum).name)

signal.signal(signal.SIGALRM, mine)
old = signals.install()
signals.unblock()
print(sorted(signal.Signals(s).name for s in old))
signal.raise_signal(signal.SIGALRM)  # the caller's handler: not an interrupt
try:
    signal.raise_signal(signal.SIGUSR2)
except signals.Interrupted as exc:
    print("interrupted", exc.code, exc.signal_name)
signals.restore(old, ignore_after_signal=False)
print(signal.getsignal(signal.SIGALRM) is mine, signal.getsignal(signal.SIGUSR2) is signal.SIG_DFL)
"""


def test_a_handler_the_caller_put_in_is_left_alone():
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, capture_output=True,
                          text=True, timeout=60, preexec_fn=_defaults)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        "['SIGHUP', 'SIGINT', 'SIGPROF', 'SIGTERM', 'SIGUSR1', 'SIGUSR2', 'SIGVTALRM', "
        "'SIGXCPU']",
        "mine SIGALRM",
        "interrupted 140 SIGUSR2",
        "True True"]


INPROCESS = """
import signal, sys, time
from ipc_bench import cli

def probe(argv):
    signal.raise_signal(signal.SIGUSR1)
    time.sleep(2.0)
    return 0

cli.COMMANDS["probe"] = lambda: probe
signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGPROF,))  # the caller's: kept blocked

def state():
    names = {signal.SIG_DFL: "SIG_DFL", signal.SIG_IGN: "SIG_IGN"}
    others = (signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM, signal.SIGVTALRM,
              signal.SIGPROF, signal.SIGXCPU)
    handlers = sorted({names.get(signal.getsignal(s), "other") for s in others})
    mask = sorted(signal.Signals(s).name for s in signal.pthread_sigmask(signal.SIG_BLOCK, ()))
    return f"{handlers} {mask}"

print(cli.main(["probe"]), state(), flush=True)
print(cli.main(["probe"], exiting=True), state(), flush=True)
"""


def test_cli_main_in_process_gives_these_signals_back():
    """Called in process, ``cli.main`` puts their handlers and the caller's mask back;
    ``exiting`` (``bench.py``) leaves them ignored after an interrupt, as SIGINT's."""
    done = subprocess.run([sys.executable, "-c", INPROCESS], cwd=REPO, capture_output=True,
                          text=True, timeout=60, preexec_fn=_defaults)
    assert (done.returncode, done.stderr.splitlines()) == (
        0, ["bench.py probe: interrupted by SIGUSR1 (exit 138)"] * 2)
    assert done.stdout.splitlines() == ["138 ['SIG_DFL'] ['SIGPROF']",
                                        "138 ['SIG_IGN'] ['SIGPROF']"]
