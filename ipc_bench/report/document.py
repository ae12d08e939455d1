"""``python bench.py report RUN_DIR [RUN_DIR ...] [--output DIR] [--baseline RUN_DIR]``:
a report of runs.

Writes ``report.md`` and ``report.html`` (self-contained: the figures are embedded
as base64 PNG, so the file reads offline and can be mailed alone), the figures as
PNG files beside them, and a copy of each run's ``summary.json``
(``<run_id>.summary.json``, the run folder as a file name: ``names.run_slugs``) so a
reader can check every number. Contents: findings
stated as numbers (with 95 % intervals when the run has repetitions; a summary
table of them at the top, a legend of their statistics and verdicts under them:
``expand_findings``), the figures
of ``ipc_bench.report.plots`` (a figure whose data the run lacks is replaced by a line
saying what is missing; none with ``--no-figures``, which draws none, a note saying so
in their place), per-case tables, the configuration and the environment.
With two or more runs the report starts with a side-by-side comparison and warns
when their environments differ (``ipc_bench.harness.environment.compare_metadata``,
each run against the ``--baseline`` run, default the first).

Default output folder: ``RUN_DIR/report`` for one run; ``report-<UTC time>`` beside
the first run for several (``beside``; ``-2``, ``-3``, ... after it where a report
started in the same second has the name, ``claim_folder``), and for one run read as still
going, so that a report made before the run's end is not left in its folder, stale, once
it ends (``Results.still_running``: a process held its lock as it was read, not as the
folder is chosen, so the report's place agrees with what it says); either is spelt relative to the current folder
when the first run folder was given relative, absolute when it was given absolute. Bad input (a missing folder, not a run folder, an
unsupported result format, a run folder given twice or a copy of another one given
(``results.check_copies``), an output folder that is neither empty nor an earlier
report: ``check_output``, or that cannot be made or replaced: an earlier one that
cannot be renamed aside, immutable say) is one line on stderr
and exit code 2; a file that cannot be written once the report's temporary folder is
made (disk full) is one line and exit code 1 (``WriteFailed``). Everything is rendered before the
first file is written; the files go into a temporary folder beside the output,
renamed into place once all are written (``write_folder``), with SIGINT / SIGTERM /
SIGHUP deferred (``ipc_bench.harness.signals``): an interrupted or failed report
(disk full) writes all of it or changes nothing, an earlier report included. A
report holds a lock beside its output folder while it renders and writes
(``output_lock``): a second one into the same folder meanwhile is refused (one line,
exit code 2), and one that replaces an earlier report of other runs says which
(``EarlierReportReplaced``).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Optional, Sequence

from ipc_bench.analysis.results import check_distinct_runs, check_run_dir
from ipc_bench.analysis.run_files import ResultsError, ResultsWarning
from ipc_bench.errors import (BLAS_BUFFER_BYTES, SCIPY_LOAD_BYTES, broken_link_text,
                              folder_names_text, need_address_space, one_line,
                              openblas_load_bytes, output_kind_text)
from ipc_bench.harness.run_folder import probe_write
from ipc_bench.harness.signals import blocked, deferred
from ipc_bench.report.names import run_slugs
from ipc_bench.report.render import plain_text, render_html, render_markdown

#: The report's own files besides its figures (``*.png``) and summaries
#: (``*.summary.json``).
REPORT_FILES = ("report.md", "report.html")

def write_report(run_dirs: Sequence[str], output: Optional[str] = None,
                 command: Optional[str] = None, baseline: Optional[str] = None,
                 figures: bool = True, running: Optional[list] = None,
                 written: Optional[list] = None) -> Path:
    """Load ``run_dirs``, write the report into ``output`` (see the module docstring)
    and return the folder; ``baseline``: the run folder, one of ``run_dirs``, that the
    side-by-side ratio columns divide by and the other runs' environment differences are
    stated against (default the first); ``figures`` false (``--no-figures``): no figure
    is drawn and no PNG written, the report saying so where they would be; ``running``:
    a list, where given, that the run folders (of ``run_dirs``) read as still going are
    appended to (``Results.still_running``: their report says so, whatever the run did
    after it was read); ``written``: a list, where given, that the folder is appended to
    once the report is in place, so that a signal that arrived while it was written
    (raised once it is: ``signals.deferred``) can be told from one that stopped it
    before (the earlier report untouched). Issues ``load``'s warnings, then one
    ``IncompleteRunWarning`` per run that is not complete and not still going
    (``warn_incomplete_runs``). Raises ``ResultsError``
    (one line) on bad input (``baseline_run`` too; a run's file that cannot be read:
    ``cannot read PATH: REASON``) and ``OSError`` naming the file when the output folder
    cannot be written (nothing changed then: ``write_folder``)."""
    from ipc_bench.analysis.results import load

    dirs = [check_run_dir(d) for d in run_dirs]
    check_distinct_runs(run_dirs)
    build_blocks = _libraries(figures)  # once the folders are run folders
    try:
        results = load(dirs)
    except OSError as exc:  # a run's file that cannot be read (its permissions, a disk)
        where = exc.filename if exc.filename else "a run folder"
        raise ResultsError(f"cannot read {where}: {exc.strerror or exc}") from None
    base = baseline_run(results.paths, baseline) if baseline is not None else ""
    warn_incomplete_runs(results, run_dirs)
    stamped = False
    if output:
        out = output_path(output)
    elif len(dirs) == 1 and not results.still_running:
        out = dirs[0] / "report"
    else:
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        out, stamped = beside(dirs[0], f"report-{stamp}"), True
    target = _probe_folder(out, check_output(out))
    with contextlib.ExitStack() as stack:
        if not stamped:  # a name of its own otherwise (claim_folder)
            if stack.enter_context(output_lock(out, target)):
                # no other report of this folder is writing: what one killed left is stale
                clear_leftovers(out, target)
        earlier = {} if stamped else _earlier_runs(target)
        if running is not None:
            running += [run_dirs[list(results.paths).index(r)] for r in results.still_running]
        command = command or python_call(run_dirs, output, baseline, figures)
        blocks = expand_findings(build_blocks(results, command, base, figures))
        title = plain_text(next((b[2] for b in blocks if b[0] == "h"), "ipc-bench report"))
        markdown, html = render_markdown(blocks), render_html(blocks, title)
        files: list[tuple[str, bytes | Path]] = [(b[1], b[4]) for b in blocks if b[0] == "fig"]
        files += [("report.md", _utf8(markdown)), ("report.html", _utf8(html))]
        slugs = run_slugs(results, list(results.paths))
        files += [(f"{slugs[run_id]}.summary.json", path / "summary.json")
                  for run_id, path in results.paths.items()]
        with deferred():
            if stamped:  # a name of its own, also beside a report started in the same second
                out = claim_folder(out)
            try:
                write_folder(out, files)
                if written is not None:
                    written.append(out)
            except BaseException:
                if stamped:
                    _remove_if_empty(out)
                raise
        summaries = {name: run_identity(data) for name, data in files
                     if name.endswith(SUMMARY_SUFFIX)}
        if earlier and earlier != summaries:
            # a run of the same folder name that is another run (A/run, then B/run)
            names = [n[:-len(SUMMARY_SUFFIX)] + (" (another run of that name)"
                                                 if summaries.get(n, earlier[n]) != earlier[n]
                                                 else "")
                     for n in sorted(earlier)]
            warnings.warn(EarlierReportReplaced(
                f"replaced the earlier report of {', '.join(names)} in {out}"))
    return out


def _libraries(figures: bool):
    """Import the libraries with C extensions a report of run folders needs, once its
    folders are known to be run folders, so that a folder that is not one is refused
    without them: pandas and scipy to load and compare the runs, and matplotlib's Agg
    canvas for ``figures``; with the signals blocked (``signals.blocked``: none lands
    while they initialise). Returns ``blocks.build_blocks``, whose module imports
    pandas. Raises what an import raises (``ModuleNotFoundError`` for one not
    installed, which ``bench.py`` words; ``OSError`` ``EMFILE`` out of file
    descriptors)."""
    with blocked():
        import pandas  # noqa: F401

        need_address_space(openblas_load_bytes(SCIPY_LOAD_BYTES), "scipy and its OpenBLAS")
        import scipy.special  # noqa: F401

        if figures:
            from ipc_bench.report.mpl_config import matplotlib_config_dir

            matplotlib_config_dir()  # a read-only HOME: a folder of its own, quietly
            import matplotlib.backends.backend_agg  # noqa: F401
            import matplotlib.figure  # noqa: F401
            import numpy

            # matplotlib's transforms invert matrices: numpy's OpenBLAS maps its
            # buffer at the first such call, here, where a shortage can still be said
            need_address_space(BLAS_BUFFER_BYTES, "numpy's OpenBLAS buffer")
            numpy.linalg.inv(numpy.eye(2))
    from ipc_bench.report.blocks import build_blocks

    return build_blocks


def python_call(run_dirs: Sequence[str], output: Optional[str] = None,
                baseline: Optional[str] = None, figures: bool = True) -> str:
    """The command the ``Rendered ... by`` line names for a ``write_report`` called from
    Python with no ``command`` (``bench.py report`` passes its own): the call itself,
    its arguments as given (``str`` of each path) and only those that differ from the
    defaults, and the folder its relative paths are read from as a comment:
    ``ipc_bench.report.document.write_report(['r1'], output='rep', figures=False)  #
    in /home/me/runs`` (the comment left out where this process's folder is gone). One
    line (``repr``; ``errors.one_line`` for the folder). Raises nothing."""
    args = [repr([str(d) for d in run_dirs])]
    args += [f"output={str(output)!r}"] if output else []
    args += [f"baseline={str(baseline)!r}"] if baseline is not None else []
    if not figures:
        args.append("figures=False")
    call = f"ipc_bench.report.document.write_report({', '.join(args)})"
    try:
        return f"{call}  # in {one_line(os.getcwd())}"
    except OSError:  # the folder it runs in was removed
        return call


def output_path(output: str) -> Path:
    """The ``--output`` folder ``output`` as a path whose last part names it: one
    ending in ``.`` or ``..`` (``.``, ``./``, ``run/..``) is made absolute
    (``os.path.realpath``), so that its lock and temporary folders (``.NAME.lock``,
    ``.NAME.tmp-*``) are beside it in its parent, not inside it; any other is kept as
    given (the report's line names it so)."""
    out = Path(output)
    if out.name in ("", ".", ".."):
        return Path(os.path.realpath(output))
    return out


#: A temporary or set-aside folder a report of the folder NAME makes beside it
#: (``tempfile.mkdtemp``'s eight characters after ``.NAME.tmp-`` / ``.NAME.old-``).
_LEFTOVER = r"\.{name}\.(tmp|old)-[a-z0-9_]{{8}}"


class ReportLeftover(ResultsWarning):
    """What a report killed while it wrote (SIGKILL: nothing of it ran after) left
    beside its output folder, which the next report into that folder, holding its lock,
    removes or restores: a temporary folder (``removed RUN/.report.tmp-XXXXXXXX, left by
    a report killed while it wrote``), an earlier report renamed aside once the new one
    was in place (``removed RUN/.report.old-XXXXXXXX, the earlier report a report killed
    while it replaced it had moved aside``), or one renamed aside before the new one
    was (the output folder missing: ``restored the earlier report in RUN/report from
    RUN/.report.old-XXXXXXXX, where a report killed while it replaced it had moved
    it``). One warning line each on stderr."""


def clear_leftovers(out: Path, target: Path) -> None:
    """Remove what reports of the folder ``target`` (``out`` as given) killed while
    they wrote left beside it (``.NAME.tmp-*``, ``.NAME.old-*``: ``_LEFTOVER``), each
    with a ``ReportLeftover`` warning; where ``target`` is missing, the newest
    ``.NAME.old-*`` is the earlier report it was, renamed aside and never replaced, and
    is renamed back first (the new report then replaces it as any). Call it only while
    holding ``output_lock`` (no other report of that folder is writing). A leftover
    that cannot be removed or restored is left as it is, unsaid."""
    parent = target.parent
    pattern = re.compile(_LEFTOVER.format(name=re.escape(target.name)))
    try:
        found = [e for e in parent.iterdir() if pattern.fullmatch(e.name)
                 and e.is_dir() and not e.is_symlink()]
    except OSError:
        return
    shown = out.parent

    def mtime(path: Path) -> float:
        try:
            return path.stat().st_mtime
        except OSError:
            return 0.0

    olds = sorted((e for e in found if ".old-" in e.name[len(target.name) + 1:]),
                  key=mtime, reverse=True)
    if olds and not os.path.lexists(target):
        try:
            os.rename(olds[0], target)
        except OSError:
            pass
        else:
            warnings.warn(ReportLeftover(
                f"restored the earlier report in {out} from {shown / olds[0].name}, where "
                "a report killed while it replaced it had moved it"))
            found.remove(olds[0])
    for entry in sorted(found, key=lambda e: e.name):
        try:
            shutil.rmtree(entry)
        except OSError:
            continue
        what = ("the earlier report a report killed while it replaced it had moved aside"
                if ".old-" in entry.name[len(target.name) + 1:]
                else "left by a report killed while it wrote")
        warnings.warn(ReportLeftover(f"removed {shown / entry.name}, {what}"))


def run_identity(summary) -> tuple:
    """The identity of the run whose ``summary.json`` is ``summary`` (a path, or its
    bytes), as its metadata records it: ``(start_time_utc, hostname)``, ``None`` for
    either it lacks (or the whole where the file cannot be read as a JSON object), so
    that two runs of one folder name (``A/run``, ``B/run``) are told apart."""
    try:
        data = json.loads(summary.read_bytes() if isinstance(summary, Path) else summary)
    except (OSError, ValueError, RecursionError):
        return (None, None)
    md = data.get("metadata") if isinstance(data, dict) else None
    if not isinstance(md, dict):
        return (None, None)
    return tuple(v if isinstance(v, str) else None
                 for v in (md.get("start_time_utc"), md.get("hostname")))


#: The name a run's summary copy ends with (``RUN.summary.json``).
SUMMARY_SUFFIX = ".summary.json"


def _earlier_runs(target: Path) -> dict[str, tuple]:
    """The run summaries (``RUN.summary.json``, ``earlier_report_files``) of an earlier
    report in the folder ``target``, which name the runs it was of, each with its run's
    identity (``run_identity``); empty where there is none, or it cannot be read."""
    try:
        return {n: run_identity(target / n) for n in earlier_report_files(target)
                if n.endswith(SUMMARY_SUFFIX)} if target.is_dir() else {}
    except OSError:
        return {}


class EarlierReportReplaced(ResultsWarning):
    """A report replaced an earlier one in its output folder that was of other runs
    (its ``RUN.summary.json`` copies name other runs): ``replaced the earlier report of
    A, B in DIR``, which ``bench.py report`` prints as a line of its own (as
    ``microbench`` says ``replaced the earlier send.json in DIR``); a report of the same
    runs again says nothing."""


def lock_path(target: Path) -> Path:
    """The lock file of a report written to the folder ``target``: ``.NAME.lock``
    beside it, where its temporary folder (``.NAME.tmp-*``) is written too."""
    return target.parent / f".{target.name}.lock"


@contextlib.contextmanager
def output_lock(out: Path, target: Path):
    """Hold the lock of a report written to ``out`` (``target``: the folder it names,
    ``check_output``) for the block: an exclusive ``flock`` on ``lock_path(target)``,
    made where missing (the folders above it too, removed again at the end where they
    are still empty) and removed at the end; the kernel drops the lock when the process
    ends, SIGKILL included, so that a lock file a killed report left locks nothing.
    ``ResultsError`` (one line) when another report holds it: ``output folder OUT is
    being written by another report still going; give another --output, or run this
    one again once it ends`` (two reports into one folder would leave only the later
    one, each saying it was written). Where the file cannot be made or locked (a
    read-only folder, a file system without locks) the block runs without it, and the
    report's write says what is wrong. Yields whether it holds the lock (no other report
    of ``target`` is writing then: ``clear_leftovers`` may run)."""
    path = lock_path(target)
    created = _topmost_missing(target.parent)
    fd: Optional[int] = None
    try:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd = _take_lock(path)
        except BlockingIOError:
            raise ResultsError(f"output folder {out} is being written by another report "
                               "still going; give another --output, or run this one again "
                               "once it ends") from None
        except OSError:
            fd = None
        yield fd is not None
    finally:
        if fd is not None:
            with contextlib.suppress(OSError):
                os.unlink(path)  # while locked: a waiting opener sees another file
            os.close(fd)
        folder = target.parent
        while created is not None:
            try:
                os.rmdir(folder)
            except OSError:  # the report, or more, is in it: not ours to remove
                break
            if folder == created:
                break
            folder = folder.parent


def _take_lock(path: Path) -> int:
    """A file descriptor of ``path`` (made where missing) locked exclusively, without
    waiting: ``BlockingIOError`` where another process holds it. A file unlinked by
    its holder between the open and the lock is opened again."""
    while True:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            st, now = os.fstat(fd), os.stat(path)
        except FileNotFoundError:  # unlinked as it was released: take the new one
            os.close(fd)
            continue
        except BaseException:
            os.close(fd)
            raise
        if (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino):
            return fd
        os.close(fd)


def expand_findings(blocks: list) -> list:
    """``blocks`` with each Findings list (a ``("ul", items)`` block whose items are a
    ``findings.Findings``) replaced by the section's blocks
    (``findings.findings_blocks``: the summary table at its top, the sentences, the
    legend under them), so that Markdown and HTML render them alike."""
    from ipc_bench.report.findings import Findings, findings_blocks  # imports pandas

    out = []
    for b in blocks:
        if b[0] == "ul" and isinstance(b[1], Findings):
            out.extend(findings_blocks(b[1]))
        else:
            out.append(b)
    return out


def claim_folder(path: Path, most: int = 1000) -> Path:
    """Make a new, empty folder at ``path``, or, where that name is taken, at
    ``path-2``, ``path-3``, ... (each made with one ``mkdir``, so two processes never
    get the same one), and return it. Raises ``OSError`` as ``mkdir`` does for a reason
    other than the name being taken, or once ``most`` names are."""
    for i in range(1, most + 1):
        candidate = path if i == 1 else path.with_name(f"{path.name}-{i}")
        try:
            os.mkdir(candidate)
        except FileExistsError:
            continue
        return candidate
    raise FileExistsError(errno.EEXIST, f"{most} folders of this name exist", str(path))


def _remove_if_empty(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:  # written into, or gone
        pass


#: Control characters a report never holds but a run folder's or trace's name may:
#: every one but the tab and the line break.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _utf8(text: str) -> bytes:
    """``text`` as UTF-8, a byte of a path that is not UTF-8 written as its escape
    (``errors.utf8_text``), not an error, and a control character from a name as its
    escape (``\\x1b``), not raw into a terminal or an editor that shows the file."""
    from ipc_bench.errors import utf8_text

    text = _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)
    return utf8_text(text).encode("utf-8")


def beside(run_dir: Path, name: str) -> Path:
    """The folder ``name`` beside ``run_dir`` (in the folder that holds it, a symlink
    resolved), spelt as ``run_dir`` is: relative to the current folder when it was given
    relative (``results/a`` -> ``results/report-...``; ``.`` -> ``../report-...``),
    absolute when it was given absolute, so that a report of several runs names its
    output the way a report of one run does (``RUN_DIR/report``)."""
    out = run_dir.resolve().parent / name
    return out if run_dir.is_absolute() else Path(os.path.relpath(out))


def warn_incomplete_runs(results, run_dirs: Sequence[str]) -> None:
    """Issue one ``IncompleteRunWarning`` for each run of ``results`` (loaded from
    ``run_dirs``, in order) that is not complete and was not read as still going
    (killed, stopped, failed; one still going gets its own line from ``bench.py
    report``: ``running``), naming it by its folder as given:
    ``results.incomplete_run_line``, the line ``bench.py microbench`` warns with, its
    ``detail`` the run's ``Results.status_detail``, its count the run's loaded cases
    that finished of those its metadata planned, and its tail
    ``results.REPORT_COVERS``: ``RUN: this run is incomplete: ...; 1 of its 3 cases
    finished: the report's figures cover the cases it finished``."""
    from ipc_bench.analysis.results import (REPORT_COVERS, IncompleteRunWarning,
                                            incomplete_run_line)

    gone = {(c["run_id"], c["case_id"]) for c in results.unfinished()}
    cases = results.cases
    for run_id, given in zip(results.paths, run_dirs):
        status = results.status.get(run_id)
        if status == "complete" or run_id in results.still_running:
            continue
        ids = list(cases["case_id"][cases["run_id"] == run_id]) if len(cases) else []
        finished = sum((run_id, c) not in gone for c in ids)
        planned = (results.metadata.get(run_id) or {}).get("cases")
        warnings.warn(incomplete_run_line(
            str(given), str(status), (results.status_detail or {}).get(run_id, ""),
            finished, len(planned) if isinstance(planned, list) else None,
            REPORT_COVERS), IncompleteRunWarning, stacklevel=3)


def baseline_run(paths: dict[str, Path], baseline: str) -> str:
    """The ``run_id`` of run folder ``baseline`` among the loaded runs (``paths``:
    ``run_id`` -> folder), however it is spelt (a trailing slash, ``./``, a symlink:
    the same folder on disk); ``ResultsError`` (one line) when it is none of them:
    ``--baseline PATH: not one of the run folders given (A, B)``, or, where nothing is
    there, ``--baseline PATH: does not exist (give one of the run folders given: A,
    B)``."""
    given = ", ".join(str(p) for p in paths.values())
    try:
        st = os.stat(baseline)
        key = (st.st_dev, st.st_ino)
    except FileNotFoundError:
        raise ResultsError(f"--baseline {baseline}: does not exist (give one of the run "
                           f"folders given: {given})") from None
    except (OSError, ValueError):
        key = None
    for run_id, path in paths.items():
        st = os.stat(path)
        if key == (st.st_dev, st.st_ino):
            return run_id
    raise ResultsError(f"--baseline {baseline}: not one of the run folders given ({given})")


def check_output(out: Path) -> Path:
    """Refuse (``ResultsError``, one line) an ``out`` that exists and is not a folder
    (``errors.output_kind_text``, the run's words: ``output path OUT exists and is not a
    folder``, ``output path OUT is a symbolic link to TARGET, which is not a folder``),
    or a folder that is neither empty nor a report this tool wrote: one holding
    anything but ``earlier_report_files`` (``output folder OUT holds files that are not
    a report's (holiday.png, notes.txt); give --output a new folder or an earlier
    report's``): replacing it would lose them; or a mount point (``output folder OUT is
    a mount point, ...: give --output a folder inside it``, or ``a folder elsewhere``
    where the mount cannot be written either), which cannot be renamed
    aside (``EBUSY``). ``OSError`` (``filename``
    ``out``) when the system will not look ``out`` up for a reason other than its
    absence: a name over 255 bytes, no permission. ``out``, or a missing folder on the
    way to it, that is a symbolic link to nothing or a loop of links, and a file on the
    way, are refused in the run's words (``output folder OUT is a symbolic link to
    TARGET, which does not exist`` / ``which cannot be followed (Too many levels of
    symbolic links)``, ``cannot write the report to OUT: FILE is not a folder``,
    ``errors.broken_link_text``).
    Returns the folder to replace: ``out``, or where it points when it is a symlink to a
    folder."""
    try:
        os.stat(out)
    except OSError as exc:
        problem = None
        if isinstance(exc, FileNotFoundError) or exc.errno in (errno.ELOOP, errno.ENOTDIR):
            problem = broken_link_text(out, "the report")  # the run's words
        if problem is not None:
            raise ResultsError(problem) from None
        if not isinstance(exc, FileNotFoundError):  # mkdir and rename would say otherwise
            raise OSError(exc.errno, exc.strerror or str(exc), str(out)) from None
    target = Path(os.path.realpath(out)) if out.is_symlink() and out.is_dir() else out
    if target.exists():
        kind = output_kind_text(out)
        if kind is not None:
            raise ResultsError(kind)
        if os.path.ismount(target):  # renaming it aside fails: EBUSY
            inside = ("give --output a folder inside it" if os.access(target, os.W_OK)
                      else "it cannot be written either (read-only, or no permission): "
                      "give --output a folder elsewhere")
            raise ResultsError(f"output folder {out} is a mount point, which a report "
                               "cannot replace (it is written beside it and renamed into "
                               f"place): {inside}")
        if _holds_cwd(target):  # renamed aside, it would leave the shell in a deleted folder
            raise ResultsError(f"output folder {out} is the current folder or holds it, "
                               "which a report cannot replace (it is written beside it and "
                               "renamed into place, leaving the shell in a deleted folder): "
                               "give --output a folder elsewhere, or run it from another "
                               "folder")
        ours = earlier_report_files(target)
        foreign = sorted(e.name for e in target.iterdir() if e.name not in ours)
        if foreign:
            raise ResultsError(
                f"output folder {out} holds files that are not a report's "
                f"({folder_names_text(foreign)}); give --output a new folder or an "
                "earlier report's")
    return target


def _holds_cwd(folder: Path) -> bool:
    """Whether ``folder`` is the current working folder or a folder above it (the same
    file system object, however either is spelt: ``.``, ``$PWD``, a link to it)."""
    try:
        here, there = os.path.realpath(os.getcwd()), os.path.realpath(folder)
    except OSError:  # no current folder (deleted): none to keep
        return False
    return here == there or here.startswith(there.rstrip(os.sep) + os.sep)


def earlier_report_files(folder: Path) -> set[str]:
    """The names of the files in ``folder`` that an earlier ``write_report`` wrote
    there, which a new report may replace: none unless ``folder`` holds ``report.md``
    or ``report.html`` (``REPORT_FILES``); then those, each PNG that ``report.md``
    shows (``![title](NAME.png)``, as ``render_markdown`` links a figure), and each
    ``*.summary.json`` that is a run's summary (a JSON object with ``format_version``,
    ``metadata`` and ``cases``, as ``write_report`` copies it). Only plain files count
    (a folder, or a link, is never a report's); a PNG the report does not show or a
    ``*.summary.json`` of other content is the user's."""
    files = {e.name: e for e in folder.iterdir() if e.is_file() and not e.is_symlink()}
    if not any(name in files for name in REPORT_FILES):
        return set()
    try:
        markdown = (files["report.md"].read_text(encoding="utf-8", errors="replace")
                    if "report.md" in files else "")
    except OSError:
        markdown = ""
    ours = {name for name in REPORT_FILES if name in files}
    ours |= {name for name in files
             if name.endswith(".png") and f"]({name})" in markdown}
    ours |= {name for name, path in files.items()
             if name.endswith(".summary.json") and _is_run_summary(path)}
    return ours


def _is_run_summary(path: Path) -> bool:
    """Whether ``path`` holds a run's ``summary.json`` (a JSON object with
    ``format_version``, ``metadata`` and ``cases``), whatever its version."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(data, dict) and {"format_version", "metadata", "cases"} <= data.keys()


class WriteFailed(OSError):
    """A report file that could not be written, or the written folder that could not be
    renamed into place, once the temporary folder was made (a full disk): the report
    failed, as a run whose results cannot be written does (exit 1), where an output
    folder that cannot be made or replaced is bad input (exit 2). ``left``: where the
    temporary folder could not be removed after it, why, in words (``_remove_written``:
    ``the temporary folder DIR could not be removed: REASON``), else ``""``."""

    left = ""


#: The errors of renaming an earlier output folder aside that mean it may not be
#: replaced (bad input, exit 2), not that the disk failed.
NOT_REPLACED_ERRNOS = (errno.EPERM, errno.EACCES, errno.EROFS, errno.EBUSY, errno.EXDEV,
                       errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR)


class _NotReplaced(OSError):
    """The earlier output folder could not be renamed aside (``_move_into_place``): it
    cannot be replaced (immutable, ``chattr +i``, say), which ``write_folder`` raises as
    a folder that cannot be made (``OSError``, exit 2), not as ``WriteFailed``."""


def _probe_folder(out: Path, target: Path) -> Path:
    """``run_folder.probe_write`` in the nearest folder above ``target`` (the report's
    folder, ``out`` as given; returned) that exists, before the report's tables and
    figures are made: ``OSError`` with ``filename`` ``out``, as ``write_folder`` raises
    it for the folder, where that takes no file (a full disk, a spent quota, read-only,
    no permission), so that a report on a full disk is refused at once rather than
    after its figures are drawn. A write the file-size limit refuses (``EFBIG``) is
    left to the report's own files, whose refusal names the limit."""
    folder = target.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        probe_write(folder, f".{target.name}.probe-")
    except OSError as exc:
        if exc.errno != errno.EFBIG:
            raise OSError(exc.errno, exc.strerror or str(exc), str(out)) from None
    return target


def write_folder(out: Path, files: Sequence[tuple[str, bytes | Path]]) -> None:
    """Make ``out`` a folder holding exactly ``files`` (name, and bytes or a file to
    copy), all or nothing: they are written into a temporary folder beside ``out``
    (``.NAME.tmp-*``), which is renamed to ``out`` once every file is written; an
    earlier ``out`` is renamed aside first and removed after. On an error nothing
    changes (an earlier ``out`` stays as it was, the temporary folder and any parent
    folder created for it are removed: ``_remove_written``, which needs no file
    descriptor, so that a report out of them, ``ulimit -n``, leaves none either) and
    ``OSError`` is raised with ``filename`` the path under ``out`` that could not be
    written (``out`` itself for the folder): ``WriteFailed`` once the temporary folder
    was made, unless it is the earlier ``out`` that could not be renamed aside (it
    cannot be replaced, as a folder that cannot be made); its ``left`` says where the
    temporary folder could not be removed (``""`` where it was). Any other exception
    (``MemoryError``) removes them too and is raised as it is. ``ResultsError`` (one
    line) from ``check_output``."""
    target = check_output(out)
    parent = target.parent
    created = _topmost_missing(parent)
    tmp: Optional[Path] = None
    current = out
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=parent))
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o777 & ~mask)
        for name, data in files:
            current = out / name
            if isinstance(data, Path):
                shutil.copyfile(data, tmp / name)
            else:
                with open(tmp / name, "wb") as f:
                    f.write(data)
        current = out
        _move_into_place(tmp, target, [name for name, _ in files])
        tmp = None
    except BaseException as exc:
        left = _remove_written(tmp, [name for name, _ in files], parent, created)
        if not isinstance(exc, OSError):
            raise
        kind = OSError if tmp is None or isinstance(exc, _NotReplaced) else WriteFailed
        failed = kind(exc.errno, exc.strerror or str(exc), str(current))
        failed.left = left
        raise failed from None


def _remove_written(tmp: Optional[Path], names: Sequence[str], parent: Path,
                    created: Optional[Path]) -> str:
    """Remove what a ``write_folder`` that failed made: its temporary folder ``tmp``
    (``None``: none was made), holding some of ``names`` (``_remove_folder``, which
    opens no file: a process out of file descriptors, ``EMFILE``, where
    ``shutil.rmtree`` fails, removes it too), and the folders it made for it,
    ``parent`` up to ``created`` (``None``: none), each with ``rmdir``. Returns ``""``,
    or where ``tmp`` could not be removed, in words: ``the temporary folder DIR could
    not be removed: REASON`` (the folders above it are then left too)."""
    if tmp is not None:
        try:
            _remove_folder(tmp, names)
        except OSError as exc:
            return f"the temporary folder {tmp} could not be removed: {exc.strerror or exc}"
    folder = parent
    while created is not None:
        try:
            os.rmdir(folder)
        except FileNotFoundError:  # not made: the one that failed, or one below it
            pass
        except OSError:  # holds more than this report put there: not ours to remove
            break
        if folder == created:
            break
        folder = folder.parent
    return ""


def _remove_folder(folder: Path, names: Sequence[str]) -> None:
    """Remove ``folder``, which holds files, among them ``names`` or some of them: each
    of ``names`` is unlinked by its path and the folder removed with ``rmdir``, which
    open no file, so that a process out of file descriptors (``EMFILE``, where
    ``shutil.rmtree`` fails) removes it too; one that still holds more is removed with
    ``shutil.rmtree``. Raises ``OSError`` where it cannot be removed."""
    for name in names:
        try:
            os.unlink(folder / name)
        except OSError:  # not written (FileNotFoundError), or left to rmtree below
            pass
    try:
        os.rmdir(folder)
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
        shutil.rmtree(folder)


def _move_into_place(tmp: Path, target: Path, names: Sequence[str] = ()) -> None:
    """Rename the written folder ``tmp`` to ``target``; an earlier ``target`` is renamed
    aside first (and back if the second rename fails), then removed: each of ``names``
    in it unlinked by its path first (the earlier report's files mostly have the new
    one's names), which opens no file, as a process out of file descriptors can; where
    it cannot be removed, the new report stays in place and an ``EarlierReportLeft``
    warning names it. ``_NotReplaced``
    when the earlier ``target`` may not be renamed aside (``NOT_REPLACED_ERRNOS``:
    permission, a read-only file system, a folder in use); the disk's own failures
    (full, I/O) stay ``OSError``s."""
    if not target.exists():
        os.replace(tmp, target)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    try:
        os.replace(target, old)  # a folder onto an empty folder
    except OSError as exc:
        old.rmdir()
        if exc.errno not in NOT_REPLACED_ERRNOS:
            raise
        raise _NotReplaced(exc.errno, exc.strerror or str(exc), str(target)) from None
    try:
        os.replace(tmp, target)
    except OSError:
        os.replace(old, target)
        raise
    try:
        _remove_folder(old, names)
    except OSError as exc:  # the new report is in place all the same: said, not failed
        warnings.warn(EarlierReportLeft(
            f"the earlier report, moved aside to {old}, could not be removed: "
            f"{exc.strerror or exc}; remove it by hand"))


class EarlierReportLeft(ResultsWarning):
    """The earlier report that a new one replaced (renamed aside to ``.NAME.old-*``
    beside it, ``_move_into_place``) could not be removed once the new one was in
    place: one warning line naming it and why, which ``bench.py report`` prints on
    stderr (the report itself is written; exit 0)."""


def _topmost_missing(path: Path) -> Optional[Path]:
    """The highest folder of ``path`` (itself included) that does not exist yet."""
    missing = None
    while not path.exists() and path != path.parent:
        missing, path = path, path.parent
    return missing
