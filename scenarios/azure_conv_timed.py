"""Azure conversation trace replayed on the wall clock (needs --trace): TTFT, TPOT, ITL, E2E per policy.

Why: latency at equal load. Requests arrive at their trace times divided by
``--trace-speedup`` (default 10); TTFT counts from the intended arrival, so queueing
counts. A replay at a fixed arrival rate is arrival-bound: both policies generate
the same tokens in about the same wall time, so its tokens/s is not a throughput
comparison (use azure-conv for that); the latency percentiles are the result.
Options: ``--trace PATH``, ``--max-requests N`` (default 300), ``--trace-speedup X``.
"""

from __future__ import annotations

from ipc_bench.harness.scenario import ScenarioOptions
from scenarios.azure_conv import SCHEDULER, TRACE_FILE, latency_report, trace_cases

NAME = "azure-conv-timed"
report = latency_report


def cases(opts: ScenarioOptions):
    return trace_cases(opts, NAME, TRACE_FILE, SCHEDULER, timed=True)
