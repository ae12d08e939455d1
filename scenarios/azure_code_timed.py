"""Azure code trace replayed on the wall clock (needs --trace): TTFT, TPOT, ITL, E2E per policy.

Why: latency at equal load on the prefill-heavy coding workload. Requests arrive at
their trace times divided by ``--trace-speedup`` (default 10); TTFT counts from the
intended arrival. A fixed-rate replay is usually arrival-bound (the note under its
latency table says which: load-bound where requests queued and kept the engine busy):
its tokens/s is then not a throughput comparison (use azure-code for that).
Options: ``--trace PATH``, ``--max-requests N`` (default 300), ``--trace-speedup X``.
"""

from __future__ import annotations

from ipc_bench.harness.spec import CaseSpec
from ipc_bench.harness.scenario import (CODE_SCHEDULER, CODE_TRACE_FILE, TIMED_REPLAY,
                                        TIMED_REPLAY_DEFAULTS,
                                        ScenarioOptions, trace_cases)
from ipc_bench.report.tables import format_latency

NAME = "azure-code-timed"
OPTIONS = TIMED_REPLAY
OPTION_DEFAULTS = TIMED_REPLAY_DEFAULTS
#: Latency percentiles (ms) per case, with the arrival-bound caveat.
report = format_latency


def cases(opts: ScenarioOptions) -> list[CaseSpec]:
    return trace_cases(opts, NAME, CODE_TRACE_FILE, CODE_SCHEDULER, timed=True)
