"""Steady decode: exactly B requests decoding at all times, B in 1, 16, 64, 256.

Why: this is where the per-step cost of shipping sampled tokens is purest. Each
step every running request adds one token; under ``send`` the scheduler ships it
back to the runner (``CachedRequestData.new_token_ids``), under ``cached`` the
runner keeps it (vLLM PR #20291). A finished request is replaced at once, so the
batch stays at B; only pure-decode steps (no prefill, no new request) are counted.

Each batch size also runs the single-process baseline (codec ``none``: scheduler
and runner in one process, no serialization, as vLLM's single-GPU executor), so the
cost of having IPC at all is a ratio from the same run (``--no-single-process`` skips).

Workload: prompts of 32-256 tokens and outputs of 512-2048 tokens, uniform per
request from the seed; ids in a 128,256-token vocabulary (``--vocab-size``), request
ids ``cmpl-<32 hex>-0`` (``--req-id-format``). Null model by default
(the control plane alone); ``--model fixed-step --step-time-ms MS`` adds a GPU-like
step time, ``--model torch --model-preset cpu|qwen2.5-0.5b|llama-3.2-1b|llama-3.1-8b``
a real decoder with a paged KV cache (CUDA when present; ``scripts/gpu_check.py``),
``--model emulated`` with the same presets a sleep of that shape's roofline step on an
H200's (uncalibrated) figures. Options:
``--num-running``, ``--steps`` (counted pure-decode steps per case, exactly; default 1000),
``--warmup-steps`` (default 100), ``--num-blocks`` (default: 4,096 tokens' worth of
blocks per running request, plus one request's worth: 256 x (B + 1) at the default
``--block-size`` 16, more than any request of the workload reaches, at most
``MAX_NUM_BLOCKS``, 4,194,304; a cache that cannot
hold all B requests at once at the longest context each reaches in the case is refused,
``harness.scenario.check_steady_cache``).
"""

from __future__ import annotations

from ipc_bench.harness.spec import CaseSpec
from ipc_bench.harness.scenario import STEADY, ScenarioOptions, steady_cases

NAME = "decode-steady"
OPTIONS = STEADY
DEFAULT_NUM_RUNNING = [1, 16, 64, 256]


def cases(opts: ScenarioOptions) -> list[CaseSpec]:
    return steady_cases(opts, NAME, opts.num_running or DEFAULT_NUM_RUNNING,
                        single_process=True)
