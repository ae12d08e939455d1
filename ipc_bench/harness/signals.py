"""SIGINT / SIGTERM / SIGHUP handling shared by the command line and the case driver.

``install()`` (called by ``bench.py``'s commands) makes SIGINT, SIGTERM and SIGHUP
raise ``Interrupted`` in the main thread, carrying the exit code the run should end
with (130 / 143 / 129, i.e. 128 + the signal number, as a shell reports it). One the
process inherited as ignored (``nohup``'s SIGHUP; a script's background job's SIGINT)
stays ignored, for the whole run and every process it starts. So do the other signals
whose default action ends the process at once, writing nothing, and that another
process or a limit may send (``kill -USR1``, ``timeout -s ALRM``, a CPU-time limit's
SIGXCPU: ``WHERE_DEFAULT``), each with its own code (SIGUSR1 138, SIGUSR2 140, SIGALRM
142, SIGVTALRM 154, SIGPROF 155, SIGXCPU 152), but only where their action is that
default: a handler the caller put in (a profiler's SIGPROF timer, pytest-timeout's
SIGALRM) is the caller's and is left alone. The project sends none of these itself.

Start-up: ``bench.py`` blocks these signals (``pthread_sigmask``) in its first
statement, before any third-party module is imported: a signal that arrives while a C
extension initialises could otherwise be swallowed by it (msgspec 0.23 does, and a
typed ``Decoder`` built later crashes with SIGSEGV) or be lost. ``install()`` keeps
them blocked; the command imports what it needs, then ``unblock()`` lets a pending
signal through to the handler, which raises ``Interrupted`` there. In a process with
other threads (``cli.main`` called from a notebook or a script) the mask holds only for
the main thread: the kernel hands the signal to another thread and the handler runs in
the main thread all the same, so one that reaches it between ``install()`` and
``unblock()`` is kept and raised by ``unblock()`` just as well. ``restore()`` puts the
caller's handlers, mask and ``sys.unraisablehook`` back, so that the next ``install()``
(the next in-process call) routes them anew, and leaves one the caller of
``cli.main`` blocks blocked all along (``install``'s ``keep_blocked``, pending for
the caller); a process about to exit (``bench.py``, a script of ``scripts/`` run as a
command: ``cli.main``'s and the scripts' ``main``'s ``exiting``) leaves them ignored
instead once a signal arrived (``ignore_after_signal``).
Code that must not be cut in the
middle (appending rows to a CSV file, killing and reaping the runner, rewriting
``summary.json``) runs inside ``deferred()``: a signal arriving there is remembered
and raised when the block ends, so a file is never left with half a row and a child
is never left unreaped. The deferral is done in Python, not with
``pthread_sigmask``: the handler always runs in the main thread, whichever thread the
kernel picked, so it also holds while other threads (the RSS sampler) run.

A signal that lands in code whose exceptions the interpreter prints and drops (a
``__del__``, a function marked ``unraisable`` such as the gc callback that counts
collections), in an import (a C extension's initialisation may swallow it: numpy.random's
Cython modules do, and a lazy import inside a measuring loop then lost the signal), or
in pyzmq's socket makers (an exception there would leave a socket
its context cannot close, ``_zmq_socket_makers``), is deferred the same way instead
of raised there. One that lands in
such code the handler cannot recognise from its frames (a weakref callback that a
deallocation runs, e.g. ``WeakKeyDictionary``'s, inside matplotlib) is raised there,
and the interpreter hands it to ``sys.unraisablehook``: while installed, the hook
(``_unraisable_hook``) keeps it pending instead of printing it. A signal kept pending
either way is raised at the end of the next ``deferred()`` block, when the command
returns (``raise_pending``), or as soon as the main thread runs outside such code:
a thread hands it back every ``NUDGE_S`` (``_nudge``), so a loop that enters no
``deferred()`` block (a script measuring in process) still stops.

Without ``install()`` (library use, tests), ``deferred()`` is a no-op and signals keep
their default behaviour.

A script that starts a process of its own (``scripts/codec_fit.py``'s ``bench.py`` run)
runs it with ``call``: the child starts with these signals blocked (``child_start``), so
one passed on while its interpreter starts waits for its handlers; the signal is passed
on to the child (``stop_child``: it writes what it measured and exits, or is killed
after ``CHILD_GRACE_S``), which is reaped before ``Interrupted`` goes on, so that the
script's one line comes last and no child outlives it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import _thread
import tempfile
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator, Optional, Sequence, Union

from ipc_bench.errors import one_line

#: Of ``HANDLED``, the signals turned into ``Interrupted`` only where their action is
#: the default (``SIG_DFL``: the process ends at once, writing nothing, its running
#: case lost as under SIGKILL), never where a handler is in.
WHERE_DEFAULT = (signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM, signal.SIGVTALRM,
                 signal.SIGPROF, signal.SIGXCPU)
#: Signals turned into ``Interrupted`` (``bench.py`` blocks the same set at its start).
HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP) + WHERE_DEFAULT


class Interrupted(BaseException):
    """SIGINT, SIGTERM, SIGHUP or another of ``HANDLED`` arrived; ``code`` is the exit
    code, 128 + the signal's number (130, 143, 129; SIGUSR1 138).

    A ``BaseException``, like ``KeyboardInterrupt``, so ``except Exception`` blocks
    on the way up do not swallow it. ``reported``: the interrupt's one line has been
    printed on the way up (``bench.py``'s own line is then left out). ``child``: how
    the child process that ``call`` was running ended once passed the signal
    (``exited 130``), ``None`` where none was running.
    """

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code
        self.reported = False
        self.child: Optional[str] = None

    @property
    def signal_name(self) -> str:
        try:
            return signal.Signals(self.code - 128).name
        except ValueError:
            return f"signal {self.code - 128}"

    def line(self, prog: str, kept: Union[str, Sequence[str]] = (), *, what: str = "",
             when: str = "") -> str:
        """The one line a command ends with after this interrupt, of one shape for
        ``bench.py`` and every script: ``PROG: [WHAT: ]interrupted by SIGNAL[ WHEN][;
        KEPT]... (exit N)``, the exit code last. ``prog``: the command's name
        (``bench.py``, ``bench.py report``, ``codec_fit.py``); ``what``: what was
        stopped where it is not the command as a whole (a case's id); ``when``: where
        in its work (``after 2 of 4 cases``); ``kept``: where the results are and what
        they hold (``partial results: DIR``), one text or several, each after ``; ``
        (empty ones left out). Line breaks and other unprintable characters in them are
        escaped (``errors.one_line``): ``codec_fit.py: interrupted by SIGINT; kept: the
        fit run DIR is incomplete (2 cases complete) (exit 130)``."""
        parts = [kept] if isinstance(kept, str) else list(kept)
        text = f"{prog}: " + (f"{what}: " if what else "") + \
            f"interrupted by {self.signal_name}" + (f" {when}" if when else "")
        text += "".join(f"; {part}" for part in parts if part)
        return one_line(f"{text} (exit {self.code})")


#: Code of the functions marked ``unraisable``, and of pyzmq's socket makers
#: (``_zmq_socket_makers``, added by ``install``).
_UNRAISABLE: set = set()


def _zmq_socket_makers() -> set:
    """Code of pyzmq's Python functions that have libzmq make a socket and only then
    record it in its context (``Context.socket``, ``Socket.__init__``,
    ``Socket.get_monitor_socket``; pyzmq 27). An ``Interrupted`` raised between the two
    leaves a socket that ``Context.destroy(linger=0)`` does not see while the
    exception's traceback keeps it alive, and the context's term then waits for it
    forever (a scheduler hung in ``zmq_ctx_term`` after a SIGTERM at start-up). A
    signal landing in them waits for the next ``deferred()`` block's end instead."""
    import zmq

    funcs = (zmq.Context.socket, zmq.Context._add_socket, zmq.Socket.__init__,
             zmq.Socket.get_monitor_socket)
    return {f.__code__ for f in funcs if hasattr(f, "__code__")}


def unraisable(func):
    """Mark ``func`` as called by the interpreter with its exceptions dropped (a gc
    callback): a signal arriving while it runs waits for the next ``deferred()``
    block's end."""
    _UNRAISABLE.add(func.__code__)
    return func


def _in_unraisable(frame) -> bool:
    """True when ``frame`` or one of its callers is a ``__del__``, ``unraisable``, or
    an import's machinery (``importlib._bootstrap``: a module's code or a C
    extension's initialisation runs under it, and an exception raised there can be
    swallowed by the extension, as numpy.random's Cython modules do, or leave a
    half-made module behind)."""
    while frame is not None:
        code = frame.f_code
        if (code in _UNRAISABLE or code.co_name == "__del__"
                or code.co_filename.startswith("<frozen importlib._bootstrap")):
            return True
        frame = frame.f_back
    return False


#: How often (s) a signal kept pending outside ``deferred()`` is handed back to the main
#: thread (``_nudge``).
NUDGE_S = 0.005


class _State:
    installed = False              # between install() and restore()
    nudging = False                # a _nudge thread is running
    depth = 0                      # nesting of deferred() blocks
    pending: Optional[int] = None  # exit code of a signal that arrived while deferred
    first: Optional[int] = None    # exit code of the first signal of the run
    held = False                   # between install() and unblock(): depth counts it
    mask: Optional[set] = None     # the signal mask before install()
    kept: frozenset = frozenset()  # HANDLED the caller blocks: left alone (keep_blocked)
    unraisable_hook: Optional[Callable] = None  # sys.unraisablehook before install()
    nudger: Optional[threading.Thread] = None   # the last _nudge thread started
    ending = False                 # restore() is giving the caller's handlers back
    late: Optional[int] = None     # a signal (number) that came then, before any other


def _handler(signum, frame) -> None:
    if _State.ending:  # never raised: the command has ended (restore hands it on)
        if _State.first is None and _State.late is None:
            _State.late = signum
        return
    if _State.first is not None:
        if (_State.pending is not None and _State.depth == 0
                and not _in_unraisable(frame)):  # a kept signal, handed back (_nudge)
            code, _State.pending = _State.pending, None
            raise Interrupted(code)
        return  # already shutting down: a second Ctrl-C must not cut the clean-up short
    _State.first = 128 + signum
    if _State.depth > 0:  # raised as the block ends
        _State.pending = _State.first
        return
    if _in_unraisable(frame):
        _State.pending = _State.first
        _nudge(signum)
        return
    raise Interrupted(_State.first)


@unraisable  # a hand-back landing while it starts its thread waits
def _nudge(signum: int) -> None:
    """Hand a signal kept pending outside ``deferred()`` back to the main thread every
    ``NUDGE_S`` (``_thread.interrupt_main``: the handler runs again there), from a
    daemon thread that ends once it is raised (``_handler``, ``deferred``,
    ``raise_pending``) or the handlers are put back (``restore``). Inside a
    ``deferred()`` block it waits: the block's end raises it."""
    if _State.nudging:
        return
    _State.nudging = True

    def hand_back() -> None:
        try:
            while _State.installed and _State.pending is not None:
                time.sleep(NUDGE_S)
                if _State.installed and _State.pending is not None and _State.depth == 0:
                    _thread.interrupt_main(signum)
        finally:
            _State.nudging = False

    _State.nudger = threading.Thread(target=hand_back, name="signal-hand-back", daemon=True)
    _State.nudger.start()


@unraisable  # an exception raised here would be dropped too
def _unraisable_hook(unraisable) -> None:
    """``sys.unraisablehook`` while ``install()`` holds: an ``Interrupted`` that the
    interpreter dropped (raised by the handler inside a weakref callback or a finalizer)
    is kept pending, not printed; anything else goes to the hook that was there."""
    if isinstance(unraisable.exc_type, type) and issubclass(unraisable.exc_type, Interrupted):
        if _State.pending is None:
            _State.pending = getattr(unraisable.exc_value, "code", None) or _State.first
            _nudge(_State.pending - 128)
        return
    (_State.unraisable_hook or sys.__unraisablehook__)(unraisable)


def raise_pending() -> None:
    """Raise ``Interrupted`` for a signal still pending (one the interpreter dropped
    outside any ``deferred()`` block): what a command calls when it returns, so that
    such a signal still ends it with its exit code."""
    if _State.depth == 0 and _State.pending is not None:
        code, _State.pending = _State.pending, None
        raise Interrupted(code)


def finish() -> None:
    """The command's work has returned, what it was asked for done, its output written
    and printed: a signal kept pending from it is raised (``raise_pending``: it came
    during the work and ends the command with its code and line), and from here on one
    that arrives leaves the exit code alone, never raised (``ending``; ``restore``
    hands it to the caller's own handler once that is back where the caller goes on,
    else drops it: ``bench.py`` and a script run as a command end with their work's
    code, 0). What ``run_command``, ``cli.main`` and a script's own ``main`` call
    once the work has returned."""
    _State.ending = True  # _handler keeps a new one (late) or drops it
    raise_pending()


def run_command(parse: Callable[[], object], work: Callable[[object], int],
                interrupt_line: Callable[[Interrupted, object], str],
                exiting: bool = False) -> int:
    """A script's ``main`` under ``install``: ``args = parse()`` with the signals still
    blocked (a bad option exits 2 before any handler matters), then ``work(args)``
    with them let through (an ``int`` that ``parse`` returns instead of arguments, the
    exit code of ``--help`` or of a bad option it has printed, is returned as it is,
    ``work`` not called); its exit code, or on SIGINT / SIGTERM / SIGHUP
    ``interrupt_line(exc, args)`` on stderr (``args`` ``None`` when the signal came
    before parsing ended) and 130 / 143 / 129. A signal the interpreter dropped is
    raised before the code is returned; one that arrives once ``work`` has returned
    leaves its code alone (``finish``); the handlers and mask are
    put back either way (``restore``), as ``cli.main`` puts them back: ``exiting``
    (the script run as a command, ``if __name__ == "__main__"``, whose process exits
    once this returns) as ``bench.py``'s, further signals ignored after one arrived
    (``restore``'s ``ignore_after_signal``) and the script's own start-up block lifted
    (``install``'s ``keep_blocked``); ``False`` (its ``main`` called in process) the
    caller's handlers back whatever happened, and a signal the caller blocks left
    blocked."""
    old = install(keep_blocked=not exiting)
    args = None
    try:
        args = parse()
        unblock()
        code = args if type(args) is int else work(args)
        finish()  # a signal the interpreter dropped is raised; a later one is not
        return code
    except Interrupted as exc:
        print(interrupt_line(exc, args), file=sys.stderr)
        return exc.code
    finally:
        restore(old, ignore_after_signal=exiting)


def block() -> set:
    """Block ``HANDLED`` in this thread (signals that arrive stay pending); returns the
    previous mask."""
    return signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)


@contextmanager
def blocked() -> Iterator[None]:
    """Keep ``HANDLED`` blocked in this thread (``pthread_sigmask``) for the block, the
    mask put back after, also when the block raises: for imports of modules with C
    extensions that a command needs only once its input is checked (``with blocked():
    import pandas``), so that no signal lands while they initialise (see the module
    docstring: what ``bench.py``'s commands import before ``unblock()``). A signal
    that arrived meanwhile is delivered as the mask is put back (``Interrupted`` under
    ``install``). Raises what the block raises (``ImportError``; ``OSError``
    ``EMFILE`` out of file descriptors)."""
    old = block()
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def install(keep_blocked: bool = False) -> dict:
    """Route ``HANDLED`` to ``Interrupted``, leaving them blocked until ``unblock()``;
    returns the old handlers for ``restore``. A signal this process found ignored
    (``SIG_IGN``, inherited: SIGHUP under ``nohup``, SIGINT in a background job of a
    shell script) stays ignored, as Python leaves such a SIGINT: the launcher asked for
    it, and a signal ignored before ``install`` could not be caught there anyway. One
    of ``WHERE_DEFAULT`` is routed only where its action is the default (``SIG_DFL``);
    a handler found there is left in, and its signal is blocked until ``unblock()`` as
    the others are.

    ``keep_blocked`` (``cli.main`` called in process): one of ``HANDLED`` that this
    thread's mask blocks is the caller's choice and is left as one ignored is: its
    handler untouched, blocked until ``restore`` and after it (the caller's mask is put
    back), so that one pending stays pending for the caller. ``False`` (``bench.py``,
    the scripts, which block ``HANDLED`` in their first statement for this): the block
    found is their own and ``unblock()`` lifts it.

    The handlers go in first, before anything slow (pyzmq's import): in a process with
    other threads (``cli.main`` called from a notebook or a script) the kernel hands a
    signal to one of them whatever this thread's mask, and its handler runs here all the
    same. One that reaches ``_handler`` before ``unblock()`` is kept and raised by
    ``unblock()``, as a blocked one is; one that the caller's own handler turned into an
    exception before ours were in (``KeyboardInterrupt``), or any other exception
    raised here (``ValueError`` outside the main thread, a missing pyzmq), leaves the
    handlers, the mask and ``sys.unraisablehook`` as they were and is raised."""
    _State.mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())  # (only read)
    old: dict = {}
    try:
        _State.pending, _State.first = None, None
        _State.ending, _State.late = False, None
        _State.depth, _State.held = 1, True  # what arrives now waits for unblock()
        _State.kept = frozenset(s for s in HANDLED if keep_blocked and s in _State.mask)
        block()
        old = {s: h for s in HANDLED if s not in _State.kept
               and (h := signal.getsignal(s)) is not signal.SIG_IGN
               and (s not in WHERE_DEFAULT or h is signal.SIG_DFL)}
        for s in old:
            signal.signal(s, _handler)
        _State.installed = True
        if sys.unraisablehook is not _unraisable_hook:
            _State.unraisable_hook, sys.unraisablehook = sys.unraisablehook, _unraisable_hook
        _UNRAISABLE.update(_zmq_socket_makers())
    except BaseException:
        restore(old, ignore_after_signal=False)
        raise
    return old


def unblock() -> None:
    """Let ``HANDLED`` through, but those the caller blocks (``install``'s
    ``keep_blocked``); one that arrived since ``install()`` raises ``Interrupted`` here
    (a blocked one is delivered by the kernel as the mask changes; one that another
    thread took was kept by the handler)."""
    if _State.held:
        _State.held = False
        _State.depth -= 1
    let_through = [s for s in HANDLED if s not in _State.kept]
    if let_through:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, let_through)
    raise_pending()


def restore(old: dict, ignore_after_signal: bool = True) -> None:
    """Put back the handlers ``install`` returned and the mask it found (``bench.py``:
    blocked, so a signal after the command's end leaves its exit code alone), and
    ``sys.unraisablehook``. ``ignore_after_signal`` (a process about to exit: a
    script run as a command, ``bench.py``): after a signal arrived, further ones are set to ``SIG_IGN``
    instead, and stay ignored until the process exits, so that a repeated Ctrl-C
    during its shutdown prints no traceback and a SIGTERM there cannot change its exit
    code (the mask holds only for this thread; another thread, a daemon one or torch's,
    could still take it). ``False`` (``cli.main`` or a script's ``main`` called in
    process): the handlers are
    put back as they were whatever happened, so that the caller's Ctrl-C works again
    and the next ``install`` routes them anew. A signal kept pending is dropped; the
    thread handing it back (``_nudge``) has ended when this returns.

    A signal that arrives while this runs never raises in it, whichever thread the
    kernel gives it to: the handlers are swapped with ``HANDLED`` blocked, and the
    caller's mask is put back while ``_handler`` is still in (``ending``), so that one
    that came meanwhile reaches ``_handler`` and not, half-way through, the caller's
    handler (a ``KeyboardInterrupt`` out of ``cli.main`` after its interrupt's line,
    instead of its exit code). One that follows the command's own interrupt is
    dropped, as ``_handler`` drops a second signal during the clean-up; one that is
    the first of the call is the caller's: with ``ignore_after_signal`` ``False`` it
    is raised again once the caller's handlers are back (``signal.raise_signal``: the
    caller's handler gets it, as it would a moment later), else dropped, the process
    exiting with the command's code."""
    _State.ending = True  # _handler keeps it (late) or drops it, never raises
    block()
    _State.installed = False  # a _nudge thread stops
    _State.pending = None
    if _State.held:
        _State.held = False
        _State.depth -= 1
    try:
        nudger = _State.nudger
        if nudger is not None and nudger is not threading.current_thread():
            nudger.join(timeout=1.0)  # its last hand-back lands on _handler: dropped
        if sys.unraisablehook is _unraisable_hook:
            sys.unraisablehook = _State.unraisable_hook or sys.__unraisablehook__
        _State.unraisable_hook = None
        if _State.mask is not None:  # one pending since block() reaches _handler here
            signal.pthread_sigmask(signal.SIG_SETMASK, _State.mask)
        ignore = ignore_after_signal and _State.first is not None
        for s, h in reversed(old.items()):  # SIGINT, the one a hand repeats, last
            signal.signal(s, signal.SIG_IGN if ignore else h)
    finally:
        if _State.mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, _State.mask)
        late, _State.late = _State.late, None
    if late is not None and not ignore_after_signal and late in old:
        signal.raise_signal(late)  # the caller's handler, as it would have had it


@contextmanager
def deferred() -> Iterator[None]:
    """Run the block to its end even if SIGINT / SIGTERM arrive; raise ``Interrupted``
    afterwards (also when the block raised: the interrupt wins)."""
    _State.depth += 1
    try:
        yield
    finally:
        _State.depth -= 1
        if _State.depth == 0 and _State.pending is not None:
            code, _State.pending = _State.pending, None
            raise Interrupted(code)


# ======================================================================================
# Child processes (the runner, the frontend): leaving with the scheduler

#: Environment variable carrying the scheduler's pid to its child processes.
SCHEDULER_PID_ENV = "IPC_BENCH_SCHEDULER_PID"


def set_parent_death_signal(signum: int = signal.SIGKILL) -> bool:
    """Linux: send this process ``signum`` (default SIGKILL) when its parent dies
    (PR_SET_PDEATHSIG).

    Returns whether ``prctl`` succeeded. The signal fires when the *thread* that
    forked this process exits; the scheduler starts its children from its main thread.
    """
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        return libc.prctl(1, signum, 0, 0, 0) == 0  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        return False


def terminated_with_parent(parent: int) -> Callable[[], None]:
    """A ``subprocess.Popen`` ``preexec_fn`` (run in the child between fork and exec)
    that has the child SIGTERMed when its parent, pid ``parent``, dies
    (``set_parent_death_signal``), also when that parent died before ``prctl`` ran:
    a ``bench.py`` started so writes what it has and exits 143 rather than run on
    with no one to read it or stop it. Linux; elsewhere it does nothing."""
    def preexec() -> None:
        if set_parent_death_signal(signal.SIGTERM) and os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


def expected_parent() -> int:
    """The scheduler's pid: ``IPC_BENCH_SCHEDULER_PID`` if set (so a parent that died
    before this process could look is still noticed), else the current parent."""
    value = os.environ.get(SCHEDULER_PID_ENV, "")
    return int(value) if value.isdigit() else os.getppid()


def child_of_scheduler() -> Callable[[], Optional[str]]:
    """What a child process does first: ignore SIGINT and SIGHUP (a Ctrl-C or a
    hung-up terminal reaches the whole process group; the scheduler decides how the
    run ends and kills its children; SIGTERM and ``WHERE_DEFAULT`` keep their default
    action, which ends it at once, as the scheduler ends its case on them), die with
    its parent (``PR_SET_PDEATHSIG``), and
    return its ``peer_problem()``: ``None`` while the scheduler is its parent, else
    one line (checked every wait slice, a fallback that also covers a parent that
    died before ``prctl`` ran)."""
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    set_parent_death_signal()
    parent = expected_parent()

    def peer_problem() -> Optional[str]:
        if os.getppid() != parent:
            return f"scheduler process {parent} is gone"
        return None

    return peer_problem


# ======================================================================================
# Child processes a script starts (a bench.py run, a reader): stopped with the script

#: How long a child passed a signal (``stop_child``) has to write what it has and exit
#: before it is killed with SIGKILL, in seconds.
CHILD_GRACE_S = 15.0


def child_ended(code: int) -> str:
    """How a child with ``returncode`` ``code`` ended: ``exited 130``, ``was killed by
    SIGKILL`` (a negative code), ``was killed by signal 99``."""
    if code >= 0:
        return f"exited {code}"
    try:
        return f"was killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"was killed by signal {-code}"


def stop_child(proc: subprocess.Popen, signum: int, grace_s: float = CHILD_GRACE_S) -> str:
    """Pass ``signum`` on to ``proc`` (a ``bench.py`` writes what it measured and exits
    128 + ``signum``; one already shutting down, having had the same Ctrl-C, ignores
    it), then SIGCONT (a stopped process could not act on it), wait up to ``grace_s``
    seconds for it to exit, then SIGKILL it; reaped either way, also when it had
    exited already. Returns how it ended (``child_ended``: ``exited 130``), or ``had
    not exited 15 s later and was killed by SIGKILL``."""
    if proc.poll() is None:  # not reaped: the pid is still its own
        proc.send_signal(signum)
        with contextlib.suppress(OSError):
            os.kill(proc.pid, signal.SIGCONT)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return f"had not exited {grace_s:g} s later and was killed by SIGKILL"
    return child_ended(proc.returncode)


@contextmanager
def child_start() -> Iterator[None]:
    """Start a child process (``subprocess.Popen``) in this block: a ``deferred()``
    block (no signal between the fork and holding the handle) with ``HANDLED`` also
    blocked in this thread (``pthread_sigmask``), so that the child inherits them
    blocked through the fork and the exec. A ``bench.py`` child keeps them blocked
    until its handlers are in (its first statement blocks the same set, and
    ``install``/``unblock`` lift it): a signal passed on to it (``stop_child``) while
    its interpreter is still starting, before that first statement, waits for them and
    ends it with its one line and exit code, where Python's own SIGINT handler raised
    ``KeyboardInterrupt`` in ``site``'s imports and the child printed a traceback and
    exited 1 (SIGTERM and SIGHUP killed it silently). The mask is put back as the block
    ends; a signal that arrived meanwhile is raised then (``deferred``)."""
    with deferred():
        mask = block()
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def call(cmd: list[str], grace_s: float = CHILD_GRACE_S, *, child_line: bool = True,
         **popen) -> int:
    """``subprocess.call(cmd, **popen)`` for a command that has ``install()``ed: the
    child is SIGTERMed should this process die (``terminated_with_parent``), and a
    signal that arrives while it runs (``Interrupted``) is passed on to it
    (``stop_child``, which sets the exception's ``child``: how it ended) and raised
    again once the child is reaped, so that no child outlives the command. Returns
    the child's exit code (negative: killed by that signal).

    ``child_line=False`` (a ``bench.py`` child, which prints its own interrupt line):
    the child's stderr is held in a temporary file and written to this process's
    stderr once the child has ended, without, when a signal was passed on, the lines
    naming it (``... interrupted by SIGINT ...``), so that the caller's line is the
    interrupt's one line."""
    if child_line:
        return _call(cmd, grace_s, popen)
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as err:
        said = ""
        try:
            return _call(cmd, grace_s, dict(popen, stderr=err))
        except Interrupted as exc:
            said = f"interrupted by {exc.signal_name}"
            raise
        finally:
            with deferred():
                err.seek(0)
                sys.stderr.writelines(line for line in err
                                      if not (said and said in line))
                sys.stderr.flush()


def _call(cmd: list[str], grace_s: float, popen: dict) -> int:
    """``call`` with the child's output where ``popen`` sends it."""
    proc = None
    try:
        with child_start():  # no signal between the fork and holding the handle
            proc = subprocess.Popen(cmd, preexec_fn=terminated_with_parent(os.getpid()),
                                    **popen)
        return proc.wait()
    except Interrupted as exc:
        if proc is not None:
            with deferred():
                exc.child = stop_child(proc, exc.code - 128, grace_s)
        raise
