"""Plain-text tables of case summaries for the terminal."""

from __future__ import annotations

from typing import Any, Iterable

# (header, summary key, scale, format)
COLUMNS = (
    ("policy", "policy", None, "{}"),
    ("codec", "codec", None, "{}"),
    ("transport", "transport", None, "{}"),
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
    ("step us", "step_ns_mean", 1e-3, "{:.1f}"),
)

RATIO_KEYS = (
    ("tok/s", "output_tokens_per_s"),
    ("s2r B", "sched_to_runner_payload_bytes_per_step"),
    ("build", "build_ns_per_step"),
    ("encode", "encode_ns_per_step"),
    ("decode", "decode_ns_per_step"),
    ("step", "step_ns_mean"),
)


def _cell(summary: dict[str, Any], key: str, scale, fmt: str) -> str:
    value = summary.get(key)
    if value is None:
        return "-"
    return fmt.format(value * scale if scale is not None else value)


def _render(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    def line(cells):
        return "  ".join(c.rjust(w) if i > 2 else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def format_tables(summaries: Iterable[dict[str, Any]]) -> str:
    """One table per (scenario, workload), then cached/send ratios per codec."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for s in summaries:
        groups.setdefault((s["scenario"], s["workload"]), []).append(s)
    out = []
    for (scenario, workload), cases in groups.items():
        out.append(f"\n{scenario}  [{workload}]  device={cases[0].get('runner_device', '?')}")
        rows = [[_cell(s, key, scale, fmt) for _, key, scale, fmt in COLUMNS] for s in cases]
        out.append(_render([h for h, *_ in COLUMNS], rows))
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
            out.append(f"  cached/send ({codec}, mean over repetitions): " + ", ".join(parts))
    return "\n".join(out)


LATENCY_COLUMNS = (
    ("policy", "policy", None, "{}"),
    ("codec", "codec", None, "{}"),
    ("transport", "transport", None, "{}"),
    ("TTFT p50 ms", "ttft_ms_p50", 1.0, "{:.2f}"),
    ("TTFT p99 ms", "ttft_ms_p99", 1.0, "{:.2f}"),
    ("TPOT mean ms", "tpot_ms_mean", 1.0, "{:.3f}"),
    ("ITL p50 ms", "itl_ms_p50", 1.0, "{:.3f}"),
    ("ITL p99 ms", "itl_ms_p99", 1.0, "{:.3f}"),
    ("E2E p50 ms", "e2e_ms_p50", 1.0, "{:.1f}"),
    ("E2E p99 ms", "e2e_ms_p99", 1.0, "{:.1f}"),
)


def format_latency(summaries: Iterable[dict[str, Any]]) -> str:
    """Latency percentiles per case of a timed replay, with the arrival-bound caveat."""
    cases = [s for s in summaries if "ttft_ms_p50" in s]
    if not cases:
        return ""
    rows = [[_cell(s, key, scale, fmt) for _, key, scale, fmt in LATENCY_COLUMNS] for s in cases]
    speedup = cases[0].get("trace_speedup")
    return (f"\nLatency (timed replay at {speedup:g}x real time; TTFT from intended arrival)\n"
            + _render([h for h, *_ in LATENCY_COLUMNS], rows)
            + "\nNote: a replay at a fixed arrival rate is arrival-bound; its tokens/s is not"
              " a throughput comparison between policies.")
