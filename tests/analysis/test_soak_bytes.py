"""A streamed case's byte figures (``analysis.soak.stream_summary``) are payload bytes:
totals over every step, warm-up included, and means over the counted steps, without
frame heads; it gives no wire figure (docs/metrics.md, Soak)."""

from __future__ import annotations

import numpy as np

from ipc_bench.analysis.soak import stream_summary
from ipc_bench.analysis.summary import wire_bytes_per_step
from ipc_bench.harness.recording import StreamStats
from ipc_bench.harness.spec import SCHED_COLUMNS


def test_streamed_totals_are_payload_bytes_and_no_wire_figure_is_given():
    """Three rows, the first a warm-up step: SchedulerOutputs of 100, 300 and 250
    bytes, ModelRunnerOutputs of 20, 30 and 40. The totals count all three (650 and 90
    bytes); the per-step means the two counted ones (275 and 35). On a ZMTP socket
    those counted frames would be 275 + (9 + 2) / 2 and 35 + 2 bytes a step
    (``summary.wire_bytes_per_step``, over ``--transport ipc``): not what the case
    reports."""
    col = {name: i for i, name in enumerate(SCHED_COLUMNS)}
    rows = []
    for seq, (s2r, r2s) in enumerate([(100, 20), (300, 30), (250, 40)]):
        row = [0] * len(SCHED_COLUMNS)
        row[col["seq"]], row[col["warmup"]], row[col["counted"]] = seq, seq == 0, seq > 0
        row[col["num_reqs"]] = row[col["num_scheduled_tokens"]] = 2
        row[col["s2r_payload_bytes"]], row[col["r2s_payload_bytes"]] = s2r, r2s
        row[col["step_ns"]], row[col["t_end_ns"]] = 1000, seq * 10**9
        rows.append(tuple(row))
    stats = StreamStats()
    stats.add_rows(rows)
    out = stream_summary(stats)
    assert (out["s2r_payload_bytes_total"], out["r2s_payload_bytes_total"]) == (650, 90)
    assert (out["sched_to_runner_payload_bytes_per_step"],
            out["runner_to_sched_payload_bytes_per_step"]) == (275.0, 35.0)
    assert not {k for k in out if "wire" in k or "handshake" in k}
    assert wire_bytes_per_step(np.array([300, 250]), np.array([30, 40]), "ipc") == {
        "sched_to_runner_wire_bytes_per_step": 280.5,
        "runner_to_sched_wire_bytes_per_step": 37.0}
