"""The run command's options: value parsers with ranges, and ``build_parser`` by group.

Every number has a range and every setting is checked before a process starts, so
bad input never surfaces as a traceback or a hang half-way through a run.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import math
import re
import sys
import tomllib
from pathlib import Path
from typing import Sequence

from ipc_bench.analysis.stats import METHODS
from ipc_bench.cli.once import OnceParser
from ipc_bench.engine.config import (ATTENTION_BACKENDS, DEVICES, EMULATED_DEFAULT_PRESET,
                                     LAYOUT_1D37EB37, LAYOUT_7F280D69C, MAX_MODEL_LEN,
                                     MAX_NUM_BLOCKS, MAX_NUM_SPEC_TOKENS,
                                     MAX_SPEEDUP, MAX_STEP_TIME_MS, MIN_STEP_TIME_MS, MODELS, POLICIES,
                                     ROOFLINE_SETTINGS, SPEC_MODELS, STEP_WAITS,
                                     TORCH_PRESETS, VLLM_LAYOUTS)
from ipc_bench.engine.workloads import REQ_ID_FORMATS
from ipc_bench.harness.scenario import MAX_SIMULATED_REQUESTS
from ipc_bench.wire.codecs import CODECS
from ipc_bench.wire.transport import POLL_SLICE_MS, TRANSPORTS

#: Upper bounds of numeric options: far above any sensible run, low enough that a
#: typo (an extra digit or three) is refused before it allocates or runs for days.
MAX_STEPS = 10**9
MAX_NUM_SEQS = 65536
#: Why ``--num-running`` stops at ``scenario.MAX_SIMULATED_REQUESTS`` (20,000), not at
#: ``MAX_NUM_SEQS``: every scenario that takes it is steady, and a steady case's steps
#: are checked by a simulation that draws at most that many requests
#: (``scenario.check_steady_steps``), which refuses a larger batch.
NUM_RUNNING_WHY = "the most running requests the check of a steady case's steps simulates"
MAX_BLOCK_SIZE = 2**16
MAX_TIMEOUT_S = 86400.0
MAX_SEED = 2**63 - 1
#: The shortest ``--logical-step-ms``: 1 us. A trace's timestamps span at most the
#: 10,000 years ``datetime`` covers (about 3.2e11 s); at 1 us a step that is about
#: 3.2e17 steps, well below the largest int64 step number (about 9.2e18), so every
#: arrival step of any accepted trace is representable (the Azure traces' timestamps
#: have 100 ns resolution: 1 us still separates arrivals 1 us apart).
MIN_LOGICAL_STEP_MS = 1e-3

#: ``SchedulerConfig`` fields the command line can override, with their bounds (lowest,
#: highest) and what else limits them (the help's note). ``max_model_len`` is at least
#: 2: a request holds at least one prompt token and the token sampled after it
#: (``SchedulerConfig.validate``); the notes give the checks that depend on other
#: settings (``SchedulerConfig.validate``, ``scenario.steady_scheduler_config``).
SCHEDULER_OVERRIDES = {
    "max_num_seqs": (1, MAX_NUM_SEQS, ""),
    "max_num_batched_tokens": (1, MAX_MODEL_LEN * 16, ""),
    "max_model_len": (2, MAX_MODEL_LEN,
                      "; at least --block-size; the steady scenarios: more than 256, their "
                      "longest prompt"),
    "block_size": (1, MAX_BLOCK_SIZE, ""),
    "num_blocks": (1, MAX_NUM_BLOCKS,
                   "; a steady scenario (--num-running) defaults to 4,096 tokens per "
                   "running request, plus 4,096, in whole blocks (256 x (B + 1) at "
                   "--block-size 16), at most this bound, and refuses a cache that cannot hold "
                   "all of its requests at once at the longest context each can reach in "
                   "the case (the figures and the --num-blocks that fits are in the error); "
                   "the trace scenarios reject a prompt that, with its first sampled token, "
                   "needs more blocks than the cache, and a request that outgrows it fails "
                   "the case; real memory with the torch model"),
}


class UsageError(Exception):
    """Bad command-line input; exit code 2."""


class _Parser(OnceParser):
    def error(self, message: str):  # one line, exit 2
        raise UsageError(message)


# ------------------------------------------------------------------ value parsers


#: What a numeric option's text may hold: ASCII digits, sign, point and exponent (as
#: the trace reader wants digits), not the other digits or the ``_`` separators that
#: Python's ``int`` and ``float`` would also take (``١٠``, ``1_000``); ``inf``,
#: ``infinity`` and ``nan`` are numbers (each refused by its option as not finite).
_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?"
                     r"|[+-]?(inf|infinity|nan)", re.IGNORECASE)


def _number(text: str) -> float:
    """``text`` as a float where it is one in ASCII (``_NUMBER``); ``ValueError``
    otherwise."""
    if not _NUMBER.fullmatch(text.strip()):
        raise ValueError(text)
    return float(text)


def _integer(text: str) -> int:
    """``text`` as an int where it is one in ASCII digits (``_INTEGER``); ``ValueError``
    otherwise."""
    if not _INTEGER.fullmatch(text.strip()):
        raise ValueError(text)
    return int(text)


#: A whole number written with thousands separators, as ``bench.py``'s lines print one
#: (``--num-blocks 25,856``): a one-value option takes it so, a list option
#: (``--num-running 4,16``) never (its commas part the values).
_GROUPED = re.compile(r"[0-9]{1,3}(,[0-9]{3})+")


def _parse_int(text: str, lo: int, hi: int, why: str = "") -> int:
    """An integer option's value: ``text`` in ASCII digits (``_integer``), or grouped in
    thousands (``_GROUPED``, for a one-value option: a list's items come split), from
    ``lo`` to ``hi``; ``ArgumentTypeError`` (one line) otherwise, ``why`` (the reason
    for ``hi``, where given) in parentheses after the bound."""
    try:
        value = (int(text.strip().replace(",", "")) if _GROUPED.fullmatch(text.strip())
                 else _integer(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < lo:
        raise argparse.ArgumentTypeError(f"must be at least {lo}, got {value}")
    if value > hi:
        reason = f" ({why})" if why else ""
        raise argparse.ArgumentTypeError(f"must be at most {hi:,}{reason}, got {value:,}")
    return value


def _int_in(lo: int, hi: int):
    def parse(text: str) -> int:
        return _parse_int(text, lo, hi)
    return parse


def no_repeats(values: list) -> list:
    """``values`` as they are; ``ArgumentTypeError`` naming the values given more than
    once (every list option refuses repeats: ``--tp 2,2`` is a mistake, not one value)."""
    repeated = list(dict.fromkeys(v for v in values if values.count(v) > 1))
    if repeated:
        shown = ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in repeated)
        raise argparse.ArgumentTypeError(f"{shown} given more than once")
    return values


def list_items(text: str, kind: str) -> list[str]:
    """The items of a comma-separated list, stripped; ``ArgumentTypeError`` (``expected
    comma-separated KIND, got TEXT (an item is empty)``) when any item is empty
    (``1,,2``, ``1,``, ``,1``, ``,``, ``""``): every list option refuses an empty item
    rather than dropping it."""
    parts = [v.strip() for v in text.split(",")]
    if not all(parts):
        raise argparse.ArgumentTypeError(
            f"expected comma-separated {kind}, got {text!r} (an item is empty)")
    return parts


def int_items(text: str) -> list[int]:
    """The integers of a comma-separated list (``list_items``); ``ArgumentTypeError``
    for an empty item or one that is not an integer."""
    items = list_items(text, "integers")
    try:
        return [_integer(v) for v in items]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}") from None


def _int_list(hi: int, why: str = ""):
    """A parser of comma-separated integers from 1 to ``hi`` (``why``: the reason for
    ``hi``, in the refusal), without repeats."""
    def parse(text: str) -> list[int]:
        return no_repeats([_parse_int(v, 1, hi, why) for v in list_items(text, "integers")])
    return parse


def _batch_sizes(text: str) -> list[int]:
    """``--cuda-graph-sizes``: comma-separated whole numbers from 1 to ``MAX_NUM_SEQS``
    (digits only: no sign; no empty item, ``list_items``), without repeats; sorted."""
    parts = list_items(text, "whole numbers")
    for v in parts:
        if not (v.isascii() and v.isdigit()):
            raise argparse.ArgumentTypeError(f"expected whole numbers, got {v!r}")
    values = [_parse_int(v, 1, MAX_NUM_SEQS) for v in parts]
    return sorted(no_repeats(sorted(values)))


def _vllm_layout(text: str) -> str:
    """One of ``VLLM_LAYOUTS``; ``ArgumentTypeError`` (one line) naming them otherwise."""
    if text not in VLLM_LAYOUTS:
        raise argparse.ArgumentTypeError(f"{text!r}: choose from {', '.join(VLLM_LAYOUTS)}")
    return text


def _choices(allowed: Sequence[str]):
    def parse(text: str) -> list[str]:
        values = list_items(text, "names")
        bad = [v for v in values if v not in allowed]
        if bad:
            raise argparse.ArgumentTypeError(
                f"{','.join(bad)!r}: choose from {', '.join(allowed)}")
        return no_repeats(values)
    return parse


def _float_in(hi: float, lo: float = 0.0, why: str = ""):
    """A parser of a positive finite number at most ``hi`` and, when ``lo`` is given, at
    least ``lo`` (``why``: the reason, in the refusal). ``inf``, ``infinity``, ``nan``
    (either sign, any case) and a number too large for a float (``1e999``) are refused
    in one sentence, ``must be a finite number, got TEXT``. Below ``lo`` (a ``lo``
    above 0: zero and negatives too) reads ``must be at least LO (WHY), got TEXT``;
    without one, zero and negatives read ``must be a positive number, got TEXT``."""
    def parse(text: str) -> float:
        try:
            value = _number(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
        if not value > 0 and not lo > 0:
            raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
        if value > hi:
            raise argparse.ArgumentTypeError(f"must be at most {hi:g}, got {text}")
        if not value >= lo or not value > 0:
            reason = f" ({why})" if why else ""
            raise argparse.ArgumentTypeError(f"must be at least {lo:g}{reason}, got {text}")
        return value
    return parse


#: The shortest ``--peer-timeout``: one wait slice (``transport.POLL_SLICE_MS``).
MIN_PEER_TIMEOUT_S = POLL_SLICE_MS / 1000


def _spec_tokens_list(text: str) -> list[int]:
    """``--num-spec-tokens``: comma-separated draft counts, each in [0,
    ``MAX_NUM_SPEC_TOKENS``], without repeats."""
    return no_repeats([_parse_int(v, 0, MAX_NUM_SPEC_TOKENS)
                        for v in list_items(text, "integers")])


def _probability(text: str) -> float:
    """``--spec-acceptance``: a number in [0, 1]; ``inf`` and ``nan`` (either sign, any
    case) are refused as by every option of one number (``_float_in``): ``must be a
    finite number, got TEXT``."""
    try:
        value = _number(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {text}")
    return value


def _tp_list(text: str) -> list[int]:
    from ipc_bench.wire.tp import TP_SIZES

    values = _int_list(max(TP_SIZES))(text)
    bad = [v for v in values if v not in TP_SIZES]
    if bad:
        raise argparse.ArgumentTypeError(f"each value must be one of "
                                         f"{', '.join(map(str, TP_SIZES))}, got {bad[0]}")
    return values


def _pp_list(text: str) -> list[int]:
    from ipc_bench.engine.pipeline import PP_SIZES

    values = _int_list(max(PP_SIZES))(text)
    bad = [v for v in values if v not in PP_SIZES]
    if bad:
        raise argparse.ArgumentTypeError(f"each value must be one of "
                                         f"{', '.join(map(str, PP_SIZES))}, got {bad[0]}")
    return values


def _step_time_list(text: str) -> list[float]:
    """``--step-time-ms``: comma-separated step times in [``MIN_STEP_TIME_MS``,
    ``MAX_STEP_TIME_MS``] ms, at most 1,000, without repeats; each refused in the words
    of the options of one number (``_float_in``: ``must be at most 10000, got 1e9``,
    ``must be a finite number, got inf``), as the model's settings check would refuse it
    later (``ModelConfig``: ``step_time_ms (--step-time-ms) must be in ...``)."""
    items = list_items(text, "numbers")
    try:
        [_number(v) for v in items]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}")
    parse = _float_in(MAX_STEP_TIME_MS, MIN_STEP_TIME_MS, "a shorter step measures the "
                      "model's own sampling and timer reads")
    values = [parse(v) for v in items]
    if len(values) > 1000:
        raise argparse.ArgumentTypeError(f"at most 1000 values, got {len(values)}")
    return no_repeats(values)


def nonempty_path(kind: str):
    """Argument type: a path, refused when empty (``--output ""``)."""

    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"expected the path of a {kind}, got {text!r}")
        return text
    return parse


class _WholeRefusal(argparse.ArgumentTypeError):
    """A ``writable_file`` refusal that reads whole after ``argument FLAG: `` (``cannot
    write PATH: ...``, ``PATH is a symbolic link ...``): ``output_problem`` adds no
    ``cannot write`` before it."""


def writable_file(text: str) -> str:
    """argparse type of an output file (a script's ``--json``): one that can be
    written, checked before any work and without blocking (opened to append, without
    waiting, then removed again if it did not exist); ``ArgumentTypeError`` naming the
    path and why (``PATH: is a directory``, or for a link to a folder ``PATH is a
    symbolic link to TARGET, which is a folder``, read whole:
    ``errors.output_kind_text``; ``special_file_problem``'s FIFO, socket or
    block device, ``PATH: REASON``, the system's reason) otherwise. A dangling link,
    or a loop of links, is refused as a run's ``--output`` is: ``PATH is a symbolic link
    to TARGET, which does not exist``, each link of a chain named
    (``errors.dangling_link_text``); so is one above it, and a file above it, in the
    run's sentence (``errors.blocked_path_text``): ``cannot write PATH: LINK is a
    symbolic link to TARGET, which does not exist``, ``cannot write PATH: FILE is not a
    folder``. A character device (``/dev/null``, ``/dev/full``, a terminal) is taken, as
    is ``/dev/stdout`` on a pipe."""
    import os
    from pathlib import Path

    from ipc_bench.errors import blocked_path_text, dangling_link_text, output_kind_text

    if not text.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: the path is empty (give a file's path)")
    path = Path(text)
    existed = path.exists()
    if not existed and path.is_symlink():  # its target is not made, as a run's --output's
        raise _WholeRefusal(f"{text} is {dangling_link_text(path)}")
    blocked = None if existed else blocked_path_text(path)
    if blocked is not None:
        raise _WholeRefusal(f"cannot write {text}: {blocked}")
    kind = output_kind_text(path, text, folder=False)
    if kind is not None:  # a link to a folder reads whole: PATH is a symbolic link to ...
        raise (_WholeRefusal if path.is_symlink() else argparse.ArgumentTypeError)(kind)
    why = special_file_problem(text)
    if why:
        raise argparse.ArgumentTypeError(why)
    try:  # O_NONBLOCK: a device (a serial line) or a pipe never makes the check wait
        os.close(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK,
                         0o666))
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"{text}: {exc.strerror}") from None
    if not existed:
        path.unlink()
    return text


def special_file_problem(path: str) -> "str | None":
    """Why the existing ``path`` is no place for an output file, or ``None`` (a regular
    file, a character device such as ``/dev/null`` or ``/dev/full``, a missing path):
    ``PATH: not a regular file (a FIFO: writing it waits for a reader; give a file, or
    /dev/stdout)`` for a named FIFO (opened to write, it blocks until some process opens
    it to read: the command hung at its start), ``PATH: not a regular file (a socket)``,
    ``PATH: not a regular file (a block device)``. A pipe that is one of this process's
    own descriptors (``/dev/stdout`` piped to ``jq``, ``/dev/fd/63`` of ``>(...)``) is
    taken: its reader is there."""
    import os
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:  # missing (or unreadable): the open that follows says why
        return None
    if stat.S_ISFIFO(mode) and not _own_pipe(path):
        return (f"{path}: not a regular file (a FIFO: writing it waits for a reader; "
                f"give a file, or /dev/stdout)")
    if stat.S_ISSOCK(mode):
        return f"{path}: not a regular file (a socket)"
    if stat.S_ISBLK(mode):
        return f"{path}: not a regular file (a block device)"
    return None


def _own_pipe(path: str) -> bool:
    """Whether the pipe or FIFO at ``path`` is open in this process (``/dev/stdout``
    on a pipe, ``/dev/fd/N``): the same device and inode as one of its descriptors."""
    import os

    try:
        st = os.stat(path)
        fds = [int(fd) for fd in os.listdir("/proc/self/fd")]
    except (OSError, ValueError):
        fds = [0, 1, 2]
        try:
            st = os.stat(path)
        except OSError:
            return False
    for fd in fds:
        try:
            own = os.fstat(fd)
        except OSError:
            continue
        if (own.st_dev, own.st_ino) == (st.st_dev, st.st_ino):
            return True
    return False


def writable_folder(text: str) -> str:
    """argparse type of an output folder (a script's ``--output DIR``): an existing
    writable folder, or a new one whose parent is an existing writable folder; checked
    before any work without creating the folder (a temporary folder is made in it, or
    in its parent, and removed again); ``ArgumentTypeError`` naming the path and why
    otherwise: a file, a link that cannot be followed, at the path or above it, or a
    file above it, in the run's words (``output path PATH exists and is not a folder``,
    ``output path PATH is a symbolic link to TARGET, which is not a folder``:
    ``errors.output_kind_text``;
    ``errors.broken_link_text``: ``cannot write results to PATH: FILE is not a
    folder``), a missing parent (``PATH: no such folder: PARENT``), or what the system
    says as the temporary folder is made (``PATH: cannot write in FOLDER: Permission
    denied``; a parent replaced by a file since it was looked at: ``Not a
    directory``)."""
    import os
    import tempfile
    from pathlib import Path

    from ipc_bench.errors import broken_link_text, output_kind_text

    if not text.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: the path is empty (give a folder's path)")
    path = Path(text)
    problem = broken_link_text(path, "results")  # the run's words
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    kind = output_kind_text(path, text)
    if kind is not None:
        raise argparse.ArgumentTypeError(kind)
    where = path if path.is_dir() else path.parent
    if not where.exists():  # a file or a link above it was refused above
        raise argparse.ArgumentTypeError(f"{text}: no such folder: {where}")
    try:
        os.rmdir(tempfile.mkdtemp(dir=where, prefix=".write-check-"))
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"{text}: cannot write in {where}: "
                                         f"{exc.strerror}") from None
    return text


def output_problem(path: str) -> "str | None":
    """Why an output file cannot be written at ``path``, or ``None``: for options whose
    value is not parsed here (pyperf's ``-o``/``--append``, ``--figure``), checked
    before any work; the words that follow ``argument FLAG: ``: ``writable_file``'s
    line after ``cannot write`` (``cannot write /proc/x.json: No such file or
    directory``), or its line alone where it reads whole (a link that cannot be
    followed, at the path or above it, a file above it: ``cannot write PATH: FILE is
    not a folder``)."""
    try:
        writable_file(path)
    except _WholeRefusal as exc:
        return str(exc)
    except argparse.ArgumentTypeError as exc:
        return f"cannot write {exc}"
    return None


def new_output_problem(path: str) -> "str | None":
    """Why pyperf's ``-o PATH`` would be refused, or ``None``: pyperf writes only a new
    file, and refuses one that exists as it parses its options (``ERROR: The JSON file
    'PATH' already exists`` on stdout, exit 1: lost when stdout fails), so ``PATH:
    already exists (pyperf's -o writes only a new file: give another path, or add to it
    with --append PATH)`` (no ``--append`` hint for a device or folder). Checked before
    pyperf parses its options."""
    import os

    if not os.path.exists(path):
        return None
    hint = f", or add to it with --append {path}" if os.path.isfile(path) else ""
    return f"{path}: already exists (pyperf's -o writes only a new file: give another path{hint})"


def append_problem(path: str) -> "str | None":
    """Why pyperf's ``--append PATH`` would fail as it reads ``PATH``, or ``None`` (then
    ``output_problem`` says whether it can be written): pyperf reads a file that exists
    before it adds to it, so ``PATH: not a regular file (pyperf reads the file it
    appends to)`` for a device, FIFO or socket (``/dev/full`` reads as endless zeros:
    pyperf ran out of memory; a FIFO blocks), ``cannot read PATH: REASON``, and ``PATH:
    not a pyperf benchmark suite (TYPE: REASON)`` for a file pyperf cannot load (an
    empty one too: pyperf failed with a traceback once every benchmark had run). Checked
    before any work."""
    import os

    if not os.path.exists(path) or os.path.isdir(path):  # a folder: output_problem's
        return None
    if not os.path.isfile(path):
        return f"{path}: not a regular file (pyperf reads the file it appends to)"
    import pyperf

    from ipc_bench.errors import one_line

    try:
        pyperf.BenchmarkSuite.load(path)
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror or exc}"
    except Exception as exc:  # pyperf raises KeyError, TypeError, ValueError, ...
        return one_line(f"{path}: not a pyperf benchmark suite "
                        f"({type(exc).__name__}: {exc})")
    return None


def pyperf_option_words(parser: argparse.ArgumentParser) -> None:
    """Give the options of a ``pyperf.Runner``'s ``parser`` (a script's) the words of
    the run's options: a count below its least or not a whole number (``-p 0``, ``-n
    0``, ``--timeout 0``, ``-w -1``, ``-p x``) reads ``argument -p/--processes: must be
    at least 1, got 0`` as ``bench.py microbench``'s does (``microbench._count_words``),
    where pyperf's read ``invalid strictly_positive value: '0'``; ``--min-time`` is a
    positive finite number of seconds, at most ``microbench.MAX_MIN_TIME_S``
    (``_float_in``: ``must be a finite number, got nan``), where pyperf ran ``nan``;
    ``-inf`` and ``-nan`` as words of their own are values (``once.NEGATIVE_VALUE``).
    Changes ``parser`` in place, before it parses."""
    from ipc_bench.analysis.microbench import MAX_MIN_TIME_S, _count_words, _no_huge_power
    from ipc_bench.cli.once import NEGATIVE_VALUE

    for action in parser._actions:  # argparse keeps no public list of them
        if action.dest in ("warmups", "loops"):
            action.type = _count_words(_no_huge_power(action.type), 0)
        elif action.dest in ("processes", "values", "timeout"):
            action.type = _count_words(action.type, 1)
        elif action.dest == "min_time":
            action.type = _float_in(MAX_MIN_TIME_S)
    parser._negative_number_matcher = NEGATIVE_VALUE


def _cpu_affinity(text: str):
    """``--cpu-affinity``: CPU sets in process order (``harness.affinity.parse_affinity``)."""
    from ipc_bench.harness.affinity import AffinityError, parse_affinity

    try:
        return parse_affinity(text)
    except AffinityError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _host(text: str) -> str:
    from ipc_bench.wire.transport import check_host

    try:
        return check_host(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


# ------------------------------------------------------------------ --version

#: The distribution ``bench.py --version`` names the version of (pyproject.toml's name).
DISTRIBUTION = "ipc-bench"
_PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def package_version() -> str:
    """The version of ``DISTRIBUTION`` as installed (``importlib.metadata``), else the
    ``version`` of the checkout's ``pyproject.toml`` (run from a checkout not
    installed), else ``unknown``."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        with open(_PYPROJECT, "rb") as f:
            return str(tomllib.load(f)["project"]["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return "unknown"


def version_line() -> str:
    """``bench.py --version``'s line: ``bench.py 0.1.0 (commit 058d43e5a520)``, the
    commit's first 12 hex digits as a report shows a run's, followed by ``, dirty``
    where a tracked file differs from it (``bench.py 0.1.0 (commit 058d43e5a520,
    dirty)``: a report's ``(dirty)``) (``environment.checkout_state``: where this
    package is in a git checkout; the line ends after the version otherwise)."""
    from ipc_bench.harness.environment import checkout_state

    state = checkout_state()
    if state is None:
        return f"bench.py {package_version()}"
    commit, dirty = state
    return f"bench.py {package_version()} (commit {commit[:12]}{', dirty' if dirty else ''})"


class _Version(argparse._VersionAction):
    """argparse's ``action="version"``, its line (``version_line``: a git call or two)
    made only when ``--version`` is given, not each time a parser is built, and printed
    as it is: argparse's would wrap it to the terminal's width."""

    def __call__(self, parser, namespace, values, option_string=None):
        parser._print_message(version_line() + "\n", sys.stdout)
        parser.exit()


# ------------------------------------------------------------------ the parser


def build_parser() -> argparse.ArgumentParser:
    """The run command's parser (``--help`` lists the options in this order)."""
    p = _Parser(prog="bench.py", description=(
        "Measure what shipping sampled token ids from the scheduler to the model runner "
        "costs (send) against letting the runner cache them (cached, vLLM PR #20291)."),
        epilog="An option given twice is refused (give it once). "
               "Options that take a comma-separated list refuse a value given twice and "
               "an empty item (1,,2 or 1,). "
               "Reports: python bench.py report RUN_DIR [RUN_DIR ...] [--output DIR] "
               "(see python bench.py report --help). "
               "pyperf timings of a run's captured messages: python bench.py microbench "
               "RUN_DIR (see python bench.py microbench --help). A runner on another host: "
               "python bench.py runner --connect tcp://HOST:PORT (see python bench.py "
               "runner --help).")
    _add_run_options(p)
    _add_trace_options(p)
    _add_arm_options(p)
    _add_model_options(p)
    _add_scheduler_options(p)
    _add_repetition_options(p)
    _add_case_options(p)
    return p


def _add_run_options(p: argparse.ArgumentParser) -> None:
    """The scenario, the run folder, the seed and the size of a steady case."""
    p.add_argument("--scenario", help="scenario to run (see --list)")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    p.add_argument("--version", action=_Version, help=(
        "print bench.py's version and the git commit of its checkout, followed by "
        "', dirty' where a tracked file differs from it, and exit"))
    p.add_argument("--output", metavar="DIR", type=nonempty_path("folder"),
                   help="run folder (default: results/<scenario>-<time> in the checkout bench.py "
                        "is in, from any current folder)")
    p.add_argument("--seed", type=_int_in(0, MAX_SEED), default=0,
                   help="workload and model seed (and the arms' order, without "
                   "--order-seed)")
    p.add_argument("--steps", type=_int_in(1, MAX_STEPS),
                   help="counted steps per case (steady scenarios): after the warm-up the "
                        "case runs exactly this many pure-decode steps, and between them, "
                        "uncounted, the mixed steps (a finished request's replacement "
                        "prefilling, a preempted one resuming); default 1000 for "
                        "decode-steady and overhead, 300 for tp-broadcast and pp, 200 for "
                        "step-time; the azure-* replays and soak refuse it: they run until "
                        "their requests finish")
    p.add_argument("--warmup-steps", type=_int_in(0, MAX_STEPS),
                   help="warm-up steps per case (default 100 for decode-steady and "
                   "overhead, 30 for tp-broadcast and pp, 20 for step-time, 50 for the "
                   "azure-* replays and soak); a trace replay whose every step would "
                   "fall in the warm-up is refused before its first case (a timed one "
                   "warned)")
    p.add_argument("--num-running", type=_int_list(MAX_SIMULATED_REQUESTS, NUM_RUNNING_WHY),
                   metavar="B[,B...]",
                   help="running requests per case (steady scenarios; 1 to %s)"
                   % f"{MAX_SIMULATED_REQUESTS:,}")


def _add_trace_options(p: argparse.ArgumentParser) -> None:
    """Trace replays: the trace, how much of it, and its clock."""
    p.add_argument("--trace", metavar="PATH", type=nonempty_path("file"), help="Azure LLM inference trace CSV")
    p.add_argument("--max-requests", type=_int_in(1, MAX_STEPS), metavar="N",
                   help="replay the first N requests of the trace (default 300; soak: "
                   "the whole trace); a trace with fewer than a given N is replayed "
                   "whole, with a note")
    p.add_argument("--logical-step-ms", metavar="MS",
                   type=_float_in(MAX_TIMEOUT_S * 1e3, MIN_LOGICAL_STEP_MS,
                                  "1 us: the step numbers of a trace spanning the 10,000 "
                                  "years its timestamps can cover must fit in 64 bits"),
                   help="trace time per scheduler step on the logical clock (default 20; "
                   "%g to %g: at least 1 us, so the arrival step numbers of any trace, "
                   "whose timestamps span at most 10,000 years, fit in 64 bits)"
                   % (MIN_LOGICAL_STEP_MS, MAX_TIMEOUT_S * 1e3))
    p.add_argument("--trace-speedup", type=_float_in(MAX_SPEEDUP), metavar="X",
                   help="timed replays: arrivals at X times real time (default 10; the "
                        "run's timed replays, every case and repetition, may last at most "
                        "24 h in all)")


def _add_arm_options(p: argparse.ArgumentParser) -> None:
    """What is compared (policies, codecs) and over which transport."""
    p.add_argument("--policies", type=_choices(POLICIES), default=None,
                   help="comma-separated subset of: " + ", ".join(POLICIES)
                   + " (default: all)")
    p.add_argument("--codecs", type=_choices(CODECS), default=None,
                   help="comma-separated subset of: " + ", ".join(CODECS)
                   + " (default: msgpack,pickle; msgpack only with --transport tcp; packed: "
                   "vLLM PR #54406's packed SchedulerOutput pickle; slots: requests named by "
                   "integer slots after their first step, int32 arrays, nothing sent for a "
                   "request the runner can infer; replicated: SGLang style, the runner runs "
                   "a replica of the scheduler fed the arrivals and a per-step digest, "
                   "synchronous scheduling only; slots and replicated: not with drafts or --pp)")
    p.add_argument("--vllm-layout", type=_vllm_layout, default=None,
                   metavar="|".join(VLLM_LAYOUTS), help=(
        "the layout of the scheduler -> runner messages, named after the commit "
        f"it follows: {LAYOUT_7F280D69C} (default; PR #20291, July 2025) or "
        f"{LAYOUT_1D37EB37} (vLLM of spring 2026, read at a fork's commit: "
        "CachedRequestData with resumed_req_ids, all_token_ids, a copy of the whole "
        "token history of each cached request not scheduled the step before, and "
        "num_output_tokens; SchedulerOutput without the "
        "grammar fields; the second per-step RPC, sample_tokens, is not modelled). "
        f"{LAYOUT_1D37EB37}: codecs msgpack and pickle, synchronous scheduling, not the "
        "pp scenario and no --num-spec-tokens (docs/comparisons.md, \"Since 7f280d69c\")"))
    p.add_argument("--async-scheduling", action="store_true", help=(
        "schedule step n+1 while the runner executes step n (two steps in flight, output "
        "placeholders reconciled when step n's output arrives, as vLLM's async "
        "scheduling, #19970); cached policy only: --policies with send is refused; "
        "without --policies each case runs twice, cached synchronously and cached with "
        "async scheduling (arm cached+async), paired as the policies are (--repeat); "
        "with --policies cached only the async case runs, labelled cached+async too. "
        "The single-process cases run their runner in a worker thread. With the null, "
        "fixed-step and emulated models "
        "the runner reads step n+1's input ids from its host buffer (process "
        "pipelining); with the torch model they come from step n's sampled ids on the "
        "device, copied back without blocking (device pipelining on CUDA; on CPU the "
        "same path with no overlap), except with --num-spec-tokens, where its runner "
        "takes the host path too (process pipelining (drafts: host path))"))
    p.add_argument("--num-spec-tokens", type=_spec_tokens_list, metavar="K[,K...]", help=(
        "speculative decoding: K draft tokens per decoding request and step (0 to "
        f"{MAX_NUM_SPEC_TOKENS}; 0: off), proposed by the runner (ModelRunnerOutput."
        "spec_token_ids), scheduled the next step as SchedulerOutput."
        "scheduled_spec_decode_tokens and verified against the model's own tokens, as "
        "vLLM V1; each K is its own workload (label num_spec_tokens), run for every "
        "policy and codec; a run compares the token streams of the policies and codecs "
        "within each K (equal schedules), never across K, whose schedules differ: the "
        "input oracle checks every K. Models "
        f"{', '.join(SPEC_MODELS)}; with --async-scheduling the drafts stay on the "
        "runner and step n+1 assumes step n's drafts accepted (vLLM #24799; the torch "
        "model's runner then reads its input ids from its host buffer)"))
    p.add_argument("--spec-acceptance", type=_probability, metavar="P", help=(
        "with --num-spec-tokens: the probability that each draft token is the target "
        "model's own next token (seeded by --seed: the same drafts under both policies); "
        "default 0.7. Drafts after the first wrong one are rejected too, so accepted "
        "drafts per request-step average P + P^2 + ... + P^K. The torch model's drafter "
        "is the target itself run K decode forwards ahead (it models acceptance, not a "
        "drafter's cost; timed apart as draft_ns, outside runner_forward_ns)"))
    p.add_argument("--frontend", action="store_true", help=(
        "add a third process, the frontend: every step the scheduler (vLLM's engine "
        "core) sends it EngineCoreOutputs (each request's new token ids; msgspec "
        "msgpack over ZeroMQ PUSH/PULL, as vLLM V1's output path; tcp on 127.0.0.1 "
        "with --transport tcp, else ipc). It detokenizes nothing, checks each "
        "request's token stream against the scheduler's (a difference fails the "
        "case) and reports its bytes and decode time beside the scheduler <-> runner "
        "hop's, so send's saving is also given as a share of the whole per-step "
        "control plane. The single-process cases run it too (the hop exists with one "
        "GPU). Not with --tp, the pp scenario, a streamed case (soak) or the bare "
        "loops (overhead)"))
    _add_topology_options(p)


def _add_topology_options(p: argparse.ArgumentParser) -> None:
    """Where the processes run and how they are joined: transport, ranks, stages,
    hosts and ports."""
    p.add_argument("--transport", choices=TRANSPORTS, default="ipc",
                   help="ZeroMQ transport (ipc: socket files in a private 0700 directory), "
                   "or shm: SchedulerOutput frames through a shared-memory ring as vLLM's "
                   "MessageQueue (the runner spins on it, as vLLM's workers; shm-block: "
                   "it sleeps on a FIFO), replies over ipc")
    p.add_argument("--tp", type=_tp_list, metavar="N[,N...]", help=(
        "tensor-parallel broadcast (scenario tp-broadcast): runner ranks, each of 1, 2, 4 "
        "(default: all three)"))
    p.add_argument("--pp", type=_pp_list, metavar="N[,N...]", help=(
        "pipeline stages (scenario pp): each of 1, 2, 4 (default: 1, 2, and 4 where the "
        "machine has a core per process)"))
    p.add_argument("--tp-transports", type=_choices(("ipc", "shm", "shm-block")),
                   metavar="T[,T...]", help=(
                       "transports of the tensor-parallel broadcast (scenario tp-broadcast; "
                       "default: ipc (XPUB/SUB), shm-block, and shm where the machine has a "
                       "core per process)"))
    p.add_argument("--cpu-affinity", type=_cpu_affinity, metavar="SET[,SET...]", help=(
        "pin the processes to CPUs (as taskset): one CPU set per process, in process "
        "order: the scheduler, the runner (rank 0), then further --tp ranks or --pp "
        "stages; a set is a CPU N, a range N-M, or such items joined by + (0,1: "
        "scheduler on CPU 0, runner on CPU 1; 0,1+3: runner on CPUs 1 and 3). Give at "
        "least as many sets as the run's largest case has processes (single-process "
        "cases use the scheduler's set), no more; each CPU one this process may run "
        "on. With --frontend one more set may follow, the last, which pins the frontend "
        "process; without it the frontend inherits the scheduler's set. With "
        "--remote-runners give the scheduler's set only (and the frontend's): runners "
        "started by hand pin themselves (bench.py runner --cpu-affinity SET). Linux "
        "only. The sets each case ran with are recorded (summary.json: cpu_affinity in "
        "the case settings, cpus_allowed per case as read back from the kernel)"))
    p.add_argument("--host", type=_host, default=None, metavar="ADDR",
                   help="address tcp sockets bind to (default 127.0.0.1; an IP address, or "
                   "localhost, read as 127.0.0.1)")
    p.add_argument("--allow-pickle-over-tcp", action="store_true",
                   help="with --transport tcp: let the pickle codec decode frames from a "
                   "TCP peer (pickle runs code on load: only if every host that can reach "
                   "the port is trusted)")
    p.add_argument("--remote-runners", action="store_true", help=(
        "runners on other hosts: start none, wait (--startup-timeout) for runners started "
        "by hand with python bench.py runner --connect tcp://SCHEDULER:PORT (one per rank "
        "or stage: 1, or the largest --tp or --pp); needs --transport tcp; sockets at fixed "
        "ports from --port"))
    p.add_argument("--port", type=_int_in(1, 65535), default=None, metavar="BASE",
                   help="with --remote-runners: first of the fixed ports (default 5600): "
                   "rank r's control port BASE+r, then the SchedulerOutput and "
                   "ModelRunnerOutput ports BASE+R and BASE+R+1 for R runners, and with "
                   "--pp the stages' torch.distributed store at BASE+R+2")


def _add_model_options(p: argparse.ArgumentParser) -> None:
    """The runner's model."""
    p.add_argument("--model", choices=MODELS, help=(
        "runner model: null (no compute), fixed-step (waits --step-time-ms as --step-wait "
        "says, then samples as null), torch (decoder with a paged KV cache), emulated (sleeps the "
        "preset's roofline step time on an H200's figures, gpu_figures.json's, "
        "uncalibrated until fitted to a GPU run, then samples as null); default: the scenario's"))
    p.add_argument("--step-time-ms", type=_step_time_list, metavar="MS[,MS...]",
                   help=f"fixed-step model's step time, in [{MIN_STEP_TIME_MS}, "
                   f"{MAX_STEP_TIME_MS}] ms (default 5; a list in step-time; a step shorter "
                   "than the model's own sampling and timer reads, tens of µs, measures "
                   "those)")
    p.add_argument("--step-wait", choices=STEP_WAITS,
                   help="how the fixed-step model waits: sleep (its core left free, as a "
                   "runner blocked on a GPU; the default) or spin (a busy wait, as a runner "
                   "polling a GPU; step-time's default)")
    p.add_argument("--model-preset", metavar="NAME",
                   help="shape of the torch and emulated models: "
                   + ", ".join(TORCH_PRESETS) + " (default: cpu for torch, "
                   + EMULATED_DEFAULT_PRESET + " for emulated)")
    p.add_argument("--torch-threads", type=_int_in(1, 1024), metavar="N",
                   help="torch threads in the runner process (default 1)")
    p.add_argument("--device", choices=DEVICES,
                   help="torch model device (default auto: cuda when available)")
    p.add_argument("--attention", choices=ATTENTION_BACKENDS, help=(
        "torch model's decode attention over the paged KV cache: gather (copies each "
        "request's blocks, the reference), flex (flex_attention reading the cache in "
        "place), varlen (FlashAttention's paged kernel, CUDA only); default auto: flex on "
        "CUDA, gather on CPU"))
    p.add_argument("--cuda-graphs", action="store_true", help=(
        "torch model on CUDA: replay decode steps from CUDA graphs captured at start-up "
        "per batch-size bucket (powers of two up to --max-num-seqs; needs --attention "
        "flex or varlen)"))
    p.add_argument("--cuda-graph-sizes", type=_batch_sizes, metavar="B[,B...]",
                   help="batch sizes decode steps are padded to with --attention flex or "
                   "varlen (graphs, and flex's one compile per size; gather does not pad "
                   "and refuses them); whole numbers, each once; the largest must be at "
                   "least --max-num-seqs (default: powers of two up to it)")
    p.add_argument("--roofline", nargs="?", const="on", choices=ROOFLINE_SETTINGS,
                   help="torch model only: measure the device's copy bandwidth and matmul "
                   "rate at start-up and report each step's roofline time and the case's "
                   "compute / roofline ratio; --roofline alone is on (default auto: on with "
                   "CUDA, off on CPU)")


#: ``--num-blocks``'s help past its range.
def _add_scheduler_options(p: argparse.ArgumentParser) -> None:
    """``SCHEDULER_OVERRIDES``, one option each, in their own help group."""
    g = p.add_argument_group("scheduler limits (override the scenario's SchedulerConfig)")
    for name, (lo, hi, note) in SCHEDULER_OVERRIDES.items():
        g.add_argument("--" + name.replace("_", "-"), type=_int_in(lo, hi), metavar="N",
                       help=f"vLLM's {name} ({lo} to {hi:,}{note})")


def _add_repetition_options(p: argparse.ArgumentParser) -> None:
    """Repetitions and the paired comparison of the arms."""
    p.add_argument("--repeat", type=_int_in(1, 1000),
                   help="repetitions of each case (default 1; overhead: 8 when --repeat is "
                   "not given, and at least 2; soak: 1 only, it runs one case); the arms "
                   "of a repetition run next to each other, their orders counterbalanced "
                   "over the repetitions (seeded by --order-seed); with 2 or more the "
                   "summary "
                   "compares the arms with paired 95 %% intervals, verdicts Holm-adjusted "
                   "over the timed metrics")
    p.add_argument("--order-seed", type=_int_in(0, MAX_SEED), metavar="N",
                   help="seed of the arms' counterbalanced orders over the repetitions "
                   "(--repeat 2 or more; default: the --seed value, so the same --seed "
                   "gives the same orders); it draws other orders of the same cases, the workload and "
                   "model left as --seed makes them, so a rerun with another order seed "
                   "stays comparable with the first; refused where it orders nothing: "
                   "one repetition, one arm per workload and codec, overhead (its arms "
                   "alternate) and soak (one case)")
    p.add_argument("--aa", action="store_true",
                   help="A/A run: one policy (--policies, default send) against a copy of "
                   "itself, labelled e.g. send and send'")
    p.add_argument("--ci-method", choices=METHODS, default="t",
                   help="interval of the paired comparisons: t (t-interval on log ratios, "
                   "default, >= 2 pairs), bootstrap (percentile bootstrap of the median, "
                   ">= 34 pairs) or sign (distribution-free sign-test interval of the "
                   "median, >= 6 pairs); with fewer pairs no verdict is given")


def _add_case_options(p: argparse.ArgumentParser) -> None:
    """Request ids and vocabulary, baselines, timeouts and what is printed."""
    p.add_argument("--req-id-format", choices=REQ_ID_FORMATS, default="cmpl",
                   help="request ids: cmpl (cmpl-<32 hex>-0, default), chatcmpl "
                   "(chatcmpl-<32 hex>) or numeric (0, 1, ...)")
    p.add_argument("--vocab-size", type=_int_in(2, 2**31 - 1), metavar="N",
                   help="vocabulary size of prompts and sampled ids (default 128256)")
    p.add_argument("--token-ids", metavar="uniform|zipf|hist:PATH", default=None,
                   help="distribution of prompt ids and of the null, fixed-step and emulated "
                   "models' sampled ids: uniform (default), zipf (rank-frequency exponent "
                   "1, id = rank) or hist:PATH (CSV of token_id,count lines); "
                   "ipc_bench/engine/token_ids.py")
    p.add_argument("--no-floor", dest="floor", action="store_false",
                   help="skip the floor (bare exchange) baseline")
    p.add_argument("--no-single-process", dest="single_process", action="store_false",
                   help="skip the single-process (no IPC) baseline cases")
    p.add_argument("--peer-timeout", metavar="S", default=10.0,
                   type=_float_in(MAX_TIMEOUT_S, MIN_PEER_TIMEOUT_S,
                                  f"the waits check for a reply and the peer in "
                                  f"{MIN_PEER_TIMEOUT_S:g} s slices, so a shorter timeout "
                                  f"cannot be honoured"),
                   help="seconds to wait for the other process's reply to a step before "
                   "failing the case (default 10, at least %g: the waits run in %g s "
                   "slices, so a timeout fires up to two slices after it; at most %g, 24 h; "
                   "raise it for a large model on CPU)"
                   % (MIN_PEER_TIMEOUT_S, MIN_PEER_TIMEOUT_S, MAX_TIMEOUT_S))
    p.add_argument("--startup-timeout", default=120.0, metavar="S",
                   type=_float_in(MAX_TIMEOUT_S, MIN_PEER_TIMEOUT_S,
                                  f"the waits check for the runner in {MIN_PEER_TIMEOUT_S:g} "
                                  f"s slices, so a shorter timeout cannot be honoured"),
                   help="seconds allowed for the runner's start-up and first "
                   "step: imports, model load, CUDA init (default 120, at least %g, at "
                   "most %g: 24 h)" % (MIN_PEER_TIMEOUT_S, MAX_TIMEOUT_S))
    p.add_argument("--input-oracle-interval", type=_int_in(0, MAX_STEPS), default=128,
                   metavar="N", help="steps between two checks of the token ids the runner "
                   "fed (default 128; 0 turns the input oracle off, which the summary and "
                   "tables then state)")
    p.add_argument("--no-hostname", action="store_true", help="leave the hostname out of results")
    p.add_argument("--quiet", action="store_true", help=(
        "print only the final tables; the per-case warnings stay in summary.json, and "
        "one line after the tables says how many"))
