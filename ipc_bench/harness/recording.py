"""What the scheduler side keeps of a case while it runs.

``StreamStats``: running sums over a streamed case's rows (``CaseSpec.stream``), whose
rows leave memory as the case runs; ``ipc_bench.analysis.soak`` turns them into the
case summary.
"""

from __future__ import annotations

from array import array
from typing import Any

import numpy as np

from ipc_bench.harness.spec import SCHED_COLUMNS

_C = {name: i for i, name in enumerate(SCHED_COLUMNS)}


class StreamStats:
    """Running sums over a streamed case's per-step rows, fed one chunk at a time.

    Totals over *counted* rows (what ``analysis.summary.summarize_case`` averages) and, per
    chunk (one flush window), the bytes of pure-decode steps for the drift figures.
    Per-request latencies (``add_request``) go into float64 arrays.
    """

    _SUM_COLUMNS = ("num_output_tokens", "step_ns", "num_reqs", "s2r_payload_bytes",
                    "r2s_payload_bytes", "sched_ns", "build_ns", "encode_ns", "send_ns",
                    "wait_ns", "decode_ns", "update_ns", "sched_cpu_ns", "gc_collections")

    def __init__(self) -> None:
        self.num_total_steps = 0
        self.num_warmup_steps = 0
        self.num_counted_steps = 0
        self.sums = {k: 0 for k in self._SUM_COLUMNS}
        self.s2r_bytes_total = 0
        self.r2s_bytes_total = 0
        # one entry per chunk: end time (s), decode steps, their requests, their bytes
        self.win_t_s = array("d")
        self.win_decode_steps = array("q")
        self.win_decode_reqs = array("q")
        self.win_decode_s2r = array("q")
        self.win_decode_r2s = array("q")
        self.ttft_s = array("d")
        self.tpot_s = array("d")
        self.e2e_s = array("d")
        self.num_requests = 0
        self.num_finished = 0
        self.num_rejected = 0
        self.output_tokens_all = 0

    def add_rows(self, rows: list[tuple]) -> None:
        """Fold a chunk of ``SCHED_COLUMNS`` tuples in (one flush window)."""
        if not rows:
            return
        a = np.asarray(rows, dtype=np.int64)
        self.num_total_steps += len(a)
        self.num_warmup_steps += int(a[:, _C["warmup"]].sum())
        counted = a[:, _C["counted"]] == 1
        c = a[counted]
        self.num_counted_steps += len(c)
        for k in self._SUM_COLUMNS:
            self.sums[k] += int(c[:, _C[k]].sum())
        self.s2r_bytes_total += int(a[:, _C["s2r_payload_bytes"]].sum())
        self.r2s_bytes_total += int(a[:, _C["r2s_payload_bytes"]].sum())
        dec = (counted & (a[:, _C["num_new_reqs"]] == 0)
               & (a[:, _C["num_scheduled_tokens"]] == a[:, _C["num_reqs"]])
               & (a[:, _C["num_reqs"]] > 0))
        d = a[dec]
        self.win_t_s.append(float(a[-1, _C["t_end_ns"]]) / 1e9)
        self.win_decode_steps.append(len(d))
        self.win_decode_reqs.append(int(d[:, _C["num_reqs"]].sum()))
        self.win_decode_s2r.append(int(d[:, _C["s2r_payload_bytes"]].sum()))
        self.win_decode_r2s.append(int(d[:, _C["r2s_payload_bytes"]].sum()))

    def add_request(self, record: dict[str, Any]) -> None:
        """Count one finished (or, at the end, unfinished) request's record."""
        self.num_requests += 1
        reason = record.get("finish_reason")
        self.num_finished += reason == "length"
        self.num_rejected += reason == "rejected"
        self.output_tokens_all += int(record.get("num_output_tokens") or 0)
        for name in ("ttft_s", "tpot_s", "e2e_s"):
            value = record.get(name)
            if value is not None:
                getattr(self, name).append(value)
