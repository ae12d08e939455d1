"""Command line: ``python bench.py [COMMAND] ...``, one argparse parser per command.

- run (the default, no command word): ``python bench.py --scenario NAME [options]``,
  and ``python bench.py --list`` (``ipc_bench.cli.run``; options in
  ``ipc_bench.cli.options``, the cases run by ``ipc_bench.cli.execute``);
- ``python bench.py report RUN_DIR [RUN_DIR ...] [--output DIR] [--baseline RUN_DIR] [--no-figures]``
  (``ipc_bench.cli.report``);
- ``python bench.py microbench RUN_DIR [options]`` (``ipc_bench.cli.microbench``);
- ``python bench.py runner --connect tcp://SCHEDULER:PORT`` (``ipc_bench.cli.runner``): a
  runner started by hand on another host for a run with ``--remote-runners``.

Exit codes: 0 success; 1 a case failed (the runner died, hung or broke the protocol;
the error line says which process, how and at which step), a case counted no step
(every step in its warm-up; not a timed replay: ``analysis.summary.no_step_counted``;
its results kept) or
the token streams of two cases differ (the correctness oracle), or a file could not be
written once the command started (a run's results, a report's files: disk full); 2 bad
input (one line on stderr, no traceback, starting ``PROG: error:``, PROG ``bench.py``
or ``bench.py report`` ...);
130 / 143 / 129 interrupted by SIGINT / SIGTERM / SIGHUP: the runner is killed at
once, the rows measured so far are written (the interrupted case marked
``complete: false``) and ``summary.json`` says ``incomplete``; 141 only when a write to
stdout came after its reader went away (``| head``: the results are complete,
``ipc_bench.cli.console``); 0 where every write reached the pipe before it left, as an
output smaller than the pipe buffer (64 KiB on Linux) usually does (timing-dependent).

Every number has a range and every setting is checked before a process starts, so
bad input never surfaces as a traceback or a hang half-way through a run. Signals:
``bench.py`` blocks them in its first statement; ``main`` installs the handlers,
imports the command and the C extensions it loads later, then lets a pending signal
through (``ipc_bench.harness.signals``), so an interrupt at any moment of the start
ends with its exit code and one line.
"""

from __future__ import annotations

import sys
import threading
from typing import Callable, Optional, Sequence

from ipc_bench import errors
from ipc_bench.cli.command_line import (ArgumentsError, arguments, command_folder,
                                        command_words, recording)
from ipc_bench.cli.console import Console
from ipc_bench.harness import signals
from ipc_bench.harness.signals import Interrupted

Command = Callable[[list[str]], int]


# Each loader imports a command's module and the modules with C extensions it would
# import lazily, before signals are let through (see ``main``), and returns its main;
# report's (pandas, scipy, matplotlib) are imported once its run folders are checked,
# with the signals blocked all the same (``document._libraries``,
# ``signals.blocked``), so that a folder that is no run folder is refused
# without them.

def _run() -> Command:
    one_blas_thread()
    import ipc_bench.cli.execute  # noqa: F401  (msgspec, zmq, numpy, psutil, pyperf)
    from ipc_bench.cli.run import main as run_main

    return run_main


#: ``errors.one_blas_thread`` and the variables it reads, under the names the commands
#: and their tests use.
BLAS_THREAD_VARIABLES = errors.BLAS_THREAD_VARIABLES
one_blas_thread = errors.one_blas_thread


#: ``bench.py report``'s name for ``one_blas_thread``.
report_blas_threads = one_blas_thread


def _report() -> Command:
    one_blas_thread()
    from ipc_bench.cli.report import main as report_main

    return report_main


def _microbench() -> Command:
    one_blas_thread()
    import pyperf  # noqa: F401

    from ipc_bench.cli.microbench import main as microbench_main

    return microbench_main


def _runner() -> Command:
    one_blas_thread()
    import msgspec  # noqa: F401
    import zmq  # noqa: F401

    import ipc_bench.harness.remote_runner  # noqa: F401
    from ipc_bench.cli.runner import main as runner_main

    return runner_main


#: Command words after ``bench.py`` -> their loaders; anything else on the command
#: line is the run command's options (``_run``).
COMMANDS: dict[str, Callable[[], Command]] = {
    "microbench": _microbench,
    "report": _report,
    "runner": _runner,
}


def _interrupted_line(exc: Interrupted, prog: str, report_argv: Optional[list[str]]) -> str:
    """``PROG: interrupted by SIGINT (exit 130)`` (``Interrupted.line``);
    ``report_argv``: the arguments of a ``bench.py report`` stopped before it started,
    whose line also says whether an earlier report is untouched
    (``ipc_bench.cli.report.interrupted_line``; its module is loaded by then, as the
    signals are let through only once it is)."""
    if report_argv is not None:
        from ipc_bench.cli.report import interrupted_line

        return interrupted_line(exc, report_argv)
    return exc.line(prog)


def _arguments(argv: Optional[Sequence[str]]) -> tuple[list[str], list[str], Optional[str]]:
    """``main``'s arguments (``argv`` read once: ``command_line.arguments``, which raises
    ``ArgumentsError``; ``sys.argv[1:]`` where ``None``), the command line a run records
    and the folder it records with it (``command_line``)."""
    given = None if argv is None else arguments(argv)
    return (list(sys.argv[1:]) if given is None else given, command_words(given),
            command_folder())


def main(argv: Optional[Sequence[str]] = None, *, exiting: bool = False) -> int:
    """Entry point of ``bench.py``; returns the exit code. ``argv``: the arguments after
    ``bench.py`` (``None``: ``sys.argv[1:]``), any iterable (read once) of texts and
    paths (``os.PathLike``, taken as ``os.fspath`` gives them); anything else (an
    ``int``, bytes, one text for the list) does nothing but print ``bench.py: error:
    cli.main takes str arguments (or paths): argument 5 is int 3`` (or the like) and
    return 2 (``command_line.arguments``). A run records ``bench.py``'s absolute path,
    them and the folder it ran in as its command line (``metadata.command_line`` and
    ``cwd``), ``sys.argv`` itself where ``None`` (``command_line``). Guards stdout and
    stderr (``console.Console``), turns SIGINT / SIGTERM / SIGHUP into ``Interrupted`` (one
    line, exit 130 / 143 / 129) and restores both when the command ends: the caller's
    ``sys.stdout`` / ``sys.stderr``, signal handlers, signal mask and
    ``sys.unraisablehook`` are back when it returns, so that it can be called again in
    the same process (a notebook, a script) and each call can be interrupted. A signal
    until the command has returned, its very start included, gives its one line and
    exit code, a later one leaves it alone (``signals.finish``); one the caller's own
    SIGINT handler turned into ``KeyboardInterrupt`` before the call's handlers were in
    counts as SIGINT (130). One the caller ignores (``SIG_IGN``) stays ignored, and one
    it blocks (``signal.pthread_sigmask``) stays blocked, its handler untouched, during
    the call and after it: one pending, or arriving meanwhile, stays pending for it.

    ``exiting``: the process exits once this returns (``bench.py``): after a signal,
    further ones stay ignored (``SIG_IGN``) instead of the handlers being put back, so
    that a repeated Ctrl-C during its exit prints no traceback and a late SIGTERM
    cannot change its exit code (``signals.restore``); and SIGINT / SIGTERM / SIGHUP
    found blocked are ``bench.py``'s own start-up block, which this call lifts once its
    handlers are in, not a caller's (``signals.install``'s ``keep_blocked``).

    Must be called from the main thread: Python lets only the main thread set signal
    handlers, and a run's child processes are tied to the thread that starts them
    (``signals.set_parent_death_signal``). From another thread it does nothing but
    print ``PROG: error: cli.main must be called from the main thread ...`` (naming the
    thread) on stderr and return 2."""
    try:
        argv, words, cwd = _arguments(argv)
    except ArgumentsError as exc:
        print(f"bench.py: error: {exc}", file=sys.stderr)
        return 2
    word = argv[0] if argv and argv[0] in COMMANDS else None
    prog = f"bench.py {word}" if word else "bench.py"
    if threading.current_thread() is not threading.main_thread():
        print(f"{prog}: error: cli.main must be called from the main thread, where Python "
              f"lets it handle SIGINT / SIGTERM / SIGHUP (called from thread "
              f"{threading.current_thread().name!r})", file=sys.stderr)
        return 2
    console: Optional[Console] = None
    old_handlers: Optional[dict] = None
    code = 1
    returned = False
    try:
        console = Console.install()
        old_handlers = signals.install(keep_blocked=not exiting)
        command = COMMANDS[word]() if word else _run()
        signals.unblock()  # one that arrived since install() is raised here
        with recording(words, cwd):
            code = command(argv[1:] if word else argv)
        returned = True
        signals.finish()  # a dropped one is raised; a later one leaves the code alone
    except Interrupted as exc:
        if not exc.reported:  # a case interrupted has said so in its own line
            print(_interrupted_line(exc, prog, argv[1:] if word == "report" and not returned
                                    else None), file=sys.stderr)
        code = exc.code
    except KeyboardInterrupt:
        if old_handlers is not None:  # not a signal: raised by the command itself
            raise
        # the caller's SIGINT handler, before install's took over (install undid itself)
        print(_interrupted_line(Interrupted(130), prog,
                                argv[1:] if word == "report" else None), file=sys.stderr)
        code = 130
    except SystemExit as exc:  # --help
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    finally:
        try:
            if old_handlers is not None:
                signals.restore(old_handlers, ignore_after_signal=exiting)
        finally:
            if console is not None:
                code = console.restore(code, prog)
    return code
