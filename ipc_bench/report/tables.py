"""Plain-text tables of case summaries for the terminal.

A table is a tuple of summary keys: the identity fields (``IDENTITY``: policy, codec,
transport, shown as recorded) and metrics of the registry
(``ipc_bench.analysis.metrics.METRICS``), each shown by its ``Metric.cell`` under its
``Metric.header`` (``-`` when the summary lacks the key). ``CASE_TABLE`` is the per-case
table every run prints (and the report's case tables), ``LATENCY_TABLE`` the timed
replays' latency table.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Optional, Sequence

import numpy as np

from ipc_bench.analysis import cores
from ipc_bench.analysis.metrics import metric
from ipc_bench.analysis.pace import is_missing
from ipc_bench.analysis.results import case_unfinished
from ipc_bench.analysis.stats import (ARRIVAL_BOUND, ARRIVAL_BOUND_KEYS, COMPARED_KEYS,
                                      DETECTABLE, EXACT, INCONCLUSIVE_HOLM,
                                      INTERVAL_NAMES, min_pairs, NOT_SIGNIFICANT_HOLM,
                                      SCHEDULE_BOUND_KEYS, SCHEDULES_DIFFER, arrival_bound,
                                      arm_cell, arms_by_repetition, diff_disagrees,
                                      interval_end, paired_ratio, point_text,
                                      performed,
                                      ratio_interval, ratio_phrase, schedule_bound,
                                      schedules_differ,
                                      token_ids_bytes, unadjusted_excludes_one,
                                      unreachable_note, verdict_of)
from ipc_bench.analysis.summary import no_counted_steps_warning
from ipc_bench.engine.config import CACHED, DEFAULT_VLLM_LAYOUT, SEND
from ipc_bench.engine.pipeline import DIRECT
from ipc_bench.harness.spec import INPROC
from ipc_bench.report.render import code_span

#: The line under a table with ``overhead``'s bare-loop cases, whose cells are ``-``.
BARE_LOOP_NOTE = ("totals: the bare loop (instrumentation totals) records no step, so its "
                  "cells are '-'; its loop time per step is in the instrumentation overhead "
                  "lines")

#: The identity fields every table starts with, shown as recorded under their own name.
IDENTITY = ("policy", "codec", "transport")
CASE_TABLE = IDENTITY + (
    "num_steps", "output_tokens_per_s", "floor_output_tokens_per_s", "step_to_floor_ratio",
    "sched_to_runner_payload_bytes_per_step", "runner_to_sched_payload_bytes_per_step",
    "decode_token_bytes_per_step", "prompt_chunk_bytes_per_step",
    "build_ns_per_step", "encode_ns_per_step", "decode_ns_per_step", "step_ns_mean",
)
#: The metrics of the one-line cached / send ratios under each case table.
RATIO_METRICS = ("output_tokens_per_s", "sched_to_runner_payload_bytes_per_step",
                 "build_ns_per_step", "encode_ns_per_step", "decode_ns_per_step",
                 "step_ns_mean")


#: The ``output_tokens_per_s`` header of a timed replay's table: there it is every
#: request's output tokens over wall time (``metrics.OUTPUT_TOKENS_MEANING``), not over
#: the busy time of the counted steps as ``out tok/s`` elsewhere.
WALL_TOKENS_HEADER = "out tok/s (wall)"
#: After the name of a timed replay's tokens/s wherever that figure is printed: its
#: case table's column (``WALL_TOKENS_HEADER``), its ratio line (``tok/s (wall)``), the
#: comparison block's row and the report's pair table (``output tokens/s (wall)``).
WALL = " (wall)"


def tokens_name(key: str, name: str, timed: bool) -> str:
    """``name``, the printed name of metric ``key``, with ``WALL`` after it where
    ``key`` is ``output_tokens_per_s`` of a timed replay (``timed``, ``is_timed``):
    there it is over wall time, first arrival to last completion."""
    return name + WALL if timed and key == "output_tokens_per_s" else name
#: Under a timed replay's table: what its ``out tok/s (wall)`` column shows.
WALL_TOKENS_NOTE = (
    "out tok/s (wall): a timed replay's output tokens, warm-up included, over wall time, "
    "first arrival to last completion (arrival-bound where the arrivals set the pace, "
    "load-bound where requests queued and kept the engine busy: the note under the "
    "latency table says which); over the busy time of its counted steps, as out "
    "tok/s elsewhere, it is busy_output_tokens_per_s in summary.json")


def header(keys: Sequence[str], timed: bool = False) -> list[str]:
    """Column headers of a table of ``keys`` (identity fields under their own name); a
    table of timed replays (``timed``, ``is_timed``) heads ``output_tokens_per_s``
    ``WALL_TOKENS_HEADER``."""
    return [k if k in IDENTITY else WALL_TOKENS_HEADER
            if timed and k == "output_tokens_per_s" else metric(k).header for k in keys]


def is_timed(summaries: Iterable[dict[str, Any]]) -> bool:
    """Whether a case of ``summaries`` is a timed replay (``trace_speedup`` set: not
    ``None`` nor NaN, a ``Results.cases`` record's empty cell), whose
    ``output_tokens_per_s`` is over wall time."""
    return any(s.get("trace_speedup") is not None and s.get("trace_speedup") == s.get(
        "trace_speedup") for s in summaries)


def arm_label(summary: dict[str, Any]) -> Any:
    """What a table shows under ``policy``: the case's arm, as the summary labels it
    (``send'``, the second copy of an A/A pair; ``cached+async`` beside its synchronous
    twin; ``direct``, a ``--pp`` case's direct path), else its policy (``None`` when it
    has neither)."""
    return summary.get("arm") or summary.get("policy")


def cells(summary: dict[str, Any], keys: Sequence[str] = CASE_TABLE,
          model: bool = False) -> list[str]:
    """One table row: ``summary``'s values of ``keys`` (see the module docstring),
    ``-`` for a missing or ``None`` value; under ``policy`` each case shows its arm
    (``arm_label``: ``send'`` of an A/A pair, ``cached+async``); with ``model``, its
    codec the model after it (``model_words``: ``msgpack, emulated model``), as the
    report's tables name it. A ``--tp`` / ``--pp``
    case with fewer than N + 2 cores shows ``-`` for every timing and ``*`` after its
    transport (``analysis.cores``; ``cores.footnote`` says why); one whose timings are
    shown on N + 1 cores (N = 1) shows ``°`` there (``cores.marked_footnote``)."""
    out = []
    hide = cores.is_withheld(summary)
    shared = not hide and cores.is_marked(summary)
    for key in keys:
        value = summary.get(key)
        if key == "policy":
            value = arm_label(summary)
        if key in IDENTITY:
            mark = cores.MARK if hide and key == "transport" else ""
            if shared and key == "transport":
                mark = cores.SHARED_MARK
            if key == "codec" and model and value is not None:
                mark = model_words(summary.get("model"))
            out.append("-" if value is None else f"{value}{mark}")
        elif (hide and metric(key).unit in cores.TIMING_UNITS) \
                or not performed(key, summary.get("codec")) \
                or (key == "num_steps" and summary.get("instrumentation") == "totals"):
            # withheld, nothing the case does (single process: no bytes), or a bare
            # loop's steps, which it runs but does not record (BARE_LOOP_NOTE)
            out.append("-")
        elif key == FLOOR_RATIO and floor_below_one(value):
            out.append(floor_ratio_cell(value) + FLOOR_MARK)
        else:
            out.append(metric(key).cell(value))
    return out


def floor_ratio_cell(value: float) -> str:
    """An ``x floor`` below 1 as its cell: two decimals, or three, rounded down, where
    two would read ``1.00`` beside the mark that says it is below 1 (``0.995``)."""
    text = metric(FLOOR_RATIO).cell(value)
    return text if float(text) < 1 else f"{math.floor(value * 1000) / 1000:.3f}"


#: The ``x floor`` column and the mark after a value below 1 (``FLOOR_BELOW_ONE_NOTE``).
FLOOR_RATIO = "step_to_floor_ratio"
FLOOR_MARK = "!"
#: Under a table where a synchronous case's ``x floor`` is below 1 (marked ``!``).
FLOOR_BELOW_ONE_NOTE = (
    "!: x floor below 1, the floor (the same messages exchanged bare, less work) ran "
    "slower than the case: that case's overhead over the floor is noise; its warning "
    "says so")
#: Under a table where an async case's ``x floor`` is below 1 (marked ``!``).
FLOOR_BELOW_ONE_ASYNC_NOTE = (
    "!: x floor below 1, the floor replays the frames one at a time while that async "
    "case overlapped its steps: its x floor is not the harness's overhead; its warning "
    "says so")
#: Under a table where cases of both kinds have an ``x floor`` below 1.
FLOOR_BELOW_ONE_BOTH_NOTE = (
    "!: x floor below 1: for a synchronous case, the floor (the same messages exchanged "
    "bare, less work) ran slower than the case, so its overhead over the floor is noise; "
    "for an async case, the floor replays the frames one at a time while the case "
    "overlapped its steps, so its x floor is not the harness's overhead; each case's "
    "warning says which")


def floor_below_one_note(cases: Iterable[dict[str, Any]]) -> Optional[str]:
    """The note under a table whose marked cases (an ``x floor`` below 1, timings not
    withheld) are those of ``cases``: it speaks of synchronous cases, async ones
    (``async_scheduling``) or both, as the marked cases are; ``None`` when no case is
    marked."""
    marked = [s for s in cases if floor_below_one(s.get(FLOOR_RATIO))
              and not cores.is_withheld(s)]
    kinds = {bool(s.get("async_scheduling")) for s in marked}
    if not kinds:
        return None
    if kinds == {True}:
        return FLOOR_BELOW_ONE_ASYNC_NOTE
    return FLOOR_BELOW_ONE_NOTE if kinds == {False} else FLOOR_BELOW_ONE_BOTH_NOTE


#: Under a table whose floor columns are empty because its cases are timed replays.
TIMED_NO_FLOOR_NOTE = (
    "floor tok/s, x floor: - for a timed replay, which runs no floor (the floor replays the "
    "recorded steps back to back; a timed replay's steps wait for arrivals)")


def model_steps(cases: Iterable[dict[str, Any]]) -> Optional[str]:
    """The model steps that ``cases`` with an ``x floor`` (``step_to_floor_ratio``) ran
    and the floor does not (it replays the frames with no model), in words: ``"the
    fixed-step model's 2 ms step"``, ``"the fixed-step model's 2, 5 and 20 ms steps and
    the torch model's forward"``; ``None`` when every such case ran the null model (its
    ``x floor`` is then the harness's logic over the bare exchange)."""
    fixed_ms, others = [], []
    for s in cases:
        model, ratio = s.get("model"), s.get(FLOOR_RATIO)
        if not isinstance(model, str) or model == "null" \
                or not isinstance(ratio, (int, float)) or ratio != ratio:
            continue
        ms = s.get("fixed_step_ms")
        if model == "fixed-step" and isinstance(ms, (int, float)) and ms == ms:
            fixed_ms.append(s["fixed_step_ms"])
        elif model not in others:  # a fixed-step case without its step: unnamed
            others.append(model)
    parts = []
    if fixed_ms:
        ms = [f"{m:g}" for m in sorted(set(fixed_ms))]
        listed = ms[0] if len(ms) == 1 else ", ".join(ms[:-1]) + " and " + ms[-1]
        parts.append(f"the fixed-step model's {listed} ms step{'' if len(ms) == 1 else 's'}")
    parts += [f"the {m} model's {'forward' if m == 'torch' else 'step'}" for m in others]
    return " and ".join(parts) or None


def model_floor_note(cases: Iterable[dict[str, Any]]) -> Optional[str]:
    """The note under a table whose cases ran a model that waits or computes
    (``model_steps``): their ``x floor`` includes that model's step, which the floor
    does not run; ``None`` for the null model."""
    steps = model_steps(cases)
    if steps is None:
        return None
    return ("x floor: the case's step over the floor's, which runs no model: it includes "
            f"{steps}, so it is not the harness's overhead alone")


def timed_without_floor(summaries: Iterable[dict[str, Any]]) -> bool:
    """Whether a case of ``summaries`` is a timed replay (``trace_speedup`` set) with no
    floor figures, so that its floor columns show ``-`` (``TIMED_NO_FLOOR_NOTE``)."""
    return any(s.get("trace_speedup") is not None
               and s.get("floor_output_tokens_per_s") is None for s in summaries)


#: Under a table whose floor columns are empty because its cases ran with --no-floor.
NO_FLOOR_NOTE = ("floor tok/s, x floor: - for a two-process case run with --no-floor, "
                 "which replays no floor")
#: Scenarios whose cases never run a floor (``scenarios/overhead``, ``scenarios/soak``;
#: a ``--pp`` case neither, ``harness.pp_case``), so that their ``-`` is not
#: ``--no-floor``'s: read only for a case whose summary predates its ``no_floor``
#: record (``ran_with_no_floor``).
FLOORLESS_SCENARIOS = ("overhead", "soak", "pp")


def ran_with_no_floor(summary: dict[str, Any]) -> bool:
    """Whether the case of ``summary`` (a ``summary.json`` case entry) is a two-process
    case that counted steps and has no floor figures because its run was given
    ``--no-floor``. Its ``no_floor`` (``CaseSpec.no_floor``: true only for a case
    that would have run a floor without that option) says so; a summary written
    before it was recorded (no ``no_floor``, or none in a table loaded beside newer
    runs: ``None`` or NaN) is inferred from the case's settings instead: a
    two-process case that is no timed replay (``TIMED_NO_FLOOR_NOTE``), no ``--pp``
    case and of a scenario that runs a floor (not ``FLOORLESS_SCENARIOS``)."""
    if not summary.get("num_steps") or summary.get("floor_output_tokens_per_s") is not None:
        return False
    recorded = summary.get("no_floor")
    if isinstance(recorded, (bool, np.bool_)):
        return bool(recorded)
    return (summary.get("transport") != INPROC and summary.get("trace_speedup") is None
            and (is_missing(summary.get("pp")) or not summary.get("pp"))
            and summary.get("scenario") not in FLOORLESS_SCENARIOS)


def without_floor_note(summaries: Iterable[dict[str, Any]]) -> Optional[str]:
    """``NO_FLOOR_NOTE`` when a case of ``summaries`` has empty floor columns because
    its run was given ``--no-floor`` (``ran_with_no_floor``). The single-process case
    (``inproc``) never has one, which the note adds when the table shows one;
    ``None`` otherwise."""
    cases = [s for s in summaries if not cores.is_withheld(s)]
    if not any(ran_with_no_floor(s) for s in cases):
        return None
    inproc = any(s.get("transport") == INPROC for s in cases)
    return NO_FLOOR_NOTE + ("; the single-process case (inproc) never has one" if inproc
                            else "")


def floor_below_one(value: Any) -> bool:
    """Whether ``value`` is an ``x floor`` (``step_to_floor_ratio``) below 1."""
    return isinstance(value, (int, float)) and value == value and value < 1


def render(header: list[str], rows: list[list[str]], left: int = 3) -> str:
    """``header``, a dashed rule and ``rows`` as text columns two spaces apart, each as
    wide as its widest cell: the first ``left`` columns left-aligned, the others
    right-aligned. Every row has ``len(header)`` cells; ``rows`` may be empty."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]

    def line(row):
        return "  ".join(c.rjust(w) if i >= left else c.ljust(w)
                         for i, (c, w) in enumerate(zip(row, widths)))
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def _table(keys: Sequence[str], summaries: list[dict[str, Any]]) -> str:
    """``keys`` of ``summaries`` as a table, led by a ``rep`` column (the repetition)
    when any of them is past repetition 0, so the rows of one case repeated tell apart."""
    head = header(keys, is_timed(summaries))
    if not any(s.get("repetition") for s in summaries):
        return render(head, [cells(s, keys, model=True) for s in summaries])
    return render(["rep"] + head,
                  [[str(s.get("repetition", "-"))] + cells(s, keys, model=True)
                   for s in summaries],
                  left=1 + len(IDENTITY))


def format_tables(summaries: Iterable[dict[str, Any]], method: str = "t") -> str:
    """One table per (scenario, workload) of ``CASE_TABLE`` under a head naming the
    runner's device (and the null model, ``null_head``) (bytes per counted step, µs
    per counted step, tok/s, headed ``WALL_TOKENS_HEADER`` for timed replays; with
    repetitions a ``rep`` column first), the notes on its floor columns (an ``x floor``
    below 1, a timed replay's or ``--no-floor``'s missing floor, a model's step inside
    ``x floor``) and a timed replay's wall-time tok/s, notes on rejected requests and incomplete cases (``complete`` false: left out of the table,
    the tables under it and the ratios, one ``INCOMPLETE`` line each saying why), then
    per codec the cached / send (and, for ``pp``, direct / send) paired ratios over
    repetitions with their intervals by ``method`` (the run's ``--ci-method``), by arm
    (``_ratio_lines``: the ratios of ``format_comparisons`` and of the report's pair
    table). The text starts with the first table's title line, not a blank line (a
    run's first stdout line, ``| head -1``)."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for s in summaries:
        groups.setdefault((s["scenario"], s["workload"]), []).append(s)
    out = []
    for (scenario, workload), recorded in groups.items():
        if out:  # a blank line between groups, none before the first
            out.append("")
        out.append(f"{scenario}  [{workload}]  device={recorded[0].get('runner_device', '?')}"
                   + null_head(recorded) + layout_head(recorded))
        cases = [s for s in recorded if not case_unfinished(s)]
        failed = [s for s in recorded if case_unfinished(s)]
        out.append(_table(CASE_TABLE, cases) if cases else "  no case finished")
        for note in (cores.footnote(cases), cores.marked_footnote(cases)):
            if note:
                out.append(f"  {note}")
        floor_note = floor_below_one_note(cases)
        if floor_note:
            out.append(f"  {floor_note}")
        if timed_without_floor(cases):
            out.append(f"  {TIMED_NO_FLOOR_NOTE}")
        if is_timed(cases):
            out.append(f"  {WALL_TOKENS_NOTE}")
        no_floor = without_floor_note(cases)
        if no_floor:
            out.append(f"  {no_floor}")
        model_note = model_floor_note(cases)
        if model_note:
            out.append(f"  {model_note}")
        # "-" cells of a case that counted no step, said even under --quiet (which
        # drops the per-case warnings that say it too)
        for line in dict.fromkeys(no_counted_steps_warning(s) for s in cases
                                  if not s.get("num_steps")
                                  and s.get("instrumentation") != "totals"):
            out.append(f"  steps 0: {line}")
        if any(s.get("instrumentation") == "totals" for s in cases):
            out.append(f"  {BARE_LOOP_NOTE}")
        out.extend(f"  {line}" for line in (rejected_note(cases), cut_note(cases),
                                            preempted_note(cases)) if line)
        out.extend(model_time_lines(cases))
        unchecked = unchecked_note(cases)
        if unchecked:
            out.append(f"  {unchecked}")
        for s in failed:
            out.append(f"  INCOMPLETE {s['case_id']}: {s.get('error') or 'no reason recorded'} "
                       "(left out of this table and the ratios)")
        for codec in dict.fromkeys(s["codec"] for s in cases):
            out.extend(_ratio_lines(codec, [s for s in cases if s["codec"] == codec],
                                    method))
            out.extend(emulated_share_lines([s for s in cases if s["codec"] == codec],
                                            method))
    return "\n".join(out)


def emulated_share_lines(cases: list[dict[str, Any]], method: str = "t") -> list[str]:
    """Under a table of emulated cases (``--model emulated``), per workload and codec
    of ``cases`` with send/cached pairs, ``send's share [WORKLOAD] CODEC, emulated
    model: ...``: send - cached as a share of cached's step, the figures of the
    report's summary table and the words of its finding (``send_cost.step_shares``,
    ``steady_share_words``; by ``method``, the run's ``--ci-method``), the step marked
    as the emulated model's (``send_cost.emulated_words``); none where no case of the
    pairs ran the emulated model, or their timings are withheld (``cores``)."""
    from ipc_bench.analysis.send_cost import (emulated_words, record_step_shares,
                                              steady_share_words)

    timed = [s for s in cases if not cores.is_withheld(s) and s.get("transport") != INPROC]
    out = []
    for (workload, codec), shares in record_step_shares(timed, method).items():
        mine = [s for s in timed if (s.get("workload"), s.get("codec")) == (workload, codec)]
        emulated = emulated_words(mine)
        if emulated:
            out.append(f"  send's share [{workload}] {codec}, emulated model: "
                       + steady_share_words(shares, True, emulated))
    return out


def ratio_text(point: Optional[float], low: Optional[float] = None,
               high: Optional[float] = None) -> str:
    """A paired ratio as the terminal's ratio line and the report's pair table print it:
    ``0.884 [0.801, 0.975]``, the point alone without an interval, ``-`` without a
    point (``None`` or NaN); an interval end beyond 1000 or below 0.001 is bounded,
    ``0.920 [<0.001, >1000]`` (``stats.ratio_interval``); a point that 3 decimals
    would round onto 1 while it is not 1 gets more (``stats.point_text``): ``0.99998
    [0.99997, 0.99999]``, not ``1.000 [...]``."""
    if point is None or point != point:
        return "-"
    if low is None or high is None or low != low or high != high:
        return point_text(point, 3, 1.0)
    return f"{point_text(point, 3, 1.0)} {ratio_interval(low, high)}"


def ratio_line_head(name: str, where: str, n: int, interval: bool, method: str = "t",
                    base: str = SEND) -> str:
    """The start of a ratio line: ``cached/send (msgpack; paired by repetition: geometric
    mean of the per-repetition ratios [95 % Student-t interval]; 2 pairs)``; when the
    ratios have no interval (``interval`` false) it names no interval kind and ends
    ``1 pair, no interval`` (``stats.ratio_phrase``);
    ``base`` is the arm in the denominator (``send``, or ``cached`` for
    ``cached+async/cached``)."""
    count = f"{n} pair{'' if n == 1 else 's'}" + ("" if interval else ", no interval")
    return f"{name}/{base} ({where}; {ratio_phrase(method, interval=interval)}; {count})"


def ratio_arm_pairs(arms: Iterable[str]) -> list[tuple[str, str]]:
    """(base, arm) of each ratio line of a group of arms: ``cached`` and ``direct``
    against ``send``, each A/A copy against its arm (``send'/send``, ``--aa``) and the
    async arm against synchronous ``cached`` (``cached+async/cached``,
    ``--async-scheduling``), in that order; only pairs whose both arms are present."""
    from ipc_bench.harness.spec import ASYNC_ARM

    present = set(arms)
    out = [(SEND, a) for a in (CACHED, DIRECT)]
    out += [(a[:-1], a) for a in sorted(present) if a.endswith("'")]
    out.append((CACHED, ASYNC_ARM))
    return [(b, a) for b, a in out if b in present and a in present]


def _ratio_lines(codec: str, cases: list[dict[str, Any]], method: str = "t") -> list[str]:
    """The ``<arm>/<base>`` line of ``codec``'s cases for each pair of
    ``ratio_arm_pairs``: ``cached/send`` (PR #20291), in ``pp`` runs ``direct/send``,
    with ``--aa`` ``send'/send`` (and ``cached'/cached``), with ``--async-scheduling``
    ``cached+async/cached``: per metric of
    ``RATIO_METRICS`` the paired ratio over the repetitions both arms ran, with its
    interval (``stats.paired_ratio`` with ``method``: the statistic of the comparison
    block and of the report's pair table, named by ``ratio_line_head``). Arms, not
    policies, are compared (``stats.arms_by_repetition``), so an A/A copy (``send'``) or
    an async arm (``cached+async``) never joins another arm; cases of other transports
    or models are paired apart, each line naming its transport when there are several.
    Timing metrics are left out where a case's timings are withheld
    (``cores.is_withheld``; shown marked ``°``, the line is marked: ``_ratio_where``),
    metrics with a zero or negative value, which have no ratio, too, and so are those
    the codec does not perform (``stats.performed``: the single-process case's encode
    and decode, a few clock reads around no work). Where
    the arms ran different schedules (``stats.schedules_differ``: a timed replay, async
    against sync scheduling) the
    per-step metrics (``stats.SCHEDULE_BOUND_KEYS``) get no ratio, named once at the end
    (``s2r B, build, encode, decode, step - (schedules differ)``), and, against send,
    the line under says why (``schedules_differ_line``); tok/s stays compared. A timed
    replay's tok/s, over wall time, reads ``tok/s (wall)`` (``tokens_name``); where
    every case of the pair is a timed replay not all of which are load-bound
    (``stats.arrival_bound``) it gets no ratio either, ``tok/s (wall) -
    (arrival-bound)``: it follows the trace's arrivals, no throughput figure."""
    groups = arms_by_repetition(cases, ("transport", "model"))
    several = len(groups) > 1
    out = []
    for (transport, model), arms in groups.items():
        for base, name in ratio_arm_pairs(arms):
            send, other = arms.get(base), arms.get(name)
            reps = sorted(set(send or ()) & set(other or ()))
            if not reps:
                continue
            hide = any(cores.is_withheld(arm[r]) for arm in (send, other) for r in reps)
            # other batches (a timed replay): no per-step ratio is the policy's
            differ = schedules_differ((send[r], other[r]) for r in reps)
            timed = is_timed([send[r] for r in reps] + [other[r] for r in reps])
            # a timed replay its arrivals paced: its tok/s (wall) is no
            # throughput figure, so it gets no ratio either
            arrival = arrival_bound([send[r] for r in reps] + [other[r] for r in reps])
            parts, interval, bound = [], False, []
            for key in RATIO_METRICS:
                if (hide and metric(key).unit in cores.TIMING_UNITS) \
                        or not performed(key, codec):
                    continue
                if arrival and key in ARRIVAL_BOUND_KEYS:
                    parts.append(f"{tokens_name(key, metric(key).ratio_short, timed)} "
                                 f"- ({ARRIVAL_BOUND})")
                    continue
                if differ and key in SCHEDULE_BOUND_KEYS:
                    bound.append(metric(key).ratio_short)
                    continue
                a = [send[r].get(key) for r in reps]
                b = [other[r].get(key) for r in reps]
                if None in a or None in b:
                    continue
                point, low, high = paired_ratio(a, b, method)
                if point is None:
                    continue
                interval = interval or low is not None
                parts.append(f"{tokens_name(key, metric(key).ratio_short, timed)} "
                             f"{ratio_text(point, low, high)}")
            if bound:  # one mark for every per-step metric left without a ratio
                parts.append(", ".join(bound) + f" - ({SCHEDULES_DIFFER})")
            if not any(" - (" not in p for p in parts):  # every ratio withheld: the
                interval = len(reps) >= min_pairs(method)  # the pairs' interval kind
            if parts:
                where = _ratio_where(codec, transport if several else None,
                                     model if several else None, send, other, reps)
                out.append(f"  {ratio_line_head(name, where, len(reps), interval, method, base)}: "
                           + ", ".join(parts))
                if differ and base == SEND:  # what send ships and the other leaves out
                    ids = token_ids_bytes(send[r] for r in reps)
                    out.append("    " + schedules_differ_line(ids, timed, (base, name),
                                                              arrival))
                if timed:
                    out.extend(_latency_ratio_line([send[r] for r in reps],
                                                   [other[r] for r in reps], method))
    return out


def _ratio_where(codec: str, transport: Optional[str], model: Optional[str],
                 send: dict[int, dict[str, Any]], other: dict[int, dict[str, Any]],
                 reps: list[int]) -> str:
    """What a ratio line (``_ratio_lines``) names in its brackets: ``codec``, then
    ``transport`` and ``model`` (not the null model) where given (several in the
    table), then ``°`` where the cases of arms ``send`` and ``other`` (repetition ->
    case) in ``reps`` compare timings shown marked (N = 1 on exactly 2 cores:
    ``cores.comparison_marked``; the case table's ``°`` line above says why):
    ``msgpack, tcp°``."""
    marked = cores.comparison_marked(arm[r] for arm in (send, other) for r in reps)
    return (codec + (f", {transport}" if transport else "")
            + (f", {model} model" if model and model != "null" else "")
            + (cores.SHARED_MARK if marked else ""))


#: The latency figures of the terminal's latency ratio line (``_latency_ratio_line``):
#: ``LATENCY_TABLE``'s, grouped by figure.
LATENCY_RATIO_FIGURES = (("TTFT", ("ttft_ms_p50", "ttft_ms_p99")), ("TPOT", ("tpot_ms_mean",)),
                         ("ITL", ("itl_ms_p50", "itl_ms_p99")),
                         ("E2E", ("e2e_ms_p50", "e2e_ms_p99")))


def _latency_ratio_line(base: list[dict[str, Any]], other: list[dict[str, Any]],
                        method: str) -> list[str]:
    """Under a timed replay's ratio line, the latencies' paired ratios (other / base,
    repetition by repetition: ``base`` and ``other`` the pair's cases in the same
    order) with their intervals (``stats.paired_ratio`` with ``method``), each
    figure's own, not adjusted for the others: ``latency ratios (each its own
    interval, not adjusted): TTFT p50 1.021 [0.801, 1.301], p99 ...; ...``. The
    latencies stay compared where the schedules differ and the tokens/s is
    arrival-bound: they are what a timed replay measures. ``[]`` without a figure."""
    parts = []
    for label, keys in LATENCY_RATIO_FIGURES:
        cells = []
        for key in keys:
            a, b = [s.get(key) for s in base], [s.get(key) for s in other]
            if any(v is None or v != v or v <= 0 for v in a + b):
                continue
            point, low, high = paired_ratio(a, b, method)
            if point is not None:
                cells.append(f"{key.rsplit('_', 1)[1]} {ratio_text(point, low, high)}")
        if cells:
            parts.append(f"{label} " + ", ".join(cells))
    if not parts:
        return []
    return ["    latency ratios (" + ("each its own interval, not adjusted for the others"
                                     if len(base) >= min_pairs(method) else "no interval")
            + "): " + "; ".join(parts)]


def _tokens_clause(timed: bool, name: str, arrival: bool) -> str:
    """What the schedules-differ lines say of tokens/s (``name``, ``tok/s (wall)`` for a
    ``timed`` replay): over the whole run it stays compared, except for an
    ``arrival``-bound replay (``stats.arrival_bound``), whose tokens/s is withheld too."""
    name = tokens_name("output_tokens_per_s", name, timed)
    return (f"{name}, arrival-bound, is withheld too (the trace's arrivals set it: no "
            "throughput figure)" if arrival else f"{name}, over the whole run, stays compared")


def schedules_differ_line(ids_bytes: Optional[float], timed: bool = False,
                          arms: Iterable[Any] = (SEND, CACHED),
                          arrival: bool = False) -> str:
    """The line under a ratio line of send against another arm (``arms``) whose arms ran
    different schedules (``stats.schedules_differ``): why (``schedules_differ_cause``)
    its per-step metrics (``SCHEDULE_BOUND_KEYS``: bytes and times per step) have no
    ratio, and the policy's own share, ``ids_bytes`` (``stats.token_ids_bytes``: send's
    new_token_ids per step); a timed replay's (``timed``) tok/s, which stays compared
    unless ``arrival``-bound (``_tokens_clause``), reads ``tok/s (wall)``."""
    own = (f"send's new_token_ids take {ids_bytes:,.1f} B/step (tok B/step + prompt "
           "B/step), what cached leaves out" if ids_bytes is not None else
           "send's new_token_ids were not measured")
    return ("per-step ratios (bytes and times): none, the arms ran different schedules "
            f"({schedules_differ_cause(timed, arms)}), so their bytes and times per step "
            f"differ by batch as well as by policy; {own}; "
            + _tokens_clause(timed, "tok/s", arrival))


def unchecked_note(cases: list[dict[str, Any]]) -> Optional[str]:
    """One line saying which cases ran with the input oracle off (summary field
    ``input_oracle_interval`` 0: ``--input-oracle-interval 0``, or the bare loop of
    ``overhead``); ``None`` when every case checked. Summaries older than the field
    checked every 128 steps."""
    off = [s for s in cases if s.get("input_oracle_interval", 128) == 0]
    if not off:
        return None
    return (f"INPUT ORACLE OFF: {len(off)} of {len(cases)} cases did not check the token "
            "ids their runner fed (input_oracle_interval 0)")


def emulated_note(cases: list[dict[str, Any]]) -> Optional[str]:
    """One line saying the cases ran the emulated model, on which GPU's figures and
    whether those are calibrated; ``None`` when no case did."""
    emulated = [s for s in cases if s.get("emulated")]
    if not emulated:
        return None
    return (f"EMULATED: {len(emulated)} of {len(cases)} cases slept a roofline step time "
            f"({_emulated_figures(emulated)}); no GPU computed their "
            f"steps{_emulated_bound(emulated)}")


def null_note(cases: list[dict[str, Any]]) -> Optional[str]:
    """One note saying which of ``cases`` (summary records) ran the null model (``model``
    ``null``, the default), whose step computes no model, so their tokens/s is the
    harness's and not a serving figure, and which models give a model's step; ``None``
    when none did (a record without ``model`` is not counted as null)."""
    null = [s for s in cases if s.get("model") == "null"]
    if not null:
        return None
    return (f"NULL MODEL: {len(null)} of {len(cases)} cases ran the null model "
            "(`--model null`, the default): no model computed their steps, so each step "
            "is the harness's own work (its scheduler, its messages and the null model's "
            "sampler, on this machine's CPU), and step times and tokens/s are the "
            "harness's, not a serving throughput. A model's step comes with `--model "
            "emulated` (a GPU roofline, no GPU needed) or `--model torch`.")


def null_head(cases: list[dict[str, Any]]) -> str:
    """What follows ``device=cpu`` in the head of a case table whose ``cases`` (one
    workload's summary records) ran the null model, which the device does not say (an
    emulated case's device names its model, ``device=emulated llama-3.1-8b on ...``):
    ``  model=null (no model computed: the step is the harness's own)``, as
    ``model_line`` and the report's ``null_note`` say; ``''`` for any other model or
    none recorded."""
    if not cases or any(s.get("model") != "null" for s in cases):
        return ""
    return f"  model={model_line(cases[:1])}"


def layout_head(cases: list[dict[str, Any]]) -> str:
    """What ends the head of a case table whose ``cases`` ran their messages in a
    later layout than 7f280d69c (``--vllm-layout``): ``  layout=vLLM 1d37eb37``;
    ``''`` for the default layout (or none recorded: a run from before the option)."""
    layouts = sorted({s["vllm_layout"] for s in cases if _later_layout(s)})
    return f"  layout=vLLM {','.join(layouts)}" if layouts else ""


def _later_layout(case: dict[str, Any]) -> bool:
    """Whether summary record ``case`` names a layout other than the default."""
    layout = case.get("vllm_layout")
    return isinstance(layout, str) and layout != DEFAULT_VLLM_LAYOUT


def layout_note(cases: list[dict[str, Any]]) -> Optional[str]:
    """One note saying which of ``cases`` (summary records) sent their messages in a
    later layout than 7f280d69c (``--vllm-layout``) and what that layout is; ``None``
    when none did (a record without ``vllm_layout`` ran the default)."""
    later = [s for s in cases if _later_layout(s)]
    if not later:
        return None
    names = ", ".join(sorted({str(s["vllm_layout"]) for s in later}))
    return (f"LAYOUT: {len(later)} of {len(cases)} cases sent vLLM {names}'s scheduler -> "
            f"runner messages (`--vllm-layout {names}`), not {DEFAULT_VLLM_LAYOUT}'s: "
            "`CachedRequestData` with `resumed_req_ids`, `all_token_ids` (the whole token "
            "history of each request not scheduled the step before) and "
            "`num_output_tokens`; the second per-step RPC of later vLLM (`sample_tokens`) "
            "is not modelled, and their bytes are not comparable with the default "
            "layout's (docs/comparisons.md, \"Since 7f280d69c\").")


def model_line(cases: list[dict[str, Any]]) -> str:
    """Which model each of ``cases`` (one run's summary records) ran, each once, for a
    run's header (the notebook's): ``null (no model computed: the step is the
    harness's own)``, ``emulated (llama-3.1-8b on NVIDIA H200 figures, uncalibrated):
    its step times are a roofline sleep, no GPU computed them``, ``torch on cuda`` (its
    ``runner_device``, less the single process's `` (in-process)``); ``not recorded``
    when no case names one."""
    words = []
    for s in cases:
        model, device = s.get("model"), s.get("runner_device")
        if not isinstance(model, str) or not model:
            continue
        if model == "null":
            words.append("null (no model computed: the step is the harness's own)")
        elif model == "emulated":
            words.append(f"emulated ({_emulated_shape(s)}{s.get('emulated_gpu', '?')} "
                         f"figures, {s.get('gpu_figures', '?')}): its step times are a "
                         "roofline sleep, no GPU computed them")
        elif isinstance(device, str) and device:
            words.append(f"{model} on {device.removesuffix(' (in-process)')}")
        else:
            words.append(model)
    return " | ".join(dict.fromkeys(words)) or "not recorded"


def emulated_runs_note(runs: list[tuple[str, list[dict[str, Any]]]]) -> Optional[str]:
    """``emulated_note`` said once for several runs: ``runs`` is (run id, that run's
    case records) per run; each run that ran the emulated model is named with its
    cases counted against its own and, where the runs' figures differ, its figures
    (``EMULATED: runs `e1` (6 of 6 cases; llama-3.2-1b on NVIDIA H200 figures
    UNCALIBRATED) and `e2` (6 of 6 cases; llama-3.1-8b on NVIDIA H200 figures
    UNCALIBRATED) slept a roofline step time; no GPU computed their steps; ...``);
    where they are the same, once after the runs (``runs `e1` (6 of 6 cases) and `e2`
    (2 of 4 cases) slept a roofline step time (llama-3.2-1b on ...)``). ``None`` when
    no run's case ran it."""
    ran = [(run, cases, [s for s in cases if s.get("emulated")]) for run, cases in runs]
    ran = [(run, cases, emulated) for run, cases, emulated in ran if emulated]
    if not ran:
        return None
    figures = [_emulated_figures(emulated) for _, _, emulated in ran]
    same = len(set(figures)) == 1
    named = [f"{code_span(run)} ({len(emulated)} of {len(cases)} cases"
             + ("" if same else f"; {fig}") + ")"
             for (run, cases, emulated), fig in zip(ran, figures)]
    runs_text = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
    every = [s for _, _, emulated in ran for s in emulated]
    return (f"EMULATED: run{'s' if len(ran) > 1 else ''} {runs_text} slept a roofline step "
            f"time{f' ({figures[0]})' if same else ''}; no GPU computed their "
            f"steps{_emulated_bound(every)}")


#: The summary's mean context of an emulated case's counted steps: the KV tokens per
#: request the roofline read (each request's ``seq_len`` after the step), averaged over
#: every request of every counted step.
CONTEXT_KEY = "emulated_context_tokens_per_request_mean"


def emulated_step_split(cases: list[dict[str, Any]]) -> Optional[str]:
    """Per workload of the emulated ``cases`` (summary records), their mean step split
    into the emulated model's mean time (``emulated_step_ns_per_step``, the same in
    every arm) and the rest of the mean step (``step_ns_mean`` less it: the harness's
    own, this CPU's), per arm and codec (``cached/msgpack``), each a mean over its
    repetitions, in µs; then the mean context the roofline was computed for (``CONTEXT_KEY``, tokens
    per request), or that the run did not record it. The rest is a mean without an
    interval, no arm's cost against another (the findings compare arms, with their
    intervals), and the line says so once; a workload whose arms ran different schedules
    in a repetition (``schedules_differ_in``: async against sync scheduling) says that
    their rests do not compare, as the findings compare no step there. ``None`` when
    no emulated case has both figures with its timings shown (``cores.is_withheld``)."""
    shown = [s for s in cases if s.get("emulated") and not cores.is_withheld(s)
             and not is_missing(s.get("emulated_step_ns_per_step"))
             and not is_missing(s.get("step_ns_mean"))]
    if not shown:
        return None
    parts = []
    for workload in dict.fromkeys(s.get("workload") for s in shown):
        mine = [s for s in shown if s.get("workload") == workload]
        model = float(np.mean([s["emulated_step_ns_per_step"] for s in mine]))
        rest = ", ".join(f"{arm} {_us(_mean_rest([s for s in mine if _arm_codec(s) == arm]))}"
                         for arm in dict.fromkeys(map(_arm_codec, mine)))
        context = [s.get(CONTEXT_KEY) for s in mine]
        at = ("" if any(is_missing(c) for c in context)
              else f" at a mean context of {float(np.mean(context)):,.1f} tokens per request")
        differ = (" (the arms ran different schedules: their rests do not compare)"
                  if schedules_differ_in(mine) else "")
        parts.append(f"[{workload}] the emulated model {_us(model)}{at}, the rest {rest}"
                     + differ)
    recorded = all(not is_missing(s.get(CONTEXT_KEY)) for s in shown)
    return ("Mean step per workload, the emulated model's time and the rest, the "
            "harness's own (scheduler, messages, runner and sampler on this machine's "
            "CPU): the mean step less the model's, a mean over repetitions without an "
            "interval, not what one arm costs against another (the findings compare arms, "
            "with intervals): " + "; ".join(parts) + "."
            + ("" if recorded else
               " The mean context the roofline was computed for (KV tokens per request) "
               "is not recorded in this run's summary.json."))


def schedules_differ_in(cases: list[dict[str, Any]]) -> bool:
    """Whether two of ``cases`` (summary records of one workload) of the same
    repetition ran different schedules (``stats.schedules_differ``: their schedule
    digests differ, async scheduling against sync); records without a digest tell
    nothing."""
    from ipc_bench.analysis.stats import schedules_differ

    by_rep: dict[Any, list[dict[str, Any]]] = {}
    for s in cases:
        by_rep.setdefault(s.get("repetition"), []).append(s)
    return any(schedules_differ((a, b) for a in same for b in same)
               for same in by_rep.values())


def _arm_codec(case: dict[str, Any]) -> str:
    """``cached/msgpack``: a case's arm (``arm_label``) and codec."""
    return f"{arm_label(case)}/{case.get('codec')}"


def _mean_rest(cases: list[dict[str, Any]]) -> float:
    """The mean over ``cases`` of each one's mean step less its emulated model time."""
    return float(np.mean([s["step_ns_mean"] - s["emulated_step_ns_per_step"] for s in cases]))


def _us(ns: float) -> str:
    """``ns`` in µs, one decimal and thousands commas: ``6,898.9 µs``."""
    return f"{ns / 1e3:,.1f} µs"


def _emulated_figures(emulated: list[dict[str, Any]]) -> str:
    """The GPU figures ``emulated`` cases slept on, each once: ``llama-3.2-1b on
    NVIDIA H200 figures UNCALIBRATED``."""
    return ", ".join(dict.fromkeys(f"{_emulated_shape(s)}{s.get('emulated_gpu', '?')} "
                                   f"figures {s.get('gpu_figures', '?').upper()}"
                                   for s in emulated))


def _emulated_bound(emulated: list[dict[str, Any]]) -> str:
    """``emulated_note``'s clause on uncalibrated figures (the model time at the rates
    ``engine/gpu_figures.json`` assumes, which were not measured here and which a
    kernel may exceed by the datasheet peaks' margin at most: no bound on a GPU's), ``''`` where every one of ``emulated``
    slept on calibrated figures. It claims no direction for send's share on a GPU: the
    model time there may be longer or shorter, and send's µs and the control plane in
    the step are this machine's."""
    return ("; uncalibrated figures take every op at the assumed rates (not measured "
            "here; a kernel may exceed them by the datasheet peaks' margin at most, "
            "1.12x bandwidth and 1.25x bf16, and the ops left out add time) with no "
            "per-step launch or host time, so "
            "each step's model time is the time at those rates, not a bound on that "
            "GPU's: a real GPU's longer model time alone would make send's share of a "
            "step smaller, a shorter one larger; and send's µs and the rest of each step, "
            "the control plane, are this machine's CPU's, so the share on a GPU host also "
            "depends on that host's CPU" if any(map(_uncalibrated, emulated)) else "")


def _emulated_shape(case: dict[str, Any]) -> str:
    """``llama-3.2-1b on `` for an emulated case that names its preset
    (``emulated_preset``); ``''`` for one written before it was recorded."""
    preset = case.get("emulated_preset")
    return f"{preset} on " if isinstance(preset, str) and preset else ""


def _uncalibrated(case: dict[str, Any]) -> bool:
    """Whether an emulated case slept on GPU figures not calibrated from a GPU run (its
    model time then the time at the assumed rates, efficiency 1 and no fixed time)."""
    return case.get("gpu_figures") != "calibrated"


def emulated_mark(cases: list[dict[str, Any]]) -> Optional[str]:
    """The short form of ``emulated_note`` a figure carries under its title (``EMULATED
    steps: NVIDIA H200 roofline, UNCALIBRATED (at assumed rates); no GPU computed
    them``); ``None`` when no case ran the emulated model. A figure of several runs
    (``run_id``) names the runs that did, each counted against its own cases
    (``_emulated_share``)."""
    emulated = [s for s in cases if s.get("emulated")]
    if not emulated:
        return None
    figures = ", ".join(dict.fromkeys(
        f"{_emulated_shape(s)}{s.get('emulated_gpu', '?')} roofline, "
        f"{s.get('gpu_figures', '?').upper()}"
        + (" (at assumed rates)" if _uncalibrated(s) else "")
        for s in emulated))
    return f"EMULATED steps{_emulated_share(cases, emulated)}: {figures}; no GPU computed them"


def _emulated_share(cases: list[dict[str, Any]], emulated: list[dict[str, Any]]) -> str:
    """Which of ``cases`` are the ``emulated`` ones, for ``emulated_mark``: ``''`` for
    all of one run's, `` of 2 of 4 cases`` for some; with several runs (``run_id``),
    each run that ran them, counted against its own cases, not all runs': `` of run
    emu`` (all of its cases), `` of run a (2 of 4 cases) and run emu``."""
    runs = list(dict.fromkeys(s.get("run_id") for s in cases))
    if len(runs) < 2:
        return "" if len(emulated) == len(cases) else (f" of {len(emulated)} of "
                                                       f"{len(cases)} cases")
    parts = []
    for run in dict.fromkeys(s.get("run_id") for s in emulated):
        k = sum(s.get("run_id") == run for s in emulated)
        n = sum(s.get("run_id") == run for s in cases)
        parts.append(f"run {run}" + ("" if k == n else f" ({k} of {n} cases)"))
    return " of " + (parts[0] if len(parts) == 1 else
                     ", ".join(parts[:-1]) + " and " + parts[-1])


GPU_TIME_COLUMNS = (("gpu_busy_ns_per_step", "GPU busy ms", 1e-6),
                    ("host_ns_per_step", "host ms", 1e-6),
                    ("host_ns_per_decode_step", "host ms/decode", 1e-6),
                    ("gpu_idle_ns_per_step", "GPU idle ms", 1e-6),
                    ("gpu_busy_share", "busy share", 1.0),
                    ("roofline_ns_per_step", "roofline ms", 1e-6),
                    ("compute_to_roofline_ratio", "x roofline", 1.0),
                    ("output_tokens_per_s", "steady tok/s", 1.0),
                    ("run_output_tokens_per_s", "run tok/s", 1.0))
#: The roofline table of cases without CUDA event times (the torch model on CPU with
#: ``--roofline``): its compute time is ``runner_forward_ns``.
ROOFLINE_COLUMNS = (("runner_forward_ns_per_step", "forward ms", 1e-6),
                    ("roofline_ns_per_step", "roofline ms", 1e-6),
                    ("compute_to_roofline_ratio", "x roofline", 1.0))


def _request_count_note(cases: list[dict[str, Any]], key: str) -> Optional[str]:
    """``N of M`` for the requests counted by ``key`` (``num_rejected``,
    ``num_cut_at_max_model_len``) in one workload's ``cases``: the largest count of any
    case over the largest ``num_requests``, followed by each case's count
    (``; per case: ID N, ...``) where the cases counted differently; ``None`` when no
    case counted any."""
    counts = {s.get("case_id", "?"): s.get(key) or 0 for s in cases}
    most = max(counts.values(), default=0)
    if not most:
        return None
    total = max((s.get("num_requests") or 0) for s in cases)
    text = f"{most} of {total}"
    if len(set(counts.values())) > 1:
        text += " (per case: " + ", ".join(f"{c} {n}" for c, n in counts.items()) + ")"
    return text


def rejected_note(cases: list[dict[str, Any]]) -> Optional[str]:
    """The note under a workload's case table when its ``cases`` rejected requests on
    arrival (``num_rejected``): ``rejected on arrival: 1 of 10 requests could never fit
    (...)``, the same in the terminal and the report; ``None`` when none was."""
    count = _request_count_note(cases, "num_rejected")
    return None if count is None else (
        f"rejected on arrival: {count} requests could never fit (prompt >= max_model_len, "
        "or more KV blocks than the cache has)")


def cut_note(cases: list[dict[str, Any]]) -> Optional[str]:
    """The note under a workload's case table when requests of its ``cases`` stopped at
    ``max_model_len`` before their output length (``num_cut_at_max_model_len``): ``cut
    at max_model_len: 1 of 10 requests stopped before their output length (...)``, the
    same in the terminal and the report; ``None`` when none did."""
    count = _request_count_note(cases, "num_cut_at_max_model_len")
    return None if count is None else (
        f"cut at max_model_len: {count} requests stopped before their output length "
        "(prompt + output > max_model_len; --max-model-len sets it)")


def preempted_note(cases: list[dict[str, Any]]) -> Optional[str]:
    """The note under a workload's case table when its ``cases`` preempted requests
    (``num_preemptions``, warm-up included): ``preempted: 63 times in each case (the KV
    cache ran out of blocks: ...)``, or ``N times at most (per case: ID N, ...)`` where
    they differ, the same in the
    terminal and the report; ``None`` when no case preempted."""
    counts = {s.get("case_id", "?"): int(s.get("num_preemptions") or 0) for s in cases}
    if not any(counts.values()):
        return None
    times = (f"{next(iter(counts.values())):,} times"
             + (" in each case" if len(counts) > 1 else "")
             if len(set(counts.values())) == 1 else
             f"{max(counts.values()):,} times at most (per case: "
             + ", ".join(f"{c} {n:,}" for c, n in counts.items()) + ")")
    return (f"preempted: {times} (the KV cache ran out of blocks: the last running "
            "request gave its blocks back and was recomputed from its first token when "
            "resumed; --num-blocks sets the cache)")


#: What a preempted request means for the figures (the report, after ``preempted_note``).
PREEMPTED_MEANING = ("A preempted request waits, then recomputes its tokens in prefill "
                     "steps: its latencies and the workload's steps include that work, "
                     "so these figures are of a cache too small for this load, not of "
                     "the engine's decode alone.")
#: What a rejected request means for the comparison (the report, after ``rejected_note``).
REJECTED_MEANING = ("A request is rejected by its lengths and the engine's limits, "
                    "whatever the policy, so every case of this workload rejected the "
                    "same requests and the comparison stands, but it covers the requests "
                    "served, not the whole workload: a rejected request adds no step, "
                    "byte or token to any figure of this table, the comparison or the "
                    "findings.")
#: What a request cut at max_model_len means for the comparison (after ``cut_note``).
CUT_MEANING = ("Every case stopped such a request at the same token, whatever the policy, "
               "so the comparison stands, but of a shorter workload than the trace's: the "
               "tokens such a request was not allowed to generate add no decode step, byte "
               "or token to any figure of this table, the comparison or the findings.")


def model_time_lines(cases: list[dict[str, Any]]) -> list[str]:
    """Under a case table: the emulated note with each emulated case's mean roofline
    step, a table of the CUDA event times with the roofline ratio
    (``summary._model_column_figures``, ``summary._roofline_figures``) when some case
    has them, a roofline table of the cases that have a roofline but no event times
    (CPU), and the roofline figures each such case was measured on."""
    out = []
    note = emulated_note(cases)
    if note:
        reps = any(s.get("repetition") for s in cases)  # name each case's repetition
        steps = ", ".join(f"{arm_label(s)}/{s['codec']}"
                          + (f"#{s.get('repetition') or 0}" if reps else "")
                          + f" {s['emulated_step_ns_per_step'] / 1e6:.3f}"
                          for s in cases if s.get("emulated_step_ns_per_step") is not None)
        out.append(f"  {note}" + (f"; mean emulated step ms: {steps}" if steps else ""))
    timed = [s for s in cases if s.get("gpu_busy_ns_per_step") is not None]
    if timed:
        out.append("  CUDA event times per counted step (busy: first to last GPU operation "
                   "of the step; host: step minus busy; x roofline: median busy / roofline):")
        out.extend(_column_table(timed, GPU_TIME_COLUMNS))
    roofed = [s for s in cases if s.get("gpu_busy_ns_per_step") is None
              and s.get("roofline_ns_per_step") is not None]
    if roofed:
        out.append("  roofline per counted step (forward: ModelRunner.sample, the model's "
                   "forward and sampling; x roofline: median forward / roofline):")
        out.extend(_column_table(roofed, ROOFLINE_COLUMNS))
    out.extend(roofline_figures_lines(cases))
    out.extend(runner_gap_lines(cases))
    out.extend(spec_decode_lines(cases))
    out.extend(frontend_lines(cases))
    out.extend(replica_lines(cases))
    return out


#: The speculative-decoding table (``--num-spec-tokens``): K, the acceptance setting,
#: tokens scheduled and produced per counted step, accepted drafts per step and the
#: share of drafts accepted (``summary._step_figures``).
SPEC_COLUMNS = (("scheduled_tokens_per_step", "sched tok/step", 1.0),
                ("output_tokens_per_step", "out tok/step", 1.0),
                ("spec_accepted_tokens_per_step", "accepted/step", 1.0),
                ("spec_draft_acceptance_rate", "accepted/drafted", 1.0),
                ("sched_to_runner_payload_bytes_per_step", "s2r B/step", 1.0),
                ("decode_token_bytes_per_step", "tok B/step", 1.0))


def spec_decode_lines(cases: list[dict[str, Any]]) -> list[str]:
    """Under a case table: the speculative-decoding figures of its cases
    (``SPEC_COLUMNS``) when any of them ran with draft tokens; nothing otherwise. Bytes
    a case does not send (the single process) are ``-``, as in the case table."""
    if not any(s.get("num_spec_tokens") for s in cases):
        return []
    rows = [cells(s, IDENTITY, model=True)
            + [str(s.get("num_spec_tokens") or 0),
               "-" if s.get("spec_acceptance") is None else f"{s['spec_acceptance']:g}"]
            + [_num(s.get(key), scale) if performed(key, s.get("codec")) else "-"
               for key, _, scale in SPEC_COLUMNS] for s in cases]
    table = _render_with_rep(cases, list(IDENTITY) + ["K", "P"]
                             + [h for _, h, _ in SPEC_COLUMNS], rows)
    return ["  speculative decoding per counted step (K drafts per request, P: chance a "
            "draft is the target's token; tok B/step: what new_token_ids add, send only):"
            ] + ["  " + line for line in table.splitlines()]


#: The frontend-hop table (``--frontend``, ``analysis.frontend``): bytes per counted
#: step of each hop and of the whole control plane, the frontend hop's encode
#: (scheduler) and decode (frontend) µs, and send's saving as a share of send's control
#: plane (``SAVING_KEYS``: a figure of a send / cached pair, shown on the send row, as
#: send - cached, the bytes cached saves, as the rest of the report reads a difference;
#: ``-`` on a single-process row, which sends no scheduler -> runner message).
FRONTEND_COLUMNS = (("sched_to_runner_payload_bytes_per_step", "s2r B", 1.0),
                    ("runner_to_sched_payload_bytes_per_step", "r2s B", 1.0),
                    ("frontend_bytes_per_step", "fe B", 1.0),
                    ("control_plane_bytes_per_step", "control B", 1.0),
                    ("frontend_share_of_control_plane", "fe %", 100.0),
                    ("frontend_encode_ns_per_step", "fe enc us", 1e-3),
                    ("frontend_decode_ns_per_step", "fe dec us", 1e-3),
                    ("control_plane_codec_ns_per_step", "codec us all", 1e-3),
                    ("send_saving_bytes_per_step", "send - cached B", 1.0),
                    ("send_saving_share_of_control_plane", "send - cached % send control",
                     100.0))

def frontend_timing(key: str) -> bool:
    """Whether a column of the frontend-hop table (``FRONTEND_COLUMNS``) is a time
    (``fe enc us``, ``fe dec us``, ``codec us all``): ``-`` for a case whose timings are
    withheld (``analysis.cores``); its shares (``fe %``, send - cached's) are of bytes
    and stay, as its bytes do."""
    return "_ns" in key


#: The frontend table's figures of a send / cached pair (``frontend.pair_send_savings``
#: sets them on both cases), shown once, on the send row.
SAVING_KEYS = ("send_saving_bytes_per_step", "send_saving_share_of_control_plane")


def schedules_apart_text(cases: list[dict[str, Any]], dash: str = "-") -> str:
    """Why a send row of the frontend cases ``cases`` (summaries, or a table's records)
    shows ``dash`` for send - cached where its pair scheduled other batches
    (``frontend.schedules_apart``): ``- on a send row whose cached case scheduled other
    batches (schedules differ, as a timed replay's arms do), where send - cached would
    be no like-for-like saving``; ``""`` where no such row is shown. The terminal's
    frontend table (``frontend_lines``) and the report's (``blocks``, ``dash`` a code
    span) say it."""
    from ipc_bench.analysis.frontend import schedules_apart

    if not schedules_apart(cases):
        return ""
    return (f"{dash} on a send row whose cached case scheduled other batches (schedules "
            "differ, as a timed replay's arms do), where send - cached would be no "
            "like-for-like saving")


def frontend_lines(cases: list[dict[str, Any]]) -> list[str]:
    """Under a case table: per case with a frontend, each hop's bytes per counted step,
    the control plane's, the frontend hop's encode / decode µs, the encode + decode µs
    of all three messages, and send's saving in bytes and as a share of send's control
    plane (``SAVING_KEYS``: send - cached, a figure of the pair, shown once, on its send
    row; its cached row ``-``); a single-process row ``-`` in every column of what its
    codec does not perform (``stats.performed``: ``s2r B``, ``r2s B`` and the saving,
    as the report's frontend table shows it: it sends no scheduler <-> runner message;
    the head line says so, as it says why a send row shows ``-`` for the saving:
    ``schedules_apart_text``); nothing when no case ran a frontend. A case whose
    timings are withheld (``analysis.cores``) shows ``-`` for the three µs columns
    (``frontend_timing``; its bytes and their shares stay) and ``*`` after its
    transport, explained by the case table's footnote above; one shown on N + 1 cores
    is marked ``°``, with ``cores.marked_footnote`` under the table (``cells``)."""
    fronted = [s for s in cases if s.get("frontend_bytes_per_step") is not None]
    if not fronted:
        return []
    unsaved = schedules_apart_text(fronted)
    paired = any(s.get(SAVING_KEYS[0]) is not None for s in fronted) or bool(unsaved)
    single = [not performed(SAVING_KEYS[0], s.get("codec")) for s in fronted]
    shown = [dict(s, **dict.fromkeys(k for k, _, _ in FRONTEND_COLUMNS
                                     if not performed(k, s.get("codec"))
                                     or (k in SAVING_KEYS and s.get("policy") == CACHED)))
             for s in fronted]
    return (["  frontend hop (EngineCoreOutputs, msgpack) beside the scheduler <-> runner "
             "hop, payload bytes and µs per counted step (fe enc: scheduler, fe dec: "
             "frontend; control = s2r + r2s + fe"
             + ("; send - cached B: send's s2r B less cached's (what cached saves), of a "
                "pair that scheduled the same batches, on the send row, and as a share of "
                "send's control B" if paired else "")
             + (f"; {unsaved}" if unsaved else "")
             + ("; - on a single-process row, which has no s2r or r2s message"
                if any(single) else "") + "):"]
            + _column_table(shown, FRONTEND_COLUMNS, frontend_timing))


#: The replicated codec's table: what travels and the scheduler every runner runs.
REPLICA_COLUMNS = (("sched_to_runner_payload_bytes_per_step", "s2r B/step", 1.0),
                   ("runner_to_sched_payload_bytes_per_step", "r2s B/step", 1.0),
                   ("replica_scheduler_ns_per_step", "replica sched us", 1e-3),
                   ("sched_cpu_ns_per_step", "sched cpu us", 1e-3))


def replica_lines(cases: list[dict[str, Any]]) -> list[str]:
    """Under a case table, for ``replicated`` cases: bytes per step each way and the
    runner's replica scheduler time per step (schedule, build, update: what every rank
    pays) beside the scheduler's own CPU time; nothing when no case has a replica."""
    replicas = [s for s in cases if s.get("replica_scheduler_ns_per_step") is not None]
    if not replicas:
        return []
    return (["  replicated: only arrivals and a step message (step, schedule digest) travel; "
             "each runner runs the scheduler itself (replica sched: schedule + build + "
             "update per counted step, paid by every rank):"]
            + _column_table(replicas, REPLICA_COLUMNS))


#: The runner-gap table: idle time between two model executions of the runner
#: (``summary.runner_gap_figures``), median and p99, in µs and as a share of its step.
RUNNER_GAP_COLUMNS = (("runner_gap_ns_median", "gap us p50", 1e-3),
                      ("runner_gap_ns_p99", "gap us p99", 1e-3),
                      ("runner_gap_share_median", "gap % p50", 100.0),
                      ("runner_gap_share_p99", "gap % p99", 100.0),
                      ("runner_step_ns_median", "runner step us p50", 1e-3))


def runner_gap_lines(cases: list[dict[str, Any]]) -> list[str]:
    """Under a case table: per case, sync or async scheduling and the runner's idle
    time between the end of one step's forward + sampling and the start of the next
    one's (``summary.runner_gap_figures``), median and p99, in µs and as a share of
    the runner's step; nothing when no case has it. A case whose timings are withheld
    (``analysis.cores``) has no row: one line says how many were left out with their
    timings (``RUNNER_GAP_WITHHELD``), the line alone when every case was; under the
    table, ``cores.marked_footnote`` where a row is marked ``°`` and
    ``runner_gap_p99_note`` where a gap p99 is over 100 or fewer steps."""
    gapped = [s for s in cases if s.get("runner_gap_ns_median") is not None]
    left_out = sum(map(cores.is_withheld, gapped))
    gapped = [s for s in gapped if not cores.is_withheld(s)]
    note = ["  " + runner_gap_withheld(left_out)] if left_out else []
    if not gapped:
        return note
    reps = any(s.get("repetition") for s in gapped)  # a rep column, as the case table
    rows = [([str(s.get("repetition", "-"))] if reps else []) + cells(s, IDENTITY, model=True)
            + [f"async ({s.get('async_scheduling_mode')})" if s.get("async_scheduling")
               else "sync"]
            + [_num(shown_value(s, key), scale) for key, _, scale in RUNNER_GAP_COLUMNS]
            for s in gapped]
    table = render((["rep"] if reps else []) + list(IDENTITY) + ["scheduling"]
                   + [h for _, h, _ in RUNNER_GAP_COLUMNS], rows, left=4 + reps)
    few = runner_gap_p99_note(gapped)
    shared = cores.marked_footnote(gapped)
    return (["  runner gap per counted step (end of one forward + sampling to the start of "
             "the next; % of the runner's step):"]
            + ["  " + line for line in table.splitlines()] + note
            + (["  " + shared] if shared else []) + (["  " + few] if few else []))


def runner_gap_withheld(n: int) -> str:
    """The line, under a case table and in the report, of ``n`` cases whose runner gap
    is left out with their timings (``analysis.cores``): ``runner gap: left out with
    the timings (*) of 4 cases``."""
    return (f"runner gap: left out with the timings ({cores.MARK}) of {n} "
            f"case{'' if n == 1 else 's'}")


#: After a table where a roofline ratio is below 1 (marked ``!``): why it can be.
ROOFLINE_BELOW_ONE_NOTE = (
    "!: x roofline below 1, faster than the roofline, which is meant as a lower bound: "
    "its inputs, the copy bandwidth and matmul rate measured once at start-up "
    "(roofline.measure_device_figures), underestimated the device (e.g. measured while "
    "other work loaded it); the ratio is shown as measured, not clamped")


def roofline_ratio(value: Optional[float]) -> str:
    """A roofline ratio with two decimals, ``!`` after it when below 1
    (``ROOFLINE_BELOW_ONE_NOTE``); ``-`` for none."""
    if value is None:
        return "-"
    return f"{value:.2f}" + ("!" if value < 1 else "")


def below_roofline(values: Iterable[Optional[float]]) -> bool:
    """Whether any of ``values`` is a roofline ratio below 1."""
    return any(v is not None and v < 1 for v in values)


def _is_timing(key: str) -> bool:
    """Whether a column of the tables under a case table is a time or derived from one
    (a share of a step, a ratio of times, a rate)."""
    return "_ns" in key or "ratio" in key or "share" in key or key.endswith("_per_s")


def shown_value(summary: dict[str, Any], key: str, timing=_is_timing) -> Any:
    """``summary[key]``, or ``None`` (shown ``-``) for a timing (``timing(key)``) of a
    case whose timings are withheld (``analysis.cores``)."""
    if timing(key) and cores.is_withheld(summary):
        return None
    return summary.get(key)


def _render_with_rep(cases: list[dict[str, Any]], header: list[str],
                     rows: list[list[str]]) -> str:
    """``render`` of ``rows`` (one per case of ``cases``, the identity fields first)
    under ``header``, a ``rep`` column first where a case is of a repetition above 0,
    as the case table has, so that the rows of one arm are told apart."""
    if not any(s.get("repetition") for s in cases):
        return render(header, rows)
    return render(["rep"] + header,
                  [[str(s.get("repetition", "-"))] + row for s, row in zip(cases, rows)],
                  left=4)


def _column_table(cases: list[dict[str, Any]], columns, timing=_is_timing) -> list[str]:
    """``columns`` ((key, header, scale) each) of ``cases`` after the identity fields
    (first the repetition, ``rep``, where a case is of one above 0), as indented table
    lines; a timing (``timing(key)``) of a case whose timings are withheld
    (``analysis.cores``) is shown ``-``, its transport marked; one shown on N + 1 cores
    is marked ``°`` and explained in a line under the table (``cores.marked_footnote``),
    as a roofline ratio below 1 is marked ``!``."""
    ratio = "compute_to_roofline_ratio"
    rows = [cells(s, IDENTITY, model=True)
            + [roofline_ratio(shown_value(s, key, timing)) if key == ratio
               else _num(shown_value(s, key, timing), scale)
               for key, _, scale in columns] for s in cases]
    table = _render_with_rep(cases, list(IDENTITY) + [h for _, h, _ in columns], rows)
    marked = any(key == ratio for key, _, _ in columns) and \
        below_roofline(shown_value(s, ratio) for s in cases)
    shared = cores.marked_footnote(cases)
    return ["  " + line for line in table.splitlines()] + \
        ([f"  {shared}"] if shared else []) + \
        ([f"  {ROOFLINE_BELOW_ONE_NOTE}"] if marked else [])


def roofline_figures_lines(cases: list[dict[str, Any]]) -> list[str]:
    """One line per distinct device the cases' rooflines were measured on
    (``roofline_figures``): copy bandwidth and matmul rate with their sizes; figures
    measured by each runner differ a little, so the range over the cases is shown."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for s in cases:
        f = s.get("roofline_figures")
        if f:
            groups.setdefault((f["name"], f["dtype"], f["copy_bytes"], f["matmul_n"]),
                              []).append(f)
    out = []
    for (name, dtype, copy_bytes, n), figs in groups.items():
        bw = [f["memory_bandwidth_bytes_per_s"] / 1e9 for f in figs]
        fl = [f["flops_per_s"] / 1e12 for f in figs]
        out.append(f"  roofline figures measured in the runner on {name}, {dtype} "
                   f"({len(figs)} cases): copy {_span(bw)} GB/s (read + write, "
                   f"{copy_bytes / 2**20:,.0f} MiB buffer), matmul {_span(fl, 3)} TFLOP/s "
                   f"({n} x {n}); efficiency 1, no fixed time (uncalibrated)")
    return out


def _span(values: list[float], digits: int = 1) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:,.{digits}f}" if f"{lo:,.{digits}f}" == f"{hi:,.{digits}f}" \
        else f"{lo:,.{digits}f}-{hi:,.{digits}f}"


def _num(value, scale: float, grouped: bool = True) -> str:
    """A figure of the tables below the case table, at ``scale``: ``-`` when missing,
    ``0`` when exactly zero (as the case table prints it: no bytes of new_token_ids in
    a cached case, none on an inproc hop), else 3 significant digits or more, with
    thousands separators unless not ``grouped`` (inside brackets, where ``[-22,475,
    -4,077]`` would read as four numbers: ``[-22475, -4077]``)."""
    if value is None:
        return "-"
    v = value * scale
    if v == 0:
        return "0"
    return (f"{v:{',' if grouped else ''}.0f}" if abs(v) >= 1000 else
            f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}")


def _bracketed(*values, scale: float) -> str:
    """``[a, b]`` of figures ``values`` at ``scale`` (``_num``, not grouped)."""
    return "[" + ", ".join(_num(v, scale, grouped=False) for v in values) + "]"


def _diff_point(value: Optional[float], scale: float) -> str:
    """The comparison block's difference (send - cached) at ``scale`` as ``_num``
    prints it, except that one its 2 decimals would round onto 0 while it is not 0
    gets more (``stats.point_text``): ``0.004``, not ``0.00`` beside ``[0.001,
    0.005]``."""
    if value is not None and value != 0 and abs(value * scale) < 10:
        return point_text(value * scale, 2)
    return _num(value, scale)


def _diff_ends(low: float, high: float, scale: float) -> tuple[str, str]:
    """The two ends of a difference's interval at ``scale``, each as ``_num`` prints the
    difference beside it, thousands separators included, except that an end ``_num``'s
    2 decimals would round onto 0 while it is not 0 gets more (``stats.interval_end``):
    ``0.003``, not ``0.00`` beside a difference that excludes 0; an end of exactly 0
    stays ``0``."""
    def end(v: float) -> str:
        v_scaled = v * scale
        if v_scaled != 0 and abs(v_scaled) < 10:
            return interval_end(v_scaled, 2)
        return _num(v, scale)
    return end(low), end(high)


def _diff_interval(low: float, high: float, scale: float,
                   joined: Optional[bool] = None) -> str:
    """``[-0.59, 2.88]``: a difference's interval at ``scale``, its ends as
    ``_diff_ends`` prints them (``[0.003, 2.88]``). Where an end has a separator the ends
    are joined by `` to ``, ``[-1,714 to 4,187]``, so that the interval does not read as
    four numbers (``[-1,714, 4,187]``); ``joined`` true or false sets the form instead
    (``diff_column_joined``: one form for a whole column, ``[29.6 to 76.7]`` above or
    below a ``[-1,714 to 4,187]``)."""
    ends = _diff_ends(low, high, scale)
    if joined is None:
        joined = any("," in e for e in ends)
    return f"[{(' to ' if joined else ', ').join(ends)}]"


def diff_column_joined(intervals: Iterable[tuple[Optional[float], Optional[float], float]]
                       ) -> bool:
    """Whether a column of difference intervals (``(low, high, scale)`` each, ``None``
    ends for a row without one) is printed in the `` to `` form throughout
    (``_diff_interval``'s ``joined``): where any of its intervals has an end with a
    thousands separator, so that one column holds one form, not ``[29.6, 76.7]`` above
    ``[-22,475 to -4,077]``; a column of no such end keeps ``[29.6, 76.7]``, as the ratio
    CI beside it reads."""
    return any("," in e for low, high, scale in intervals
               if low is not None and high is not None
               for e in _diff_ends(low, high, scale))


#: How a withheld verdict starts (``stats.withheld_verdict``); the block says why once.
WITHHELD = "no verdict"


#: Why two arms ran different schedules (``schedules_differ_cause``): a timed replay's
#: batches follow wall-clock arrivals; async scheduling frees a finished request's slot
#: a step later than sync scheduling (docs/async-scheduling.md, "Schedules differ from
#: sync scheduling").
TIMED_CAUSE = "a timed replay follows wall-clock arrivals"
ASYNC_CAUSE = ("async scheduling starts the request that takes a finished one's slot a "
               "step later than sync scheduling")


def _arm_names(arms: Iterable[Any]) -> set[str]:
    """The arms of ``arms`` without their A/A copy mark (``send'`` is ``send``)."""
    return {str(a).rstrip("'") for a in arms if a is not None}


def is_async_pair(arms: Iterable[Any]) -> bool:
    """Whether the arm pair ``arms`` sets async scheduling against sync scheduling: one
    arm is ``ASYNC_ARM`` (or its copy), the other is not."""
    from ipc_bench.harness.spec import ASYNC_ARM

    arms = [str(a).rstrip("'") for a in arms if a is not None]
    return len(arms) == 2 and (arms[0] == ASYNC_ARM) != (arms[1] == ASYNC_ARM)


def schedules_differ_cause(timed: bool, arms: Iterable[Any] = ()) -> str:
    """``schedule digests differ: <why>``, the one wording of why the arms ``arms`` of a
    comparison ran different schedules: a timed replay's (``timed``) arrivals
    (``TIMED_CAUSE``), async scheduling against sync (``is_async_pair``:
    ``ASYNC_CAUSE``), both, or, for neither, no cause (``schedule digests differ``)."""
    causes = ([TIMED_CAUSE] if timed else []) + ([ASYNC_CAUSE] if is_async_pair(arms)
                                                 else [])
    return "schedule digests differ" + (": " + ", and ".join(causes) if causes else "")


def schedules_differ_note(timed: bool = False, arms: Iterable[Any] = (),
                          arrival: bool = False) -> str:
    """The line under a comparison of the arms ``arms`` (baseline, treatment) that ran
    different schedules (``compare_cases``' ``schedules_differ``), naming why
    (``schedules_differ_cause``) and what else differs between the arms (the policy
    where one is ``send``, the scheduling for async against sync); only where one arm
    is ``send`` does it say where send's own new_token_ids are. A timed replay's
    (``timed``, the comparison's ``timed``) tokens/s, which stays compared unless
    ``arrival``-bound (the comparison's ``arrival_bound``: ``_tokens_clause``), reads
    ``out tok/s (wall)``."""
    arms = list(arms)
    send = SEND in _arm_names(arms)
    by = "policy" if send else "scheduling" if is_async_pair(arms) else "arm"
    return (
        f"schedules differ: the arms ran different batches ({schedules_differ_cause(timed, arms)}), "
        f"so their per-step bytes and times differ by batch as well as by {by}: those rows "
        "give each arm's median, no paired figure or verdict, and are left out of the Holm "
        "adjustment; " + _tokens_clause(timed, "out tok/s", arrival)
        + (". The s2r bytes' difference is not the policy's saving (send's own "
           "new_token_ids are tok B/step + prompt B/step in the case table)" if send else ""))


#: The line under a comparison of an arrival-bound timed replay (``compare_cases``'
#: ``arrival_bound``) whose schedules matched: why its tokens/s has no verdict.
ARRIVAL_BOUND_WITHHELD = (
    f"{ARRIVAL_BOUND}: every case of the pair is a timed replay, and the arrivals set "
    "the pace of at least one (summary replay_pace), so its out tok/s (wall) follows the trace, not the "
    "engine: no throughput figure, so no paired figure or verdict, and left out of the "
    "Holm adjustment")


#: How an inconclusive verdict starts (``stats.inconclusive_verdict``); its rows say
#: ``INCONCLUSIVE`` and why (``inconclusive_cell``), and the line under the table,
#: ``INCONCLUSIVE_NOTE``, says what that means once.
INCONCLUSIVE = "inconclusive"
INCONCLUSIVE_NOTE = (f"inconclusive: no significant difference, but the ratio interval "
                     f"reaches beyond {1 + DETECTABLE:g}x either way: too few repetitions or too "
                     f"noisy to tell a {100 * DETECTABLE:.0f} % difference from none (more "
                     f"--repeat, or a quieter machine)")
#: An inconclusive row's cell where its unadjusted interval excludes 1
#: (``stats.unadjusted_excludes_one``: ``stats.INCONCLUSIVE_HOLM``, how its verdict,
#: ``stats.holm_inconclusive_verdict``, starts), and where it does not.
INCONCLUSIVE_WIDE = f"{INCONCLUSIVE}: interval reaches beyond {1 + DETECTABLE:g}x either way"
#: Under a table with a ``stats.NOT_SIGNIFICANT_HOLM`` row (its unadjusted interval
#: excludes 1, within 1.1x either way): why its verdict and its interval seem to disagree.
HOLM_NOTE = (
    f"{NOT_SIGNIFICANT_HOLM}: the ratio CI excludes 1 but is unadjusted (as are the diff CI "
    "and the first p); the verdict comes from the p adjusted over the comparison's timed "
    "metrics [in brackets], above 0.05: no significant difference")
#: Under a table with an ``INCONCLUSIVE_HOLM`` row.
INCONCLUSIVE_HOLM_NOTE = (
    f"{HOLM_NOTE}; yet the interval reaches beyond {1 + DETECTABLE:g}x either way, so a "
    f"difference of {100 * DETECTABLE:.0f} % or more is not ruled out either: "
    "inconclusive")


def diff_note(labels: list[str]) -> str:
    """The line under a comparison table whose rows ``labels`` (their metric cells) have
    a diff CI on the other side of "no difference" from their ratio CI
    (``stats.diff_disagrees``): ``diff CI and ratio CI disagree on tok/s: ...``."""
    return (f"diff CI and ratio CI disagree on {', '.join(labels)}: both come from the "
            "same pairs, as separate intervals on different scales (the per-pair "
            "differences, the per-pair log ratios), and part where one pair lies far "
            "from the others; the verdict follows the ratio CI")


def holm_note(cells: list[str]) -> str:
    """The line under a comparison table whose verdict ``cells`` include one not
    significant after Holm's adjustment though its unadjusted interval excludes 1:
    ``HOLM_NOTE`` for ``NOT_SIGNIFICANT_HOLM`` rows, ``INCONCLUSIVE_HOLM_NOTE`` for
    ``INCONCLUSIVE_HOLM`` ones, both said once where there are both; ``""`` without."""
    plain, wide = NOT_SIGNIFICANT_HOLM in cells, INCONCLUSIVE_HOLM in cells
    if plain and wide:
        return (f"{HOLM_NOTE}; in the {INCONCLUSIVE} rows the interval also reaches "
                f"beyond {1 + DETECTABLE:g}x either way, so a difference of "
                f"{100 * DETECTABLE:.0f} % or more is not ruled out either")
    return HOLM_NOTE if plain else INCONCLUSIVE_HOLM_NOTE if wide else ""


def inconclusive_cell(m: dict[str, Any]) -> str:
    """The verdict cell of an inconclusive metric ``m`` (a ``compare_cases`` metric):
    ``INCONCLUSIVE_HOLM`` where its unadjusted ratio interval excludes 1 but the
    Holm-adjusted test finds no significant difference, else ``INCONCLUSIVE_WIDE``."""
    return INCONCLUSIVE_HOLM if unadjusted_excludes_one(m) else INCONCLUSIVE_WIDE


def _p(value: Optional[float]) -> str:
    if value is None:
        return "-"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


#: What the comparison table's ratio and difference columns are, by ``--ci-method``:
#: the geometric mean (t) or the median (bootstrap, sign) of the per-pair ratios
#: treatment / baseline (``PairedComparison.ratio``), and the mean (t) or median of the
#: per-pair differences baseline - treatment: statistics of the pairs (the ``t``
#: ratio is the quotient of the arms' geometric means beside it, ``arm_heads``).
PAIRED_COLUMN_POINTS = {"t": ("geomean", "mean"), "bootstrap": ("median", "median"),
                        "sign": ("median", "median")}


def paired_column_heads(method: str, base: str, treat: str) -> tuple[str, str]:
    """The heads of the comparison table's ratio and difference columns, naming the
    per-pair statistic each shows (``PAIRED_COLUMN_POINTS``): ``cached/send (per-pair
    geomean)`` and ``send-cached (per-pair mean)`` for ``t``; ``(per-pair median)``
    for both with ``bootstrap`` and ``sign``; the bare ``cached/send`` and
    ``send-cached`` for a method it does not know."""
    ratio, diff = f"{treat}/{base}", f"{base}-{treat}"
    if method not in PAIRED_COLUMN_POINTS:
        return ratio, diff
    r, d = PAIRED_COLUMN_POINTS[method]
    return f"{ratio} (per-pair {r})", f"{diff} (per-pair {d})"


def comparison_parts(c: dict[str, Any]) -> Optional[tuple[str, list[str], list[list[str]],
                                                             str]]:
    """One comparison of ``compare_cases`` (a ``summary.json`` ``comparisons`` entry) as
    ``format_comparisons`` prints it: its first line (the codec followed by the model
    where not the null model, ``model_words``), the table's header and rows, and
    the lines under the table (``INCONCLUSIVE_NOTE`` where a verdict is inconclusive,
    the line on its arm columns, ``arms_note``, the Holm note, then the line on withheld
    timings, or on timings shown marked ``°`` (N = 1 on exactly 2 cores:
    ``timings_marked``, whose mark the first line carries after the codec); ``""`` when
    none); ``None`` when it compared no
    metric of ``COMPARED_KEYS`` and withheld none."""
    base, treat = c["baseline"], c["treatment"]
    if c.get("schedules_differ"):  # other batches: no per-step figure is the arms'
        c = dict(c, metrics={k: schedule_bound(m) if k in SCHEDULE_BOUND_KEYS else m
                             for k, m in c["metrics"].items()})
    interval = any(m.get("ratio_ci_low") is not None for m in c["metrics"].values())
    method = (ratio_phrase(c["method"], c["confidence"], interval)
              if c["method"] in INTERVAL_NAMES else c["method"])
    family = c.get("family") or []
    adjusted = (f"; verdicts Holm-adjusted over {len(family)} timed "
                f"metric{'' if len(family) == 1 else 's'}" if family else "")
    keys = [key for key in COMPARED_KEYS if key in c["metrics"]]
    joined = diff_column_joined((c["metrics"][key]["diff_ci_low"],
                                 c["metrics"][key]["diff_ci_high"], metric(key).scale)
                                for key in keys)  # one form for the diff CI column
    rows = [_comparison_row(c["method"], key, c["metrics"][key], bool(c.get("timed")),
                            joined) for key in keys]
    if not rows and not c.get("timings_withheld"):
        return None  # nothing compared (older summaries kept such entries): no header
    withheld = [m["verdict"] for m in c["metrics"].values()
                if m["verdict"].startswith(WITHHELD)]
    if withheld:  # the reason once, not on every row
        adjusted = "; " + withheld[0]
    n = c["n_pairs"]
    named = "model" in (c.get("paired_apart") or ())  # transport_of names it
    mark = cores.SHARED_MARK if c.get("timings_marked") else ""  # as its cases' rows
    title = (f"{treat} vs {base}  [{c['workload']}]  {c['codec']}{transport_of(c)}"
             f"{'' if named else model_words(c.get('model'))}{mark}: "
             f"{treat}/{base} {method}; {n} pair{'' if n == 1 else 's'}" + adjusted)
    ratio_head, diff_head = paired_column_heads(c["method"], base, treat)
    geomeans = any("baseline_geomean" in m for m in c["metrics"].values())
    header = ["metric", "unit", *arm_heads(base, treat, geomeans),
              ratio_head, "ratio CI", diff_head, "diff CI", "p [Holm]", "verdict"]
    held = c.get("timings_withheld")  # analysis.cores: bytes only
    held = held.replace("* timings", "timings", 1) if held else (c.get("timings_marked")
                                                                  or "")
    cells = [r[-1] for r in rows]
    held = "\n".join(x for x in (arms_note(c["method"], geomeans, rows), holm_note(cells),
                                 held) if x)
    parted = [row[0] for key, row in zip(keys, rows) if diff_disagrees(c["metrics"][key])]
    if parted:
        held = "\n".join(x for x in (diff_note(parted), held) if x)
    if any(verdict_of(m).startswith(INCONCLUSIVE) and not unadjusted_excludes_one(m)
           for m in c["metrics"].values()):  # a row inconclusive for its width
        held = "\n".join(x for x in (INCONCLUSIVE_NOTE, held) if x)
    if c.get("schedules_differ"):
        note = schedules_differ_note(bool(c.get("timed")), (base, treat),
                                     bool(c.get("arrival_bound")))
        held = "\n".join(x for x in (note, held) if x)
    elif c.get("arrival_bound") and "output_tokens_per_s" in c["metrics"]:
        held = "\n".join(x for x in (ARRIVAL_BOUND_WITHHELD, held) if x)
    floor = unreachable_note(c["method"], n, len(family), c["confidence"])
    held = "\n".join(x for x in (floor, held) if x)
    return title, header, rows, held


#: Marks an arm's cell in the comparison block that is its arithmetic mean, not its
#: geometric mean (a value of 0 or less: ``stats.arm_cell``), as the report's pair
#: table marks one (``blocks.PAIR_ARITHMETIC_MARK``).
ARITHMETIC_MARK = " †"

#: Marks an arm's cell in the comparison block that is its median over the pairs: a
#: comparison recorded with the arms' geometric means but before their arithmetic means
#: (summaries written from commit 71e6bcf until 00671f0 added them), where a pair has a
#: value of 0 or less, so that there is neither mean to show.
MEDIAN_MARK = " ‡"

#: The line under a comparison block on its ``ARITHMETIC_MARK`` cells.
ARITHMETIC_NOTE = (f"{ARITHMETIC_MARK.strip()}: a pair with a value of 0 or less, so "
                   "neither arm has a geometric mean: each shows its arithmetic mean")

#: The line under a comparison block on its ``MEDIAN_MARK`` cells.
MEDIAN_NOTE = (f"{MEDIAN_MARK.strip()}: a pair with a value of 0 or less, so neither arm "
               "has a geometric mean, and no arithmetic mean recorded (a summary.json "
               "written before they were): each shows its median over the pairs")


def arm_heads(base: str, treat: str, geomeans: bool = True) -> list[str]:
    """The heads of the comparison block's two arm columns: ``send (geometric mean)
    [IQR]`` and ``cached (geometric mean) [IQR]``, as the report's pair table names its
    arms (``blocks.arm_values``); ``geomeans`` false (a comparison recorded before the
    arms' geometric means were): ``send median over reps [IQR]``, what it shows then."""
    if not geomeans:
        return [f"{base} median over reps [IQR]", f"{treat} median over reps [IQR]"]
    return [f"{base} (geometric mean) [IQR]", f"{treat} (geometric mean) [IQR]"]


def arms_note(method: str, geomeans: bool, rows: list[list[str]]) -> str:
    """The line under a comparison block on its arm columns (``arm_heads``), said only
    where needed: with ``--ci-method`` ``sign`` or ``bootstrap`` that the ratio beside
    the arms' geometric means is the median of the per-pair ratios, which can differ
    from their quotient (the pair table's caption, ``blocks._arms_caption``); where a
    cell of ``rows`` is marked ``ARITHMETIC_MARK`` or ``MEDIAN_MARK``, what that is
    (``ARITHMETIC_NOTE``, ``MEDIAN_NOTE``); ``""`` otherwise (the ``t`` ratio is the
    arms' quotient)."""
    if not geomeans:
        return ""
    out = []
    if method in ("sign", "bootstrap"):
        out.append(f"arms: each arm's geometric mean over the pairs [IQR over them]; the "
                   f"{method} ratio beside them is the median of the per-pair ratios, "
                   "which can differ from their quotient")
    for mark, note in ((ARITHMETIC_MARK, ARITHMETIC_NOTE), (MEDIAN_MARK, MEDIAN_NOTE)):
        if any(mark in cell for row in rows for cell in row[2:4]):
            out.append(note)
    return "\n".join(out)


def _arm_cell(m: dict[str, Any], arm: str, scale: float) -> str:
    """One arm's cell of a comparison row: its geometric mean over the pairs
    (``stats.arm_cell``; its arithmetic mean marked ``ARITHMETIC_MARK`` where it has
    none; its median in a comparison recorded before geometric means, and marked
    ``MEDIAN_MARK`` in one recorded with them but before arithmetic means, where it has
    neither) and its IQR, one figure, so grouped as the figure is (``64,075
    [3,422]``); ``-`` for the figure where there is none of them."""
    iqr = f"[{_num(m[f'{arm}_iqr'], scale)}]"
    if f"{arm}_geomean" not in m:
        return f"{_num(m[f'{arm}_median'], scale)} {iqr}"
    value, arithmetic = arm_cell(m, arm)
    if value is None and f"{arm}_mean" not in m and m.get(f"{arm}_median") is not None:
        return f"{_num(m[f'{arm}_median'], scale)}{MEDIAN_MARK} {iqr}"
    if value is None:
        return f"- {iqr}"
    return f"{_num(value, scale)}{ARITHMETIC_MARK if arithmetic else ''} {iqr}"


def transport_of(c: dict[str, Any]) -> str:
    """', tcp' after a comparison's codec where its run compared several transports
    for that codec (``compare_cases``' ``paired_apart``: each transport, and model, is
    paired apart), ', torch model' where several models, '' otherwise."""
    apart = c.get("paired_apart") or ()
    out = f", {c['transport']}" if "transport" in apart and c.get("transport") else ""
    model = c.get("model")
    return out + (f", {model} model" if "model" in apart and model else "")


def model_words(model: Any) -> str:
    """``, emulated model``: what follows a codec's name in a cell or head of the
    cases of ``model`` that a reader may quote apart from the notes naming the model
    (the report's pair and case tables, the comparison block's first line), as the
    findings' summary table names it (``msgpack, emulated model``); ``''`` for the null
    model, the default, or where none is recorded."""
    return f", {model} model" if isinstance(model, str) and model and model != "null" else ""


def model_cell(case: dict[str, Any]) -> str:
    """The model a case (a summary record) ran, for a cell of a table of cases (the
    notebook's), in the words the report's tables give it after the codec
    (``model_words``) and its notes give the null model: ``null model``,
    ``fixed-step model``, ``torch model``, and for the emulated model its preset and
    GPU, as the EMULATED note and the figures' marks name them (``emulated model
    (llama-3.2-1b on NVIDIA H200)``, within the 50 characters pandas shows of a cell;
    ``?`` for a GPU not recorded, no preset for a case written before it was); ``not
    recorded`` where the case names none."""
    model = case.get("model")
    if not isinstance(model, str) or not model:
        return "not recorded"
    if model == "null":
        return "null model"
    words = model_words(model)[len(", "):]
    if model == "emulated":
        words += f" ({_emulated_shape(case)}{case.get('emulated_gpu') or '?'})"
    return words


def format_comparisons(comparisons: Iterable[dict[str, Any]]) -> str:
    """One block per (workload, codec, treatment): per metric, each arm's geometric
    mean over the pairs [IQR] (``arm_heads``: whose quotient is the ``t`` ratio beside
    them, as in the report's pair table; the median in a comparison recorded before
    geometric means), the paired ratio treatment / baseline and the paired difference
    baseline - treatment, each with its interval (point estimates: geometric mean and
    mean of the per-pair ratios and differences for the t method, their medians for
    bootstrap and sign, as the columns' heads say, ``paired_column_heads``), the p-value [after Holm's
    adjustment over the comparison's ``family``] and the verdict (``stats.compare_cases``).
    The block's first line says which metrics the adjustment covered, or why the
    method gives no verdict with so few pairs (the rows then say "no verdict"). A
    comparison with no metric in ``COMPARED_KEYS`` (and no withheld timings) prints
    nothing, not a header over no table (``comparison_parts``)."""
    out = []
    for c in comparisons:
        parts = comparison_parts(c)
        if parts is None:
            continue
        title, header, rows, held = parts
        out.append("\n" + title)
        if rows:
            out.append(render(header, rows))
        if held:
            out.append(held)
    return "\n".join(out)


def _comparison_row(method: str, key: str, m: dict[str, Any], timed: bool = False,
                    joined: Optional[bool] = None) -> list[str]:
    """One metric's row of ``format_comparisons``; a timed replay's (``timed``: the
    comparison's ``timed``) tokens/s row reads ``out tok/s (wall)``; ``joined``: its diff
    CI's form, the column's (``diff_column_joined``), or its own where ``None``."""
    entry = metric(key)
    label, scale, unit = tokens_name(key, entry.short, timed), entry.scale, entry.display_unit
    ci = "-"
    if m["ratio_ci_low"] is not None:
        ci = ratio_interval(m["ratio_ci_low"], m["ratio_ci_high"])
    dci = "-"
    if m["diff_ci_low"] is not None:
        dci = _diff_interval(m["diff_ci_low"], m["diff_ci_high"], scale, joined)
    # the point estimate each interval is centred on: the geometric mean (t) or
    # the median (bootstrap, sign) of the per-pair ratios and differences
    t_method = method == "t"
    ratio = m["ratio_geomean"] if t_method else m["ratio_median"]
    diff = m["diff_mean"] if t_method else m["diff_median"]
    p = EXACT if m["verdict"].startswith(EXACT) else _p(m.get("p_value"))
    if m.get("p_adjusted") is not None:
        p += f" [{_p(m['p_adjusted'])}]"
    return [label, unit, _arm_cell(m, "baseline", scale), _arm_cell(m, "treatment", scale),
            point_text(ratio, 3, 1.0) if ratio is not None else "-", ci,
            _diff_point(diff, scale), dci, p,
            WITHHELD if m["verdict"].startswith(WITHHELD)
            else inconclusive_cell(m) if verdict_of(m).startswith(INCONCLUSIVE)
            else verdict_of(m)]


def captured_steps(steps: int, counted: int) -> str:
    """Which of a case's ``counted`` steps its ``steps`` captured messages per direction
    are, and why they are that many (``capture.build_captures``), so that cases of one
    run checked on other numbers of messages say why: ``every one of its 100 counted
    steps`` (``its only counted step`` for one); ``200 of its 1,000 counted steps,
    evenly spaced (at most 200 per case)``;
    ``22 of its 1,000 counted steps, evenly spaced: its frames are larger, and the
    capture keeps at most 8 MiB of them per direction``."""
    from ipc_bench.analysis.capture import MAX_CAPTURE_BYTES, MAX_MESSAGES, MIN_MESSAGES

    if steps >= counted:
        return ("its only counted step" if counted == 1
                else f"every one of its {counted:,} counted steps")
    text = f"{steps:,} of its {counted:,} counted steps, evenly spaced"
    if steps >= MAX_MESSAGES:
        return text + f" (at most {MAX_MESSAGES:,} per case)"
    mib = f"{MAX_CAPTURE_BYTES / 2 ** 20:g} MiB"
    if steps <= MIN_MESSAGES:
        return (text + f": its frames are larger, and the capture keeps about {mib} of "
                f"them per direction, but never fewer than {MIN_MESSAGES} steps")
    return text + f": its frames are larger, and the capture keeps at most {mib} of them " \
        "per direction"


def format_byte_model(rows: Iterable[dict[str, Any]]) -> str:
    """Lines saying whether the byte model held on the captured messages of each case,
    both directions counted under the case's arm (``400 of 400 messages exact (both
    directions: 200 SchedulerOutput, 200 ModelRunnerOutput; 200 of its 1,000 counted
    steps, evenly spaced (at most 200 per case))``: ``captured_steps`` says which steps
    and why that many, so cases checked on other numbers say why; a row of an older
    run, without the split: ``(both directions)``, without ``counted_steps``: the split
    alone), and the per-request bytes ``send`` adds over ``cached`` that it implies: on
    the captured steps, the expectation for the run's ids (an id with its own framing:
    the id list's own bytes, spread over the running requests, are in the other two)
    and as measured over the run."""
    out = ["\nbyte model (ipc_bench.analysis.bytemodel) on the captured pure-decode messages:"]
    for r in rows:
        s2r, r2s = r.get("scheduler_outputs_checked"), r.get("model_runner_outputs_checked")
        split = (f": {s2r} SchedulerOutput, {r2s} ModelRunnerOutput"
                 if s2r is not None and r2s is not None else "")
        if split and r.get("counted_steps"):
            split += "; " + captured_steps(s2r, int(r["counted_steps"]))
        line = (f"  [{r['workload']}] {r['codec']} {r['arm']}: "
                f"{r['messages_checked'] - r['mismatches']} of {r['messages_checked']} "
                f"messages exact (both directions{split})")
        if r.get("model_send_minus_cached_bytes_per_request") is not None:
            expected = r.get("expected_send_minus_cached_bytes_per_request",
                             r["uniform_send_minus_cached_bytes_per_request"])
            basis = (f"{r.get('token_ids', 'uniform')} ids in a {r['vocab_size']:,} "
                     "vocabulary" if r["codec"] != "packed"
                     else "one array('i') per request from 256 running on")
            name = r.get("difference") or f"{r['arm']} - {r.get('cached_arm') or 'cached'}"
            own = ("" if r["codec"] == "packed"
                   else " per id with its own framing, not the outer list's")
            line += (f"; {name} = "
                     f"{r['model_send_minus_cached_bytes_per_request']:.3f} B per running "
                     f"request on these steps ({basis}: {expected:.3f}{own}")
            measured = r.get("measured_send_minus_cached_bytes_per_request")
            line += f"; measured over the run: {measured:.3f})" if measured is not None else ")"
        out.append(line)
    return "\n".join(out)


LATENCY_TABLE = IDENTITY + ("ttft_ms_p50", "ttft_ms_p99", "tpot_ms_mean", "itl_ms_p50",
                            "itl_ms_p99", "e2e_ms_p50", "e2e_ms_p99")


#: Under the latency table, in the terminal and the report, where no timed replay
#: records the figures that label its pace (``pace.replay_pace``: a run before them;
#: ``arrival_bound_note``): whether it kept up with its arrivals is unknown.
PACE_NOT_RECORDED_NOTE = ("pace not recorded (a run before the figures that label it): "
                          "tokens/s (wall) may be arrival-bound, and then not a throughput "
                          "comparison between arms.")


def most_load_bound(load: list[dict[str, Any]]) -> dict[str, Any]:
    """Of the load-bound timed replays ``load`` (``summary.json`` cases), the one the
    note and the finding name: the one whose requests waited after the largest share of
    its steps (``waiting_step_share``; one that queued before one load-bound only as
    an offline batch, ``pace.arrived_at_start``), else, where none records
    ``num_waiting``, the one whose arrivals took the smallest share of its wall time."""
    from ipc_bench.analysis.pace import arrived_at_start, replay_pace_basis

    waited = [s for s in load if replay_pace_basis(s) == "num_waiting"]
    if waited:  # one that queued before one that is an offline batch
        return max(waited, key=lambda s: (not arrived_at_start(s), s["waiting_step_share"]))
    return min(load, key=lambda s: s["arrival_span_share"])


def pace_measures_sentence(timed: list[dict[str, Any]]) -> str:
    """Which measure labelled the timed replays ``timed`` (``summary.json`` cases with
    a ``pace.replay_pace``): ``Pace by num_waiting (load-bound where a request was
    left waiting after at least 50 % of a replay's steps) for 2 cases.``, and, for cases
    of a run before ``num_waiting``, ``... by arrival_span_share (a run before
    num_waiting: load-bound where the last request arrived less than 50 % of the way
    into the wall time) for 1 case.``; ``""`` without such cases."""
    from ipc_bench.analysis.pace import (ARRIVAL_BOUND_SHARE, BURST_QUEUE_MIN,
                                            IDLE_SHARE_MAX, QUEUED_STEP_SHARE,
                                            replay_pace_basis)

    counts: dict[str, int] = {}
    for s in timed:
        basis = replay_pace_basis(s)
        if basis is not None:
            counts[basis] = counts.get(basis, 0) + 1
    rule = {"num_waiting": "load-bound where every request arrived at the start, or "
                           "where a request was left waiting after at least "
                           f"{100 * QUEUED_STEP_SHARE:.0f} % of a replay's steps (or "
                           f"after fewer, with {BURST_QUEUE_MIN:g} or more per step on "
                           "average, where the last request arrived less than "
                           f"{100 * ARRIVAL_BOUND_SHARE:.0f} % of the way into the wall "
                           "time) and the engine idled less than "
                           f"{100 * IDLE_SHARE_MAX:.0f} % of the wall time",
            "arrival_span_share": "a run before num_waiting: load-bound where the last "
                                  f"request arrived less than {100 * ARRIVAL_BOUND_SHARE:.0f}"
                                  " % of the way into the wall time"}
    parts = [f"{basis} ({rule[basis]}) for {n} case{'s' if n > 1 else ''}"
             for basis, n in counts.items()]
    return f" Pace by {' and by '.join(parts)}." if parts else ""


def arrival_bound_note(summaries: Iterable[dict[str, Any]]) -> str:
    """The note under the latency table (terminal and report): where no timed replay
    among ``summaries`` (``summary.json`` cases) is load-bound (``pace.replay_pace``),
    ``Both timed replay cases are arrival-bound: ...`` (``PACE_NOT_RECORDED_NOTE``
    where none records the figures that label it), else which are and what that means,
    e.g. ``Both timed
    replay cases are load-bound, not arrival-bound (azure-conv-timed/send/msgpack/...:
    by num_waiting: a request was left waiting after 78 % of its steps, 12.3 per step on
    average): ...``, naming the case ``most_load_bound`` picks
    (``pace.replay_pace_evidence``), what that means by that case: ``AT_START_WHY``
    for an offline batch, ``BURST_WHY`` for a burst the engine drained
    (``pace.drained_a_burst``), else a backlog's words; then which measure labelled the
    cases (``pace_measures_sentence``)."""
    from ipc_bench.analysis.pace import (arrived_at_start, drained_a_burst, replay_pace,
                                         replay_pace_evidence)

    summaries = list(summaries)
    timed = [s for s in summaries if replay_pace(s) is not None]
    load = [s for s in timed if replay_pace(s) == "load-bound"]
    measures = pace_measures_sentence(timed) + _unlabelled_sentence(summaries)
    if not load:
        if not measures:  # no timed replay with the figures that label one
            return PACE_NOT_RECORDED_NOTE
        return (f"{_cases_are(len(timed), len(timed))} arrival-bound: {engine_phrase(timed)}, so the trace, not the "
                "engine, set the pace; "
                f"{'their' if len(timed) > 1 else 'its'} tokens/s (wall) is not a "
                "throughput comparison between arms." + measures)
    worst = most_load_bound(load)
    head = (f"{_cases_are(len(load), len(timed))} load-bound, not arrival-bound "
            f"({worst.get('case_id')}: {replay_pace_evidence(worst)}): ")
    why = (AT_START_WHY if arrived_at_start(worst) else
           BURST_WHY if drained_a_burst(worst) else
           "the requests arrived faster than the engine served them and queued, so the "
           "engine, not the trace, set the pace; there tokens/s (wall) is the engine's "
           "throughput under that backlog, comparable between arms as such, and TTFT is "
           "mostly queueing delay.")
    return (head + why
            + ("" if len(load) == len(timed) else " The others are arrival-bound"
               + _others_bursts([s for s in timed if s not in load])
               + ": their tokens/s is not a throughput comparison between arms.")
            + measures)


#: Why a timed replay load-bound only as an offline batch (``pace.arrived_at_start``:
#: every request arrived at its start) is so, in ``arrival_bound_note``.
AT_START_WHY = ("every request arrived at the start, so the engine's time on that "
                "batch, not the trace, set the pace; there tokens/s (wall) is the "
                "engine's throughput on that batch, comparable between arms as such.")


#: Why a timed replay load-bound only as a burst the engine drained
#: (``pace.drained_a_burst``) is so, in ``arrival_bound_note``: its wall time ends with
#: its longest requests' tails, so its tokens/s (wall) is no saturated engine's throughput.
BURST_WHY = ("a burst of requests arrived faster than the engine served them and "
             "queued, and the engine drained it, so the engine, not the trace, set the "
             "pace; there tokens/s (wall) compares the arms' times to drain the same "
             "burst but is no saturated engine's throughput: a drained burst's wall time "
             "ends with the tails of its longest requests, few requests running, so it "
             "depends on the trace's longest outputs (the engine's throughput while busy "
             "is busy_output_tokens_per_s in summary.json, over the counted steps, those "
             "tails among them), and TTFT is mostly queueing delay.")


def _cases_are(n: int, of: int) -> str:
    """``n`` of ``of`` timed replay cases as the subject of the pace note: ``1 timed
    replay case is``, ``Both timed replay cases are``, ``All 6 timed replay cases
    are`` (``n == of``), ``1 of 2 timed replay cases is``."""
    if n < of:
        return f"{n} of {of} timed replay cases {'are' if n > 1 else 'is'}"
    return {1: "1 timed replay case is", 2: "Both timed replay cases are"}.get(
        n, f"All {n} timed replay cases are")


def _unlabelled_sentence(summaries: list[dict[str, Any]]) -> str:
    """Where some timed replays among ``summaries`` are labelled and others record no
    figure that labels a pace (a run before them), the others counted: `` 1 more timed
    replay case records no pace (a run before the figures that label it): its tokens/s
    (wall) may be arrival-bound.``; ``""`` where every one or none is labelled."""
    from ipc_bench.analysis.pace import replay_pace

    timed = [s for s in summaries if s.get("trace_speedup") is not None]
    n = sum(replay_pace(s) is None for s in timed)
    if n == 0 or n == len(timed):
        return ""
    return (f" {n} more timed replay case{'s' if n > 1 else ''} "
            f"record{'' if n > 1 else 's'} no pace (a run before the figures that label "
            f"it): {'their' if n > 1 else 'its'} tokens/s (wall) may be arrival-bound.")


def _others_bursts(arrival_bound: list[dict[str, Any]]) -> str:
    """``engine_phrase`` for the arrival-bound cases beside load-bound ones, in
    parentheses, where one queued bursts: `` (the engine kept up with the arrivals or,
    in 1 of 2 cases, ...)``; else ``""``."""
    phrase = engine_phrase(arrival_bound)
    return "" if phrase == KEPT_UP else f" ({phrase})"


#: What the engine did in an arrival-bound timed replay that queued nothing for long.
KEPT_UP = "the engine kept up with the arrivals"


def engine_phrase(arrival_bound: list[dict[str, Any]]) -> str:
    """What the engine did in the arrival-bound timed replays ``arrival_bound``
    (``summary.json`` cases): ``KEPT_UP``, or, where some queued the bursts their
    arrivals brought and idled between them (``pace.idled_between_bursts``), that,
    with the figures of the one that idled least: ``the engine queued the bursts the
    arrivals brought and idled between them (CASE: by num_waiting: ..., but the engine
    idled 25 % of its wall time, waiting for arrivals)``, ``the engine kept up with the
    arrivals or, in 1 of 2 cases, queued ...``."""
    from ipc_bench.analysis.pace import idled_between_bursts, replay_pace_evidence

    bursty = [s for s in arrival_bound if idled_between_bursts(s)]
    if not bursty:
        return KEPT_UP
    least = min(bursty, key=lambda s: s["idle_share"])
    what = (f"queued the bursts the arrivals brought and idled between them "
            f"({least.get('case_id')}: {replay_pace_evidence(least)})")
    if len(bursty) == len(arrival_bound):
        return f"the engine {what}"
    return f"{KEPT_UP} or, in {len(bursty)} of {len(arrival_bound)} cases, {what}"


def has_latency(summary: dict[str, Any]) -> bool:
    """Whether a finished case records request latencies (a ``LATENCY_TABLE`` figure
    set: not ``None`` nor NaN, a ``Results.cases`` record's empty cell): a timed
    replay's or a soak's with a request that sampled a token. One whose TTFT, TPOT and
    E2E figures the loader withheld (``row_checks._withheld_latencies``) keeps its row,
    those cells empty."""
    return not case_unfinished(summary) and any(
        summary.get(k) is not None and summary.get(k) == summary.get(k)
        for k in LATENCY_TABLE if k not in IDENTITY)


def latency_title(cases: list[dict[str, Any]]) -> str:
    """``Latency (timed replay at 10x real time; TTFT from intended arrival)``: the
    latency table's title, from the first case's ``trace_speedup``."""
    return (f"Latency (timed replay at {cases[0].get('trace_speedup'):g}x real time; "
            "TTFT from intended arrival)")


#: A p99 (numpy's linear percentile, ``stats.percentiles_ms``) over this many values or
#: fewer lies between the two largest of them (``p99_note``).
P99_FEW_VALUES = 100


def p99_note(parts: Sequence[tuple[str, Optional[int], str]]) -> str:
    """The note under a table of p99s that some case took over ``P99_FEW_VALUES`` values
    or fewer: ``A p99 over 100 or fewer values lies between its case's two largest
    values: read it as about the maximum, not as a tail percentile (here TTFT and E2E
    p99, over as few as 6 requests; ITL p99, over as few as 40 gaps).``; ``''`` when
    none did. ``parts``: per p99 the table prints, its label, the fewest values a case
    shown took it over (``None``: not known, said nothing of) and what they are
    (``requests``); labels of the same count and unit are said together. With one
    value somewhere the note adds that a p99 over one value is that value.

    A p99 here is numpy's linear interpolation at rank 0.99 * (n - 1) of n sorted
    values (rank 0 the smallest). That rank lies strictly between n - 2 and n - 1,
    between the two largest values, exactly when 2 <= n <= 100; at n = 101 it is
    n - 2, the second largest value, and it falls below that only from n = 102."""
    few: dict[tuple[int, str], list[str]] = {}
    for label, n, unit in parts:
        if n is not None and 0 < n <= P99_FEW_VALUES:
            few.setdefault((n, unit), []).append(label)
    if not few:
        return ""
    said = "; ".join(f"{' and '.join(labels)} p99, over as few as {n:,} "
                     f"{unit if n != 1 else unit[:-1]}"
                     for (n, unit), labels in few.items())
    one = " (over one value, is that value)" if any(n == 1 for n, _ in few) else ""
    return (f"A p99 over {P99_FEW_VALUES} or fewer values lies between its case's two "
            f"largest values{one}: read it as about the maximum, not as a tail "
            f"percentile (here {said}).")


def fewest(records: Iterable[dict[str, Any]], figure: str, count: str,
           fallback: Optional[Any] = None) -> Optional[int]:
    """The fewest values the p99 ``figure`` (a summary field, ``ttft_ms_p99``) is over
    among ``records`` that have it: their ``count`` field (``ttft_count``), else, in
    a summary written before it, ``fallback(record)`` (``None``: not known); ``None``
    when no record has both."""
    counts = []
    for r in records:
        if is_missing(r.get(figure)):
            continue
        n = r.get(count)
        n = fallback(r) if is_missing(n) and fallback is not None else n
        if not is_missing(n):
            counts.append(int(n))
    return min(counts) if counts else None


def _served(record: dict[str, Any]) -> Optional[int]:
    """The requests a case served (``num_requests`` less those rejected on arrival,
    which have no latencies): what its TTFT and E2E are over, in a summary written
    before ``ttft_count`` and ``e2e_count``; ``None`` without ``num_requests``."""
    if is_missing(record.get("num_requests")):
        return None
    return int(record["num_requests"]) - int(record.get("num_rejected") or 0)


def latency_p99_note(records: list[dict[str, Any]]) -> str:
    """``p99_note`` for the Latency table's p99s (``LATENCY_TABLE``: TTFT, ITL and E2E;
    its TPOT is the mean, so TPOT p99, over the requests of two output tokens or more,
    is not said): over as few as N requests (``ttft_count``, ``e2e_count``; a summary
    without them: the requests served) or gaps (``itl_count``; without it: not known).
    Under the terminal's and the report's Latency tables."""
    return p99_note([
        ("TTFT", fewest(records, "ttft_ms_p99", "ttft_count", _served), "requests"),
        ("ITL", fewest(records, "itl_ms_p99", "itl_count"), "gaps"),
        ("E2E", fewest(records, "e2e_ms_p99", "e2e_count", _served), "requests")])


def runner_gap_p99_note(records: list[dict[str, Any]]) -> str:
    """``p99_note`` for the runner-gap table's p99s (``gap us p99``, ``gap % p99``):
    over as few as N counted steps (``runner_gap_count``; a summary without it: not
    known). Under the terminal's and the report's runner-gap tables."""
    return p99_note([("gap us p99 and gap %", fewest(
        records, "runner_gap_ns_p99", "runner_gap_count"), "counted steps")])


def format_latency(summaries: Iterable[dict[str, Any]]) -> str:
    """Request latencies (ms: ``LATENCY_TABLE``, defined in
    ``metrics.LATENCY_MEANINGS``) per finished case of a timed replay or soak (with
    repetitions a ``rep`` column first), with the arrival-bound caveat; '' when no
    finished case has latencies. The report's Latency section shows the same cells."""
    cases = [s for s in summaries if has_latency(s)]
    if not cases:
        return ""
    few = latency_p99_note(cases)
    shared = cores.marked_footnote(cases)
    return (f"\n{latency_title(cases)}\n" + _table(LATENCY_TABLE, cases)
            + (f"\n{shared}" if shared else "")
            + "\nNote: " + arrival_bound_note(cases) + (f"\nNote: {few}" if few else ""))
