"""``python bench.py report RUN_DIR [RUN_DIR ...] [--output DIR] [--baseline RUN_DIR]
[--no-figures]``: render run folders into a report (``ipc_bench.report.document.write_report``;
``--no-figures`` draws no figure and writes no PNG, a note where they would be; the
side-by-side ratio columns divide by the ``--baseline`` run, default the first, and
the other runs' environment differences are stated against it). Bad
input (a ``--baseline`` that is not one of the run folders given, a missing
folder, not a run folder, one the system will not look up: ``cannot read run folder
PATH: REASON``, a summary.json that is not a file or not a JSON object, an unsupported
result format, a run folder given twice or a copy of another one given, a summary
with no case left: ``results.load``) or
an output that cannot be made or replaced (read-only, under a file or a link loop, a
name over 255 bytes, an earlier folder that cannot be renamed aside, immutable say:
``cannot write PATH: REASON``, and, where the default ``RUN_DIR/report`` was
refused for its permissions or a read-only file system, ``; write it elsewhere with
--output DIR``) is one line on stderr and exit code 2; a
report file that cannot be written once its folder is made (disk full: ``cannot write
PATH: REASON``, the file that failed; a write the file-size limit refused names it,
``File too large (the file-size limit, ulimit -f 100: 100 KiB a file)``, as a run's
line does: ``errors.file_size_text``) is one line and exit code 1, as a run whose
results cannot be written; running out of file descriptors (``EMFILE``) other than in
a report file's write (a library's module read as it is imported: ``ulimit -n 5``) is
one line naming the limit, ``too many open files (ulimit -n 5): raise it (e.g. ulimit
-n 1024) and run again`` (``errors.fd_shortage_text``), exit code 2, naming no file of
the library's; either way nothing is written or changed (the temporary
folder it wrote into removed, or, where that fails, named at the end of the line: ``;
the temporary folder DIR could not be removed: REASON``). A report into an
output folder another report is writing (its lock, ``document.output_lock``) is
refused, ``output folder DIR is being written by another report still going; give
another --output, or run this one again once it ends``, exit code 2; one holding it
removes what a report killed with SIGKILL left beside the folder (``.NAME.tmp-*``,
``.NAME.old-*``, restoring the earlier report where the folder is missing), a warning
line each (``document.clear_leftovers``); an ``--output`` that is the current folder
or holds it (``.``, ``$PWD``) is refused, one line naming why, exit code 2; one that
replaced an earlier report of other runs (by name, or a run of the same name its
metadata tells apart) says so on stderr, ``bench.py report: replaced the
earlier report of RUN in DIR`` (``document.EarlierReportReplaced``). stdout closed
at start (``>&-``) is refused once the options are parsed, before anything is read or
written, as a run is (``console.closed_stdout_refusal``: ``stdout is closed (>&-): the
line naming the report would go nowhere; send it to a file, or to /dev/null to keep
the report alone``), exit code 2. Every line is
one line (a line break in a path escaped, ``errors.one_line``);
a file cut short or a hand edit no run writes is one warning line on stderr (and a
note in the report; one hand edit repeated in several cases is one line, its first
case's, naming how many others and the first two: ``results.grouped_warnings``), and
the report covers what is
valid; so is a run that shares no
case (workload, arm and codec) with the reference run, whose side-by-side rows then
have no ratio (``blocks.NothingShared``: what differs and how to compare them, as the
report says over its side-by-side tables); SIGINT / SIGTERM / SIGHUP
end it with one line and 130 / 143 / 129 (``ipc_bench.cli.main``), which says, where
an earlier report is in the output folder, that it is untouched (``bench.py report:
interrupted by SIGINT; the earlier report in RUN_DIR/report is untouched (exit 130)``:
the report is written all or nothing), and where the signal came while the report was
being written, which is then finished first, that it was (``; the report was written
before it stopped: PATH/report.html``). On success it
prints ``report: PATH/report.html`` (after a warning line for each run folder still
read as still running: ``Results.still_running``, as the report says, whatever the run
did after it was read), PATH spelt as ``document.write_report`` returns it
(relative when the first run folder was given relative, for one run and several), a
line break in it escaped as in the error lines; a stdout that fails then (``>
/dev/full``) is ``bench.py report: error: cannot write to stdout: REASON; the report is
in PATH/report.html``, exit code 1 (``console.written_elsewhere``: the report was
written all the same)."""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import sys
import warnings
from pathlib import Path
from typing import Iterator, Optional, Sequence

from ipc_bench.analysis.results import RunStatusWarning
from ipc_bench.analysis.run_files import ResultsError, ResultsWarning
from ipc_bench.cli.command_line import recorded, recorded_cwd
from ipc_bench.cli.console import closed_stdout_refusal, one_write, written_elsewhere
from ipc_bench.cli.once import OnceParser
from ipc_bench.cli.options import nonempty_path
from ipc_bench.errors import fd_shortage_text, file_size_text, one_line, out_of_fds, path_word
from ipc_bench.harness.signals import Interrupted
from ipc_bench.errors import command_shell_line
from ipc_bench.report.document import (EarlierReportReplaced, WriteFailed,
                                       earlier_report_files, output_path,
                                       write_report)

#: The command as its lines name it (``PROG: error: ...``, as the run's ``bench.py:``).
PROG = "bench.py report"


class _Parser(OnceParser):
    path_positionals = True  # report -x: "given as ./-x"

    def error(self, message: str):
        raise ResultsError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description=(
        "Render run folders into report.md and a self-contained report.html with "
        "figures (PNG beside them), findings, tables, configuration and environment; "
        "two or more runs are compared side by side."))
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", type=nonempty_path("folder"),
                   help="run folder(s)")
    p.add_argument("--output", metavar="DIR", type=nonempty_path("folder"),
                   help="report folder (default: RUN_DIR/report, or report-<time> beside "
                        "the first run for several, or for one still going)")
    p.add_argument("--baseline", metavar="RUN_DIR", type=nonempty_path("folder"),
                   help="the run, one of RUN_DIR, that the side-by-side ratio columns "
                        "divide by and the other runs' environment differences are stated "
                        "against (default: the first)")
    p.add_argument("--no-figures", dest="figures", action="store_false",
                   help="draw no figure and write no PNG (the report says so where they "
                        "would be): the tables and findings alone, in a fraction of the time")
    return p


def _earlier_report(args: argparse.Namespace) -> Optional[Path]:
    """The folder of an earlier report that this one would replace: ``--output``, or
    ``RUN_DIR/report`` of a single run, where it is a folder holding a report's files
    (``document.earlier_report_files``); ``None`` otherwise (several runs without
    ``--output`` get a new ``report-<time>`` folder)."""
    folder = output_path(args.output) if args.output else \
        Path(args.run_dirs[0]) / "report" if len(args.run_dirs) == 1 else None
    try:
        return folder if folder is not None and folder.is_dir() \
            and earlier_report_files(folder) else None
    except OSError:  # cannot be read: nothing said about it
        return None


def interrupted_line(exc: Interrupted, argv: Sequence[str],
                     written: Sequence[Path] = ()) -> str:
    """The one line of a SIGINT / SIGTERM / SIGHUP (``exc``) that stopped ``bench.py
    report ARGV`` before it had returned (``Interrupted.line``): ``bench.py report:
    interrupted by SIGINT (exit 130)``, with ``; the earlier report in DIR is
    untouched`` before ``(exit 130)`` where there is one
    (``_earlier_report``: the report is written all or nothing, ``document.write_folder``,
    so one stopped before it wrote changed nothing), or, where the signal came while the
    report was written (``written``, which ``write_report`` fills once it is in place:
    it finishes first), ``; the report was written before it stopped:
    DIR/report.html``. ``bench.py``'s ``main`` asks for it too when the signal came
    before the command started (options that do not parse: no note)."""
    if written:
        return exc.line(PROG, "the report was written before it stopped: "
                        f"{written[0] / 'report.html'}")
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # --help would print its text
            args = build_parser().parse_args(list(argv))
    except (ResultsError, SystemExit):
        return exc.line(PROG)
    earlier = _earlier_report(args)
    return exc.line(PROG, "" if earlier is None else
                    f"the earlier report in {earlier} is untouched")


@contextlib.contextmanager
def _interrupt_line(argv: Sequence[str], written: list) -> Iterator[None]:
    """Print ``interrupted_line`` of a signal that stops the block and mark the
    ``Interrupted`` reported (``bench.py`` prints no line of its own then)."""
    try:
        yield
    except Interrupted as exc:
        print(interrupted_line(exc, argv, written), file=sys.stderr)
        exc.reported = True
        raise


def main(argv: Sequence[str]) -> int:
    """``bench.py report`` entry point; returns the exit code: 0, 2 on bad input, 1 when
    a report file cannot be written (``document.WriteFailed``). Each error or warning
    is one line (``errors.one_line``: a line break in a path is escaped); so is an
    interrupt once the options are parsed (``_interrupt_line``)."""
    try:
        args = build_parser().parse_args(list(argv))
    except ResultsError as exc:
        print(f"{PROG}: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    written: list = []
    with _interrupt_line(argv, written):
        return _report(args, argv, written)


def _rendered_by(argv: Sequence[str]) -> str:
    """The command the report's ``Rendered ... by`` line names, ``bench.py report``'s
    ``argv`` (the arguments after ``report``) as the run's ``- command:`` line gives a
    run's (``errors.command_shell_line``): ``cd CWD && python SCRIPT report ARGV``, quoted
    where a shell needs it, which renders it again from any folder; ``SCRIPT`` is
    ``bench.py`` as ``cli.main`` names it (``command_line.recorded``: ``sys.argv[0]``
    as typed, ``command_line.SCRIPT``, the absolute path, in-process) and ``CWD`` the
    folder it runs in (``recorded_cwd``). Outside ``cli.main``, or where its folder
    was gone, ``python bench.py report ARGV`` alone."""
    words = recorded()
    return command_shell_line([words[0] if words else "bench.py", "report", *argv],
                       recorded_cwd())


def _report(args: argparse.Namespace, argv: Sequence[str], written: list) -> int:
    """``main``'s work once the options are parsed (``written``: ``write_report``'s)."""
    try:
        refusal = closed_stdout_refusal("the line naming the report", "the report")
        if refusal is not None:  # refused before anything is written, as a run is
            raise ResultsError(refusal)
        running: list = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResultsWarning)
            out = write_report(args.run_dirs, args.output,
                               command=_rendered_by(argv),
                               baseline=args.baseline, figures=args.figures,
                               running=running, written=written)
        # files cut short, runs that share no case: one line each (the report says so
        # too); a run not complete: one line too where it is not still going
        # (IncompleteRunWarning, document.warn_incomplete_runs), a line below where it
        # is; load's own RunStatusWarning of it is left to the report's note
        for w in caught:
            if issubclass(w.category, EarlierReportReplaced):  # a note, as microbench's
                print(f"{PROG}: {one_line(str(w.message))}", file=sys.stderr)
            elif issubclass(w.category, ResultsWarning) \
                    and not issubclass(w.category, RunStatusWarning):
                print(f"{PROG}: warning: {one_line(str(w.message))}", file=sys.stderr)
    except ResultsError as exc:
        print(f"{PROG}: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except OSError as exc:  # nothing was written (``document.write_folder``)
        # a left temporary folder it could not remove (``write_folder``) is named
        left = f"; {exc.left}" if getattr(exc, "left", "") else ""
        if out_of_fds(exc) and not isinstance(exc, WriteFailed):
            # no report file's write: a module read as it was imported (PIL's plugins,
            # as a figure is saved), whose path is no file of the report's to name
            print(one_line(f"{PROG}: error: {fd_shortage_text(exc)}{left}"), file=sys.stderr)
            return 2
        where = exc.filename if exc.filename else "the report"
        # The default place (RUN_DIR/report) refused: another one is a flag away.
        hint = ("; write it elsewhere with --output DIR" if args.output is None
                and exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM) else "")
        # a write the file-size limit (ulimit -f) refused says so, as a run's does
        reason = file_size_text(exc) or exc.strerror or exc
        print(one_line(f"{PROG}: error: cannot write {where}: {reason}{hint}{left}"),
              file=sys.stderr)
        return 1 if isinstance(exc, WriteFailed) else 2
    for run_dir in running:  # the report says so too: a log reader sees it here
        print(one_line(f"{PROG}: warning: {run_dir} is still running: the report "
                       "covers the cases it had recorded; run it again once the run "
                       "ends"), file=sys.stderr)
    # a path to paste: a relative one that begins with "-" as ./-x/report/report.html
    where = one_line(path_word(str(out / 'report.html')))
    written_elsewhere(f"the report is in {where}")  # a stdout that fails says so
    with one_write():  # one write, as a run's end
        print(f"report: {where}")
    return 0
