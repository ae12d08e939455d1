"""``ipc_bench.harness.signals`` in this process: a signal that lands where an exception
would be dropped (a gc callback, a ``__del__``) is not lost but raised once the main
thread runs outside that code, also in a loop that enters no ``deferred()`` block, and one that arrives while
the signals are blocked acts when they are let through."""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from ipc_bench.harness import signals
from ipc_bench.harness.recording import GcCounter


@signals.unraisable
def _signal_in_gc_callback(phase: str, info: dict) -> None:
    if phase == "start":
        signal.raise_signal(signal.SIGINT)  # handled before raise_signal returns


def _run_outside_deferred(limit_s: float = 30.0) -> None:
    """The main thread in a loop that enters no ``deferred()`` block (a script
    measuring in process), until a kept signal is handed back to it or ``limit_s``."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        time.sleep(0.001)


def _hand_back_threads() -> list[str]:
    """Names of ``signals._nudge``'s threads still alive, after up to 30 s for them to
    end (a thread that keeps handing back never ends; one that ends may wait its turn
    for seconds on a loaded machine)."""
    deadline = time.monotonic() + 30.0
    while True:
        alive = [t.name for t in threading.enumerate() if t.name == "signal-hand-back"]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.01)


def test_a_signal_in_a_gc_callback_is_raised_once_outside_it(installed, capsys):
    """Not raised in the callback (the interpreter would drop it), but as soon as the
    main thread runs outside it, in a loop that enters no ``deferred()`` block."""
    gc.callbacks.append(_signal_in_gc_callback)
    with pytest.raises(signals.Interrupted) as err:
        try:
            gc.collect()  # the handler runs inside the callback and raises nothing there
        finally:
            gc.callbacks.remove(_signal_in_gc_callback)
        _run_outside_deferred()
    assert capsys.readouterr().err == ""  # no "Exception ignored in ..."
    assert err.value.code == 130
    assert _hand_back_threads() == []


class _HandBackAfterTheStart:
    """``signals``' ``time`` module, whose ``sleep`` (the hand-back thread's, between
    hand-backs) waits until ``block_started`` is set and counts its calls, ``sleeps``:
    the hand-backs come inside the block however late a loaded machine starts it."""

    def __init__(self):
        self.block_started = threading.Event()
        self.sleeps = 0

    def __getattr__(self, name):
        return getattr(time, name)

    def sleep(self, seconds: float) -> None:
        self.block_started.wait(60)
        self.sleeps += 1
        time.sleep(seconds)


def test_a_signal_kept_from_a_gc_callback_waits_for_a_deferred_block_to_end(
        installed, monkeypatch):
    """Handed back while a ``deferred()`` block runs, it waits for the block's end. The
    block waits for the third sleep between hand-backs: two hand-backs have come and
    gone in it (a fixed 1 s block after a 0.2 s wait assumed the block started within
    0.2 s of the collection)."""
    gated = _HandBackAfterTheStart()
    monkeypatch.setattr(signals, "time", gated)
    done = []
    gc.callbacks.append(_signal_in_gc_callback)
    with pytest.raises(signals.Interrupted) as err:
        try:
            gc.collect()
        finally:
            gc.callbacks.remove(_signal_in_gc_callback)
        with signals.deferred():
            gated.block_started.set()
            deadline = time.monotonic() + 60
            while gated.sleeps < 3 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert gated.sleeps >= 3
            done.append("block")
    assert (err.value.code, done) == (130, ["block"])
    assert _hand_back_threads() == []


def test_a_signal_during_an_import_is_raised_once_the_module_is_made(installed, tmp_path,
                                                                     monkeypatch):
    """A signal landing in a module's code while it is imported (a lazy import inside a
    measuring loop; a C extension's initialisation there may swallow an exception, as
    numpy.random's Cython modules do) waits for the import to end, then is raised."""
    (tmp_path / "signalled_module.py").write_text(
        "import signal\nsignal.raise_signal(signal.SIGINT)\nMADE = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with pytest.raises(signals.Interrupted) as err:
            import signalled_module  # noqa: F401
            _run_outside_deferred()
        assert sys.modules["signalled_module"].MADE is True  # the whole module was made
    finally:
        sys.modules.pop("signalled_module", None)
    assert err.value.code == 130
    assert _hand_back_threads() == []


def test_the_hand_back_and_the_unraisable_hook_are_marked_unraisable():
    # a hand-back landing while the hook starts the thread that hands it back must wait
    assert {signals._nudge.__code__, signals._unraisable_hook.__code__} <= signals._UNRAISABLE


def test_gc_counter_callback_is_marked_unraisable():
    assert GcCounter._on_gc.__code__ in signals._UNRAISABLE


def test_a_signal_in_a_del_is_not_dropped(installed, capsys):
    class Finalized:
        def __del__(self):
            signal.raise_signal(signal.SIGTERM)

    obj = Finalized()
    with pytest.raises(signals.Interrupted) as err:
        del obj
        _run_outside_deferred()
    assert capsys.readouterr().err == ""  # no "Exception ignored in ..."
    assert err.value.code == 143


def test_a_signal_while_pyzmq_makes_a_socket_leaves_it_for_destroy_to_close(installed):
    """SIGTERM between libzmq's making a socket and pyzmq's recording it in its context
    (here at the end of the socket class's ``__init__``, inside ``Context.socket``):
    raised there, the socket would be unknown to ``Context.destroy`` while the
    traceback keeps it alive, and the context's term would wait for it forever."""
    import zmq

    from ipc_bench.wire.transport import destroy_context

    class SignalledSocket(zmq.Socket):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            signal.raise_signal(signal.SIGTERM)  # handled before raise_signal returns

    ctx = zmq.Context()
    try:
        sock = None
        try:
            sock = ctx.socket(zmq.PAIR, socket_class=SignalledSocket)
        except signals.Interrupted:
            pass
        gc.collect()  # (if raised there: the traceback held the socket's last reference)
        assert sock is not None, ("Interrupted raised inside Context.socket, before the "
                                  "socket was recorded in its context")
        assert sock in ctx._sockets  # recorded: destroy will close it
        with pytest.raises(signals.Interrupted) as err:
            with signals.deferred():
                pass
        assert err.value.code == 143
    finally:
        destroy_context(ctx)  # returns: no socket left open
    assert ctx.closed


def test_a_signal_while_blocked_acts_when_unblocked():
    old = signals.install()  # blocks them
    try:
        signal.raise_signal(signal.SIGHUP)  # pending
        with pytest.raises(signals.Interrupted) as err:
            signals.unblock()
        assert err.value.code == 129
    finally:
        signals.restore(old)
        for s, h in old.items():
            signal.signal(s, h)


def test_a_signal_ignored_before_install_stays_ignored():
    """SIGHUP inherited as ignored (``nohup``) stays ignored: ``install`` neither
    routes nor returns it; SIGINT and SIGTERM are routed as ever."""
    before = {s: signal.getsignal(s) for s in signals.HANDLED}
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    old = signals.install()
    try:
        assert sorted(s for s in old if s not in signals.WHERE_DEFAULT) == [
            signal.SIGINT, signal.SIGTERM]
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        signal.raise_signal(signal.SIGHUP)  # pending while blocked, then ignored
        signals.unblock()
        signal.raise_signal(signal.SIGTERM)
    except signals.Interrupted as exc:
        assert exc.code == 143
    else:
        raise AssertionError("SIGTERM raised nothing")
    finally:
        signals.restore(old)
        for s, h in before.items():
            signal.signal(s, h)


class _Referent:
    pass


def test_a_signal_in_a_weakref_callback_is_not_dropped(installed, capsys):
    """A weakref callback run by a deallocation (as ``WeakKeyDictionary``'s are inside
    matplotlib): the handler cannot tell it from its frames, raises there, and the
    interpreter drops the exception; the unraisable hook keeps it pending, unprinted."""
    import weakref

    obj = _Referent()
    ref = weakref.ref(obj, lambda _: signal.raise_signal(signal.SIGINT))
    with pytest.raises(signals.Interrupted) as err:
        del obj  # the callback runs here
        _run_outside_deferred()
    assert ref() is None
    assert capsys.readouterr().err == ""  # no "Exception ignored in ..."
    assert err.value.code == 130
    assert _hand_back_threads() == []


def test_a_dropped_signal_ends_the_command_with_its_code(monkeypatch, capsys):
    """Through ``bench.py``'s entry point: a command during which a signal landed in a
    weakref callback, outside any ``deferred()`` block, and that then returned 0, ends
    with the signal's exit code and its one line, not 0 and a traceback."""
    import weakref

    from ipc_bench import cli

    def command(argv):
        obj = _Referent()
        ref = weakref.ref(obj, lambda _: signal.raise_signal(signal.SIGTERM))
        del obj  # the callback runs here
        assert ref() is None
        return 0

    saved = {s: signal.getsignal(s) for s in signals.HANDLED}
    monkeypatch.setitem(cli.COMMANDS, "report", lambda: command)
    try:
        assert cli.main(["report", "whatever"]) == 143
    finally:
        for s, h in saved.items():
            signal.signal(s, h)
    assert capsys.readouterr().err == "bench.py report: interrupted by SIGTERM (exit 143)\n"
    assert sys.unraisablehook is not signals._unraisable_hook  # restored


def _signal_in_sweep(monkeypatch) -> list[str]:
    """SIGTERM inside each ``EndpointDir()``, after its folder is made (in its sweep of
    dead processes' folders); returns the list the folders' paths are appended to."""
    from ipc_bench.wire import leftovers

    made, sweep = [], leftovers.sweep

    def signalled_sweep(parent):
        made.extend(str(p) for p in Path(parent).glob(f"{leftovers.FOLDER_PREFIX}{os.getpid()}-*"))
        signal.raise_signal(signal.SIGTERM)  # handled before raise_signal returns
        return sweep(parent)

    monkeypatch.setattr(leftovers, "sweep", signalled_sweep)
    return made


def _run_startup_check(transport: str) -> None:
    from ipc_bench.cli.run import _check_sockets

    _check_sockets([SimpleNamespace(transport=transport, host="127.0.0.1", tp=None, pp=None,
                                    frontend=False)])


def _run_two_process_case(transport: str) -> None:
    from fault_helpers import steady_case

    from ipc_bench.harness.supervisor import run_case

    run_case(steady_case(4, max_steps=20, transport=transport))


def _run_case_with_frontend(transport: str) -> None:
    from fault_helpers import steady_case

    from ipc_bench.harness.supervisor import run_case

    run_case(steady_case(4, max_steps=20, transport="inproc", frontend=True))


@pytest.mark.parametrize("maker, transport", [
    (_run_startup_check, "ipc"), (_run_startup_check, "shm"),
    (_run_two_process_case, "ipc"), (_run_case_with_frontend, "inproc")],
    ids=["startup-check-ipc", "startup-check-shm", "case", "frontend"])
def test_a_signal_while_a_socket_folder_is_made_leaves_no_folder(installed, monkeypatch,
                                                                 maker, transport):
    """A signal that lands inside ``EndpointDir()`` once its folder exists (here in its
    sweep) waits until the folder's owner has it: the run ends with the signal's
    ``Interrupted`` and the folder is removed (raised there, the folder's name would be
    lost and the folder left behind)."""
    made = _signal_in_sweep(monkeypatch)
    with pytest.raises(signals.Interrupted) as err:
        maker(transport)
    assert err.value.code == 143
    assert made  # (the shm check makes two: the sockets' and the ring's)
    assert [p for p in made if os.path.exists(p)] == []


def test_a_child_started_terminated_with_parent_gets_sigterm_when_it_is_sigkilled(tmp_path):
    """``scripts/gpu_check.py`` starts each stage so: SIGKILL the parent and the child
    is SIGTERMed by the kernel (it writes what it has and exits), not left running."""
    import subprocess
    import sys
    import time

    from fault_helpers import REPO

    mark = tmp_path / "sigterm"
    child = ("import signal, sys, time, pathlib\n"
             f"def bye(*_): pathlib.Path({str(mark)!r}).write_text('15'); sys.exit(143)\n"
             "signal.signal(signal.SIGTERM, bye)\nprint('ready', flush=True)\n"
             "time.sleep(60)\n")
    parent = ("import os, subprocess, sys, time\n"
              "from ipc_bench.harness import signals\n"
              f"p = subprocess.Popen([sys.executable, '-c', {child!r}], stdout=sys.stdout,\n"
              "    preexec_fn=signals.terminated_with_parent(os.getpid()))\n"
              "print(p.pid, flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", parent], cwd=REPO, stdout=subprocess.PIPE,
                            text=True)
    try:
        pid = int(proc.stdout.readline())
        assert proc.stdout.readline().strip() == "ready"
        proc.kill()
        proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        # write_text creates the file before it writes: wait for its text, not the file
        while not (mark.exists() and mark.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert mark.read_text() == "15"
    finally:
        proc.kill()
        proc.wait()
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, UnboundLocalError):
            pass
