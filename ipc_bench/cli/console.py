"""stdout and stderr that cannot break a command.

A closed pipe (``bench.py --list | head -1``), a full disk (``> /dev/full``), a hung-up
terminal or a descriptor closed at start (``>&-``, ``2>&-``) never costs a result or
prints a traceback: ``Console.install()`` opens ``/dev/null`` on any of descriptors 0-2 that is
closed (so no file the run opens can take their place and receive a child's output)
and replaces ``sys.stdout`` / ``sys.stderr`` with ``GuardedStream``s. The first write
that fails is remembered, the stream's descriptor is pointed at ``/dev/null`` (later
writes, child processes and the interpreter's final flush then go nowhere) and the
command goes on. ``Console.restore(code)`` flushes, puts the streams back and returns
the exit code: stdout on a broken pipe turns a 0 into 141 (128 + SIGPIPE, what a shell
reports for a writer killed by SIGPIPE) and says nothing; any other stdout error is one
line on stderr and turns a 0 into 1 (a run also records it in ``summary.json``:
``stdout_failure``); so does stdout closed at start, at its first write (``Bad file
descriptor (closed at start)``: the output went nowhere; a run and a report are refused
before they start instead, ``closed_stdout_refusal``). A command that wrote its results to
files before printing them says so at the end of that line (``written_elsewhere``:
``...: No space left on device; the results are in DIR (send.json, ...)``). A failing
stderr changes nothing: there is nowhere left to report it. A stream whose encoding lacks a character (``PYTHONIOENCODING=ascii``) gets
its one-character ASCII stand-in where it has one (``ASCII_STAND_INS``: the tables' mark
``°`` as ``^``, ``µ`` as ``u``), so that a table's columns, padded for one character,
stay under their headers and the note under it names the mark printed; else its escape
(``\\xb1``), as Python's stderr writes it. The scripts of ``scripts/``
run their ``main`` the same way (``script_main``: stdout closed at start refused before
``main`` runs, as a run is), and write their output files with ``write_output`` (whole or
not at all; one line on a write that fails, the file named on a failed stdout).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import select
import signal
import sys
from typing import Callable, Iterator, Optional, TextIO

#: Exit code after stdout's reader went away (128 + SIGPIPE).
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE


#: One-character ASCII stand-ins for the characters a terminal table's cell or header
#: holds, written where the stream's encoding lacks them: an escape (``\\xb0``, four
#: characters) would push every cell after it three columns right of its header, the
#: table having been padded for one character. ``°`` (a timing measured with no core
#: to spare, ``analysis.cores``) becomes ``^``, a mark no table uses otherwise, in the
#: note under the table too (written through the same stream); ``µ`` becomes ``u``, as
#: in the ``us`` of the column headers.
ASCII_STAND_INS = {"°": "^", "µ": "u"}


def stand_ins(encoding: str) -> dict[int, str]:
    """``ASCII_STAND_INS`` of the characters ``encoding`` cannot encode, as a
    ``str.translate`` table (empty for UTF-8; an unknown encoding: every one)."""
    table = {}
    for char, ascii_char in ASCII_STAND_INS.items():
        try:
            char.encode(encoding)
        except (UnicodeEncodeError, LookupError):
            table[ord(char)] = ascii_char
    return table


class GuardedStream:
    """A text stream (``write``, ``flush``; other attributes are the wrapped stream's)
    that never raises ``OSError``: the first one is kept in ``error`` and every later
    write is dropped. ``fd``: the descriptor pointed at ``/dev/null`` on failure when
    the wrapped stream writes to it."""

    def __init__(self, stream: Optional[TextIO], fd: int):
        # ``None``: the descriptor was closed when Python started (``>&-``); the first
        # write fails as a write to it would, and the text goes to /dev/null
        self.closed_at_start = stream is None
        self.stream = stream if stream is not None else open(os.devnull, "w")
        self.fd = fd
        self.error: Optional[OSError] = None
        #: What the command wrote elsewhere all the same (``written_elsewhere``).
        self.written: Optional[str] = None

    def write(self, text: str) -> int:
        if self.error is None and self.closed_at_start and text:
            self.error = OSError(errno.EBADF, "Bad file descriptor (closed at start)")
        if self.error is None:
            try:
                if self._write_through(text):
                    return len(text)
                return self.stream.write(text)
            except UnicodeEncodeError:  # a stream that cannot encode it (ASCII)
                return self._write_escaped(text)
            except OSError as exc:
                self._fail(exc)
        return len(text)

    def _write_through(self, text: str) -> bool:
        """Write ``text`` to the descriptor itself, ``os.write`` after ``os.write`` until
        every byte is taken, where the wrapped stream is a file on ``fd`` (not a test's
        capture: ``False``, and ``write`` hands it to the stream). A pipe whose reader
        leaves during a write takes part of it and returns that count, without an
        error; Python's buffered stream then drops the rest and reports nothing
        (``| head -1`` on a run's end text of over 64 KiB: exit 0, its ``results:``
        line lost), where the next ``os.write`` here raises ``EPIPE`` (exit 141). A
        descriptor left non-blocking by whoever opened it is waited on (``select``) when
        full. The text is encoded as the stream would (its encoding and error handler;
        ``UnicodeEncodeError`` where it cannot be), after what the stream holds is
        flushed, so that the order of writes is kept. Raises ``OSError`` as the
        descriptor's writes do."""
        try:
            same = self.stream.fileno() == self.fd
        except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation too
            return False
        encoding = getattr(self.stream, "encoding", None)
        if not same or not encoding:
            return False
        data = memoryview(text.encode(encoding, getattr(self.stream, "errors", None)
                                      or "strict"))
        self.stream.flush()
        while data:
            try:
                data = data[os.write(self.fd, data):]
            except BlockingIOError:  # O_NONBLOCK, and the pipe full: wait for room
                select.select([], [self.fd], [])
        return True

    def _write_escaped(self, text: str) -> int:
        """Write ``text`` with each character the stream's encoding lacks as its ASCII
        stand-in (``ASCII_STAND_INS``) or else its escape (``±`` as ``\\xb1``, as stderr
        writes it), so a terminal set to ASCII (``PYTHONIOENCODING=ascii``, ``LC_ALL=C``
        on an older Python) gets every line, and its tables aligned."""
        encoding = getattr(self.stream, "encoding", None) or "ascii"
        text_in = text.translate(stand_ins(encoding))
        escaped = text_in.encode(encoding, "backslashreplace").decode(encoding, "replace")
        try:
            if not self._write_through(escaped):
                self.stream.write(escaped)
            return len(text)
        except OSError as exc:
            self._fail(exc)
        return len(text)

    def flush(self) -> None:
        if self.error is None:
            try:
                self.stream.flush()
            except OSError as exc:
                self._fail(exc)

    def isatty(self) -> bool:
        return self.error is None and self.stream.isatty()

    def __getattr__(self, name: str):
        return getattr(self.stream, name)

    def _fail(self, exc: OSError) -> None:
        self.error = exc
        try:
            same = self.stream.fileno() == self.fd
        except (OSError, ValueError, AttributeError):  # not a file (a test's capture)
            same = False
        if same:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self.fd)
            os.close(null)


def stdout_failure(stream) -> Optional[str]:
    """``cannot write to stdout: REASON`` when ``stream`` (``sys.stdout``: a
    ``GuardedStream`` once ``Console.install`` ran) lost a write for any reason but a
    reader that went away (a broken pipe, which costs nothing); ``None`` otherwise."""
    error = getattr(stream, "error", None)
    if error is None or error.errno == errno.EPIPE:
        return None
    return f"cannot write to stdout: {error.strerror or error}"


def written_elsewhere(text: str) -> None:
    """Have the line of a failed stdout (``Console.restore``: ``PROG: error: cannot
    write to stdout: REASON``) end ``; TEXT``: what the command wrote all the same, once
    it is written (``the results are in DIR (send.json, cached.json)``), so that the
    line does not read as if nothing was; a second call adds its ``; TEXT`` after the
    first's (a script's run folders, then its ``--json`` file). Nothing when
    ``sys.stdout`` is not a ``GuardedStream`` (a test's capture) or stdout's reader went
    away (a broken pipe prints no line)."""
    if isinstance(sys.stdout, GuardedStream):
        earlier = sys.stdout.written
        if earlier is None:
            sys.stdout.written = text
        elif text not in earlier.split("; "):
            sys.stdout.written = f"{earlier}; {text}"


@contextlib.contextmanager
def one_write() -> Iterator[None]:
    """What the block prints on ``sys.stdout`` collected and written, when it ends
    (raising or not), in one write: a command's end text (a script's table) reaches a
    pipe whole, so a reader that reads once and leaves (``| head -1``) takes all of it
    and the command exits 0, buffered or not (``PYTHONUNBUFFERED=1``), as a run's end
    does; several writes could come after it left (exit 141)."""
    held = io.StringIO()
    try:
        with contextlib.redirect_stdout(held):
            yield
    finally:
        text = held.getvalue()
        if text:
            sys.stdout.write(text)
            sys.stdout.flush()


def closed_stdout_refusal(lost: str, kept: Optional[str]) -> Optional[str]:
    """The refusal of a command whose stdout was closed at start (``>&-``: ``sys.stdout``
    a ``GuardedStream`` with ``closed_at_start``), given before it does anything:
    ``stdout is closed (>&-): LOST would go nowhere; send it to a file, or to /dev/null
    to keep KEPT alone`` (``lost``: what it prints, ``the run's tables``; ``kept``: what
    it writes besides, ``the run folder``; ``None``: nothing, and the line ends ``send
    it to a file``). ``None`` when stdout was open."""
    if not getattr(sys.stdout, "closed_at_start", False):
        return None
    line = f"stdout is closed (>&-): {lost} would go nowhere; send it to a file"
    return line if kept is None else f"{line}, or to /dev/null to keep {kept} alone"


def _open_std_fds() -> None:
    """Open ``/dev/null`` on each of descriptors 0, 1, 2 that is closed."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)  # the lowest free descriptor: ``fd``
            if null != fd:
                os.dup2(null, fd)
                os.close(null)


class Console:
    """The guarded ``sys.stdout`` and ``sys.stderr`` of one command (see the module
    docstring)."""

    def __init__(self) -> None:
        self.saved = (sys.stdout, sys.stderr)
        self.stdout = GuardedStream(sys.stdout, 1)
        self.stderr = GuardedStream(sys.stderr, 2)

    @classmethod
    def install(cls) -> "Console":
        """Open ``/dev/null`` on closed descriptors 0-2 and put guarded streams in
        ``sys.stdout`` / ``sys.stderr``; ``restore`` undoes the latter."""
        _open_std_fds()
        console = cls()
        sys.stdout, sys.stderr = console.stdout, console.stderr
        return console

    def restore(self, code: int, prog: str) -> int:
        """Flush, put the original streams back; the exit code for ``code`` given what
        happened to stdout (see the module docstring)."""
        self.stdout.flush()
        error = self.stdout.error
        failure = stdout_failure(self.stdout)
        if failure is not None:
            written = f"; {self.stdout.written}" if self.stdout.written else ""
            print(f"{prog}: error: {failure}{written}", file=self.stderr)
        self.stderr.flush()
        sys.stdout, sys.stderr = self.saved
        if error is None or code != 0:
            return code
        return EXIT_BROKEN_PIPE if error.errno == errno.EPIPE else 1


def script_main(prog: str, main: Callable[[], Optional[int]], lost: str = "its output",
                kept: Optional[str] = None) -> int:
    """The exit code of a script of ``scripts/`` (``sys.exit(script_main(PROG, main))``):
    ``main()`` run under ``Console``, as ``bench.py``'s commands are, so that stdout that
    fails ends as ``bench.py``'s does: ``PROG: error: cannot write to stdout: REASON``
    (with what was written elsewhere: ``written_elsewhere``) and exit 1; a reader that
    went away (``| head``) exit 141 and no line; ``--help`` the same. ``main``'s
    ``SystemExit`` gives its code (``None``: 0); one with a message (``write_output``'s
    line) prints it on stderr and gives 1, as Python does. stdout closed at start
    (``>&-``) is refused before ``main`` runs, as ``bench.py run`` refuses it:
    ``PROG: error: stdout is closed (>&-): LOST would go nowhere; send it to a file[, or
    to /dev/null to keep KEPT alone]`` (``closed_stdout_refusal``), exit 2. A case
    that failed in ``main`` (``run_case`` raised ``CaseError``: a runner killed, one
    that stopped answering) is one line and exit 1, as ``bench.py`` gives it, not a
    traceback (``failure_line``); any other exception (a bug) is raised as it was."""
    console = Console.install()
    code = 1
    try:
        refusal = closed_stdout_refusal(lost, kept)
        if refusal is not None:
            print(f"{prog}: error: {refusal}", file=sys.stderr)
            code = 2
        else:
            code = main() or 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except Exception as exc:
        failure = failure_line(prog, exc)
        if failure is None:  # a bug: its traceback
            raise
        print(failure[0], file=sys.stderr)
        code = failure[1]
    finally:
        code = console.restore(code, prog)
    return code


#: The exceptions of a case or a step that failed, whose message is its one line, as
#: ``bench.py`` gives it (``execute._Run._failed``): (module, class, exit code). Looked
#: up in ``sys.modules``, not imported: an exception can only be one of them once its
#: module is loaded, and a script that failed for another reason (a bug) imports
#: nothing more (``zmq``, ``numpy``) on its way to the traceback.
FAILURES = (("ipc_bench.harness.spec", "CaseError", 1),
            ("ipc_bench.wire.transport", "EndpointError", 2),
            ("ipc_bench.engine.scheduler", "SchedulerError", 1),
            ("ipc_bench.engine.config", "ConfigError", 1))


def failure_line(prog: str, exc: BaseException, case: Optional[str] = None
                 ) -> Optional[tuple[str, int]]:
    """The line and exit code of a script whose ``main`` raised ``exc``, as
    ``bench.py`` ends a case that raised it: for a failed case (``FAILURES``: a
    ``CaseError``, ``runner process 4242 was killed by SIGKILL, noticed while waiting
    for ModelRunnerOutput for step 1185``) ``PROG: error: MESSAGE`` and 1 (2 for
    sockets that could not be set up, ``EndpointError``, and for a message naming the
    file-descriptor limit, ``errors.names_fd_limit``); for a process out of file
    descriptors (``errors.out_of_fds``) ``PROG: error: `` and
    ``errors.fd_shortage_text``'s line, 2; at another resource limit (a thread that
    could not start, ``MemoryError``) ``errors.resource_shortage_text``'s line, 1.
    ``case``: the case that raised it, named before the message as ``bench.py`` names
    its failed case (``PROG: error: CASE: MESSAGE``, ``CASE`` a ``CaseSpec.case_id``,
    ``num_running=64/send/msgpack#0``, and what else tells it apart). ``None`` for
    any other exception: a bug, whose traceback is worth more than a line."""
    from ipc_bench.errors import (fd_shortage_text, names_fd_limit, one_line, out_of_fds,
                                  resource_shortage_text)

    where = "" if case is None else f"{case}: "
    for module, name, code in FAILURES:
        cls = getattr(sys.modules.get(module), name, None)
        if isinstance(cls, type) and isinstance(exc, cls):
            message = str(exc)
            return (one_line(f"{prog}: error: {where}{message}"),
                    2 if names_fd_limit(message) else code)
    if out_of_fds(exc):
        return one_line(f"{prog}: error: {where}{fd_shortage_text(exc)}"), 2
    shortage = resource_shortage_text(exc)
    if shortage is not None:
        return one_line(f"{prog}: error: {where}{shortage}"), 1
    return None


def write_output(path, text: str, prog: str, note: str) -> None:
    """Write ``text`` to the file ``path`` (a script's ``--json``) and keep ``note``
    (``the rows are in PATH``) for a stdout that fails afterwards (``written_elsewhere``).
    A file is written whole or not at all (``_replace_file``): a write that fails leaves
    the earlier file, if any, as it was and no partial one. A path that names one of
    this process's descriptors (``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``,
    ``/proc/self/fd/N``) or the file its stdout or stderr is open on (``--json out.txt
    > out.txt``) is written through that descriptor, after what was printed to it, at
    its current position (``_own_descriptor``): replacing it would have thrown away the
    file the shell opened (``--json /dev/stdout > out.txt`` left only the JSON in
    out.txt); a device or FIFO (``/dev/full``) is written in place, never truncated. A
    write that fails (disk full: ``--json /dev/full``) raises ``SystemExit`` with the
    line ``PROG: error: cannot write PATH: REASON`` (``script_main``: on stderr, exit
    1). A path that names stdout or stderr once that stream failed (``--json
    /dev/stdout > /dev/full``: its descriptor then points at ``/dev/null``) is not
    written: for stdout ``note`` becomes ``the rows were not written either (--json is
    stdout)`` (``_not_written``), which ends stdout's line (``PROG: error: cannot write
    to stdout: REASON; ...``, exit 1); for stderr, ``SystemExit`` with ``PROG: error:
    cannot write PATH: REASON (--json is stderr, which failed)``, exit 1 (the line is
    lost with stderr; the exit code says it)."""
    try:
        fd = _own_descriptor(path)
        if fd is not None:
            for stream in (sys.stdout, sys.stderr):  # what they printed comes first
                if stream is not None:
                    try:
                        stream.flush()
                    except (OSError, ValueError):
                        pass
            failed = _failed_stream(fd)
            if failed is not None:
                if failed is sys.stdout:
                    written_elsewhere(_not_written(note, "stdout"))
                    return
                raise OSError(failed.error.errno,
                              f"{failed.error.strerror or failed.error} "
                              "(--json is stderr, which failed)")
            with open(fd, "w", closefd=False) as out:
                out.write(text)
        elif _exists_not_regular(path):  # opened as given: a device, never truncated
            with open(path, "a") as out:
                out.write(text)
        else:  # a link's target is replaced, not the link
            _replace_file(os.path.realpath(path), text)
    except OSError as exc:
        raise SystemExit(f"{prog}: error: cannot write {path}: {exc.strerror or exc}") from None
    written_elsewhere(note)


def replaced_whole(path) -> bool:
    """Whether ``write_output`` replaces ``path`` as a whole: a regular file, or none yet,
    that is not open as this process's stdout or stderr. Only such a path may be written
    more than once in a run (a script's rows so far, then all of them), each write
    superseding the last; a descriptor, pipe or device (``--json /dev/stdout``, ``>
    out.txt``) keeps every write, so it is written once, at the end. Raises nothing."""
    return _own_descriptor(path) is None and not _exists_not_regular(path)


def _failed_stream(fd: int) -> Optional[GuardedStream]:
    """``sys.stdout`` or ``sys.stderr`` when it is a ``GuardedStream`` on descriptor
    ``fd`` whose write failed (the descriptor now points at ``/dev/null``); else
    ``None``."""
    for stream in (sys.stdout, sys.stderr):
        if (isinstance(stream, GuardedStream) and stream.fd == fd
                and stream.error is not None):
            return stream
    return None


def _not_written(note: str, name: str) -> str:
    """``write_output``'s ``note`` (``the rows are in PATH``) turned into what a failed
    ``name`` (``stdout``) cost: ``the rows were not written either (--json is
    stdout)``."""
    import re

    said = re.match(r"(.+?) (are|is) in ", note)
    what = said.group(1) if said else "the output"
    verb = "was" if said and said.group(2) == "is" else "were"
    return f"{what} {verb} not written either (--json is {name})"


def _own_descriptor(path) -> Optional[int]:
    """The descriptor of this process that ``path`` names, or ``None``: 1 for
    ``/dev/stdout``, 2 for ``/dev/stderr``, N for ``/dev/fd/N`` and ``/proc/self/fd/N``
    (``/proc/PID/fd/N`` of this process's id too), and 1 or 2 for any other path to the
    file or pipe that stdout or stderr is open on (``os.path.samestat``). Writing
    through it goes on where the process's own writes left off (a file the shell opened
    with ``>`` or ``>>``); opening the path anew would truncate it or replace it."""
    import re

    text = os.fspath(path)
    named = re.fullmatch(r"/dev/(stdout|stderr)|/dev/fd/(\d+)|/proc/(?:self|(\d+))/fd/(\d+)",
                         os.path.normpath(text) if text.startswith("/") else text)
    if named:
        if named.group(1):
            return 1 if named.group(1) == "stdout" else 2
        if named.group(2):
            return int(named.group(2))
        if named.group(3) is None or int(named.group(3)) == os.getpid():
            return int(named.group(4))
    try:
        target = os.stat(text)
    except OSError:
        return None
    for fd in (1, 2):
        try:
            if os.path.samestat(target, os.fstat(fd)):
                return fd
        except OSError:
            continue
    return None


def _exists_not_regular(path) -> bool:
    """Whether ``path`` (links followed) is there and not a regular file: a device, a
    pipe, a folder."""
    import stat

    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _replace_file(path: str, text: str) -> None:
    """Write ``text`` to ``.NAME.PID.tmp`` beside the regular file ``path`` (made with
    ``path``'s permissions where it exists, else as a new file is) and rename it over
    ``path``; the temporary file is removed whatever stops the write (``OSError``,
    a signal). A folder that cannot take a new file (no write permission) has ``path``
    written in place, as before."""
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.tmp")
    try:
        if os.path.lexists(tmp):  # left by a killed process of the same id
            os.unlink(tmp)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except PermissionError:
        with open(path, "w") as out:
            out.write(text)
        return
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
        if os.path.exists(path):
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def interruptible(prog: str, work: Callable[[], Optional[int]]) -> int:
    """``work()`` under ``signals.run_command``, for a script that blocked
    ``signals.HANDLED`` in its first statements: one that arrived before (kept pending by
    the block) or while ``work`` runs ends it with one line on stderr, ``PROG:
    interrupted by SIGINT (exit 130)``, and 130 / 143 / 129. Returns ``work()``'s code
    (``None``: 0), or that code. The script exits once this returns (pyperf's scripts
    read ``sys.argv``: they run as commands only), so a signal leaves further ones
    ignored on its way out, as ``bench.py``'s (``run_command``'s ``exiting``)."""
    from ipc_bench.harness import signals

    return signals.run_command(
        lambda: None, lambda _: work() or 0,
        lambda exc, _: exc.line(prog),
        exiting=True)


def pyperf_staged(prog: str, args, work: Callable[[], Optional[int]]) -> int:
    """Run ``work()`` (the ``bench_func`` calls of a ``pyperf.Runner`` whose parsed
    options are ``args``) so that its ``-o`` / ``--append`` files are written whole or
    not at all: pyperf writes to ``.NAME.PID.tmp`` beside each (an ``--append`` file
    that exists copied there first), renamed over the real path (a link's target)
    only once ``work`` returned. SIGINT / SIGTERM / SIGHUP (``interruptible``; the
    script blocked them in its first statements, so one that came during its start is
    raised here) stop pyperf's worker (pyperf kills it), remove the temporary files,
    leave an ``--append`` file as it was and no ``-o`` file, and give one line on
    stderr, ``PROG: interrupted by SIGINT (exit 130)``, and 130 / 143 / 129; another
    exception removes them too and is raised. A worker that fails (pyperf's
    ``RuntimeError``: ``python failed with exit code -9``) is one line instead,
    ``PROG: error: pyperf's worker process 4242 for benchmark 'NAME' was killed by
    SIGKILL; nothing was written to FILE`` (``SystemExit``: exit 1). pyperf's workers
    start with SIGINT ignored (a Ctrl-C reaches the whole process group; a worker still
    importing would print a traceback, one running would print pyperf's own line) and
    die with the main process (SIGKILL; one started as the signal came is killed so,
    not by pyperf): ``_worker_popen``. A signal that arrived in a finalizer (kept
    pending) ends the run after its last benchmark, still with no file written. In a
    worker (``args.worker``) the signals its start blocked are let through again (the
    mask it was started with: the main process starts workers with them unblocked)
    and ``work()`` runs as it is. Returns ``work()``'s code (``None``: 0), or 130 /
    143 / 129."""
    import shutil

    import pyperf._manager
    import pyperf._runner

    from ipc_bench.harness import signals

    if args.worker:
        signals.unblock()
        return work() or 0
    staged = []  # (temporary path, real path)
    workers: dict = {}  # the last worker started (proc), the benchmark running (name)
    manager_subprocess = pyperf._manager.subprocess
    pyperf._manager.subprocess = _worker_popen(manager_subprocess, workers)
    runner_main = pyperf._runner.Runner._main
    pyperf._runner.Runner._main = _naming_main(runner_main, workers)

    def run() -> int:
        for attr in ("output", "append"):
            path = getattr(args, attr, None)
            if path is None:
                continue
            real = os.path.realpath(path)
            folder, name = os.path.split(real)
            tmp = os.path.join(folder, f".{name}.{os.getpid()}.tmp")
            if os.path.lexists(tmp):  # left by a killed process of the same id
                os.unlink(tmp)
            staged.append((tmp, real, attr, path))
            if attr == "append" and os.path.exists(real):
                shutil.copy2(real, tmp)
            setattr(args, attr, tmp)
        try:
            code = work() or 0
        except RuntimeError as exc:
            line = _worker_failure(prog, exc, workers, staged)
            if line is None:
                raise
            raise SystemExit(line) from None
        signals.raise_pending()  # one that arrived in a finalizer: no file either
        with signals.deferred():
            for tmp, real, _, _ in staged:
                if os.path.exists(tmp):
                    os.replace(tmp, real)
        return code

    try:
        return interruptible(prog, run)
    finally:
        pyperf._manager.subprocess = manager_subprocess
        pyperf._runner.Runner._main = runner_main
        for tmp, _, _, _ in staged:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _naming_main(runner_main, workers: dict):
    """pyperf's ``Runner._main`` (one benchmark: ``task.name``), noting the name of
    the benchmark it runs at ``workers["name"]`` for ``_worker_failure``."""
    def main(self, task):
        workers["name"] = task.name
        return runner_main(self, task)

    return main


def _worker_failure(prog: str, exc: RuntimeError, workers: dict, staged: list
                    ) -> Optional[str]:
    """The line of a pyperf worker that failed (``exc``: pyperf's ``RuntimeError``,
    ``/usr/bin/python3 failed with exit code -9``, for the worker ``workers["proc"]``, a
    ``Popen``, that ran the benchmark ``workers["name"]``): ``PROG: error: pyperf's worker
    process 4242 for benchmark 'NAME' was killed by SIGKILL`` (``exited 1``: its own
    error printed above), then what became of each ``-o`` / ``--append`` file
    (``staged``: (temporary path, real path, option, path given)): ``nothing was
    written to FILE`` / ``FILE is as it was``. ``None`` for another ``RuntimeError``
    (a bug: its traceback)."""
    from ipc_bench.errors import one_line
    from ipc_bench.harness.signals import child_ended

    proc = workers.get("proc")
    code = None if proc is None else proc.returncode
    if not code or str(exc) != f"{proc.args[0]} failed with exit code {code}":
        return None
    name = f" for benchmark {workers['name']!r}" if "name" in workers else ""
    line = f"{prog}: error: pyperf's worker process {proc.pid}{name} {child_ended(code)}"
    for _, _, attr, path in staged:
        line += (f"; nothing was written to {path}" if attr == "output"
                 else f"; {path} is as it was")
    return one_line(line)


def _worker_popen(subprocess_module, workers: dict):
    """``subprocess`` as pyperf's ``Manager`` uses it (``subprocess.Popen``), its
    ``Popen`` starting each worker with SIGINT ignored and SIGKILLed when its parent
    dies (``signals.set_parent_death_signal``, Linux), the last one started kept at
    ``workers["proc"]``."""
    import types

    from ipc_bench.harness import signals

    def preexec() -> None:  # in the child, between fork and exec
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signals.set_parent_death_signal()

    def popen(*args, **kwargs):
        proc = subprocess_module.Popen(*args, preexec_fn=preexec, **kwargs)
        workers["proc"] = proc
        return proc

    shim = types.SimpleNamespace(**vars(subprocess_module))
    shim.Popen = popen
    return shim
