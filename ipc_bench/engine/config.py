"""Configuration of the system under test: policies, scheduler limits and the model.

Names follow vLLM's engine arguments (``max_num_seqs``, ``max_num_batched_tokens``,
``max_model_len``, ``block_size``, ``num_blocks``). Every config validates itself with
``validate()``, which raises ``ConfigError`` with one line naming the setting.
"""

from __future__ import annotations

from typing import Callable, Optional

import msgspec

#: The token-id policies, the arms every scenario compares, baseline first:
#: ``send`` ships each step's new token ids to the runner (vLLM before PR #20291),
#: ``cached`` lets the runner keep the ids it sampled (vLLM PR #20291).
SEND = "send"
CACHED = "cached"
POLICIES: tuple[str, ...] = (SEND, CACHED)
#: The scheduler -> runner message layouts (``--vllm-layout``), each named after the
#: commit whose ``vllm/v1/core/sched/output.py`` and ``scheduler.py`` it follows: the
#: default, vLLM's 7f280d69c (PR #20291, July 2025), and 1d37eb37, a fork's commit
#: whose fields for this hop match vLLM main's of spring 2026
#: (``CachedRequestData.resumed_req_ids``, ``all_token_ids``, ``num_output_tokens``;
#: ``engine.messages``, ``v1rpc.later_out``; docs/comparisons.md, "Since 7f280d69c").
LAYOUT_7F280D69C = "7f280d69c"
LAYOUT_1D37EB37 = "1d37eb37"
VLLM_LAYOUTS: tuple[str, ...] = (LAYOUT_7F280D69C, LAYOUT_1D37EB37)
DEFAULT_VLLM_LAYOUT = LAYOUT_7F280D69C
#: Why ``--async-scheduling`` runs no ``send`` arm, in the words of the command line's
#: refusal of ``--async-scheduling --policies send`` (``cli.run``) and of an async run's
#: findings (``report.findings``).
ASYNC_CACHED_ONLY = ("--async-scheduling runs the cached policy only (under send the ids "
                     "sampled at step n are unknown when step n+1 is scheduled)")
MODELS: tuple[str, ...] = ("null", "fixed-step", "torch", "emulated")
#: Models whose shape is ``ModelConfig.preset`` (the others ignore it).
PRESET_MODELS: tuple[str, ...] = ("torch", "emulated")
#: The emulated model's shape where no ``--model-preset`` is given: a public model's
#: (the torch model's default, ``cpu``, is a 2-layer test shape whose emulated step is
#: almost the null model's, which no one asking what send costs at a GPU step means).
EMULATED_DEFAULT_PRESET = "llama-3.2-1b"
DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda")
#: ``--attention``: the torch model's decode attention (``engine.paged_attention``).
ATTENTION_BACKENDS: tuple[str, ...] = ("auto", "gather", "flex", "varlen")
#: ``ModelConfig.roofline`` values: ``auto`` (on with CUDA, off on CPU), ``on``, ``off``.
ROOFLINE_SETTINGS: tuple[str, ...] = ("auto", "on", "off")
#: How the fixed-step model waits out its step (``ModelConfig.step_wait``): ``sleep``
#: leaves the runner's core free, as a runner blocked on a GPU would; ``spin``
#: busy-waits, keeping the core as a runner that polls the GPU does.
STEP_WAITS: tuple[str, ...] = ("sleep", "spin")
#: Token-id distributions of prompts and sampled ids (``--token-ids``;
#: ``ipc_bench.engine.token_ids``): ``hist:`` is followed by a histogram file's path.
TOKEN_ID_KINDS: tuple[str, ...] = ("uniform", "zipf", "hist:PATH")
#: Models whose sampled ids follow ``ModelConfig.token_ids`` (the torch model's are its
#: argmax).
TOKEN_ID_MODELS: tuple[str, ...] = ("null", "fixed-step", "emulated")

#: Most draft tokens per request and step (``--num-spec-tokens``): far above what
#: engines use (vLLM's examples use 1 to 8), low enough to keep a typo from
#: scheduling thousands of drafts per request.
MAX_NUM_SPEC_TOKENS = 32
#: The most KV-cache blocks a scheduler takes (``--num-blocks``' bound, and the cap on a
#: steady scenario's default cache): its free-block list costs about 40 bytes a block,
#: so 2**22 blocks are about 170 MB of scheduler memory.
MAX_NUM_BLOCKS = 2**22
#: The longest ``max_model_len`` a run takes (``--max-model-len``' bound, 1,048,576
#: tokens: above any published model's context; a typo of an extra digit is refused).
MAX_MODEL_LEN = 2**20
#: The largest ``--trace-speedup`` (a million times real time).
MAX_SPEEDUP = 1e6
#: The longest ``--step-time-ms`` (10 s: a step longer than any engine's).
MAX_STEP_TIME_MS = 10_000
#: The shortest ``--step-time-ms`` (1 µs): the fixed-step model's own sampling and timer
#: reads take tens of µs, so a step far shorter only measures them (its off-nominal
#: warning says so); below this its percentage off would run to hundreds of digits.
MIN_STEP_TIME_MS = 0.001
#: Models that can verify drafts (``ModelConfig.spec_acceptance``): the null,
#: fixed-step and emulated models (each token a hash of the runner's own buffer row,
#: so the drafter computes the target's continuation exactly) and the torch model
#: (a verification forward over every drafted position; its drafter runs the target's
#: own decode forward ahead, ``models.TorchModel.propose``).
SPEC_MODELS: tuple[str, ...] = ("null", "fixed-step", "emulated", "torch")

#: Llama 3's vocabulary: ids up to 128,255 take 5 msgpack bytes above 65,535.
DEFAULT_VOCAB_SIZE = 128_256


class ConfigError(ValueError):
    """A setting is out of range or inconsistent; the message is one line."""


class ModelMemoryError(ConfigError):
    """``check_model_memory``'s refusal: the one-line message, and its parts for a
    caller whose options differ from ``bench.py``'s: ``needs`` (what the model needs
    against the device's limit, naming no option: ``tiny needs 0.0 GiB of weights + ...;
    the CPU limit is 6.0 GiB``) and ``blocks_that_fit`` (KV cache blocks of this shape
    that fit beside the weights; 0 where the weights alone do not fit); ``device``,
    ``device_memory_bytes`` and ``device_label``: ``check_model_memory``'s, so that a
    runner, which measured them, can check again with what the scheduler knows of the
    workload (``harness.runner_loop.memory_refusal``)."""

    def __init__(self, needs: str, advice: str, blocks_that_fit: int,
                 device: str = "cpu", device_memory_bytes: Optional[int] = None,
                 device_label: Optional[str] = None):
        super().__init__(f"{needs}: {advice}")
        self.needs = needs
        self.blocks_that_fit = blocks_that_fit
        self.device = device
        self.device_memory_bytes = device_memory_bytes
        self.device_label = device_label


class SchedulerConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Scheduler limits (vLLM ``SchedulerConfig`` / ``CacheConfig`` names).

    ``max_num_batched_tokens``: token budget of one step. ``max_model_len``: prompt +
    output tokens of one request. ``block_size``: tokens per KV-cache block;
    ``num_blocks``: blocks in the cache (accounting only for the null and fixed-step
    models; the torch model allocates them, see ``check_model_memory``).
    Chunked prefill is always on, as in vLLM V1.

    ``num_spec_tokens``: draft tokens per decoding request and step (speculative
    decoding, vLLM ``SpeculativeConfig.num_speculative_tokens``; 0: off). The runner
    proposes them (``ModelRunnerOutput.spec_token_ids``), the scheduler schedules them
    the next step (``SchedulerOutput.scheduled_spec_decode_tokens``), as vLLM V1 does.
    ``num_lookahead_tokens``: KV slots the scheduler allocates past each request's
    scheduled tokens (capped at ``max_model_len``), for a drafter that writes K/V ahead
    (vLLM's ``Scheduler.num_lookahead_tokens``, ``num_spec_tokens`` with EAGLE; here
    the torch model's drafter, ``models.TorchModel.propose``); at most
    ``num_spec_tokens``.

    ``vllm_layout``: the layout of the scheduler -> runner messages (``VLLM_LAYOUTS``,
    ``--vllm-layout``); both processes build and read that layout's messages.
    """

    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    max_model_len: int = 4096
    block_size: int = 16
    num_blocks: int = 65536
    num_spec_tokens: int = 0
    num_lookahead_tokens: int = 0
    vllm_layout: str = DEFAULT_VLLM_LAYOUT

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first setting that is out of range."""
        if self.vllm_layout not in VLLM_LAYOUTS:
            raise ConfigError(f"vllm_layout (--vllm-layout) must be one of "
                              f"{', '.join(VLLM_LAYOUTS)}, got {self.vllm_layout!r}")
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
        if not 0 <= self.num_spec_tokens <= MAX_NUM_SPEC_TOKENS:
            raise ConfigError(f"num_spec_tokens (--num-spec-tokens) must be in [0, "
                              f"{MAX_NUM_SPEC_TOKENS}], got {self.num_spec_tokens}")
        if not 0 <= self.num_lookahead_tokens <= self.num_spec_tokens:
            raise ConfigError(f"num_lookahead_tokens must be in [0, num_spec_tokens "
                              f"{self.num_spec_tokens}], got {self.num_lookahead_tokens}")
        if self.max_num_seqs * self.max_model_len > 2**31:
            raise ConfigError(
                f"max_num_seqs x max_model_len ({self.max_num_seqs * self.max_model_len}) "
                "exceeds the runner's 2**31-token buffer")

    @property
    def max_blocks_per_req(self) -> int:
        """Blocks one request may hold: ``ceil(max_model_len / block_size)``."""
        return -(-self.max_model_len // self.block_size)


class TorchPreset(msgspec.Struct, frozen=True):
    """Shape of the torch decoder (``ipc_bench.engine.models.TorchModel``) and of the
    emulated model's roofline (``ipc_bench.engine.roofline``), Llama-style.

    ``hidden_size`` = model width; ``num_heads`` query heads and ``num_kv_heads`` key /
    value heads (grouped-query attention) of ``head_dim`` each; ``intermediate_size``:
    SwiGLU MLP width. ``vocab_size``: the published vocabulary (``None``: the
    harness's ``ModelConfig.vocab_size`` applies, as for ``tiny`` and ``cpu``);
    ``tie_word_embeddings``: the LM head is the embedding's transpose.
    ``max_position_embeddings``: the longest context the model was published for
    (``None``: no limit, the test shapes); ``check_max_position`` refuses a
    ``max_model_len`` above it. ``cuda_dtype``: weights and KV cache on CUDA (CPU always
    uses float32, so runs are deterministic there). ``source``: where the figures come
    from.
    """

    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: Optional[int] = None
    tie_word_embeddings: bool = False
    rope_theta: float = 500_000.0
    rms_norm_eps: float = 1e-5
    max_position_embeddings: Optional[int] = None
    cuda_dtype: str = "bfloat16"
    source: str = ""


#: ``--model-preset`` values. ``tiny``: tests; ``cpu``: small enough for 2 cores; the
#: others: public models' shapes from their config.json (random bf16 weights on CUDA).
#: Not modelled: Qwen2.5's QKV biases (0.03 M parameters of 494 M) and Llama 3's RoPE
#: frequency scaling (``rope_scaling``), neither of which changes a tensor's shape.
TORCH_PRESETS: dict[str, TorchPreset] = {
    "tiny": TorchPreset(2, 64, 4, 2, 16, 128, source="test shape"),
    "cpu": TorchPreset(2, 256, 4, 2, 64, 768, source="test shape, small enough for 2 cores"),
    "qwen2.5-0.5b": TorchPreset(
        24, 896, 14, 2, 64, 4864, vocab_size=151_936, tie_word_embeddings=True,
        rope_theta=1_000_000.0, rms_norm_eps=1e-6, max_position_embeddings=32_768,
        source="https://huggingface.co/Qwen/Qwen2.5-0.5B/blob/main/config.json"),
    "llama-3.2-1b": TorchPreset(
        16, 2048, 32, 8, 64, 8192, vocab_size=128_256, tie_word_embeddings=True,
        max_position_embeddings=131_072,
        source="https://huggingface.co/meta-llama/Llama-3.2-1B/blob/main/config.json"),
    "llama-3.1-8b": TorchPreset(
        32, 4096, 32, 8, 128, 14336, vocab_size=128_256, max_position_embeddings=131_072,
        source="https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json"),
}

#: Presets that were removed, and what to use instead (their names are refused with
#: this advice; runs recorded with them keep their summaries).
RETIRED_PRESETS: dict[str, str] = {
    "gpu-1b": "llama-3.2-1b (the same layer shapes, with Llama 3.2 1B's tied embeddings "
              "and vocabulary)",
    "gpu-small": "qwen2.5-0.5b (the smallest public shape)",
}

#: Limit on the torch model's weights + KV cache on CPU (float32): a guard against a
#: mistyped ``--num-blocks`` or a public preset on CPU, not a measurement. It was 4 GiB
#: of KV cache alone; 6 GiB keeps the azure scenarios' default cache with the ``cpu``
#: preset (4.0 GiB of KV cache + 0.25 GiB of weights) within it.
MAX_CPU_MODEL_BYTES = 6 * 2**30
#: Share of a GPU's free memory the torch model's weights + KV cache may take; the rest
#: is left for activations and the CUDA context (vLLM's ``gpu_memory_utilization``
#: default, 0.9, which vLLM applies to the total).
MAX_CUDA_MEMORY_SHARE = 0.9


class ModelConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The runner's model (``ipc_bench.engine.models``).

    ``name``: ``null`` (no compute, each token a hash of the runner's own buffer row),
    ``fixed-step`` (waits ``step_time_ms`` per step, sleeping or busy-waiting as
    ``step_wait`` says, ``STEP_WAITS``, then samples as ``null``),
    ``torch`` (a decoder of shape ``preset`` with a paged KV cache, greedy sampling) or
    ``emulated`` (sleeps the roofline step time of ``preset`` on a GPU's figures,
    ``ipc_bench.engine.roofline``, then samples as ``null``).
    ``hash_window``: how many of the last tokens the hash reads. ``vocab_size``: sampled
    ids (and prompt ids) lie in ``[0, vocab_size)``; for ``torch`` and ``emulated``
    with a preset that has a published vocabulary it must be that vocabulary
    (``validate``; the scenarios fill it in). ``num_threads``: torch intra-op threads
    in the runner (1: one thread per process). ``device``: ``auto`` (CUDA when
    ``torch.cuda.is_available()``), ``cpu`` or ``cuda``. ``attention``: the torch
    model's decode attention over the paged cache (``ATTENTION_BACKENDS``; ``auto``:
    flex on CUDA, gather on CPU; ``engine.paged_attention``). ``cuda_graphs``: replay
    pure-decode steps from CUDA graphs captured per batch-size bucket (CUDA, flex or
    varlen only; ``engine.cuda_step.DecodeGraphs``). ``cuda_graph_sizes``: the batch
    sizes decode steps are padded to, graphs or not (flex compiles once per size; empty:
    powers of two up to ``max_num_seqs``, ``paged_attention.decode_buckets``).
    ``roofline`` (torch only): whether the torch model measures its device's copy bandwidth and matmul rate at
    start-up and reports each step's roofline time on them (``roofline.StepRoofline``):
    ``auto`` (on CUDA only), ``on`` or ``off``; another model refuses ``on`` and
    ``off``.
    ``token_ids``: the distribution of prompt ids and of the null, fixed-step and
    emulated models' sampled ids: ``uniform``, ``zipf`` or ``hist:PATH``
    (``engine.token_ids``); the torch model takes ``uniform`` only.
    ``token_id_histogram``: with ``hist:PATH``, the histogram's content as the
    ``bench.py`` process read it, once (``engine.token_ids.normalized_histogram``):
    runner processes draw from this text and never open ``PATH``; empty otherwise.
    The run's metadata records its SHA-256 (``token_ids_sha256``) instead of the text.
    ``spec_acceptance``: with speculative decoding (``SchedulerConfig.num_spec_tokens``
    > 0), the probability that each draft token equals the target model's own next
    token (``engine.models.NullModel.propose``, ``TorchModel.propose``: a seeded hash
    decides, so the drafts are reproducible); in [0, 1]. Unused without drafts.
    """

    name: str = "null"
    vocab_size: int = DEFAULT_VOCAB_SIZE
    hash_window: int = 4
    seed: int = 0
    step_time_ms: float = 5.0
    step_wait: str = "sleep"
    preset: str = "cpu"
    num_threads: int = 1
    device: str = "auto"
    attention: str = "auto"
    cuda_graphs: bool = False
    cuda_graph_sizes: tuple[int, ...] = ()
    roofline: str = "auto"
    token_ids: str = "uniform"
    spec_acceptance: float = 0.7
    token_id_histogram: str = ""

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first setting that is out of range."""
        if self.name not in MODELS:
            raise ConfigError(f"unknown model {self.name!r}; choose from {', '.join(MODELS)}")
        if not 2 <= self.vocab_size <= 2**31 - 1:
            raise ConfigError(f"vocab_size must be in [2, 2**31-1], got {self.vocab_size}")
        if not 1 <= self.hash_window <= 64:
            raise ConfigError(f"hash_window must be in [1, 64], got {self.hash_window}")
        if not MIN_STEP_TIME_MS <= self.step_time_ms <= MAX_STEP_TIME_MS:
            raise ConfigError(f"step_time_ms (--step-time-ms) must be in [{MIN_STEP_TIME_MS}, "
                              f"{MAX_STEP_TIME_MS}], got {self.step_time_ms}")
        if self.step_wait not in STEP_WAITS:
            raise ConfigError(f"unknown step wait {self.step_wait!r} (--step-wait); choose "
                              f"from {', '.join(STEP_WAITS)}")
        check_preset_name(self.preset)
        published = self.torch_preset.vocab_size
        if self.name in PRESET_MODELS and published and self.vocab_size != published:
            raise ConfigError(
                f"--vocab-size {self.vocab_size} differs from preset {self.preset}'s "
                f"vocabulary of {published:,} ids, which sets the {self.name} model's "
                "sampled-id range: leave --vocab-size out, or use preset tiny or cpu")
        if not 1 <= self.num_threads <= 1024:
            raise ConfigError(
                f"num_threads (--torch-threads) must be in [1, 1024], got {self.num_threads}")
        if self.device not in DEVICES:
            raise ConfigError(
                f"unknown device {self.device!r}; choose from {', '.join(DEVICES)}")
        if self.attention not in ATTENTION_BACKENDS:
            raise ConfigError(f"unknown attention backend {self.attention!r}; "
                              f"choose from {', '.join(ATTENTION_BACKENDS)}")
        for given, option in ((self.attention != "auto", f"--attention {self.attention}"),
                              (self.cuda_graphs, "--cuda-graphs"),
                              (bool(self.cuda_graph_sizes), "--cuda-graph-sizes")):
            if given and self.name != "torch":
                raise ConfigError(f"{option} applies to the torch model only, not {self.name}")
        if self.roofline not in ROOFLINE_SETTINGS:
            raise ConfigError(f"unknown roofline setting {self.roofline!r} (--roofline); "
                              f"choose from {', '.join(ROOFLINE_SETTINGS)}")
        if self.roofline != "auto" and self.name != "torch":
            raise ConfigError(f"--roofline {self.roofline} applies to the torch model only, "
                              f"not {self.name}")
        if not 0.0 <= self.spec_acceptance <= 1.0:
            raise ConfigError(f"spec_acceptance (--spec-acceptance) must be in [0, 1], got "
                              f"{self.spec_acceptance}")
        check_token_ids_spec(self.token_ids)
        if self.token_ids != "uniform" and self.name not in TOKEN_ID_MODELS:
            raise ConfigError(f"--token-ids {self.token_ids} applies to the "
                              f"{', '.join(TOKEN_ID_MODELS)} models (the {self.name} model "
                              "samples its own ids)")

    @property
    def torch_preset(self) -> TorchPreset:
        """The preset's shape; ``ConfigError`` for an unknown or retired name."""
        check_preset_name(self.preset)
        return TORCH_PRESETS[self.preset]


class SteadyShape(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What ``harness.scenario.steady_running_that_fits`` reads of a steady case (its
    scheduler limits, ``num_running`` label, warm-up, counted and capped steps, its
    workload's seed and lengths, its model's acceptance, its ``pp`` label and async
    scheduling), so that a runner, which has no case, finds the same most
    ``--num-running`` that runs with the blocks that fit on its device as the
    scheduler's check (``RunnerConfig.steady_shape``; ``scenario.steady_shape`` makes
    it, ``scenario.steady_shape_case`` makes a case of it again)."""

    scheduler: SchedulerConfig
    num_running: int
    warmup_steps: int
    counted_steps: int
    max_steps: int
    seed: int
    prompt_len_range: tuple[int, int]
    output_len_range: tuple[int, int]
    spec_acceptance: float = 0.7
    pp: Optional[int] = None
    async_scheduling: bool = False


#: The requests ``harness.scenario.steady_running_that_fits`` simulates at most over its
#: counts (the sum of the counts it tries; a simulation draws about one a request, 10-20
#: us each, so under a second): past them it names the largest count found to run, not
#: known to be the most (``NOT_THE_MOST``).
MAX_FIT_SIMULATED_REQUESTS = 50_000
#: How the advice words a ``--num-running`` that runs, found by that search where it
#: stopped past ``MAX_FIT_SIMULATED_REQUESTS`` before it knew one more does not.
NOT_THE_MOST = (f"a batch that runs, not known to be the most: the search for it stops "
                f"past {MAX_FIT_SIMULATED_REQUESTS:,} simulated requests")


def check_token_ids_spec(spec: str) -> None:
    """Raise ``ConfigError`` (one line) unless ``spec`` is ``uniform``, ``zipf`` or
    ``hist:PATH`` with a non-empty path (``engine.token_ids.load_histogram`` reads the
    file)."""
    if spec in ("uniform", "zipf") or (spec.startswith("hist:") and len(spec) > 5):
        return
    if spec == "hist:":
        raise ConfigError("--token-ids hist: needs the histogram file's path after it "
                          "(hist:PATH)")
    raise ConfigError(f"unknown token-id distribution {spec!r} (--token-ids); choose from "
                      f"{', '.join(TOKEN_ID_KINDS)}")


def check_preset_name(name: str) -> None:
    """``ConfigError`` (one line, with the replacement) for a retired or unknown preset."""
    if name in RETIRED_PRESETS:
        raise ConfigError(f"model preset {name!r} was retired: use {RETIRED_PRESETS[name]}")
    if name not in TORCH_PRESETS:
        raise ConfigError(f"unknown model preset {name!r} (--model-preset); "
                          f"choose from {', '.join(TORCH_PRESETS)}")


def preset_vocab_size(model_name: str, preset: str) -> Optional[int]:
    """The vocabulary a model must use: the preset's published one for ``torch`` and
    ``emulated`` (``None`` when the preset has none, or the model ignores presets, or
    the preset is unknown: ``validate`` says so)."""
    if model_name not in PRESET_MODELS or preset not in TORCH_PRESETS:
        return None
    return TORCH_PRESETS[preset].vocab_size


def _itemsize(model: ModelConfig, device: str) -> int:
    """Bytes per weight and KV-cache element: float32 on CPU, else the preset's
    ``cuda_dtype`` (bfloat16: 2)."""
    return 4 if device == "cpu" or model.torch_preset.cuda_dtype == "float32" else 2


def weight_count(model: ModelConfig) -> int:
    """Parameters of the decoder ``model.preset`` describes with ``model.vocab_size``
    ids: embedding, per layer (two RMSNorm weights, QKV, O, gate + up, down), the final
    RMSNorm, and the LM head unless tied. Llama 3.1 8B: 8,030,261,248 (its model card
    says 8.0 B); Llama 3.2 1B: 1,235,814,400 (1.24 B)."""
    p = model.torch_preset
    d, qkv = p.hidden_size, (p.num_heads + 2 * p.num_kv_heads) * p.head_dim
    layer = 2 * d + d * qkv + p.num_heads * p.head_dim * d + 3 * d * p.intermediate_size
    embed = model.vocab_size * d
    return embed + p.num_layers * layer + d + (0 if p.tie_word_embeddings else embed)


def weight_bytes(model: ModelConfig, device: str) -> int:
    """Bytes of the torch model's weights on ``device`` (``weight_count`` x 4 on CPU,
    x 2 in bfloat16)."""
    return weight_count(model) * _itemsize(model, device)


def kv_cache_bytes(scheduler: "SchedulerConfig", model: ModelConfig, device: str) -> int:
    """Bytes of the torch model's KV cache: ``[num_layers, 2, num_blocks, block_size,
    num_kv_heads, head_dim]`` of float32 on CPU, ``preset.cuda_dtype`` elsewhere."""
    p = model.torch_preset
    return (p.num_layers * 2 * scheduler.num_blocks * scheduler.block_size
            * p.num_kv_heads * p.head_dim * _itemsize(model, device))


def _gib(num_bytes: int, digits: int = 1) -> str:
    """``num_bytes`` in GiB (2**30 bytes), ``digits`` decimals: ``6.0 GiB``."""
    return f"{num_bytes / 2**30:.{digits}f} GiB"


def _digits_apart(more: int, less: int) -> int:
    """The fewest decimals (1 to 6) at which ``_gib`` shows ``more`` bytes as more than
    ``less`` (a total just over a limit must not read as equal to it)."""
    return next((d for d in range(1, 7) if round(more / 2**30, d) > round(less / 2**30, d)),
                6)


def check_max_position(scheduler: "SchedulerConfig", model: ModelConfig,
                       advice: Optional[Callable[[int], str]] = None) -> None:
    """Raise ``ConfigError`` (one line) when ``scheduler.max_model_len`` is above the
    preset's ``max_position_embeddings`` (the torch and emulated models; a test shape
    has none), as vLLM's ``ModelConfig`` refuses a ``max_model_len`` above the one its
    config.json gives (``_get_and_verify_max_len``, unless
    ``VLLM_ALLOW_LONG_MAX_MODEL_LEN`` is set): e.g. "max_model_len 65,536 is above
    qwen2.5-0.5b's max_position_embeddings (32,768, its config.json) ...", ending in
    ``advice(limit)`` (default: ``bench.py``'s ``set --max-model-len 32,768 or lower``;
    a script names its own options)."""
    if model.name not in PRESET_MODELS:
        return
    limit = model.torch_preset.max_position_embeddings
    if limit is None or scheduler.max_model_len <= limit:
        return
    advice = advice or (lambda most: f"set --max-model-len {most:,} or lower")
    raise ConfigError(f"max_model_len {scheduler.max_model_len:,} is above {model.preset}'s "
                      f"max_position_embeddings ({limit:,}, its config.json), which vLLM "
                      f"refuses too: {advice(limit)}")


def check_model_memory(scheduler: "SchedulerConfig", model: ModelConfig, device: str,
                       device_memory_bytes: Optional[int] = None,
                       device_label: Optional[str] = None,
                       running_for_blocks: Optional[Callable[[int], int]] = None,
                       blocks_needed: Optional[int] = None, needed_by: Optional[str] = None,
                       need_words: Optional[str] = None,
                       running_with_blocks: Optional[Callable[[int], tuple]] = None) -> None:
    """Raise ``ModelMemoryError`` (a ``ConfigError``) with the figures when the model's
    weights + KV cache do not fit ``device``.

    ``cpu``: at most ``MAX_CPU_MODEL_BYTES`` (float32). ``cuda`` (``torch``) or the
    emulated GPU (``emulated``, ``device`` naming it): at most
    ``MAX_CUDA_MEMORY_SHARE`` of ``device_memory_bytes`` (a GPU's free memory, or with
    ``device_label`` the total memory of the device so named, e.g. "an emulated NVIDIA
    H200"); nothing is checked when that is ``None``. The null and fixed-step
    models allocate neither: nothing to check. Sizes in GiB (2**30 bytes, as
    ``MAX_CPU_MODEL_BYTES`` and docs/models-and-gpu.md give the CPU limit), e.g. "llama-3.1-8b needs
    15.0 GiB of weights + 32.5 GiB of KV cache ...".
    ``running_for_blocks``: where the number of running requests (``--num-running``)
    sets ``num_blocks``, the most running requests a cache of that many blocks serves;
    the advice then names ``--num-running`` with that bound beside ``--num-blocks``.
    ``blocks_needed``: the most blocks the case's requests hold (a steady case:
    ``scenario.steady_blocks_needed``); where that many fit, the advice names it first
    (the default cache, sized for any number of steps, is larger than a short case
    needs). One ``--num-blocks`` serves every case of a run, so a run of several
    steady cases gives the most any of them holds, and ``needed_by`` the case that
    holds it (e.g. ``"--num-running 256"``), which the advice then names.
    ``need_words``: what ``blocks_needed`` is, in the advice's parentheses, where it is
    not a steady case's (a trace replay's: ``the blocks its longest request holds
    ...``). Where ``blocks_needed`` is above the blocks that fit, no ``--num-blocks``
    serves the workload on this device (a smaller cache rejects the longest request or
    cannot hold the running batch): the advice says so and names what would
    (``_workload_advice``: fewer ``--num-running``, a trace of shorter requests or a
    lower ``--max-model-len``, a smaller ``--model-preset``), with ``N`` the blocks that
    fit the most ``--num-running`` that runs with ``--num-blocks N`` given, and whether it
    is the most (``running_with_blocks(N)``, ``_batch_given``).
    """
    if model.name not in PRESET_MODELS:
        return
    if device == "cpu":
        limit = MAX_CPU_MODEL_BYTES
    elif device_memory_bytes:
        limit = int(MAX_CUDA_MEMORY_SHARE * device_memory_bytes)
    else:
        return
    weights = weight_bytes(model, device)
    kv = kv_cache_bytes(scheduler, model, device)
    if weights + kv <= limit:
        return
    digits = _digits_apart(weights + kv, limit)
    where = (f"the CPU limit is {_gib(limit, digits)}" if device == "cpu" else
             f"it has {_gib(device_memory_bytes)}" + ("" if device_label else " free")
             + f", of which the model may take {MAX_CUDA_MEMORY_SHARE * 100:.0f} % "
               f"({_gib(limit, digits)})")
    per_block = kv // scheduler.num_blocks
    fit = max(0, (limit - weights) // per_block)
    advice = (f"lower --num-blocks (at most {fit:,}) or use a smaller --model-preset"
              if fit >= 1 else "the weights alone do not fit: use a smaller --model-preset")
    running = running_for_blocks(fit) if running_for_blocks is not None and fit >= 1 else 0
    if running >= 1:
        advice = (f"lower --num-running (at most {running:,}: it sizes the KV cache here) "
                  f"or --num-blocks (at most {fit:,}), or use a smaller --model-preset")
    holder = (f"{needed_by}'s requests hold in its steps, the largest need of the run"
              if needed_by else "this case's requests hold in its steps")
    what = need_words or f"the most {holder}"
    if blocks_needed is not None and 1 <= blocks_needed <= fit < scheduler.num_blocks:
        advice = (f"give --num-blocks from {blocks_needed:,} ({what}) to {fit:,}"
                  + (f", or --num-running {running} or fewer (it sizes the KV cache "
                     "here)" if running >= 1 else "") + ", or a smaller --model-preset")
    elif blocks_needed is not None and blocks_needed > fit >= 1:
        given = (0, False, False) if need_words else _batch_given(
            fit, scheduler, running_for_blocks, blocks_needed, needed_by, running_with_blocks)
        advice = (f"no --num-blocks fits this workload on this device: it needs "
                  f"{blocks_needed:,} blocks ({what}), and at most {fit:,} fit beside the "
                  f"weights: {_workload_advice(scheduler, fit, running, need_words, *given)}")
    raise ModelMemoryError(
        f"{model.preset} needs {_gib(weights)} of weights + {_gib(kv)} of KV "
        f"cache (num_blocks {scheduler.num_blocks:,} x block_size {scheduler.block_size}), "
        f"{_gib(weights + kv, digits)} in all, on {device_label or device}; {where}",
        advice, fit, device, device_memory_bytes, device_label)


def _batch_given(fit: int, scheduler: "SchedulerConfig",
                 running_for_blocks: Optional[Callable[[int], int]], blocks_needed: int,
                 needed_by: Optional[str],
                 running_with_blocks: Optional[Callable[[int], tuple[int, bool]]]
                 ) -> tuple[int, bool, bool]:
    """The ``--num-running`` of a steady workload that runs with ``--num-blocks fit``
    given, whether it is the most, and whether a search found it (``check_model_memory``'s
    advice): ``running_with_blocks(fit)`` where given (``scenario.steady_running_that_fits``
    of the case that needs ``blocks_needed``: a bisection over the run's checks, the
    scheduler's and, from ``RunnerConfig.steady_shape``, a runner's), else (a case that
    is not steady) ``fit`` over the blocks one request of that case holds
    (``_blocks_per_request``), a batch that runs, not the most; ``(0, False, False)``
    where neither gives one."""
    if running_with_blocks is not None:
        return (*running_with_blocks(fit), True)
    per_request = _blocks_per_request(scheduler, running_for_blocks, blocks_needed, needed_by)
    return (fit // per_request if per_request else 0), False, False


def _blocks_per_request(scheduler: "SchedulerConfig",
                        running_for_blocks: Optional[Callable[[int], int]],
                        blocks_needed: int, needed_by: Optional[str]) -> Optional[int]:
    """The KV blocks one request of the steady case that needs ``blocks_needed`` holds
    at its longest (``blocks_needed`` / its ``--num-running``, as
    ``scenario.check_steady_cache`` divides it): that case's count from ``needed_by``
    (``"--num-running 1024"``), else, where ``--num-running`` sizes the cache
    (``running_for_blocks``), the count that sized ``scheduler.num_blocks``; ``None``
    where neither gives a count that divides ``blocks_needed``."""
    if needed_by is not None:
        words = needed_by.split()
        b = int(words[1]) if len(words) == 2 and words[0] == "--num-running" \
            and words[1].isdigit() else 0
    else:
        b = running_for_blocks(scheduler.num_blocks) if running_for_blocks else 0
    return blocks_needed // b if b >= 1 and blocks_needed % b == 0 else None


def _workload_advice(scheduler: "SchedulerConfig", fit: int, running: int,
                     need_words: Optional[str], given: int = 0, exact: bool = False,
                     searched: bool = False) -> str:
    """What lets a workload whose least ``--num-blocks`` is above the ``fit`` blocks that
    fit beside the weights run (``check_model_memory``): a trace replay's (``need_words``
    given) a trace of shorter requests, or a ``--max-model-len`` of at most ``fit`` blocks'
    tokens (where below ``scheduler.max_model_len``: no request then holds more), with
    ``--num-blocks`` at most ``fit``; a steady case's fewer ``--num-running``, at most
    ``running`` where it sizes the KV cache (above 0) and, where larger (or where it does
    not size it), ``given`` with ``--num-blocks fit`` given: the most that runs so where
    ``exact``, else a batch that runs (where ``searched``, the largest found before the
    search stopped, ``NOT_THE_MOST``; else ``fit`` over the blocks one request of the
    batch asked holds at its longest, ``_blocks_per_request``: a smaller batch's
    requests, run for fewer steps, hold no more, so a few more may fit; 0: not named),
    else with ``--num-blocks`` at most ``fit``; then a smaller ``--model-preset``."""
    if need_words:
        most = fit * scheduler.block_size
        shorter = (f", or give --max-model-len {most:,} or lower (longer prompts are "
                   "rejected, outputs cut there)" if 2 <= most < scheduler.max_model_len
                   else "")
        return (f"replay a trace of shorter requests{shorter}, with --num-blocks at most "
                f"{fit:,}; or use a smaller --model-preset")
    with_fit = (f"at most {given:,} with --num-blocks {fit:,} given" if exact else
                f"{given:,} with --num-blocks {fit:,} given, {NOT_THE_MOST}" if searched else
                f"with --num-blocks {fit:,} given, --num-running {given:,} runs, a few more "
                "may: a request holds no more blocks in a smaller batch's steps")
    if running >= 1 and given > running:
        return (f"lower --num-running (at most {running:,} where it sizes the KV cache; "
                f"{with_fit}) or use a smaller --model-preset")
    if running < 1 and given >= 1:
        return f"lower --num-running ({with_fit}) or use a smaller --model-preset"
    if running >= 1:
        return (f"lower --num-running (at most {running:,}: it sizes the KV cache here) or "
                "use a smaller --model-preset")
    return (f"lower --num-running, with --num-blocks at most {fit:,}; or use a smaller "
            "--model-preset")


def script_memory_refusal(err: ModelMemoryError, *, block_size: int, rows: int,
                          context_max: int, context_min: int, extra_rows: int = 0,
                          extra_tokens: int = 0, more: tuple[str, ...] = ()) -> str:
    """``check_model_memory``'s refusal as one line for a script whose KV cache is
    ``rows`` rows (its largest ``--num-running`` plus ``extra_rows``) of
    ``ceil((context_max + extra_tokens) / block_size)`` blocks each, tokens per block
    ``block_size``, rather than ``bench.py``'s ``--num-blocks``: the engine's figures
    (``err.needs``) and advice made from ``err.blocks_that_fit`` naming the script's
    own options. Where blocks fit beside the weights: the largest ``--num-running`` at
    this ``--context-max`` (rows) and the largest ``--context-max`` at this
    ``--num-running`` (tokens; left out below ``context_min``, the script's
    ``--context-min``), each left out where none fits; then ``more`` (further bounds
    the caller words, e.g. ``"--vocab-size (at most 9)"``), then a smaller
    ``--preset``. Where none fits: ``the weights alone do not fit``, ``more``, a
    smaller ``--preset``. Raises nothing.

    For example ``tiny needs ...; the CPU limit is 6.0 GiB: lower --num-running (at
    most 13 at this --context-max) or --context-max (at most 380 at this
    --num-running), or use a smaller --preset``."""
    fit = err.blocks_that_fit
    options = list(more)
    if fit >= 1:
        width = -(-(context_max + extra_tokens) // block_size)
        running = fit // width - extra_rows
        context = (fit // rows) * block_size - extra_tokens
        options[:0] = ([f"--num-running (at most {running:,} at this --context-max)"]
                       if running >= 1 else []) + \
                      ([f"--context-max (at most {context:,} at this --num-running)"]
                       if context >= context_min else [])
    advice = (f"lower {' or '.join(options)}, or " if options else "") + "use a smaller --preset"
    return f"{err.needs}: " + ("" if fit >= 1 else "the weights alone do not fit: ") + advice
