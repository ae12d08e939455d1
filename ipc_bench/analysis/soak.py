"""Long runs: memory growth, streamed case summaries and byte drift.

A soak run (``scenarios/soak.py``) replays a whole trace for minutes and asks two
questions: does either process's memory grow (a leak), and do the bytes per step
drift (state that piles up in the messages)? For the answer to mean anything, the
harness's own records must not grow with the run: a streamed case
(``CaseSpec.stream``) writes its per-step and per-request records to the run folder
as it goes and drops them (``ipc_bench.harness.recording``): rows are packed as int64
until the next flush, a request leaves the scheduler's state the step it finishes,
and ``StreamStats`` keeps the running sums the case summary needs (40 bytes per flush
window; per-request latencies and token gaps go to scratch files). What stays in
memory grows by about 100 bytes a second (window sums and packed RSS samples), some 6 KiB a minute.
The rest of a process's memory is the allocators': ``IPC_BENCH_HEAP_REPORT``
(``ipc_bench.harness.memory.HeapReport``) tells live objects from memory held free.

- ``ipc_bench.harness.memory.RssSampler``: a background thread that reads ``VmRSS`` and ``RssAnon`` of this
  process and of the runner from ``/proc/<pid>/status`` every ``interval_s`` seconds.
  It sleeps between samples and never touches the loop, so the hot path is unchanged.
  ``VmRSS`` also counts mapped file pages (shared libraries), which the kernel drops
  under memory pressure from anything else on the machine; ``RssAnon`` (heap, numpy
  buffers) is what a leak grows, so both are kept and judged.
- ``rss_growth``: growth after warm-up. Warm-up is the first ``WARMUP_FRACTION`` of
  the samples' time span; the baseline is the mean RSS over the next
  ``WARMUP_FRACTION`` (so one sample's noise does not decide it), the end is the
  mean over the last ``WARMUP_FRACTION``; growth = end / baseline - 1. Also the
  largest sample after warm-up over the baseline, and a least-squares slope. The
  verdicts (``GROWTH_GOAL_PCT`` for RSS, ``PY_FLAT_PCT`` for the live Python
  allocations) judge the growth at the end and say so; the largest is named beside
  them where it shows higher, reported, not judged (``verdict_text``).
- ``stream_drift``: the same windows applied to bytes per scheduled request in
  pure-decode steps (``s2r_payload_bytes / num_reqs``), per direction; a batch's
  size changes with the trace's load, bytes per request should not.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ipc_bench.analysis.stats import percentiles_ms
from ipc_bench.harness.memory import SAMPLE_COLUMNS
from ipc_bench.harness.recording import StreamStats

#: Share of a run counted as warm-up, and the width of the baseline and end windows.
WARMUP_FRACTION = 0.10


def _windows(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Masks of the warm-up, baseline and end windows over times ``t`` (sorted)."""
    t0, t1 = float(t[0]), float(t[-1])
    span = t1 - t0
    w = WARMUP_FRACTION * span
    warm = t < t0 + w
    base = (t >= t0 + w) & (t < t0 + 2 * w)
    end = t >= t1 - w
    return warm, base, end


def rss_growth(t_s: Sequence[float], rss: Sequence[Optional[int]]) -> dict[str, Any]:
    """Growth of one process's RSS after warm-up (see the module docstring).

    Returns ``rss_baseline_bytes``, ``rss_end_bytes``, ``rss_max_bytes`` (after
    warm-up), ``rss_growth_pct`` (end over baseline), ``rss_max_growth_pct``,
    ``rss_slope_bytes_per_min`` (least squares over the samples after warm-up) and
    ``rss_late_slope_bytes_per_min`` (over the second half of the run only: memory
    that rose with a peak of load and then stayed flat has a late slope near 0, a leak
    keeps climbing), with the seconds each slope's samples span
    (``rss_slope_span_s``, ``rss_late_slope_span_s``: a rate per minute fitted over
    seconds is no trend, so the lines print the span beside it); empty when fewer than
    10 samples have a value.
    """
    pairs = [(t, r) for t, r in zip(t_s, rss) if r is not None]
    if len(pairs) < 10:
        return {}
    t = np.array([p[0] for p in pairs], dtype=np.float64)
    r = np.array([p[1] for p in pairs], dtype=np.float64)
    warm, base, end = _windows(t)
    if not base.any() or not end.any():
        return {}
    after = ~warm
    late = t >= (t[0] + t[-1]) / 2
    baseline = float(r[base].mean())
    final = float(r[end].mean())
    peak = float(r[after].max())

    def slope(mask) -> float:
        return float(np.polyfit(t[mask], r[mask], 1)[0]) * 60.0 if mask.sum() > 1 else 0.0

    def span_s(mask) -> float:
        return float(t[mask][-1] - t[mask][0]) if mask.any() else 0.0

    return dict(rss_baseline_bytes=baseline, rss_end_bytes=final, rss_max_bytes=peak,
                rss_growth_pct=100.0 * (final / baseline - 1.0),
                rss_max_growth_pct=100.0 * (peak / baseline - 1.0),
                rss_slope_bytes_per_min=slope(after),
                rss_late_slope_bytes_per_min=slope(late),
                rss_slope_span_s=span_s(after), rss_late_slope_span_s=span_s(late))


def rss_summary(samples: list[tuple]) -> dict[str, Any]:
    """Growth figures (``rss_growth``) of sampler output in ``SAMPLE_COLUMNS`` order:
    ``sched_rss_*``, ``sched_anon_*`` (``RssAnon``), ``runner_rss_*``,
    ``runner_anon_*``, ``sched_py_*`` (live Python allocations: the ``_bytes`` fields
    count blocks), plus ``rss_num_samples``."""
    if not samples:
        return {}
    t = [s[0] for s in samples]
    out: dict[str, Any] = {"rss_num_samples": len(samples)}
    for i, name in enumerate(SAMPLE_COLUMNS[1:len(samples[0])], 1):
        who, kind = name.split("_")[:2]
        for k, v in rss_growth(t, [s[i] for s in samples]).items():
            out[f"{who}_{k.replace('rss_', kind + '_', 1)}"] = v
    return out


def stream_drift(stats: StreamStats) -> dict[str, Any]:
    """Bytes per scheduled request in pure-decode steps: baseline window (after
    warm-up) and end window, per direction, and their change in percent."""
    if len(stats.win_t_s) < 10:
        return {}
    t = np.frombuffer(stats.win_t_s, dtype=np.float64)
    reqs = np.frombuffer(stats.win_decode_reqs, dtype=np.int64)
    _, base, end = _windows(t)
    out: dict[str, Any] = {}
    for name, arr in (("s2r", stats.win_decode_s2r), ("r2s", stats.win_decode_r2s)):
        b = np.frombuffer(arr, dtype=np.int64)
        if not reqs[base].sum() or not reqs[end].sum():
            return {}
        first = float(b[base].sum() / reqs[base].sum())
        last = float(b[end].sum() / reqs[end].sum())
        out[f"{name}_decode_bytes_per_req_baseline"] = first
        out[f"{name}_decode_bytes_per_req_end"] = last
        out[f"{name}_decode_bytes_per_req_drift_pct"] = 100.0 * (last / first - 1.0)
    return out



def stream_summary(stats: StreamStats) -> dict[str, Any]:
    """The fields ``summary.summarize_case`` gives a streamed case, from the sums.

    Its byte figures are payload bytes (the encoded messages' lengths, ``steps.csv``'s
    ``s2r_payload_bytes`` and ``r2s_payload_bytes``), none of them wire bytes:
    ``s2r_payload_bytes_total`` and ``r2s_payload_bytes_total`` over every step, warm-up
    included, and ``*_payload_bytes_per_step`` over the counted steps, without frame
    heads or marker frames. A case kept whole gives wire totals instead
    (``summary._wire_bytes``: ``s2r_wire_bytes_total``, ``r2s_wire_bytes_total``); the
    sums here cannot (a frame's head depends on its own length), so a streamed case
    has none. Raises nothing."""
    n = stats.num_counted_steps
    out: dict[str, Any] = dict(
        num_steps=n, num_warmup_steps=stats.num_warmup_steps,
        warmup_token_share=(stats.scheduled_tokens_warmup / stats.scheduled_tokens_total
                            if stats.scheduled_tokens_total else None),
        num_total_steps=stats.num_total_steps, num_requests=stats.num_requests,
        num_finished=stats.num_finished,
        num_cut_at_max_model_len=stats.num_cut_at_max_model_len,
        s2r_payload_bytes_total=stats.s2r_bytes_total,
        r2s_payload_bytes_total=stats.r2s_bytes_total)
    if n:
        s = stats.sums
        step_s = s["step_ns"] / 1e9
        out.update(
            output_tokens=s["num_output_tokens"],
            busy_output_tokens_per_s=s["num_output_tokens"] / step_s if step_s else None,
            num_running_mean=s["num_reqs"] / n,
            step_ns_mean=s["step_ns"] / n,
            sched_to_runner_payload_bytes_per_step=s["s2r_payload_bytes"] / n,
            runner_to_sched_payload_bytes_per_step=s["r2s_payload_bytes"] / n,
            sched_ns_per_step=s["sched_ns"] / n,
            sched_build_ns_per_step=s["build_ns"] / n,
            sched_encode_ns_per_step=s["encode_ns"] / n,
            sched_send_ns_per_step=s["send_ns"] / n,
            sched_wait_ns_per_step=s["wait_ns"] / n,
            sched_decode_ns_per_step=s["decode_ns"] / n,
            sched_update_ns_per_step=s["update_ns"] / n,
            sched_cpu_ns_per_step=s["sched_cpu_ns"] / n,
            sched_gc_collections_per_step=s["gc_collections"] / n,
            sched_gc_ns_per_step=s["gc_ns"] / n,
        )
    for name in ("ttft", "tpot", "itl", "e2e"):  # as summary.latency_summary's
        values = stats.latencies_s(f"{name}_s")
        out.update(percentiles_ms(values, name))
        if len(values):  # as summary.latency_counts
            out[f"{name}_count"] = int(len(values))
    out.update(stream_drift(stats))
    return out


# --------------------------------------------------------------------------------------
# memory: the terminal's lines and the report's finding and table, one definition

#: Growth of memory after warm-up a soak aims to stay under, in percent. Judged on the
#: growth at the end (``rss_growth_pct``: the mean over the last ``WARMUP_FRACTION`` of
#: the run over the baseline after warm-up); the largest growth after warm-up (one
#: sample over the baseline, ``rss_max_growth_pct``) is reported beside it, not judged:
#: memory that peaked with the load and fell back is no leak.
GROWTH_GOAL_PCT = 5.0
#: The live Python allocations (``sched_py_*``, blocks) count as flat when their growth
#: at the end (as ``GROWTH_GOAL_PCT``'s) is within ±1 %; the largest after warm-up is
#: reported beside it, not judged. ±1 % is a fifth of the RSS goal, and far above what
#: the streamed harness keeps (about 6 KiB a minute, module docstring). Flat with RSS
#: over the goal points at the allocator (memory held free, fragmentation); not flat, at
#: live objects: a leak is possible.
PY_FLAT_PCT = 1.0
#: (process, summary prefix part, label) of each memory measure, in the terminal's order.
MEMORY_MEASURES = (("sched", "rss", "VmRSS"), ("sched", "anon", "RssAnon"),
                   ("runner", "rss", "VmRSS"), ("runner", "anon", "RssAnon"))
MEMORY_TABLE_HEADER = ["process", "measure", "baseline MiB", "end MiB", "growth at the end %",
                       "largest after warm-up %", "slope KiB/min (span)",
                       "second half KiB/min (span)", "verdict"]


def _f(summary: dict[str, Any], key: str) -> Optional[float]:
    """``summary[key]`` as ``step_noise.float_or_none`` reads a figure."""
    from ipc_bench.analysis.step_noise import float_or_none

    return float_or_none(summary.get(key))


def memory_verdict(growth_pct: float) -> str:
    """``ok`` when the growth at the end (percent) is under ``GROWTH_GOAL_PCT``, else
    ``OVER``."""
    return "ok" if growth_pct < GROWTH_GOAL_PCT else "OVER"


def _largest(growth_pct: float, max_growth_pct: Optional[float]) -> str:
    """``; the largest after warm-up, +5.11 %, is not judged`` when the largest growth
    after warm-up (percent) shows higher than the growth at the end, else empty."""
    if max_growth_pct is None or f"{max_growth_pct:+.2f}" == f"{growth_pct:+.2f}" \
            or max_growth_pct < growth_pct:
        return ""
    return f"; the largest after warm-up, {max_growth_pct:+.2f} %, is not judged"


def verdict_text(m: dict) -> str:
    """The verdict of one measure (``memory_measures``' figures) with the growth it
    judges, the growth at the end, against the goal, and the largest growth after
    warm-up where it shows higher (``GROWTH_GOAL_PCT``): e.g. ``ok (growth at the end
    +2.62 % < 5 %; the largest after warm-up, +5.11 %, is not judged)``."""
    g = m["growth_pct"]
    rel = "<" if m["verdict"] == "ok" else "≥"
    return (f"{m['verdict']} (growth at the end {g:+.2f} % {rel} {GROWTH_GOAL_PCT:g} %"
            f"{_largest(g, m['max_growth_pct'])})")


def memory_measures(summary: dict[str, Any]) -> list[tuple[str, str, Optional[dict]]]:
    """(process, label, figures) per ``MEMORY_MEASURES``; figures ``None`` when the case
    had too few samples, else baseline / end MiB, growth at the end / largest after
    warm-up %, slopes KiB/min, the seconds each slope spans (``None`` in a summary
    written before they were recorded) and the verdict (``memory_verdict``)."""
    out = []
    for who, kind, label in MEMORY_MEASURES:
        key = f"{who}_{kind}"
        g = _f(summary, f"{key}_growth_pct")
        if g is None:
            out.append((who, label, None))
            continue
        out.append((who, label, dict(
            baseline_mib=(_f(summary, f"{key}_baseline_bytes") or 0.0) / 2**20,
            end_mib=(_f(summary, f"{key}_end_bytes") or 0.0) / 2**20, growth_pct=g,
            max_growth_pct=_f(summary, f"{key}_max_growth_pct") or 0.0,
            slope_kib=(_f(summary, f"{key}_slope_bytes_per_min") or 0.0) / 2**10,
            late_slope_kib=(_f(summary, f"{key}_late_slope_bytes_per_min") or 0.0) / 2**10,
            slope_span_s=_f(summary, f"{key}_slope_span_s"),
            late_slope_span_s=_f(summary, f"{key}_late_slope_span_s"),
            verdict=memory_verdict(g))))
    return out


def memory_line(who: str, label: str, m: Optional[dict], pad: bool = True) -> str:
    """One measure as the terminal prints it (without its indent), e.g. ``sched  RssAnon:
    baseline 20.1 MiB, end 23.1 MiB, slope +120.0 KiB/min, second half +80.0 KiB/min:
    OVER (growth at the end +15.12 % ≥ 5 %; the largest after warm-up, +16.00 %, is not
    judged)`` (``verdict_text``); ``pad=False``: the names unpadded (the report's
    sentence)."""
    name = f"{who:6s} {label:7s}" if pad else f"{who} {label}"
    if m is None:
        return f"{name}: too few samples"
    return (f"{name}: baseline {m['baseline_mib']:.1f} MiB, end {m['end_mib']:.1f} MiB, "
            f"slope {_slope(m['slope_kib'], m['slope_span_s'])}, second half "
            f"{_slope(m['late_slope_kib'], m['late_slope_span_s'])}: {verdict_text(m)}")


def _slope(kib_per_min: float, span_s: Optional[float]) -> str:
    """``+120.0 KiB/min over 54 s``: a slope and the seconds its samples span (the
    rate alone where the summary predates the span)."""
    rate = f"{kib_per_min:+.1f} KiB/min"
    return rate if span_s is None else f"{rate} over {span_s:,.0f} s"


def _slope_cell(kib_per_min: float, span_s: Optional[float]) -> str:
    """``MEMORY_TABLE_HEADER``'s slope cell: ``+120.0 (54 s)``, ``+120.0`` without a span."""
    rate = f"{kib_per_min:+.1f}"
    return rate if span_s is None else f"{rate} ({span_s:,.0f} s)"


def python_line(summary: dict[str, Any]) -> Optional[str]:
    """The scheduler's live Python allocations after warm-up, judged flat or not on
    their growth at the end (``PY_FLAT_PCT``), the largest after warm-up beside it where
    it shows higher, and what the verdict says; ``None`` when not sampled."""
    g = _f(summary, "sched_py_growth_pct")
    if g is None:
        return None
    flat = abs(g) <= PY_FLAT_PCT
    judged = (f"growth at the end {g:+.2f} %, {'within' if flat else 'beyond'} "
              f"±{PY_FLAT_PCT:g} %{_largest(g, _f(summary, 'sched_py_max_growth_pct'))}")
    what = (f"flat ({judged}): growth of RSS is then allocator fragmentation or memory "
            "held free, not live Python objects" if flat else
            f"not flat ({judged}): live Python objects grew, a leak is possible")
    return (f"sched  live Python allocations: {_f(summary, 'sched_py_baseline_bytes') or 0:,.0f}"
            f" -> {_f(summary, 'sched_py_end_bytes') or 0:,.0f} blocks: {what}")


def memory_lines(summary: dict[str, Any], pad: bool = True) -> list[str]:
    """The terminal's memory lines of one soak case (``memory_line`` per measure, then
    ``python_line``); the report's finding joins the same lines, unpadded."""
    out = [memory_line(*m, pad=pad) for m in memory_measures(summary)]
    py = python_line(summary)
    return out + ([" ".join(py.split()) if not pad else py] if py else [])


def memory_finding(summary: dict[str, Any]) -> Optional[str]:
    """The report's finding on one soak case's memory: the verdict over the measures,
    on the growth at the end (``GROWTH_GOAL_PCT``), naming any measure whose largest
    growth after warm-up reached the goal when none is over it at the end; then
    ``memory_lines`` verbatim; ``None`` when no measure had enough samples."""
    measures = [(who, label, m) for who, label, m in memory_measures(summary) if m]
    if not measures:
        return None
    over = [f"{who} {label} {m['growth_pct']:+.2f} %" for who, label, m in measures
            if m["verdict"] == "OVER"]
    peaks = [f"{who} {label} {m['max_growth_pct']:+.2f} %" for who, label, m in measures
             if m["max_growth_pct"] >= GROWTH_GOAL_PCT]
    head = f"Soak {summary.get('case_id', '')}: memory growth at the end (over the baseline "
    if over:
        head += (f"after warm-up) is OVER the goal of < {GROWTH_GOAL_PCT:g} % for "
                 + ", ".join(over))
    else:
        head += (f"after warm-up) is within the goal of < {GROWTH_GOAL_PCT:g} % for every "
                 "measure" + (f"; the largest after warm-up, not judged, reached "
                              f"{', '.join(peaks)}" if peaks else ""))
    return head + ". " + "; ".join(memory_lines(summary, pad=False)) + "."


def memory_table_rows(summary: dict[str, Any]) -> list[list[str]]:
    """``MEMORY_TABLE_HEADER``'s rows of one soak case: the figures of ``memory_line``."""
    rows = []
    for who, label, m in memory_measures(summary):
        if m is None:
            rows.append([who, label] + ["-"] * 6 + ["too few samples"])
            continue
        rows.append([who, label, f"{m['baseline_mib']:.1f}", f"{m['end_mib']:.1f}",
                     f"{m['growth_pct']:+.2f}", f"{m['max_growth_pct']:+.2f}",
                     _slope_cell(m['slope_kib'], m['slope_span_s']),
                     _slope_cell(m['late_slope_kib'], m['late_slope_span_s']),
                     verdict_text(m)])
    return rows


# --------------------------------------------------------------------------------------
# the case's steps and byte drift: the terminal's lines and the report's, one definition


def run_line(summary: dict[str, Any]) -> str:
    """The soak case's headline, its steps labelled: all the steps the scheduler ran,
    of which the warm-up steps and the counted ones (those the case tables count), e.g.
    ``Soak trace=soak:400/send/msgpack#0: 73,509 steps (50 warm-up, 73,459 counted),
    400 requests, 35 s at 3.00x`` (``_seconds``)."""
    total, warm = summary.get("num_total_steps") or 0, summary.get("num_warmup_steps") or 0
    counted = summary.get("num_steps")
    counted = total - warm if counted is None or counted != counted else counted
    return (f"Soak {summary.get('case_id', '')}: {int(total):,} steps ({int(warm):,} "
            f"warm-up, {int(counted):,} counted), {int(summary.get('num_requests') or 0):,} "
            f"requests, {_seconds(_f(summary, 'wall_s') or 0)} s at "
            f"{_f(summary, 'trace_speedup') or 0:.2f}x")


def _seconds(value: float) -> str:
    """A soak's wall time in s as its headline gives it: whole seconds from 10 s
    (``35``), else to 0.1 s (``4.8``; ``0.3``, not ``0``)."""
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def drift_lines(summary: dict[str, Any]) -> list[str]:
    """Byte drift (``stream_drift``), one line per direction that has it, e.g. ``s2r
    payload bytes per request per decode step: 112.11 -> 107.42 (-4.18 %)`` (baseline
    window after warm-up -> end window); empty when the case had too few windows."""
    out = []
    for d in ("s2r", "r2s"):
        v = _f(summary, f"{d}_decode_bytes_per_req_drift_pct")
        if v is not None:
            out.append(f"{d} payload bytes per request per decode step: "
                       f"{_f(summary, f'{d}_decode_bytes_per_req_baseline') or 0:.2f} -> "
                       f"{_f(summary, f'{d}_decode_bytes_per_req_end') or 0:.2f} ({v:+.2f} %)")
    return out


#: What ``drift_lines`` compare, for the report's finding and section.
DRIFT_WHAT = ("payload bytes per scheduled request in pure-decode steps, the baseline "
              "window after warm-up -> the end window")


def drift_finding(summary: dict[str, Any]) -> Optional[str]:
    """The report's finding on one soak case's byte drift: ``drift_lines`` verbatim,
    e.g. ``Soak trace=soak:400/send/msgpack#0: byte drift (DRIFT_WHAT): s2r payload
    bytes per request per decode step: 112.11 -> 107.42 (-4.18 %); r2s ...``; ``None``
    without."""
    lines = drift_lines(summary)
    if not lines:
        return None
    return (f"Soak {summary.get('case_id', '')}: byte drift ({DRIFT_WHAT}): "
            + "; ".join(lines) + ".")


def soak_lines(summary: dict[str, Any]) -> list[str]:
    """What the terminal prints for one soak case: ``run_line``, then, indented,
    ``memory_lines`` and ``drift_lines`` (the report gives the same lines)."""
    return [run_line(summary)] + [f"  {x}" for x in memory_lines(summary) + drift_lines(summary)]
