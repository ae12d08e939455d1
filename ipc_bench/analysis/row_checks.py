"""Checks of a run folder's CSV rows against its ``summary.json`` cases, for
``results.load``: rows no run writes (``_impossible_steps``, ``_impossible_requests``,
``_impossible_itl``), files with fewer or more rows than a case counts
(``_short_steps``, ``_surplus_rows``...), and each case's recorded figures against
its rows (``_disagreeing_cases``, ``_checked_frontend``, ``_checked_latencies``). It
reads the files with ``run_files`` and takes the case checks' numbers from
``metadata_checks``; ``results`` calls it.

Each case's ``summary.json`` figures are recomputed from its counted ``steps.csv`` rows
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
disagrees is left out whole with one warning naming the figure and both values.
"""

from __future__ import annotations

import numbers
import os
from pathlib import Path
from typing import Any

from ipc_bench.analysis.frames import frame_records
from ipc_bench.analysis.metadata_checks import MAX_CASE_VALUE, _as_number, _figure
from ipc_bench.analysis.run_files import (REQUESTS_NAMED, ResultsError, _BOOL_COLUMNS,
                                          _STR_COLUMNS, _concat, _header_names, _read_csv,
                                          _shown, records)
from ipc_bench.engine.config import SEND
from ipc_bench.harness.run_folder import CASE_KEYS, FRONTEND_CSV
from ipc_bench.harness.spec import RUNNER_COLUMNS, RUNNER_TIMESTAMP_COLUMNS, SCHED_COLUMNS


#: Columns of ``steps.csv`` that hold a count, a time or a size: never negative.
_NONNEGATIVE_STEP_COLUMNS = tuple(c for c in SCHED_COLUMNS + RUNNER_COLUMNS
                                  if c not in _BOOL_COLUMNS)


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
    bad = skip & False
    present = [c for c in REQUEST_STEP_COLUMNS if c in df]
    if _steps_in_order(df, present):  # no row to say: the checks below find none
        return bad
    ids = df["case_id"].astype(str)
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


def _steps_in_order(df, present: list[str]) -> bool:
    """Whether no row of ``df`` (``requests.csv``'s, each one, skipped or not) has a
    logical step of ``present`` (``REQUEST_STEP_COLUMNS``) below -1, or one that
    happened before an earlier one of the list: ``_step_order_rows``' checks on the
    whole file at once, in numpy, as a file no one edited passes them. False where a
    column is not numbers (the checks then say what they find)."""
    import numpy as np

    try:
        steps = [df[c].to_numpy(dtype=float) for c in present]
    except (TypeError, ValueError):
        return False
    with np.errstate(invalid="ignore"):  # NaN: no step recorded, never wrong
        if any((v < -1).any() for v in steps):
            return False
        return not any(((first >= 0) & (then >= 0) & (then < first)).any()
                       for i, then in enumerate(steps) for first in steps[:i])


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
    a negative, infinite or too large ``itl_s`` (a gap between two steps that gave a
    request tokens: never negative, never longer than its case's ``wall_s`` in
    ``cases``, nor than its request's ``e2e_s - ttft_s`` in ``requests``, which its
    gaps sum to;
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
    ``None`` when none does. First, in any case, a flag (``STEP_FLAGS``) without a
    value in some rows (blanked by hand; NaN would read as 1): ``PATH: case 'ID' has 2
    of its 25 rows without a counted value (blank or not a number; left out)``."""
    import numpy as np

    for flag in STEP_FLAGS:
        blank = int(rows[flag].isna().sum()) if flag in rows else 0
        if blank:
            return (f"{path}: case {str(case['case_id'])!r} has {blank:,} of its "
                    f"{len(rows):,} rows without a {flag} value (blank or not a number; "
                    "left out)")
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
        why = rows = mine = None
        if rows_known:
            rows = steps[ids == str(case["case_id"])].reset_index(drop=True)
            if len(rows):
                why = (_rows_identity_problem(case, rows, run_dir / "steps.csv")
                       or _step_problem(case, rows, run_dir / "steps.csv"))
        if req_ids is not None:  # the case's requests.csv rows, for each check below
            mine = requests[req_ids == str(case["case_id"])]
        if why is None and mine is not None:
            why = _rows_identity_problem(case, mine, run_dir / "requests.csv")
        why = why or _rate_problem(case, run_dir / "summary.json")
        if why is None and mine is not None:
            why = (_wall_rate_problem(case, mine, run_dir / "summary.json")
                   or _request_count_problem(case, mine, run_dir / "requests.csv"))
        if why is None and rows is not None:
            why = (_wall_problem(case, rows, run_dir / "summary.json")
                   or _waiting_problem(case, rows, run_dir / "steps.csv"))
        if why is None and mine is not None:  # after the wall time's own check
            why = _pace_problem(case, mine, run_dir / "summary.json")
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
    # the three columns read alone: a case's other hundred are not made records
    read = cases.loc[:, cases.columns.isin(["case_id", "rows_not_written", "steps_kept_in"])]
    for case in frame_records(read) if "case_id" in cases else ():
        lost = case.get("rows_not_written")
        if isinstance(case.get("steps_kept_in"), str) and not isinstance(lost, dict) \
                or isinstance(lost, dict) and name in lost:
            out.add(str(case["case_id"]))
    return out


def _short_itl(itl, requests, cases) -> str:
    """``_short_rows``' words on ``itl`` (``itl.csv``'s rows) when a case of ``cases``
    (summary entries) that records ITL figures (``itl_ms_*``) has fewer rows than its
    ``requests.csv`` rows (``requests``) give, ``n - 1`` gaps for a request of ``n``
    output tokens (``recording.request_record``), or, run with drafts, than its
    ``itl_count`` (``_itl_counted``), else ''; a case whose writes failed
    (``_unwritten``) is not counted."""
    if not {"case_id", "num_output_tokens"} <= set(requests.columns) or not len(cases):
        return ""
    gone = _unwritten(cases, "itl.csv") | _unwritten(cases, "requests.csv")
    counted = _itl_counted(cases)
    want = {c: n for c, n in itl_wanted(requests, cases).items() if c not in gone}
    lines = (_short_rows(itl, {c: n for c, n in want.items() if c not in counted},
                         "requests.csv counts", "n - 1 for a request of n output tokens"),
             _short_rows(itl, {c: n for c, n in want.items() if c in counted},
                         "summary.json counts", "itl_count: with drafts one gap per step "
                         "after a request's first that gave it tokens"))
    return "; ".join(line for line in lines if line)


def _itl_counted(cases) -> dict[str, int]:
    """Case id -> its ``itl_count``, for each case of ``cases`` (summary entries) run
    with drafts (``num_spec_tokens`` above 0): its ``itl.csv`` rows, one gap per step
    after a request's first that gave it tokens (``recording.request_record``), which
    ``requests.csv`` does not give (a step may give a request several tokens). A run
    written before ``itl_count`` has none, and ``n - 1`` gaps per request, a 0-s one
    for each extra token a step gave: ``itl_wanted`` counts those."""
    drafts = {c for c, k in _case_values(cases, "num_spec_tokens").items() if k > 0}
    return {c: int(n) for c, n in _case_values(cases, "itl_count").items() if c in drafts}


def itl_wanted(requests, cases, per_token: bool = False) -> dict[str, int]:
    """Case id -> the ``itl.csv`` rows its ``requests`` rows give, ``n - 1`` gaps for a
    request of ``n`` output tokens (``recording.request_record``), or, for a case run
    with drafts, its ``itl_count`` (``_itl_counted``; unless ``per_token``: then
    ``n - 1`` for every case, the most a request may have), for each case of ``cases``
    (summary entries, in their order) that records ITL figures; ``{}`` without the
    columns."""
    if not {"case_id", "num_output_tokens"} <= set(requests.columns) or not len(cases):
        return {}
    tokens = requests["num_output_tokens"].astype(float)
    gaps = (tokens - 1).clip(lower=0).where(tokens == tokens, 0)
    per_case = gaps.groupby(requests["case_id"].astype(str), observed=True).sum()
    counted = {} if per_token else _itl_counted(cases)
    return {str(c["case_id"]): counted.get(str(c["case_id"]),
                                           int(per_case.get(str(c["case_id"]), 0)))
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
    theirs: ``_impossible_latencies`` leaves them out), or, run with drafts, more gaps
    than its ``itl_count`` (``_itl_counted``)."""
    need = {"case_id", "index"}
    if not (need <= set(itl.columns) and need | {"num_output_tokens"} <= set(requests.columns)
            and len(itl)):
        return set(), []
    asked, by_count = _case_values(cases, "num_requests"), _itl_counted(cases)
    over, lines = set(), []
    for case_id, want in itl_wanted(requests, cases, per_token=True).items():
        mine = requests[requests["case_id"].astype(str) == case_id]
        tokens = mine["num_output_tokens"].astype(float)
        wanted = dict(zip(_index_keys(mine["index"]), (tokens - 1).clip(lower=0).fillna(0)))
        have = _index_keys(itl.loc[itl["case_id"].astype(str) == case_id, "index"]
                           ).value_counts()
        whole = asked.get(case_id) == len(mine)
        if any(n > wanted.get(i, 0) for i, n in have.items() if whole or i in wanted):
            over.add(case_id)
            counted = int(have.sum() if whole else have[have.index.isin(list(wanted))].sum())
            lines.append(f"{path}: case {case_id!r} has {_rows(counted)}, more than the "
                         f"{want:,} gaps its requests.csv rows give (n - 1 for a request "
                         "of n output tokens; its rows left out)")
        elif whole and case_id in by_count and int(have.sum()) > by_count[case_id]:
            over.add(case_id)
            lines.append(f"{path}: case {case_id!r} has {_rows(int(have.sum()))}, more "
                         f"than the {by_count[case_id]:,} gaps summary.json counts "
                         "(itl_count: with drafts one gap per step after a request's "
                         "first that gave it tokens; its rows left out)")
    return over, lines


def _index_keys(index):
    """A ``requests.csv`` or ``itl.csv`` ``index`` column as numbers (a request written
    ``0.0`` is request ``0``, as ``_request_keys`` reads it), ``NaN`` where one is not."""
    import pandas as pd

    return pd.to_numeric(index, errors="coerce")


def _has_itl(cases: list[dict[str, Any]]) -> bool:
    """Whether a case of ``cases`` (summary entries) records ITL figures
    (``itl_ms_*``: a timed replay's or a soak's), whose gaps ``itl.csv`` holds."""
    return any(k.startswith("itl_ms_") and v is not None and v == v
               for c in cases for k, v in c.items())


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


def _impossible_latencies(requests, itl, cases, run_dir: Path):
    """``requests`` and ``itl`` (``requests.csv`` and ``itl.csv``'s rows) without the
    rows no run writes (``_impossible_requests``; the gaps of the requests it left out,
    ``_gaps_of_requests_left_out``; ``_impossible_itl``, whose gaps are checked against
    the requests kept), the lines naming them, and those gaps of the requests left out
    (``itl.csv``'s rows as written). ``cases`` (summary entries) holds only cases whose
    ``wall_s`` agrees with their steps (``_disagreeing_cases``): a time is checked
    against it."""
    requests, lines = _without_blank(requests, ("index",), run_dir / "requests.csv")
    itl, more = _without_blank(itl, ("index", "itl_s"), run_dir / "itl.csv")
    lines += more
    read = requests
    requests, more = _impossible_requests(requests, cases, run_dir / "requests.csv")
    lines += more
    kept, gone = _gaps_of_requests_left_out(itl, read, requests, run_dir / "itl.csv")
    orphans = itl.iloc[0:0] if len(kept) == len(itl) else itl[~itl.index.isin(kept.index)]
    itl, more = _impossible_itl(kept.reset_index(drop=True), requests, cases,
                                run_dir / "itl.csv")
    return requests, itl, lines + gone + more, orphans


def _without_blank(df, columns: tuple[str, ...], path: Path):
    """``df`` (``requests.csv``'s or ``itl.csv``'s rows) without the rows whose field in
    one of ``columns`` is empty (``index``, which names the request; ``itl_s``, the gap
    itself: no run writes either empty), and one line per column naming how many
    (``RUN/itl.csv: 1 row has no index (left out)``). A value that is not a number was
    left out before, with its own line; an empty one reads as missing, which other
    columns allow (a rejected request has no ``ttft_s``)."""
    import pandas as pd

    if len(df) == 0:
        return df, []
    gone = pd.Series(False, index=df.index)
    lines = []
    for column in columns:
        if column not in df:
            continue
        blank = df[column].isna() & ~gone
        if blank.any():
            n = int(blank.sum())
            lines.append(f"{path}: {_rows(n)} {'has' if n == 1 else 'have'} no {column} "
                         "(left out)")
            gone |= blank
    return (df[~gone].reset_index(drop=True) if gone.any() else df), lines


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
    than summary.json counts in requests.csv or itl.csv (said above)``). Returns
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
                   "summary.json counts in requests.csv or itl.csv (said above)"
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
    ``n - 1`` gaps (n its ``num_output_tokens``; ``_short_itl``), or, run with drafts,
    its ``itl_count`` (``_itl_counted``)."""
    n = _figure(case, "num_requests")
    if n is None or len(rows) != n or "num_output_tokens" not in rows:
        return False
    count = _figure(case, "itl_count")
    if (_figure(case, "num_spec_tokens") or 0) > 0 and count is not None:
        return len(gaps) == int(count)
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
