"""Azure conversation trace replayed on the wall clock (needs --trace): TTFT, TPOT, ITL, E2E per policy.

Why: latency at equal load. Requests arrive at their trace times divided by
``--trace-speedup`` (default 10); TTFT counts from the intended arrival, so queueing
counts. A replay at a fixed arrival rate is usually arrival-bound (the note under its
latency table says which: load-bound where requests queued and kept the engine busy):
both policies then generate the same tokens in about the same wall time, so its
tokens/s is not a throughput comparison (use azure-conv for that); the latency
percentiles are the result.
Options: ``--trace PATH``, ``--max-requests N`` (default 300), ``--trace-speedup X``.
"""

from __future__ import annotations

from ipc_bench.harness.spec import CaseSpec
from ipc_bench.harness.scenario import (CONV_SCHEDULER, CONV_TRACE_FILE, TIMED_REPLAY,
                                        TIMED_REPLAY_DEFAULTS,
                                        ScenarioOptions, trace_cases)
from ipc_bench.report.tables import format_latency

NAME = "azure-conv-timed"
OPTIONS = TIMED_REPLAY
OPTION_DEFAULTS = TIMED_REPLAY_DEFAULTS
#: Latency percentiles (ms) per case, with the arrival-bound caveat.
report = format_latency


def cases(opts: ScenarioOptions) -> list[CaseSpec]:
    return trace_cases(opts, NAME, CONV_TRACE_FILE, CONV_SCHEDULER, timed=True)
