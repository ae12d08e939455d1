"""Reading a run folder's files defensively, for ``results.load`` and the checks
(``metadata_checks``, ``row_checks``), which build on it; it imports none of them.

It holds the errors and warnings of loading (``ResultsError``, ``ResultsWarning``);
``summary.json``'s checks before it is read (``SUMMARY_MAX_BYTES``, ``nul_padding``:
the NUL bytes a crash can leave at a file's end, ``wide_text``: UTF-16 or UTF-32
text); the CSV files read whatever an edit or a crash left in them (``header_problem``,
``_read_csv``: a header not the file's columns, a last line cut mid-row, lines with
an unterminated quote, only commas or bytes that are not UTF-8, values that are not
numbers); what a path is (``file_kind``, ``why_not_a_file``, ``dangling_link``); and
how a warning line quotes a value (``_shown``, ``_json_kind``).
"""

from __future__ import annotations

import csv
import errno
import io
import json
import numbers
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any

from ipc_bench.analysis.frames import frame_records
from ipc_bench.analysis.pace import as_record
from ipc_bench.harness.spec import OPTIONAL_RUNNER_COLUMNS


class ResultsError(ValueError):
    """A result folder is missing, unreadable or of an unknown format version."""


class ResultsWarning(UserWarning):
    """A run folder loaded, but part of it is cut short (one line)."""


class WrittenFloat(float):
    """A number of ``summary.json`` too large for a float (``1E400``, read as
    infinity), which keeps the text it was written as (``text``) for the line that
    quotes it (``_shown``): ``1E400``, not ``Infinity``, which the file does not hold.
    Made only for a ``format_version`` so written, on the refusal's path
    (``read_summary`` parses the file again with ``_parsed_float``): a Python call for
    each number would slow every large summary's read."""

    text: str

    def __new__(cls, value: float, text: str) -> "WrittenFloat":
        number = super().__new__(cls, value)
        number.text = text
        return number


#: The largest ``summary.json`` ``read_summary`` reads (bytes; 1 GiB). A run writes
#: about 6.8 KB per case (its figures, and its entry in ``metadata.cases``) plus 32 bytes
#: for every other case of its workload that its token stream was compared with
#: (``token_streams_compared_with``): 0.81 MB for the published decode-steady run (120
#: cases, ``--repeat 5``), about 40 MB for 1,000 cases of one workload; the cap holds
#: some 5,500 cases of one workload (``--repeat`` 550 of decode-steady's 10 arms), which
#: takes a day or more to run. Parsing takes several times the file's size in memory.
SUMMARY_MAX_BYTES = 1 << 30


def _summary_size_problem(path: Path) -> str | None:
    """What keeps ``path`` (a ``summary.json``) from being read, found without reading
    more than its start and end: ``it is UTF-16 text, not UTF-8`` (``wide_text``),
    ``it ends in N bytes of NUL padding (a crash can leave it)`` (JSON never ends in a
    NUL byte; ``nul_padding``), ``it is empty (0 bytes), not JSON``, ``N bytes, more than the
    1,073,741,824 a run's summary.json is read up to (SUMMARY_MAX_BYTES: ...)``, or
    ``None``. ``OSError`` as ``open`` raises it."""
    wide = wide_text(path)
    if wide:
        return f"it is {wide} text, not UTF-8"
    padding = nul_padding(path)
    if padding:
        return f"it ends in {nul_bytes(padding)} (a crash can leave it)"
    size = path.stat().st_size
    if size == 0:
        return "it is empty (0 bytes), not JSON"
    if size > SUMMARY_MAX_BYTES:
        return (f"{size:,} bytes, more than the {SUMMARY_MAX_BYTES:,} a run's summary.json "
                "is read up to (SUMMARY_MAX_BYTES: a run of about 5,500 cases of one "
                "workload writes that much)")
    return None


#: Bytes ``nul_padding`` reads first from a file's end; each further read doubles, up
#: to ``_TAIL_MAX_READ``.
_TAIL_FIRST_READ = 4096
_TAIL_MAX_READ = 1 << 20


def nul_padding(path: Path) -> int:
    """How many NUL bytes ``path`` ends in (0 for most files): what a crash, or a file
    system that allocates a file's blocks before they are written, leaves after its
    last write; 0 for UTF-16 or UTF-32 text (``wide_text``), whose last character's
    NUL bytes (``\\n\\x00``) are no padding. The holes of a sparse file (``truncate -s 4G``) at its end are skipped
    without reading (``_data_end``); the rest is read backwards from there, at most
    ``_TAIL_MAX_READ`` bytes at a time, so that memory stays bounded however long the
    padding. ``OSError`` as ``open`` raises it."""
    if wide_text(path):
        return 0
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        end, step = _data_end(f.fileno(), size), _TAIL_FIRST_READ
        while end > 0:
            low = max(end - step, 0)
            f.seek(low)
            kept = f.read(end - low).rstrip(b"\0")
            if kept:
                return size - low - len(kept)
            end, step = low, min(step * 2, _TAIL_MAX_READ)
    return size


def nul_bytes(count: int) -> str:
    """``1 byte of NUL padding``, ``4,096 bytes of NUL padding``: ``count`` NUL bytes
    a file ends in, in words."""
    return f"{count:,} byte{'' if count == 1 else 's'} of NUL padding"


#: Byte-order marks of the text encodings ``wide_text`` names, UTF-32's first (its
#: little-endian mark begins with UTF-16's).
_WIDE_MARKS = ((b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe\x00\x00", "UTF-32"),
               (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))

#: Bytes of a file's start ``wide_text`` reads.
_WIDE_HEAD = 1024


def _nul_share(lane: bytes) -> float:
    """The share of ``lane``'s bytes that are NUL (1.0 for no bytes)."""
    return lane.count(0) / len(lane) if lane else 1.0


def wide_text(path: Path) -> str | None:
    """``UTF-16`` or ``UTF-32`` where ``path`` holds text in that encoding (an editor
    or a Windows tool saved it so), not UTF-8, else ``None``; told from its first
    ``_WIDE_HEAD`` (1,024) bytes alone: a byte-order mark (``\\xff\\xfe``,
    ``\\xfe\\xff``, ``\\x00\\x00\\xfe\\xff``, ``\\xff\\xfe\\x00\\x00``), or, without one,
    NUL bytes interleaved with the others (before the NUL bytes those bytes end in):
    most of every second byte NUL and most of the others not (UTF-16), or three of
    every four (UTF-32), as the high bytes of ASCII characters are. A file of only
    NUL bytes is ``None`` (``nul_padding``). ``OSError`` as ``open`` raises it."""
    with open(path, "rb") as f:
        head = f.read(_WIDE_HEAD)
    for mark, name in _WIDE_MARKS:
        if head.startswith(mark):
            return name
    text = head.rstrip(b"\0")
    if b"\0" not in text:
        return None
    for width, name in ((4, "UTF-32"), (2, "UTF-16")):
        shares = [_nul_share(text[i::width]) for i in range(width)]
        for kept in (0, width - 1):  # little-endian, big-endian
            if shares[kept] < 0.5 and all(share > 0.5 for i, share in enumerate(shares)
                                          if i != kept):
                return name
    return None


def _data_end(fd: int, size: int) -> int:
    """Where the last data of ``fd`` (``size`` bytes) ends: ``size`` unless the file
    ends in a hole (a sparse file's unwritten bytes, zeros), found with ``SEEK_DATA``
    and ``SEEK_HOLE`` from extent to extent; ``size`` where the system cannot tell."""
    pos = last = 0
    try:
        while pos < size:
            try:
                data = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # no data after pos: a hole to the end
                    return last
                raise
            last = pos = os.lseek(fd, data, os.SEEK_HOLE)
    except (AttributeError, OSError):  # no SEEK_DATA here, or a file system without it
        return size
    return min(last, size)


def _json_kind(value: Any) -> str:
    """What a parsed JSON ``value`` is, in JSON's words: ``an array``, ``a string``..."""
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    return "a number"


def _too_many_digits(exc: ValueError) -> str | None:
    """``it holds a whole number of 5,000 digits, not a plausible value`` where ``exc``
    is ``int``'s refusal of a JSON whole number past ``sys.get_int_max_str_digits()``
    (4,300 by default; ``Exceeds the limit (4300 digits) ... value has 5000 digits``),
    in place of its advice to raise that limit (``more than 4,300 digits`` where the
    message does not count them); ``None`` for any other ``ValueError``. ``json.loads``
    parses whole numbers with ``int`` itself (no ``parse_int``: a Python call for each
    would slow a large summary's read)."""
    text = str(exc)
    if not text.startswith("Exceeds the limit"):
        return None
    counted = re.search(r"value has (\d+) digits", text)
    digits = (f"{int(counted.group(1)):,}" if counted
              else f"more than {sys.get_int_max_str_digits():,}")
    return f"it holds a whole number of {digits} digits, not a plausible value"


def _shown(value: Any) -> str:
    """``value`` (parsed JSON) as a warning line quotes it: its JSON text cut to 40
    characters with ``...`` where cut (``{"count": 1, "host": "h", "ports": {"ctl...``),
    its characters as written but those that do not print (a control character, a lone
    surrogate) escaped as JSON escapes them (``"\\u202e"``); a whole number as written,
    its digits cut the same (10**400: ``1000000000000000000000000000000000000000...``,
    as ``_version_problem`` shows a ``format_version``), not in ``%g`` form
    (``1e+400``), which would read as the number 1E400, no whole number."""
    if isinstance(value, WrittenFloat):  # 1E400 as written, not as Infinity
        return _cut_quote(value.text)
    text = "".join(c if c.isprintable() else json.dumps(c)[1:-1]
                   for c in json.dumps(value, ensure_ascii=False))
    return _cut_quote(text)


def _cut_quote(text: str, keep: int = 40) -> str:
    """``text`` cut to ``keep`` characters with ``...`` where cut, as the project's
    other cut quotes are (``_shown_digest``)."""
    return text if len(text) <= keep else text[:keep] + "..."


# ======================================================================================
# Loading run folders into pandas (analysis only: pandas is imported inside these
# functions, so a benchmark run never imports it).

#: Columns of ``steps.csv`` that hold 0/1 flags (loaded as ``bool``).
_BOOL_COLUMNS = ("warmup", "counted")
#: Case fields a summary writes only where they hold (``true``), loaded as ``bool``
#: columns, ``False`` for the other cases (their NaN would not select rows).
_PRESENT_IF_TRUE = ("emulated", "floor_interrupted", "report_interrupted")
#: Whole-number columns that some cases lack (a replay's cases beside a steady run's,
#: a ``--tp`` or ``--pp`` run's beside a decode-steady run's, loaded together; a
#: single-process case's ``shm_cores`` beside its ``--transport shm`` twin's): the
#: whole-number case fields (``_WHOLE_CASE_FIELDS``: ``num_running``, ``tp``, ``pp``,
#: the core counts and the counts the p99s are over), loaded as pandas' nullable
#: ``Int64`` where a value is missing, so that they stay integers (``<NA>`` for the gap, not a float64 NaN); ``int64`` where
#: none is. A record (``records``, ``pace.as_record``) reads the gap as ``None``; code
#: that reads a row otherwise tests it with ``pace.is_missing`` or ``notna``.
_NULLABLE_INT_COLUMNS = ("num_running", "tp", "pp", "tp_cores", "pp_cores", "shm_cores",
                         "runner_cores",
                         "ttft_count", "tpot_count", "itl_count", "e2e_count",
                         "runner_gap_count")
#: Columns loaded as strings whatever their content.
_STR_COLUMNS = ("run_id", "case_id", "scenario", "policy", "codec", "workload", "req_id",
                "finish_reason", "transport", "model")


def records(frame) -> list[dict[str, Any]]:
    """The rows of ``frame`` (a pandas DataFrame, e.g. ``Results.cases``) in order, each
    a dict with NaN read as ``None`` (``pace.as_record``)."""
    return [as_record(r) for r in frame_records(frame)]


def _count_lines(f, size: int | None = None) -> int:
    """The line breaks of the open file ``f`` from where it is, in its first ``size``
    bytes (all when ``None``), read 1 MiB at a time."""
    left, count = (1 << 62) if size is None else size, 0
    while left > 0:
        chunk = f.read(min(1 << 20, left))
        if not chunk:
            break
        count += chunk.count(b"\n")
        left -= len(chunk)
    return count


def _complete_lines(path: Path, size: int | None = None) -> int | None:
    """``None`` when ``path`` (its first ``size`` bytes, all when ``None``: the file
    without its NUL padding, ``nul_padding``) ends with a line break (or is empty),
    else the number of whole lines before its cut last line."""
    with open(path, "rb") as f:
        end = f.seek(0, os.SEEK_END) if size is None else size
        if end == 0:
            return None
        f.seek(end - 1)
        if f.read(1) in (b"\n", b"\r"):
            return None
        f.seek(0)
        return _count_lines(f, end)


#: Column names named, at most, in the warning about a CSV header.
HEADER_NAMES_SHOWN = 5


def _names(names: list[str]) -> str:
    """``names`` joined by commas, the first ``HEADER_NAMES_SHOWN`` only ('and N more')."""
    more = len(names) - HEADER_NAMES_SHOWN
    return ", ".join(names[:HEADER_NAMES_SHOWN]) + (f" and {more} more" if more > 0 else "")


#: ``header_problem``'s words on a file of 0 bytes.
EMPTY_FILE = "it is empty (not even its header line)"


def _header_names(path: Path, size: int | None = None
                  ) -> tuple[list[str] | None, str | None]:
    """The column names of the CSV file ``path``'s header line (within its first
    ``size`` bytes, all when ``None``), or ``None`` and what is wrong with that line
    in words (``it is UTF-16 text, not UTF-8``: ``wide_text``)."""
    wide = wide_text(path)
    if wide:
        return None, f"it is {wide} text, not UTF-8"
    with open(path, "rb") as f:
        first = f.readline(-1 if size is None else size)
    if not first:
        return None, EMPTY_FILE
    if not first.strip():
        return None, "its first line is blank, not its header"
    if first.endswith(b"\n"):  # its CRs are its line end or STRAY_CR: read without them
        first = first.replace(b"\r", b"")
    try:
        names = next(csv.reader([first.decode("utf-8-sig").rstrip("\r\n")]))
    except (UnicodeDecodeError, csv.Error):
        return None, "its first line is not a CSV header"
    while len(names) > 1 and not names[-1].strip():  # a spreadsheet's empty columns
        names.pop()
    return names, None


def _required(columns: tuple[str, ...]) -> list[str]:
    """Of ``columns``, those a row cannot be read without: the identity and flag
    columns (``_STR_COLUMNS``, ``_BOOL_COLUMNS``), which every version of the file
    has held."""
    return [c for c in columns if c in _STR_COLUMNS or c in _BOOL_COLUMNS]


def header_problem(path: Path, columns: tuple[str, ...], size: int | None = None
                   ) -> str | None:
    """What is wrong with the header line of the CSV file ``path`` (its first ``size``
    bytes, all when ``None``), whose columns
    should be ``columns`` (in any order), in words (``its header is not ...``); ``None``
    when it names only those columns and all of the identity and flag ones
    (``_required``). A header that lacks some measured columns is a run written before
    they existed: ``_read_csv`` loads it and leaves them empty."""
    names, problem = _header_names(path, size)
    if names is None:
        return problem
    missing = [c for c in columns if c not in names]
    unexpected = [n for n in names if n not in columns]
    if not unexpected and not any(c in missing for c in _required(columns)):
        return None
    parts = ([f"missing {_names(missing)}"] if missing else []) + (
        [f"unexpected {_names(unexpected)}"] if unexpected else [])
    return f"its header is not {path.name}'s columns ({'; '.join(parts)})"


#: Columns whose absence (a run written before they existed) ``_read_csv`` does not
#: note: ``num_waiting`` labels a timed replay's pace, and the report already says
#: which measure labelled each (``tables.pace_measures_sentence``: the older
#: ``arrival_span_share`` for such a run); no other figure reads it.
#: ``gc_ns`` and ``runner_gc_ns``: the collections' time, which only the findings'
#: collector line gives (``report.collector``), which goes without it.
QUIET_ABSENT_COLUMNS = ("num_waiting", "gc_ns", "runner_gc_ns") + OPTIONAL_RUNNER_COLUMNS


def _parser_out_of_memory(exc: BaseException) -> bool:
    """Whether pandas' C parser raised ``exc`` (a ``ParserError``, a ``ValueError``)
    for want of memory, not for the file: ``C error: out of memory``, or, under an
    address-space limit (``ulimit -v``), ``C error: Calling read(nbytes) on source
    failed`` (its read of the file refused a buffer; an I/O error raises the
    ``OSError`` itself)."""
    import resource

    text = str(exc)
    if not isinstance(exc, ValueError) or "Error tokenizing data. C error: " not in text:
        return False
    limited = resource.getrlimit(resource.RLIMIT_AS)[0] != resource.RLIM_INFINITY
    return "C error: out of memory" in text or (
        limited and "C error: Calling read(nbytes) on source failed" in text)


def _read_csv(pd, path: Path, columns: tuple[str, ...], notes: list[str] | None = None,
              flags: tuple[str, ...] = ()):
    """``path`` as a DataFrame (``columns`` when it is empty). A last line cut mid-row
    (the writer was killed) is left out and said in ``notes``; so is every row of a
    file whose header is not ``columns`` (``header_problem``: its rows cannot be
    told apart), which loads as an empty frame, and each line with an unterminated
    quote or only commas (``_data_lines``: named by line number). Columns of
    ``columns`` its header lacks (a run written before they existed) are NaN, and
    said in ``notes`` (but for ``QUIET_ABSENT_COLUMNS``). NUL bytes that end the file
    (``nul_padding``: a crash can leave them) are never read into memory: the file is
    read as if it ended before them, said in ``notes`` (``it ends in N bytes of NUL
    padding (a crash can leave it); left out``). Only an empty field is read as missing:
    ``nan``, ``NaN``, ``NA``, ``null`` and pandas' other such words are values that are
    not numbers (``_numeric_rows``: their row left out, said in ``notes``; no run
    writes them). A value that is not a number in one of
    ``flags`` (steps.csv's ``counted`` and ``warmup``) is left empty, its row kept
    (``_numeric_rows``), for the case's check to name it (``row_checks._step_problem``:
    the case is left out, as its flags no longer say which rows count). Raises
    ``ResultsError`` when ``path`` is not a regular file that can be looked up
    (``why_not_a_file``)."""
    if not path.is_file():
        raise ResultsError(f"{path.parent}: not a complete run folder ({why_not_a_file(path)})")
    try:
        size, padding = _unpadded_size(path, notes)
        wrong = header_problem(path, columns, size)
        if wrong is not None:
            with open(path, "rb") as f:
                data = f.read(size)
            # rstrip: the NUL bytes of UTF-16 or UTF-32 text's last line break
            rows = max(_line_count(data.rstrip(b"\0")) - 1, 0)
            if notes is not None:
                left = ("nothing is loaded from it" if rows == 0 else "its row is left out"
                        if rows == 1 else f"its {rows:,} rows are left out")
                notes.append(f"{wrong}, so {left}")
            return pd.DataFrame(columns=list(columns))
        names, _ = _header_names(path, size)
        absent = [c for c in columns if c not in names]
        named = [c for c in absent if c not in QUIET_ABSENT_COLUMNS]
        if named and notes is not None:
            notes.append(f"its header lacks {_names(named)} (a run written before "
                         f"{'that column' if len(named) == 1 else 'those columns'} "
                         "existed, or the file edited): left empty, and the summary's "
                         "figures over it not checked against it")
        whole = _complete_lines(path, size)
        if whole is not None and notes is not None:
            notes.append("its last line is cut mid-row (left out)")
        if whole is not None and whole <= 1:
            return pd.DataFrame(columns=list(columns))
        header, lines, damaged, stray = _data_lines(path, whole, size)
        if notes is not None:
            notes.extend(f"{_lines_named(numbers)} {why} (left out)"
                         for why, numbers in damaged.items() if numbers)
        trimmed = [_trim_empty_tail(line, len(names)) for line in [header, *lines]]
        widths = _field_counts(trimmed[1:])
        source = path
        if (padding or stray or any(damaged.values()) or trimmed != [header, *lines]
                or max(widths, default=0) > len(names)):
            # pandas reads the lines kept (without a spreadsheet's empty columns past
            # the header's, nor a row of more fields than it: read first, pandas would
            # take its first field for an index and shift every row), each a row on
            # its own (_whole_rows counts those left out)
            header = trimmed[0]
            lines = [ln for ln, w in zip(trimmed[1:], widths) if w <= len(names)]
            source = io.BytesIO(b"\n".join([header, *lines, b""]))
            whole = None
        # only an empty field is missing: pandas' other NA words (nan, NaN, NA, null,
        # None, ...), which no run writes, stay text, for _numeric_rows to leave out as
        # values that are not numbers
        df = pd.read_csv(source, keep_default_na=False, na_values=[""], low_memory=False,
                         on_bad_lines="skip", nrows=None if whole is None else whole - 1)
    except pd.errors.EmptyDataError:
        df = pd.DataFrame(columns=list(columns))
    except (OSError, ValueError) as exc:
        if _parser_out_of_memory(exc):  # the memory limit's one line (bench.py), exit 1
            raise MemoryError(f"cannot read {path}: {exc}") from None
        raise ResultsError(f"cannot read {path}: {exc}") from None
    df = _numeric_rows(pd, _whole_rows(df, widths, len(names), notes), notes, flags)
    for col in absent:
        df[col] = float("nan")
    return df


def _unpadded_size(path: Path, notes: list[str] | None) -> tuple[int, int]:
    """The bytes of ``path`` before the NUL bytes it ends in, and how many those are
    (``nul_padding``); where there are any, ``notes`` says so in one line, as it does a
    cut last line: ``it ends in 3,221,225,472 bytes of NUL padding (a crash can leave
    it); left out``."""
    padding = nul_padding(path)
    if padding and notes is not None:
        notes.append(f"it ends in {nul_bytes(padding)} (a crash can leave it); left out")
    return path.stat().st_size - padding, padding


#: The words for each kind of file, by ``stat.S_IFMT`` (``file_kind``).
FILE_KINDS = {stat.S_IFREG: "a regular file", stat.S_IFDIR: "a folder",
              stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket",
              stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device"}


def file_kind(mode: int) -> str:
    """The kind of file ``mode`` (an ``st_mode``, as ``os.stat`` gives it) is, in the
    words the loaders' lines use (``FILE_KINDS``): ``a folder``, ``a FIFO``, ``a
    socket``, ``a character device``, ``a block device``, ``a regular file``;
    ``something else`` for any other kind. Raises nothing."""
    return FILE_KINDS.get(stat.S_IFMT(mode), "something else")


def why_not_a_file(path: Path) -> str:
    """Why ``path`` (a run's file that ``is_file`` found no regular file: a CSV file,
    a capture file) cannot be read, in words: ``no steps.csv`` when nothing is there,
    ``steps.csv is a dangling link (to TARGET), not a regular file`` for a link to
    nothing (``dangling_link``), ``steps.csv is a FIFO, not a regular file`` for a folder,
    FIFO, socket or device (``file_kind``; never opened: a FIFO would block),
    ``steps.csv cannot be read: Too many levels of symbolic links`` where the system
    will not look it up (a link loop, a folder on the way that cannot be searched).
    Looks ``path`` up once (links followed); raises nothing."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        dangling = dangling_link(path)
        return f"no {path.name}" if dangling is None else (
            f"{path.name} is {dangling}, not a regular file")
    except OSError as exc:
        return f"{path.name} cannot be read: {exc.strerror or exc}"
    kind = "something else" if stat.S_ISREG(mode) else file_kind(mode)
    return f"{path.name} is {kind}, not a regular file"


def dangling_link(path: Path) -> str | None:
    """``path`` in words where it is a symbolic link to nothing (its target, or a
    folder on the way to it, missing): ``a dangling link (to TARGET)``, ``TARGET`` as
    the link holds it (``os.readlink``); ``None`` where it is no link, or a link whose
    target is there or cannot be looked up (a link loop: ``why_not_a_file`` says
    so). Raises nothing."""
    try:
        os.stat(path)
    except FileNotFoundError:
        try:
            return f"a dangling link (to {os.readlink(path)})"
        except OSError:  # no link (nothing there), or gone meanwhile
            return None
    except (OSError, ValueError):  # a link loop, ...: not dangling; a NUL in the name
        return None
    return None


#: ``_data_lines``' words on each kind of line it leaves out.
UNTERMINATED_QUOTE = "an unterminated quote"
ONLY_COMMAS = "only commas"
NOT_UTF8 = "bytes that are not UTF-8 text"


def _open_quote(line: bytes) -> bool:
    """Whether a quoted field of the CSV line ``line`` is still open at its end (a
    ``"`` that opens a field and is not closed on the line), read as pandas' and
    Python's CSV readers read it: a ``"`` opens a quoted field only at the start of
    one, and ``""`` inside it is a quote."""
    state = "start"  # start | field | quoted | quote (a " inside a quoted field)
    for ch in line:
        if state == "quoted":
            state = "quote" if ch == 0x22 else "quoted"
        elif state == "quote" and ch == 0x22:
            state = "quoted"
        elif ch == 0x2C:  # ,
            state = "start"
        else:
            state = "quoted" if state == "start" and ch == 0x22 else "field"
    return state == "quoted"


def _lines_named(numbers: list[int]) -> str:
    """``line 7 holds``, ``lines 7 and 9 hold``, ``lines 1, 2, 3, 4, 5 and 2 more
    hold``: the (1-based) line numbers of a file, the first ``REQUESTS_NAMED``."""
    shown = [f"{n:,}" for n in numbers]
    if len(shown) == 1:
        return f"line {shown[0]} holds"
    more = len(shown) - REQUESTS_NAMED
    named = (f"{', '.join(shown[:REQUESTS_NAMED])} and {more} more" if more > 0
             else f"{', '.join(shown[:-1])} and {shown[-1]}")
    return f"lines {named} hold"


#: A carriage return that does not end its line (``\r`` then a byte other than
#: ``\r`` or ``\n``): left where the run's ``\r\n`` line end was by an edit that ends
#: lines at ``\n`` only (``sed 's/$/,x/'`` makes ``...\r,x\n``). The run never writes
#: one inside a field, so a line is read without it, as the edit meant: a ``\r`` is no
#: line break of its own (a line is numbered, and counted, as ``sed``, ``grep -n`` and
#: ``wc -l`` do).
STRAY_CR = re.compile(rb"\r[^\r\n]")


def _line_count(data: bytes) -> int:
    """The lines of ``data`` (a file's bytes, blank lines included): its ``\\n`` line
    breaks, and one more for a last line without one (``STRAY_CR``: a ``\\r`` is no
    line break of its own); those ``bytes.splitlines`` tells in text without a ``\\n``
    (a classic Mac save, lines ended by ``\\r``)."""
    if b"\n" not in data:
        return len(data.splitlines())
    return data.count(b"\n") + (not data.endswith(b"\n"))


def _data_lines(path: Path, whole: int | None, size: int | None = None
                ) -> tuple[bytes, list[bytes], dict[str, list[int]], bool]:
    """The CSV file ``path``'s header line (of its first ``size`` bytes, all when
    ``None``), its data lines that can be read (the first
    ``whole - 1`` only when ``whole`` is given; blank lines skipped, as pandas does),
    the numbers (1-based, the header's 1) of those left out, by why
    (``UNTERMINATED_QUOTE``, ``ONLY_COMMAS``, ``NOT_UTF8``: a byte a run never
    writes, which would make the whole file unreadable). The run writes a row on one line
    (``harness.run_folder``'s ``csv.writer`` quotes only a field with a comma, a
    ``case_id`` or ``workload`` of several labels, and no field holds a line break),
    so a line whose quoted field does not close on it (an edit) is damaged on its own:
    read as CSV, the field would run to the next ``"`` in the file and swallow the
    rows between. A line of only commas is a row with no value (no ``case_id``). Lines
    end at ``\\n`` (``_line_count``) and are returned without their ``\\r`` bytes; the
    last item is whether any was a ``STRAY_CR`` (pandas would break the line there)."""
    with open(path, "rb") as f:
        data = f.read(-1 if size is None else size)
    stray = b"\r" in data and STRAY_CR.search(data) is not None
    lines = [line.replace(b"\r", b"") for line in data.split(b"\n")] if b"\r" in data \
        else data.split(b"\n")
    header, rows = (lines[0] if lines else b""), lines[1:None if whole is None else whole]
    damaged: dict[str, list[int]] = {UNTERMINATED_QUOTE: [], ONLY_COMMAS: [], NOT_UTF8: []}
    quotes = b'"' in data
    try:
        data.decode("utf-8")
        text = True
    except UnicodeDecodeError:  # a byte edited or damaged: find its lines
        text = False
    kept = []
    for number, line in enumerate(rows, start=2):
        if not line.strip():
            continue
        if not text and not _utf8(line):
            damaged[NOT_UTF8].append(number)
        elif quotes and b'"' in line and _open_quote(line):
            damaged[UNTERMINATED_QUOTE].append(number)
        elif not line.strip(b", \t"):
            damaged[ONLY_COMMAS].append(number)
        else:
            kept.append(line)
    return header, kept, damaged, stray


def _trim_empty_tail(line: bytes, ncols: int) -> bytes:
    """``line`` (a CSV line without quotes) without its fields past the first ``ncols``
    when every one of those is empty: the empty columns a spreadsheet saves after the
    last named one (``a,b,,``); otherwise, or with a quote, as it is."""
    if b'"' in line or line.count(b",") < ncols:
        return line
    fields = line.split(b",")
    if any(f.strip() for f in fields[ncols:]):
        return line
    return b",".join(fields[:ncols])


def _utf8(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _field_counts(lines: list[bytes]) -> list[int]:
    """The number of fields of each of ``lines`` (CSV data lines, ``_data_lines``:
    none blank, each a whole row)."""
    if not any(b'"' in line for line in lines):  # no quoted field: the commas tell
        return [line.count(b",") + 1 for line in lines]
    return [len(next(csv.reader([line.decode("latin-1")]))) for line in lines]


def _whole_rows(df, widths: list[int], ncols: int, notes: list[str] | None):
    """``df`` without the rows that had fewer fields than the header (``widths``: each
    row's count, ``_field_counts``; pandas pads such a row, its values in the wrong
    columns); rows with more were left out before (``_read_csv``). Both are counted in
    ``notes``. ``df`` as it is when ``widths`` does not match its rows."""
    kept = [w for w in widths if w <= ncols]
    wrong = sum(w != ncols for w in widths)
    if not wrong or len(kept) != len(df):
        return df
    if notes is not None:
        rows = "1 row does" if wrong == 1 else f"{wrong:,} rows do"
        notes.append(f"{rows} not have the header's {ncols} fields (left out)")
    return df[[w == ncols for w in kept]].reset_index(drop=True)


def _numeric_rows(pd, df, notes: list[str] | None = None, flags: tuple[str, ...] = ()):
    """``df`` with every column but the identity ones (``_STR_COLUMNS``) numeric: a row
    with a value there that is not a number (an edited or garbled file; ``nan`` in any
    case included, which ``_read_csv`` keeps as text) is left out and counted in
    ``notes``, naming the columns; an empty value stays NaN, as does a
    value that is not a number in a column of ``flags`` (its row kept). A column
    that pandas read as integers or floats already (most of them) holds no such value
    and is left as it is read: converting it again changed nothing and took most of a
    small run's reading time."""
    import numpy as np

    parsed = set() if df.columns.has_duplicates else {
        c for c, t in df.dtypes.items() if isinstance(t, np.dtype) and t.kind in "iuf"}
    numeric = [c for c in df.columns if c not in _STR_COLUMNS and c not in parsed]
    bad = pd.Series(False, index=df.index)
    where: list[str] = []
    for col in numeric:
        if col in flags:  # NaN: the case's check names it
            df[col] = pd.to_numeric(df[col], errors="coerce")
            continue
        wrong = pd.to_numeric(df[col], errors="coerce").isna() & df[col].notna()
        if wrong.any():
            bad |= wrong
            where.append(str(col))
    if bad.any():
        n = int(bad.sum())
        if notes is not None:
            rows = "1 row holds" if n == 1 else f"{n:,} rows hold"
            notes.append(f"{rows} a value that is not a number (in {_names(where)}; "
                         "left out)")
        df = df[~bad].reset_index(drop=True)
    for col in numeric if len(df) else ():
        df[col] = pd.to_numeric(df[col])
    return df


#: Requests named, at most, in a line on impossible rows (``_requests_named``).
REQUESTS_NAMED = 5


#: The ``summary.json`` case count of the rows each CSV file holds of a case, where
#: ``_read_rows`` refuses the file empty.
ROW_COUNTS = {"steps.csv": "num_total_steps", "requests.csv": "num_requests"}


def _refuse_emptied(path: Path) -> None:
    """``ResultsError`` ``RUN: not a complete run folder (NAME is empty)`` when the CSV
    file ``path`` is there but of 0 bytes (not even its header, which the run wrote
    when it began: a write that failed, or a file emptied, lost its rows), or holds
    only NUL bytes (``nul_padding``: ``(steps.csv is empty but for 4,096 bytes of NUL
    padding, which a crash can leave)``)."""
    if not path.is_file():
        return
    size, padding = _unpadded_size(path, None)
    if _header_names(path, size)[1] == EMPTY_FILE:
        but = (f" but for {nul_bytes(padding)}, which a crash can leave"
               if padding else "")
        raise ResultsError(f"{path.parent}: not a complete run folder ({path.name} is "
                           f"empty{but})")


def _read_rows(pd, path: Path, columns: tuple[str, ...], valid: list[dict[str, Any]],
               notes: list[str]):
    """``steps.csv`` or ``requests.csv`` (``path``) as ``_read_csv`` reads it, notes in
    ``notes``; ``ResultsError`` (``_refuse_emptied``: ``RUN: not a complete run folder
    (steps.csv is empty)``) when it is of 0 bytes while a case of ``valid`` (summary
    entries) counts rows of it (``ROW_COUNTS``: ``num_total_steps``,
    ``num_requests``), as ``itl.csv`` is where a case has ITL figures (``_read_itl``):
    its rows are lost, not cut short. A case whose rows the run folder could not take
    (``steps_kept_in``) counts none."""
    count = ROW_COUNTS[path.name]
    if any(isinstance(c.get(count), numbers.Real) and c[count] > 0
           and not isinstance(c.get("steps_kept_in"), str) for c in valid):
        _refuse_emptied(path)
    return _read_csv(pd, path, columns, notes, flags=_BOOL_COLUMNS)


def _concat(pd, frames: list):
    """The runs' ``frames`` of one table as one, in order, with every column any of
    them has. A run with no row in it (one that finished no case) adds none and leaves
    the others' integer columns (``repetition``, ``num_steps``) integers: its empty
    frame is not concatenated, which would turn them into floats (``0.0``). Nor is a
    column with no value in a run (all NaN: a figure that run has not, an optional
    per-step column): pandas 2 warns that such columns will stop setting the joined
    column's type, and the column comes back where no run has a value."""
    full = [f for f in frames if len(f)] or frames[:1]
    if len(full) > 1:
        full = [f.loc[:, f.notna().any()] for f in full]
    df = full[0] if len(full) == 1 else pd.concat(full, ignore_index=True)
    df = df.reindex(columns=list(dict.fromkeys(c for f in frames for c in f.columns)))
    return df.reset_index(drop=True)
