"""Azure code trace replayed on the wall clock (needs --trace): TTFT, TPOT, ITL, E2E per policy.

Why: latency at equal load on the prefill-heavy coding workload. Requests arrive at
their trace times divided by ``--trace-speedup`` (default 10); TTFT counts from the
intended arrival. A fixed-rate replay is arrival-bound: its tokens/s is not a
throughput comparison (use azure-code for that).
Options: ``--trace PATH``, ``--max-requests N`` (default 300), ``--trace-speedup X``.
"""

from __future__ import annotations

from ipc_bench.config import SchedulerConfig
from ipc_bench.scenario import ScenarioOptions
from ipc_bench.tables import format_latency
from scenarios.azure_code import TRACE_FILE
from scenarios.azure_conv import trace_cases

NAME = "azure-code-timed"


def cases(opts: ScenarioOptions):
    return trace_cases(opts, NAME, TRACE_FILE, SchedulerConfig(
        max_num_seqs=256, max_num_batched_tokens=2048, max_model_len=8192,
        num_blocks=131072), timed=True)


def report(summaries) -> str:
    """Latency percentiles per case, with the arrival-bound caveat."""
    return format_latency(summaries)
