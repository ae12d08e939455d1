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

from ipc_bench.harness.spec import CaseSpec
from ipc_bench.harness.scenario import (CONV_SCHEDULER, CONV_TRACE_FILE, LOGICAL_REPLAY,
                                        LOGICAL_REPLAY_DEFAULTS,
                                        ScenarioOptions, trace_cases)

NAME = "azure-conv"
OPTIONS = LOGICAL_REPLAY
OPTION_DEFAULTS = LOGICAL_REPLAY_DEFAULTS


def cases(opts: ScenarioOptions) -> list[CaseSpec]:
    return trace_cases(opts, NAME, CONV_TRACE_FILE, CONV_SCHEDULER)
