"""Run folders: one per run, plain files that pandas reads directly (written here,
loaded by ``ipc_bench.analysis.results``).

Layout of a run folder::

    summary.json       {"format_version", "status", "metadata", "cases": [...],
                        "comparisons": [...], "byte_model": [...], "problems",
                        "running_case", "failed_case"}
    messages/          captured frames of repetition 0 (``ipc_bench.analysis.capture``)
    steps.csv          one row per step per case: case identity + SCHED_COLUMNS +
                       RUNNER_COLUMNS + OPTIONAL_RUNNER_COLUMNS (runner columns empty
                       for a failed, interrupted or streamed case: the runner's report
                       never came or was not kept; an optional column empty where the
                       case has none)
    requests.csv       one row per request per case
    floor.csv          one row per floor step per case: case_id, i, floor_step_ns
    itl.csv            timed replays and soak: one row per inter-token gap (between two
                       steps that gave a request tokens): case_id, index, itl_s
    rss.csv            cases that sample memory (soak): case_id, t_s, then VmRSS and
                       RssAnon of each process: sched_rss_bytes, sched_anon_bytes,
                       runner_rss_bytes, runner_anon_bytes; sched_py_blocks: live
                       Python allocations of the scheduler (sys.getallocatedblocks)
    frontend.csv       only with --frontend: one row per step per case: case_id, seq,
                       counted (as steps.csv's; a run before it lacks it),
                       frontend_build_ns, frontend_encode_ns, frontend_send_ns,
                       frontend_payload_bytes (0: no message that step) and
                       frontend_decode_ns (empty where nothing was sent, or the
                       frontend's report never came)
    tracemalloc.txt    only with IPC_BENCH_TRACEMALLOC=FRAMES set: per case and process,
                       where the Python heap grew from warm-up to the end, by traceback
                       (``harness.memory.HeapReport``)
    steps.partial.csv  only while a case runs (or after this process was SIGKILLed, or
                       when steps.csv could not take the case's rows: a write that
                       failed): case identity + SCHED_COLUMNS of the running case so far

Writing: ``summary.json`` is rewritten atomically (write to a temporary file, fsync,
rename) at the start and end of every case, so it always parses; ``running_case``
names the case under way. While a case runs, its scheduler rows are appended to
``steps.partial.csv`` about once a second (``harness.recording.StepFlusher``); when it ends,
however it ends (done, failed, SIGINT, SIGTERM), its rows go to ``steps.csv`` and the
partial file is removed; where ``steps.csv`` cannot take them (a file size limit, a
full disk), they stay in the partial file, as a killed run leaves them, those since
its last flush appended to it where it still takes them, and the case is listed all
the same (``RunWriter.list_case``: ``complete: false``, ``steps_kept_in``). A case's
other files are written whatever one of them did: each that cannot take its rows is
cut back and counted in the case's ``rows_not_written`` (file -> rows) and, by
``RunWriter.unwritten_note``, in the run's one-line error. A streamed case (soak) appends straight to ``steps.csv``,
``requests.csv`` and ``rss.csv`` as it runs. So a run killed at any moment leaves a
folder that ``json.load`` and ``pandas.read_csv`` read, with ``status`` ``incomplete``;
only SIGKILL of this process loses anything: the rows of the last flush interval.
A row is never cut in half: appends run with SIGINT/SIGTERM deferred
(``ipc_bench.harness.signals``), and an append that fails (disk full, file size limit)
is cut back to the file's previous size, so what was written before still loads.
A CSV file removed or replaced under the run is never made again without its header:
each append checks that the file is the one this writer made (``append_csv``'s
``same_as``: no system call more than the append's own), and ``finish`` looks at each
once: a run that would be ``complete`` ends with ``RunFolderError`` (``cannot write
results to DIR: steps.csv was removed or replaced during the run: the 12,233 rows
written to it before are lost``); one already ``failed`` or ``incomplete`` keeps its
status and gets the same line among its ``problems``.
Every write error of ``RunWriter`` is a ``RunFolderError`` (one line). Files are
created 0644 and a folder the writer creates 0755 whatever the umask, so results are
never world-writable; a folder given that exists (an empty ``--output``) keeps its mode
(``/dev/shm``'s 1777 is not taken from other users).

Format history:
- 1: first version (``preemptions`` in requests.csv, ``num_preempted`` and
  ``num_resumed`` in steps.csv and ``num_preemptions`` in summary cases added within
  it, before any result was published; ``comparisons`` (paired statistics,
  ``ipc_bench.analysis.stats``), ``byte_model`` (``ipc_bench.analysis.bytemodel``) and ``messages/``
  likewise; so were ``rss.csv``, ``steps.partial.csv``, ``running_case``,
  ``failed_case`` and the cases' ``failed_step``). The cases' ``no_floor`` was added
  within it after results were published: a summary without it is read by inferring
  it from the case (``report.tables.ran_with_no_floor``). So were ``num_waiting`` in
  steps.csv and a timed replay's ``num_waiting_mean`` and ``waiting_step_share``: a
  steps.csv without the column loads with it empty (``analysis.results``), and a
  summary without them has its pace labelled by ``arrival_span_share``
  (``analysis.pace.replay_pace``). So was a comparison's ``arrival_bound`` (every
  case a timed replay none of which is load-bound: its output tokens/s recorded with
  verdict ``arrival-bound``, paired figures null, out of the Holm family): a report of
  a summary without it marks its other comparisons from their cases
  (``report.findings.other_comparisons``). So were a timed replay's ``idle_s`` and
  ``idle_share``: a summary without them has its pace labelled by the waiting figures
  alone (``analysis.pace.replay_pace``). So was ``counted`` in frontend.csv: a file
  without it takes it from steps.csv's row of the same case and ``seq`` as it is loaded
  (``analysis.results``). So were ``gc_ns`` and ``runner_gc_ns`` in steps.csv and the
  cases' ``sched_gc_ns_per_step`` and ``runner_gc_ns_per_step``: a steps.csv without
  them loads with them empty, and a summary without them gets the findings' collector
  line without the time (``report.collector``). So was a replay case's
  ``run_end_arm_warnings`` (the lines the run's end printed on it,
  ``analysis.replay_noise.RUN_END_FIELD``): a summary without it is not compared with
  the report's lines.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import fcntl

import csv
import functools
import io
import json
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable, Optional

from ipc_bench.errors import FD_ERRNOS, fd_shortage_text, file_size_text
from ipc_bench.harness.signals import deferred
from ipc_bench.harness.spec import (OPTIONAL_RUNNER_COLUMNS, RUNNER_COLUMNS, SCHED_COLUMNS,
                                    CaseResult, CaseSpec)

FORMAT_VERSION = 1

CASE_KEYS = ("case_id", "scenario", "policy", "codec", "repetition", "workload")
#: ``steps.csv``'s columns.
STEPS_HEADER = CASE_KEYS + SCHED_COLUMNS + RUNNER_COLUMNS + OPTIONAL_RUNNER_COLUMNS
RSS_COLUMNS = ("case_id", "t_s", "sched_rss_bytes", "sched_anon_bytes", "runner_rss_bytes",
               "runner_anon_bytes", "sched_py_blocks")
PARTIAL_STEPS = "steps.partial.csv"
HEAP_REPORT = "heap.txt"
FILE_MODE = 0o644
DIR_MODE = 0o755
#: The empty file that claims a run folder (``cli.execute.claim_run_dir``). The run
#: holds an exclusive ``flock`` on it from ``RunWriter`` until ``RunWriter.finish``
#: (the kernel drops it when the process ends, SIGKILL included), so that
#: ``run_in_progress`` tells a run still going from one that ended or was killed.
CLAIM_FILE = ".claimed"
#: Rows encoded and written at a time by an append.
APPEND_CHUNK_ROWS = 4096
REQUEST_COLUMNS = ("index", "req_id", "num_prompt_tokens", "num_output_tokens", "max_tokens",
                   "arrival_step", "first_scheduled_step", "first_token_step", "finish_step",
                   "finish_reason", "preemptions", "arrival_s", "ttft_s", "tpot_s", "e2e_s")


def default_run_dir(root: str | os.PathLike, scenario: str) -> Path:
    """Create and return ``root/<scenario>-<UTC yyyymmdd-HHMMSS>``, suffixed ``-2``,
    ``-3``... if taken. Creation is atomic (``mkdir`` without ``exist_ok``), so two runs
    started in the same second never share a folder. Raises ``OSError`` if ``root``
    cannot be written."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    base = Path(root) / f"{scenario}-{stamp}"
    Path(root).mkdir(parents=True, exist_ok=True)
    path, k = base, 1
    while True:
        try:
            path.mkdir()
            return path
        except FileExistsError:
            k += 1
            path = Path(f"{base}-{k}")


def _hold_claim(run_dir: Path) -> Optional[io.BufferedReader]:
    """``run_dir``'s ``CLAIM_FILE`` opened and locked (``flock``, exclusive), for the
    run to hold while it runs (the one ``create_claim`` made and locked, where it made
    it in this process); ``None`` where there is no such file (a folder not
    claimed by ``bench.py``) or it cannot be locked (a file system without locks)."""
    made = _MADE.pop(os.path.realpath(run_dir), None)
    if made is not None:  # locked since it was made (create_claim)
        return made
    try:
        claim = open(run_dir / CLAIM_FILE, "rb")
    except OSError:
        return None
    try:
        fcntl.flock(claim, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        claim.close()
        return None
    return claim


#: Claims ``create_claim`` made and locked in this process that no ``RunWriter`` holds
#: yet, by the folder's real path: the ``RunWriter`` of the folder takes it over
#: (``_hold_claim``), or ``release_claim`` lets it go.
_MADE: dict[str, io.BufferedWriter] = {}


def create_claim(run_dir: Path) -> None:
    """Create ``run_dir``'s ``CLAIM_FILE`` (exclusively: ``FileExistsError`` where it
    is there, another run's; any other ``OSError`` where it cannot be made) and lock it
    at once (``flock``, exclusive), so that from the moment it exists a run holds it
    (``run_in_progress``: a claim found without its lock is a run's that ended). The
    locked file is kept for the ``RunWriter`` of the folder, which holds it until the
    run ends (``release_claim`` where none will); on a file system without locks it is
    closed."""
    fd = os.open(run_dir / CLAIM_FILE, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE)
    claim = open(fd, "wb")
    try:
        fcntl.flock(claim, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        claim.close()
        return
    release_claim(run_dir)  # an earlier one of this folder, removed since: let go
    _MADE[os.path.realpath(run_dir)] = claim


def release_claim(run_dir: str | os.PathLike) -> None:
    """Let go of the claim ``create_claim`` made of ``run_dir`` where no ``RunWriter``
    took it over (the run stopped before its first files); nothing where there is none."""
    claim = _MADE.pop(os.path.realpath(run_dir), None)
    if claim is not None:
        claim.close()


def run_in_progress(run_dir: str | os.PathLike) -> bool:
    """Whether a run still holds ``run_dir``'s claim (``CLAIM_FILE``): it is still
    going. False for a run that ended, however it ended (a SIGKILLed one included),
    and for a folder without the file or on a file system without locks."""
    try:
        claim = open(Path(run_dir) / CLAIM_FILE, "rb")
    except OSError:
        return False
    with claim:
        try:
            fcntl.flock(claim, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        return False


def _json_safe(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


class RunFolderError(Exception):
    """A file of the run folder could not be written (disk full, file size limit,
    folder removed or read-only, no file descriptor left): ``cannot write results to
    DIR: REASON``, one line. ``reason``: the system's words (``strerror``), with the
    file-size limit where one refused the write (``errors.file_size_text``), or, for a
    process out of file descriptors, ``errors.fd_shortage_text``'s line (``too many
    open files (ulimit -n 20): raise it (e.g. ulimit -n 1024) and run again``);
    ``errno``: the ``OSError``'s; ``exit_code``: 2 for those (``errors.FD_ERRNOS``),
    as wherever else the harness runs out of descriptors, else 1."""

    def __init__(self, run_dir: str | os.PathLike, exc: OSError):
        self.reason = fd_shortage_text(exc) or file_size_text(exc) or exc.strerror or str(exc)
        super().__init__(f"cannot write results to {run_dir}: {self.reason}")
        self.errno = exc.errno

    @property
    def exit_code(self) -> int:
        """The run's exit code for this error: 2 out of file descriptors, else 1."""
        return 2 if self.errno in FD_ERRNOS else 1


#: Bytes ``probe_write`` writes: more than an empty file, which a full disk still takes.
PROBE_BYTES = 4096


def probe_write(folder: str | os.PathLike, prefix: str) -> None:
    """Write ``PROBE_BYTES`` to a new file in ``folder`` (``tempfile.mkstemp``: ``prefix``
    and eight characters) and remove it, before work whose results would be lost where
    they cannot be written: ``OSError`` as the file system refuses it (``ENOSPC`` for a
    full disk, ``EDQUOT`` over a quota, ``EROFS``, ``EACCES``, ``EFBIG`` under a file-size
    limit, which a caller may judge against the files themselves). A short write on a
    nearly full disk is followed by another, which says why."""
    fd, name = tempfile.mkstemp(prefix=prefix, dir=folder)
    try:
        left = PROBE_BYTES
        while left:
            left -= os.write(fd, b"\0" * left)
    finally:
        try:
            os.close(fd)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(name)


def _create(path: Path, append: bool = False, create: bool = True) -> int:
    """Open ``path`` for writing (appending, else truncated) with mode 0644 whatever
    the umask; returns the descriptor. ``create=False``: a file that is not there is
    not made (``FileNotFoundError``)."""
    flags = (os.O_WRONLY | (os.O_CREAT if create else 0)
             | (os.O_APPEND if append else os.O_TRUNC))
    fd = os.open(path, flags, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
    except OSError:
        os.close(fd)
        raise
    return fd


def write_fd(fd: int, data: bytes, path: Path) -> None:
    """Write all of ``data`` to ``fd`` (the file ``path``); ``OSError`` as ``os.write``
    raises it (every write of the run folder goes through here)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _csv_chunks(rows: Iterable, header: Optional[tuple[str, ...]]) -> Iterable[bytes]:
    """``rows`` (and ``header`` first) as CSV bytes, ``APPEND_CHUNK_ROWS`` rows at a time."""
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    if header is not None:
        w.writerow(header)
    n = 0
    for row in rows:
        w.writerow(row)
        n += 1
        if n % APPEND_CHUNK_ROWS == 0:
            yield buf.getvalue().encode()
            buf.seek(0)
            buf.truncate()
    yield buf.getvalue().encode()


#: Columns of ``frontend.csv`` (``--frontend``). ``counted``: as steps.csv's (1 for a
#: step the case's figures are computed over, warm-up and mixed steps 0); a file
#: written before it lacks it, and ``analysis.results.load`` takes it from steps.csv.
FRONTEND_CSV = ("case_id", "seq", "counted", "frontend_build_ns", "frontend_encode_ns",
                "frontend_send_ns", "frontend_payload_bytes", "frontend_decode_ns")


def frontend_rows(result: CaseResult):
    """``frontend.csv`` rows of a case (``FRONTEND_CSV``): the scheduler's columns per
    step, ``counted`` as the step's steps.csv row has it (0 for a step without one:
    the case ended before its row was recorded), and the frontend's decode ns on the
    steps that sent a message (when its report came)."""
    cols = result.frontend_columns
    nbytes = cols["frontend_payload_bytes"]
    decode = iter(result.frontend_decode_ns)
    have_decode = len(result.frontend_decode_ns) == sum(1 for b in nbytes if b)
    at_seq, at_counted = SCHED_COLUMNS.index("seq"), SCHED_COLUMNS.index("counted")
    counted = {row[at_seq]: row[at_counted] for row in result.sched_rows}
    for seq, row in enumerate(zip(cols["frontend_build_ns"], cols["frontend_encode_ns"],
                                  cols["frontend_send_ns"], nbytes)):
        yield (result.spec.case_id, seq, counted.get(seq, 0), *row,
               next(decode) if have_decode and row[3] else "")


class ResultsFileGone(OSError):
    """A results file ``append_csv`` was to append to (``same_as``) is not the one
    written before: removed (or moved away), replaced or written to by another hand
    while the run ran."""


def append_csv(path: Path, rows: Iterable, header: Optional[tuple[str, ...]] = None,
               same_as: Optional[tuple[int, int, int]] = None) -> tuple[int, int, int]:
    """Append ``rows`` to the CSV file ``path`` (created with ``header`` if new or
    empty); on a write error the file is cut back to its previous size (removed if it
    was empty) and the ``OSError`` raised. Returns the file's ``(st_dev, st_ino,
    size)`` after the append.

    ``same_as``: what an earlier append returned for ``path``: the file must still be
    that one, at that size, else ``ResultsFileGone`` is raised and nothing is written
    (a file removed under the run is not made again, so it is never recreated
    without its header, and one put in its place is not appended to). The size tells
    a file put in place of one removed apart where it took the same inode number, as
    a file system often gives a new file the number just freed. The check costs no
    system call more than an append makes: the file is opened without ``O_CREAT``
    and its ``fstat`` (taken for its size) compared."""
    try:
        fd = _create(path, append=True, create=same_as is None)
    except FileNotFoundError:
        if same_as is not None and path.parent.is_dir():  # else the folder is gone
            raise ResultsFileGone(errno.ENOENT, f"{path.name} was removed", str(path))
        raise
    try:
        st = os.fstat(fd)
        size = st.st_size
        if same_as is not None and (st.st_dev, st.st_ino, size) != tuple(same_as):
            raise ResultsFileGone(errno.ENOENT, f"{path.name} was replaced", str(path))
        wrote = 0
        try:
            for chunk in _csv_chunks(rows, header if size == 0 else None):
                if chunk:  # nothing to append: no write
                    write_fd(fd, chunk, path)
                    wrote += len(chunk)
        except OSError:
            try:
                if size == 0:
                    os.unlink(path)
                else:
                    os.ftruncate(fd, size)
            except OSError:
                pass
            raise
        return st.st_dev, st.st_ino, size + wrote
    finally:
        os.close(fd)


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` via a temporary file (fsync) and
    ``os.replace``: ``path`` holds the old or the new content, never a part; on an
    error the temporary file is removed and the ``OSError`` raised."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    text = json.dumps(_json_safe(data), indent=1, allow_nan=False) + "\n"
    fd = _create(tmp)
    try:
        try:
            write_fd(fd, text.encode(), tmp)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _writes(method):
    """``RunWriter`` method decorator: an ``OSError`` becomes a ``RunFolderError``."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except OSError as exc:
            raise RunFolderError(self.run_dir, exc) from None
    return wrapper


class _Counted:
    """An iterator over ``rows`` that counts the rows it gave (``n``)."""

    def __init__(self, rows: Iterable):
        self._rows = iter(rows)
        self.n = 0

    def __iter__(self):
        return self

    def __next__(self):
        row = next(self._rows)
        self.n += 1
        return row


def _and(parts: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + f" and {parts[-1]}"


def _csv(value: Any) -> Any:
    return "" if value is None else value


def runner_step_columns(runner: dict[str, list], num_steps: int) -> list[Any]:
    """The ``RUNNER_COLUMNS`` then ``OPTIONAL_RUNNER_COLUMNS`` of a case's ``steps.csv``
    rows from ``runner`` (``CaseResult.runner_columns``: name -> one value per step),
    each a list of ``num_steps`` values or of empty strings: the runner columns all
    empty unless every one has ``num_steps`` values (a failed or interrupted case's
    runner report never came), an optional column empty unless it has ``num_steps``
    values (the case has no such column)."""
    empty = [""] * num_steps
    have_runner = bool(runner) and all(
        len(runner.get(k, ())) == num_steps for k in RUNNER_COLUMNS)
    columns = [runner[k] if have_runner else empty for k in RUNNER_COLUMNS]
    for k in OPTIONAL_RUNNER_COLUMNS:
        values = runner.get(k, ()) if have_runner else ()
        columns.append(values if len(values) == num_steps else empty)
    return columns


def _ident(spec: CaseSpec) -> tuple:
    return (spec.case_id, spec.scenario, spec.policy, spec.codec, spec.repetition,
            spec.workload_key)


class RunWriter:
    """Writes one run folder incrementally (see the module docstring).

    Implements ``harness.recording.CaseSink``. Every method raises ``RunFolderError``
    (one line) when the folder cannot be created or written; what was written before
    still loads.
    """

    @_writes
    def __init__(self, run_dir: str | os.PathLike, metadata: dict[str, Any]):
        self.run_dir = Path(run_dir)
        if not self.run_dir.is_dir():  # a folder given that exists keeps its mode
            self.run_dir.mkdir(parents=True, exist_ok=True)
            os.chmod(self.run_dir, DIR_MODE)
        self._claim = _hold_claim(self.run_dir)
        self.metadata = metadata
        self.cases: list[dict[str, Any]] = []
        self.problems: list[str] = []
        self.status = "incomplete"
        self.running_case: Optional[str] = None
        self.failed_case: Optional[str] = None
        self._rss_written: dict[str, int] = {}
        #: Case id -> CSV file -> rows of the case that file could not take (each
        #: append that failed, cut back whole): ``rows_not_written`` in its summary.
        self.rows_not_written: dict[str, dict[str, int]] = {}
        self._partial_rows: dict[str, int] = {}  # case id -> rows in steps.partial.csv
        #: Case id -> CSV file -> rows of the case that file took (``held_note``).
        self.rows_written: dict[str, dict[str, int]] = {}
        #: The case ids the last ``summary.json`` written lists, in order.
        self.listed_on_disk: list[str] = []
        self._tried: dict[str, set[str]] = {}  # case id -> files add_case wrote or tried
        #: Case id -> the files ``add_case`` could not write for it, in the order tried.
        self.failed_files: dict[str, list[str]] = {}
        self._partial_case: Optional[str] = None
        self.comparisons: list[dict[str, Any]] = []  # ipc_bench.analysis.stats.compare_cases
        self.byte_model: list[dict[str, Any]] = []   # ipc_bench.analysis.bytemodel.byte_model_report
        #: CSV file name -> ``(st_dev, st_ino, size)`` of the file this writer made
        #: under that name, and the rows it appended to it since: each append checks
        #: that the file is still that one (``append_csv``'s ``same_as``), so that a file
        #: removed or replaced under the run ends it (``ResultsFileGone``, a
        #: ``RunFolderError``) rather than being made again without its header.
        self._files: dict[str, tuple[int, int, int]] = {}
        self._file_rows: dict[str, int] = {}
        self._gone: set[str] = set()  # those found removed or replaced: said once
        self._new_file("steps.csv", STEPS_HEADER)
        self._new_file("requests.csv", CASE_KEYS + REQUEST_COLUMNS)
        self._new_file("floor.csv", ("case_id", "i", "floor_step_ns"))
        self._new_file("itl.csv", ("case_id", "index", "itl_s"))
        self._write_summary()

    def _new_file(self, name: str, header: tuple[str, ...]) -> None:
        os.close(_create(self.run_dir / name))
        self._files[name] = append_csv(self.run_dir / name, (), header)
        self._file_rows[name] = 0

    def _append(self, name: str, rows, header: Optional[tuple[str, ...]] = None,
                case_id: Optional[str] = None) -> None:
        """``append_csv`` with signals deferred; where it fails, the rows of the append
        (all of them: it is cut back) are counted in ``rows_not_written[case_id]``."""
        counted = _Counted(rows)
        with deferred():
            try:
                try:
                    if name in self._gone:  # said once; never made again
                        raise ResultsFileGone(errno.ENOENT, name, str(self.run_dir / name))
                    self._files[name] = append_csv(self.run_dir / name, counted, header,
                                                   same_as=self._files.get(name))
                except ResultsFileGone:
                    self._gone.add(name)
                    raise ResultsFileGone(errno.ENOENT, self._gone_text(name),
                                          str(self.run_dir / name)) from None
                self._file_rows[name] = self._file_rows.get(name, 0) + counted.n
                if case_id is not None and counted.n:
                    took = self.rows_written.setdefault(case_id, {})
                    took[name] = took.get(name, 0) + counted.n
            except OSError:
                if case_id is not None:
                    for _ in counted:  # the rows never reached: not written either
                        pass
                    if counted.n:
                        lost = self.rows_not_written.setdefault(case_id, {})
                        lost[name] = lost.get(name, 0) + counted.n
                raise

    def _gone_text(self, name: str) -> str:
        """Why ``name``, a file this writer made, cannot be appended to: ``steps.csv was
        removed or replaced during the run: the 12,233 rows written to it before are
        lost`` (``no row had been written to it`` where none had); for
        ``steps.partial.csv``, whose rows are a copy of those the running case holds,
        the first part alone."""
        said = f"{name} was removed or replaced during the run"
        if name == PARTIAL_STEPS:
            return said
        n = self._file_rows.get(name, 0)
        if not n:
            return f"{said}: no row had been written to it"
        return (f"{said}: the row written to it before is lost" if n == 1 else
                f"{said}: the {n:,} rows written to it before are lost")

    def unwritten_note(self, case_id: Optional[str]) -> str:
        """``; rows not written: 402 of steps.csv (kept in steps.partial.csv), 2 of
        requests.csv and 400 of floor.csv``: the rows of case ``case_id`` its files
        could not take (``rows_not_written``), for the run's one-line error; ``(398 of
        them kept in steps.partial.csv)`` where that file holds only part of them;
        ``""`` when none."""
        lost = self.rows_not_written.get(case_id or "")
        if not lost:
            return ""
        parts = []
        for name, n in lost.items():
            part = f"{n:,} of {name}"
            kept = self._partial_rows.get(case_id or "", 0) if name == "steps.csv" else 0
            if kept and (self.run_dir / PARTIAL_STEPS).is_file():
                part += (f" (kept in {PARTIAL_STEPS})" if kept >= n
                         else f" ({kept:,} of them kept in {PARTIAL_STEPS})")
            parts.append(part)
        return f"; rows not written: {_and(parts)}"

    def held_note(self, case_ids: list[str], measured_steps: int = 0) -> str:
        """What the folder holds of the cases run, ``case_ids`` in the order run, once
        ``summary.json`` could not be rewritten and its last version stays: the cases
        it lists, whose results a report loads (`` and lists 2 cases, whose results
        are kept: A and B``; ``the first 5 run, A to E`` for more than 3; `` and lists
        no case``), then, for each case it does not list, the rows of it on disk, which
        a report leaves out as unlisted (``; case C is not listed, so a report leaves
        out its rows on disk: 402 in steps.csv, 2 in requests.csv and 400 in
        floor.csv``), or that none reached the folder (``; case C is not listed, and
        none of its rows reached the folder``, ``: the 402 steps it measured are
        lost`` for the last case, ``measured_steps`` > 0)."""
        listed = [c for c in self.listed_on_disk if c in case_ids]
        n = len(listed)
        if not n:
            said = " and lists no case"
        else:
            which = (_and(listed) if n <= 3 else f"the first {n} run, {listed[0]} to "
                     f"{listed[-1]}")
            said = f" and lists {n} case{'' if n == 1 else 's'}, whose results are kept: {which}"
        unlisted = [c for c in case_ids if c not in self.listed_on_disk]
        for case_id in unlisted:
            held = dict(self.rows_written.get(case_id, {}))
            kept = self._partial_rows.get(case_id, 0)
            if (kept and case_id == self._partial_case
                    and (self.run_dir / PARTIAL_STEPS).is_file()):
                held[PARTIAL_STEPS] = kept
            if held:
                rows = [f"{k:,} in {name}" for name, k in held.items()]
                said += (f"; case {case_id} is not listed, so a report leaves out its rows on "
                         f"disk: {_and(rows)}")
                continue
            said += f"; case {case_id} is not listed, and none of its rows reached the folder"
            if case_id == unlisted[-1] and measured_steps > 0:
                said += (": the step it measured is lost" if measured_steps == 1 else
                         f": the {measured_steps:,} steps it measured are lost")
        return said

    # ------------------------------------------------------------------ while a case runs
    @_writes
    def begin_case(self, spec: CaseSpec) -> None:
        """Note ``spec`` as the running case (in ``summary.json``)."""
        self.running_case = spec.case_id
        self._remove_partial()
        self._partial_rows[spec.case_id] = 0
        self._partial_case = spec.case_id  # whose rows steps.partial.csv holds
        self._write_summary()

    @_writes
    def partial_steps(self, spec: CaseSpec, rows: list[tuple]) -> None:
        """Append the running case's newest scheduler rows to ``steps.partial.csv``."""
        ident = _ident(spec)
        self._append(PARTIAL_STEPS, (ident + tuple(row) for row in rows),
                     header=CASE_KEYS + SCHED_COLUMNS)
        self._partial_rows[spec.case_id] = self._partial_rows.get(spec.case_id, 0) + len(rows)

    @_writes
    def stream_steps(self, spec: CaseSpec, rows) -> None:
        """Append a streamed case's scheduler rows (an iterable of int sequences, read
        once) to ``steps.csv`` (no runner columns)."""
        ident = _ident(spec)
        empty = ("",) * len(RUNNER_COLUMNS + OPTIONAL_RUNNER_COLUMNS)
        self._append("steps.csv", (ident + tuple(row) + empty for row in rows),
                     case_id=spec.case_id)

    @_writes
    def stream_requests(self, spec: CaseSpec, records: list[dict]) -> None:
        """Append per-request records (and their inter-token gaps); each file is
        written whether the other could be or not, and the first error raised."""
        self._write_each(spec.case_id, (
            ("requests.csv", lambda: self._request_rows(spec, records)),
            ("itl.csv", lambda: self._gap_rows(spec, records))))

    def _request_rows(self, spec: CaseSpec, records: list[dict]) -> None:
        ident = _ident(spec)
        self._append("requests.csv", (ident + tuple(_csv(r.get(k)) for k in REQUEST_COLUMNS)
                                      for r in records), case_id=spec.case_id)

    def _gap_rows(self, spec: CaseSpec, records: list[dict]) -> None:
        self._append("itl.csv", ((spec.case_id, r["index"], x)
                                 for r in records for x in r.get("itl_s") or ()),
                     case_id=spec.case_id)

    def _write_each(self, case_id: str, writes, once: bool = False) -> None:
        """Run each ``(file name, write)`` of ``writes`` whatever the others did (what
        one file cannot take takes nothing from the others), then raise the first
        ``OSError``; ``once``: a file already written or tried for ``case_id`` by
        ``add_case`` is skipped (a case written again after a failure is not written
        twice), and each that fails is noted in ``failed_files[case_id]``."""
        tried = self._tried.setdefault(case_id, set()) if once else set()
        first: Optional[OSError] = None
        for name, write in writes:
            if name in tried:
                continue
            tried.add(name)
            try:
                write()
            except OSError as exc:
                first = first or exc
                if once:
                    self.failed_files.setdefault(case_id, []).append(name)
        if first is not None:
            raise first

    @_writes
    def stream_rss(self, spec: CaseSpec, samples: list[tuple]) -> None:
        """Append memory samples (``harness.memory.SAMPLE_COLUMNS``) to ``rss.csv``."""
        self._append("rss.csv", ((spec.case_id, *(_csv(v) for v in s)) for s in samples),
                     header=RSS_COLUMNS, case_id=spec.case_id)
        self._rss_written[spec.case_id] = self._rss_written.get(spec.case_id, 0) + len(samples)

    def _remove_partial(self) -> None:
        self._files.pop(PARTIAL_STEPS, None)  # the next case's is a new file
        self._file_rows.pop(PARTIAL_STEPS, None)
        self._gone.discard(PARTIAL_STEPS)
        try:
            os.unlink(self.run_dir / PARTIAL_STEPS)
        except FileNotFoundError:
            pass

    # ------------------------------------------------------------------ when a case ends
    @_writes
    def add_case(self, result: CaseResult, summary: dict[str, Any]) -> None:
        """Append a finished, failed or interrupted case's records (what was not
        streamed already) and rewrite the summary. Each file is written whatever
        another one did; where one cannot take its rows, the others are written
        whole, the first error is raised (the case is not listed: ``list_case``) and a
        later call for the same case writes only the files not tried yet. Rows
        ``steps.csv`` cannot take stay in ``steps.partial.csv``, those since its last
        flush appended to it where it takes them."""
        spec = result.spec
        ident = _ident(spec)
        runner = result.runner_columns
        columns = runner_step_columns(runner, len(result.sched_rows))

        def steps() -> None:
            try:
                self._append("steps.csv", (
                    ident + tuple(row) + tuple(column[i] for column in columns)
                    for i, row in enumerate(result.sched_rows)), case_id=spec.case_id)
            except OSError:
                self._keep_in_partial(spec, result.sched_rows)
                raise
            self._remove_partial()  # its rows are in steps.csv

        def rss() -> None:
            samples = result.rss_samples[self._rss_written.get(spec.case_id, 0):]
            if samples:
                self.stream_rss(spec, samples)

        def heap() -> None:
            path = self.run_dir / HEAP_REPORT
            fd = _create(path, append=True)
            try:
                text = "".join(result.heap_reports[k] for k in sorted(result.heap_reports))
                write_fd(fd, text.encode(), path)
            finally:
                os.close(fd)

        writes = [("steps.csv", steps),
                  ("requests.csv", lambda: self._request_rows(spec, result.requests)),
                  ("itl.csv", lambda: self._gap_rows(spec, result.requests)),
                  ("floor.csv", lambda: self._append(
                      "floor.csv", ((spec.case_id, i, ns)
                                    for i, ns in enumerate(result.floor_step_ns)),
                      case_id=spec.case_id))]
        if result.frontend_columns:
            writes.append(("frontend.csv", lambda: self._append(
                "frontend.csv", frontend_rows(result), header=FRONTEND_CSV,
                case_id=spec.case_id)))
        writes.append(("rss.csv", rss))
        if result.heap_reports:
            writes.append((HEAP_REPORT, heap))
        with deferred():
            self._write_each(spec.case_id, writes, once=True)
            self.cases.append(self._with_unwritten(summary))
            if self.running_case == spec.case_id:
                self.running_case = None
            self._write_summary()

    def _keep_in_partial(self, spec: CaseSpec, rows: list) -> None:
        """After ``steps.csv`` could not take a case's ``rows``: append to
        ``steps.partial.csv`` those it does not hold yet (the rows since its last
        flush), so that it holds them all where it takes them; an error here is
        dropped (the rows are counted as not written all the same)."""
        have = self._partial_rows.get(spec.case_id, 0)
        if not (self.run_dir / PARTIAL_STEPS).is_file():
            have = 0
        if len(rows) <= have:
            return
        try:
            self.partial_steps(spec, rows[have:])
        except RunFolderError:
            pass

    def _with_unwritten(self, summary: dict[str, Any]) -> dict[str, Any]:
        """``summary`` with ``rows_not_written`` (file -> rows its case's files could
        not take) where there are any, and ``steps_kept_in: "steps.partial.csv"``
        where its scheduler rows are still there, not in ``steps.csv``."""
        summary = dict(summary)
        lost = self.rows_not_written.get(summary.get("case_id") or "")
        if lost:
            summary["rows_not_written"] = dict(lost)
        if (self.run_dir / PARTIAL_STEPS).is_file():
            summary["steps_kept_in"] = PARTIAL_STEPS
        return summary

    def failed_alone(self, case_id: str, name: str) -> bool:
        """Whether ``add_case`` failed for case ``case_id`` on file ``name`` alone, a
        write that file refused (a full disk, a file size limit), not a file found
        removed or replaced: every other file of the case holds all its rows."""
        return (self.failed_files.get(case_id) == [name] and name not in self._gone
                and set(self.rows_not_written.get(case_id, ())) == {name})

    @_writes
    def list_case(self, summary: dict[str, Any]) -> None:
        """List a case whose records ``add_case`` could not all write (the write that
        failed, a file size limit or a full disk): its ``summary`` alone, with
        ``steps_kept_in: "steps.partial.csv"`` where its scheduler rows are still
        there, not in ``steps.csv`` (as a killed run leaves them)."""
        summary = self._with_unwritten(summary)
        self.cases.append(summary)
        if self.running_case == summary.get("case_id"):
            self.running_case = None
        self._write_summary()

    @_writes
    def finish(self, status: str, problems: Optional[list[str]] = None,
               failed_case: Optional[str] = None) -> None:
        """Set the run's final ``status`` (``complete``, ``failed``, ``incomplete``);
        ``failed_case``: the case that ended the run, if one did."""
        gone = self._gone_files()
        if gone and status == "complete":  # the run's results are not all there
            raise gone[0]
        if gone:  # the run ends without them all the same: said among its problems
            problems = list(problems or ()) + [str(RunFolderError(self.run_dir, exc))
                                               for exc in gone]
        self.status = status
        # When the run ended (``environment.run_interval``: runs of one host that
        # overlapped in time are a difference between them); a run killed has none.
        self.metadata["end_time_utc"] = datetime.datetime.now(
            datetime.timezone.utc).isoformat()
        if problems:
            self.problems.extend(problems)
        if failed_case is not None:
            self.failed_case = failed_case
        try:
            self._write_summary()
        finally:  # the run has ended, whether its last summary could be written or not
            if self._claim is not None:
                self._claim.close()
                self._claim = None

    def _gone_files(self) -> list[ResultsFileGone]:
        """The CSV files this writer made that are no longer the ones it made (removed
        or replaced since their last append: one ``stat`` each), as the errors an
        append to each would raise; each is said once (``_gone``)."""
        gone = []
        for name, made in list(self._files.items()):
            if name in self._gone:
                continue
            try:
                st = os.stat(self.run_dir / name)
                if (st.st_dev, st.st_ino, st.st_size) == made:
                    continue
            except FileNotFoundError:
                if not self.run_dir.is_dir():  # the folder: the summary's write says why
                    return []
            except OSError:
                continue
            gone.append(ResultsFileGone(errno.ENOENT, self._gone_text(name),
                                        str(self.run_dir / name)))
            self._gone.add(name)
        return gone

    @_writes
    def _write_summary(self) -> None:
        with deferred():
            write_json_atomic(self.run_dir / "summary.json", {
                "format_version": FORMAT_VERSION,
                "status": self.status,
                "running_case": self.running_case,
                "failed_case": self.failed_case,
                "metadata": self.metadata,
                "cases": self.cases,
                "comparisons": self.comparisons,
                "byte_model": self.byte_model,
                "problems": self.problems,
            })
            self.listed_on_disk = [c.get("case_id") for c in self.cases]
