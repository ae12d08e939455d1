"""Loading run folders (``ipc_bench.harness.run_folder`` writes them; its docstring
gives the layout and the format history): ``read_summary`` and, into pandas, ``load``.

``load`` refuses or leaves out what a hand edit made inconsistent (its docstring lists
each check), so that no finding quotes a figure its run did not measure. Among them,
each case's ``summary.json`` figures are recomputed from its counted ``steps.csv`` rows
as ``analysis.summary`` computed them: totals (``STEP_SUMS``), means (``STEP_MEANS``),
medians (``STEP_MEDIANS``), the wire bytes per step (``WIRE_FIGURES``: payload and
ZMTP frame head) and the runner -> scheduler total (``r2s_wire_bytes_total``, from
all of its rows), the runner gap figures (``RUNNER_GAP_COLUMNS``) and the
``--tp`` / ``--pp`` figures whose inputs it holds (``HOP_FIGURES``: the broadcast's and
the ZeroMQ hops' bytes, the encode, rank 0's decode); its
``output_tokens_per_s`` from its own tokens, counted steps and mean step; a timed
replay's wall-time ``output_tokens_per_s`` from its ``requests.csv`` output tokens and
its ``wall_s``, and that ``wall_s`` (not recorded otherwise, so not recomputed) against
the end of its last step; its floor figures (``FLOOR_FIGURES``: floor median and mean,
floor tok/s, x floor) from its ``floor.csv`` rows; its request latencies
(``LATENCY_SOURCES``: ``ttft_ms_p50``... as ``analysis.summary.latency_summary``
computed them) from its ``requests.csv`` and ``itl.csv`` rows. A case that
disagrees is left out whole with one warning naming the figure and both values. A run
folder that is a copy of another one given is refused: the same start time
(``check_copies``) or the same per-step timings (``check_copied_steps``).
"""

from __future__ import annotations

import csv
import datetime
import errno
import io
import json
import math
import numbers
import os
import re
import stat
import sys
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ipc_bench.analysis.frames import frame_records
from ipc_bench.analysis.pace import as_record
from ipc_bench.analysis.stats import METHODS
from ipc_bench.engine.config import SEND
from ipc_bench.harness.environment import (REMOTE_RUNNERS_WORDS, iso_time,
                                           remote_runners_problem, remote_runners_shape)
from ipc_bench.harness.run_folder import (CASE_KEYS, CLAIM_FILE, FORMAT_VERSION,
                                          FRONTEND_CSV, PARTIAL_STEPS, REQUEST_COLUMNS,
                                          STEPS_HEADER, run_in_progress)
from ipc_bench.harness.spec import (NO_CODEC, OPTIONAL_RUNNER_COLUMNS, RUNNER_COLUMNS,
                                    RUNNER_TIMESTAMP_COLUMNS, SCHED_COLUMNS)


#: The codec of single-process cases (no IPC, no serialization; 0 bytes per step).
SINGLE_PROCESS_CODEC = NO_CODEC


class ResultsError(ValueError):
    """A result folder is missing, unreadable or of an unknown format version."""


class ResultsWarning(UserWarning):
    """A run folder loaded, but part of it is cut short (one line)."""


class RunStatusWarning(ResultsWarning):
    """A run folder loaded is not complete: still running, stopped (killed) or failed
    (one line, ``status_line``: its ``Results.status_detail`` and the cases loaded), or
    is complete but recorded a problem as it ended (``complete_problems_line``: its
    tables lost on a full stdout). ``warnings.simplefilter("ignore",
    RunStatusWarning)`` silences it alone."""


class IncompleteRunWarning(ResultsWarning):
    """A run reported that is not complete and was not read as still going (killed,
    stopped, failed): one line, ``incomplete_run_line``'s, which
    ``report.document.write_report`` issues once per such run after ``load``'s own
    warnings, and ``bench.py report`` prints on stderr as ``bench.py microbench`` prints
    its line of such a run (a ``RunStatusWarning``, which ``bench.py report`` leaves to
    the report's note, it is not)."""


class Summary(dict):
    """A parsed ``summary.json`` (``read_summary``): its top-level object, and in
    ``repeated`` one warning line for each key an object of the file gives twice or
    more, of which the last value is read (``PATH: key metadata is given 2 times (the
    last one read)``)."""

    repeated: list[str] = []


def read_summary(run_dir: str | os.PathLike) -> Summary:
    """``summary.json`` of ``run_dir`` (UTF-8, with or without a byte-order mark);
    an object that gives one key twice or more keeps its last value, as ``json`` does,
    and the returned ``Summary``'s ``repeated`` says so, one line a key
    (``_repeated_keys``);
    ``ResultsError`` if missing, unreadable (not JSON, or arrays or objects nested deeper than ``json`` can parse), not an object or
    of another format; checked before it is read (``_summary_size_problem``), so that
    nothing of it is read into memory: UTF-16 or UTF-32 text (``cannot read PATH: it
    is UTF-16 text, not UTF-8``), a file that ends in NUL bytes (``cannot read PATH:
    it ends in 4,294,967,296 bytes of NUL padding (a crash can leave it)``) or is
    larger than ``SUMMARY_MAX_BYTES``."""
    path = Path(run_dir) / "summary.json"
    try:  # utf-8-sig: a byte-order mark an editor saved the file with is no error
        problem = _summary_size_problem(path)
        twice: dict[int, tuple] = {}  # id(object) -> (object, {key: times given})
        data = None if problem else json.loads(path.read_text(encoding="utf-8-sig"),
                                               object_pairs_hook=_pairs_noting(twice))
    except FileNotFoundError:
        raise ResultsError(f"no summary.json in {run_dir}") from None
    except OSError as exc:
        raise ResultsError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ResultsError(f"cannot read {path}: {_too_many_digits(exc) or exc}") from None
    except RecursionError:  # arrays or objects nested past the interpreter's limit
        raise ResultsError(f"cannot read {path}: arrays or objects nested too deeply "
                           "to parse") from None
    if problem:
        raise ResultsError(f"cannot read {path}: {problem}")
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: not a JSON object (the file holds "
                           f"{_json_kind(data)})")
    repeated = [f"{path}: key {where} is given {n} times (the last one read)"
                for where, n in (_repeated_keys(data, twice) if twice else ())]
    data = Summary(data)
    data.repeated = repeated
    problem = _version_problem(data)
    if problem:
        version = data.get("format_version")
        if isinstance(version, float) and not math.isfinite(version):  # 1E400, as written
            problem = _version_problem(json.loads(path.read_text(encoding="utf-8-sig"),
                                                  parse_float=_parsed_float))
        raise ResultsError(f"{path}: {problem}")
    return data


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


def _parsed_float(text: str) -> float:
    """``json``'s ``parse_float``: ``float(text)``, a ``WrittenFloat`` where that is
    not finite (``1E400``)."""
    value = float(text)
    return value if math.isfinite(value) else WrittenFloat(value, text)


def _version_problem(summary: dict[str, Any]) -> str | None:
    """Why ``summary``'s ``format_version`` is not the one this ipc-bench reads (the
    integer ``FORMAT_VERSION`` a run writes), in words after ``PATH: ``: an older or
    newer integer, with what to do (``result format version 0 is older than ...``);
    anything else, ``true`` and ``1.0`` included (JSON's true is no version, nor is a
    fraction), is not supported, shown as JSON (``result format version "1" is not
    supported (this ipc-bench reads version 1)``), and a missing one is said so. An
    integer is shown as written, cut to 40 digits with ``...`` (``_cut_quote``): 10**400
    reads ``1000000000000000000000000000000000000000... is newer``, not ``1e+400``.
    ``None`` when it is ``FORMAT_VERSION``."""
    reads = f"(this ipc-bench reads version {FORMAT_VERSION})"
    if "format_version" not in summary:
        return f"result format version is missing {reads}"
    version = summary["format_version"]
    if isinstance(version, bool) or not isinstance(version, int):
        return f"result format version {_shown(version)} is not supported {reads}"
    if version == FORMAT_VERSION:
        return None
    age = "older" if version < FORMAT_VERSION else "newer"
    hint = ("re-run the scenario with this ipc-bench" if age == "older"
            else "read it with the newer ipc-bench that wrote it")
    # as written, its digits cut at 40 (an integer in %g form, 1e+400, would read as
    # the number 1E400, which is no integer and is refused as not supported)
    return (f"result format version {_cut_quote(str(version))} is {age} than the version "
            f"this ipc-bench reads ({FORMAT_VERSION}); {hint}")


def _pairs_noting(twice: dict[int, tuple]):
    """A ``json`` ``object_pairs_hook`` that builds each object as ``json`` does (the
    last value of a key given twice kept) and notes in ``twice``, by the object's
    ``id``, the object (kept alive, so that no later object takes its ``id``) and each
    key it was given more than once with how many times."""
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            counts: dict[str, int] = {}
            for key, _ in pairs:
                counts[key] = counts.get(key, 0) + 1
            twice[id(obj)] = (obj, {k: n for k, n in counts.items() if n > 1})
        return obj
    return hook


def _repeated_keys(data: Any, twice: dict[int, tuple]) -> list[tuple[str, int]]:
    """``(key path, times given)`` of each key ``_pairs_noting`` noted in ``twice``
    that is in ``data`` (the parsed file; a repeated key's earlier values are not), in
    the file's order: ``metadata``, ``cases[0].num_steps``, ``metadata["a b"]``
    (``_key_path``). Walks with a list, not recursion: any depth ``json`` parsed."""
    out: list[tuple[str, int]] = []
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        value, where = stack.pop()
        if isinstance(value, dict):
            noted = twice.get(id(value))
            out += [(_key_path(where, k), n) for k, n in (noted[1] if noted else {}).items()]
            stack += [(v, _key_path(where, k)) for k, v in reversed(value.items())
                      if isinstance(v, (dict, list))]
        elif isinstance(value, list):
            stack += [(v, f"{where}[{i}]") for i, v in reversed(list(enumerate(value)))
                      if isinstance(v, (dict, list))]
    return out


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
                         "ttft_count", "tpot_count", "itl_count", "e2e_count",
                         "runner_gap_count")
#: Columns loaded as strings whatever their content.
_STR_COLUMNS = ("run_id", "case_id", "scenario", "policy", "codec", "workload", "req_id",
                "finish_reason", "transport", "model")


@dataclass
class Results:
    """Tidy tables of one or more run folders (``load``). ``run_id`` (the folder's
    name) tells runs apart in every table; ``case_id`` tells cases apart in a run.

    ``cases`` (one row per case; the ``summary.json`` case entries):

    ============================================  =======  ==========================================
    column                                        unit     meaning
    ============================================  =======  ==========================================
    run_id, case_id, scenario, policy, codec      -        identity (``codec`` ``none``: single-process)
    transport, model, repetition, workload        -        ``workload`` = the labels as ``k=v,...``,
                                                           an ordered Categorical that sorts
                                                           by size (``workload_order``:
                                                           num_running=4 < num_running=16),
                                                           in every table that has it
    arm                                           -        the side of the comparisons
                                                           (``send'``, ``cached+async``...;
                                                           NaN: a run before it)
    <labels> (e.g. num_running, trace)            -        the case's workload labels, one column each
                                                           (num_running, tp, pp ``Int64``
                                                           where some case lacks it:
                                                           ``<NA>``; ``_NULLABLE_INT_COLUMNS``)
    complete, error                               -        the case ran to its end / why not
    steps_kept_in                                 -        ``steps.partial.csv``: a case whose
                                                           rows steps.csv could not take (a
                                                           write failed) left them there, as
                                                           a killed run; NaN: in steps.csv
    rows_not_written                              rows     CSV file name -> rows of the case
                                                           that file could not take (a write
                                                           failed); NaN: every row written
    num_steps, num_warmup_steps, num_total_steps  steps    counted / warm-up / all steps
    warmup_token_share                            ratio    warm-up's share of the scheduled tokens
    counted_steps_asked, max_steps                steps    ``--steps`` (steady scenarios; None:
                                                           no such limit) / the cap on all steps
    output_len_mean                               tokens   a steady case's mean output (its
                                                           workload's; None: not steady)
    wall_s                                        s        wall time of the scheduler loop,
                                                           warm-up included: its start to just
                                                           after its last step; timed replays:
                                                           first arrival (arrival_s 0) to last
                                                           completion (metrics.WALL_S_MEANING)
    warmup_pause_s                                s        the end-of-warm-up pause (heaps
                                                           collected, frozen: the scheduler's
                                                           and each runner's, between two
                                                           steps); timed replays' clock stops
                                                           during it (None: warm-up never
                                                           ended)
    runner_warmup_collect_s                       s        the runner's own collection and
                                                           freeze in that pause, the longest
                                                           of the --tp ranks / --pp stages
                                                           (None: single process, warm-up
                                                           never ended, or older runs)
    num_requests, num_finished, num_rejected      reqs
    num_cut_at_max_model_len                      reqs     stopped by max_model_len before max_tokens
    num_preemptions                               count    preemptions by recompute, whole case
    output_tokens                                 tokens   sampled in counted steps
    output_tokens_per_s                           tok/s    output_tokens / sum of counted step_ns;
                                                           timed replays: all requests' output
                                                           tokens (warm-up included) / wall_s
                                                           (arrival-bound), the busy figure then in
                                                           busy_output_tokens_per_s
    trace_speedup                                 x        timed replays: arrivals at x real time
    ttft/tpot/itl/e2e_ms_mean/_p50/_p90/_p99      ms       timed replays and soak: request
                                                           latencies, mean and percentiles
                                                           (metrics.LATENCY_MEANINGS: TTFT,
                                                           TPOT, E2E over requests, ITL over
                                                           token gaps)
    floor_output_tokens_per_s                     tok/s    same tokens over the floor's time
    no_floor                                      -        the run's --no-floor left the case
                                                           without its floor (NaN: a summary
                                                           written before it was recorded)
    floor_interrupted                             -        true: a signal cut the floor short
                                                           after every counted step (the case
                                                           is kept, without its floor; False
                                                           otherwise)
    report_interrupted                            -        true: a signal came after the floor
                                                           (after the last step without one),
                                                           while the runner's report was
                                                           awaited (the case is kept, floor
                                                           and all, without the runner's
                                                           per-step columns; False otherwise)
    floor_failed                                  -        the line of the runner's failure
                                                           (it died, stopped answering)
                                                           that cut the floor short after
                                                           every counted step (the case is
                                                           kept, without its floor; absent
                                                           otherwise)
    report_failed                                 -        the line of the runner's failure
                                                           after the floor (after the last
                                                           step without one), while its
                                                           report was awaited (the case is
                                                           kept, floor and all, without the
                                                           runner's per-step columns;
                                                           absent otherwise)
    step_to_floor_ratio                           ratio
    floor_step_ns_block_cv                        ratio    spread of 50-step mean floor step
                                                           times (None: under 150 floor steps)
    step_ns_mean, step_ns_median                  ns       one scheduler iteration
    step_ns_max, step_ns_max_seq                  ns, -    the longest counted step, its seq
    output_tokens_per_s_without_longest           tok/s    out tok/s without that step
    between_steps_ns_max, ..._seq                 ns, -    the loop's longest time between two
                                                           steps, the seq of the step after it
    stalled_steps, stalled_step_share,            -, ratio a trace replay's counted steps over 10x
    stall_unjudged_steps                          -        their workload's median step
                                                           (``analysis.replay_stall``), their
                                                           share of the counted steps' time, the
                                                           steps left unjudged
    stalled_step_ns_max, ..._seq, ..._ratio       ns, -    the longest stalled step, its seq and
                                                           its ratio to its workload's median
    output_tokens_per_s_without_stalled           tok/s    out tok/s without the stalled steps
    step_ns_bin_ratio_max                         ratio    the largest ratio of a judged step
    *_payload_bytes_per_step, *_wire_bytes_*      bytes    per counted step, per direction;
                                                           NaN in a single-process case, both
                                                           (``SINGLE_PROCESS_NO_PAYLOAD``)
    decode_token_bytes_per_step,                  bytes    ``send`` only: what new_token_ids add over
    prompt_chunk_bytes_per_step                            cached's ``[]``, split into decode tokens
                                                           (list headers included) / re-sent prompt
                                                           chunks
    sched_*_ns_per_step, runner_*_ns_per_step     ns       mean per counted step of each phase
    build/encode/decode_ns_per_step               ns       both directions summed
    *_gc_collections_per_step                     1/step
    sched_gc_ns_per_step, runner_gc_ns_per_step   ns       time in those collections, per step
    sched/runner_breakdown_coverage               ratio    share of the step its named parts cover
    step_ns_block_cv                              ratio    spread of 50-step mean step times
    machine_busy_pct, cpu_steal_pct               %        whole machine during the case
    warnings                                      -        list of pyperf-check-style lines
    token_digest                                  -        sha256 of every output id (oracle)
    schedule_digest                               -        sha256 of every step's schedule (None:
                                                           the bare loop keeps none)
    token_streams_compared_with, ..._not_...      -        case ids the token digest was (not)
                                                           compared with: equal schedules only
    input_oracle_interval                         steps    between two input-oracle checks; 0: the
                                                           fed token ids were not checked
    step_wait                                     -        fixed-step cases: sleep or spin
    shm_cores, shm_oversubscribed                 -        ``--transport shm``, one runner: CPUs of
                                                           the scheduler's affinity mask / fewer
                                                           than 2 (the spinning reader shares one);
                                                           ``Int64`` where some case lacks it
    num_spec_tokens, spec_acceptance              -        draft tokens per request and step (0:
                                                           none), chance a draft is the target's
    scheduled_tokens_per_step,                    tok      per counted step: tokens scheduled
    output_tokens_per_step                                 (drafts included) / sampled
    spec_draft_tokens_per_step,                   tok      pure-decode counted steps with drafts:
    spec_accepted_tokens_per_step,                         drafts scheduled / accepted, and
    spec_draft_acceptance_rate                    ratio    accepted / drafted
    draft_ns_per_step                             ns       torch model with drafts: its drafter
                                                           (in runner_writeback_ns_per_step)
    frontend_*_per_step, control_plane_*          -        ``--frontend``: the engine core -> frontend
                                                           hop and the whole control plane
                                                           (``analysis.frontend``), bytes and ns
    send_saving_*                                 B, ratio ``--frontend``: send's saving per pair
    ============================================  =======  ==========================================

    Fields added by later harness versions appear as further columns as they are.

    ``steps`` (one row per scheduler step per case, warm-up included):

    ========================================  =====  ==============================================
    column                                    unit   meaning
    ========================================  =====  ==============================================
    run_id, case_id, scenario, policy,        -      identity, as in ``cases``
    codec, transport, model, repetition,
    workload, <labels>
    arm                                       -      the case's ``arm``, as ``cases`` has it,
                                                     else its ``policy`` (a run before it):
                                                     what ``by_arm`` relabels ``policy`` to
    seq                                       -      exchange number within the case, from 0
    step                                      -      logical scheduler step
    warmup, counted                           bool   warm-up step / counted in the case's figures
    num_reqs                                  reqs   requests scheduled this step (running)
    num_new_reqs                              reqs   of which scheduled for the first time
    num_scheduled_tokens, num_output_tokens   tokens scheduled / sampled this step
    num_finished                              reqs   finished this step
    num_preempted, num_resumed                reqs   preempted (by recompute) / resumed this step
    num_waiting                               reqs   left waiting once the step was scheduled:
                                                     arrived (or preempted), not scheduled
                                                     (vLLM's len(scheduler.waiting); NaN: a
                                                     run before it)
    sched_ns, build_ns, encode_ns, send_ns,   ns     scheduler phases: schedule(), building the
    wait_ns, decode_ns, update_ns                    SchedulerOutput, encode, socket send, wait for
                                                     the reply, decode the reply, update_from_output
    step_ns                                   ns     whole iteration (sum of the phases above)
    sched_cpu_ns                              ns     scheduler thread CPU time over the step
    s2r_payload_bytes, r2s_payload_bytes      bytes  SchedulerOutput / ModelRunnerOutput frame
    gc_collections                            count  scheduler-process collections in the step
    gc_ns                                     ns     time in those collections (NaN: a run
                                                     before it)
    t_end_ns                                  ns     end of the step since the case's loop began
                                                     (timed replays: on the replay clock, which
                                                     stops during the end-of-warm-up pause)
    runner_idle_ns                            ns     runner waiting for the SchedulerOutput
    runner_decode_ns, runner_update_ns,       ns     runner phases: decode, update_states,
    runner_prepare_ns, runner_forward_ns,            prepare_inputs, forward + sampling,
    runner_writeback_ns, runner_build_ns,            write_back, build_output, encode the reply,
    runner_encode_ns, runner_send_ns                 socket send
    runner_gc_collections                     count  runner-process collections in the step
    runner_gc_ns                              ns     time in those collections (NaN: a run
                                                     before it)
    runner_t0_ns                              ns     start of the runner's wait, since its loop began
    runner_forward_start_ns                   ns     start of the step's forward, since the
                                                     runner's timing began (runner gap)
    gpu_busy_ns, gpu_idle_ns                  ns     torch on CUDA: the step's first to last
                                                     GPU op; GPU idle since the previous
                                                     step's last op (-1: none before it)
    roofline_ns                               ns     torch with the roofline: the step's
                                                     roofline time
    emulated_step_ns                          ns     emulated: the roofline time waited
    emulated_context_tokens                   tok    emulated: the KV context it was
                                                     computed for (sum of seq_lens)
    draft_ns                                  ns     torch with drafts: the drafter's time
                                                     (in runner_writeback_ns)
    replica_schedule_ns, replica_update_ns    ns     replicated codec: the runner's replica
                                                     scheduler (in runner_decode_ns,
                                                     runner_encode_ns)
    runner_lookahead                          0/1    device-input path: the next step was
                                                     launched before this one finished
    ========================================  =====  ==============================================

    The last nine (``spec.OPTIONAL_RUNNER_COLUMNS``) are NaN where a case has no such
    column (other models, codecs, a CPU run's ``gpu_*``, a run written before them).
    Integer columns are ``int64``; a runner column is ``float64`` with NaN where a
    failed case has no runner report. Single-process cases (codec ``none``) have 0
    bytes and 0 runner idle/decode/encode/send.

    ``requests`` (one row per request per case): identity columns as in ``steps``,
    then ``index``, ``req_id``, ``num_prompt_tokens``, ``num_output_tokens``,
    ``max_tokens`` (tokens), ``arrival_step``, ``first_scheduled_step``,
    ``first_token_step``, ``finish_step`` (logical steps, -1: never),
    ``finish_reason`` (``""`` while running), ``preemptions`` (count); timed replays
    and soak fill ``arrival_s`` (intended arrival, s after the case's start), ``ttft_s``,
    ``tpot_s`` and ``e2e_s`` (s; NaN elsewhere, and ``tpot_s`` for one-token requests;
    ``metrics.LATENCY_MEANINGS``); a row with a negative or infinite latency, an
    ``e2e_s`` below its ``ttft_s`` or above its case's ``wall_s``, or a ``tpot_s`` other
    than ``(e2e_s - ttft_s) / (num_output_tokens - 1)`` (``TPOT_FORMULA``) is left out
    with a warning, and fewer rows than a case's ``num_requests`` warned about; a
    ``requests.csv`` of 0 bytes where a case has requests: ``ResultsError``.

    ``floor`` (one row per floor exchange): ``run_id``, ``case_id``, ``i`` (index of
    the replayed counted step), ``floor_step_ns`` (ns).

    ``itl`` (timed replays and soak: one row per gap between two consecutive output
    tokens of a request; empty otherwise; a negative, infinite or too large ``itl_s``,
    longer than its case's ``wall_s`` or its request's ``e2e_s - ttft_s``, and every gap
    of a request whose ``requests.csv`` row is left out as impossible, left out with a
    warning, and fewer rows than the requests' ``n - 1`` gaps warned about;
    ``itl.csv`` missing or empty where a case has ``itl_ms_*`` figures:
    ``ResultsError``): identity columns as in ``steps``, ``index`` (the request),
    ``itl_s`` (s).

    ``frontend`` (``--frontend`` runs: one row per scheduler step per case, from
    ``frontend.csv``; an empty frame of these columns for a run without it; ``None`` in
    a ``Results`` built by hand): identity columns as in ``steps``, ``seq`` (the
    step's, as in ``steps``), ``counted`` (bool, as ``steps``' row of the same ``seq``
    has it: the step is one of the case's figures, not warm-up or a mixed step; a file
    written before the column, or a row whose flag differs from steps.csv's (said),
    takes steps.csv's, 0 where it has no row), ``frontend_build_ns``,
    ``frontend_encode_ns``, ``frontend_send_ns`` (ns: building, encoding and sending
    the step's ``EngineCoreOutputs`` in the scheduler's process),
    ``frontend_payload_bytes`` (bytes; 0: no message that step) and
    ``frontend_decode_ns`` (ns, in the frontend process; NaN where nothing was sent or
    its report never came). ``cases``' ``frontend_*_per_step`` are the means of the
    ``counted`` rows. Rows of a case left out or not listed are not loaded; a row of a
    ``seq`` its case has in an earlier row, or with a negative, infinite or too large
    value, is left out with a warning, as in ``steps``, and fewer rows than a case's
    ``num_total_steps`` (one with frontend figures) warned about; a case whose
    ``frontend_*_per_step`` are not its counted rows' means (``FRONTEND_MEANS``; every
    counted row there) is left out whole with a warning, as one whose figures are not
    its ``steps`` rows'.

    ``metadata``: ``run_id`` -> the run's ``summary.json`` metadata (environment, full
    configuration of every case); ``status``: ``run_id`` -> ``complete`` /
    ``incomplete`` / ``failed``; ``problems``: ``run_id`` -> list of lines;
    ``paths``: ``run_id`` -> run folder. ``status_detail``: ``run_id`` -> why a run is
    not complete, one line: its recorded problems, else what its files tell
    (``unfinished_detail``: killed, or still running); ``""`` for a complete run.
    ``warnings``: ``run_id`` -> lines about what was found cut short or impossible
    while loading, each naming the file, the case and the field (also issued as
    ``ResultsWarning``, lines alike but for their case as one: ``grouped_warnings``;
    what is valid is loaded: ``load``), the first of a run that is
    not complete its ``status_warning``. ``status_warning``: ``run_id`` -> that line
    (``status_line``: the run's state, its ``status_detail`` and the cases loaded,
    issued as ``RunStatusWarning``); for a complete run that recorded ``problems``
    as it ended (its tables lost on a full stdout: ``cannot write to stdout: No space
    left on device``) ``complete_problems_line``'s, which says it is complete;
    ``""`` for another complete run. ``stopped_case``:
    ``run_id`` -> the case a run that is not complete was running (or failed in) and
    does not list (``summary.json``'s ``running_case``: killed, or still running; its
    rows in ``steps.partial.csv``, not loaded), ``case_id`` and ``error`` (why, in
    words), which ``unfinished`` names; absent where there is none.
    """

    cases: Any
    steps: Any
    requests: Any
    floor: Any
    itl: Any
    metadata: dict[str, dict[str, Any]]
    status: dict[str, str]
    problems: dict[str, list[str]]
    paths: dict[str, Path]
    status_detail: dict[str, str] = field(default_factory=dict)
    warnings: dict[str, list[str]] = field(default_factory=dict)
    status_warning: dict[str, str] = field(default_factory=dict)
    stopped_case: dict[str, dict[str, str]] = field(default_factory=dict)
    frontend: Any = None

    @property
    def run_ids(self) -> list[str]:
        """Run ids in load order."""
        return list(self.metadata)

    @property
    def labels(self) -> list[str]:
        """Names of the workload labels the loaded runs recorded (``label_names``) that
        are columns of ``cases``, e.g. ``["num_running"]``."""
        return [k for k in label_names(self.metadata) if k in self.cases.columns]

    @property
    def still_running(self) -> list[str]:
        """Ids of the runs read as still going (not complete, a process holding their
        lock as they were read: a ``status_detail`` of ``STILL_RUNNING``), in load
        order, whatever the run did after: what their report says, and where it goes
        (``report.document.write_report``)."""
        return [r for r in self.metadata
                if str((self.status_detail or {}).get(r) or "").startswith(STILL_RUNNING)]

    def unfinished(self) -> list[dict[str, Any]]:
        """The cases that did not finish, one dict each with ``run_id``, ``case_id``
        and ``error`` (``""`` when none was recorded), in load order, each run's after
        its own: those recorded as not complete (``complete`` false: interrupted,
        failed, or the running case of a killed run that ``summary.json`` lists), then
        the run's ``stopped_case``, the case a run that is not complete was running
        and does not list (killed, or still running as it was read: ``summary.json``'s
        ``running_case``; it has no row in the tables, its rows being in
        ``steps.partial.csv``), its ``error`` saying so (``the run stopped during
        it, killed or unable to write summary.json; its rows in steps.partial.csv are
        not loaded``)."""
        cases = self.cases
        listed = []
        if not cases.empty and "complete" in cases.columns:
            errors = cases["error"] if "error" in cases.columns else [None] * len(cases)
            listed = [dict(run_id=run, case_id=case,
                           error=without_full_stop(error) if isinstance(error, str) else "")
                      for run, case, done, error in zip(cases["run_id"], cases["case_id"],
                                                        cases["complete"], errors)
                      if _not_complete(done)]
        out = []
        for run in dict.fromkeys([*self.metadata, *(c["run_id"] for c in listed)]):
            out += [c for c in listed if c["run_id"] == run]
            if (self.stopped_case or {}).get(run):
                out.append(dict(run_id=run, **self.stopped_case[run]))
        return out

    def finished(self) -> "Results":
        """These tables without the ``unfinished`` cases (their rows of ``cases``,
        ``steps``, ``requests``, ``floor``, ``itl`` and ``frontend``): what findings, comparisons and
        figures are computed from, so that a figure of a case that did not finish
        never passes for a finished one. The same object when every case finished."""
        gone = {(c["run_id"], c["case_id"]) for c in self.unfinished()}
        if not gone:
            return self

        def pick(df):
            if df is None or len(df) == 0 or "case_id" not in df.columns:
                return df
            mask = [(run, case) not in gone for run, case in zip(df["run_id"], df["case_id"])]
            return _used_workloads(df[mask].reset_index(drop=True))

        return replace(self, cases=pick(self.cases), steps=pick(self.steps),
                       requests=pick(self.requests), floor=pick(self.floor),
                       itl=pick(self.itl), frontend=pick(self.frontend))

    def by_arm(self) -> "Results":
        """These tables with each case's ``policy`` replaced by its arm label (``arm``:
        ``send'`` of an ``--aa`` run, ``cached+async`` beside ``cached``...), so that
        whatever groups by policy (the report's figures, side-by-side tables and
        findings) keeps two arms of one policy apart instead of averaging them. The
        same object when every arm is its policy."""
        cases = self.cases
        if cases.empty or "arm" not in cases.columns:
            return self
        arm = [a if isinstance(a, str) and a else p
               for a, p in zip(cases["arm"], cases["policy"])]
        if arm == list(cases["policy"]):
            return self
        label = dict(zip(zip(cases["run_id"], cases["case_id"]), arm))

        def relabel(df):
            if df is None or len(df) == 0 or not {"case_id", "policy"} <= set(df.columns):
                return df
            return df.assign(policy=[label.get((r, c), p) for r, c, p in zip(
                df["run_id"], df["case_id"], df["policy"])])

        return replace(self, cases=relabel(cases), steps=relabel(self.steps),
                       requests=relabel(self.requests), floor=relabel(self.floor),
                       itl=relabel(self.itl), frontend=relabel(self.frontend))

    def select(self, run_id: str) -> "Results":
        """The tables of one run; ``KeyError`` if ``run_id`` is not loaded."""
        if run_id not in self.metadata:
            raise KeyError(f"no run {run_id!r}; loaded: {', '.join(self.metadata)}")

        def pick(df):
            if df is None:
                return df
            return _used_workloads(df[df["run_id"] == run_id].reset_index(drop=True))

        return Results(cases=pick(self.cases), steps=pick(self.steps),
                       requests=pick(self.requests), floor=pick(self.floor),
                       itl=pick(self.itl), frontend=pick(self.frontend),
                       metadata={run_id: self.metadata[run_id]},
                       status={run_id: self.status[run_id]},
                       problems={run_id: self.problems[run_id]},
                       paths={run_id: self.paths[run_id]},
                       status_detail={run_id: self.status_detail.get(run_id, "")},
                       warnings={run_id: self.warnings.get(run_id, [])},
                       status_warning={run_id: self.status_warning.get(run_id, "")},
                       stopped_case={r: c for r, c in self.stopped_case.items()
                                     if r == run_id})


def records(frame) -> list[dict[str, Any]]:
    """The rows of ``frame`` (a pandas DataFrame, e.g. ``Results.cases``) in order, each
    a dict with NaN read as ``None`` (``pace.as_record``)."""
    return [as_record(r) for r in frame_records(frame)]


def _not_complete(value: Any) -> bool:
    """Whether a case's ``complete`` field says it did not finish (false; a missing
    value, NaN in a table, is no such record)."""
    return value is not None and value == value and not bool(value)


def case_unfinished(summary: dict[str, Any]) -> bool:
    """Whether a case summary (a ``summary.json`` case entry) records that the case did
    not finish (``complete`` false); such a case's figures are never shown as a
    finished case's (``Results.finished``, ``report.tables.format_tables``)."""
    return _not_complete(summary.get("complete"))


def label_names(metadata: dict[str, dict[str, Any]]) -> list[str]:
    """Names of the workload labels recorded in the runs' metadata (``cases[].labels``
    of each ``summary.json``), sorted by name as in the ``workload`` key (``k=v,...``).
    ``metadata``: ``Results.metadata`` (run id -> metadata dict)."""
    return sorted({k for md in metadata.values() for c in md.get("cases") or []
                   for k in (c.get("labels") or {})})


def _lone_summary_hint(p: Path) -> str:
    """What to do with a run's ``summary.json`` given alone (a published report's
    ``<run>.summary.json``: no per-step files beside it), for ``check_run_dir``'s
    refusal; ``""`` for any other file."""
    if not p.name.endswith("summary.json"):
        return ""
    return (" (a run's summary.json alone, as published beside a report, holds its "
            "per-case figures only: give its run folder, or read them with "
            f"pandas.json_normalize(json.load(open({str(p)!r}))['cases']))")


def check_run_dir(path: str | os.PathLike, several: bool = True) -> Path:
    """``Path(path)`` if it is a run folder, else ``ResultsError`` (one line): ``PATH:
    no such folder``, ``PATH: not a folder`` (for a lone ``summary.json``, how to read
    it, ``_lone_summary_hint``), ``PATH: not a run folder (no
    summary.json)`` (and what it holds instead, ``_what_it_holds``: a rendered report,
    run folders), ``PATH: not a run folder (summary.json is not a file)``, or
    ``cannot read run folder PATH: REASON`` when the system will not look it up (a
    name over 255 bytes, a file or a link loop on the way, no permission).
    ``several``: the command takes several run folders (``report``), so a folder of
    runs is answered "give one or more of them", else "give one of them"."""
    p = Path(path)
    try:
        if not stat.S_ISDIR(_mode_of(p, p, "no such folder")):
            raise ResultsError(f"{p}: not a folder{_lone_summary_hint(p)}")
        try:
            summary = _mode_of(p / "summary.json", p, "not a run folder (no summary.json)")
        except ResultsError as exc:
            raise ResultsError(f"{exc}{_what_it_holds(p, several)}") from None
    except OSError as exc:
        raise ResultsError(f"cannot read run folder {p}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(summary):
        raise ResultsError(f"{p}: not a run folder (summary.json is not a file)")
    return p


def _what_it_holds(folder: Path, several: bool = True) -> str:
    """What a folder without ``summary.json`` holds instead, said after the refusal:
    a rendered report (``report.md``, as ``results/published/*``: its figures come from
    the runs it names, not from this folder), run folders (``results/``: the runs
    to give), or, with no run folder, folders of rendered reports (``results/published``:
    ``it holds 5 folders of rendered reports: read them, e.g.
    results/published/azure-conv/report.md, or report the run folders they were made
    from``). ``''`` when none, or when it cannot be listed."""
    from ipc_bench.errors import one_line

    try:
        if (folder / "report.md").is_file():
            return ("; it holds a rendered report, report.md and report.html: read them, "
                    "or report the run folders it was made from")
        subfolders = sorted(d for d in folder.iterdir() if d.is_dir())
        runs = [d.name for d in subfolders if (d / "summary.json").is_file()]
        reports = [d.name for d in subfolders if (d / "report.md").is_file()] \
            if not runs else []
    except OSError:
        return ""
    if reports:
        example = one_line(str(folder / reports[0] / "report.md"))
        if len(reports) == 1:
            return (f"; it holds a folder of a rendered report: read it, {example}, or "
                    "report the run folders it was made from")
        return (f"; it holds {len(reports)} folders of rendered reports: read them, e.g. "
                f"{example}, or report the run folders they were made from")
    if not runs:
        return ""

    example = one_line(str(folder / runs[0]))
    which = "it" if len(runs) == 1 else "one or more of them" if several else "one of them"
    return (f"; it holds {len(runs)} run folder{'s' if len(runs) > 1 else ''}: give "
            f"{which}, e.g. {example}")


def _mode_of(path: Path, run_dir: Path, missing: str) -> int:
    """``path``'s mode (links followed); ``ResultsError`` ``RUN_DIR: MISSING`` when it
    does not exist; ``OSError`` when the system will not look it up."""
    try:
        return os.stat(path).st_mode
    except FileNotFoundError:
        raise ResultsError(f"{run_dir}: {missing}") from None


def check_distinct_runs(run_dirs) -> None:
    """Refuse (``ResultsError``, one line) a run folder given more than once, however
    it is spelt (a trailing slash, ``./``, a symlink): the report would compare the
    run with itself. ``run_dirs``: paths (str or ``os.PathLike``) of folders that
    exist. A copy of a folder is ``check_copies``' and ``check_copied_steps``'."""
    seen: dict[tuple[int, int], str] = {}
    for given in run_dirs:
        st = os.stat(given)
        key = (st.st_dev, st.st_ino)
        if key in seen:
            first = seen[key]
            also = "" if str(given) == first else f" (also as {given})"
            raise ResultsError(f"run folder {first} is given twice{also}: a run is not "
                               "compared with itself; give each run once")
        seen[key] = str(given)


def check_copies(metadata: dict[str, dict[str, Any]], paths: dict[str, Path]) -> None:
    """Refuse (``ResultsError``, one line naming both folders) a run folder that is a
    copy of another one given: the same ``start_time_utc`` (to the microsecond) in
    their ``summary.json`` metadata, on the same ``hostname`` where both recorded one;
    no two runs share it, and compared, every ratio would be 1.000. ``metadata`` and
    ``paths``: run id -> the run's metadata / folder (``Results.metadata``,
    ``Results.paths``). A run that recorded no start time is taken as its own; a copy
    whose start time was edited is ``check_copied_steps``'."""
    seen: dict[str, list[tuple[str, Any]]] = {}  # start time -> (run id, host)
    for run_id, md in metadata.items():
        start = md.get("start_time_utc") if isinstance(md, dict) else None
        if not isinstance(start, str) or not start:
            continue
        host = md.get("hostname") if isinstance(md.get("hostname"), str) else None
        for first, other in seen.get(start, []):
            if host is None or other is None or host == other:
                on = f" on host {host or other}" if host or other else ""
                raise ResultsError(
                    f"run folder {paths[run_id]} is a copy of {paths[first]} (the same "
                    f"start time {start}{on} in their metadata): a run is not compared "
                    "with itself; give each run once")
        seen.setdefault(start, []).append((run_id, host))


def _step_ns_digests(steps) -> dict[str, tuple[str, int]]:
    """Case id -> (sha256 of its ``step_ns`` values in row order, its number of rows)
    for each case of ``steps`` (one run's ``steps.csv`` rows) with two rows or more
    and no NaN ``step_ns``."""
    import hashlib

    if len(steps) == 0 or not {"case_id", "step_ns"} <= set(steps.columns):
        return {}
    out = {}
    for case_id, rows in steps.groupby(steps["case_id"].astype(str), sort=False, observed=True):
        values = rows["step_ns"].to_numpy(dtype="float64")
        if len(values) >= 2 and not (values != values).any():
            out[case_id] = (hashlib.sha256(values.tobytes()).hexdigest(), len(values))
    return out


def check_copied_steps(steps: dict[str, Any], paths: dict[str, Path]) -> None:
    """Refuse (``ResultsError``, one line naming both folders and the case) a run
    folder that is a copy of another one given whatever its metadata says (start and
    end times edited): a case whose ``step_ns`` values, row for row, are those of a
    case of the other run (two rows or more). No two runs time their steps alike to
    the nanosecond; a copy compared with its source gives every ratio 1.000.
    ``steps`` and ``paths``: run id -> the run's ``steps`` table / folder
    (``Results.paths``). ``check_copies`` refuses a copy whose start time was kept."""
    seen: dict[str, tuple[str, str]] = {}  # digest -> (run id, case id)
    for run_id, table in steps.items():
        digests = _step_ns_digests(table)
        for case_id, (digest, n) in digests.items():
            if digest not in seen:
                continue
            first, other = seen[digest]
            which = (f"case {case_id!r} has the same {n:,} step_ns values"
                     if other == case_id else
                     f"case {case_id!r} has the {n:,} step_ns values of case {other!r}")
            raise ResultsError(
                f"run folder {paths[run_id]} is a copy of {paths[first]} ({which}, row for "
                "row, in their steps.csv): a run is not compared with itself; give each "
                "run once")
        for case_id, (digest, _) in digests.items():
            seen.setdefault(digest, (run_id, case_id))


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


def _read_csv(pd, path: Path, columns: tuple[str, ...], notes: list[str] | None = None):
    """``path`` as a DataFrame (``columns`` when it is empty). A last line cut mid-row
    (the writer was killed) is left out and said in ``notes``; so is every row of a
    file whose header is not ``columns`` (``header_problem``: its rows cannot be
    told apart), which loads as an empty frame, and each line with an unterminated
    quote or only commas (``_data_lines``: named by line number). Columns of
    ``columns`` its header lacks (a run written before they existed) are NaN, and
    said in ``notes`` (but for ``QUIET_ABSENT_COLUMNS``). NUL bytes that end the file
    (``nul_padding``: a crash can leave them) are never read into memory: the file is
    read as if it ended before them, said in ``notes`` (``it ends in N bytes of NUL
    padding (a crash can leave it); left out``). Raises ``ResultsError`` when
    ``path`` is not a regular file that can be looked up (``why_not_a_file``)."""
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
        df = pd.read_csv(source, keep_default_na=True, low_memory=False,
                         on_bad_lines="skip", nrows=None if whole is None else whole - 1)
    except pd.errors.EmptyDataError:
        df = pd.DataFrame(columns=list(columns))
    except (OSError, ValueError) as exc:
        raise ResultsError(f"cannot read {path}: {exc}") from None
    df = _numeric_rows(pd, _whole_rows(df, widths, len(names), notes), notes)
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
    a capture file) cannot be read, in words: ``no steps.csv`` when nothing is there (a
    dangling link included), ``steps.csv is a FIFO, not a regular file`` for a folder,
    FIFO, socket or device (``file_kind``; never opened: a FIFO would block),
    ``steps.csv cannot be read: Too many levels of symbolic links`` where the system
    will not look it up (a link loop, a folder on the way that cannot be searched).
    Looks ``path`` up once (links followed); raises nothing."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return f"no {path.name}"
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


def _numeric_rows(pd, df, notes: list[str] | None = None):
    """``df`` with every column but the identity ones (``_STR_COLUMNS``) numeric: a row
    with a value there that is not a number (an edited or garbled file) is left out
    and counted in ``notes``, naming the columns; an empty value stays NaN."""
    numeric = [c for c in df.columns if c not in _STR_COLUMNS]
    bad = pd.Series(False, index=df.index)
    where: list[str] = []
    for col in numeric:
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


#: Columns of ``steps.csv`` that hold a count, a time or a size: never negative.
_NONNEGATIVE_STEP_COLUMNS = tuple(c for c in SCHED_COLUMNS + RUNNER_COLUMNS
                                  if c not in _BOOL_COLUMNS)


def _listed_ids(summary: dict[str, Any]) -> set[str]:
    """The case ids ``summary.json`` lists (its ``cases``' ``case_id`` texts)."""
    return {c["case_id"] for c in summary.get("cases") or []
            if isinstance(c, dict) and isinstance(c.get("case_id"), str)}


def _finishing_cases(summary: dict[str, Any], run_dir: Path,
                     tables: dict[str, Any]) -> set[str]:
    """The case ids whose rows may have come in as the run was read, before
    ``summary.json`` listed them (a case's rows are appended to the CSV files, then
    the summary rewritten): those of a run still going (``run_in_progress``) that its
    summary names as the ``running_case``, or that are the last case of a table's
    rows. Empty for a run that is not running (rows unlisted there are an edit)."""
    if summary.get("status") == "complete" or not run_in_progress(run_dir):
        return set()
    out = {summary["running_case"]} if isinstance(summary.get("running_case"), str) else set()
    return out | {str(df["case_id"].iloc[-1]) for df in tables.values()
                  if len(df) and "case_id" in df}


def _unlisted_rows(run_dir: Path, tables: dict[str, Any], summary: dict[str, Any]):
    """``tables`` (CSV file stem -> its rows) without the rows of a case that
    ``summary.json`` (``summary``) does not list, and one line per such case naming
    the files and their rows: the figures would show a case the tables do not. A case
    that was finishing as a run still going was read (``_finishing_cases``) is said
    as such (``RUN: case 'ID' was finishing as the run was read: its 1,122 rows in
    steps.csv came in before summary.json listed it (left out; read the run again to
    have it)``), or, where it streams its rows as it runs (soak: ``_streamed_cases``),
    as running (``... was running as the run was read: it streams its rows, and its
    1,122 rows in steps.csv so far are left out until it ends (read the run again
    then)``); the streamed case a stopped run was running (``_stopped_streaming``: a
    soak killed) as stopped (``RUN: case 'ID': the run stopped during it, killed or
    unable to write summary.json; it streams its rows, and its 7,337 rows in steps.csv
    and 65 rows in requests.csv are not loaded``); any other, ``RUN: case 'ID' has
    1,122 rows in steps.csv, but summary.json does not list it (left out)``, or, where
    an entry of its ``cases`` has the case's workload, arm, codec and repetition but no
    usable ``case_id`` (a hand edit: ``_entries_without_id``), ``... but summary.json
    lists it as cases[0], which has case_id null, not a text (left out)``. Rows with
    no ``case_id`` (an empty field) are left out with one line per file
    (``RUN/steps.csv: 1 row has no case_id (left out)``)."""
    listed = _listed_ids(summary)
    finishing = _finishing_cases(summary, run_dir, tables)
    counts: dict[str, list[str]] = {}
    out = {}
    lines = []
    for stem, df in tables.items():
        if len(df) == 0 or "case_id" not in df:
            out[stem] = df
            continue
        ids = df["case_id"].astype(str)
        unlisted = ~ids.isin(listed)
        no_id = df["case_id"].isna()
        for case, n in ids[unlisted & ~no_id].value_counts(sort=False).items():
            counts.setdefault(case, []).append(f"{_rows(n)} in {stem}.csv")
        missing = int(no_id.sum())
        if missing:
            lines.append(f"{run_dir / (stem + '.csv')}: {_rows(missing)} "
                         f"{'has' if missing == 1 else 'have'} no case_id (left out)")
        out[stem] = df[~unlisted].reset_index(drop=True) if unlisted.any() else df
    streamed = _streamed_cases(summary)
    stopped = _stopped_streaming(summary, run_dir, streamed - finishing) if counts else None
    no_id = _entries_without_id(summary) if counts else {}
    unnamed = {case: found for case in counts
               if (found := _listed_without_id(case, no_id)) is not None}
    lines += [f"{run_dir}: case {case!r} was running as the run was read: it streams its "
              f"rows, and its {' and '.join(where)} so far are left out until it ends "
              "(read the run again then)" if case in finishing and case in streamed else
              f"{run_dir}: case {case!r} was finishing as the run was read: its "
              f"{' and '.join(where)} came in before summary.json listed it (left out; "
              "read the run again to have it)" if case in finishing else
              f"{run_dir}: case {case!r}: {stopped[1]}; it streams its rows, and its "
              f"{' and '.join(where)} are not loaded" if stopped and case == stopped[0] else
              f"{run_dir}: case {case!r} has {' and '.join(where)}, but summary.json lists "
              f"it as cases[{unnamed[case][0]}], which has {unnamed[case][1]} (left out)"
              if case in unnamed else
              f"{run_dir}: case {case!r} has {' and '.join(where)}, but summary.json does "
              "not list it (left out)" for case, where in counts.items()]
    return out, lines


def _stopped_streaming(summary: dict[str, Any], run_dir: Path,
                       streamed: set[str]) -> tuple[str, str] | None:
    """``(case id, why)`` of the streamed case (of ``streamed``: soak, which appends its
    rows as it runs) that a run not complete was running as it stopped
    (``_stopped_case``: killed, or unable to write ``summary.json``), its rows in the
    CSV files but the case unlisted; ``why`` as ``Results.unfinished`` says it (``the
    run stopped during it, killed or unable to write summary.json``). ``None`` where
    there is none: its unlisted rows are then an edit."""
    if summary.get("status") == "complete":
        return None
    stopped = _stopped_case(summary, list(summary.get("problems") or []), run_dir)
    if stopped is None or stopped["case_id"] not in streamed:
        return None
    return stopped["case_id"], stopped["error"]


def _streamed_cases(summary: dict[str, Any]) -> set[str]:
    """The ids of the cases ``summary``'s metadata records as streamed (soak: their
    rows are appended while they run, not once they end)."""
    cases = (summary.get("metadata") or {}).get("cases") if isinstance(
        summary.get("metadata"), dict) else None
    return {str(c.get("case_id")) for c in cases or () if isinstance(c, dict)
            and c.get("stream") is True}


def _rows(n: int) -> str:
    return "1 row" if n == 1 else f"{n:,} rows"


def _number(value: Any) -> str:
    """``value`` as a line shows it: a whole number up to ``MAX_CASE_VALUE`` in digits
    (``-5``, not ``-5.0``), any other in ``%g`` form (``1e+300``, ``-0.5``)."""
    value = float(value)
    return str(int(value)) if value.is_integer() and abs(value) <= MAX_CASE_VALUE \
        else f"{value:g}"


#: ``steps.csv``'s columns that flag a step (1) or not (0): what the figures count.
STEP_FLAGS = ("counted", "warmup")


def _impossible_steps(df, path: Path):
    """``df`` (``steps.csv``'s rows) without the rows no run writes, and one line per
    case and column naming them: a row of a step its case has in an earlier row
    (same ``case_id`` and ``step``: the first is kept), a row whose value in a
    column of counts, times or sizes (``_NONNEGATIVE_STEP_COLUMNS``) is negative,
    infinite or more than ``MAX_CASE_VALUE``, and one whose flag (``STEP_FLAGS``) is
    not 0 or 1. The lines of a case come together."""
    if len(df) == 0 or not {"case_id", "step"} <= set(df.columns):
        return df, []
    lines: dict[str, list[str]] = {case: [] for case in dict.fromkeys(
        df["case_id"].astype(str))}
    bad = _impossible_rows(df, "step", _NONNEGATIVE_STEP_COLUMNS, STEP_FLAGS, path, lines)
    out = [line for case_lines in lines.values() for line in case_lines]
    return (df[~bad].reset_index(drop=True) if bad.any() else df), out


def _impossible_rows(df, key: str, columns: tuple[str, ...], flags: tuple[str, ...],
                     path: Path, lines: dict[str, list[str]]):
    """The rows of ``df`` (a CSV file's, with ``case_id`` and ``key``: ``steps.csv``'s
    ``step``, ``frontend.csv``'s ``seq``) no run writes, as a boolean Series, with one
    line per case and kind added to ``lines[case]`` (which has every case of ``df``):
    a row of a step its case has in an earlier row (same ``case_id`` and ``key``: the
    first is kept), ``PATH: case 'ID' has 2 rows of a step an earlier row has (step 3
    first; left out)``; a row whose value in one of ``columns`` is negative, infinite
    or more than ``MAX_CASE_VALUE`` (``_impossible_values``); and one whose flag (each
    of ``flags`` the file has) is not 0 or 1, ``... has a counted flag other than 0 or 1
    (2) in 1 row (left out)``: a 2 would count a step twice, or not as a step."""
    ids = df["case_id"].astype(str)
    again = df.duplicated(["case_id", key], keep="first")
    for case in dict.fromkeys(ids[again]):
        rows = df[again & (ids == case)]
        lines[case].append(f"{path}: case {case!r} has {_rows(len(rows))} of a step an "
                           f"earlier row has ({key} {_number(rows[key].iloc[0])} first; "
                           "left out)")
    bad = _impossible_values(df, again, columns, path, lines)
    for col in flags:
        if col in df:
            values = df[col].where(~bad)
            wrong = values.notna() & ~values.isin([0, 1])
            bad |= _said_rows(ids, values, wrong, f"a {col} flag other than 0 or 1", max,
                              path, lines)
    return bad


def _impossible_values(df, skip, columns: tuple[str, ...], path: Path,
                       lines: dict[str, list[str]], named=None):
    """The rows of ``df`` (not already ``skip``ped, a boolean Series) whose value in
    one of ``columns`` (counts, times or sizes: never negative) is negative, infinite
    or more than ``MAX_CASE_VALUE``, as a boolean Series (with ``skip``'s rows set);
    one line per case and column naming them is added to ``lines[case]``
    (``_said_rows``, ``named`` its per-row request indexes): ``PATH: case 'ID' has a
    negative itl_s (-1) in 1 row (request 0; left out)``."""
    ids = df["case_id"].astype(str)
    bad = skip.copy()
    # a numeric column none of whose rows kept is below 0 or above MAX_CASE_VALUE
    # (infinities included) adds no line and no row: skipped without its three Series
    kept = ((~skip).to_numpy() if skip.dtype == bool and skip.index.equals(df.index)
            else None)  # (a nullable skip takes the full check)
    for col in columns:
        if col not in df:
            continue
        column = df[col]
        if kept is not None and column.dtype.kind in "fiu":
            found = column.to_numpy()[kept]
            if not ((found < 0).any() or (found > MAX_CASE_VALUE).any()):
                continue
        values = column.where(~skip)
        infinite = values == float("inf")
        kinds = ((f"a negative {col}", values < 0, min),
                 (f"an infinite {col}", infinite, None),
                 (f"{col} above {MAX_CASE_VALUE:.0e}", (values > MAX_CASE_VALUE) & ~infinite,
                  max))
        for what, wrong, pick in kinds:
            bad |= _said_rows(ids, values, wrong, what, pick, path, lines, named)
    return bad


def _said_rows(ids, values, wrong, what, pick, path: Path, lines: dict[str, list[str]],
               named=None):
    """``wrong`` (a boolean Series over the rows of a CSV file ``path``, whose case ids
    are ``ids``), after adding to ``lines[case]`` one line per case with a ``wrong``
    row: ``PATH: case 'ID' has WHAT (V) in N rows (left out)``, ``what`` a text or a
    function of the case id giving it, V the ``values`` of those rows, one or, ``pick``
    (``min`` or ``max``) of several, ``down to`` / ``up to`` it (none: ``pick`` None);
    with ``named`` (a Series of each row's request index: ``requests.csv``,
    ``itl.csv``) the requests too, ``(requests 0 and 3; left out)``
    (``_requests_named``)."""
    if not wrong.any():
        return wrong
    for case in dict.fromkeys(ids[wrong]):
        rows = wrong & (ids == case)
        found = values[rows]
        shown = ("" if pick is None else f" ({_number(pick(found))})"
                 if len(found) == 1 else
                 f" ({'down' if pick is min else 'up'} to {_number(pick(found))})")
        said = what(case) if callable(what) else what
        which = "" if named is None else _requests_named(named[rows]) + "; "
        lines.setdefault(case, []).append(
            f"{path}: case {case!r} has {said}{shown} in {_rows(len(found))} ({which}left "
            "out)")
    return wrong


#: Requests named, at most, in a line on impossible rows (``_requests_named``).
REQUESTS_NAMED = 5


def _requests_named(indexes) -> str:
    """``request 3``, ``requests 0 and 3``, ``requests 0, 1, 2, 3, 4 and 2 more``: the
    requests (``index`` of ``requests.csv`` / ``itl.csv``, each once, in file order)
    of some rows, the first ``REQUESTS_NAMED``; ``request ?`` for a row without one."""
    shown = [("?" if v != v else _number(v)) for v in dict.fromkeys(indexes.tolist())]
    if len(shown) == 1:
        return f"request {shown[0]}"
    more = len(shown) - REQUESTS_NAMED
    if more > 0:
        return f"requests {', '.join(shown[:REQUESTS_NAMED])} and {more} more"
    return f"requests {', '.join(shown[:-1])} and {shown[-1]}"


#: Slack (s) within which a time of ``requests.csv`` or ``itl.csv`` may pass the bound
#: it is checked against (its case's ``wall_s``, its request's ``e2e_s - ttft_s``), or
#: a ``tpot_s`` differ from its ``TPOT_FORMULA``:
#: float rounding of times the clock takes in whole ns, never a measurement.
LATENCY_TOLERANCE_S = 1e-9
#: ``requests.csv`` columns of times (s; NaN where the case has none: not a timed
#: replay, or no token): never negative, infinite or above ``MAX_CASE_VALUE``.
_REQUEST_TIME_COLUMNS = ("arrival_s", "ttft_s", "tpot_s", "e2e_s")


def _case_values(cases, key: str) -> dict[str, float]:
    """Case id -> its (a ``cases`` row's) ``key``, for the cases where it is a number."""
    if "case_id" not in cases or key not in cases:
        return {}
    return {str(i): float(v) for i, v in zip(cases["case_id"], cases[key])
            if isinstance(v, numbers.Real) and not isinstance(v, bool) and v == v}


def _longer_than_wall(ids, values, col: str, cases, path: Path,
                      lines: dict[str, list[str]], named=None):
    """The rows whose ``values`` (times in s, a column ``col``) are longer than their
    case's ``wall_s`` (``cases``; ``LATENCY_TOLERANCE_S``), said as ``_said_rows``
    does: no time within a case outlasts it."""
    walls = _case_values(cases, "wall_s")
    wrong = values > ids.map(walls) + LATENCY_TOLERANCE_S
    return _said_rows(ids, values, wrong,
                      lambda case: f"an {col} longer than its wall_s {_number(walls[case])}",
                      max, path, lines, named)


def _impossible_requests(df, cases, path: Path):
    """``df`` (``requests.csv``'s rows) without the rows no run writes, and one line
    per case and kind naming them and their requests, in ``_impossible_steps``' form:
    a negative, infinite or too large time (``_REQUEST_TIME_COLUMNS``,
    ``_impossible_values``), an ``e2e_s`` shorter than its ``ttft_s`` (its last token
    before its first), an ``e2e_s`` longer than its case's ``wall_s`` (``cases``): it
    runs from the request's arrival, at or after the case's start, to its last token,
    before the case's end; a ``tpot_s`` that is not its ``TPOT_FORMULA``
    (``_tpot_rows``); or logical steps out of order (``_step_order_rows``). NaN (no
    latency recorded) is none of these."""
    if len(df) == 0 or "case_id" not in df:
        return df, []
    lines: dict[str, list[str]] = {}
    ids = df["case_id"].astype(str)
    named = df["index"] if "index" in df else None
    bad = _impossible_values(df, ids != ids, _REQUEST_TIME_COLUMNS, path, lines, named)
    if {"ttft_s", "e2e_s"} <= set(df.columns):
        e2e = df["e2e_s"].where(~bad)
        bad |= _said_rows(ids, e2e, e2e < df["ttft_s"].where(~bad),
                          "an e2e_s shorter than its ttft_s", min, path, lines, named)
        bad |= _longer_than_wall(ids, df["e2e_s"].where(~bad), "e2e_s", cases, path,
                                 lines, named)
    bad |= _tpot_rows(df, bad, path, lines)
    bad |= _step_order_rows(df, bad, path, lines, named)
    out = [line for case_lines in lines.values() for line in case_lines]
    return (df[~bad].reset_index(drop=True) if bad.any() else df), out


#: ``requests.csv``'s logical steps of a request (``scheduler.Request``), in the order
#: they happen: each is -1 until it happens (never: a rejected request is never
#: scheduled; an unfinished one has no ``finish_step``), and none that happened is
#: before one listed ahead of it (``_step_order_rows``).
REQUEST_STEP_COLUMNS = ("arrival_step", "first_scheduled_step", "first_token_step",
                        "finish_step")


def _step_order_rows(df, skip, path: Path, lines: dict[str, list[str]], named=None):
    """The rows of ``df`` (``requests.csv``'s, not already ``skip``ped) with a logical
    step (``REQUEST_STEP_COLUMNS``) below -1, or one that happened (>= 0) before an
    earlier one of the list (a ``first_token_step`` after its ``finish_step``), as a
    boolean Series; one line per case and kind is added to ``lines[case]``
    (``_said_rows``): ``PATH: case 'ID' has a finish_step before its first_token_step
    (3) in 1 row (request 2; left out)``, the value the later step's."""
    ids = df["case_id"].astype(str)
    bad = skip & False
    present = [c for c in REQUEST_STEP_COLUMNS if c in df]
    for col in present:
        values = df[col].where(~skip & ~bad)
        bad |= _said_rows(ids, values, values < -1, f"a {col} below -1", min, path,
                          lines, named)
    for i, later in enumerate(present):
        for earlier in present[:i]:
            first, then = df[earlier].where(~skip & ~bad), df[later].where(~skip & ~bad)
            wrong = (first >= 0) & (then >= 0) & (then < first)
            bad |= _said_rows(ids, then, wrong, f"a {later} before its {earlier}", min,
                              path, lines, named)
    return bad


#: What a ``requests.csv`` row's ``tpot_s`` is, in its own columns (``_tpot_rows``).
TPOT_FORMULA = "(e2e_s - ttft_s) / (num_output_tokens - 1)"


def _tpot_rows(df, skip, path: Path, lines: dict[str, list[str]]):
    """The rows of ``df`` (``requests.csv``'s, not already ``skip``ped) whose ``tpot_s``
    is not ``TPOT_FORMULA``, the definition ``harness.recording.request_record`` wrote
    it by (``metrics.LATENCY_MEANINGS``: ``(t_n - t_1) / (n - 1)``; a request of one
    output token has none), within ``LATENCY_TOLERANCE_S``, as a boolean Series; one
    line per case is added to ``lines[case]``: ``PATH: case 'ID' has a tpot_s other
    than (e2e_s - ttft_s) / (num_output_tokens - 1) in 1 row (request 0: tpot_s 0.5,
    the formula 0.0154869; left out)`` (several: ``requests 0 and 4, the first: ...``).
    A row without ``ttft_s`` or ``e2e_s`` (no token) or ``tpot_s`` is none of these."""
    needed = {"index", "ttft_s", "tpot_s", "e2e_s", "num_output_tokens"}
    if not needed <= set(df.columns):
        return skip & False
    n = df["num_output_tokens"]
    want = ((df["e2e_s"] - df["ttft_s"]) / (n - 1)).where(n > 1)
    tpot = df["tpot_s"]
    known = tpot.notna() & df["ttft_s"].notna() & df["e2e_s"].notna() & n.notna() & ~skip
    wrong = known & (want.isna() | ((tpot - want).abs() > LATENCY_TOLERANCE_S))
    ids = df["case_id"].astype(str)
    for case in dict.fromkeys(ids[wrong]):
        rows = df[wrong & (ids == case)]
        first = rows.index[0]
        formula = (f"{want[first]:g}" if want[first] == want[first]
                   else f"none ({_number(n[first])} output token)")
        named = _requests_named(rows["index"])
        lines.setdefault(case, []).append(
            f"{path}: case {case!r} has a tpot_s other than {TPOT_FORMULA} in "
            f"{_rows(len(rows))} ({named}{', the first' if len(rows) > 1 else ''}: tpot_s "
            f"{tpot[first]:g}, the formula {formula}; left out)")
    return wrong


def _request_spans(df, requests):
    """For each row of ``df`` (``itl.csv``'s), its request's ``e2e_s - ttft_s`` (s: its
    first token to its last, the sum of its gaps) from ``requests`` (``requests.csv``'s
    rows), NaN where no row of that request (``case_id``, ``index``) holds both."""
    import pandas as pd

    nan = pd.Series(float("nan"), index=df.index)
    if not len(requests) or "index" not in df or not {
            "case_id", "index", "ttft_s", "e2e_s"} <= set(requests.columns):
        return nan
    spans = pd.DataFrame({"case_id": requests["case_id"].astype(str),
                          "index": pd.to_numeric(requests["index"], errors="coerce"),
                          "span": requests["e2e_s"] - requests["ttft_s"]})
    keys = pd.DataFrame({"case_id": df["case_id"].astype(str),
                         "index": pd.to_numeric(df["index"], errors="coerce")})
    found = keys.merge(spans.drop_duplicates(["case_id", "index"]), how="left",
                       on=["case_id", "index"])["span"]
    return pd.Series(found.to_numpy(dtype=float), index=df.index)


def _impossible_itl(df, requests, cases, path: Path):
    """``df`` (``itl.csv``'s rows) without the rows no run writes, and one line per
    case and kind naming them, in the form ``_impossible_steps`` gives ``steps.csv``'s:
    a negative, infinite or too large ``itl_s`` (a gap between two tokens of a request:
    never negative, never longer than its case's ``wall_s`` in ``cases``, nor than its
    request's ``e2e_s - ttft_s`` in ``requests``, which its gaps sum to;
    ``LATENCY_TOLERANCE_S``)."""
    if len(df) == 0 or not {"case_id", "itl_s"} <= set(df.columns):
        return df, []
    lines: dict[str, list[str]] = {}
    ids, nan = df["case_id"].astype(str), df["itl_s"] != df["itl_s"]
    named = df["index"] if "index" in df else None
    bad = _impossible_values(df, nan, ("itl_s",), path, lines, named)
    bad |= _longer_than_wall(ids, df["itl_s"].where(~bad), "itl_s", cases, path, lines,
                             named)
    gaps = df["itl_s"].where(~bad)
    bad |= _said_rows(ids, gaps, gaps > _request_spans(df, requests) + LATENCY_TOLERANCE_S,
                      "an itl_s longer than its request's e2e_s - ttft_s", max, path, lines,
                      named)
    bad &= ~nan
    out = [line for case_lines in lines.values() for line in case_lines]
    return (df[~bad].reset_index(drop=True) if bad.any() else df), out


def _long_steps(steps, cases, path: Path) -> list[str]:
    """One line per case of ``cases`` (summary entries) that has more rows in ``steps``
    than its ``num_total_steps``: its figures would not be its tables' (fewer:
    ``_short_steps``)."""
    if "num_total_steps" not in cases or "case_id" not in steps or len(steps) == 0:
        return []
    have = steps["case_id"].astype(str).value_counts()
    return [f"{path}: case {case_id!r} has {_rows(int(have[str(case_id)]))}, more than the "
            f"{int(want):,} steps summary.json counts (num_total_steps)"
            for case_id, want in zip(cases["case_id"], cases["num_total_steps"])
            if want is not None and want == want and int(have.get(str(case_id), 0)) > want]


#: Cases named, at most, in the warning about a ``steps.csv`` cut short.
SHORT_CASES_SHOWN = 3


#: ``steps.csv`` columns (summed, when several) whose mean over a case's counted rows
#: ``summary.json`` reports as a per-step figure (``analysis.summary._step_figures``,
#: ``_runner_figures``, ``_model_column_figures``): the two must agree
#: (``_disagreeing_cases``).
STEP_MEANS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("s2r_payload_bytes",), "sched_to_runner_payload_bytes_per_step"),
    (("r2s_payload_bytes",), "runner_to_sched_payload_bytes_per_step"),
    (("step_ns",), "step_ns_mean"),
    (("num_output_tokens",), "output_tokens_per_step"),
    (("num_scheduled_tokens",), "scheduled_tokens_per_step"),
    (("num_reqs",), "num_running_mean"),
    (("sched_cpu_ns",), "sched_cpu_ns_per_step"),
    (("gc_collections",), "sched_gc_collections_per_step"),
    (("gc_ns",), "sched_gc_ns_per_step"),
    (("sched_ns",), "sched_ns_per_step"),
    (("build_ns",), "sched_build_ns_per_step"),
    (("encode_ns",), "sched_encode_ns_per_step"),
    (("send_ns",), "sched_send_ns_per_step"),
    (("wait_ns",), "sched_wait_ns_per_step"),
    (("decode_ns",), "sched_decode_ns_per_step"),
    (("update_ns",), "sched_update_ns_per_step"),
) + tuple(((k,), k.replace("_collections", "_collections_per_step").replace(
    "_ns", "_ns_per_step")) for k in RUNNER_COLUMNS if k not in RUNNER_TIMESTAMP_COLUMNS) + (
    (("build_ns", "runner_build_ns"), "build_ns_per_step"),
    (("encode_ns", "runner_encode_ns"), "encode_ns_per_step"),
    (("decode_ns", "runner_decode_ns"), "decode_ns_per_step"),
    (("emulated_step_ns",), "emulated_step_ns_per_step"),
    (("gpu_busy_ns",), "gpu_busy_ns_per_step"),
    (("roofline_ns",), "roofline_ns_per_step"),
    (("draft_ns",), "draft_ns_per_step"),
    (("replica_schedule_ns", "replica_update_ns"), "replica_scheduler_ns_per_step"),
    (("runner_lookahead",), "runner_lookahead_share"),
)
#: ``steps.csv`` columns whose sum over a case's counted rows ``summary.json`` reports
#: as a total (``analysis.summary._step_figures``: ``output_tokens``, the tokens sampled
#: in counted steps): the two must be equal (``_disagreeing_cases``).
STEP_SUMS: tuple[tuple[str, str], ...] = (("num_output_tokens", "output_tokens"),)
#: ``steps.csv`` columns (summed, when several) whose median over a case's counted rows
#: ``summary.json`` reports (``analysis.summary._step_figures``, ``_runner_figures``):
#: the two must agree (``_disagreeing_cases``).
STEP_MEDIANS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("step_ns",), "step_ns_median"),
    (("build_ns", "encode_ns", "runner_decode_ns"), "s2r_build_encode_decode_ns_median"),
    (("build_ns", "encode_ns", "runner_decode_ns", "runner_update_ns", "runner_writeback_ns"),
     "s2r_net_ns_median"),
    (("runner_forward_ns",), "runner_forward_ns_median"),
)
#: The ``steps.csv`` columns ``analysis.summary.runner_gap_figures`` computes the runner
#: gap figures (``runner_gap_ns_median``, ``runner_step_ns_median``...) from, over all
#: of a case's rows: recomputed, they must be the summary's (``_disagreeing_cases``).
RUNNER_GAP_COLUMNS = ("runner_forward_start_ns", "runner_forward_ns")
#: Relative difference up to which a figure recomputed from ``steps.csv`` (or, for
#: ``output_tokens_per_s``, from the case's own figures) equals its summary figure:
#: float rounding, never a measurement.
STEP_MEAN_TOLERANCE = 1e-9


def _differ(got: float, want: float) -> bool:
    """Whether ``got`` and ``want`` differ by more than ``STEP_MEAN_TOLERANCE``
    (relative)."""
    return abs(got - want) > STEP_MEAN_TOLERANCE * max(abs(got), abs(want), 1e-300)


def _figure(case, key: str) -> float | None:
    """The case's (a ``cases`` row's) ``key`` as a float, ``None`` when it is absent,
    null, NaN or not a number."""
    value = case.get(key)
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or value != value:
        return None
    return float(value)


def _rate_problem(case, path: Path) -> str | None:
    """The line of a case (a ``cases`` row) whose ``output_tokens_per_s`` (timed
    replays: ``busy_output_tokens_per_s``, the same figure; the arrival-bound one is
    over wall time, ``_wall_rate_problem``) is not its ``output_tokens`` over its
    ``num_steps`` counted steps of ``step_ns_mean`` ns each (``analysis.summary.
    _step_figures``: tokens / sum of counted ``step_ns``; relative
    ``STEP_MEAN_TOLERANCE``), or a case not of a timed replay whose
    ``output_tokens_per_s`` is null or absent while those figures make one (a run
    writes it wherever it counted a step; the loader cannot tell null from absent);
    ``None`` when it is, or when one of those figures is absent or no step was
    counted."""
    tokens, n, mean = (_figure(case, k) for k in ("output_tokens", "num_steps",
                                                  "step_ns_mean"))
    if tokens is None or not n or not mean:
        return None
    want = tokens / (n * mean / 1e9)
    timed = _figure(case, "trace_speedup") is not None
    if not timed and _figure(case, "output_tokens_per_s") is None:
        return (f"{path}: case {str(case['case_id'])!r} has no output_tokens_per_s (null "
                "or absent), but its output_tokens "
                f"{tokens:,.15g} over its {n:,.15g} counted steps of step_ns_mean "
                f"{mean:,.6g} make {want:,.6g} (left out)")
    for key in ("busy_output_tokens_per_s",) + (() if timed else ("output_tokens_per_s",)):
        got = _figure(case, key)
        if got is not None and _differ(got, want):
            return (f"{path}: case {str(case['case_id'])!r} has {key} {got:,.6g}, but its "
                    f"output_tokens {tokens:,.15g} over its {n:,.15g} counted steps of "
                    f"step_ns_mean {mean:,.6g} make {want:,.6g} (left out)")
    return None


def _wall_rate_problem(case, requests, path: Path) -> str | None:
    """The line of a timed replay (a ``cases`` row with ``trace_speedup``) whose
    ``output_tokens_per_s``, the arrival-bound figure (``analysis.summary.
    _timed_replay_figures``: the output tokens of all its requests, warm-up included,
    over its ``wall_s``), is not the ``num_output_tokens`` of its ``requests.csv`` rows
    (``requests``: the case's, all ``num_requests`` of them) summed and divided by its
    ``wall_s`` (relative ``STEP_MEAN_TOLERANCE``); ``None`` when it is, or when the
    case is no timed replay, lacks one of those figures or has not that many rows."""
    import numpy as np

    if _figure(case, "trace_speedup") is None:
        return None
    got, wall_s, n = (_figure(case, k) for k in ("output_tokens_per_s", "wall_s",
                                                 "num_requests"))
    if got is None or not wall_s or n is None or len(requests) != n \
            or "num_output_tokens" not in requests:
        return None
    tokens = requests["num_output_tokens"].to_numpy(dtype=float)
    if np.isnan(tokens).any():
        return None
    total = float(tokens.sum())
    want = total / wall_s
    if not _differ(got, want):
        return None
    return (f"{path}: case {str(case['case_id'])!r} has output_tokens_per_s {got:,.6g}, "
            f"but the {total:,.15g} output tokens of its {n:,.15g} requests in "
            f"requests.csv over its wall_s {wall_s:,.6g} make {want:,.6g} (left out)")


def _pace_problem(case, requests, path: Path) -> str | None:
    """The line of a timed replay (a ``cases`` row with ``trace_speedup``) whose idle or
    arrival figures, which label its pace (``pace.replay_pace``), do not hold together:
    an ``idle_s`` outside 0 to its ``wall_s``, an ``idle_share`` or
    ``arrival_span_share`` that is not ``idle_s`` or ``last_arrival_s`` over ``wall_s``,
    or a ``last_arrival_s`` that is not the latest ``arrival_s`` of its ``requests.csv``
    rows (``requests``: the case's, all ``num_requests`` of them); relative
    ``STEP_MEAN_TOLERANCE``. ``None`` when they agree, or where a figure is absent."""
    import numpy as np

    wall_s = _figure(case, "wall_s")
    if _figure(case, "trace_speedup") is None or not wall_s:
        return None
    where = f"{path}: case {str(case['case_id'])!r} has"
    idle_s = _figure(case, "idle_s")
    if idle_s is not None and not 0 <= idle_s <= wall_s:
        return (f"{where} idle_s {idle_s:,.6g}, outside 0 to its wall_s {wall_s:,.6g} "
                "(left out)")
    for share_name, name in (("idle_share", "idle_s"),
                             ("arrival_span_share", "last_arrival_s")):
        share, value = _figure(case, share_name), _figure(case, name)
        if share is not None and value is not None and _differ(share, value / wall_s):
            shown, ratio = _apart(share, value / wall_s)
            return (f"{where} {share_name} {shown}, but its {name} {value:,.6g} over "
                    f"its wall_s {wall_s:,.6g} is {ratio} (left out)")
    last, n = _figure(case, "last_arrival_s"), _figure(case, "num_requests")
    if last is None or n is None or len(requests) != n or "arrival_s" not in requests:
        return None
    arrivals = requests["arrival_s"].to_numpy(dtype=float)
    arrivals = arrivals[~np.isnan(arrivals)]
    if len(arrivals) and _differ(last, float(arrivals.max())):
        shown, latest = _apart(last, float(arrivals.max()))
        return (f"{where} last_arrival_s {shown}, but the latest arrival_s of its "
                f"{n:,.15g} requests in requests.csv is {latest} (left out)")
    return None


#: ``summary.json`` request counts recomputed from a case's ``requests.csv`` rows (all
#: ``num_requests`` of them), as ``analysis.summary`` and ``recording.StreamStats``
#: count them: figure -> (what is counted, in words; how, from the rows).
REQUEST_COUNTS: dict[str, tuple[str, Any]] = {
    "num_rejected": ("rows with finish_reason rejected",
                     lambda rows: int((rows["finish_reason"].astype(str) == "rejected").sum())),
    "num_finished": ("rows with finish_reason length",
                     lambda rows: int((rows["finish_reason"].astype(str) == "length").sum())),
    "num_cut_at_max_model_len": (
        "rows with finish_reason length short of their max_tokens",
        lambda rows: int(((rows["finish_reason"].astype(str) == "length")
                          & (rows["num_output_tokens"] < rows["max_tokens"])).sum())),
    "num_preemptions": ("preemptions summed over its rows",
                        lambda rows: int(rows["preemptions"].sum())),
}


def _request_count_problem(case, requests, path: Path) -> str | None:
    """The line of a case (a ``cases`` row) whose request counts (``REQUEST_COUNTS``:
    ``num_rejected``, ``num_finished``, ``num_cut_at_max_model_len``,
    ``num_preemptions``) are not those
    its ``requests.csv`` rows (``requests``: the case's) give, naming the first:
    ``RUN/requests.csv: case 'ID' has 5 rows with finish_reason length of its 6, but
    summary.json has num_finished 6 (left out)``; ``None`` when they agree, or the case
    has not all of its ``num_requests`` rows (said apart: ``_short_requests``), a
    column is absent or NaN, or it records no such figure."""
    n = _figure(case, "num_requests")
    if n is None or len(requests) != n or not len(requests):
        return None
    for figure, (what, count) in REQUEST_COUNTS.items():
        want = _figure(case, figure)
        try:
            got = None if want is None else count(requests)
        except (KeyError, TypeError, ValueError):  # a column absent or not numbers
            continue
        if got is None or got == want:
            continue
        if got == 1:  # "1 row with ...", "1 preemption summed ..."
            what = what.replace("rows ", "row ", 1).replace("preemptions ", "preemption ", 1)
        return (f"{path}: case {str(case['case_id'])!r} has {got:,} {what} of its "
                f"{len(requests):,}, but summary.json has {figure} {_number(want)} (left "
                "out)")
    return None


#: ``case_elapsed_s`` is rounded to the millisecond (``cli.execute``): a ``wall_s``
#: may pass it by that much.
ELAPSED_ROUNDING_S = 1e-3


def _wall_problem(case, rows, path: Path) -> str | None:
    """The line of a timed replay (a ``cases`` row with ``trace_speedup``) whose
    ``wall_s`` is shorter than the time its last ``steps.csv`` row (``rows``: the
    case's) ended, ``t_end_ns`` after the start of the scheduler loop, or longer than
    the whole case (``case_elapsed_s``, from before its processes started to its end,
    ``ELAPSED_ROUNDING_S`` spare). ``wall_s`` runs from that start to a moment taken
    after the loop's last step (``harness.scheduler_loop``), which no file records, so
    it cannot be recomputed: it can only be checked to lie between those two. ``None``
    when it does, or a figure or the column is absent or NaN."""
    import numpy as np

    wall_s = _figure(case, "wall_s")
    if _figure(case, "trace_speedup") is None or wall_s is None:
        return None
    elapsed_s = _figure(case, "case_elapsed_s")
    if elapsed_s is not None and wall_s > elapsed_s + ELAPSED_ROUNDING_S:
        return (f"{path}: case {str(case['case_id'])!r} has wall_s {wall_s:,.6g}, but the "
                f"whole case took {elapsed_s:,.6g} s (case_elapsed_s) (left out)")
    if not len(rows) or "t_end_ns" not in rows:
        return None
    ends = rows["t_end_ns"].to_numpy(dtype=float)
    if np.isnan(ends).any() or ends.max() / 1e9 <= wall_s:
        return None
    return (f"{path}: case {str(case['case_id'])!r} has wall_s {wall_s:,.6g}, but its "
            f"last step ended {ends.max() / 1e9:,.6g} s after the loop's start (steps.csv "
            f"t_end_ns {ends.max():,.15g}) (left out)")


def _idle_problem(case, rows, path: Path) -> str | None:
    """The line of a timed replay (a ``cases`` row with ``trace_speedup``, without
    async scheduling, whose steps never overlap) whose ``idle_s`` and its steps' times
    together pass its ``wall_s``: the loop idles only between steps, so ``idle_s``
    plus the ``step_ns`` of all its ``steps.csv`` rows (``rows``: the case's, all
    ``num_total_steps`` of them) fit in it (1 ms spare): ``PATH: case 'ID' has idle_s
    3, but its 1,127 steps took 3.67 s of its wall_s 3.75 (steps.csv step_ns), leaving
    at most 0.08 s (left out)``. ``None`` when they fit, or a figure or the column is
    absent or NaN."""
    import numpy as np

    idle_s, wall_s = _figure(case, "idle_s"), _figure(case, "wall_s")
    total = _figure(case, "num_total_steps")
    if _figure(case, "trace_speedup") is None or idle_s is None or wall_s is None \
            or case.get("async_scheduling") is True or not len(rows) \
            or "step_ns" not in rows or total is None or len(rows) != total:
        return None
    step_ns = rows["step_ns"].to_numpy(dtype=float)
    if np.isnan(step_ns).any():
        return None
    busy_s = float(step_ns.sum()) / 1e9
    if idle_s + busy_s <= wall_s + 1e-3:
        return None
    return (f"{path}: case {str(case['case_id'])!r} has idle_s {idle_s:,.6g}, but its "
            f"{len(step_ns):,} steps took {busy_s:,.6g} s of its wall_s {wall_s:,.6g} "
            f"(steps.csv step_ns), leaving at most {max(wall_s - busy_s, 0.0):,.6g} s "
            "(left out)")


def _waiting_problem(case, rows, path: Path) -> str | None:
    """The line of a timed replay (a ``cases`` row) whose waiting figures
    (``num_waiting_mean``, ``waiting_step_share``, which label its pace:
    ``pace.replay_pace``) are not those its ``steps.csv`` rows (``rows``: the
    case's, every step, warm-up included) give, recomputed by
    ``summary.waiting_figures``, relative ``STEP_MEAN_TOLERANCE``: ``PATH: case 'ID'
    has a waiting_step_share of 0.9 over its 200 steps' num_waiting, but summary.json
    has waiting_step_share 0.1 (left out)``. ``None`` when they agree, or the case has
    no such figure, or the rows lack ``num_waiting`` anywhere (a run before it), or
    they are not all of its ``num_total_steps`` (a streamed case, soak, whose write of
    ``steps.csv`` failed: its figures are over every step, from running sums)."""
    import numpy as np

    from ipc_bench.analysis.summary import waiting_figures

    names = ("num_waiting_mean", "waiting_step_share")
    total = _figure(case, "num_total_steps")
    if not len(rows) or "num_waiting" not in rows or total is not None and len(rows) != total:
        return None
    values = rows["num_waiting"].to_numpy(dtype=float)
    if np.isnan(values).any():
        return None
    if all(_figure(case, n) is None for n in names):
        return None
    got = waiting_figures(values.astype(np.int64))
    for name in names:
        want = _figure(case, name)
        if want is not None and _differ(got[name], want):
            got_s, want_s = _apart(got[name], want)
            steps = "1 step's" if len(values) == 1 else f"{len(values):,} steps'"
            return (f"{path}: case {str(case['case_id'])!r} has a {name} of {got_s} over "
                    f"its {steps} num_waiting, but summary.json has {name} {want_s} "
                    "(left out)")
    return None


def _blank_counted(rows, counted, columns: tuple[str, ...]) -> int:
    """How many counted rows (``counted``) of ``rows`` lack a value (NaN: an empty
    field, ``nan``) in one of ``columns`` that the other counted rows have: a value
    blanked by hand, which ``_counted_values`` would take for a column the run does
    not have. 0 where a column is absent or empty in every counted row."""
    import numpy as np

    missing = np.zeros(int(counted.sum()), dtype=bool)
    for c in columns:
        if c not in rows:
            return 0
        gone = np.isnan(rows[c].to_numpy(dtype=float)[counted])
        if gone.all():
            return 0
        missing |= gone
    return int(missing.sum())


def _counted_values(rows, counted, columns: tuple[str, ...]):
    """The values of ``columns`` (summed) at the counted rows (``counted``: bool per row
    of ``rows``, a case's ``steps.csv`` rows) as a float array (a row's runner columns
    are its step's, as ``analysis.summary`` takes them by ``seq``); ``None`` when a
    column is absent or holds NaN there."""
    import numpy as np

    if not all(c in rows for c in columns):
        return None
    total = sum(rows[c].to_numpy(dtype=float)[counted] for c in columns)
    return None if np.isnan(total).any() else total


def _step_problem(case, rows, path: Path) -> str | None:
    """The line of a case (a ``cases`` row) whose ``steps.csv`` rows (``rows``, in file
    order; only a case with every counted row there, ``num_steps``: a case short of rows
    is said by ``_short_steps``) disagree with its figures: a ``STEP_SUMS`` total, a
    ``STEP_MEANS`` mean or a ``STEP_MEDIANS`` median recomputed from its counted rows, a
    wire figure (``_wire_problem``), its ``r2s_wire_bytes_total`` from all its rows
    (``_wire_total_problem``), a ``--tp`` / ``--pp`` figure (``_hop_problem``), its
    compute-to-roofline ratio (``_roofline_problem``), a CUDA-event figure
    (``_gpu_time_problem``) or a runner gap figure (``_gap_problem``), the first found;
    ``None`` when none does."""
    import numpy as np

    counted = rows["counted"].astype(bool).to_numpy()
    n, want_rows = int(counted.sum()), _figure(case, "num_steps")
    whole = len(rows) == _figure(case, "num_total_steps")
    case_id = str(case["case_id"])
    if whole:  # every row there: its flags must count the summary's steps
        for flag, figure in (("counted", "num_steps"), ("warmup", "num_warmup_steps")):
            want, got = _figure(case, figure), int(rows[flag].astype(bool).sum()) \
                if flag in rows else None
            if want is not None and got is not None and got != want:
                return (f"{path}: case {case_id!r} has {got:,} of its {len(rows):,} rows "
                        f"with {flag} 1, but summary.json has {figure} {_number(want)} "
                        "(left out)")
        share = _figure(case, "warmup_token_share")
        if share is not None and "num_scheduled_tokens" in rows and "warmup" in rows:
            tokens = rows["num_scheduled_tokens"].to_numpy(dtype=float)
            total = tokens.sum()
            warm = tokens[rows["warmup"].astype(bool).to_numpy()].sum()
            if total and not np.isnan(total) and _differ(share, warm / total):
                return (f"{path}: case {case_id!r} has {warm:,.15g} of its {total:,.15g} "
                        f"num_scheduled_tokens in its warm-up rows ({warm / total:,.6g}), "
                        f"but summary.json has warmup_token_share {share:,.6g} (left out)")
    if not n or want_rows is None or n != want_rows:
        return None
    checks = ([((col,), figure, "sum", np.sum) for col, figure in STEP_SUMS]
              + [(cols, figure, "mean", np.mean) for cols, figure in STEP_MEANS]
              + [(cols, figure, "median", np.median) for cols, figure in STEP_MEDIANS])
    return (_column_problem(case, rows, counted, checks, path)
            or _wire_problem(case, rows, counted, path)
            or (_wire_total_problem(case, rows, counted, path) if whole else None)
            or _hop_problem(case, rows, counted, path)
            or _roofline_problem(case, rows, counted, path)
            or _gpu_time_problem(case, rows, counted, path)
            or (_gap_problem(case, rows, counted, path) if whole else None))


def _column_problem(case, rows, counted, checks, path: Path) -> str | None:
    """The line of a case (a ``cases`` row) one of whose figures is not what its counted
    rows give (``rows``: its rows of the CSV file ``path``, every counted one there;
    ``counted``: bool per row): ``checks`` holds ``(columns, figure, kind, reduce)``,
    the figure ``reduce`` (``kind`` in words: sum, mean or median) of ``columns``
    (summed, when several) over the counted rows, equal within
    ``STEP_MEAN_TOLERANCE``; the first that is not, or that counted rows without a
    value leave unchecked, is said. ``None`` when every figure there is."""
    n, case_id = int(counted.sum()), str(case["case_id"])
    for columns, figure, kind, reduce in checks:
        want = _figure(case, figure)
        blank = 0 if want is None else _blank_counted(rows, counted, columns)
        if blank:
            return (f"{path}: case {case_id!r} has {blank:,} of its {n:,} counted rows "
                    f"without a {' + '.join(columns)} value (blank or not a number), but "
                    f"summary.json has {figure} {want:,.6g} (left out)")
        values = None if want is None else _counted_values(rows, counted, columns)
        if values is None:
            continue
        got = float(reduce(values))
        if _differ(got, want):
            form = ",.15g" if kind == "sum" else ",.6g"  # a total: every digit
            return (f"{path}: case {case_id!r} has a {kind} {' + '.join(columns)} of "
                    f"{got:{form}} over its {n:,} counted rows, but summary.json has "
                    f"{figure} {want:{form}} (left out)")
    return None


def _gpu_time_problem(case, rows, counted, path: Path) -> str | None:
    """The line of a case (a ``cases`` row) whose model-time figures other than
    ``STEP_MEANS``' means are not those its counted ``steps.csv`` rows give, as
    ``analysis.summary._model_column_figures`` computes them (relative
    ``STEP_MEAN_TOLERANCE``): on CUDA ``host_ns_per_step``, the mean of ``step_ns -
    gpu_busy_ns``; ``host_ns_per_decode_step``, the same over the rows where every
    scheduled request decodes one token (``num_scheduled_tokens == num_reqs > 0``);
    ``gpu_busy_share``, ``gpu_busy_ns`` summed over ``step_ns`` summed;
    ``gpu_idle_ns_per_step``, the mean ``gpu_idle_ns`` of the rows with one (not -1);
    emulated, ``emulated_forward_excess_ns_per_step``, the mean of
    ``runner_forward_ns - emulated_step_ns``, and
    ``emulated_context_tokens_per_request_mean``, the mean of ``emulated_context_tokens
    / num_reqs`` over the rows with requests: ``RUN/steps.csv: case 'ID' has a
    gpu_busy_share of 0.42 over its 20 counted rows' gpu_busy_ns and step_ns, but
    summary.json has gpu_busy_share 0.9 (left out)``; and on CUDA, with every row there,
    ``run_output_tokens_per_s``: all its rows' ``num_output_tokens`` over its
    ``wall_s``. ``None`` when they agree or a column is absent or NaN."""
    import numpy as np

    n = int(counted.sum())
    for figure, columns in MODEL_TIME_COLUMNS.items():
        want = _figure(case, figure)
        every = figure == "run_output_tokens_per_s"  # over every row, warm-up included
        blank = 0 if want is None else _blank_counted(
            rows, np.ones(len(rows), dtype=bool) if every else counted, columns)
        if blank:
            return (f"{path}: case {str(case['case_id'])!r} has {blank:,} of its "
                    f"{len(rows) if every else n:,} {'' if every else 'counted '}rows "
                    f"without a {' or '.join(columns)} value (blank or not a number), but "
                    f"summary.json has {figure} {want:,.6g} (left out)")
    got = _model_time_figures(rows, counted)
    wall_s = _figure(case, "wall_s")
    tokens = _counted_values(rows, np.ones(len(rows), dtype=bool), ("num_output_tokens",))
    if "host_ns_per_step" in got and wall_s and tokens is not None \
            and len(rows) == _figure(case, "num_total_steps"):
        value = float(tokens.sum()) / wall_s
        want = _figure(case, "run_output_tokens_per_s")
        if want is not None and _differ(value, want):
            return (f"{path}: case {str(case['case_id'])!r} has a run_output_tokens_per_s "
                    f"of {value:,.6g} from all its {len(rows):,} rows' num_output_tokens "
                    f"over its wall_s {wall_s:,.6g}, but summary.json has "
                    f"run_output_tokens_per_s {want:,.6g} (left out)")
    for figure, (value, source) in got.items():
        want = _figure(case, figure)
        if want is not None and value is not None and _differ(value, want):
            return (f"{path}: case {str(case['case_id'])!r} has "
                    f"{'an' if figure[0] in 'aeiou' else 'a'} {figure} of {value:,.6g} "
                    f"over its {n:,} counted rows' {source}, but summary.json has "
                    f"{figure} {want:,.6g} (left out)")
    return None


#: The columns each of ``_gpu_time_problem``'s figures is recomputed from: a counted
#: row without a value in one of them (blanked by hand) leaves its case out
#: (``_blank_counted``), ``run_output_tokens_per_s``'s over every row.
MODEL_TIME_COLUMNS: dict[str, tuple[str, ...]] = {
    "emulated_forward_excess_ns_per_step": ("runner_forward_ns", "emulated_step_ns"),
    "emulated_context_tokens_per_request_mean": ("emulated_context_tokens", "num_reqs"),
    "host_ns_per_step": ("step_ns", "gpu_busy_ns"),
    "gpu_busy_share": ("step_ns", "gpu_busy_ns"),
    "host_ns_per_decode_step": ("step_ns", "gpu_busy_ns", "num_reqs",
                                "num_scheduled_tokens"),
    "gpu_idle_ns_per_step": ("gpu_idle_ns",),
    "run_output_tokens_per_s": ("num_output_tokens",),
}


def _model_time_figures(rows, counted) -> dict[str, tuple[float | None, str]]:
    """``_gpu_time_problem``'s figures recomputed from the counted rows (figure ->
    (value, the columns it comes from)); none whose columns are absent or NaN."""
    import numpy as np

    got: dict[str, tuple[float | None, str]] = {}
    emulated = _counted_values(rows, counted, ("emulated_step_ns",))
    forward = _counted_values(rows, counted, ("runner_forward_ns",))
    if emulated is not None and forward is not None and len(emulated):
        got["emulated_forward_excess_ns_per_step"] = (
            float(np.mean(forward - emulated)), "runner_forward_ns and emulated_step_ns")
    context = _counted_values(rows, counted, ("emulated_context_tokens",))
    reqs = _counted_values(rows, counted, ("num_reqs",))
    if context is not None and reqs is not None and (reqs > 0).any():
        got["emulated_context_tokens_per_request_mean"] = (
            float(np.mean(context[reqs > 0] / reqs[reqs > 0])),
            "emulated_context_tokens and num_reqs")
    busy = _counted_values(rows, counted, ("gpu_busy_ns",))
    step = _counted_values(rows, counted, ("step_ns",))
    if busy is None or step is None or not len(busy):
        return got
    both = "gpu_busy_ns and step_ns"
    got["host_ns_per_step"] = (float(np.mean(step - busy)), both)
    got["gpu_busy_share"] = (float(busy.sum() / step.sum()) if step.sum() else None, both)
    reqs = _counted_values(rows, counted, ("num_reqs",))
    tokens = _counted_values(rows, counted, ("num_scheduled_tokens",))
    if reqs is not None and tokens is not None:
        decode = (reqs > 0) & (tokens == reqs)
        if decode.any():
            got["host_ns_per_decode_step"] = (
                float(np.mean((step - busy)[decode])),
                f"{both} at its decode steps (num_scheduled_tokens = num_reqs)")
    idle = _counted_values(rows, counted, ("gpu_idle_ns",))
    if idle is not None and (idle >= 0).any():
        got["gpu_idle_ns_per_step"] = (float(idle[idle >= 0].mean()),
                                       "gpu_idle_ns (those not -1)")
    return got


#: The columns the summary's ``compute_to_roofline_ratio`` may be over
#: (``compute_to_roofline_basis``: ``analysis.summary._roofline_figures``).
ROOFLINE_BASES = ("gpu_busy_ns", "runner_forward_ns")


def _roofline_problem(case, rows, counted, path: Path) -> str | None:
    """The line of a case (a ``cases`` row) whose ``compute_to_roofline_ratio`` is not
    the median, over its counted ``steps.csv`` rows with a ``roofline_ns`` above 0, of
    its ``compute_to_roofline_basis`` column over ``roofline_ns`` (as
    ``analysis.summary._roofline_figures`` computes it; relative
    ``STEP_MEAN_TOLERANCE``): ``RUN/steps.csv: case 'ID' has a median
    runner_forward_ns / roofline_ns of 41.2 over its 20 counted rows with a roofline,
    but summary.json has compute_to_roofline_ratio 4.12 (left out)``. ``None`` when
    they agree, when the case has no such figure or basis, or a column is absent or
    NaN (a run written before ``steps.csv`` had ``roofline_ns``)."""
    import numpy as np

    want, basis = _figure(case, "compute_to_roofline_ratio"), case.get(
        "compute_to_roofline_basis")
    if want is None or basis not in ROOFLINE_BASES:
        return None
    roofline = _counted_values(rows, counted, ("roofline_ns",))
    compute = _counted_values(rows, counted, (basis,))
    if roofline is None or compute is None or not (roofline > 0).any():
        return None
    steps = roofline > 0
    got = float(np.median(compute[steps] / roofline[steps]))
    if not _differ(got, want):
        return None
    return (f"{path}: case {str(case['case_id'])!r} has a median {basis} / roofline_ns of "
            f"{got:,.6g} over its {int(steps.sum()):,} counted rows with a roofline, but "
            f"summary.json has compute_to_roofline_ratio {want:,.6g} (left out)")


#: The wire figures of a two-process case recomputed from its counted ``steps.csv``
#: rows by the function that wrote them (``analysis.summary.wire_bytes_per_step``: each
#: payload with its ZMTP frame head, the scheduler -> runner one on an ``shm*``
#: ``transport`` the ring's chunk head and payload), with the column each comes from
#: (``_wire_problem``). Of the totals, ``r2s_wire_bytes_total`` is recomputed too, from
#: every row (``_wire_total_problem``); ``s2r_wire_bytes_total`` is not: it also counts
#: the empty phase-marker frames, whose number no file records.
WIRE_FIGURES: dict[str, str] = {
    "sched_to_runner_wire_bytes_per_step": "s2r_payload_bytes",
    "runner_to_sched_wire_bytes_per_step": "r2s_payload_bytes",
}


def _wire_problem(case, rows, counted, path: Path) -> str | None:
    """The line of a case (a ``cases`` row) whose ``WIRE_FIGURES`` are not those its
    counted ``steps.csv`` rows give (``analysis.summary.wire_bytes_per_step``, by its
    ``transport``; relative ``STEP_MEAN_TOLERANCE``), naming the first: ``RUN/steps.csv:
    case 'ID' has a sched_to_runner_wire_bytes_per_step of 1,211.5 from its 20 counted
    rows' s2r_payload_bytes, but summary.json has sched_to_runner_wire_bytes_per_step 1
    (left out)``. ``None`` when they agree, when the case has neither figure (an
    in-process case, a streamed one), or when its ``transport`` is not a text or a
    column is absent or NaN."""
    import numpy as np

    from ipc_bench.analysis.summary import wire_bytes_per_step

    transport = case.get("transport")
    if not isinstance(transport, str) \
            or all(_figure(case, f) is None for f in WIRE_FIGURES):
        return None
    payload = {}
    for column in WIRE_FIGURES.values():
        values = _counted_values(rows, counted, (column,))
        if values is None:
            return None
        payload[column] = values.astype(np.int64)
    got = wire_bytes_per_step(payload["s2r_payload_bytes"], payload["r2s_payload_bytes"],
                              transport)
    for figure, column in WIRE_FIGURES.items():
        want = _figure(case, figure)
        if want is not None and _differ(got[figure], want):
            return (f"{path}: case {str(case['case_id'])!r} has a {figure} of "
                    f"{got[figure]:,.6g} from its {int(counted.sum()):,} counted rows' "
                    f"{column}, but summary.json has {figure} {want:,.6g} (left out)")
    return None


def _wire_total_problem(case, rows, counted, path: Path) -> str | None:
    """The line of a case (a ``cases`` row, with all of its ``steps.csv`` rows ``rows``,
    warm-up included) whose ``r2s_wire_bytes_total`` is not what its rows give, as
    ``analysis.summary.r2s_wire_bytes_total`` wrote it: every step's ``r2s_payload_bytes``
    with its ZMTP frame head (``summary.wire_bytes_per_step``' frames), and, where the case
    ran its floor (it has floor figures: ``FLOOR_FIGURES``), the floor's replays of its
    counted steps, whose replies are those steps' again; exact (a count of bytes):
    ``RUN/steps.csv: case 'ID' has an r2s_wire_bytes_total of 1,234 from its 25 rows'
    r2s_payload_bytes and its floor's replays of its 20 counted rows, but summary.json
    has r2s_wire_bytes_total 1 (left out)``. ``None`` when they agree, when the case has
    no such figure, or the column is absent or NaN."""
    import numpy as np

    from ipc_bench.analysis.summary import r2s_wire_bytes_total

    want = _figure(case, "r2s_wire_bytes_total")
    if want is None or "r2s_payload_bytes" not in rows:
        return None
    payload = rows["r2s_payload_bytes"].to_numpy(dtype=float)
    if np.isnan(payload).any():
        return None
    payload = payload.astype(np.int64)
    floor = any(_figure(case, figure) is not None for figure, _ in FLOOR_FIGURES)
    got = r2s_wire_bytes_total(payload, payload[counted] if floor else None)
    if got == want:
        return None
    source = f"its {len(rows):,} rows' r2s_payload_bytes" + (
        f" and its floor's replays of its {int(counted.sum()):,} counted rows" if floor
        else "")
    return (f"{path}: case {str(case['case_id'])!r} has an r2s_wire_bytes_total of "
            f"{got:,} from {source}, but summary.json has r2s_wire_bytes_total "
            f"{want:,.15g} (left out)")


#: The ``--tp`` / ``--pp`` summary figures recomputed from a case's counted ``steps.csv``
#: rows, with the columns each comes from (``_hop_figures``): figure -> columns (none:
#: ``pp_direct_bytes_per_step`` is 0 where ``pp_direct`` is false). Of
#: ``tp_rank_decode_ns_per_step``, rank 0's entry alone: ``steps.csv``'s runner columns
#: are rank 0's. The other per-rank and per-stage figures are not
#: recomputed: no file records their inputs (docs/faults.md, "Faults, interrupts and security":
#: which, and why).
HOP_FIGURES: dict[str, tuple[str, ...]] = {
    "tp_s2r_bytes_written_per_step": ("s2r_payload_bytes",),
    "tp_s2r_wire_bytes_all_ranks_per_step": ("s2r_payload_bytes",),
    "tp_encode_ns_per_step": ("encode_ns",),
    "tp_rank_decode_ns_per_step": ("runner_decode_ns",),
    "pp_s2r_bytes_per_step": ("s2r_payload_bytes",),
    "pp_s2r_wire_bytes_all_stages_per_step": ("s2r_payload_bytes",),
    "pp_r2s_bytes_per_step": ("r2s_payload_bytes",),
    "pp_zmq_frame_head_bytes_per_step": ("s2r_payload_bytes", "r2s_payload_bytes"),
    "pp_direct_bytes_per_step": (),
}


def _hop_figures(case, rows, counted) -> dict[str, float]:
    """The ``HOP_FIGURES`` of a ``--tp`` or ``--pp`` case (a ``cases`` row) recomputed
    from its counted ``steps.csv`` rows by the functions that wrote them
    (``analysis.tp.tp_broadcast_figures`` and ``rank_decode_ns_per_step``, rank 0's;
    ``analysis.pp.pp_hop_byte_figures``); ``{}`` for other cases. A figure whose inputs
    are absent or NaN (a column, the case's ``transport`` or ``pp_direct``) is left
    out."""
    import numpy as np

    from ipc_bench.analysis.pp import pp_hop_byte_figures
    from ipc_bench.analysis.tp import rank_decode_ns_per_step, tp_broadcast_figures

    def column(name: str):
        values = _counted_values(rows, counted, (name,))
        return None if values is None else values.astype(np.int64)

    tp, pp = _figure(case, "tp"), _figure(case, "pp")
    payload, encode = column("s2r_payload_bytes"), column("encode_ns")
    out: dict[str, float] = {}
    if tp is not None and isinstance(case.get("transport"), str) \
            and payload is not None and encode is not None:
        out.update(tp_broadcast_figures(payload, encode, case["transport"], int(tp)))
        decode = column("runner_decode_ns")
        if decode is not None:
            out["tp_rank_decode_ns_per_step"] = rank_decode_ns_per_step(decode)
    reply, direct = column("r2s_payload_bytes"), case.get("pp_direct")
    if pp is not None and payload is not None and reply is not None:
        known = isinstance(direct, (bool, np.bool_))
        out.update(pp_hop_byte_figures(payload, reply, int(pp), known and bool(direct)))
        if not known:  # a hand edit: whether the stages sent ids is unknown
            out.pop("pp_direct_bytes_per_step", None)
    return out


def _hop_problem(case, rows, counted, path: Path) -> str | None:
    """The line of a ``--tp`` or ``--pp`` case (a ``cases`` row) whose ``HOP_FIGURES``
    are not those its counted ``steps.csv`` rows give (``_hop_figures``; relative
    ``STEP_MEAN_TOLERANCE``), naming the first; ``None`` when they agree or the case
    has none."""
    for figure, got in _hop_figures(case, rows, counted).items():
        want, name = _figure(case, figure), figure
        if figure == "tp_rank_decode_ns_per_step":  # a list, one entry per rank
            ranks = case.get(figure)
            want = (_figure({figure: ranks[0]}, figure)
                    if isinstance(ranks, list) and ranks else None)
            name = f"{figure}[0]"
        if want is None or not _differ(got, want):
            continue
        columns = HOP_FIGURES[figure]
        source = (f"its {int(counted.sum()):,} counted rows' {' and '.join(columns)}"
                  + (" (rank 0's)" if figure == "tp_rank_decode_ns_per_step" else "")
                  if columns else "its pp_direct false (no ids sent between stages)")
        return (f"{path}: case {str(case['case_id'])!r} has a {name} of {got:,.6g} from "
                f"{source}, but summary.json has {name} {want:,.6g} (left out)")
    return None


def _gap_problem(case, rows, counted, path: Path) -> str | None:
    """The line of a case (a ``cases`` row, with all of its ``steps.csv`` rows ``rows``;
    ``counted``: bool per row) whose runner gap figures recomputed from those rows'
    ``RUNNER_GAP_COLUMNS`` by ``analysis.summary.runner_gap_figures`` (the function
    that wrote them) are not the summary's, naming the first; ``None`` when they are
    or a column holds NaN."""
    from ipc_bench.analysis.summary import runner_gap_figures

    if not all(c in rows for c in RUNNER_GAP_COLUMNS):
        return None
    runner = {c: rows[c].to_numpy(dtype=float) for c in RUNNER_GAP_COLUMNS}
    if any((v != v).any() for v in runner.values()):
        return None
    for figure, got in runner_gap_figures(runner, counted).items():
        want = _figure(case, figure)
        if want is not None and _differ(got, want):
            return (f"{path}: case {str(case['case_id'])!r} has a {figure} of {got:,.6g} "
                    f"from its rows' {' and '.join(RUNNER_GAP_COLUMNS)}, but summary.json "
                    f"has {figure} {want:,.6g} (left out)")
    return None


#: ``summary.json`` floor figures recomputed from a case's ``floor.csv`` rows (one
#: ``floor_step_ns`` per counted step replayed): figure -> how
#: (``analysis.summary.floor_figures``); the two must agree (``_floor_problem``).
FLOOR_FIGURES: tuple[tuple[str, str], ...] = (
    ("floor_step_ns_median", "median"), ("floor_step_ns_mean", "mean"),
    ("floor_output_tokens_per_s", "tokens"), ("step_to_floor_ratio", "ratio"),
)


def _floor_problem(case, floor_rows, path: Path) -> str | None:
    """The line of a case (a ``cases`` row) whose floor figures (``FLOOR_FIGURES``) are
    not those its ``floor.csv`` rows (``floor_rows``: the case's, one per counted step,
    ``num_steps`` of them) give (``analysis.summary.floor_figures``):
    the median and mean ``floor_step_ns`` (ns), its ``output_tokens`` over their total
    (tok/s), and its counted steps' time (``num_steps`` x ``step_ns_mean``, both
    checked against ``steps.csv`` by ``_step_problem``) over that total (relative
    ``STEP_MEAN_TOLERANCE``), naming the first; ``None`` when they agree, when the case
    has no floor, or that many rows (a file cut short: ``_load_warnings``)."""
    import numpy as np

    from ipc_bench.analysis.summary import floor_figures

    n = _figure(case, "num_steps")
    if not n or len(floor_rows) != n or "floor_step_ns" not in floor_rows:
        return None
    floor = floor_rows["floor_step_ns"].to_numpy(dtype=float)
    if np.isnan(floor).any() or not floor.sum():
        return None
    total = float(floor.sum())
    tokens, mean = _figure(case, "output_tokens"), _figure(case, "step_ns_mean")
    recomputed = floor_figures(floor, tokens, None if mean is None else n * mean)
    over = f"over its {len(floor):,} floor.csv rows"
    for figure, kind in FLOOR_FIGURES:
        got, want = recomputed[figure], _figure(case, figure)
        if got is None or want is None or not _differ(got, want):
            continue
        said = {"median": f"a median floor_step_ns of {got:,.6g} {over}",
                "mean": f"a mean floor_step_ns of {got:,.6g} {over}",
                "tokens": f"its output_tokens {tokens:,.15g} over the {total:,.15g} ns "
                          f"of its {len(floor):,} floor.csv rows: {got:,.6g} tok/s",
                "ratio": f"its {n:,.15g} counted steps of step_ns_mean {mean:,.6g} over "
                         f"the {total:,.15g} ns of its {len(floor):,} floor.csv rows: "
                         f"{got:,.6g}"}[kind]
        return (f"{path}: case {str(case['case_id'])!r} has {said}, but summary.json "
                f"has {figure} {want:,.6g} (left out)")
    return None


def _as_number(value: Any) -> Any:
    """A ``repetition`` or another figure from a table or summary.json as a number to
    compare (``0``, ``0.0`` and ``"0"`` alike), the value itself where it is none."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return value


def _rows_identity_problem(case, rows, path: Path) -> str | None:
    """The line of a case (a ``cases`` row) whose rows in ``path`` (``steps.csv`` or
    ``requests.csv``, each row keyed by its ``case_id`` and repeating its identity,
    ``harness.run_folder.CASE_KEYS``) name another ``scenario``, ``policy``, ``codec``,
    ``repetition`` or ``workload`` than summary.json does: a hand edit that swapped
    two cases' labels in one file. ``None`` when they agree, or where either lacks the
    field."""
    def show(v: Any) -> str:
        return _number(v) if isinstance(v, float) else _shown(v)

    for key in CASE_KEYS[1:]:
        want = case.get(key)
        if key not in rows or want is None or want != want:
            continue
        read = _as_number if key == "repetition" else str
        values = [read(v) for v in rows[key] if v == v]
        bad = [v for v in values if v != read(want)]
        if bad:
            return (f"{path}: case {str(case['case_id'])!r} has {key} "
                    f"{', '.join(map(show, sorted(set(bad), key=str)))} in "
                    f"{_rows(len(bad))}, but "
                    f"summary.json has {key} {show(read(want))} (left out)")
    return None


def _disagreeing_cases(steps, requests, floor, cases, run_dir: Path,
                       recorded: list[str] = ()) -> tuple[set[str], list[str]]:
    """The case ids of ``cases`` (summary entries) whose figures disagree, and one line
    per such case naming the first figure and both values: a figure that is not the
    one recomputed from its ``steps.csv`` rows (``steps``: ``_step_problem``), an
    ``output_tokens_per_s`` that is not its own tokens over its counted steps
    (``_rate_problem``), or, for a timed replay, a wall-time ``output_tokens_per_s``
    that is not its ``requests.csv`` rows' output tokens (``requests``) over its
    ``wall_s`` (``_wall_rate_problem``), or a ``wall_s`` shorter than its last step
    (``_wall_problem``), or waiting figures that are not its steps'
    (``_waiting_problem``), idle or arrival figures that do not hold together
    (``_pace_problem``) or an idle time its steps leave no room for
    (``_idle_problem``), request counts that are not its ``requests.csv`` rows'
    (``_request_count_problem``), or floor figures that are not its ``floor.csv`` rows'
    (``floor``: ``_floor_problem``). The figures from the one and the
    tables from the other would not agree, so the case is left out. So is one whose
    ``schedule_digest`` its rows do not bear out (``_schedule_problems``), whose
    token-id bytes its frames do not (``_token_bytes_pair_problems``), or whose
    ``token_digest`` is not that of the cases its token stream was compared with
    (``_token_digest_problems``; ``recorded``: the run's own ``problems``)."""
    if "case_id" not in cases:
        return set(), []
    rows_known = (len(steps) > 0 and "case_id" in steps and "counted" in steps
                  and "num_steps" in cases)
    ids = steps["case_id"].astype(str) if rows_known else None
    req_ids = requests["case_id"].astype(str) if "case_id" in requests else None
    floor_ids = floor["case_id"].astype(str) if "case_id" in floor else None
    bad, lines = set(), []
    for i in range(len(cases)):
        case = cases.iloc[i]
        why = rows = None
        if rows_known:
            rows = steps[ids == str(case["case_id"])].reset_index(drop=True)
            if len(rows):
                why = (_rows_identity_problem(case, rows, run_dir / "steps.csv")
                       or _step_problem(case, rows, run_dir / "steps.csv"))
        if why is None and req_ids is not None:
            why = _rows_identity_problem(case, requests[req_ids == str(case["case_id"])],
                                         run_dir / "requests.csv")
        why = why or _rate_problem(case, run_dir / "summary.json")
        if why is None and req_ids is not None:
            mine = requests[req_ids == str(case["case_id"])]
            why = (_wall_rate_problem(case, mine, run_dir / "summary.json")
                   or _request_count_problem(case, mine, run_dir / "requests.csv"))
        if why is None and rows is not None:
            why = (_wall_problem(case, rows, run_dir / "summary.json")
                   or _waiting_problem(case, rows, run_dir / "steps.csv"))
        if why is None and req_ids is not None:  # after the wall time's own check
            why = _pace_problem(case, requests[req_ids == str(case["case_id"])],
                                run_dir / "summary.json")
        if why is None and rows is not None:
            why = _idle_problem(case, rows, run_dir / "summary.json")
        if why is None and floor_ids is not None:
            why = _floor_problem(case, floor[floor_ids == str(case["case_id"])],
                                 run_dir / "floor.csv")
        if why is not None:
            lines.append(why)
            bad.add(str(case["case_id"]))
    found = (_schedule_problems(steps, ids, cases, bad, run_dir / "steps.csv")
             if rows_known else [])
    found += _token_bytes_pair_problems(cases, bad, run_dir / "summary.json")
    found += _token_digest_problems(cases, bad, run_dir / "summary.json", recorded)
    for case_id, why in found:
        if case_id not in bad:
            lines.append(why)
            bad.add(case_id)
    return bad, lines


#: The codecs whose SchedulerOutput frames differ between send and cached by the
#: token-id bytes alone where the two ran one schedule (``_token_bytes_pair_problems``):
#: each frame encodes the whole message, so send's frame less its token lists is
#: cached's. The stateful codecs' frames depend on what the runner holds.
WHOLE_MESSAGE_CODECS = ("msgpack", "pickle")


def _token_bytes_pair_problems(cases, bad: set[str], path: Path) -> list[tuple[str, str]]:
    """``(case_id, line)`` for each send case of ``cases`` (not in ``bad``) whose token-id
    bytes per step (``decode_token_bytes_per_step`` + ``prompt_chunk_bytes_per_step``:
    what ``new_token_ids`` add to its frames, ``summary.token_bytes_split``) are not
    what its SchedulerOutput carries beyond that of a cached case of the same workload,
    codec (``WHOLE_MESSAGE_CODECS``), transport, repetition, ``schedule_digest`` and
    ``num_steps``, both complete and synchronous
    (``sched_to_runner_payload_bytes_per_step``, over the same counted steps: the same
    schedule; an interrupted case averages fewer): exact in every run (e.g. 19.8 = 390.9 - 371.1), so a
    figure typed over. The first such cached case is the one compared."""
    need = {"policy", "codec", "workload", "schedule_digest", "decode_token_bytes_per_step",
            "sched_to_runner_payload_bytes_per_step"}
    if not need <= set(cases.columns):
        return []

    def key(r):  # one schedule, every counted step of it: the same steps averaged
        return tuple(r.get(k) for k in ("workload", "codec", "transport", "repetition",
                                        "schedule_digest", "num_steps"))

    rows = [r for r in records(cases) if r.get("complete") is True]
    cached = {}
    for r in rows:
        if r["policy"] != SEND and not r.get("async_scheduling"):
            cached.setdefault(key(r), r)
    out = []
    for r in rows:
        other = cached.get(key(r))
        if (r["policy"] != SEND or r.get("async_scheduling") or other is None
                or r["codec"] not in WHOLE_MESSAGE_CODECS
                or not isinstance(r["schedule_digest"], str)
                or str(r["case_id"]) in bad or str(other["case_id"]) in bad):
            continue
        figures = [r.get("decode_token_bytes_per_step"),
                   r.get("prompt_chunk_bytes_per_step") or 0,
                   r.get("sched_to_runner_payload_bytes_per_step"),
                   other.get("sched_to_runner_payload_bytes_per_step")]
        if any(v is None for v in figures):
            continue
        tokens, longer = figures[0] + figures[1], figures[2] - figures[3]
        if abs(tokens - longer) > 1e-6 * max(1.0, abs(longer)):
            out.append((str(r["case_id"]), (
                f"{path}: case {str(r['case_id'])!r} has decode_token_bytes_per_step + "
                f"prompt_chunk_bytes_per_step {tokens:,.6g}, but its SchedulerOutput is "
                f"{longer:,.6g} bytes a step longer than that of case "
                f"{str(other['case_id'])!r}, which ran the same schedule (left out)")))
    return out


def _token_digest_problems(cases, bad: set[str], path: Path,
                           recorded: list[str]) -> list[tuple[str, str]]:
    """``(case_id, line)`` for each complete case of ``cases`` (not in ``bad``) whose
    ``token_digest`` is not that of the cases the run's token oracle compares it with
    (``summary.digest_disagreements``, as the run ran it: one ``schedule_digest``, or
    a drained row-only model): a digest typed over, since the run would have failed
    (``token streams differ``) and said so in ``recorded`` (its ``problems``), whose
    lines are not said again. A null (or missing) ``token_digest`` is such a digest,
    printed ``null``: a run writes a text there (only a ``schedule_digest`` may be
    null: no schedule kept, nothing compared). The digest most of the group's cases
    share is taken as the run's, and each other case's line names a case that holds
    it; where none has a majority (two cases that differ), every case of the group is
    named, each against a case of another of the most shared digests. The two digests
    are cut 4 characters past the first at which they differ (12 at least), with
    ``...`` where cut, so that they never read the same."""
    from ipc_bench.analysis.summary import digest_disagreements

    if not {"scenario", "workload", "token_digest"} <= set(cases.columns):
        return []
    rows = [dict(r, token_digest=NULL_DIGEST if r["token_digest"] is None
                 else r["token_digest"])
            for r in records(cases)
            if r.get("complete") is True and str(r["case_id"]) not in bad
            and (r["token_digest"] is None or isinstance(r["token_digest"], str))]
    out = []
    for line, digests in digest_disagreements(rows)[0]:
        if line in recorded:  # the run found it: its status and problems say so
            continue
        for digest, other in _against_the_most_shared(digests).items():
            mine, theirs = _digests_apart(digest, other)
            for case_id in digests[digest]:
                out.append((str(case_id), (
                    f"{path}: case {str(case_id)!r} has token_digest {mine}, but case "
                    f"{str(digests[other][0])!r}, whose token stream the run compares "
                    f"with it, has {theirs}: the run would have failed with 'token "
                    "streams differ' (left out)")))
    return out


#: A null digest's stand-in among texts (``_shown_digest`` prints it ``null``): a
#: text no digest is.
NULL_DIGEST = "\0null"


def _against_the_most_shared(holders: dict) -> dict:
    """For ``holders`` (a value -> the cases that hold it, in order), each value but the
    one most of the cases hold -> the value its cases are set against: the most held
    one; where two or more are held by as many cases (no majority), every value is
    set against the first other of those. Empty when only one value is held."""
    if len(holders) < 2:
        return {}
    top = max(len(ids) for ids in holders.values())
    common = [v for v, ids in holders.items() if len(ids) == top]
    return {v: next(c for c in common if c != v) for v in holders if common != [v]}


def _shown_digest(digest: str, keep: int = 12) -> str:
    """``digest`` (a text, or ``NULL_DIGEST``) cut to ``keep`` characters with ``...``
    where cut; ``null`` for ``NULL_DIGEST``, ``""`` for an empty one."""
    if digest == NULL_DIGEST:
        return "null"
    return '""' if not digest else digest[:keep] + "..." if len(digest) > keep else digest


def _digests_apart(digest: str, other: str) -> tuple[str, str]:
    """Two digests that differ, each ``_shown_digest`` cut 4 characters past the first
    at which they differ (12 at least), so that they never read the same."""
    same = next((i for i, (a, b) in enumerate(zip(digest, other)) if a != b),
                min(len(digest), len(other)))
    keep = max(12, same + 4)
    return _shown_digest(digest, keep), _shown_digest(other, keep)


#: The ``steps.csv`` columns that follow from a step's schedule alone, so equal in every
#: row of two cases with one ``schedule_digest`` (``harness.oracle.ScheduleDigest``:
#: the scheduled requests and token counts of every step, warm-up included).
SCHEDULE_COLUMNS = ("num_reqs", "num_scheduled_tokens")


def _schedule_problems(steps, ids, cases, bad: set[str],
                       path: Path) -> list[tuple[str, str]]:
    """``(case_id, line)`` for each case of ``cases`` (not in ``bad``) whose
    ``steps.csv`` rows (``ids``: the rows' case ids), every step's there
    (``num_total_steps``), schedule other batches (``SCHEDULE_COLUMNS``) than the
    cases that share its ``schedule_digest``: a digest typed over, which would let the
    token oracle's verdicts and the floor pairs compare cases whose schedules differ.
    The batches most of the group's cases share are taken as the digest's, and each
    other case's line names a case that holds them (``_against_the_most_shared``, as
    ``_token_digest_problems``); where no sequence has a majority (two cases that
    differ), every case of the group is named, each against a case of another of the
    most shared sequences. The digest is printed as ``_shown_digest`` cuts it."""
    if not set(SCHEDULE_COLUMNS) <= set(steps.columns) or "schedule_digest" not in cases:
        return []
    groups: dict[str, list[tuple[str, tuple]]] = {}
    for i in range(len(cases)):
        case = cases.iloc[i]
        case_id, digest = str(case["case_id"]), case["schedule_digest"]
        if case_id in bad or not isinstance(digest, str):
            continue
        rows = steps[ids == case_id]
        if not len(rows) or len(rows) != _figure(case, "num_total_steps"):
            continue
        batches = tuple(map(tuple, rows.sort_values("seq" if "seq" in rows else "step")[
            list(SCHEDULE_COLUMNS)].to_numpy(dtype=float).tolist()))
        groups.setdefault(digest, []).append((case_id, batches))
    out = []
    for digest, members in groups.items():
        holders: dict[tuple, list[str]] = {}
        for case_id, batches in members:
            holders.setdefault(batches, []).append(case_id)
        against = _against_the_most_shared(holders)
        for case_id, batches in members:
            if batches not in against:
                continue
            other = against[batches]
            out.append((case_id, f"{path}: case {case_id!r} has schedule_digest "
                        f"{_shown_digest(digest)} as case {holders[other][0]!r}, but its "
                        f"rows schedule other batches "
                        f"({_first_other_batch(batches, other)}; left out)"))
    return out


def _first_other_batch(batches: tuple, other: tuple) -> str:
    """The first step at which two cases' ``SCHEDULE_COLUMNS`` sequences differ, in
    words: ``step 3: 4 requests, 605 tokens against 4 requests, 600 tokens``."""
    def said(batch) -> str:
        if batch is None:
            return "no step"
        reqs, tokens = batch
        return f"{reqs:g} request{'s' * (reqs != 1)}, {tokens:g} token{'s' * (tokens != 1)}"

    for step in range(max(len(batches), len(other))):
        mine = batches[step] if step < len(batches) else None
        theirs = other[step] if step < len(other) else None
        if mine != theirs:
            return f"step {step}: {said(mine)} against {said(theirs)}"
    return "no step differs"


def _short_steps(steps, cases) -> str:
    """'' when every case of ``cases`` (summary entries) has its ``num_total_steps``
    rows in ``steps`` (a case whose rows were left in ``steps.partial.csv``,
    ``steps_kept_in``, is not counted); else the counts, in words, naming the first
    cases short (``_short_rows``)."""
    if "num_total_steps" not in cases or "case_id" not in steps:
        return ""
    gone = _unwritten(cases, "steps.csv")  # rows left in steps.partial.csv: not here
    want = {str(case_id): int(n) for case_id, n
            in zip(cases["case_id"], cases["num_total_steps"])
            if n is not None and n == n and str(case_id) not in gone}  # NaN: not recorded
    return _short_rows(steps, want, "summary.json counts")


def _short_rows(df, want: dict[str, int], counted_by: str, how: str = "") -> str:
    """'' when every case of ``want`` (case id -> rows it should have) has that many
    rows in ``df`` (a CSV file's, with ``case_id``); else ``GOT of the WANT rows
    that COUNTED_BY (HOW; N case(s) short: ID: got of want; ...)``, naming the first
    ``SHORT_CASES_SHOWN`` cases short (a row more than wanted is not counted)."""
    if "case_id" not in df:
        return ""
    have = df["case_id"].astype(str).value_counts()
    short, got_sum, want_sum = [], 0, 0
    for case_id, n in want.items():
        got = int(have.get(case_id, 0))
        got_sum, want_sum = got_sum + min(got, n), want_sum + n
        if got < n:
            short.append(f"{case_id}: {got:,} of {n:,}")
    if not short:
        return ""
    more = len(short) - SHORT_CASES_SHOWN
    named = "; ".join(short[:SHORT_CASES_SHOWN]) + (f"; {more} more" if more > 0 else "")
    return (f"{got_sum:,} of the {want_sum:,} rows that {counted_by} "
            f"({how + '; ' if how else ''}{len(short)} case(s) short: {named})")


def _short_requests(requests, cases) -> str:
    """``_short_rows``' words on ``requests`` (``requests.csv``'s rows) when a case of
    ``cases`` (summary entries) has fewer than its ``num_requests`` (one row per
    request: ``analysis.summary``), else ''; a case whose writes failed
    (``_unwritten``) is not counted."""
    gone = _unwritten(cases, "requests.csv")
    want = {case_id: int(n) for case_id, n in _case_values(cases, "num_requests").items()
            if case_id not in gone}
    return _short_rows(requests, want, "summary.json counts")


def _floor_wanted(cases) -> dict[str, int]:
    """Case id -> the ``floor.csv`` rows it should have: one per counted step
    (``num_steps``) of each case of ``cases`` (summary entries) that records a floor
    (``floor_step_ns_median``; not a timed replay's, nor one run with ``--no-floor``)."""
    floored = set(_case_values(cases, "floor_step_ns_median"))
    return {c: int(n) for c, n in _case_values(cases, "num_steps").items() if c in floored}


def _surplus_floor(floor, cases, run_dir: Path):
    """``_surplus_rows`` of ``floor`` (``floor.csv``'s rows) against ``_floor_wanted``."""
    return _surplus_rows(floor, _floor_wanted(cases), run_dir / "floor.csv",
                         "counted steps summary.json counts (num_steps), one floor step "
                         "each")


def _short_floor(floor, cases, surplus: set[str]) -> str:
    """``_short_rows``' words on ``floor`` (``floor.csv``'s rows) when a case of
    ``cases`` has fewer than ``_floor_wanted`` gives (its floor figures are then not
    checked against them: ``_floor_problem``), else ''; a case whose writes failed
    (``_unwritten``) is not counted, nor one whose rows were left out as more than it
    should have (``surplus``: said so already)."""
    gone = _unwritten(cases, "floor.csv") | surplus
    return _short_rows(floor, {c: n for c, n in _floor_wanted(cases).items()
                               if c not in gone}, "summary.json counts",
                       "one per counted step; their floor figures not checked")


def _unwritten(cases, name: str) -> set[str]:
    """The ids of the cases of ``cases`` (summary entries) whose rows the CSV file
    ``name`` could not take: a write failed, and the run recorded it (``steps_kept_in``:
    its steps were left in ``steps.partial.csv``, and its other files not written
    then, by a run written before ``rows_not_written``; ``rows_not_written``: the rows
    of each file that failed, counted), so that the file lacks rows of them."""
    out = set()
    for case in frame_records(cases) if "case_id" in cases else ():
        lost = case.get("rows_not_written")
        if isinstance(case.get("steps_kept_in"), str) and not isinstance(lost, dict) \
                or isinstance(lost, dict) and name in lost:
            out.add(str(case["case_id"]))
    return out


def _short_itl(itl, requests, cases) -> str:
    """``_short_rows``' words on ``itl`` (``itl.csv``'s rows) when a case of ``cases``
    (summary entries) that records ITL figures (``itl_ms_*``) has fewer rows than its
    ``requests.csv`` rows (``requests``) give, ``n - 1`` gaps for a request of ``n``
    output tokens (``recording.request_record``), else ''; a case whose writes failed
    (``_unwritten``) is not counted."""
    if not {"case_id", "num_output_tokens"} <= set(requests.columns) or not len(cases):
        return ""
    gone = _unwritten(cases, "itl.csv") | _unwritten(cases, "requests.csv")
    want = {c: n for c, n in itl_wanted(requests, cases).items() if c not in gone}
    return _short_rows(itl, want, "requests.csv counts",
                       "n - 1 for a request of n output tokens")


def itl_wanted(requests, cases) -> dict[str, int]:
    """Case id -> the ``itl.csv`` rows its ``requests`` rows give, ``n - 1`` gaps for a
    request of ``n`` output tokens (``recording.request_record``), for each case of
    ``cases`` (summary entries, in their order) that records ITL figures; ``{}``
    without the columns."""
    if not {"case_id", "num_output_tokens"} <= set(requests.columns) or not len(cases):
        return {}
    tokens = requests["num_output_tokens"].astype(float)
    gaps = (tokens - 1).clip(lower=0).where(tokens == tokens, 0)
    per_case = gaps.groupby(requests["case_id"].astype(str), observed=True).sum()
    return {str(c["case_id"]): int(per_case.get(str(c["case_id"]), 0))
            for c in frame_records(cases) if _has_itl([c])}


def _surplus_rows(df, want: dict[str, int], path: Path, what: str):
    """(``df`` without the rows of every case of ``want`` (case id -> the rows it
    should have) that has more, a line per such case, their ids): a row more than its
    summary counts (a request written twice, a floor step again) would be drawn in the
    figures as the case's own (``steps.csv``'s are said, not left out: ``_long_steps``;
    ``itl.csv``'s are checked per request: ``_surplus_gaps``). ``what`` names the
    count."""
    if "case_id" not in df or not len(df):
        return df, [], set()
    have = df["case_id"].astype(str).value_counts()
    over = [c for c, n in want.items() if int(have.get(c, 0)) > n]
    lines = [f"{path}: case {c!r} has {_rows(int(have[c]))}, more than the {want[c]:,} "
             f"{what} (its rows left out)" for c in over]
    return _without_cases([df], set(over))[0], lines, set(over)


def _surplus_latency_rows(requests, itl, cases, run_dir: Path):
    """(``requests``, ``itl``, lines, ids): the rows of each case with more ``requests.csv``
    rows than its ``num_requests``, or more ``itl.csv`` rows than its requests give
    (``itl_wanted``), left out of both, said (``_surplus_rows``), and those cases' ids;
    their latency figures, over rows left out, are then withheld
    (``_withheld_latencies``)."""
    want = {c: int(n) for c, n in _case_values(cases, "num_requests").items()}
    requests, lines, over = _surplus_rows(requests, want, run_dir / "requests.csv",
                                          "requests summary.json counts (num_requests)")
    itl = _without_cases([itl], over)[0]
    gaps_over, more = _surplus_gaps(itl, requests, cases, run_dir / "itl.csv")
    requests, itl = _without_cases([requests, itl], gaps_over)
    return requests, itl, lines + more, over | gaps_over


def _surplus_gaps(itl, requests, cases, path: Path) -> tuple[set[str], list[str]]:
    """The ids of the cases of ``cases`` with more ``itl`` rows than their ``requests``
    rows give (``n - 1`` gaps for a request of ``n`` output tokens), and a line each:
    a request with more gaps than that, or, where the case has all its requests
    (``num_requests`` rows), a gap of no request (where some are missing, such gaps are
    theirs: ``_impossible_latencies`` leaves them out)."""
    need = {"case_id", "index"}
    if not (need <= set(itl.columns) and need | {"num_output_tokens"} <= set(requests.columns)
            and len(itl)):
        return set(), []
    asked = _case_values(cases, "num_requests")
    over, lines = set(), []
    for case_id, want in itl_wanted(requests, cases).items():
        mine = requests[requests["case_id"].astype(str) == case_id]
        tokens = mine["num_output_tokens"].astype(float)
        wanted = dict(zip(mine["index"].astype(str), (tokens - 1).clip(lower=0).fillna(0)))
        have = itl.loc[itl["case_id"].astype(str) == case_id, "index"].astype(str).value_counts()
        whole = asked.get(case_id) == len(mine)
        if any(n > wanted.get(i, 0) for i, n in have.items() if whole or i in wanted):
            over.add(case_id)
            counted = int(have.sum() if whole else have[have.index.isin(list(wanted))].sum())
            lines.append(f"{path}: case {case_id!r} has {_rows(counted)}, more than the "
                         f"{want:,} gaps its requests.csv rows give (n - 1 for a request "
                         "of n output tokens; its rows left out)")
    return over, lines


def _load_warnings(run_dir: Path, notes: dict[str, list[str]],
                   short: dict[str, str]) -> list[str]:
    """One line per CSV file of ``run_dir`` found cut short: ``notes`` per file stem,
    ``short``: per file stem, the words on its rows missing (``_short_steps``,
    ``_short_requests``, ``_short_itl``), after the notes a clause of its own: ``...
    (left out), and it holds 10 of the 12 rows that ...``."""
    notes = {stem: lines + ([("it holds " if lines else "") + short[stem]]
                            if short.get(stem) else [])
             for stem, lines in notes.items()}
    return [f"{run_dir / (stem + '.csv')}: {', and '.join(lines)}; loaded what is valid"
            for stem, lines in notes.items() if lines]


def _utc(ts: float) -> str:
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M:%S UTC")


#: ``unfinished_state``'s words: a run holding its claim's lock, one whose lock no
#: process holds, and a folder without the claim file (written before it, or not by
#: ``bench.py``), of which it cannot be told. A run whose lock no process holds ended
#: without recording its end: it was killed (SIGKILL, the OOM killer), or a write
#: failed and ``summary.json`` could not take its end either (a full disk: the line
#: ``bench.py`` printed said so; the folder keeps no trace of it), which the folder
#: cannot tell apart, so the words name both.
STILL_RUNNING = "still running (it holds its lock)"
KILLED = ("stopped without finishing its summary (killed, or summary.json could not be "
          "written: a full disk, say): no process holds its lock")
KILLED_OR_RUNNING = ("stopped without finishing its summary (killed, or summary.json could "
                     "not be written) or still running")


def unfinished_state(run_dir: Path) -> str:
    """Whether a run that recorded no end (``run_dir``) is still going or stopped
    (killed, or unable to write its ``summary.json``), in words: ``STILL_RUNNING``
    while a process holds the lock on its ``CLAIM_FILE`` (``run_folder.run_in_progress``;
    the kernel drops it when the run's process ends, SIGKILL included), ``KILLED`` when
    none does, ``KILLED_OR_RUNNING`` when the folder has no such file."""
    if run_in_progress(run_dir):
        return STILL_RUNNING
    return KILLED if (run_dir / CLAIM_FILE).is_file() else KILLED_OR_RUNNING


def unfinished_detail(summary: dict[str, Any], run_dir: Path) -> str:
    """One line on a run that ended without recording why (``status`` not complete and
    no ``problems``: ``bench.py`` was killed, e.g. by SIGKILL, or could not write its
    end to ``summary.json``, a disk full, or is still running; a ``failed`` status
    without problems, which ``bench.py`` never writes, is said as such),
    from what its files tell: which of the two (``unfinished_state``), the cases
    recorded, the case that was running and when the run started (its recorded
    ``start_time_utc``: ``last case ID running (the run started 2026-12-06 13:16:14
    UTC)``; a copy, ``cp -r``, gives its files new times, so they are no clock of the
    run), else since ``summary.json``'s modification time, said to be that (it is
    rewritten when a case starts: ``last case ID running since ... UTC (summary.json's
    modification time)``), and the rows in ``steps.partial.csv``."""
    planned = len((summary.get("metadata") or {}).get("cases") or [])
    recorded = f"{len(summary.get('cases') or [])} of {planned} cases recorded"
    end = iso_time((summary.get("metadata") or {}).get("end_time_utc"))
    if summary.get("status") == "failed":
        # ``bench.py`` writes ``failed`` only with the problems that failed it
        parts = [f"status failed, but no problem was recorded (summary.json edited, or "
                 f"written by another tool), {recorded}"]
    elif end is not None:  # ``bench.py`` records an end only with a final status
        word = summary.get("status") if summary.get("status") in RUN_STATUSES else "unknown"
        parts = [f"status {word}, but its end was "
                 f"recorded (end_time_utc {summary['metadata']['end_time_utc']}) with no "
                 f"problem (summary.json edited, or written by another tool), {recorded}"]
    else:
        state = unfinished_state(run_dir)
        parts = [f"{state}{', ' if ':' in state else ': '}no end was recorded, summary "
                 f"status {summary.get('status', 'unknown')}, {recorded}"]
    running = summary.get("running_case")
    if running:
        start = iso_time((summary.get("metadata") or {}).get("start_time_utc"))
        if start is not None:
            parts.append(f"last case {running} running (the run started "
                         f"{_utc(start.timestamp())})")
        else:
            since = _utc((run_dir / "summary.json").stat().st_mtime)
            parts.append(f"last case {running} running since {since} (summary.json's "
                         f"modification time)")
    return ", ".join(parts + _partial_rows(run_dir))


def _partial_rows(run_dir: Path) -> list[str]:
    """``["steps.partial.csv holds 7,041 rows of it (its modification time ...)"]``:
    the rows the case that did not finish left in ``steps.partial.csv`` (killed, or a
    write that failed), and the file's modification time, said to be that (its rows
    record no time of day, and a copy of the folder gives it the copy's time); ``[]``
    when there is no such file."""
    partial = run_dir / PARTIAL_STEPS
    if not partial.is_file():
        return []
    size, _ = _unpadded_size(partial, None)
    with open(partial, "rb") as f:
        lines = _count_lines(f, size)
    return [f"{PARTIAL_STEPS} holds {max(lines - 1, 0):,} rows of it (its "
            f"modification time {_utc(partial.stat().st_mtime)})"]


def without_full_stop(text: str) -> str:
    """``text`` (an error quoted in a run's problems or a case's ``error``) without the
    one full stop it may end with (gloo's: ``... Connection reset by peer.``), so that
    the words around it (``; ``, ``.``, ``)``) follow it without a second mark; an
    ellipsis (``..``) is kept, as ``cli.execute.with_pointer`` keeps it; whitespace at
    its end goes too."""
    text = text.rstrip()
    if text.endswith(".") and not text.endswith(".."):
        return text[:-1].rstrip()
    return text


def _problems_detail(summary: dict[str, Any], problems: list[Any], run_dir: Path) -> str:
    """Why a run that recorded its ``problems`` did not complete, in one line: the
    problems, ``; `` between them, ending ``; case ID was running`` where
    ``summary.json`` names the case that failed or was running (``failed_case``, else
    ``running_case``) and no problem names it (a write that failed: ``cannot write
    results to DIR: File too large``; ``; case ID had finished, its files being
    written`` where it is listed complete: its captured messages failed), then, as for a killed run
    (``unfinished_detail``), the rows that case left in ``steps.partial.csv``
    (``, steps.partial.csv holds 13,263 rows of it (its modification time ...)``).
    ``""`` when there are no problems."""
    text = "; ".join(without_full_stop(str(p)) for p in problems)
    case = summary.get("failed_case") or summary.get("running_case")
    if text and isinstance(case, str) and case not in text:
        done = any(isinstance(c, dict) and c.get("case_id") == case and c.get("complete")
                   is True for c in summary.get("cases") or [])
        text += (f"; case {case} had finished, its files being written" if done
                 else f"; case {case} was running")
    return ", ".join([text] + _partial_rows(run_dir)) if text else text


#: Fields of a ``summary.json`` case that are numbers (or null) besides the metrics
#: of ``analysis.metrics.METRICS``: counts, times and the replay's speed.
_NUMERIC_CASE_FIELDS = ("repetition", "num_steps", "num_warmup_steps", "warmup_token_share",
                        "num_total_steps",
                        "counted_steps_asked", "max_steps", "output_len_mean", "wall_s",
                        "num_requests",
                        "num_rejected", "num_finished", "num_preemptions", "output_tokens",
                        "trace_speedup", "busy_output_tokens_per_s",
                        "input_oracle_interval", "num_spec_tokens", "case_elapsed_s",
                        "machine_busy_pct", "cpu_steal_pct", "num_cut_at_max_model_len",
                        "runner_gap_ns_median", "runner_gap_ns_p99",
                        "runner_gap_share_median", "runner_gap_share_p99",
                        "runner_step_ns_median", "step_ns_max", "step_ns_max_seq",
                        "output_tokens_per_s_without_longest", "between_steps_ns_max",
                        "between_steps_ns_max_seq",
                        # a timed replay's pace figures (``analysis.pace``)
                        "num_waiting_mean", "waiting_step_share", "last_arrival_s",
                        "arrival_span_share", "idle_s", "idle_share",
                        # a trace replay's stalled steps (``analysis.replay_stall``)
                        "stalled_steps", "stalled_step_share", "stall_unjudged_steps",
                        "stalled_step_ns_max", "stalled_step_ns_max_seq",
                        "stalled_step_ns_max_ratio", "output_tokens_per_s_without_stalled",
                        "step_ns_bin_ratio_max",
                        # each process's garbage collections and their time, per step
                        "sched_gc_collections_per_step", "runner_gc_collections_per_step",
                        "sched_gc_ns_per_step", "runner_gc_ns_per_step",
                        # what each p99 is over (the report's p99 notes)
                        "ttft_count", "tpot_count", "itl_count", "e2e_count",
                        "runner_gap_count")


#: Fields of a ``summary.json`` case that are percentages of the whole machine's CPU
#: time during the case (``harness.environment.cpu_usage_between``: busy and steal,
#: two disjoint parts of it): each from 0 to ``MAX_PERCENT``, and so is their sum.
_PERCENT_CASE_FIELDS = ("machine_busy_pct", "cpu_steal_pct")

#: The largest value of a ``_PERCENT_CASE_FIELDS`` field, and of their sum: the whole
#: machine's CPU time.
MAX_PERCENT = 100.0

#: The fields of a ``summary.json`` case that only the scheduler <-> runner hop of a
#: two-process case has (``analysis.summary._wire_bytes``, ``tp_figures``,
#: ``pp_figures``, ``frontend_figures``' whole control plane): a single-process case
#: (``transport`` ``harness.spec.INPROC``) sends no message between them, so it has
#: none of them (``_inproc_problem``). Its frontend hop's ``frontend_wire_bytes_per_step``
#: (``--frontend``: another process) it may have.
TWO_PROCESS_WIRE_FIELDS = ("sched_to_runner_wire_bytes_per_step",
                           "runner_to_sched_wire_bytes_per_step", "s2r_wire_bytes_total",
                           "r2s_wire_bytes_total", "zmtp_handshake_bytes",
                           "control_plane_wire_bytes_per_step",
                           "tp_s2r_wire_bytes_all_ranks_per_step",
                           "pp_s2r_wire_bytes_all_stages_per_step")

#: Fields of a ``summary.json`` case (or workload labels) that hold a whole number or
#: null: the report turns them into ``int`` (``At 4 running requests``, ``tp=2``), and
#: the counts of steps and requests the rows of ``steps.csv``, ``floor.csv`` and
#: ``requests.csv`` are checked against (``num_steps`` 1.5 read as 1 counted step in
#: one warning and as 1.5 in another).
_WHOLE_CASE_FIELDS = _NULLABLE_INT_COLUMNS + ("num_steps", "num_warmup_steps",
                                              "num_total_steps", "loop_steps",
                                              "num_requests")

#: The largest value a known numeric field may hold: above it, a value is an edit, not
#: a measurement (1e15 ns is 11 days; 1e15 bytes or tokens/s is beyond any machine),
#: and figures and sums of it overflow.
MAX_CASE_VALUE = 1e15

#: The statuses ``RunFolder`` writes (``status`` of ``summary.json``).
RUN_STATUSES = ("complete", "incomplete", "failed")


#: Fields every ``summary.json`` case names its place in the tables by: without them
#: a case's figures would join no row, or another's.
_IDENTITY_FIELDS = ("policy", "workload")

#: Fields of a ``summary.json`` case that, when there and not null, hold a text: the
#: tables and comparisons group the cases by them (the schedule digest: which cases'
#: token streams and floors compare; the token digest: which cases' outputs agree).
_TEXT_CASE_FIELDS = ("scenario", "transport", "model", "schedule_digest", "token_digest")


def known_codecs() -> tuple[str, ...]:
    """The ``codec`` values a case can have: the two-process codecs
    (``wire.codecs.CODECS``) and the single-process baseline's (``NO_CODEC``)."""
    from ipc_bench.wire.codecs import CODECS

    return (*CODECS, NO_CODEC)


def known_policies() -> tuple[str, ...]:
    """The ``policy`` values a case can have (``engine.config.POLICIES``)."""
    from ipc_bench.engine.config import POLICIES

    return tuple(POLICIES)


def known_arms() -> tuple[str, ...]:
    """The ``arm`` values a case can have, A/A copies (the name with ``'``) aside: the
    policies (``engine.config.POLICIES``), a ``--pp`` case's direct path
    (``engine.pipeline.DIRECT``), async scheduling (``harness.spec.ASYNC_ARM``) and
    the ``overhead`` scenario's instrumentations (``harness.spec.INSTRUMENTATIONS``).
    ``is_known_arm`` takes each of them with ``'`` too."""
    from ipc_bench.engine.config import POLICIES
    from ipc_bench.engine.pipeline import DIRECT
    from ipc_bench.harness.spec import ASYNC_ARM, INSTRUMENTATIONS

    return (*POLICIES, DIRECT, ASYNC_ARM, *INSTRUMENTATIONS)


def is_known_arm(arm: Any) -> bool:
    """Whether ``arm`` (a case's ``arm`` field) is one of ``known_arms``, or an A/A copy
    of one (``send'``)."""
    if not isinstance(arm, str):
        return False
    arms = known_arms()
    return arm in arms or (arm.endswith("'") and arm[:-1] in arms)


def _identity_problem(case: dict[str, Any], run_scenario: Any = None) -> str | None:
    """What is wrong with the fields a ``summary.json`` case is told apart by, in words
    after ``case 'ID' has`` (``no policy``, ``arm "banana", not one of ...``): a
    missing or empty ``policy`` or ``workload`` (``_IDENTITY_FIELDS``), or one that is
    not a text, or a ``policy`` not one of ``known_policies``; an ``arm`` (optional: an older case is its policy) that is not
    ``is_known_arm``; a ``codec`` that is not one of ``known_codecs``; a ``complete``
    that is not true or false; a ``scenario``, ``transport``, ``model``,
    ``schedule_digest`` or ``token_digest`` (``_TEXT_CASE_FIELDS``) there that is not a text, or a ``scenario`` other than the
    run's (``run_scenario``, its metadata's, when that is a text). ``None`` when all are
    as a run writes them."""
    for key in _IDENTITY_FIELDS:
        value = case.get(key)
        if value is None or value == "":
            return f"no {key}"
        if not isinstance(value, str):
            return f"{key} {_shown(value)}, not a text"
    for key in _TEXT_CASE_FIELDS:
        value = case.get(key)
        if value is not None and not isinstance(value, str):
            return f"{key} {_shown(value)}, not a text"
    scenario = case.get("scenario")
    if isinstance(run_scenario, str) and scenario is not None and scenario != run_scenario:
        return (f"scenario {_shown(scenario)}, but the run's (metadata.scenario) is "
                f"{_shown(run_scenario)}")
    policy = case["policy"]
    if policy not in known_policies():
        return f"policy {_shown(policy)}, not one of {', '.join(known_policies())}"
    arm = case.get("arm")
    if arm not in (None, "") and not is_known_arm(arm):
        return (f"arm {_shown(arm)}, not one of {', '.join(known_arms())} "
                "(or an A/A copy of one, with ')")
    codec = case.get("codec")
    if codec not in known_codecs():
        return (f"codec {_shown(codec)}, not one of {', '.join(known_codecs())}"
                if "codec" in case else "no codec")
    done = case.get("complete")
    if not isinstance(done, bool):
        return (f"complete {_shown(done)}, not true or false" if "complete" in case
                else "no complete")
    return None


def _case_id_parts(case_id: Any) -> tuple[str, str, int, str] | None:
    """The arm, codec, repetition and workload labels a run's ``case_id`` names
    (``harness.spec.CaseSpec.case_id``: ``LABELS/ARM/CODEC#REPETITION``, ``LABELS`` in
    the scenario's order, ``num_running=4``), or ``None`` for an id not of that form
    with a known arm and codec (one a test or an older tool wrote: nothing to check it
    against)."""
    if not isinstance(case_id, str):
        return None
    parts = case_id.rsplit("/", 2)
    if len(parts) != 3:
        return None
    codec, sep, repetition = parts[2].rpartition("#")
    if not sep or codec not in known_codecs() or not is_known_arm(parts[1]) \
            or not repetition.isdecimal():
        return None
    return parts[1], codec, int(repetition), parts[0]


def _arm_problem(case: dict[str, Any]) -> str | None:
    """Where a case's ``workload``, ``arm``, ``codec`` or ``repetition`` is not the one
    its ``case_id`` names (``_case_id_parts``: a hand edit that swapped two cases'
    labels and left their ids, or typed another workload into an id; the workload's
    labels in any order, as ``workload`` has them sorted), or its ``arm`` is a
    policy's (or its A/A copy's) other than its ``policy``, in words after ``case 'ID'
    has`` (``arm "cached", but its case_id names arm send``, ``workload
    "num_running=4", but its case_id names workload num_running=8``); ``None``
    otherwise."""
    arm = case.get("arm") or None
    policy = case["policy"]
    if isinstance(arm, str) and arm.rstrip("'") in known_policies() \
            and arm.rstrip("'") != policy:
        return f"arm {_shown(arm)}, but policy {_shown(policy)}"
    named = _case_id_parts(case.get("case_id"))
    if named is None:
        return None
    workload = case.get("workload")
    if isinstance(workload, str) and sorted(workload.split(",")) != sorted(
            named[3].split(",")):
        return f"workload {_shown(workload)}, but its case_id names workload {named[3]}"
    for key, value, want in (("arm", arm, named[0]), ("codec", case.get("codec"), named[1]),
                             ("repetition", case.get("repetition"), named[2])):
        if value is not None and value != want:
            return f"{key} {_shown(value)}, but its case_id names {key} {want}"
    return None


def _value_problem(key: str, value: Any, whole: bool = False) -> str | None:
    """Why ``value`` of the known numeric field ``key`` is not one, in words
    (``output_tokens_per_s "fast", not a number``); ``None`` when it is a number from
    0 to ``MAX_CASE_VALUE`` (a whole one when ``whole``), or null."""
    if value is None:
        return None
    shown = f"{key} {_shown(value)}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{shown}, not a number"
    if value != value or value in (float("inf"), float("-inf")):
        return f"{shown}, not a finite number"
    if whole and value != int(value):
        return f"{shown}, not a whole number"
    if value < 0:
        return f"{shown}, a negative number"
    if value > MAX_CASE_VALUE:
        return f"{shown}, more than {MAX_CASE_VALUE:.0e}"
    return None


def _percent_problem(case: dict[str, Any]) -> str | None:
    """Why the ``_PERCENT_CASE_FIELDS`` of ``case`` (each already a number from 0 to
    ``MAX_CASE_VALUE``, or null) are not shares of the machine's CPU time, in words
    after ``case 'ID' has`` (``machine_busy_pct 150, more than 100 (a percentage of the
    machine's CPU time)``): one above ``MAX_PERCENT``, or the two summed above it (busy
    and steal are disjoint parts of it; within 1e-9, as the two are divided apart).
    ``None`` when they are."""
    said = []
    for key in _PERCENT_CASE_FIELDS:
        value = case.get(key)
        if value is not None and value > MAX_PERCENT:
            return (f"{key} {_shown(value)}, more than {MAX_PERCENT:g} (a percentage of "
                    "the machine's CPU time)")
        if value is not None:
            said.append(f"{key} {_shown(value)}")
    if len(said) == 2 and sum(case[k] for k in _PERCENT_CASE_FIELDS) > MAX_PERCENT + 1e-9:
        return (f"{' and '.join(said)}, more than {MAX_PERCENT:g} together (parts of the "
                "machine's CPU time)")
    return None


def _inproc_problem(case: dict[str, Any]) -> str | None:
    """Why ``case``, a single-process one (``transport`` ``harness.spec.INPROC``), has
    a field it cannot have, in words after ``case 'ID' has``: the first of
    ``TWO_PROCESS_WIRE_FIELDS`` there and not null (``sched_to_runner_wire_bytes_per_step
    403.36, but its transport is "inproc" (one process: no scheduler <-> runner
    wire)``). ``None`` for another case, or when it has none."""
    from ipc_bench.harness.spec import INPROC

    if case.get("transport") != INPROC:
        return None
    for key in TWO_PROCESS_WIRE_FIELDS:
        if case.get(key) is not None:
            return (f"{key} {_shown(case[key])}, but its transport is {_shown(INPROC)} "
                    "(one process: no scheduler <-> runner wire)")
    return None


def _token_bytes_problem(case: dict[str, Any]) -> str | None:
    """Why ``case``'s token-id byte figures (``stats.TOKEN_BYTES_KEYS``: what send's
    new_token_ids add per counted step) cannot be its, in words after ``case 'ID'
    has``: one above 0 in a case whose policy is not send (no other policy's
    SchedulerOutput carries them: ``summary.attach_token_bytes`` writes 0), or the two
    together more than its whole SchedulerOutput (``sched_to_runner_payload_bytes_per_
    step``, over the same counted steps), of which they are a part. ``None`` when they
    can be, or are absent."""
    from ipc_bench.analysis.stats import TOKEN_BYTES_KEYS

    values = {k: _figure(case, k) for k in TOKEN_BYTES_KEYS}
    if case.get("policy") != SEND:
        for key, value in values.items():
            if value:
                return (f"{key} {value:,.6g}, but its policy is {_shown(case.get('policy'))} "
                        "(only send's SchedulerOutput carries new_token_ids)")
        return None
    payload = _figure(case, "sched_to_runner_payload_bytes_per_step")
    total = sum(v for v in values.values() if v is not None)
    if payload is not None and total > payload * (1 + 1e-9) + 1e-9:
        return (" and ".join(f"{k} {v:,.6g}" for k, v in values.items() if v is not None)
                + f", more than its whole SchedulerOutput, "
                f"sched_to_runner_payload_bytes_per_step {payload:,.6g}")
    return None


#: Fields a ``summary.json`` case and its entry in ``metadata.cases`` (the settings it
#: ran with, ``harness.environment``) both record, which a run writes equal.
SETTINGS_FIELDS = ("policy", "arm", "codec", "repetition", "trace_speedup",
                   "async_scheduling")


def _settings_problem(case: dict[str, Any], setting: Any) -> str | None:
    """Where a case (one ``_case_problem`` passed) records one of ``SETTINGS_FIELDS``
    other than its entry in ``metadata.cases`` (``setting``) says it ran with (a hand
    edit of one of the two, e.g. a timed replay's ``trace_speedup`` typed over): ``case
    'ID' has trace_speedup 1000, but metadata.cases records 100``. ``None`` where they
    agree, or where either lacks the field. The model too (``_model_problem``)."""
    if not isinstance(setting, dict):
        return None
    for key in SETTINGS_FIELDS:
        mine, ran = case.get(key), setting.get(key)
        if mine is None or ran is None or (key == "arm" and "" in (mine, ran)):
            continue  # an arm left empty is its policy's
        same = (_as_number(mine) == _as_number(ran)
                if key in ("repetition", "trace_speedup") else mine == ran)
        if not same:
            return (f"case {str(case['case_id'])!r} has {key} {_shown(mine)}, but "
                    f"metadata.cases records {_shown(ran)}")
    return _model_problem(case, setting)


def _model_problem(case: dict[str, Any], setting: dict[str, Any]) -> str | None:
    """Where a case names another model than its entry in ``metadata.cases``
    (``setting``; its ``model.name``) records: its ``model`` (a text) is not that name,
    or its ``emulated`` mark (``analysis.summary._model_marks``: true in an emulated
    case, absent in any other) says the emulated model ran where the name is another,
    or not where it is ``emulated`` (``case 'ID' has emulated true, but metadata.cases
    records model.name "null"``): its step times would be read as another model's.
    ``None`` where they agree, or where either lacks the field."""
    model = setting.get("model")
    ran = model.get("name") if isinstance(model, dict) else None
    if not isinstance(ran, str):
        return None
    name, mine = f"case {str(case['case_id'])!r}", case.get("model")
    if isinstance(mine, str) and mine != ran:
        return (f"{name} has model {_shown(mine)}, but metadata.cases records "
                f"model.name {_shown(ran)}")
    mark = case.get("emulated")
    if mark is not None and bool(mark) != (ran == "emulated"):
        return (f"{name} has emulated {_shown(mark)}, but metadata.cases records "
                f"model.name {_shown(ran)}")
    return None


def _case_id_problem(case: dict) -> str | None:
    """What is wrong with the ``case_id`` of a ``summary.json`` case (an object), in
    the words that follow ``has``: ``no case_id`` (missing), ``case_id null, not a
    text``, ``an empty case_id``, ``case_id 5, not a text``; ``None`` for a text that
    is not empty."""
    if "case_id" not in case:
        return "no case_id"
    name = case["case_id"]
    if name == "":
        return "an empty case_id"
    if not isinstance(name, str):
        return f"case_id {_shown(name)}, not a text"
    return None


def _entries_without_id(summary: dict[str, Any]) -> dict[str, tuple[int, str]]:
    """The case ids (``WORKLOAD/ARM/CODEC#REPETITION``, as a run names a case) of the
    entries of ``summary``'s ``cases`` whose ``case_id`` is missing, null, empty or not
    a text (``_case_id_problem``), from their ``workload``, arm (else policy), codec
    and repetition, each with its index and that problem: the rows of such a case are
    listed, though under no id, and are said so (``_unlisted_rows``). A workload of
    several labels is matched in any order (``_listed_without_id``)."""
    out: dict[str, tuple[int, str]] = {}
    for i, case in enumerate(summary.get("cases") or []):
        problem = _case_id_problem(case) if isinstance(case, dict) else None
        if problem is None:
            continue
        arm, codec = case.get("arm") or case.get("policy"), case.get("codec")
        workload, rep = case.get("workload"), case.get("repetition", 0)
        if not all(isinstance(v, str) and v for v in (arm, codec, workload)) \
                or isinstance(rep, bool) or not isinstance(rep, int):
            continue
        out.setdefault(f"{workload}/{arm}/{codec}#{rep}", (i, problem))
    return out


def _listed_without_id(case: str, entries: dict[str, tuple[int, str]]
                       ) -> tuple[int, str] | None:
    """The entry of ``entries`` (``_entries_without_id``) that ``case``, a case id of
    the CSV files' rows, names: the same arm, codec and repetition, and the same
    workload labels in any order; ``None`` where none does."""
    head, _, rep = case.rpartition("#")
    labels, _, rest = head.partition("/")
    for key, found in entries.items():
        k_head, _, k_rep = key.rpartition("#")
        k_labels, _, k_rest = k_head.partition("/")
        if (k_rep, k_rest) == (rep, rest) and \
                sorted(k_labels.split(",")) == sorted(labels.split(",")):
            return found
    return None


def _case_problem(case: Any, index: int, labels: dict[str, Any] | None = None,
                  run_scenario: Any = None) -> str | None:
    """Why the ``index``-th entry of ``summary.json``'s ``cases`` cannot be loaded, in
    words (``case 'ID' has output_tokens_per_s "fast", not a number``): it is not an
    object; its ``case_id`` is missing, empty or not a text; its identity or ``complete``
    is not one a run writes (``_identity_problem``, against the run's scenario
    ``run_scenario``); one of its known numeric fields (``_NUMERIC_CASE_FIELDS``, the
    metrics) holds something other than a number from 0 to ``MAX_CASE_VALUE`` or null;
    its percentages of the machine's CPU time are not shares of it (``_percent_problem``);
    it is a single-process case with a field only two processes have
    (``_inproc_problem``); its token-id bytes are not send's or pass its whole
    SchedulerOutput (``_token_bytes_problem``); one of
    ``_WHOLE_CASE_FIELDS``, there or in its workload ``labels`` (the metadata's),
    is not a whole number; its workload, arm, codec or repetition is not the one its
    ``case_id`` names (``_arm_problem``); or another of its fields is NaN or infinite. ``None``
    when it can."""
    from ipc_bench.analysis.metrics import METRICS

    if not isinstance(case, dict):
        return f"cases[{index}] is {_shown(case)}, not an object"
    problem = _case_id_problem(case)
    if problem:
        return f"cases[{index}] has {problem}"
    name = f"case {case['case_id']!r}"
    problem = _identity_problem(case, run_scenario)
    if problem:
        return f"{name} has {problem}"
    for key in (*_NUMERIC_CASE_FIELDS, *METRICS):
        problem = _value_problem(key, case.get(key))
        if problem:
            return f"{name} has {problem}"
    problem = _percent_problem(case) or _inproc_problem(case) or _token_bytes_problem(case)
    if problem:
        return f"{name} has {problem}"
    for key in _WHOLE_CASE_FIELDS:
        problem = _value_problem(key, case.get(key), whole=True)
        if problem:
            return f"{name} has {problem}"
    problem = _arm_problem(case)
    if problem:
        return f"{name} has {problem}"
    for key, value in (labels or {}).items():
        problem = (_value_problem(key, value, whole=True) if key in _WHOLE_CASE_FIELDS
                   else None)
        if problem:
            return f"{name} has label {problem}"
    for key, value in case.items():  # warnings: read by _warnings_lines
        if key not in _LIST_CASE_FIELDS and isinstance(value, float) and (
                value != value or abs(value) == float("inf")):
            return f"{name} has {key} {_shown(value)}, not a finite number"
    return None


#: Fields of ``summary.json``'s ``metadata`` the report reads, with the type each must
#: have (``check_shapes``): anything else is dropped with a warning.
_METADATA_SHAPES = {"git": dict, "gpu": dict, "virtualization": dict, "packages": dict,
                    "options": dict, "trace": dict, "remote_runners": dict, "gpus": list,
                    "notes": list, "cases": list}

#: Fields of ``_METADATA_SHAPES``' objects that the report reads as texts (or null):
#: a field of another type is dropped with a warning (``check_shapes``).
_METADATA_OBJECT_TEXTS = {"git": ("commit", "branch", "diff_sha256"),
                          "trace": ("path", "resolved_path", "sha256")}


def _is_whole(value: Any) -> bool:
    """A whole number (JSON's ``true`` and ``false`` are not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    """A number (JSON's ``true`` and ``false`` are not)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _text_or_null(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _is_scalar(value: Any) -> bool:
    """A text, a number or true or false: what the Environment table shows as
    ``key=value`` (an object or a list would show as Python writes it)."""
    return isinstance(value, (str, int, float))


#: Tests (with what a value must be, in words) that ``check_shapes`` puts values
#: inside the metadata and ``metadata.cases`` to.
_TEXT = (lambda v: isinstance(v, str), "a text")
_TEXT_OR_NULL = (_text_or_null, "a text or null")
_WHOLE = (_is_whole, "a whole number")
_WHOLE_OR_NULL = (lambda v: v is None or _is_whole(v), "a whole number or null")
_NUMBER = (_is_number, "a number")
_NUMBER_OR_NULL = (lambda v: v is None or _is_number(v), "a number or null")
_FLAG = (lambda v: isinstance(v, bool), "true or false")
_SCALAR = (_is_scalar, "a text, a number, true or false")

#: Fields of ``summary.json``'s ``metadata`` that the report shows as texts (the
#: title's and the headings' scenario, the Environment table's machine and software):
#: a value of another type, null included (a run never writes one), is dropped with a
#: warning (``check_shapes``).
_METADATA_TEXTS = ("scenario", "hostname", "python_version", "python_implementation",
                   "executable", "platform", "kernel", "cpu_model", "cpu_governor",
                   "arm_order")

#: The values of ``_METADATA_SHAPES``' objects the Environment table shows as
#: ``key=value`` (``collect_metadata``: ``_gpu_info``, ``_virtualization``,
#: ``_packages``), each with the test it must pass; ``None``: a field not named here,
#: tested as the ``None`` entry says. A value that fails is dropped with a warning.
_METADATA_OBJECT_VALUES = {
    "gpu": {"name": _TEXT, "count": _WHOLE, "cuda": _TEXT_OR_NULL, "capability": _TEXT,
            "driver": _TEXT, None: _SCALAR},
    "virtualization": {"product_name": _TEXT, "sys_vendor": _TEXT,
                       "cpu_hypervisor_flag": _FLAG, "systemd_detect_virt_vm": _TEXT,
                       "systemd_detect_virt_container": _TEXT, None: _SCALAR},
    "packages": {None: _TEXT},
}


def _key_path(prefix: str, key: str) -> str:
    """``prefix.key`` where ``key`` is a plain name (letters, digits, ``_.+-``), else
    ``prefix[KEY]``, ``KEY`` quoted as a warning line quotes a value (``_shown``)."""
    if re.fullmatch(r"[A-Za-z0-9_.+-]+", key):
        return f"{prefix}.{key}" if prefix else key
    return f"{prefix}[{_shown(key)}]"


def _numbers(value: Any) -> bool:
    """A list of numbers from 0 to ``MAX_CASE_VALUE`` (a whole number beyond a float's
    range would not go into one)."""
    return isinstance(value, list) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= MAX_CASE_VALUE
        for v in value)


def _seed(value: Any) -> bool:
    """A seed as ``--seed`` / ``--order-seed`` take it: a whole number in [0, 2**63)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63


#: Fields of ``summary.json``'s ``metadata`` the report reads as values, with the test
#: each must pass and what it must be (``check_shapes``): anything else is dropped
#: with a warning (``collect_metadata`` writes them).
_METADATA_VALUES = {
    "load_avg": (_numbers, "a list of load averages"),
    "cpu_count": (lambda v: isinstance(v, int) and not isinstance(v, bool)
                  and 1 <= v <= MAX_CASE_VALUE, "a whole number of CPUs"),
    "command_line": (lambda v: isinstance(v, list) and all(isinstance(a, str) for a in v),
                     "a list of texts"),
    # the folder the command line runs in: the report's ``cd`` before it
    "cwd": (lambda v: isinstance(v, str) and v.startswith("/") and "\0" not in v,
            "an absolute folder path"),
    "ci_method": (lambda v: v in METHODS, f"one of {', '.join(METHODS)}"),
    "seed": (_seed, "a whole number from 0 to 2**63 - 1"),
    "order_seed": (_seed, "a whole number from 0 to 2**63 - 1"),
    "start_time_utc": (lambda v: iso_time(v) is not None, "an ISO 8601 time"),
    "end_time_utc": (lambda v: iso_time(v) is not None, "an ISO 8601 time"),
    "aa": (lambda v: isinstance(v, bool), "true or false"),
    "cpu_affinity": (lambda v: isinstance(v, list) and all(_is_whole(c) for c in v),
                     "a list of whole numbers (CPU ids)"),
    "cpu_freq_mhz": (_is_number, "a number (MHz)"),
    "niceness": (_is_whole, "a whole number"),
    "remote_runners": (remote_runners_shape, REMOTE_RUNNERS_WORDS),
}

#: ``_METADATA_VALUES`` fields whose absence says something (no ``remote_runners``: the
#: run spawned its runners): one that fails its test is left out as null, which says
#: nothing (``environment._runners``: neither way).
_METADATA_NULL_WHEN_LEFT_OUT = ("remote_runners",)

#: Fields of ``summary.json``'s ``metadata`` that a run always writes as an object:
#: null is as wrong there as another type (``check_shapes``).
_METADATA_NEVER_NULL = ("options",)

#: ``_METADATA_VALUES`` fields that a run never writes as null, so that null is a hand
#: edit and fails their test as another value does (``start_time_utc``: written as the
#: run starts, ``environment.collect_metadata``; ``end_time_utc``: absent until the run
#: ends, ``run_folder.RunWriter.finish``); the others' null says "not known".
_METADATA_VALUES_NEVER_NULL = ("start_time_utc", "end_time_utc")

#: Top-level fields of ``summary.json`` that name a case when set, a text
#: (``check_shapes``): a run that failed in it, or was running it.
_CASE_NAMING_FIELDS = ("running_case", "failed_case")


def _label_values(value: Any) -> bool:
    """Workload labels as a run writes them: an object of texts and numbers (the tables
    group cases by its values)."""
    return isinstance(value, dict) and all(
        v is None or isinstance(v, (str, int, float)) for v in value.values())


#: Fields of a ``metadata.cases`` entry (what a case ran with, ``cli.execute``) that
#: the loader and the report read, with the test each must pass where it is there and
#: what it must be (``_setting_problem``): the objects, the texts the cases are told
#: apart by, ``cpu_affinity`` (as ``--cpu-affinity`` reads it, each process's set).
_SETTING_SHAPES = {
    "labels": (_label_values, "an object of texts and numbers"),
    "scheduler": (lambda v: isinstance(v, dict), "an object"),
    "model": (lambda v: isinstance(v, dict), "an object"),
    **{key: (lambda v: isinstance(v, str), "a text")
       for key in ("policy", "arm", "codec", "transport", "count")},
    "cpu_affinity": (lambda v: v is None or (isinstance(v, list) and all(
        isinstance(s, str) for s in v)), "null or a list of texts"),
}

#: Fields of a ``metadata.cases`` entry's ``model`` that the report reads as texts
#: (or null): the model's name and the token-id histogram's path and digest.
_MODEL_TEXTS = ("name", "token_ids", "token_ids_sha256")

#: The values of a ``metadata.cases`` entry (``cli.execute``: ``CaseSpec``'s fields,
#: its ``SchedulerConfig`` and ``ModelConfig``) that the Configuration table shows as
#: ``key=value``, each with the test it must pass where it is there: a value that fails
#: is dropped with a warning (``_setting_value_lines``), the rest of the entry kept.
#: ``"scheduler"`` and ``"model"``: their objects' fields (``None``: one not named).
_SETTING_VALUES = {
    **dict.fromkeys(("warmup_steps", "repetition", "input_oracle_interval"), _WHOLE),
    **dict.fromkeys(("max_steps", "counted_steps", "tp", "pp"), _WHOLE_OR_NULL),
    **dict.fromkeys(("peer_timeout_s", "startup_timeout_s"), _NUMBER),
    "trace_speedup": _NUMBER_OR_NULL,
    **dict.fromkeys(("stream", "async_scheduling", "frontend", "floor", "no_floor"), _FLAG),
    "scheduler": {None: _WHOLE},
    "model": {**dict.fromkeys(("vocab_size", "hash_window", "seed", "num_threads"), _WHOLE),
              **dict.fromkeys(("step_time_ms", "spec_acceptance"), _NUMBER),
              **dict.fromkeys(("step_wait", "preset", "device", "attention", "roofline"),
                              _TEXT),
              "cuda_graphs": _FLAG,
              "cuda_graph_sizes": (lambda v: isinstance(v, list) and all(map(_is_whole, v)),
                                   "a list of whole numbers"),
              None: (lambda v: _is_scalar(v) or v is None, "a text, a number, true, false "
                     "or null")},
}


def _value_lines(obj: dict[str, Any], tests: dict, where: str, path: Path,
                 after: str = "") -> list[str]:
    """Drop from ``obj`` (in place) each value that fails its test in ``tests`` (a
    field's own, else the ``None`` entry's; a field with neither is not tested), and
    one warning line for each: ``PATH: WHERE.KEY is VALUE, not WORDS (AFTER; left
    out)`` (``metadata.gpu.count is "two", not a whole number (left out)``)."""
    out = []
    for key in list(obj):
        test = tests.get(key, tests.get(None))
        if isinstance(test, tuple) and isinstance(key, str) and not test[0](obj[key]):
            out.append(f"{path}: {_key_path(where, key)} is {_shown(obj.pop(key))}, not "
                       f"{test[1]} ({after}left out)")
    return out


def _setting_value_lines(entry: dict[str, Any], index: int, path: Path) -> list[str]:
    """Drop from ``entry`` (the ``index``-th of ``metadata.cases``, one the report
    keeps) each ``_SETTING_VALUES`` value of the wrong type, its ``scheduler``'s and
    its ``model``'s included; one warning line each (``metadata.cases[0].counted_steps
    is "many", not a whole number or null (case 'ID'; left out)``)."""
    where, after = f"metadata.cases[{index}]", f"case {entry['case_id']!r}; "
    out = _value_lines(entry, _SETTING_VALUES, where, path, after)
    for key in ("scheduler", "model"):
        if isinstance(entry.get(key), dict):
            out += _value_lines(entry[key], _SETTING_VALUES[key], f"{where}.{key}", path,
                                after)
    return out


def _setting_problem(entry: dict[str, Any]) -> str | None:
    """What is wrong with a ``metadata.cases`` entry (an object with a text ``case_id``)
    that the report would read, in words after ``has``: a ``_SETTING_SHAPES`` field
    that fails its test (``labels "x", not an object of texts and numbers``), or a
    ``_MODEL_TEXTS`` field of its model that is not a text or null
    (``model.name 5, not a text``); ``None`` when there is none."""
    for key, (test, words) in _SETTING_SHAPES.items():
        if key in entry and not test(entry[key]):
            return f"{key} {_shown(entry[key])}, not {words}"
    model = entry.get("model") or {}
    for key in _MODEL_TEXTS:
        if not _text_or_null(model.get(key)):
            return f"model.{key} {_shown(model[key])}, not a text"
    return None


#: ``summary.json``'s top-level lists (``check_shapes``) and what each entry must be.
_LIST_SHAPES = {"problems": str, "comparisons": dict, "byte_model": dict}

#: Fields every ``comparisons`` entry has (``stats.compare_cases``), with their types.
_COMPARISON_SHAPES = {"baseline": str, "treatment": str, "workload": str, "codec": str,
                      "method": str, "n_pairs": int, "metrics": dict}


def _shape_problem(value: Any, kind: type) -> bool:
    return not isinstance(value, kind) or (kind is int and isinstance(value, bool))


def check_shapes(summary: dict[str, Any], path: Path) -> list[str]:
    """Drop from ``summary`` (in place) what a hand edit left in a shape the report
    cannot read: ``metadata`` that is not an object (or is missing: said, read as
    empty), a field of it of another shape (``_metadata_lines``), a ``running_case``
    or ``failed_case`` that is not a text (``_CASE_NAMING_FIELDS``), a
    ``_LIST_SHAPES`` list that is not a list or its entries of another type, a
    ``comparisons`` entry without ``_COMPARISON_SHAPES``' fields or whose ``metrics``
    are not objects. Returns one warning line per thing dropped."""
    out = []
    if "metadata" not in summary:
        out.append(f"{path}: metadata is missing (read as empty: no environment, options "
                   "or labels)")
    elif not isinstance(summary["metadata"], dict):
        out.append(f"{path}: metadata is {_shown(summary['metadata'])}, not an "
                   "object (left out)")
        summary["metadata"] = {}
    out += _metadata_lines(summary.get("metadata") or {}, path)
    for key in _CASE_NAMING_FIELDS:
        if not _text_or_null(summary.get(key)):
            out.append(f"{path}: {key} is {_shown(summary.pop(key))}, not a case id (a "
                       "text) (left out)")
    for key, kind in _LIST_SHAPES.items():
        value = summary.get(key)
        if value is None:
            continue
        if not isinstance(value, list):
            out.append(f"{path}: {key} is {_shown(summary.pop(key))}, not a list "
                       "(left out)")
            continue
        kept = []
        for i, entry in enumerate(value):
            bad = _shape_problem(entry, kind)
            if not bad and key == "comparisons":
                bad = (any(_shape_problem(entry.get(f), t)
                           for f, t in _COMPARISON_SHAPES.items())
                       or any(not isinstance(m, dict) for m in entry["metrics"].values()))
            if bad:
                out.append(f"{path}: {key}[{i}] is {_shown(entry)}, not "
                           f"{'a text' if kind is str else 'a recorded comparison' if key == 'comparisons' else 'an object'} "
                           "(left out)")
            else:
                kept.append(entry)
        summary[key] = kept
    return out


def _metadata_lines(meta: dict[str, Any], path: Path) -> list[str]:
    """Drop from a summary's ``metadata`` (in place) a ``_METADATA_SHAPES`` field of
    another type, a text of one of another type (``_METADATA_OBJECT_TEXTS``), an entry
    of ``gpus`` that is not an object, a ``_METADATA_TEXTS`` field that is not a text,
    an entry of ``notes`` that is not a text, a value of ``gpu``, ``virtualization`` or
    ``packages`` of the wrong type (``_METADATA_OBJECT_VALUES``), a
    ``_METADATA_VALUES`` field that fails its test (null passes, but for
    ``_METADATA_VALUES_NEVER_NULL``: ``metadata.start_time_utc is null, not an ISO 8601
    time (left out)``), an ``end_time_utc`` before the ``start_time_utc``, a null
    ``_METADATA_NEVER_NULL`` field, and a ``metadata.cases`` entry that is not an
    object with a text ``case_id``, has a field of the wrong kind or repeats an
    earlier one's ``case_id``, and a setting of a kept entry of the wrong type
    (``_kept_settings``). A dropped ``_METADATA_NULL_WHEN_LEFT_OUT`` field
    (``remote_runners``) is kept as null; an object ``remote_runners`` is named by its
    first bad part (``environment.remote_runners_problem``: ``metadata.remote_runners.
    ports.ctls is -1, not a port number (1-65535) (metadata.remote_runners left
    out)``). Returns one warning line per thing dropped (``check_shapes``)."""
    out = []
    for key, kind in _METADATA_SHAPES.items():
        if key in meta and meta[key] is not None and _shape_problem(meta[key], kind):
            out.append(f"{path}: metadata.{key} is {_shown(meta.pop(key))}, not "
                       f"{'an object' if kind is dict else 'a list'} (left out)")
            if key in _METADATA_NULL_WHEN_LEFT_OUT:
                meta[key] = None
    if isinstance(meta.get("gpus"), list):  # nvidia-smi's, one object per GPU
        gpus = meta["gpus"]
        out += [f"{path}: metadata.gpus[{i}] is {_shown(gpu)}, not an object (left out)"
                for i, gpu in enumerate(gpus) if not isinstance(gpu, dict)]
        meta["gpus"] = [gpu for gpu in gpus if isinstance(gpu, dict)]
    for key, fields in _METADATA_OBJECT_TEXTS.items():
        for name in fields if isinstance(meta.get(key), dict) else ():
            if not _text_or_null(meta[key].get(name)):
                out.append(f"{path}: metadata.{key}.{name} is "
                           f"{_shown(meta[key].pop(name))}, not a text (left out)")
    for key in _METADATA_TEXTS:
        if key in meta and not isinstance(meta[key], str):
            out.append(f"{path}: metadata.{key} is {_shown(meta.pop(key))}, not a text "
                       "(left out)")
    if isinstance(meta.get("notes"), list):  # the `note:` lines the run printed
        notes = meta["notes"]
        out += [f"{path}: metadata.notes[{i}] is {_shown(note)}, not a text (left out)"
                for i, note in enumerate(notes) if not isinstance(note, str)]
        meta["notes"] = [note for note in notes if isinstance(note, str)]
    for key, tests in _METADATA_OBJECT_VALUES.items():
        if isinstance(meta.get(key), dict):
            out += _value_lines(meta[key], tests, f"metadata.{key}", path)
    for key, (test, words) in _METADATA_VALUES.items():
        if key in meta and (meta[key] is not None or key in _METADATA_VALUES_NEVER_NULL) \
                and not test(meta[key]):
            part = remote_runners_problem(meta[key], _shown) if key == "remote_runners" else ""
            out.append(f"{path}: metadata.{key}.{part} (metadata.{key} left out)" if part
                       else f"{path}: metadata.{key} is {_shown(meta.pop(key))}, not "
                       f"{words} (left out)")
            meta.pop(key, None)
            if key in _METADATA_NULL_WHEN_LEFT_OUT:
                meta[key] = None
    start, end = iso_time(meta.get("start_time_utc")), iso_time(meta.get("end_time_utc"))
    if start is not None and end is not None and end < start:
        out.append(f"{path}: metadata.end_time_utc is {_shown(meta.pop('end_time_utc'))}, "
                   f"before its start_time_utc {_shown(meta['start_time_utc'])} (left out)")
    for key in _METADATA_NEVER_NULL:
        if key in meta and meta[key] is None:
            out.append(f"{path}: metadata.{key} is null, not an object (left out)")
            del meta[key]
    if isinstance(meta.get("cases"), list):
        meta["cases"], lines = _kept_settings(meta["cases"], path)
        out += lines
    return out


def _kept_settings(entries: list, path: Path) -> tuple[list[dict], list[str]]:
    """The entries of ``metadata.cases`` (``entries``) that the report can read, and one
    line per entry left out: one that is not an object with a text ``case_id``, one
    with a field of the wrong kind (``_setting_problem``: ``metadata.cases[0] (case
    'ID') has labels "x", not an object of texts and numbers``), or one whose
    ``case_id`` an earlier entry has (``case 'ID' is listed again as
    metadata.cases[3]``). The case's own results (``cases``) are loaded all the same:
    only what it ran with goes unshown. A kept entry's settings of the wrong type are
    dropped from it, one line each (``_setting_value_lines``)."""
    kept, lines, seen = [], [], set()
    for i, c in enumerate(entries):
        if not (isinstance(c, dict) and isinstance(c.get("case_id"), str)):
            lines.append(f"{path}: metadata.cases[{i}] is {_shown(c)}, not a case with a "
                         "case_id (left out)")
            continue
        problem = _setting_problem(c)
        if problem is not None:
            lines.append(f"{path}: metadata.cases[{i}] (case {c['case_id']!r}) has "
                         f"{problem} (left out)")
        elif c["case_id"] in seen:
            lines.append(f"{path}: case {c['case_id']!r} is listed again as "
                         f"metadata.cases[{i}] (left out)")
        else:
            lines += _setting_value_lines(c, i, path)
            kept.append(c)
            seen.add(c["case_id"])
    return kept, lines


def _valid_cases(summary: dict[str, Any], path: Path) -> tuple[list[dict], list[str]]:
    """The entries of ``summary``'s ``cases`` that can be loaded (``_case_problem``,
    given each case's workload labels from the metadata) and one line per entry left
    out, naming it and the field. Left out too: an entry whose ``case_id`` an earlier
    one has, or whose arm (else policy), workload, codec and repetition an earlier one
    has (the tables would average the two; the first is kept), and a case whose
    ``complete`` is false in a run whose ``status`` is ``complete`` (a run is complete
    only when every case finished) or true beside an ``error`` (the harness records an
    error only for a case that did not finish); said too, a case of the metadata's grid that
    ``cases`` lacks in such a run (removed by hand). Raises ``ResultsError`` (one line) when ``cases``
    is not a list, when it is missing or empty under ``status`` ``complete``, or when
    it had entries and none can be loaded."""
    status = summary.get("status")
    if "cases" not in summary and status == "complete":
        raise ResultsError(f"{path}: cases is missing, but status is complete")
    cases = summary.get("cases", [])
    if not isinstance(cases, list):
        raise ResultsError(f"{path}: cases is {_shown(cases)}, not a list")
    if not cases and status == "complete":
        raise ResultsError(f"{path}: cases is empty, but status is complete")
    meta = summary.get("metadata")
    settings = {c.get("case_id"): c
                for c in ((meta.get("cases") if isinstance(meta, dict) else None) or [])
                if isinstance(c, dict) and isinstance(c.get("case_id"), str)}
    labels = {k: c.get("labels") for k, c in settings.items()
              if isinstance(c.get("labels"), dict)}

    def problem(case: Any, i: int) -> str | None:
        name = case.get("case_id") if isinstance(case, dict) else None
        own = labels.get(name) if isinstance(name, str) else None
        return (_case_problem(case, i, own if isinstance(own, dict) else None,
                              meta.get("scenario") if isinstance(meta, dict) else None)
                or _settings_problem(case, settings.get(name) if isinstance(name, str)
                                     else None))

    valid, lines, whys, seen = [], [], [], set()
    places: dict[tuple, str] = {}  # (arm, workload, codec, repetition) -> case_id
    for i, case in enumerate(cases):
        why = problem(case, i)
        if why is None:
            name = case.get("case_id")
            shown = f"case {name!r}" if isinstance(name, str) else f"cases[{i}]"
            place = (case.get("arm") or case["policy"], case["workload"], case["codec"],
                     case.get("repetition") or 0)
            if isinstance(name, str) and name in seen:
                why = f"case {name!r} is listed again as cases[{i}]"
            elif place in places:
                why = (f"{shown} has the arm, workload, codec and repetition of case "
                       f"{places[place]!r} ({', '.join(str(p) for p in place)})")
            elif case["complete"] is False and status == "complete":
                why = f"{shown} has complete false, but status is complete"
            elif case["complete"] is True and case.get("error"):
                why = (f"{shown} has complete true, but an error {_shown(case['error'])}: "
                       "a case that ended so did not finish")
            else:
                places[place] = name
        if why is None:
            valid.append(case)
            seen.add(case.get("case_id"))
        else:
            lines.append(f"{path}: {why} (left out)")
            whys.append(why)
    if cases and not valid:
        more = f" (and {len(cases) - 1} more)" if len(cases) > 1 else ""
        raise ResultsError(f"no case can be loaded: {path}: {whys[0]}{more}")
    if status == "complete" and len(cases) < len(settings):  # entries removed
        listed = {c.get("case_id") for c in cases if isinstance(c, dict)}
        lacking = [repr(name) for name in settings if name not in listed]
        if lacking:  # one line: a run set complete by hand can lack many
            which = (f"case {lacking[0]} of metadata.cases has" if len(lacking) == 1 else
                     f"cases {', '.join(lacking[:-1])} and {lacking[-1]} of "
                     "metadata.cases have")
            lines.append(f"{path}: {which} no entry in cases, but status is complete "
                         "(every planned case finished)")
    return valid, lines


def _no_floor_lines(valid: list[dict], path: Path) -> list[str]:
    """Drop (in place) from the cases ``valid`` a ``no_floor`` that is there but is not
    true or false (a hand edit: ``"yes"``, ``1``, ``null``), with one line per case
    naming it and the value: the tables then infer it from the case, as for a summary
    written before it was recorded (``report.tables.ran_with_no_floor``)."""
    out = []
    for case in valid:
        if "no_floor" in case and not isinstance(case["no_floor"], bool):
            out.append(f"{path}: case {case['case_id']!r} has no_floor "
                       f"{_shown(case.pop('no_floor'))}, not true or false (read as "
                       "absent: inferred from the case's settings)")
    return out


#: Case fields that repeat a workload label (``_label_field_lines``): read as absent
#: where they are there but the case's workload has no such label.
_LABEL_FIELDS = ("num_running", "trace")


def _preset_lines(valid: list[dict], metadata: Any, path: Path) -> list[str]:
    """Set (in place) the ``emulated_preset`` of each emulated case of ``valid`` to the
    preset its entry in ``metadata.cases`` records (``model.preset``, what its runner
    was started with; ``model.name`` ``emulated``) where a hand edit made the two
    differ, or made it not a text, with one line per case naming both and the one used
    (``RUN/summary.json: case 'ID' has emulated_preset "llama-3.1-8b", but
    metadata.cases records model.preset "llama-3.2-1b" (read as "llama-3.2-1b", the
    metadata's)``): the report names the preset in its EMULATED note and marks, and
    would name a model the run did not emulate. A case without the field (a run
    written before it was recorded) or an entry without the preset is left as it is.
    The GPU's name and figures (``emulated_gpu``, ``emulated_memory_bandwidth_bytes_
    per_s``...) are recorded in the case alone; ``emulated_step_ns_per_step``, the
    roofline's mean time, is checked against ``steps.csv`` (``STEP_MEANS``)."""
    settings = metadata.get("cases") if isinstance(metadata, dict) else None
    presets = {c["case_id"]: c["model"]["preset"] for c in settings or []
               if isinstance(c, dict) and isinstance(c.get("case_id"), str)
               and isinstance(c.get("model"), dict) and c["model"].get("name") == "emulated"
               and isinstance(c["model"].get("preset"), str)}
    out = []
    for case in valid:
        want = presets.get(case["case_id"])
        have = case.get("emulated_preset")
        if want is None or have is None or have == want:
            continue
        case["emulated_preset"] = want
        out.append(f"{path}: case {case['case_id']!r} has emulated_preset {_shown(have)}, "
                   f"but metadata.cases records model.preset {_shown(want)} (read as "
                   f"{_shown(want)}, the metadata's)")
    return out


def _label_field_lines(valid: list[dict], metadata: Any, path: Path) -> list[str]:
    """Set (in place) each field of the cases ``valid`` that repeats one of its workload
    labels (``num_running``, ``trace``: ``metadata.cases[].labels``, which its
    ``workload`` names as ``k=v``) to the label's value where a hand edit made them
    differ, or left the field null or out, with one line per field naming the case,
    both values and the one used (``RUN/summary.json: case 'ID' has num_running 5, but
    its workload is num_running=4 (read as 4, its workload's)``; ``has num_running
    null``, ``has no num_running``): the tables go by the workload, the findings'
    words by the field, and the two would name different batches (or the findings
    would lose the workload's). A ``trace`` that is there (not null) in a case whose
    workload has no trace label (a steady case: ``num_running=4``) is dropped the same
    way, read as absent, with one line (``case 'ID' has trace 5, but its workload is
    num_running=4, without a trace (read as absent, its workload's)``): a text there
    would make the case a trace replay (``summary.is_replay``), anything else a column
    of mixed kinds; so is a ``num_running`` that is there in a case whose workload has
    no num_running label (a replay: ``trace=azure-conv:300``; ``case 'ID' has
    num_running 5, but its workload is trace=azure-conv:300, without a num_running
    (read as absent, its workload's)``): the findings would name a batch the replay
    never asked for."""
    settings = metadata.get("cases") if isinstance(metadata, dict) else None
    labels = {c["case_id"]: c["labels"] for c in settings or []
              if isinstance(c, dict) and isinstance(c.get("labels"), dict)
              and isinstance(c.get("case_id"), str)}
    out = []
    for case in valid:
        workload = str(case["workload"]).split(",")
        for key, want in (labels.get(case["case_id"]) or {}).items():
            have = case.get(key)
            if have == want or f"{key}={want}" not in workload:
                continue
            shown = f"no {key}" if key not in case else f"{key} {_shown(have)}"
            case[key] = want
            out.append(f"{path}: case {case['case_id']!r} has {shown}, but its workload "
                       f"is {case['workload']} (read as {_shown(want)}, its workload's)")
        for key in _LABEL_FIELDS:
            if case.get(key) is not None \
                    and not any(part.startswith(key + "=") for part in workload):
                out.append(f"{path}: case {case['case_id']!r} has {key} "
                           f"{_shown(case.pop(key))}, but its workload is "
                           f"{case['workload']}, without a {key} (read as absent, its "
                           "workload's)")
    return out


#: Case fields that hold a list, read (and their wrong values warned about) by
#: ``_warnings_lines``, not left out with their case as a NaN elsewhere is.
_LIST_CASE_FIELDS = ("warnings",)

#: Entries of a case's ``warnings`` named, at most, in the line about those that are
#: not texts (``_warnings_lines``).
WARNINGS_SHOWN = 3


def _warnings_lines(valid: list[dict], path: Path) -> list[str]:
    """Read, in place, the ``warnings`` of the cases ``valid`` as the report can show
    them (a list of texts, ``analysis.summary.noise_warnings``'), with one line per
    case whose ``warnings`` were not: one that is not a list (``5``, ``"x"``) is read as
    absent (``RUN/summary.json: case 'ID' has warnings 5, not a list (read as absent:
    no warnings recorded)``); entries of a list that are not texts are left out of it,
    its texts kept (``case 'ID' has warnings[0] 1 and warnings[1] null, not texts (left
    out of its warnings)``; the first ``WARNINGS_SHOWN`` named, then how many more).
    A NaN or infinite one is not a list either (``has warnings NaN, not a list``).
    A ``warnings`` null is as absent, as a run writes none."""
    out = []
    for case in valid:
        value = case.get("warnings")
        name = f"{path}: case {case['case_id']!r} has warnings"
        if value is None:
            continue
        if not isinstance(value, list):
            out.append(f"{name} {_shown(case.pop('warnings'))}, not a list (read as "
                       "absent: no warnings recorded)")
            continue
        bad = [(i, w) for i, w in enumerate(value) if not isinstance(w, str)]
        if not bad:
            continue
        case["warnings"] = [w for w in value if isinstance(w, str)]
        named = [f"warnings[{i}] {_shown(w)}" for i, w in bad[:WARNINGS_SHOWN]]
        if len(bad) > WARNINGS_SHOWN:
            named.append(f"{len(bad) - WARNINGS_SHOWN:,} more")
        listed = named[0] if len(named) == 1 else \
            f"{', '.join(named[:-1])} and {named[-1]}"
        out.append(f"{path}: case {case['case_id']!r} has {listed}, "
                   f"{'not a text' if len(bad) == 1 else 'not texts'} (left out of its "
                   "warnings)")
    return out


def _family_gap_lines(summary: dict[str, Any], valid: list[dict], path: Path) -> list[str]:
    """One line per timed metric that a recorded send/cached comparison of ``summary``
    tested (its ``family``, Holm-adjusted together) while a case it compares, of
    ``valid``, has no value of it (a hand edit took it out): the pair table shows no
    pair of it where a case lacks it, while the findings' verdicts and their legend
    count it among the metrics tested. ``RUN/summary.json: case 'ID' has no
    sched_cpu_ns_per_step, a timed metric its recorded comparison of send and cached
    tested (counted in the Holm adjustment its verdicts give): the pair table leaves
    out the pairs without it`` (``cases 'A', 'B' and 3 more have no ..., a timed
    metric their recorded comparisons ...``: the first ``WARNINGS_SHOWN`` named)."""
    from ipc_bench.analysis.stats import COMPARED_GROUP, arms_by_repetition
    from ipc_bench.engine.config import CACHED

    groups = arms_by_repetition([c for c in valid if c.get("policy")], COMPARED_GROUP)
    missing: dict[str, list[str]] = {}
    for comp in summary.get("comparisons") or []:
        if (comp.get("baseline"), comp.get("treatment")) != (SEND, CACHED):
            continue
        arms = groups.get(tuple(comp.get(k) for k in COMPARED_GROUP), {})
        reps = comp.get("repetitions")
        for arm in (SEND, CACHED):
            for rep, case in arms.get(arm, {}).items():
                if isinstance(reps, list) and rep not in reps:
                    continue
                for key in comp.get("family") or []:
                    if isinstance(key, str) and case.get(key) is None:
                        missing.setdefault(key, []).append(case["case_id"])
    out = []
    for key, ids in missing.items():
        named = [repr(i) for i in dict.fromkeys(ids)]
        more = len(named) - WARNINGS_SHOWN
        if more > 0:
            named = named[:WARNINGS_SHOWN] + [f"{more:,} more"]
        listed = named[0] if len(named) == 1 else f"{', '.join(named[:-1])} and {named[-1]}"
        one = len(named) == 1
        its, comparison = ("its", "comparison") if one else ("their", "comparisons")
        out.append(f"{path}: {'case' if one else 'cases'} {listed} "
                   f"{'has' if one else 'have'} no {key}, a timed metric {its} recorded "
                   f"{comparison} of {SEND} and {CACHED} tested (counted in the Holm "
                   f"adjustment {its} verdicts give): the pair table leaves out the "
                   "pairs without it")
    return out


def _left_out_ids(summary: dict[str, Any], valid: list[dict]) -> set[str]:
    """The ``case_id`` of every case of ``summary`` left out (``_valid_cases``) that
    names one and that no loaded case shares."""
    kept = {c.get("case_id") for c in valid}
    return {c["case_id"] for c in summary.get("cases") or []
            if isinstance(c, dict) and isinstance(c.get("case_id"), str)
            and c["case_id"] not in kept}


def _has_itl(cases: list[dict[str, Any]]) -> bool:
    """Whether a case of ``cases`` (summary entries) records ITL figures
    (``itl_ms_*``: a timed replay's or a soak's), whose gaps ``itl.csv`` holds."""
    return any(k.startswith("itl_ms_") and v is not None and v == v
               for c in cases for k, v in c.items())


def _read_itl(pd, path: Path, valid: list[dict[str, Any]], notes: list[str]):
    """``itl.csv`` (``path``) as ``_read_csv`` reads it, notes in ``notes``. It is
    written with every run since ITL was measured: a run folder without it, or with
    it empty (not even its header), is complete only where no case of ``valid``
    (summary entries) records ITL figures (an older run's, then an empty frame);
    otherwise ``ResultsError``: ``RUN: not a complete run folder (no itl.csv)``,
    ``(itl.csv is empty)``."""
    columns = ("case_id", "index", "itl_s")
    if not _has_itl(valid):
        return (_read_csv(pd, path, columns, notes) if path.is_file()
                else pd.DataFrame(columns=list(columns)))
    _refuse_emptied(path)
    return _read_csv(pd, path, columns, notes)


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


def _has_floor(cases: list[dict[str, Any]]) -> bool:
    """Whether a case of ``cases`` (summary entries) records floor figures
    (``FLOOR_FIGURES``: ``floor_output_tokens_per_s``...), whose rows ``floor.csv``
    holds; none does in a run made with ``--no-floor``."""
    return any(isinstance(c.get(figure), numbers.Real) for c in cases
               for figure, _ in FLOOR_FIGURES)


def _read_floor(pd, path: Path, valid: list[dict[str, Any]], notes: list[str]):
    """``floor.csv`` (``path``) as ``_read_csv`` reads it, notes in ``notes``;
    ``ResultsError`` (``_refuse_emptied``: ``RUN: not a complete run folder (floor.csv
    is empty)``) when it is of 0 bytes while a case of ``valid`` (summary entries) has
    floor figures (``_has_floor``), as ``steps.csv`` is (``_read_rows``): its rows are
    lost, and the figures would stand with nothing behind them. Without floor figures
    (``--no-floor``) an empty one is only said in ``notes``."""
    if _has_floor(valid):
        _refuse_emptied(path)
    return _read_csv(pd, path, ("case_id", "i", "floor_step_ns"), notes)


#: ``Results.frontend``'s columns: each case's identity (``CASE_KEYS``), then
#: ``frontend.csv``'s (``run_folder.FRONTEND_CSV``).
FRONTEND_COLUMNS = CASE_KEYS + FRONTEND_CSV[1:]
#: Columns of ``frontend.csv`` that hold a count, a time or a size: never negative.
_NONNEGATIVE_FRONTEND_COLUMNS = tuple(c for c in FRONTEND_CSV
                                      if c not in _STR_COLUMNS and c not in _BOOL_COLUMNS)


def _read_frontend(pd, path: Path, notes: list[str]):
    """``frontend.csv`` (``path``: only a ``--frontend`` run writes it) as ``_read_csv``
    reads it, notes in ``notes``; an empty frame of ``FRONTEND_CSV``'s columns where
    the run has none. A file written before its ``counted`` column is read without it
    (``_checked_frontend`` takes it from steps.csv), not refused as a header that lacks
    a flag column."""
    if not os.path.lexists(path):
        return pd.DataFrame(columns=list(FRONTEND_CSV))
    names = _header_names(path)[0] if path.is_file() else None
    columns = FRONTEND_CSV if names is None or "counted" in names else tuple(
        c for c in FRONTEND_CSV if c != "counted")
    return _read_csv(pd, path, columns, notes)


def _steps_counted(pd, steps, ids, seqs):
    """steps.csv's ``counted`` (0 or 1) of each (``ids``, ``seqs``) step, 0 where
    ``steps`` has no row of it (an int64 array)."""
    import numpy as np

    if not len(steps) or not {"case_id", "seq", "counted"} <= set(steps.columns):
        return np.zeros(len(ids), dtype=np.int64)
    flags = pd.Series(pd.to_numeric(steps["counted"]).fillna(0).astype("int64").to_numpy(),
                      index=pd.MultiIndex.from_arrays([steps["case_id"].astype(str),
                                                       pd.to_numeric(steps["seq"])]))
    flags = flags[~flags.index.duplicated()]
    key = pd.MultiIndex.from_arrays([ids, pd.to_numeric(seqs)])
    return flags.reindex(key).fillna(0).astype("int64").to_numpy()


def _checked_frontend(pd, frontend, steps, cases, run_dir: Path, said: list[str]):
    """``frontend`` (``frontend.csv``'s rows) as ``Results.frontend`` has it, one line
    per case and kind of row left out or changed added to ``said``: only the rows of the cases kept
    (``cases``: a case left out, or not listed, has none); without a row of a ``seq``
    its case has in an earlier row (the first kept), one whose count, time or size is
    negative, infinite or more than ``MAX_CASE_VALUE`` (``_impossible_values``), or
    whose ``counted`` is not 0 or 1; ``counted`` as steps.csv's row of the same case
    and ``seq`` has it (0 where it has none, as the writer writes it): taken from there
    where the file lacks the column (a run before it), said where a row's differs (an
    edit: steps.csv's flags are those the figures are computed over, so theirs is
    kept); each case's identity columns (``CASE_KEYS``) from ``cases``, in
    ``FRONTEND_COLUMNS``' order. ``run_dir``: the run folder, whose ``frontend.csv``
    the lines name."""
    path = run_dir / "frontend.csv"
    kept = set(cases["case_id"].astype(str)) if "case_id" in cases else set()
    if len(frontend) and "case_id" in frontend:
        frontend = frontend[frontend["case_id"].astype(str).isin(kept)]
    frontend = frontend.reset_index(drop=True)
    if not len(frontend):
        return pd.DataFrame(columns=list(FRONTEND_COLUMNS))
    ids = frontend["case_id"].astype(str)
    lines: dict[str, list[str]] = {case: [] for case in dict.fromkeys(ids)}
    bad = _impossible_rows(frontend, "seq", _NONNEGATIVE_FRONTEND_COLUMNS, ("counted",),
                           path, lines)
    frontend, ids = frontend[~bad].reset_index(drop=True), ids[~bad].reset_index(drop=True)
    theirs = _steps_counted(pd, steps, ids, frontend["seq"])
    if "counted" in frontend:
        differ = pd.Series(frontend["counted"].to_numpy() != theirs)
        for case in dict.fromkeys(ids[differ]):
            first = frontend["seq"][differ & (ids == case)]
            lines[case].append(
                f"{path}: case {case!r} has {_rows(len(first))} whose counted is not "
                f"steps.csv's for the same seq ({_number(first.iloc[0])} first; steps.csv's "
                "taken)")
    frontend["counted"] = theirs
    known = cases.drop_duplicates("case_id")
    known.index = known["case_id"].astype(str)
    for key in CASE_KEYS[1:]:
        frontend[key] = ids.map(known[key]) if key in known else None
    said += [line for case_lines in lines.values() for line in case_lines]
    return frontend[list(FRONTEND_COLUMNS)]


#: How a ``FRONTEND_MEANS`` check names what ``_framed`` derives from a row's
#: ``frontend_payload_bytes``: its bytes on the wire (``wire.transport.zmtp_frame_bytes``,
#: 0 where nothing was sent), and whether it sent a message (1 or 0).
FRAMED_PAYLOAD = "ZMTP-framed frontend_payload_bytes"
PAYLOAD_SENT = "frontend_payload_bytes > 0"

#: ``frontend.csv`` columns whose mean over a case's counted rows ``summary.json``
#: reports as a frontend figure (``analysis.frontend.frontend_figures``; the decode
#: time 0 at a step that sent nothing): the two must agree (``_frontend_disagreeing``).
FRONTEND_MEANS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("frontend_payload_bytes",), "frontend_bytes_per_step"),
    (("frontend_build_ns",), "frontend_build_ns_per_step"),
    (("frontend_encode_ns",), "frontend_encode_ns_per_step"),
    (("frontend_send_ns",), "frontend_send_ns_per_step"),
    (("frontend_decode_ns",), "frontend_decode_ns_per_step"),
    # derived from frontend_payload_bytes as the summary derives them (``_framed``)
    ((FRAMED_PAYLOAD,), "frontend_wire_bytes_per_step"),
    ((PAYLOAD_SENT,), "frontend_messages_per_step"),
)


def _frontend_disagreeing(frontend, cases, run_dir: Path, said: list[str]) -> set[str]:
    """The case ids of ``cases`` (summary entries) whose frontend figures are not the
    ``FRONTEND_MEANS`` means of their counted ``frontend`` rows (``Results.frontend``'s,
    ``counted`` steps.csv's; a case with every counted row there, ``num_steps``, as
    ``_step_problem`` checks steps.csv's), one line each added to ``said`` naming
    ``run_dir``'s ``frontend.csv`` (``_column_problem``'s words). Raises
    ``ResultsError`` when that leaves no case (``_refuse_none_left``)."""
    import numpy as np

    if not len(frontend) or "case_id" not in cases:
        return set()
    ids = frontend["case_id"].astype(str)
    checks = [(cols, figure, "mean", np.mean) for cols, figure in FRONTEND_MEANS]
    bad, lines = set(), []
    for i in range(len(cases)):
        case = cases.iloc[i]
        rows = frontend[ids == str(case["case_id"])].reset_index(drop=True)
        counted = rows["counted"].astype(bool).to_numpy()
        if not counted.any() or _figure(case, "num_steps") != counted.sum():
            continue
        sent = rows["frontend_payload_bytes"].to_numpy(dtype=float) > 0
        rows["frontend_decode_ns"] = rows["frontend_decode_ns"].where(sent, 0)
        _framed(rows)
        why = _column_problem(case, rows, counted, checks, run_dir / "frontend.csv")
        if why:
            lines.append(why)
            bad.add(str(case["case_id"]))
    said += lines
    _refuse_none_left(cases, bad, lines)
    return bad


def _framed(rows) -> None:
    """Adds to ``rows`` (a case's ``frontend.csv`` rows) the ``FRAMED_PAYLOAD`` and
    ``PAYLOAD_SENT`` columns ``analysis.frontend.frontend_figures`` averages into
    ``frontend_wire_bytes_per_step`` and ``frontend_messages_per_step``; blank where
    ``frontend_payload_bytes`` is."""
    from ipc_bench.wire.transport import zmtp_frame_bytes

    payload = rows["frontend_payload_bytes"].astype(float)
    rows[FRAMED_PAYLOAD] = payload.map(
        lambda b: b if b != b else float(zmtp_frame_bytes(int(b))) if b > 0 else 0.0)
    rows[PAYLOAD_SENT] = (payload > 0).astype(float).where(payload.notna())


def _short_frontend(frontend, cases) -> str:
    """``_short_rows``' words on ``frontend`` (``frontend.csv``'s rows) when a case of
    ``cases`` (summary entries) with frontend figures (``frontend`` true: its record
    was whole, a row a step) has fewer than its ``num_total_steps``, else ''; a case
    whose writes failed (``_unwritten``) is not counted."""
    if not {"frontend", "num_total_steps"} <= set(cases.columns):
        return ""
    gone = _unwritten(cases, "frontend.csv")
    want = {str(c): int(n) for c, n, on in zip(cases["case_id"], cases["num_total_steps"],
                                              cases["frontend"])
            if on is True and n == n and str(c) not in gone}
    return _short_rows(frontend, want, "summary.json counts")


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
    return _read_csv(pd, path, columns, notes)


def _impossible_latencies(requests, itl, cases, run_dir: Path):
    """``requests`` and ``itl`` (``requests.csv`` and ``itl.csv``'s rows) without the
    rows no run writes (``_impossible_requests``; the gaps of the requests it left out,
    ``_gaps_of_requests_left_out``; ``_impossible_itl``, whose gaps are checked against
    the requests kept), the lines naming them, and those gaps of the requests left out
    (``itl.csv``'s rows as written). ``cases`` (summary entries) holds only cases whose
    ``wall_s`` agrees with their steps (``_disagreeing_cases``): a time is checked
    against it."""
    read = requests
    requests, lines = _impossible_requests(requests, cases, run_dir / "requests.csv")
    kept, gone = _gaps_of_requests_left_out(itl, read, requests, run_dir / "itl.csv")
    orphans = itl.iloc[0:0] if len(kept) == len(itl) else itl[~itl.index.isin(kept.index)]
    itl, more = _impossible_itl(kept.reset_index(drop=True), requests, cases,
                                run_dir / "itl.csv")
    return requests, itl, lines + gone + more, orphans


def _request_keys(df):
    """``(case_id, index)`` of each row of ``df`` (``requests.csv``'s or ``itl.csv``'s),
    as a Series of tuples (``index`` NaN where it is not a number)."""
    import pandas as pd

    index = pd.to_numeric(df["index"], errors="coerce")
    return pd.Series(list(zip(df["case_id"].astype(str), index)), index=df.index,
                     dtype=object)


def _gaps_of_requests_left_out(itl, read, kept, path: Path):
    """``itl`` (``itl.csv``'s rows; the rows kept keep their index) without the gaps of
    a request whose ``requests.csv`` row was left out as impossible (in ``read``, the rows as written, and not in
    ``kept``, those ``_impossible_requests`` kept): its latencies are no run's, so
    neither are its gaps, which would otherwise feed the ITL figures and the latency
    CDF. One line per case counts them and names their requests, in ``_said_rows``'
    form: ``PATH: case 'ID' has gaps of a request left out of requests.csv as
    impossible in 7 rows (request 2; left out)``."""
    if len(itl) == 0 or len(read) == len(kept) or not {"case_id", "index"} <= set(
            itl.columns) or not {"case_id", "index"} <= set(read.columns):
        return itl, []
    gone = set(_request_keys(read)) - set(_request_keys(kept))
    wrong = _request_keys(itl).isin(gone)
    if not wrong.any():
        return itl, []
    lines: dict[str, list[str]] = {}
    _said_rows(itl["case_id"].astype(str), itl["itl_s"], wrong,
               "gaps of a request left out of requests.csv as impossible", None, path,
               lines, itl["index"])
    return itl[~wrong], [line for case_lines in lines.values() for line in case_lines]


#: The request latencies of ``summary.json`` (``analysis.summary.latency_summary``:
#: ``NAME_ms_mean`` / ``_p50`` / ``_p90`` / ``_p99``), each with the file and column
#: whose rows it is recomputed from (``_latency_problem``).
LATENCY_SOURCES = {"ttft": ("requests.csv", "ttft_s"), "tpot": ("requests.csv", "tpot_s"),
                   "itl": ("itl.csv", "itl_s"), "e2e": ("requests.csv", "e2e_s")}


#: The ``summary.json`` figures of each request latency (``LATENCY_SOURCES``).
LATENCY_STATS = ("mean", "p50", "p90", "p99")


def _withheld_latencies(read, kept, cases, run_dir: Path, surplus: frozenset = frozenset()):
    """The request latencies (``LATENCY_SOURCES`` names) of each case of ``cases``
    (summary entries) whose figures are over rows left out as impossible, and one line
    per case and file. ``read`` and ``kept`` (file name -> rows: ``requests.csv``,
    ``itl.csv``) hold the rows as written and those kept. Such figures count a row no
    run writes (or were computed before a hand edit made it so): neither they nor
    figures recomputed without the row (over other requests than the summary's) are
    the case's, so they are withheld (``cases``' cells set to NaN: no table, finding
    or figure quotes them) while the case and its other rows load: ``RUN/requests.csv:
    case 'ID' has ttft_ms_*, tpot_ms_* and e2e_ms_* withheld (not quoted):
    summary.json's are over its 6 rows, 1 of them impossible (left out); its other 5
    rows are loaded``; a case of ``surplus``, whose rows were left out as more than
    its summary counts, says so (``its N rows here left out, the case having more rows
    than summary.json counts (said above)``). Returns
    (case id -> names, lines)."""
    withheld: dict[str, set[str]] = {}
    lines: list[str] = []
    if "case_id" not in cases:
        return withheld, lines
    for source in dict.fromkeys(src for src, _ in LATENCY_SOURCES.values()):
        names = [n for n, (src, _) in LATENCY_SOURCES.items() if src == source]
        if "case_id" not in read[source] or "case_id" not in kept[source]:
            continue
        have = read[source]["case_id"].astype(str).value_counts()
        left = kept[source]["case_id"].astype(str).value_counts()
        for i in range(len(cases)):
            case = cases.iloc[i]
            case_id = str(case["case_id"])
            n, k = int(have.get(case_id, 0)), int(left.get(case_id, 0))
            quoted = [name for name in names if any(
                _figure(case, f"{name}_ms_{q}") is not None for q in LATENCY_STATS)]
            if k == n or not quoted:
                continue
            withheld.setdefault(case_id, set()).update(quoted)
            figures = [f"{name}_ms_*" for name in quoted]
            why = (f"its {_rows(n)} here left out, the case having more rows than "
                   "summary.json counts (said above)"
                   if case_id in surplus else f"summary.json's are over its {_rows(n)}, "
                   f"{n - k:,} of them impossible (left out)")
            said = (figures[0] if len(figures) == 1
                    else ", ".join(figures[:-1]) + f" and {figures[-1]}")
            lines.append(f"{run_dir / source}: case {case_id!r} has {said} withheld (not "
                         f"quoted): {why}; {_others_loaded(k)}")
    return withheld, lines


def _others_loaded(n: int) -> str:
    """``its other 5 rows are loaded``, ``its other row is loaded``, ``none of its rows
    is loaded``."""
    return ("none of its rows is loaded" if n == 0 else "its other row is loaded"
            if n == 1 else f"its other {n:,} rows are loaded")


def _withhold(cases, withheld: dict[str, set[str]]):
    """``cases`` with the figures of the latencies ``withheld`` (case id -> names,
    ``_withheld_latencies``) set to NaN."""
    if not withheld:
        return cases
    cases = cases.copy()
    ids = cases["case_id"].astype(str)
    for case_id, names in withheld.items():
        for name in names:
            for q in LATENCY_STATS:
                if f"{name}_ms_{q}" in cases:
                    cases[f"{name}_ms_{q}"] = cases[f"{name}_ms_{q}"].astype(float)
                    cases.loc[ids == case_id, f"{name}_ms_{q}"] = float("nan")
    return cases


def _apart(got: float, want: float) -> tuple[str, str]:
    """``got`` and ``want`` as a line shows them (``,.6g``), with as many more digits
    as tell them apart where 6 do not (up to 17)."""
    for digits in range(6, 18):
        shown = f"{got:,.{digits}g}", f"{want:,.{digits}g}"
        if shown[0] != shown[1]:
            return shown
    return shown


def _has_all_rows(case, rows, gaps) -> bool:
    """Whether ``rows`` and ``gaps`` (a case's ``requests.csv`` and ``itl.csv`` rows, those
    loaded) hold every row the case wrote: its ``num_requests`` requests and, for each,
    ``n - 1`` gaps (n its ``num_output_tokens``; ``_short_itl``)."""
    n = _figure(case, "num_requests")
    if n is None or len(rows) != n or "num_output_tokens" not in rows:
        return False
    tokens = rows["num_output_tokens"].astype(float)
    return len(gaps) == int((tokens - 1).clip(lower=0).where(tokens == tokens, 0).sum())


def _latency_problem(case, rows, gaps, run_dir: Path,
                     withheld: frozenset = frozenset()) -> str | None:
    """The line of a case (a ``cases`` row) whose request latency figures
    (``LATENCY_SOURCES``: ``ttft_ms_p50``...) are not those its ``requests.csv`` and
    ``itl.csv`` rows (``rows``, ``gaps``: the case's, every one it wrote,
    ``_has_all_rows``) give, recomputed by ``analysis.summary.latency_summary``, the
    function that wrote them (the same definitions and percentiles; the gaps pooled in
    file order, as it pools them request after request), relative
    ``STEP_MEAN_TOLERANCE``; naming the first such figure, its file, both values (ms).
    ``None`` when they agree, or the case has no such figure or not all of its rows.
    Then the counts they are over (``ttft_count``...: ``_count_problem``). The
    latencies ``withheld`` (names: ``_withheld_latencies``) are not checked."""
    from ipc_bench.analysis.summary import latency_counts, latency_summary

    names = [name for name in LATENCY_SOURCES if name not in withheld]
    figures = [f"{name}_ms_{stat}" for name in names for stat in LATENCY_STATS]
    if all(_figure(case, f) is None for f in figures + [f"{n}_count" for n in names]) \
            or not _has_all_rows(case, rows, gaps) or "itl_s" not in gaps:
        return None
    columns = [c for _, c in LATENCY_SOURCES.values() if c != "itl_s"]
    if not set(columns) <= set(rows.columns):
        return None
    records = [{c: (None if v != v else float(v)) for c, v in zip(columns, values)}
               for values in rows[columns].itertuples(index=False)]
    records.append({"itl_s": gaps["itl_s"].astype(float).tolist()})
    got_all = latency_summary(records)
    for figure in figures:
        want, got = _figure(case, figure), got_all.get(figure)
        if want is None or (got is not None and not _differ(got, want)):
            continue
        name, _, stat = figure.partition("_ms_")
        source, column = LATENCY_SOURCES[name]
        values = gaps["itl_s"] if column == "itl_s" else rows[column]
        article = "an" if column[0] in "ie" else "a"
        over = f"its {_rows(int(values.notna().sum()))} with {article} {column}"
        head = f"{run_dir / source}: case {str(case['case_id'])!r} has"
        if got is None:
            return f"{head} no {column} in {_rows(len(values))}, but summary.json has " \
                   f"{figure} {want:,.6g} (left out)"
        got_s, want_s = _apart(got, want)
        return (f"{head} a {stat} {column} of {got_s} ms over {over}, but summary.json "
                f"has {figure} {want_s} (left out)")
    return _count_problem(case, rows, gaps, run_dir, latency_counts(records), names)


def _count_problem(case, rows, gaps, run_dir: Path, got_all: dict[str, int],
                   names: list[str]) -> str | None:
    """The line of a case (a ``cases`` row, with every ``requests.csv`` and ``itl.csv``
    row it wrote: ``rows``, ``gaps``) whose count of the values a latency of ``names``
    (``LATENCY_SOURCES``) is over (``ttft_count``, ``tpot_count``, ``itl_count``,
    ``e2e_count``: what the report's p99 notes quote) is not the count ``got_all``
    (``analysis.summary.latency_counts`` over those rows, the function that wrote
    them: rows with a ``ttft_s``, ``tpot_s`` or ``e2e_s``; ``itl.csv`` rows) gives,
    a latency no row has counting 0: ``RUN/requests.csv: case 'ID' has 30 rows with a
    ttft_s, but summary.json has ttft_count 7 (left out)``, ``... has no ttft_s in 30
    rows, but ...``. ``None`` when each count the case has agrees."""
    for name in names:
        figure = f"{name}_count"
        want, got = _figure(case, figure), got_all.get(figure, 0)
        if want is None or want == got:
            continue
        source, column = LATENCY_SOURCES[name]
        values = gaps["itl_s"] if column == "itl_s" else rows[column]
        article = "an" if column[0] in "ie" else "a"
        has = (f"no {column} in {_rows(len(values))}" if got == 0
               else f"{_rows(got)} with {article} {column}")
        said = f"{int(want):,}" if want.is_integer() else f"{want:,.6g}"
        return (f"{run_dir / source}: case {str(case['case_id'])!r} has {has}, but "
                f"summary.json has {figure} {said} (left out)")
    return None


def _disagreeing_latencies(requests, itl, cases, run_dir: Path,
                           withheld: dict[str, set[str]]) -> tuple[set[str], list[str]]:
    """The case ids of ``cases`` (summary entries) whose request latency figures are not
    those their rows of ``requests`` and ``itl`` give (``_latency_problem``), and one
    line per such case. The rows are those the files hold, impossible ones included
    (``_impossible_latencies`` warns of those apart): a case is checked whenever they
    are every row its summary counts (``_has_all_rows``), its figures over rows left
    out as impossible excepted (``withheld``: case id -> latency names; the ITL
    figures of a case whose only ``itl.csv`` rows left out are the gaps of requests left
    out are checked, those gaps being as written), so that an impossible ``tpot_s``
    does not leave a typed-over TTFT, nor ITL, unchecked."""
    if "case_id" not in cases or "case_id" not in requests or "case_id" not in itl:
        return set(), []
    req_ids, gap_ids = requests["case_id"].astype(str), itl["case_id"].astype(str)
    bad, lines = set(), []
    for i in range(len(cases)):
        case = cases.iloc[i]
        case_id = str(case["case_id"])
        why = _latency_problem(case, requests[req_ids == case_id],
                               itl[gap_ids == case_id], run_dir,
                               frozenset(withheld.get(case_id, ())))
        if why is not None:
            bad.add(case_id)
            lines.append(why)
    return bad, lines


def _checked_latencies(pd, read: dict[str, Any], requests, itl, orphans, cases,
                       run_dir: Path, surplus: frozenset = frozenset()):
    """``cases`` with the latency figures over rows left out withheld
    (``_withheld_latencies``: over ``read``, the ``requests`` and ``itl`` rows as
    written, against ``requests`` and ``itl``, those kept), the ids of the cases whose
    other figures are not their rows' (``_disagreeing_latencies``, on the rows as
    written; so are the ITL figures of a case whose only gaps left out are ``orphans``,
    those of the requests left out: their values are as written), and the lines of
    each (withheld, disagreeing); ``surplus``: the cases whose rows were left out as
    more than their summary counts (``_surplus_latency_rows``), said so."""
    written = {"requests.csv": read["requests"], "itl.csv": read["itl"]}
    withheld, lines = _withheld_latencies(
        written, {"requests.csv": requests, "itl.csv": itl}, cases, run_dir, surplus)
    unchecked, _ = _withheld_latencies(
        written, {"requests.csv": requests, "itl.csv": _concat(pd, [itl, orphans])},
        cases, run_dir, surplus)
    disagree, more = _disagreeing_latencies(read["requests"], read["itl"], cases, run_dir,
                                            unchecked)
    return _withhold(cases, withheld), disagree, lines, more


def _without_cases(tables: list, case_ids: set[str]) -> list:
    """``tables`` (DataFrames) without the rows of the cases ``case_ids``."""
    return [df[~df["case_id"].astype(str).isin(case_ids)].reset_index(drop=True)
            if case_ids and "case_id" in df else df for df in tables]


def _refuse_none_left(cases, disagree: set[str], lines: list[str]) -> None:
    """``ResultsError`` ``no case can be loaded: LINE (and N more)`` when the cases left
    out for figures their rows do not give (``disagree``, said in ``lines``) are all of
    ``cases``."""
    if disagree and len(cases) == len(disagree):
        more = f" (and {len(disagree) - 1} more)" if len(disagree) > 1 else ""
        raise ResultsError(f"no case can be loaded: {lines[0].removesuffix(' (left out)')}"
                           f"{more}")


#: How many times ``_load_one`` reads a run at most: again when the run ended as it
#: was read (``_ended_while_read``), so that a run that finished then is loaded as
#: finished, not as killed.
_READS = 3


def _summary_identity(run_dir: Path) -> tuple[int, int, int] | None:
    """``run_dir/summary.json``'s inode, modification time (ns) and size, which change
    each time the run rewrites it (``write_json_atomic`` replaces the file); ``None``
    where it cannot be looked up."""
    try:
        st = os.stat(run_dir / "summary.json")
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def _ended_while_read(part: dict[str, Any], run_dir: Path,
                      before: tuple[int, int, int] | None) -> bool:
    """Whether a run loaded as not complete (``part``, ``_load_once``'s) ended as it
    was read: no process holds its lock now (``run_in_progress``), and its
    ``summary.json`` was replaced since ``before`` (its identity, taken before it was
    read: the run wrote its end, then dropped its lock), or the run was read as still
    running (a lock check saw the lock held). A run killed before it was read (lock
    free, summary unchanged) did not; nor did one still going."""
    if part["status"] == "complete" or run_in_progress(run_dir):
        return False
    return (_summary_identity(run_dir) != before
            or part["status_detail"].startswith(STILL_RUNNING))


#: The CSV files ``load`` reads into tables, by stem (``frontend``: a ``--frontend``
#: run's alone).
CSV_STEMS = ("steps", "requests", "floor", "itl", "frontend")


def _load_one(pd, run_dir: Path, run_id: str) -> dict[str, Any]:
    """``run_dir`` loaded (``_load_once``), read again where the run ended as it was
    read (``_ended_while_read``: its summary read before the run finished, its lock
    checked after), ``_READS`` times at most, so that a run that finished while being
    read is loaded as finished, and one killed keeps its words."""
    for _ in range(_READS - 1):
        before = _summary_identity(run_dir)
        part = _load_once(pd, run_dir, run_id)
        if not _ended_while_read(part, run_dir, before):
            return part
    return _load_once(pd, run_dir, run_id)


def _load_once(pd, run_dir: Path, run_id: str) -> dict[str, Any]:
    """One reading of ``run_dir`` (``summary.json``, then its CSV files and its lock):
    ``load``'s tables, metadata, warnings and state of the run (``_run_state``)."""
    summary = read_summary(run_dir)
    shapes = (list(getattr(summary, "repeated", ()))
              + check_shapes(summary, run_dir / "summary.json"))
    metadata = summary.get("metadata") or {}
    valid, bad_cases = _valid_cases(summary, run_dir / "summary.json")
    path = run_dir / "summary.json"
    bad_cases = (shapes + bad_cases + _no_floor_lines(valid, path) + _warnings_lines(valid, path)
                 + _label_field_lines(valid, metadata, path) + _preset_lines(valid, metadata, path)
                 + _family_gap_lines(summary, valid, path))
    cases = pd.DataFrame(valid)
    label_cols: dict[str, dict[str, Any]] = {}  # case_id -> labels
    case_info: dict[str, dict[str, Any]] = {}
    for c in metadata.get("cases") or []:
        label_cols[c["case_id"]] = dict(c.get("labels") or {})
        case_info[c["case_id"]] = dict(transport=c.get("transport"),
                                       model=(c.get("model") or {}).get("name"))
    if cases.empty:
        cases = pd.DataFrame(columns=["case_id", "policy", "codec", "workload"])
    notes: dict[str, list[str]] = {stem: [] for stem in CSV_STEMS}
    steps = _read_steps(pd, run_dir / "steps.csv", valid, notes["steps"])
    requests = _read_rows(pd, run_dir / "requests.csv", CASE_KEYS + REQUEST_COLUMNS,
                          valid, notes["requests"])
    floor = _read_floor(pd, run_dir / "floor.csv", valid, notes["floor"])
    itl = _read_itl(pd, run_dir / "itl.csv", valid, notes["itl"])
    gone = _left_out_ids(summary, valid)
    # the rows of a case left out would pass for another's in the figures
    steps, requests, floor, itl = _without_cases([steps, requests, floor, itl], gone)
    tables, row_lines = _unlisted_rows(run_dir, dict(
        steps=steps, requests=requests, floor=floor, itl=itl,
        frontend=_read_frontend(pd, run_dir / "frontend.csv", notes["frontend"])), summary)
    steps, requests, floor, itl = (tables[k] for k in ("steps", "requests", "floor", "itl"))
    steps, lines = _impossible_steps(steps, run_dir / "steps.csv")
    row_lines += lines + _long_steps(steps, cases, run_dir / "steps.csv")
    floor, lines, floor_over = _surplus_floor(floor, cases, run_dir)
    row_lines += lines
    disagree, lines = _disagreeing_cases(steps, requests, floor, cases, run_dir,
                                         summary.get("problems") or [])
    row_lines += lines
    _refuse_none_left(cases, disagree, lines)
    # left out whole: its figures and its rows would tell two stories
    cases, steps, requests, floor, itl = _without_cases(
        [cases, steps, requests, floor, itl], disagree)
    read = dict(requests=requests, itl=itl)  # every row of the cases kept, for the counts
    requests, itl, lines, orphans = _impossible_latencies(requests, itl, cases, run_dir)
    row_lines += lines
    requests, itl, lines, surplus = _surplus_latency_rows(requests, itl, cases, run_dir)
    row_lines += lines
    cases, disagree, withheld_lines, lines = _checked_latencies(
        pd, read, requests, itl, orphans, cases, run_dir, surplus)
    row_lines += withheld_lines + lines
    _refuse_none_left(cases, disagree, lines)
    cases, steps, requests, floor, itl, read["requests"], read["itl"] = _without_cases(
        [cases, steps, requests, floor, itl, read["requests"], read["itl"]], disagree)
    frontend = _checked_frontend(pd, tables["frontend"], steps, cases, run_dir, row_lines)
    disagree = _frontend_disagreeing(frontend, cases, run_dir, row_lines)
    cases, steps, requests, floor, itl, frontend, read["requests"], read["itl"] = (
        _without_cases([cases, steps, requests, floor, itl, frontend, read["requests"],
                        read["itl"]], disagree))
    load_warnings = (bad_cases + row_lines
                     + _load_warnings(run_dir, notes, dict(
                         steps=_short_steps(steps, cases),
                         requests=_short_requests(read["requests"], cases),
                         floor=_short_floor(floor, cases, floor_over),
                         itl=_short_itl(read["itl"], read["requests"], cases),
                         frontend=_short_frontend(frontend, cases))))
    _add_itl_identity(itl, requests, steps)
    if "finish_reason" in requests:
        reason = requests["finish_reason"]
        requests["finish_reason"] = reason.astype(object).where(reason.notna(), "")
    _add_case_columns(cases, (steps, requests, itl, frontend), case_info, label_cols)
    for df in (cases, steps, requests, floor, itl, frontend):
        df.insert(0, "run_id", run_id)
    state = _run_state(summary, run_dir, cases)
    load_warnings[len(bad_cases):len(bad_cases)] = state.pop("lines")
    load_warnings[:0] = [state["status_warning"]] if state["status_warning"] else []
    return dict(cases=cases, steps=steps, requests=requests, floor=floor, itl=itl,
                frontend=frontend, metadata=metadata, warnings=load_warnings, **state)


def _add_itl_identity(itl, requests, steps) -> None:
    """Add to ``itl`` (in place) the identity columns (``CASE_KEYS``) it lacks, each
    row's case's, from ``requests`` (or ``steps`` where it has no row)."""
    if len(itl) and "case_id" in itl:
        ident = [k for k in CASE_KEYS if k != "case_id"]
        source = requests if len(requests) else steps
        known = source.drop_duplicates("case_id").set_index("case_id")
        for k in ident:
            if k in known.columns and k not in itl.columns:
                itl[k] = itl["case_id"].map(known[k])


def _read_steps(pd, path: Path, valid: list[dict[str, Any]], notes: list[str]):
    """``steps.csv`` (``path``) as ``_read_rows`` reads it, in the run's order
    (``_in_step_order``, by ``valid``'s cases)."""
    steps = _read_rows(pd, path, STEPS_HEADER, valid, notes)
    return _in_step_order(pd, steps, [c.get("case_id") for c in valid])


def _in_step_order(pd, steps, case_ids: list):
    """``steps`` (``steps.csv``'s rows) in the order the run writes them: each case's
    rows together, cases in ``case_ids``' order (the summary's; others after, in the
    order they first appear), steps by ``seq`` (a file sorted in a spreadsheet reads as
    written; the figures over a case's rows in order, its runner gaps, depend on it).
    As it is without those columns or already so."""
    if not len(steps) or not {"case_id", "seq"} <= set(steps.columns):
        return steps
    steps = steps.reset_index(drop=True)
    rank = {c: i for i, c in enumerate(case_ids)}
    first = {c: len(rank) + i for i, c in enumerate(dict.fromkeys(steps["case_id"]))}
    order = [rank.get(c, first[c]) for c in steps["case_id"]]
    seq = pd.to_numeric(steps["seq"], errors="coerce")
    key = pd.DataFrame({"case": order, "seq": seq})
    in_order = key.sort_values(["case", "seq"], kind="stable")
    if key.equals(in_order):
        return steps
    return steps.loc[in_order.index].reset_index(drop=True)


def _add_case_columns(cases, tables, case_info: dict[str, dict[str, Any]],
                      label_cols: dict[str, dict[str, Any]]) -> None:
    """Add, in place, each case's ``transport`` and ``model`` (``case_info``) and its
    ``arm`` (``cases``' where it names one, else the row's ``policy``, as
    ``Results.by_arm`` labels a case) to the per-step / per-request
    ``tables``, and its workload labels (``label_cols``, case id -> labels) to those
    and to ``cases``, where a table lacks the column."""
    labels = list(dict.fromkeys(k for lab in label_cols.values() for k in lab))
    arms = ({} if "arm" not in cases or "case_id" not in cases else
            {c: a for c, a in zip(cases["case_id"], cases["arm"]) if isinstance(a, str) and a})
    for df in tables:
        if "case_id" not in df:
            continue
        ids = df["case_id"]
        if "arm" not in df and "policy" in df:
            df["arm"] = [arms.get(c) or p for c, p in zip(ids, df["policy"])]
        for key in ("transport", "model"):
            if key not in df:
                df[key] = ids.map(lambda i, k=key: case_info.get(i, {}).get(k))
        for lab in labels:
            if lab not in df:
                df[lab] = ids.map(lambda i, k=lab: label_cols.get(i, {}).get(k))
    for lab in labels:
        if lab not in cases and "case_id" in cases:
            cases[lab] = cases["case_id"].map(lambda i, k=lab: label_cols.get(i, {}).get(k))


def _run_status(summary: dict[str, Any], path: Path) -> tuple[str, list[str]]:
    """The run's ``status`` (one of ``RUN_STATUSES``, else ``unknown``) and the warnings
    of an unknown status or of a complete run that names a running or failed case."""
    status = summary.get("status", "unknown")
    lines = []
    if status not in RUN_STATUSES and "status" in summary:
        lines.append(f"{path}: status {_shown(status)} is not one of "
                     f"{', '.join(RUN_STATUSES)} (read as unknown)")
        status = "unknown"
    if status == "complete":
        set_cases = [f"{key} {json.dumps(summary[key])[:60]}"
                     for key in ("running_case", "failed_case")
                     if summary.get(key) not in (None, "")]
        if set_cases:
            lines.append(f"{path}: status is complete, but it has {' and '.join(set_cases)} "
                         "(a complete run has neither; read as complete)")
    return status, lines


#: How a run that is not complete is said, by its status (``run_state``): the
#: report's note (``This run is incomplete: ...``) and ``load``'s ``status_line``.
RUN_STATE_WORDS = {"failed": "failed", "incomplete": "is incomplete"}


def run_state(status: str) -> str:
    """A run's ``status`` (not ``complete``) in words: ``is incomplete``, ``failed``,
    else ``has no known status`` (``RUN_STATE_WORDS``)."""
    return RUN_STATE_WORDS.get(status, "has no known status")


#: What the line of ``bench.py report`` on a run that is not complete says the report
#: covers (``incomplete_run_line``'s ``tail``), as the report's note says it.
REPORT_COVERS = "the report's figures cover the cases it finished"
#: ``REPORT_COVERS`` of a run none of whose cases finished, as the report's note says it
#: (``No case finished, so it has no figures, findings or case tables``).
REPORT_COVERS_NONE = "the report has no figures, findings or case tables of it"


def incomplete_run_line(name: str, status: str, detail: str, finished: int,
                        planned: int | None, tail: str) -> str:
    """The one line saying that a run (named ``name``: its folder as given) is not
    complete (``status``: ``incomplete``, ``failed``, or another, ``run_state``), why
    (``detail``: its problems, or what its files tell, as ``Results.status_detail``
    holds it; ``no reason recorded`` when empty), how many of its ``planned`` cases
    (``None``: its metadata lists none) ``finished``, and what follows for the command
    that reads it (``tail``): ``RUN: this run is incomplete: stopped without finishing
    its summary (...): no process holds its lock, ...; 1 of its 3 cases finished: the
    cases it did not finish are not timed`` (``bench.py microbench``,
    ``microbench.incomplete_run_text``), ``...; 1 of its 3 cases finished: the
    report's figures cover the cases it finished`` (``bench.py report``,
    ``REPORT_COVERS``; of a run none of whose cases finished, ``REPORT_COVERS_NONE``:
    ``...; 0 of its 2 cases finished: the report has no figures, findings or case
    tables of it``). One line (``errors.one_line``: a line break escaped)."""
    from ipc_bench.errors import one_line

    if tail == REPORT_COVERS and not finished:
        tail = REPORT_COVERS_NONE

    def cases(n: int) -> str:
        return f"{n:,} case" if n == 1 else f"{n:,} cases"

    count = (f"{finished:,} of its {cases(planned)} finished" if planned is not None
             else f"{cases(finished)} finished")
    return one_line(f"{name}: this run {run_state(status)}: "
                    f"{detail or 'no reason recorded'}; {count}: {tail}")


def status_line(run_dir: Path, status: str, detail: str, loaded: int,
                unfinished: int, stopped: bool = False) -> str:
    """The one line ``load`` warns with for a run (``run_dir``) whose ``status`` is
    not ``complete`` (``RunStatusWarning``, first of its ``Results.warnings``): its
    state in the report note's words (``run_state``), its ``status_detail`` (still
    running, killed, or its problems; ``no reason recorded`` when empty), the cases
    loaded of it (``loaded``), how many of those did not finish (``unfinished``), and
    whether the case it was running is not loaded at all (``stopped``:
    ``Results.stopped_case``): ``RUN: this run is incomplete: stopped without finishing
    its summary (...), 2 of 12 cases recorded, ...; 2 cases loaded, both finished; the
    case it was running is not loaded (Results.unfinished names it; Results.finished
    leaves it out)``."""
    if not loaded:
        held = "no case loaded"
    elif loaded == 1:
        held = "1 case loaded, " + ("not finished" if unfinished else "finished")
    elif not unfinished:
        held = f"{loaded} cases loaded, {'both' if loaded == 2 else 'all'} finished"
    else:
        held = f"{loaded} cases loaded, {loaded - unfinished} of them finished"
    if stopped:
        held += "; the case it was running is not loaded"
    n = unfinished + stopped
    if n:
        it = "it" if n == 1 else "them"
        held += f" (Results.unfinished names {it}; Results.finished leaves {it} out)"
    from ipc_bench.errors import one_line

    return (f"{one_line(str(run_dir))}: this run {run_state(status)}: "
            f"{detail or 'no reason recorded'}; {held}")


def complete_problems_line(run_dir: Path, problems: list[Any], pointer: bool = True,
                           metadata: dict[str, Any] | None = None) -> str:
    """The one line ``load`` warns with (``RunStatusWarning``) for a ``complete`` run
    (``run_dir``) that recorded ``problems`` as it ended, which cost it no result:
    ``RUN: this run is complete, every case measured and written; as it ended: cannot
    write to stdout: No space left on device (its terminal tables were not printed:
    cd CWD && python bench.py report /abs/RUN shows them)``; ``""`` when it recorded
    none. The command is ``report_pointer``'s, from the run's ``metadata`` (its
    ``summary.json``'s): its ``bench.py`` in the folder it ran in; ``RUN`` escaped to one
    line (``errors.one_line``: a newline in the folder's name as ``\\n``), as the
    other load warnings' lines are printed. A stdout that failed
    (``cannot write to stdout: ...``, ``console.stdout_failure``) is the one problem
    ``bench.py`` records in a complete run. ``pointer=False``: the line without ``RUN:
    `` and the command (the report's note, ``This run is complete, ...``)."""
    if not problems:
        return ""
    text = "; ".join(str(p) for p in problems)
    if any(str(p).startswith(STDOUT_PROBLEM) for p in problems):
        text += (" (its terminal tables were not printed" + (
            f": {report_pointer(run_dir, metadata)} shows them)" if pointer else ")"))
    line = f"this run is complete, every case measured and written; as it ended: {text}"
    if not pointer:
        return line
    from ipc_bench.errors import one_line

    return f"{one_line(str(run_dir))}: {line}"


def report_pointer(run_dir: Path, metadata: dict[str, Any] | None = None) -> str:
    """The command that renders the report of the run folder ``run_dir``, as its
    ``metadata`` (``summary.json``'s) recorded the run's own (``command_line``,
    ``cwd``), to type from any folder: ``cd CWD && python SCRIPT report /abs/RUN``
    (``errors.command_shell_line``: quoted where a shell needs it), ``SCRIPT`` the
    run's ``bench.py`` as it was typed there, the folder absolute (``os.path.abspath``,
    as ``run_dir`` is read from this process's folder). A run that recorded no folder
    (before it was recorded) or command line, or either not as a run writes it
    (``_METADATA_VALUES``): ``python bench.py report RUN``, the folder as given. Raises
    nothing."""
    from ipc_bench.errors import command_shell_line

    md = metadata if isinstance(metadata, dict) else {}
    argv, cwd = md.get("command_line"), md.get("cwd")
    if (_METADATA_VALUES["command_line"][0](argv) and argv
            and argv[0].endswith(".py") and _METADATA_VALUES["cwd"][0](cwd)):
        return command_shell_line([argv[0], "report", os.path.abspath(run_dir)], cwd)
    return command_shell_line(["bench.py", "report", str(run_dir)])


#: How a problem that cost a complete run nothing begins: its tables lost on a stdout
#: that failed (``console.stdout_failure``).
STDOUT_PROBLEM = "cannot write to stdout: "


def _stopped_case(summary: dict[str, Any], problems: list[Any],
                  run_dir: Path) -> dict[str, str] | None:
    """The case a run that is not complete was running (or failed in: ``failed_case``,
    else ``running_case``) and does not list, ``case_id`` and ``error`` (why, in
    words: still running as it was read, or the run stopped during it: killed or
    unable to write ``summary.json``, or as its problems say); ``None`` where there
    is none (``Results.stopped_case``)."""
    case = summary.get("failed_case") or summary.get("running_case")
    if not isinstance(case, str) or not case or case in _listed_ids(summary):
        return None
    if problems:
        why = "the run stopped during it, as its status says"
    else:
        why = {STILL_RUNNING: "still running as the run was read",
               KILLED: "the run stopped during it, killed or unable to write summary.json",
               }.get(unfinished_state(run_dir), "the run stopped during it, killed or "
                     "unable to write summary.json, or is still running")
    if (run_dir / PARTIAL_STEPS).is_file():
        why += f"; its rows in {PARTIAL_STEPS} are not loaded"
    return dict(case_id=case, error=why)


def _run_state(summary: dict[str, Any], run_dir: Path, cases) -> dict[str, Any]:
    """A run's ``status``, ``problems``, ``status_detail``, ``stopped_case`` and
    ``status_warning`` (``status_line``; ``""`` for a complete run) as ``Results``
    holds them, and the ``lines`` of ``_run_status``. ``cases``: its cases loaded."""
    status, lines = _run_status(summary, run_dir / "summary.json")
    problems = [without_full_stop(p) if isinstance(p, str) else p
                for p in summary.get("problems") or []]
    if status == "complete":
        return dict(status=status, problems=problems, status_detail="", stopped_case=None,
                    status_warning=complete_problems_line(
                        run_dir, problems, metadata=summary.get("metadata")), lines=lines)
    detail = (_problems_detail(summary, problems, run_dir)
              or unfinished_detail(summary, run_dir))
    stopped = _stopped_case(summary, problems, run_dir)
    cut = (sum(_not_complete(v) for v in cases["complete"])
           if "complete" in cases.columns else 0)
    return dict(status=status, problems=problems, status_detail=detail,
                stopped_case=stopped, status_warning=status_line(
                    run_dir, status, detail, len(cases), cut, stopped is not None),
                lines=lines)


def _tidy_types(pd, df):
    """``df`` with the flag columns as ``bool`` (an empty table's too, so that
    ``steps[steps["counted"]]`` selects rows, not columns; ``_PRESENT_IF_TRUE``'s so
    that ``cases[cases["emulated"]]`` does), the identity columns as strings and
    ``_NULLABLE_INT_COLUMNS`` with a gap as ``Int64``."""
    for col in _BOOL_COLUMNS:
        if col in df:
            df[col] = df[col].astype(bool)
    for col in _PRESENT_IF_TRUE:
        if col in df:
            df[col] = df[col].eq(True)
    for col in _STR_COLUMNS:
        if col in df:
            text, missing = df[col].astype(str), df[col].isna()
            # a missing value stays missing (pandas 2's astype(str) writes "nan")
            df[col] = text.mask(missing) if missing.any() else text
    _no_payload_in_process(df)
    for col in _NULLABLE_INT_COLUMNS:
        if col in df and df[col].isna().any():
            values = pd.to_numeric(df[col], errors="coerce")
            present = values.dropna()
            if values.isna().sum() == df[col].isna().sum() and (present % 1 == 0).all():
                df[col] = values.astype("Int64")
    return df


#: Per-step payload columns of ``Results.cases`` that a single-process case has as NaN,
#: as it has its wire columns (``TWO_PROCESS_WIRE_FIELDS``): its scheduler hands the
#: SchedulerOutput to its runner in memory, so no frame is serialized or sent between
#: them, and its ``summary.json``'s 0 is no frame measured (the tables show ``-``).
SINGLE_PROCESS_NO_PAYLOAD = ("sched_to_runner_payload_bytes_per_step",
                             "runner_to_sched_payload_bytes_per_step",
                             "decode_token_bytes_per_step", "prompt_chunk_bytes_per_step")


def _no_payload_in_process(df) -> None:
    """Blank, in place, the ``SINGLE_PROCESS_NO_PAYLOAD`` columns of the single-process
    rows (``transport`` ``harness.spec.INPROC``) of ``df`` (``Results.cases``; a table
    without a ``transport`` column is left as it is)."""
    from ipc_bench.harness.spec import INPROC

    if "transport" not in df.columns or df.empty:
        return
    inproc = df["transport"].eq(INPROC).fillna(False).to_numpy(dtype=bool)
    for col in SINGLE_PROCESS_NO_PAYLOAD:
        if col in df.columns and inproc.any():
            df[col] = df[col].astype(float).mask(inproc)


def workload_order(workload: str) -> tuple:
    """Sort key of a ``workload`` (``k=v,...``) in its natural order: each number in it
    by value (``num_running=4`` before ``num_running=16``, ``step_time_ms=2.5`` before
    ``step_time_ms=20.0``), the text between the numbers as text."""
    return tuple(float(t) if i % 2 else t
                 for i, t in enumerate(re.split(r"(\d+(?:\.\d+)?)", str(workload))))


def ordered_workloads(pd, tables: dict[str, Any]) -> dict[str, Any]:
    """``tables`` (name -> DataFrame) with each ``workload`` column an ordered pandas
    ``Categorical`` of every workload the tables hold, in ``workload_order`` (by
    size: ``num_running=4`` < ``num_running=16`` < ``num_running=256``), so that
    ``sort_values("workload")``, ``groupby("workload")`` and ``min()`` follow the
    sizes, not the text; the values stay the same strings (``== "num_running=4"``,
    ``.astype(str)``). A missing value (a blanked cell) stays missing; workloads alike
    in ``workload_order`` (``x=2``, ``x=2.0``) go by their text."""
    names = {w for df in tables.values() if "workload" in df.columns
             for w in df["workload"] if isinstance(w, str)}
    kind = pd.CategoricalDtype(sorted(names, key=lambda w: (workload_order(w), w)),
                               ordered=True)
    for df in tables.values():
        if "workload" in df.columns:
            df["workload"] = df["workload"].astype(object).astype(kind)
    return tables


def _used_workloads(df):
    """``df`` with its ``workload`` categories cut to those its rows hold (order kept):
    a table of some runs or cases (``Results.select``, ``Results.finished``) lists no
    workload it lacks (a ``value_counts`` or ``observed=False`` group of 0 rows)."""
    if df is not None and "workload" in getattr(df, "columns", ()) \
            and hasattr(df["workload"], "cat"):
        df = df.assign(workload=df["workload"].cat.remove_unused_categories())
    return df


def run_labels(run_dirs: list[Path]) -> list[str]:
    """Each run folder's ``run_id``, the label of its run in every table, figure and
    finding: its name, or, where another folder given has the same name, the shortest
    end of its path (resolved: a symlink followed) that no other folder's path ends
    with (``x/run`` and ``y/run`` for ``/r/x/run`` and ``/r/y/run``; ``a/x/run`` and
    ``b/x/run`` a level up). A label depends on the folders given, not on their
    order. Folders must be distinct (``check_distinct_runs``). A byte of a name that is
    not UTF-8, or a control character, is written as its escape (``bad\\xffname``,
    ``e\\x1bsc``: ``errors.one_line``), so that figures can draw the label and a
    terminal shows it as it is."""
    from ipc_bench.errors import one_line

    return [one_line(name) for name in run_names(run_dirs)]


def run_names(run_dirs: list[Path]) -> list[str]:
    """Each run folder's label as ``run_labels`` picks it (its name, or the shortest end
    of its path no other folder's ends with), its characters as the path has them: a
    control character as itself, not escaped (the report's file names clean these
    once, ``report.names.file_slug``: ``t\nx`` -> ``t_x``)."""
    parts = [run_dir.resolve().parts for run_dir in run_dirs]
    names = []
    for i, mine in enumerate(parts):
        others = [p for j, p in enumerate(parts) if j != i]
        k = 1
        while k < len(mine) and any(p[-k:] == mine[-k:] for p in others):
            k += 1
        names.append("/".join(mine[-k:]).lstrip("/") or "/")
    return names


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


def _defragmented(df):
    """``df`` with its columns in as few blocks as their types allow (a copy), or ``df``
    itself where they already are. Runs of different scenarios joined (``_concat``:
    columns one run has and another lacks) and retyped column by column
    (``_tidy_types``, ``ordered_workloads``) leave a block per column: ``Results.cases``
    of a pp, an overhead and a frontend run had 118, and every column added to it
    (``assign``, as the figures do) made pandas warn ``PerformanceWarning: DataFrame is
    highly fragmented``. A table is copied only where it has more blocks than it would
    joined, so a large ``steps`` table already whole is not copied."""
    import numpy as np

    blocks = getattr(getattr(df, "_mgr", None), "nblocks", None)
    if blocks is None:
        return df
    numpy_types = {t for t in df.dtypes if isinstance(t, np.dtype)}
    joined = len(numpy_types) + sum(not isinstance(t, np.dtype) for t in df.dtypes)
    return df.copy() if blocks > joined else df


#: Cases named, at most, besides the first, in the line that stands for warnings alike
#: but for their case (``grouped_warnings``).
GROUPED_CASES_SHOWN = 2

#: A case as a warning line names it: ``case 'ID'`` (its id as ``repr`` quotes it), or
#: its entry of ``summary.json`` (``cases[3]``, ``metadata.cases[3]``, as in ``key
#: cases[3].policy``).
_CASE_NAMED = re.compile(r"\bcase ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")")
_CASE_ENTRY = re.compile(r"\b((?:metadata\.)?cases)\[\d+\]")


def _case_named(line: str):
    """The case warning line ``line`` names and the line less it: ``(NAME, REST)``, NAME
    the case's id as the line quotes it (``'num_running=1/send/msgpack#0'``), else its
    entry (``cases[3]``), REST the line with its id and entry masked; ``None`` where the
    line names no case, or two ids or two entries (a line about two cases)."""
    ids = set(_CASE_NAMED.findall(line))
    entries = [m.group(0) for m in _CASE_ENTRY.finditer(line)]
    if len(ids) > 1 or len(entries) > 1 or not (ids or entries):
        return None
    rest = _CASE_ENTRY.sub(lambda m: f"{m.group(1)}[\0]",
                           _CASE_NAMED.sub("case \0", line))
    return (next(iter(ids)) if ids else entries[0]), rest


def grouped_warnings(lines: list[str]) -> list[str]:
    """``lines`` (a run's loading warnings, ``Results.warnings``) as they are shown: lines
    that differ only by the case they name (``case 'ID'``, or its entry ``cases[N]`` /
    ``metadata.cases[N]``: ``_case_named``), as one hand edit repeated in every case
    gives, become one line, the first of them (which names its case) followed by ``; the
    same in N other cases (NAME, NAME and M more)`` (``1 other case (NAME)``: the first
    ``GROUPED_CASES_SHOWN`` of the other cases named, ids quoted as the lines quote
    them, so each case is named once), where the first of them stood; every other line, one
    naming no case, two cases, or a case no other line of its words names, is kept as
    it is, in its place. ``load`` issues its warnings so, and the report's notes on
    loading say them so."""
    groups: dict[str, tuple[str, list[str]]] = {}  # the line less its case -> lines
    out: list = []  # a line kept as it is, or a group's (first line, names)
    for line in lines:
        named = _case_named(line)
        if named is None:
            out.append(line)
            continue
        name, rest = named
        if rest not in groups:
            groups[rest] = (line, [])
            out.append(groups[rest])
        groups[rest][1].append(name)
    shown: list[str] = []
    for item in out:
        if isinstance(item, str):
            shown.append(item)
            continue
        first, names = item
        cases = list(dict.fromkeys(names))
        if len(cases) == 1:  # the same line again: kept, as it is
            shown += [first] * len(names)
            continue
        others = cases[1:]  # the first line names the first case
        more = len(others) - GROUPED_CASES_SHOWN
        named = ", ".join(others[:GROUPED_CASES_SHOWN]) + (
            f" and {more:,} more" if more > 0 else "")
        shown.append(f"{first}; the same in {len(others):,} other "
                     f"case{'s' if len(others) > 1 else ''} ({named})")
    return shown


def _issue_warnings(parts: dict) -> None:
    """Issue each run's loading warnings (``parts``: run id -> ``_load_one``'s dict) as
    warnings of ``load``'s caller: its ``status_warning`` (``RunStatusWarning``), then
    the rest as ``grouped_warnings`` shows them (``ResultsWarning``): one hand edit
    repeated in every case is one line, not one per case."""
    for part in parts.values():
        status = part["status_warning"]
        if status:
            warnings.warn(status, RunStatusWarning, stacklevel=3)
        for line in grouped_warnings([w for w in part["warnings"] if w != status]):
            warnings.warn(line, ResultsWarning, stacklevel=3)


def _given_paths(path_or_paths) -> list:
    """``load``'s argument as a non-empty list of paths (str or ``os.PathLike``; bytes
    decoded as ``os.fsdecode`` does). Raises ``ResultsError`` for anything else."""
    one = isinstance(path_or_paths, (str, bytes, os.PathLike))
    try:
        paths = [path_or_paths] if one else list(path_or_paths)
    except TypeError:
        raise ResultsError(f"{path_or_paths!r} is not a path or a list of paths") from None
    if not paths:
        raise ResultsError("no run folder given")
    for path in paths:
        if not isinstance(path, (str, bytes, os.PathLike)):
            raise ResultsError(f"{path!r} is not a path (a str, bytes or os.PathLike)")
    return [os.fsdecode(path) if isinstance(path, bytes) else path for path in paths]


def load(path_or_paths) -> Results:
    """Load one run folder, or several, into pandas DataFrames (see ``Results``).

    ``path_or_paths``: a path (str, bytes or ``os.PathLike``) or an iterable of paths (else
    ``ResultsError``). Each folder's name becomes its ``run_id``, or the shortest end of its path that tells it apart where two
    folders share a name (``x/run`` and ``y/run``: ``run_labels``). Raises ``ResultsError``
    (one line) when a folder is missing, is not a run folder (``not a complete run folder (no
    floor.csv)``; ``no itl.csv``; ``itl.csv``, ``steps.csv`` or ``requests.csv is empty``, 0
    bytes, where a case has ITL figures, steps or requests: ``_read_itl``, ``_read_rows``), is
    unreadable, or was written by an older or newer result format version (the message names
    the version). A file cut short (a last line cut mid-row, fewer ``steps.csv`` rows than the
    summary counts, fewer ``requests.csv`` rows than a case's ``num_requests``, fewer
    ``itl.csv`` rows than its requests' gaps: ``_short_steps``, ``_short_requests``,
    ``_short_itl``) loads what is valid and issues a one-line ``ResultsWarning`` naming the
    file and the counts (``Results.warnings``); so does a CSV file whose header is not its
    columns, or an empty one (none of its rows is loaded: ``header_problem`` says what is
    wrong), one whose header lacks measured columns (a run written before they existed: loaded,
    those columns NaN), and a row of any CSV file without the header's number of fields or with
    a value that is not a number in a numeric column (left out, so that every later table has
    numeric columns). A ``summary.json`` case that is not an object, whose known numeric fields
    hold something other than a number from 0 to ``MAX_CASE_VALUE`` (to 100 for the percentages
    of the machine's CPU time, and their sum: ``_percent_problem``), a single-process case with
    a scheduler <-> runner wire figure (``TWO_PROCESS_WIRE_FIELDS``), one whose
    ``num_running``, ``tp``, ``pp`` (fields or workload labels) are not whole numbers, or with
    a NaN or infinite field, is left out (with its rows of the CSV files, when it names its
    ``case_id``) and said in one ``ResultsWarning`` naming the case and the field; so is a case
    without ``policy`` or ``workload``, with an ``arm`` or ``codec`` no run writes
    (``known_arms``, ``known_codecs``), a ``_TEXT_CASE_FIELDS`` field not a text, a ``scenario``
    not the metadata's, a ``complete`` not true or false, or false in a run whose ``status`` is
    ``complete``, a case listed again under the same ``case_id`` or with the arm, workload,
    codec and repetition of an earlier one (the first is kept), and a ``status`` not one of
    ``RUN_STATUSES`` is said and read as ``unknown``, a ``no_floor`` neither true nor false or a
    ``warnings`` not a list said and read as absent (``_no_floor_lines``, ``_warnings_lines``);
    what ``check_shapes`` drops is said, and so is a key an object of ``summary.json``
    gives twice or more (``read_summary``: the last value read); lines that differ only by
    the case they name (one hand edit repeated in every case) are issued as one
    (``grouped_warnings``), ``Results.warnings`` keeping each. Rows of a case ``summary.json`` does not list are left
    out of every CSV table (one warning per case); so are ``steps.csv`` rows of a step their
    case has in an earlier row, and rows with a negative count, time or size (one warning per
    case and column), ``requests.csv`` and ``itl.csv`` rows with an impossible latency,
    ``tpot_s``, gap or step order (``_impossible_requests``, ``_impossible_itl``: one per case
    and kind, naming the requests; the figures over them withheld, ``_withheld_latencies``, the
    rest of the case loaded); a case with more ``steps.csv`` rows than its ``num_total_steps``
    is said too, as one with fewer is; a case whose figures are not those its counted rows give
    (``_step_problem``: sums, means, medians, wire bytes, the reply total
    ``r2s_wire_bytes_total``, runner gaps, ``HOP_FIGURES``), its own tokens and steps
    (``_rate_problem``) or, timed replays, its requests' tokens and ``wall_s``
    (``_wall_rate_problem``, ``_wall_problem``), its floor.csv rows (``_floor_problem``) or its
    requests.csv and itl.csv rows (request latencies: ``_latency_problem``), or a ``token_digest``
    not that of the cases the run's oracle compared it with (``_token_digest_problems``)
    is left out with its rows (one warning naming the first such figure and both values). ``ResultsError`` (one
    line) when ``cases`` is not a list, is missing or empty in a complete run, or no case is
    left; when a folder is given twice (``check_distinct_runs``) or is a copy of another one
    given (``check_copies``, ``check_copied_steps``). Every other case is loaded, those
    that did not finish included: ``Results.finished`` leaves them out. A run not
    ``complete`` (running, killed, failed), or complete with its tables lost on a full stdout, is the first warning,
    a ``RunStatusWarning`` (``status_line``, ``complete_problems_line``); one that ended as read is read again (``_load_one``)."""
    import pandas as pd

    run_dirs = [check_run_dir(path) for path in _given_paths(path_or_paths)]
    check_distinct_runs(run_dirs)
    run_paths: dict[str, Path] = dict(zip(run_labels(run_dirs), run_dirs))
    parts = {run_id: _load_one(pd, run_dir, run_id) for run_id, run_dir in run_paths.items()}
    check_copies({r: p["metadata"] for r, p in parts.items()}, run_paths)
    check_copied_steps({r: p["steps"] for r, p in parts.items()}, run_paths)
    _issue_warnings(parts)

    tables = ordered_workloads(pd, {
        key: _tidy_types(pd, _concat(pd, [p[key] for p in parts.values()]))
        for key in ("cases", "steps", "requests", "floor", "itl", "frontend")})
    tables = {key: _defragmented(df) for key, df in tables.items()}
    return Results(**tables,
                   metadata={r: p["metadata"] for r, p in parts.items()},
                   status={r: p["status"] for r, p in parts.items()},
                   problems={r: p["problems"] for r, p in parts.items()},
                   paths=run_paths,
                   status_detail={r: p["status_detail"] for r, p in parts.items()},
                   warnings={r: p["warnings"] for r, p in parts.items()},
                   status_warning={r: p["status_warning"] for r, p in parts.items()},
                   stopped_case={r: p["stopped_case"] for r, p in parts.items() if p["stopped_case"]})
