"""Strict loader for the public Azure LLM inference trace (November 2023).

Source: ``Azure/AzurePublicDataset``, files ``data/AzureLLMInferenceTrace_conv.csv`` and
``data/AzureLLMInferenceTrace_code.csv``, added in commit
790921015d50dd6aae7f7e47f39ba0e235ad6b08. It is the data analysed in "Splitwise: Efficient
generative LLM inference using phase splitting" (Patel et al., ISCA 2024), and is licensed
CC BY 4.0; cite the Splitwise paper when using it.

Format (one request per row)::

    TIMESTAMP,ContextTokens,GeneratedTokens
    2023-11-16 18:15:46.6805900,374,44
    ...

- ``TIMESTAMP``: arrival time ``YYYY-MM-DD HH:MM:SS.fffffff`` (7 fractional digits, i.e.
  100 ns resolution; no time zone). This loader accepts 0 to 9 fractional digits (no dot
  for 0) and parses them exactly, with integer arithmetic, so arrival times carry no
  floating-point drift beyond the single final conversion to seconds.
- ``ContextTokens``: prompt length in tokens, an integer >= 1.
- ``GeneratedTokens``: output length in tokens, an integer >= 1.

The published files are ASCII with CRLF line endings and no newline after the last row.
The loader also accepts LF or CR-only line endings, a trailing newline or not, and a
UTF-8 byte-order mark. It is strict about everything else: the header must be exactly
the three column names above, in that order; fields are not quoted (quotes are taken
literally and then fail validation); blank lines are errors, except at the end of the
file (an editor's trailing empty lines); timestamps must not go
backwards (equal timestamps are allowed); a field may be at most 64 characters and a
line at most 1 KiB. Every problem raises :class:`TraceError`, a ``ValueError`` whose
message is one line naming the file and the 1-based line number (the header is line 1).

The trace files are data, not code: pass them to :func:`load_azure_trace` by path (for
example from a shared data directory) and never copy them into this project.

The loader uses the ``csv`` module rather than pandas so that importing it stays cheap.
"""

from __future__ import annotations

import csv
import hashlib
import operator
import os
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Iterator, Optional, Union

import numpy as np

from ipc_bench.engine.input_files import EMPTY_PIPE, is_pipe, open_input_fd

__all__ = ["TraceError", "Trace", "load_azure_trace", "COLUMNS"]

#: SHA-256 of each published Azure trace file as a whole (Azure/AzurePublicDataset
#: commit 790921015d50dd6aae7f7e47f39ba0e235ad6b08) -> its file name: a trace read to
#: its end with one of these digests is the published file, byte for byte (which ends
#: without a line break after its last row).
PUBLISHED_SHA256 = {
    "2f1e5b666d4e3055fdbba98598ce2ec307767b9064e03e2fa46676dbcc7d0bf8":
        "AzureLLMInferenceTrace_conv.csv",
    "54e9a6d2a4bd06ba1e060304b900abbc74cbea53de96506e60fe5bb4f2277fb6":
        "AzureLLMInferenceTrace_code.csv",
}

#: The header of an Azure LLM inference trace, in order.
COLUMNS: tuple[str, str, str] = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")

_HEADER_TEXT = ",".join(COLUMNS)
_MAX_LINE_CHARS = 1024  # "huge row": a line (without its terminator) over 1 KiB
_MAX_FIELD_CHARS = 64
_INT64_MAX = int(np.iinfo(np.int64).max)
_NS_PER_S = 1_000_000_000
_SECONDS_PER_DAY = 86_400
# The UTF-8 byte-order mark as it appears when the bytes are read as Latin-1.
_BOM_LATIN1 = "\xef\xbb\xbf"
# The first two bytes of a gzip file (RFC 1952), read as Latin-1.
_GZIP_MAGIC_LATIN1 = "\x1f\x8b"

_TIMESTAMP_RE = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?"
)
#: A whole number in ASCII digits only: ``str.isdigit`` and ``int`` would take other
#: digits too (``١``, ``²``); the token-id histogram's reader checks its numbers with it.
UINT_RE = re.compile(r"[0-9]+")

PathArg = Union[str, "os.PathLike[str]"]


class TraceError(ValueError):
    """A trace file is missing, unreadable or malformed.

    The message is one line naming the file and, where the problem is on a line, its
    1-based line number (the header is line 1), e.g.
    ``trace.csv line 7: GeneratedTokens is not a positive integer (digits only): 'abc'``.
    """


@dataclass(frozen=True, eq=False)
class Trace:
    """Requests of an Azure LLM inference trace, one entry per CSV data row, in file order.

    Attributes (N = number of requests):

    - ``path``: the file the trace was loaded from, as given to the loader.
    - ``resolved_path``: ``os.path.realpath(path)`` when :func:`load_azure_trace` read
      it (symbolic links and a relative path's working directory resolved), so that
      two spellings of one file name it alike; ``None`` for a pipe (no file to read
      again), a trace built by hand or cut by :meth:`head`.
    - ``arrival_s``: float64 array, shape (N,), seconds since the first row's timestamp,
      so ``arrival_s[0] == 0.0``; non-decreasing.
    - ``prompt_lens``: int64 array, shape (N,), prompt length in tokens (``ContextTokens``),
      each >= 1.
    - ``output_lens``: int64 array, shape (N,), output length in tokens
      (``GeneratedTokens``), each >= 1.
    - ``sha256``: hex SHA-256 of the bytes :func:`load_azure_trace` read: the header
      through the last row it replays (with ``max_requests``, the rows after are not
      read), trailing blank lines included; ``None`` for a trace built by hand or cut
      by :meth:`head`. It
      names the content replayed, also when the file was a pipe that can be read once.

    Arrays made by :func:`load_azure_trace` are read-only. Equality is identity
    (``eq=False``), since element-wise array comparison has no single truth value.

    Source: Azure/AzurePublicDataset, commit 790921015d50dd6aae7f7e47f39ba0e235ad6b08
    (``data/AzureLLMInferenceTrace_{conv,code}.csv``, CC BY 4.0), the data of
    "Splitwise: Efficient generative LLM inference using phase splitting"
    (Patel et al., ISCA 2024).
    """

    path: str
    arrival_s: np.ndarray
    prompt_lens: np.ndarray
    output_lens: np.ndarray
    sha256: Optional[str] = None
    resolved_path: Optional[str] = None
    #: The 1-based line of the last row replayed where it had no line ending although
    #: the lines before it end in ``\r\n`` (the Azure files' endings): a file cut
    #: short mid-row reads so (``…,381,8`` of ``…,381,84``); ``None`` otherwise.
    unterminated_row: Optional[int] = None
    #: Whether the file has a row after the last one read: ``True`` where
    #: ``max_requests`` stopped the reading before one (a line other than a blank one
    #: follows), ``False`` where the file was read to its end; ``None`` for a trace
    #: built by hand.
    rows_after: Optional[bool] = None

    def __post_init__(self) -> None:
        for name, dtype in (
            ("arrival_s", np.float64),
            ("prompt_lens", np.int64),
            ("output_lens", np.int64),
        ):
            arr = getattr(self, name)
            if not isinstance(arr, np.ndarray) or arr.dtype != dtype or arr.ndim != 1:
                raise TypeError(f"Trace.{name} must be a 1-D {np.dtype(dtype).name} numpy array")
        n = self.arrival_s.shape[0]
        if self.prompt_lens.shape[0] != n or self.output_lens.shape[0] != n:
            raise ValueError(
                "Trace arrays differ in length: "
                f"arrival_s {n}, prompt_lens {self.prompt_lens.shape[0]}, "
                f"output_lens {self.output_lens.shape[0]}"
            )

    def __len__(self) -> int:
        return int(self.arrival_s.shape[0])

    def head(self, n: int) -> "Trace":
        """The first ``n`` requests as a new Trace (all of them if ``n >= len(self)``).

        The arrays are views of this trace's arrays; ``arrival_s`` keeps its origin (the
        first row's timestamp), so ``head(n).arrival_s[0] == 0.0`` for ``n >= 1``.
        """
        if isinstance(n, bool):
            raise TypeError("Trace.head(n): n must be an int, not bool")
        n = operator.index(n)
        if n < 0:
            raise ValueError(f"Trace.head(n): n must be >= 0, got {n}")
        return Trace(
            path=self.path,
            arrival_s=self.arrival_s[:n],
            prompt_lens=self.prompt_lens[:n],
            output_lens=self.output_lens[:n],
            rows_after=True if n < len(self) else self.rows_after,
        )


def _shown_path(path: str) -> str:
    """The path as it goes into a message, kept on one line."""
    return path if path.isprintable() else repr(path)


def _show(text: str, limit: int = 80) -> str:
    """repr() of text, cut to ``limit`` characters: always one line."""
    if len(text) <= limit:
        return repr(text)
    return repr(text[:limit]) + f"... ({len(text)} characters)"


class _Lines:
    """Iterator over the lines of a text file opened with ``newline=''`` and Latin-1.

    Yields each line without its terminator (``\\r\\n``, ``\\n`` or ``\\r``), decoded as
    UTF-8, and keeps ``lineno`` (1-based) of the line last yielded. Reads at most a little
    over 1 KiB per line, so a huge line fails fast instead of filling memory.
    """

    def __init__(self, f, where) -> None:
        self._f = f
        self._where = where
        self.lineno = 0
        #: 1-based numbers of the blank lines that follow a line ended by a lone "\r"
        #: (a "\r\r\n" ending, a carriage return doubled: each "\r" ends a line)
        self.doubled_cr: set[int] = set()
        self._after_cr = False
        #: whether the line last read had no terminator (the end of a file that does not
        #: end in a line break), and whether every line before it ended in "\r\n"
        self.unterminated = False
        self.crlf = False
        #: SHA-256 of every byte read so far (Latin-1 text: one character per byte).
        self.digest = hashlib.sha256()

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        try:
            raw = self._f.readline(_MAX_LINE_CHARS + 3)
        except OSError as exc:
            raise self._where(self.lineno + 1, f"read error: {exc.strerror or exc}") from None
        if not raw:
            raise StopIteration
        self.digest.update(raw.encode("latin-1"))
        self.lineno += 1
        if self._after_cr and raw in ("\r\n", "\n"):
            self.doubled_cr.add(self.lineno)
        self._after_cr = raw.endswith("\r")
        self.unterminated = not raw.endswith(("\r", "\n"))
        if not raw.endswith("\r\n") and not self.unterminated:
            self.crlf = False  # a line ending otherwise: not a CRLF file
        if raw.endswith("\r\n"):
            self.crlf = self.lineno == 1 or self.crlf  # every line so far ends in \r\n
            line = raw[:-2]
        elif raw.endswith(("\r", "\n")):
            line = raw[:-1]
        else:
            line = raw
        if self.lineno == 1 and line.startswith(_BOM_LATIN1):
            line = line[len(_BOM_LATIN1):]
        if self.lineno == 1 and line.startswith(_GZIP_MAGIC_LATIN1):
            raise self._where(
                1, "a gzip file, not CSV text: decompress it first (gunzip FILE, or "
                "--trace <(zcat FILE))"
            )
        if len(line) > _MAX_LINE_CHARS:
            raise self._where(
                self.lineno, f"huge row: line is longer than {_MAX_LINE_CHARS} bytes"
            )
        try:
            return line.encode("latin-1").decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self._where(
                self.lineno, f"not UTF-8 text (byte {exc.start + 1} of the line)"
            ) from None


def _parse_timestamp_ns(value: str) -> Optional[int]:
    """Nanoseconds since 0001-01-01 00:00:00, or None if ``value`` is not a timestamp.

    Raises ValueError (from datetime) for a well-formed but impossible date or time.
    """
    m = _TIMESTAMP_RE.fullmatch(value)
    if m is None:
        return None
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    dt = datetime(year, month, day, hour, minute, second)  # validates ranges
    frac = m.group(7) or ""
    seconds = (dt.toordinal() - 1) * _SECONDS_PER_DAY + hour * 3600 + minute * 60 + second
    return seconds * _NS_PER_S + int(frac.ljust(9, "0") or "0")


def load_azure_trace(path: PathArg, max_requests: Optional[int] = None) -> Trace:
    """Load an Azure LLM inference trace CSV (see the module docstring for the format).

    ``path``: the trace file (str or path-like), passed by path, never vendored.
    ``max_requests``: read at most this many data rows (>= 1) and stop there, so rows
    after them are never read; ``None`` reads the whole file.

    Returns a :class:`Trace` with at least one request. Raises :class:`TraceError`, a
    one-line message naming the file and line, for any problem with the file.
    """
    path_str = os.fsdecode(path)
    shown = _shown_path(path_str)

    if max_requests is not None:
        if isinstance(max_requests, bool):
            raise TypeError("max_requests must be an int or None, not bool")
        max_requests = operator.index(max_requests)
        if max_requests < 1:
            raise TraceError(f"{shown}: max_requests must be >= 1 or None, got {max_requests}")

    def where(lineno: int, problem: str) -> TraceError:
        return TraceError(f"{shown} line {lineno}: {problem}")

    with _open_trace(path_str, shown) as f:
        # Resolved as it is read: a relative path against this working directory.
        resolved = None if is_pipe(f.fileno()) else os.path.realpath(path_str)
        ts_ns, prompt, output, sha256, cut, after = _read_rows(f, where, max_requests,
                                                              shown)
    t0 = ts_ns[0]
    # Python int / int is correctly rounded, so each arrival is exact to float64 precision.
    arrival_s = np.array([(t - t0) / _NS_PER_S for t in ts_ns], dtype=np.float64)
    prompt_lens = np.array(prompt, dtype=np.int64)
    output_lens = np.array(output, dtype=np.int64)
    for arr in (arrival_s, prompt_lens, output_lens):
        arr.flags.writeable = False
    return Trace(
        path=path_str, arrival_s=arrival_s, prompt_lens=prompt_lens, output_lens=output_lens,
        sha256=sha256, resolved_path=resolved, unterminated_row=cut, rows_after=after,
    )


def _open_trace(path_str: str, shown: str):
    """The trace file opened for reading; ``TraceError`` naming why it cannot be."""
    if os.path.isdir(path_str):
        raise TraceError(f"{shown}: is a directory, not a trace file")
    try:
        # A FIFO does not block here; anything but a regular file or a pipe is refused.
        return open(open_input_fd(path_str), "r", encoding="latin-1", newline="")
    except (FileNotFoundError, NotADirectoryError):
        raise TraceError(f"no such trace file: {shown}") from None
    except IsADirectoryError:
        raise TraceError(f"{shown}: is a directory, not a trace file") from None
    except OSError as exc:
        raise TraceError(f"cannot read trace file: {shown} ({exc.strerror or exc})") from None


def _read_rows(f, where, max_requests: Optional[int], shown: str
               ) -> tuple[list[int], list[int], list[int], str, Optional[int], bool]:
    """The header, then up to ``max_requests`` rows: (timestamps in ns, prompt
    lengths, output lengths, the SHA-256 of the bytes read up to the last row, the line
    of a last row without a line ending in a CRLF file, ``Trace.unterminated_row``,
    whether a row follows the last one read, ``Trace.rows_after``: one more line is
    read for it, outside the SHA-256), at least one row, timestamps sorted. Blank lines end the rows when nothing but blank lines follows
    them. A pipe with nothing in it is refused as such (``input_files.EMPTY_PIPE``),
    not as an empty file."""
    lines = _Lines(f, where)
    # One record per line: QUOTE_NONE makes quotes literal, so no record spans lines.
    reader = csv.reader(lines, quoting=csv.QUOTE_NONE, strict=True)

    def next_record() -> Optional[list[str]]:
        try:
            return next(reader)
        except StopIteration:
            return None
        except csv.Error as exc:
            raise where(lines.lineno, f"CSV error: {exc}") from None

    header = next_record()
    if header is None:
        if is_pipe(f.fileno()):
            raise TraceError(f"{shown}: {EMPTY_PIPE}")
        raise where(1, f"empty file; expected header {_HEADER_TEXT!r}")
    _check_header(header, where)

    ts_ns: list[int] = []
    prompt: list[int] = []
    output: list[int] = []
    prev_ns = -1
    prev_text = ""
    prev_line = 0
    cut: Optional[int] = None
    while max_requests is None or len(ts_ns) < max_requests:
        fields = next_record()
        if fields is None:
            break
        lineno = lines.lineno
        if not fields:  # blank: the end of the file, or an error at this line
            while (more := next_record()) == []:
                pass
            if more is None:
                break
            if lineno in lines.doubled_cr:
                raise where(lineno, f"blank line; expected a data row (line {lineno - 1} "
                                    "ends in \\r\\r\\n: a carriage return doubled, as "
                                    "when CRLF endings are converted twice?)")
        ns, ctx, gen = _parse_row(fields, lineno, where)
        if lines.unterminated and lines.crlf:
            cut = lineno
        if ns < prev_ns:
            raise where(
                lineno,
                f"timestamps are unsorted: TIMESTAMP {fields[0]!r} is earlier than "
                f"{prev_text!r} on line {prev_line}",
            )
        prev_ns, prev_text, prev_line = ns, fields[0], lineno
        ts_ns.append(ns)
        prompt.append(ctx)
        output.append(gen)

    if not ts_ns:
        raise where(lines.lineno + 1, "no data rows after the header")
    digest = lines.digest.hexdigest()
    return ts_ns, prompt, output, digest, cut, len(ts_ns) == max_requests and _more(lines)


def _more(lines: "_Lines") -> bool:
    """Whether a line other than a blank one is left in ``lines`` (read up to it; one
    that cannot be read counts as a row)."""
    try:
        return any(line != "" for line in lines)
    except TraceError:
        return True


def _check_header(fields: list[str], where) -> None:
    if tuple(fields) == COLUMNS:
        return
    found = ",".join(fields)
    if not fields or found == "":
        raise where(1, f"header missing: expected {_HEADER_TEXT!r}, found an empty line")
    if _TIMESTAMP_RE.fullmatch(fields[0]):
        raise where(
            1, f"header missing: expected {_HEADER_TEXT!r}, found a data row {_show(found)}"
        )
    missing = [c for c in COLUMNS if c not in fields]
    unexpected = [c for c in fields if c not in COLUMNS]
    details = []
    if missing:
        details.append("missing " + ", ".join(missing))
    if unexpected:
        details.append("unexpected " + ", ".join(_show(c, 40) for c in unexpected[:5]))
        if len(unexpected) > 5:
            details[-1] += f" and {len(unexpected) - 5} more"
    if not details:
        details.append("columns repeated or in the wrong order")
    raise where(
        1,
        f"bad header: expected {_HEADER_TEXT!r}, found {_show(found)} ({'; '.join(details)})",
    )


def _parse_row(fields: list[str], lineno: int, where) -> tuple[int, int, int]:
    for i, value in enumerate(fields):
        if len(value) > _MAX_FIELD_CHARS:
            name = COLUMNS[i] if i < len(COLUMNS) else f"field {i + 1}"
            raise where(
                lineno,
                f"huge row: {name} is {len(value)} characters long "
                f"(limit {_MAX_FIELD_CHARS}): {_show(value, 40)}",
            )
    if len(fields) != len(COLUMNS):
        if not fields:
            raise where(lineno, "blank line; expected a data row")
        raise where(
            lineno,
            f"expected {len(COLUMNS)} fields ({_HEADER_TEXT}), found {len(fields)}: "
            f"{_show(','.join(fields))}",
        )
    ts_text, ctx_text, gen_text = fields
    try:
        ns = _parse_timestamp_ns(ts_text)
    except ValueError as exc:
        raise where(lineno, f"TIMESTAMP is not a valid date and time: {ts_text!r} ({exc})") from None
    if ns is None:
        raise where(
            lineno,
            f"TIMESTAMP is not of the form 'YYYY-MM-DD HH:MM:SS.fffffff' (0 to 9 "
            f"fractional digits, no time zone): {ts_text!r}",
        )
    ctx = _parse_count("ContextTokens", ctx_text, "prompt", lineno, where)
    gen = _parse_count("GeneratedTokens", gen_text, "output", lineno, where)
    return ns, ctx, gen


def _parse_count(name: str, text: str, kind: str, lineno: int, where) -> int:
    if not UINT_RE.fullmatch(text):
        raise where(lineno, f"{name} is not a positive integer (digits only): {text!r}")
    value = int(text)
    if value == 0:
        raise where(lineno, f"{name} is 0; a request needs at least one {kind} token")
    if value > _INT64_MAX:
        raise where(lineno, f"{name} does not fit in int64: {text!r}")
    return value
