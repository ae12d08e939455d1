"""Text of ``bench.py microbench``'s findings: the run's in-loop timing of captured
messages against pyperf's (``ipc_bench.analysis.microbench.in_loop_vs_pyperf``)."""

from __future__ import annotations

from typing import Any

from ipc_bench.report.tables import render


def format_in_loop_vs_pyperf(rows: list[dict[str, Any]]) -> str:
    """Plain-text table of ``in_loop_vs_pyperf`` rows (times in µs per message)."""
    header = ["arm", "workload", "dir", "codec", "op", "bytes", "in-loop mean us",
              "in-loop median us", "pyperf us", "in-loop / pyperf"]
    body = [[r["arm"], r["workload"], r["direction"], r["codec"], r["op"],
             f"{r['mean_payload_bytes']:,.0f}", f"{r['in_loop_mean_ns'] / 1e3:.2f}",
             f"{r['in_loop_median_ns'] / 1e3:.2f}",
             f"{r['pyperf_mean_ns'] / 1e3:.2f} +- {r['pyperf_stdev_ns'] / 1e3:.2f}",
             f"{r['in_loop_to_pyperf']:.2f}" if r["in_loop_to_pyperf"] else "-"]
            for r in rows]
    lines = ["\nin-loop (the run's own timing of these messages) vs pyperf (isolated)",
             render(header, body, left=len(header))]
    for op in ("encode", "decode"):
        ratios = sorted(r["in_loop_to_pyperf"] for r in rows
                        if r["op"] == op and r["in_loop_to_pyperf"])
        if ratios:
            mid = ratios[len(ratios) // 2] if len(ratios) % 2 else (
                ratios[len(ratios) // 2 - 1] + ratios[len(ratios) // 2]) / 2
            lines.append(f"{op}: in-loop mean / pyperf mean: median {mid:.2f} "
                         f"(range {ratios[0]:.2f} .. {ratios[-1]:.2f}) over {len(ratios)} "
                         "benchmarks; > 1: the loop's calls run colder (caches, branch "
                         "predictors) and pay two clock reads")
    return "\n".join(lines)
