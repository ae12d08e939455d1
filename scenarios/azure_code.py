"""Azure code trace, replayed on the logical clock (needs --trace): long prompts, short outputs.

Why: the coding service's requests have median prompts of 1,469 tokens and median
outputs of 13 (Azure LLM inference trace, November 2023; Patel et al., "Splitwise",
ISCA 2024). Prefill dominates, so under ``send`` the prompt chunks re-sent in
``new_token_ids`` during chunked prefill (``max_num_batched_tokens`` 2048) weigh more
than the decode tokens: the summary splits send's token bytes into the two.
Options as azure-conv: ``--trace PATH`` (``AzureLLMInferenceTrace_code.csv``),
``--max-requests N`` (default 300), ``--logical-step-ms`` (default 20).
"""

from __future__ import annotations

from ipc_bench.harness.spec import CaseSpec
from ipc_bench.harness.scenario import (CODE_SCHEDULER, CODE_TRACE_FILE, LOGICAL_REPLAY,
                                        LOGICAL_REPLAY_DEFAULTS,
                                        ScenarioOptions, trace_cases)

NAME = "azure-code"
OPTIONS = LOGICAL_REPLAY
OPTION_DEFAULTS = LOGICAL_REPLAY_DEFAULTS


def cases(opts: ScenarioOptions) -> list[CaseSpec]:
    return trace_cases(opts, NAME, CODE_TRACE_FILE, CODE_SCHEDULER)
