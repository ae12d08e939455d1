"""Azure conversation trace replayed on the wall clock (needs --trace): TTFT, TPOT, ITL, E2E per policy.

Why: latency at equal load. Requests arrive at their trace times divided by
``--trace-speedup`` (default 10); TTFT counts from the intended arrival, so queueing
counts. A replay at a fixed arrival rate is arrival-bound: both policies generate
the same tokens in about the same wall time, so its tokens/s is not a throughput
comparison (use azure-conv for that); the latency percentiles are the result.
Options: ``--trace PATH``, ``--max-requests N`` (default 300), ``--trace-speedup X``.
"""

from __future__ import annotations

from ipc_bench.config import SchedulerConfig
from ipc_bench.scenario import ScenarioOptions
from ipc_bench.tables import format_latency
from scenarios.azure_conv import TRACE_FILE, trace_cases

NAME = "azure-conv-timed"


def cases(opts: ScenarioOptions):
    return trace_cases(opts, NAME, TRACE_FILE, SchedulerConfig(
        max_num_seqs=256, max_num_batched_tokens=2048, max_model_len=16384,
        num_blocks=131072), timed=True)


def report(summaries) -> str:
    """Latency percentiles per case, with the arrival-bound caveat."""
    return format_latency(summaries)
