"""Azure conversation trace, replayed on the logical clock (needs --trace).

Why: real arrival times and prompt/output lengths (Azure LLM inference trace,
November 2023, conversation service; Patel et al., "Splitwise", ISCA 2024). Long
prompts are prefilled in chunks of ``max_num_batched_tokens`` (2048 here), and under
``send`` every chunk after the first is re-sent in ``new_token_ids`` although the
runner already has the prompt: the summary splits send's token bytes into decode
tokens and re-sent prompt chunks.

Clock: a request arriving t seconds after the first one arrives at step
floor(t / 20 ms) (``--logical-step-ms``), so every case schedules exactly the same
batches; idle steps are skipped. Tokens/s here is the harness's busy throughput on
this batch mix, not the trace's arrival rate. Options: ``--trace PATH`` (the
``AzureLLMInferenceTrace_conv.csv`` file), ``--max-requests N`` (default 300),
``--warmup-steps`` (default 50); ``--model``, ``--model-preset``, ``--step-time-ms``
and ``--num-blocks`` as in decode-steady (the torch model's KV cache is real memory:
with it, lower ``--num-blocks`` from the default 131,072).
"""

from __future__ import annotations

from typing import Any

from ipc_bench.harness.spec import CaseSpec
from ipc_bench.engine.config import ConfigError, SchedulerConfig
from ipc_bench.harness.scenario import ScenarioOptions, grid
from ipc_bench.report.tables import format_latency
from ipc_bench.engine.traces import load_azure_trace
from ipc_bench.engine.workloads import TraceWorkload

NAME = "azure-conv"
TRACE_FILE = "AzureLLMInferenceTrace_conv.csv"
#: Limits of the conversation-trace scenarios (logical and timed): 2,048-token chunks,
#: room for the trace's longest conversations.
SCHEDULER = SchedulerConfig(max_num_seqs=256, max_num_batched_tokens=2048,
                            max_model_len=16384, num_blocks=131072)


def trace_cases(opts: ScenarioOptions, name: str, trace_file: str,
                scheduler: SchedulerConfig, timed: bool = False) -> list[CaseSpec]:
    """Replay cases of an Azure trace (shared by the azure-* scenarios): logical clock,
    or with ``timed`` the wall clock at ``--trace-speedup`` times real time (default
    10; no floor case). ``trace_file``: the CSV's expected name, for the error message;
    ``scheduler``: the scenario's limits (the command line's overrides apply). Raises
    ``ConfigError`` without ``--trace`` or on bad limits, ``TraceError`` on an
    unreadable trace."""
    if not opts.trace:
        raise ConfigError(f"scenario {name} needs --trace PATH (the {trace_file} file)")
    scheduler = opts.scheduler_config(scheduler)
    trace = load_azure_trace(opts.trace, max_requests=opts.max_requests or 300)
    step_s = (opts.logical_step_ms or 20.0) / 1000.0
    warmup = 50 if opts.warmup_steps is None else opts.warmup_steps
    model = opts.model_config()
    workload_name = f"{name}:{len(trace)}"
    speedup = (opts.trace_speedup or 10.0) if timed else None

    def make(labels, policy, codec, rep):
        return CaseSpec(
            scenario=name, labels=labels, policy=policy, codec=codec,
            scheduler=scheduler, model=model,
            make_workload=lambda: TraceWorkload(trace, name=workload_name, seed=opts.seed,
                                                vocab_size=model.vocab_size,
                                                logical_step_s=step_s,
                                                req_id_format=opts.req_id_format),
            warmup_steps=warmup, max_steps=None, count="all",
            floor=opts.floor and not timed, repetition=rep, trace_speedup=speedup,
            **opts.process_settings())

    return grid(opts, [{"trace": workload_name}], make)


def latency_report(summaries: list[dict[str, Any]]) -> str:
    """The timed replays' ``report``: latency percentiles (ms) per case, with the
    arrival-bound caveat (``ipc_bench.report.tables.format_latency``)."""
    return format_latency(summaries)


def cases(opts: ScenarioOptions) -> list[CaseSpec]:
    return trace_cases(opts, NAME, TRACE_FILE, SCHEDULER)
