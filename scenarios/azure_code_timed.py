"""Azure code trace replayed on the wall clock (needs --trace): TTFT, TPOT, ITL, E2E per policy.

Why: latency at equal load on the prefill-heavy coding workload. Requests arrive at
their trace times divided by ``--trace-speedup`` (default 10); TTFT counts from the
intended arrival. A fixed-rate replay is arrival-bound: its tokens/s is not a
throughput comparison (use azure-code for that).
Options: ``--trace PATH``, ``--max-requests N`` (default 300), ``--trace-speedup X``.
"""

from __future__ import annotations

from ipc_bench.harness.scenario import ScenarioOptions
from scenarios.azure_code import SCHEDULER, TRACE_FILE
from scenarios.azure_conv import latency_report, trace_cases

NAME = "azure-code-timed"
report = latency_report


def cases(opts: ScenarioOptions):
    return trace_cases(opts, NAME, TRACE_FILE, SCHEDULER, timed=True)
