"""A timed replay's clock stops while the harness ends warm-up (collects and freezes its
heap): requests arriving meanwhile do not pile up behind that pause, and requests in
flight across it are not charged for it. The pause is made 1 s long here (a collection
of a very large heap, or a descheduled scheduler, took 20 ms to 0.93 s in real runs)."""

from __future__ import annotations

import gc
import time

import numpy as np
import pytest

from fault_helpers import steady_case
from ipc_bench.analysis.summary import summarize_case
from ipc_bench.engine.traces import Trace
from ipc_bench.engine.workloads import TraceWorkload
from ipc_bench.harness import scheduler_loop
from ipc_bench.harness.spec import SCHED_COLUMNS
from ipc_bench.harness.supervisor import run_case

PAUSE_S = 1.0
WARMUP = 5  # steady_case's warm-up
#: 4 requests at the start, in flight when warm-up ends (40 output tokens each), then 8
#: arriving every 20 ms of trace time, all within the pause at 1x.
ARRIVAL_S = [0.0] * 4 + [0.02 * i for i in range(1, 9)]
OUTPUT_LENS = [40] * 4 + [8] * 8


class _SlowCollect:
    """The ``gc`` module as ``scheduler_loop`` sees it, ``collect`` ``PAUSE_S`` longer.
    ``collect_ns``: how long the calls took in all (ns), the sleep and the real
    collection of this test process's heap (which a worker late in a suite makes
    hundreds of ms long)."""

    def __init__(self):
        self.collect_ns = 0

    def __getattr__(self, name):
        return getattr(gc, name)

    def collect(self, *args):
        t0 = time.perf_counter_ns()
        time.sleep(PAUSE_S)
        try:
            return gc.collect(*args)
        finally:
            self.collect_ns += time.perf_counter_ns() - t0


def _timed_replay(async_scheduling: bool):
    trace = Trace(path="t", arrival_s=np.array(ARRIVAL_S),
                  prompt_lens=np.array([16] * len(ARRIVAL_S)),
                  output_lens=np.array(OUTPUT_LENS))
    spec = steady_case(max_steps=None, policy="cached", async_scheduling=async_scheduling)
    spec.scheduler = type(spec.scheduler)(max_num_seqs=16, max_model_len=512,
                                          num_blocks=1024)
    spec.make_workload = lambda: TraceWorkload(trace, name="w", seed=2, vocab_size=128_256,
                                               logical_step_s=0.02)
    spec.trace_speedup = 1.0
    return spec


@pytest.mark.parametrize("scheduling", ["sync", "async"])
def test_the_end_of_warm_up_pause_is_in_no_latency_and_is_recorded(monkeypatch,
                                                                  scheduling):
    slow_gc = _SlowCollect()
    monkeypatch.setattr(scheduler_loop, "gc", slow_gc)
    result = run_case(_timed_replay(scheduling == "async"))
    assert [r["num_output_tokens"] for r in result.requests] == OUTPUT_LENS
    assert [r["arrival_s"] for r in result.requests] == ARRIVAL_S
    # The four requests at 0 had run warm-up's 5 steps when the pause came; the other
    # eight arrived on the replay clock after it. Without the stop the first four's E2E
    # and the others' TTFT were over 0.84 s (the pause less their arrival).
    assert result.requests[0]["first_token_step"] < WARMUP < result.requests[0]["finish_step"]
    assert max(r["ttft_s"] for r in result.requests) < 0.2
    assert max(r["e2e_s"] for r in result.requests) < 0.4
    # No gap in steps.csv: step WARMUP ends within its own step_ns of step WARMUP - 1.
    col = {name: i for i, name in enumerate(SCHED_COLUMNS)}
    before, first = result.sched_rows[WARMUP - 1], result.sched_rows[WARMUP]
    assert first[col["seq"]] == WARMUP
    gap_s = (first[col["t_end_ns"]] - before[col["t_end_ns"]] - first[col["step_ns"]]) / 1e9
    assert gap_s < 0.1
    assert result.wall_s < 0.5
    # The pause is recorded, whole: the collection (1 s longer than the heap's own) is
    # in it, and little else (the freeze and the keep-alive around them).
    summary = summarize_case(result)
    assert summary["warmup_pause_s"] == result.warmup_pause_ns / 1e9
    assert slow_gc.collect_ns >= PAUSE_S * 1e9
    assert 0 <= result.warmup_pause_ns - slow_gc.collect_ns < 0.5e9
    assert summary["wall_s"] == result.wall_s
