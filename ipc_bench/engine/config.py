"""Configuration of the system under test: policies, scheduler limits and the model.

Names follow vLLM's engine arguments (``max_num_seqs``, ``max_num_batched_tokens``,
``max_model_len``, ``block_size``, ``num_blocks``). Every config validates itself with
``validate()``, which raises ``ConfigError`` with one line naming the setting.
"""

from __future__ import annotations

from typing import Optional

import msgspec

#: The token-id policies, the arms every scenario compares, baseline first:
#: ``send`` ships each step's new token ids to the runner (vLLM before PR #20291),
#: ``cached`` lets the runner keep the ids it sampled (vLLM PR #20291).
SEND = "send"
CACHED = "cached"
POLICIES: tuple[str, ...] = (SEND, CACHED)
MODELS: tuple[str, ...] = ("null", "fixed-step", "torch")
DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda")

#: Llama 3's vocabulary: ids up to 128,255 take 5 msgpack bytes above 65,535.
DEFAULT_VOCAB_SIZE = 128_256


class ConfigError(ValueError):
    """A setting is out of range or inconsistent; the message is one line."""


class SchedulerConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Scheduler limits (vLLM ``SchedulerConfig`` / ``CacheConfig`` names).

    ``max_num_batched_tokens``: token budget of one step. ``max_model_len``: prompt +
    output tokens of one request. ``block_size``: tokens per KV-cache block;
    ``num_blocks``: blocks in the cache (accounting only for the null and fixed-step
    models; the torch model allocates them, see ``check_kv_cache_memory``).
    Chunked prefill is always on, as in vLLM V1.
    """

    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    max_model_len: int = 4096
    block_size: int = 16
    num_blocks: int = 65536

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first setting that is out of range."""
        for name in ("max_num_seqs", "max_num_batched_tokens", "max_model_len",
                     "block_size", "num_blocks"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.max_model_len < 2:
            raise ConfigError(f"max_model_len must be at least 2, got {self.max_model_len}")
        if self.max_model_len < self.block_size:
            raise ConfigError(
                f"max_model_len ({self.max_model_len}) is smaller than one block "
                f"(block_size {self.block_size})")
        if self.max_num_seqs > 65536:
            raise ConfigError(f"max_num_seqs must be at most 65536, got {self.max_num_seqs}")
        if self.max_num_seqs * self.max_model_len > 2**31:
            raise ConfigError(
                f"max_num_seqs x max_model_len ({self.max_num_seqs * self.max_model_len}) "
                "exceeds the runner's 2**31-token buffer")

    @property
    def max_blocks_per_req(self) -> int:
        """Blocks one request may hold: ``ceil(max_model_len / block_size)``."""
        return -(-self.max_model_len // self.block_size)


class TorchPreset(msgspec.Struct, frozen=True):
    """Shape of the torch decoder (``ipc_bench.engine.models.TorchModel``), Llama-style.

    ``hidden_size`` = model width; ``num_heads`` query heads and ``num_kv_heads`` key /
    value heads (grouped-query attention) of ``head_dim`` each; ``intermediate_size``:
    SwiGLU MLP width. ``cuda_dtype``: weights and KV cache on CUDA (CPU always uses
    float32, so runs are deterministic there).
    """

    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    cuda_dtype: str = "bfloat16"


#: ``--model-preset`` values. ``tiny``: tests; ``cpu``: small enough for 2 cores;
#: ``gpu-small``: a quick GPU smoke test; ``gpu-1b``: Llama 3.2 1B's shape.
TORCH_PRESETS: dict[str, TorchPreset] = {
    "tiny": TorchPreset(2, 64, 4, 2, 16, 128),
    "cpu": TorchPreset(2, 256, 4, 2, 64, 768),
    "gpu-small": TorchPreset(4, 1024, 16, 4, 64, 2816),
    "gpu-1b": TorchPreset(16, 2048, 32, 8, 64, 8192),
}

#: KV cache limit on CPU: the torch model refuses a larger cache (``--num-blocks``).
MAX_CPU_KV_CACHE_BYTES = 4 * 2**30
#: Share of the GPU's memory the KV cache may take.
MAX_CUDA_KV_CACHE_SHARE = 0.8


class ModelConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The runner's model (``ipc_bench.engine.models``).

    ``name``: ``null`` (no compute, each token a hash of the runner's own buffer row),
    ``fixed-step`` (busy-waits ``step_time_ms`` per step, then samples as ``null``) or
    ``torch`` (a decoder of shape ``preset`` with a paged KV cache, greedy sampling).
    ``hash_window``: how many of the last tokens the hash reads. ``vocab_size``: sampled
    ids lie in ``[0, vocab_size)``. ``num_threads``: torch intra-op threads in the
    runner (1: one thread per process). ``device``: ``auto`` (CUDA when
    ``torch.cuda.is_available()``), ``cpu`` or ``cuda``.
    """

    name: str = "null"
    vocab_size: int = DEFAULT_VOCAB_SIZE
    hash_window: int = 4
    seed: int = 0
    step_time_ms: float = 5.0
    preset: str = "cpu"
    num_threads: int = 1
    device: str = "auto"

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first setting that is out of range."""
        if self.name not in MODELS:
            raise ConfigError(f"unknown model {self.name!r}; choose from {', '.join(MODELS)}")
        if not 2 <= self.vocab_size <= 2**31 - 1:
            raise ConfigError(f"vocab_size must be in [2, 2**31-1], got {self.vocab_size}")
        if not 1 <= self.hash_window <= 64:
            raise ConfigError(f"hash_window must be in [1, 64], got {self.hash_window}")
        if not 0 < self.step_time_ms <= 10_000:
            raise ConfigError(
                f"step_time_ms (--step-time-ms) must be in (0, 10000], got {self.step_time_ms}")
        if self.preset not in TORCH_PRESETS:
            raise ConfigError(f"unknown model preset {self.preset!r} (--model-preset); "
                              f"choose from {', '.join(TORCH_PRESETS)}")
        if not 1 <= self.num_threads <= 1024:
            raise ConfigError(
                f"num_threads (--torch-threads) must be in [1, 1024], got {self.num_threads}")
        if self.device not in DEVICES:
            raise ConfigError(
                f"unknown device {self.device!r}; choose from {', '.join(DEVICES)}")

    @property
    def torch_preset(self) -> TorchPreset:
        return TORCH_PRESETS[self.preset]


def kv_cache_bytes(scheduler: "SchedulerConfig", model: ModelConfig, device: str) -> int:
    """Bytes of the torch model's KV cache: ``[num_layers, 2, num_blocks, block_size,
    num_kv_heads, head_dim]`` of float32 on CPU, ``preset.cuda_dtype`` on CUDA."""
    p = model.torch_preset
    itemsize = 4 if device == "cpu" or p.cuda_dtype == "float32" else 2
    return (p.num_layers * 2 * scheduler.num_blocks * scheduler.block_size
            * p.num_kv_heads * p.head_dim * itemsize)


def check_kv_cache_memory(scheduler: "SchedulerConfig", model: ModelConfig, device: str,
                          device_memory_bytes: Optional[int] = None) -> None:
    """Raise ``ConfigError`` (naming ``--num-blocks``) when the torch model's KV cache
    is too large for ``device`` (``cpu``: ``MAX_CPU_KV_CACHE_BYTES``; ``cuda``:
    ``MAX_CUDA_KV_CACHE_SHARE`` of ``device_memory_bytes`` when given). Other models
    allocate no KV cache: nothing to check."""
    if model.name != "torch":
        return
    need = kv_cache_bytes(scheduler, model, device)
    if device == "cpu":
        limit = MAX_CPU_KV_CACHE_BYTES
    elif device_memory_bytes:
        limit = int(MAX_CUDA_KV_CACHE_SHARE * device_memory_bytes)
    else:
        return
    if need > limit:
        raise ConfigError(
            f"the torch model's KV cache (preset {model.preset}, num_blocks "
            f"{scheduler.num_blocks} x block_size {scheduler.block_size}) needs "
            f"{need / 2**30:.1f} GiB on {device}, over the {limit / 2**30:.1f} GiB limit: "
            f"lower --num-blocks (at most {scheduler.num_blocks * limit // need}) "
            "or use a smaller --model-preset")
