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
step time, ``--model torch --model-preset cpu|gpu-small|gpu-1b`` a real decoder with
a paged KV cache (CUDA when present; ``scripts/gpu_check.py``). Options:
``--num-running``, ``--steps`` (counted-steps budget per case, default 1000),
``--warmup-steps`` (default 100), ``--num-blocks`` (default 256 per running request
+ 256: room for every request's ``max_model_len``).
"""

from __future__ import annotations

from typing import Any

from ipc_bench.harness.spec import CaseSpec
from ipc_bench.engine.config import ConfigError, ModelConfig, SchedulerConfig
from ipc_bench.harness.scenario import ScenarioOptions, grid
from ipc_bench.engine.workloads import SteadyDecodeWorkload

NAME = "decode-steady"
DEFAULT_NUM_RUNNING = [1, 16, 64, 256]


#: Longest prompt and output of the workload (``SteadyDecodeWorkload`` defaults).
PROMPT_LEN_MAX = 256
OUTPUT_LEN_MAX = 2048


def scheduler_config(opts: ScenarioOptions, b: int) -> SchedulerConfig:
    """Limits for B running requests, with the command line's overrides; refuses
    limits under which B requests cannot all run or one cannot finish (``ConfigError``)."""
    cfg = opts.scheduler_config(SchedulerConfig(
        max_num_seqs=b, max_num_batched_tokens=8192, max_model_len=4096,
        num_blocks=b * 256 + 256))
    if b > cfg.max_num_seqs:
        raise ConfigError(f"--num-running {b} is larger than max_num_seqs "
                          f"{cfg.max_num_seqs}: a steady batch of {b} cannot run")
    if cfg.max_model_len <= PROMPT_LEN_MAX:
        raise ConfigError(f"max_model_len {cfg.max_model_len} must exceed {NAME}'s longest "
                          f"prompt ({PROMPT_LEN_MAX} tokens)")
    if cfg.max_num_batched_tokens < b:
        raise ConfigError(f"max_num_batched_tokens {cfg.max_num_batched_tokens} is smaller "
                          f"than --num-running {b}: not every request can decode each step")
    # Fewer blocks than B requests need is allowed (requests are preempted and
    # recomputed); fewer than one request needs could never finish it.
    longest = min(cfg.max_model_len, PROMPT_LEN_MAX + OUTPUT_LEN_MAX)
    need = -(-longest // cfg.block_size)
    if cfg.num_blocks < need:
        raise ConfigError(f"num_blocks {cfg.num_blocks} cannot hold one request of up to "
                          f"{longest} tokens in blocks of {cfg.block_size} (need {need})")
    return cfg


def steady_case(opts: ScenarioOptions, scenario: str, labels: dict[str, Any], policy: str,
                codec: str, rep: int, *, model: ModelConfig, steps: int,
                warmup: int) -> CaseSpec:
    """One steady-decode case (shared by decode-steady and step-time):
    ``labels["num_running"]`` = B requests decoding at all times, ``warmup`` warm-up
    steps then ``steps`` counted pure-decode steps (``max_steps`` leaves room for the
    mixed step each finish costs); 8,192-token budget, ``max_model_len`` 4,096,
    ``B * 256 + 256`` KV blocks (``scheduler_config``: overrides apply, ``ConfigError``
    on limits B requests cannot run under); ``opts`` gives the seed, request-id format,
    floor and process settings (transport, timeouts, host)."""
    b = labels["num_running"]
    # Each finish costs one mixed step; steps over budget make up for them.
    max_steps = warmup + steps + steps * b // 1000 + 10
    return CaseSpec(
        scenario=scenario, labels=labels, policy=policy, codec=codec,
        scheduler=scheduler_config(opts, b),
        model=model,
        make_workload=lambda: SteadyDecodeWorkload(b, seed=opts.seed,
                                                   vocab_size=model.vocab_size,
                                                   req_id_format=opts.req_id_format),
        warmup_steps=warmup, max_steps=max_steps, count="decode_only",
        floor=opts.floor, repetition=rep, **opts.process_settings())


def cases(opts: ScenarioOptions) -> list[CaseSpec]:
    steps = opts.steps or 1000
    warmup = 100 if opts.warmup_steps is None else opts.warmup_steps
    model = opts.model_config()

    def make(labels, policy, codec, rep):
        return steady_case(opts, NAME, labels, policy, codec, rep, model=model, steps=steps,
                           warmup=warmup)

    return grid(opts, [{"num_running": b} for b in (opts.num_running or DEFAULT_NUM_RUNNING)],
                make, single_process=True)
