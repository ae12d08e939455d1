"""Plain-text tables of case summaries for the terminal.

A column table is a tuple of ``(header, summary key, scale, format)``: the cell is
``format.format(summary[key] * scale)`` (no scaling when ``scale`` is None), ``-`` when
the summary lacks the key. ``COLUMNS`` is the per-case table every run prints (and the
report's case tables), ``LATENCY_COLUMNS`` the timed replays' latency table.
"""

from __future__ import annotations

from typing import Any, Iterable

# (header, summary key, scale, format); the identity columns every table starts with
IDENTITY_COLUMNS = (
    ("policy", "policy", None, "{}"),
    ("codec", "codec", None, "{}"),
    ("transport", "transport", None, "{}"),
)
COLUMNS = IDENTITY_COLUMNS + (
    ("steps", "num_steps", None, "{}"),
    ("out tok/s", "output_tokens_per_s", 1.0, "{:,.0f}"),
    ("floor tok/s", "floor_output_tokens_per_s", 1.0, "{:,.0f}"),
    ("x floor", "step_to_floor_ratio", 1.0, "{:.2f}"),
    ("s2r B/step", "sched_to_runner_payload_bytes_per_step", 1.0, "{:,.0f}"),
    ("r2s B/step", "runner_to_sched_payload_bytes_per_step", 1.0, "{:,.0f}"),
    ("tok B/step", "decode_token_bytes_per_step", 1.0, "{:,.0f}"),
    ("prompt B/step", "prompt_chunk_bytes_per_step", 1.0, "{:,.0f}"),
    ("build us", "build_ns_per_step", 1e-3, "{:.1f}"),
    ("encode us", "encode_ns_per_step", 1e-3, "{:.1f}"),
    ("decode us", "decode_ns_per_step", 1e-3, "{:.1f}"),
    ("mean step us", "step_ns_mean", 1e-3, "{:.1f}"),
)

RATIO_KEYS = (
    ("tok/s", "output_tokens_per_s"),
    ("s2r B", "sched_to_runner_payload_bytes_per_step"),
    ("build", "build_ns_per_step"),
    ("encode", "encode_ns_per_step"),
    ("decode", "decode_ns_per_step"),
    ("step", "step_ns_mean"),
)


def cells(summary: dict[str, Any], columns=COLUMNS) -> list[str]:
    """One table row: ``summary``'s values formatted per ``columns`` (see the module
    docstring), ``-`` for a missing or ``None`` value."""
    out = []
    for _, key, scale, fmt in columns:
        value = summary.get(key)
        out.append("-" if value is None
                   else fmt.format(value * scale if scale is not None else value))
    return out


def render(header: list[str], rows: list[list[str]], left: int = 3) -> str:
    """``header``, a dashed rule and ``rows`` as text columns two spaces apart, each as
    wide as its widest cell: the first ``left`` columns left-aligned, the others
    right-aligned. Every row has ``len(header)`` cells; ``rows`` may be empty."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]

    def line(row):
        return "  ".join(c.rjust(w) if i >= left else c.ljust(w)
                         for i, (c, w) in enumerate(zip(row, widths)))
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def _table(columns, summaries: list[dict[str, Any]]) -> str:
    return render([h for h, *_ in columns], [cells(s, columns) for s in summaries])


def format_tables(summaries: Iterable[dict[str, Any]]) -> str:
    """One table per (scenario, workload) of ``COLUMNS`` (bytes per counted step, µs
    per counted step, tok/s), notes on rejected requests and incomplete cases, then per
    codec the cached / send ratios of the means over repetitions (unpaired; the
    paired ratios and intervals are ``format_comparisons``')."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for s in summaries:
        groups.setdefault((s["scenario"], s["workload"]), []).append(s)
    out = []
    for (scenario, workload), cases in groups.items():
        out.append(f"\n{scenario}  [{workload}]  device={cases[0].get('runner_device', '?')}")
        out.append(_table(COLUMNS, cases))
        rejected = max((s.get("num_rejected") or 0) for s in cases)
        if rejected:
            total = max((s.get("num_requests") or 0) for s in cases)
            out.append(f"  rejected on arrival: {rejected} of {total} requests could never "
                       "fit (prompt >= max_model_len, or more KV blocks than the cache has)")
        failed = [s for s in cases if s.get("complete") is False]
        for s in failed:
            out.append(f"  INCOMPLETE {s['case_id']}: {s.get('error')}")
        for codec in dict.fromkeys(s["codec"] for s in cases):
            send = [s for s in cases if s["codec"] == codec and s["policy"] == "send"]
            cached = [s for s in cases if s["codec"] == codec and s["policy"] == "cached"]
            if not send or not cached:
                continue
            parts = []
            for label, key in RATIO_KEYS:
                a = [s.get(key) for s in send]
                b = [s.get(key) for s in cached]
                if None in a or None in b or not sum(a):
                    continue
                parts.append(f"{label} {(sum(b) / len(b)) / (sum(a) / len(a)):.3f}")
            if parts:
                out.append(f"  cached/send ({codec}, mean over repetitions): "
                           + ", ".join(parts))
    return "\n".join(out)


# (metric, label, scale to display unit, display unit)
COMPARISON_ROWS = (
    ("step_ns_mean", "step mean", 1e-3, "us"),
    ("step_ns_median", "step median", 1e-3, "us"),
    ("output_tokens_per_s", "out tok/s", 1.0, "tok/s"),
    ("build_ns_per_step", "build", 1e-3, "us"),
    ("encode_ns_per_step", "encode", 1e-3, "us"),
    ("decode_ns_per_step", "decode", 1e-3, "us"),
    ("sched_cpu_ns_per_step", "sched cpu", 1e-3, "us"),
    ("sched_to_runner_payload_bytes_per_step", "s2r bytes", 1.0, "B"),
    ("runner_to_sched_payload_bytes_per_step", "r2s bytes", 1.0, "B"),
)


def _num(value, scale: float) -> str:
    if value is None:
        return "-"
    v = value * scale
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}"


def format_comparisons(comparisons: Iterable[dict[str, Any]]) -> str:
    """One block per (workload, codec, treatment): per metric, each arm's median over
    repetitions [IQR], the paired ratio treatment / baseline and the paired difference
    baseline - treatment, each with its interval (point estimates: geometric mean and
    mean for the t method, medians for bootstrap and sign), and the verdict."""
    out = []
    for c in comparisons:
        base, treat = c["baseline"], c["treatment"]
        method = {"t": "t-interval on log ratios",
                  "bootstrap": "bootstrap percentile",
                  "sign": "sign-test order statistics"}.get(c["method"], c["method"])
        out.append(f"\n{treat} vs {base}  [{c['workload']}]  {c['codec']}: {c['n_pairs']} "
                   f"paired repetitions, {c['confidence']:.0%} intervals ({method})")
        header = ["metric", "unit", f"{base} median [IQR]", f"{treat} median [IQR]",
                  f"{treat}/{base}", "ratio CI", f"{base}-{treat}", "diff CI", "verdict"]
        rows = []
        for key, label, scale, unit in COMPARISON_ROWS:
            m = c["metrics"].get(key)
            if m is None:
                continue
            ci = "-"
            if m["ratio_ci_low"] is not None:
                ci = f"[{m['ratio_ci_low']:.3f}, {m['ratio_ci_high']:.3f}]"
            dci = "-"
            if m["diff_ci_low"] is not None:
                dci = f"[{_num(m['diff_ci_low'], scale)}, {_num(m['diff_ci_high'], scale)}]"
            # the point estimate each interval is centred on: the geometric mean (t) or
            # the median (bootstrap, sign) of the per-pair ratios and differences
            t_method = c["method"] == "t"
            ratio = m["ratio_geomean"] if t_method else m["ratio_median"]
            diff = m["diff_mean"] if t_method else m["diff_median"]
            rows.append([
                label, unit,
                f"{_num(m['baseline_median'], scale)} [{_num(m['baseline_iqr'], scale)}]",
                f"{_num(m['treatment_median'], scale)} [{_num(m['treatment_iqr'], scale)}]",
                f"{ratio:.3f}" if ratio is not None else "-", ci,
                _num(diff, scale), dci, m["verdict"]])
        if rows:
            out.append(render(header, rows))
    return "\n".join(out)


def format_byte_model(rows: Iterable[dict[str, Any]]) -> str:
    """Lines saying whether the byte model held on the captured messages, and the
    per-request bytes ``send`` adds over ``cached`` that it implies."""
    out = ["\nbyte model (ipc_bench.analysis.bytemodel) on the captured pure-decode messages:"]
    for r in rows:
        line = (f"  [{r['workload']}] {r['codec']} {r['arm']}: "
                f"{r['messages_checked'] - r['mismatches']}/{r['messages_checked']} exact")
        if r.get("model_send_minus_cached_bytes_per_request") is not None:
            line += (f"; send - cached = "
                     f"{r['model_send_minus_cached_bytes_per_request']:.3f} B per running "
                     f"request on these steps (uniform ids in a {r['vocab_size']:,} vocabulary: "
                     f"{r['uniform_send_minus_cached_bytes_per_request']:.3f}")
            measured = r.get("measured_send_minus_cached_bytes_per_request")
            line += f"; measured over the run: {measured:.3f})" if measured is not None else ")"
        out.append(line)
    return "\n".join(out)


LATENCY_COLUMNS = IDENTITY_COLUMNS + (
    ("TTFT p50 ms", "ttft_ms_p50", 1.0, "{:.2f}"),
    ("TTFT p99 ms", "ttft_ms_p99", 1.0, "{:.2f}"),
    ("TPOT mean ms", "tpot_ms_mean", 1.0, "{:.3f}"),
    ("ITL p50 ms", "itl_ms_p50", 1.0, "{:.3f}"),
    ("ITL p99 ms", "itl_ms_p99", 1.0, "{:.3f}"),
    ("E2E p50 ms", "e2e_ms_p50", 1.0, "{:.1f}"),
    ("E2E p99 ms", "e2e_ms_p99", 1.0, "{:.1f}"),
)


def format_latency(summaries: Iterable[dict[str, Any]]) -> str:
    """Latency percentiles (ms) per case of a timed replay, with the arrival-bound
    caveat; '' when no summary has latencies."""
    cases = [s for s in summaries if "ttft_ms_p50" in s]
    if not cases:
        return ""
    speedup = cases[0].get("trace_speedup")
    return (f"\nLatency (timed replay at {speedup:g}x real time; TTFT from intended arrival)\n"
            + _table(LATENCY_COLUMNS, cases)
            + "\nNote: a replay at a fixed arrival rate is arrival-bound; its tokens/s is not"
              " a throughput comparison between policies.")
