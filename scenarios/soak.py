"""Soak: the whole Azure conv trace on the wall clock, about 10 minutes; memory growth and byte drift.

Why: a benchmark run can take an hour. This replays every request of the Azure
conversation trace (19,366 requests over 58 minutes; needs ``--trace PATH`` to
``AzureLLMInferenceTrace_conv.csv``) sped up to fit in about 10 minutes, and checks
that neither process leaks memory and that the bytes per step do not drift:

- RSS of the scheduler and of the runner, sampled every second from a background
  thread of the scheduler (``/proc/<pid>/status`` VmRSS), goes to ``rss.csv``; the
  summary gives growth after warm-up (end of run over the baseline just after the
  first 10 %; goal: under 5 %, judged on that growth at the end), the largest sample
  (reported beside the verdict, not judged) and a slope (``soak.rss_growth``);
- bytes per scheduled request in pure-decode steps, per direction, baseline window
  against the end (``*_decode_bytes_per_req_drift_pct``).

The case is streamed: rows and request records go to the run folder every second
and leave memory, the runner keeps no per-step columns, there is no floor, so the
harness's own records do not grow with the run (see ``ipc_bench.analysis.soak``). Not part of
the test suite (``tests/harness/test_soak.py`` runs a short version).

One case (``ONE_CASE``): one policy and one codec, ``--policies`` and ``--codecs``
with one value each (default send, msgpack), run once; more than one value,
``--repeat`` above 1, ``--aa`` or a ``--ci-method`` is refused before anything runs.
``--async-scheduling`` makes that case cached with async scheduling (cached+async),
without the synchronous twin other scenarios run next to it. Options: ``--trace PATH``; ``--trace-speedup X`` (default: the trace's span / 600 s);
``--max-requests N`` for a shorter soak (``--max-requests 8000 --trace-speedup 6``:
the same load for about 4 minutes). Where memory went: set
``IPC_BENCH_HEAP_REPORT=stats`` (allocator figures at the end of warm-up and at the
end, ``heap.txt``) or a number of frames (tracemalloc too: slow, replay slower);
see ``ipc_bench.harness.memory.HeapReport``.
"""

from __future__ import annotations

from ipc_bench.analysis.soak import GROWTH_GOAL_PCT, soak_lines  # noqa: F401 (the goal, re-exported)
from ipc_bench.harness.spec import CaseSpec
from ipc_bench.engine.config import ConfigError, ModelConfig, SchedulerConfig
from ipc_bench.harness.scenario import (ScenarioOptions, TimedReplay, check_replay_duration,
                                        replay_trace)
from ipc_bench.engine.workloads import TraceWorkload
from ipc_bench.report.tables import format_latency

NAME = "soak"
#: The null model, ids as the trace's workload makes them: no model or id options.
OPTIONS = frozenset({"trace", "max_requests", "trace_speedup"})
#: Without --max-requests a soak replays every request of its trace.
OPTION_DEFAULTS = {"max_requests": "the whole trace"}
#: One case whatever the options: what would add another is refused (``cli.run``).
ONE_CASE = True
TRACE_FILE = "AzureLLMInferenceTrace_conv.csv"
#: Wall time the replay's arrivals are squeezed into when --trace-speedup is not given.
TARGET_S = 600.0
RSS_INTERVAL_S = 1.0


def cases(opts: ScenarioOptions) -> list[CaseSpec]:
    if not opts.trace:
        raise ConfigError(f"scenario {NAME} needs --trace PATH (the {TRACE_FILE} file)")
    trace = replay_trace(opts, default=None)
    span_s = float(trace.arrival_s[-1]) if len(trace) else 0.0
    speedup = opts.trace_speedup or max(1.0, span_s / TARGET_S)
    opts.timed_replay = TimedReplay(span_s, len(trace), speedup,
                                    given=opts.trace_speedup is not None)
    check_replay_duration(span_s, speedup, len(trace), given=opts.trace_speedup is not None)
    scheduler = opts.scheduler_config(SchedulerConfig(
        max_num_seqs=256, max_num_batched_tokens=2048, max_model_len=16384,
        num_blocks=131072))
    model = ModelConfig(seed=opts.seed)
    workload_name = f"{NAME}:{len(trace)}"
    warmup = 50 if opts.warmup_steps is None else opts.warmup_steps
    policy, codec = opts.policies[0], opts.codecs[0]
    return [CaseSpec(
        scenario=NAME, labels={"trace": workload_name}, policy=policy, codec=codec,
        scheduler=scheduler, model=model,
        make_workload=lambda: TraceWorkload(trace, name=workload_name, seed=opts.seed,
                                            vocab_size=model.vocab_size,
                                            logical_step_s=0.02),
        warmup_steps=warmup, max_steps=None, count="all", floor=False,
        trace_speedup=speedup, stream=True, sample_rss_s=RSS_INTERVAL_S,
        **opts.process_settings())]


def report(summaries) -> str:
    """Per soak case (``analysis.soak.soak_lines``, which the report prints too): its
    steps (warm-up and counted apart), memory growth per process (VmRSS and RssAnon)
    against the goal and the live Python allocations, then byte drift; then the
    request latencies as a timed replay gives them (``tables.format_latency``, the
    report's Latency section)."""
    lines = []
    soaks = [s for s in summaries if s.get("scenario") == NAME]
    for s in soaks:
        lines += [""] + soak_lines(s)
    latency = format_latency(soaks)
    return "\n".join(lines) + ("\n" + latency if latency else "")
