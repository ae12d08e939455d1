"""``cli.main`` called in process (a notebook, a script): the caller's signal handlers,
signal mask, ``sys.stdout`` / ``sys.stderr`` and ``sys.unraisablehook`` are back after
every call, however it ended (interrupted, interrupted at its very start, failed to
start, refused), so that each call, and the caller's own Ctrl-C afterwards, can be
interrupted; called from another thread it refuses in one line. ``bench.py``
(``exiting=True``) keeps the signals ignored after an interrupt, through its exit.

Each case runs in a process of its own (the signals sent there never reach pytest's),
its command a stand-in (``probe``) that signals itself or returns at once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: What every case's process runs first: the ``probe`` command (its argument: ``int`` /
#: ``term`` signals it, ``timer`` has another thread send SIGINT, ``none`` returns 0)
#: and ``state()``, what the caller finds after a call.
PRELUDE = """
import os, signal, sys, threading, time
from ipc_bench import cli
from ipc_bench.harness import signals

def probe(argv):
    if argv[0] == "timer":
        threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT)).start()
    elif argv[0] != "none":
        signal.raise_signal(signal.SIGINT if argv[0] == "int" else signal.SIGTERM)
    if argv[0] != "none":
        time.sleep(2.0)  # not interrupted: returns 0 late
    return 0

cli.COMMANDS["probe"] = lambda: probe

def mine(signum, frame):
    pass

def name(handler):
    known = {signal.default_int_handler: "default_int_handler", signal.SIG_DFL: "SIG_DFL",
             signal.SIG_IGN: "SIG_IGN"}
    return known.get(handler) or handler.__name__

def state():
    # SIGINT, SIGTERM, SIGHUP; the others of HANDLED (signals.WHERE_DEFAULT) are put
    # back alike (tests/harness/test_other_terminating_signals.py)
    handlers = [name(signal.getsignal(s)) for s in signals.HANDLED[:3]]
    mask = sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, ())
                  if s not in signals.WHERE_DEFAULT)
    return (f"handlers {handlers} mask {mask} streams {type(sys.stdout).__name__} "
            f"{type(sys.stderr).__name__} hook {sys.unraisablehook is sys.__unraisablehook__}")

def call(argv, **kw):
    try:
        return cli.main(argv, **kw)
    except BaseException as exc:
        return f"raised {type(exc).__name__}"
"""

#: The state of a caller that set its own SIGTERM handler (``mine``), as it was before.
CALLERS = ("handlers ['default_int_handler', 'mine', 'SIG_DFL'] mask [] "
           "streams TextIOWrapper TextIOWrapper hook True")


def _run(script: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", PRELUDE + script], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_every_call_is_interruptible_and_gives_the_callers_handlers_back():
    """After a call interrupted by SIGINT or SIGTERM the handlers are the caller's, not
    ``SIG_IGN``: the next call is interrupted as the first was, and the caller's own
    Ctrl-C raises ``KeyboardInterrupt`` again."""
    proc = _run("""
signal.signal(signal.SIGTERM, mine)
print("before", state())
for what in ("int", "term", "timer", "int", "none"):
    print(what, call(["probe", what]), state())
try:
    signal.raise_signal(signal.SIGINT)
    print("no KeyboardInterrupt")
except KeyboardInterrupt:
    print("KeyboardInterrupt")
""")
    assert (proc.returncode, proc.stderr) == (0, (
        "bench.py probe: interrupted by SIGINT (exit 130)\n"
        "bench.py probe: interrupted by SIGTERM (exit 143)\n"
        "bench.py probe: interrupted by SIGINT (exit 130)\n"
        "bench.py probe: interrupted by SIGINT (exit 130)\n"))
    assert proc.stdout.splitlines() == [
        f"before {CALLERS}", f"int 130 {CALLERS}", f"term 143 {CALLERS}",
        f"timer 130 {CALLERS}", f"int 130 {CALLERS}", f"none 0 {CALLERS}",
        "KeyboardInterrupt"]


#: Has another thread (started before the call, so the signals reach it) send SIGINT
#: while ``signals.install`` imports pyzmq (``_zmq_socket_makers``), the first call's
#: slowest moment before the command runs, and wait for it to land.
SIGINT_IN_INSTALL = """
go, sent = threading.Event(), threading.Event()

def sender():
    go.wait(30)
    os.kill(os.getpid(), signal.SIGINT)
    sent.set()

threading.Thread(target=sender, daemon=True).start()
makers = signals._zmq_socket_makers

def signalled_makers():
    go.set()
    sent.wait(30)
    time.sleep(0.05)  # the handler runs in this thread here at the latest
    return makers()

signals._zmq_socket_makers = signalled_makers
"""


def test_a_sigint_while_the_first_call_starts_is_one_line_and_exit_130():
    """A SIGINT that another thread takes while the call installs its handlers (the
    kernel hands it to a thread that lets it through; the handler runs in the main
    thread all the same): one line and 130, the command not run, everything put back
    (it escaped as ``KeyboardInterrupt`` with the signals left blocked and the streams
    wrapped)."""
    proc = _run(SIGINT_IN_INSTALL + """
ran = []
cli.COMMANDS["probe"] = lambda: ran.append
print(call(["probe", "none"]), ran, state())
""")
    assert (proc.returncode, proc.stderr) == (
        0, "bench.py probe: interrupted by SIGINT (exit 130)\n")
    assert proc.stdout == ("130 [] handlers ['default_int_handler', 'SIG_DFL', 'SIG_DFL'] "
                           "mask [] streams TextIOWrapper TextIOWrapper hook True\n")


def test_a_keyboard_interrupt_before_the_handlers_are_in_is_one_line_and_exit_130():
    """The caller's own SIGINT handler raising ``KeyboardInterrupt`` as the call blocks
    the signals, before its handlers replace the caller's: counted as SIGINT."""
    proc = _run("""
signal.signal(signal.SIGTERM, mine)
block = signals.block
raised = []

def interrupted_block():
    mask = block()
    if not raised:
        raised.append(1)
        raise KeyboardInterrupt
    return mask

signals.block = interrupted_block
print(call(["probe", "none"]), state())
""")
    assert (proc.returncode, proc.stderr, proc.stdout) == (
        0, "bench.py probe: interrupted by SIGINT (exit 130)\n", f"130 {CALLERS}\n")


def test_a_start_that_fails_puts_everything_back():
    """pyzmq missing as the handlers are installed: the error is raised as it was (for
    ``bench.py``'s line), the caller's state as it was."""
    proc = _run("""
signal.signal(signal.SIGTERM, mine)

def no_zmq():
    raise ModuleNotFoundError("No module named 'zmq'", name="zmq")

signals._zmq_socket_makers = no_zmq
print(call(["probe", "none"]), state())
""")
    assert (proc.returncode, proc.stderr, proc.stdout) == (
        0, "", f"raised ModuleNotFoundError {CALLERS}\n")


def test_a_call_from_another_thread_is_refused_in_one_line():
    """Python sets signal handlers only in the main thread: exit 2 and one line, nothing
    changed (it raised ``ValueError`` and left ``sys.stdout`` wrapped)."""
    proc = _run("""
signal.signal(signal.SIGTERM, mine)
result = []
worker = threading.Thread(target=lambda: result.append(call(["--scenario", "decode-steady"])),
                          name="worker")
worker.start()
worker.join(60)
print(result, state())
""")
    assert (proc.returncode, proc.stdout) == (0, f"[2] {CALLERS}\n")
    assert proc.stderr == (
        "bench.py: error: cli.main must be called from the main thread, where Python lets "
        "it handle SIGINT / SIGTERM / SIGHUP (called from thread 'worker')\n")


def test_exiting_keeps_the_signals_ignored_after_an_interrupt():
    """``exiting=True`` (``bench.py``, whose first statement blocks the signals): a call
    that returned puts the handlers back, one interrupted leaves them ``SIG_IGN`` (a
    signal another thread takes during the exit changes nothing); the mask stays as
    the caller had it."""
    proc = _run("""
signal.pthread_sigmask(signal.SIG_BLOCK, signals.HANDLED)
print(call(["probe", "none"], exiting=True), state())
print(call(["probe", "int"], exiting=True), state())
""")
    blocked = "mask [1, 2, 15] streams TextIOWrapper TextIOWrapper hook True"
    assert (proc.returncode, proc.stderr) == (
        0, "bench.py probe: interrupted by SIGINT (exit 130)\n")
    assert proc.stdout.splitlines() == [
        f"0 handlers ['default_int_handler', 'SIG_DFL', 'SIG_DFL'] {blocked}",
        f"130 handlers ['SIG_IGN', 'SIG_IGN', 'SIG_IGN'] {blocked}"]


#: ``python bench.py probe int`` (the stand-in command added), then, as the process
#: exits, SIGTERM and SIGINT from a thread that lets them through.
BENCH_PY_EXIT = """
import atexit, runpy

def late_signals():
    def send():
        signal.pthread_sigmask(signal.SIG_UNBLOCK, signals.HANDLED)
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)
    thread = threading.Thread(target=send)
    thread.start()
    thread.join(30)
    time.sleep(0.1)
    print("at exit", state(), file=sys.stderr)

atexit.register(late_signals)
sys.argv = ["bench.py", "probe", "int"]
runpy.run_path("bench.py", run_name="__main__")
"""


def test_bench_py_s_exit_code_survives_signals_during_its_exit():
    proc = _run(BENCH_PY_EXIT)
    assert (proc.returncode, proc.stdout) == (130, "")
    assert proc.stderr == (
        "bench.py probe: interrupted by SIGINT (exit 130)\n"
        "at exit handlers ['SIG_IGN', 'SIG_IGN', 'SIG_IGN'] mask [1, 2, 15] "
        "streams TextIOWrapper TextIOWrapper hook True\n")
