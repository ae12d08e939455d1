"""A decoder step's roofline time: the emulated model's clock, and the torch model's
yardstick on figures measured in its own process.

For one step of a preset (``config.TorchPreset``; weights, activations and KV cache of
``e`` bytes an element: 2 in bf16, the emulated model's and the torch model's on CUDA;
4 in float32, the torch model's on CPU) over ``T`` scheduled tokens of ``R`` requests,
each op takes the larger of its bytes / memory bandwidth and its FLOPs / matmul rate
(both rates times ``efficiency``); the step is the sum over the ops plus
``fixed_step_ns`` (the roofline model: Williams, Waterman and Patterson, "Roofline: an
insightful visual performance model for multicore architectures", CACM 52(4), 2009).

Per layer (times ``num_layers``), with ``d`` hidden, ``H`` / ``K`` query / KV heads
of ``hd`` dims and ``F`` the MLP width:

- four matmuls ``[T, in] @ [in, out]``: QKV ``(d, (H + 2K) hd)``, O ``(H hd, d)``,
  gate + up ``(d, 2F)``, down ``(F, d)``; bytes ``e (in out + T in + T out)`` (the
  weights read once per step, the activations in and out), FLOPs ``2 T in out``;
- attention: bytes ``e x 2 K hd x sum_r seq_len_r`` (each request's K and V over its
  whole context, read once), FLOPs ``4 H hd`` per (query, key) pair the causal mask
  keeps: ``sum_r q_r (seq_len_r - q_r) + q_r (q_r + 1) / 2`` (``q_r``: the request's
  scheduled tokens; QK^T and PV; a FlashAttention-class kernel skips the masked
  tiles), ``seq_len_r`` for a decode.

Then the LM head once, ``[S, d] @ [d, V]`` over the ``S`` positions that get logits
(vLLM's ``logits_indices``): each request's last token, and with speculative decoding
also its drafts' (``R x (1 + k)`` for ``k`` drafts each).

Not modelled: the embedding lookup, norms, RoPE, activation functions, KV-cache
writes, sampling (logits to float32, argmax), a drafter's own forward and kernel
launches. All but the launches grow with the step's tokens or requests (estimated, not
measured, with fused kernels: about 3 to 7 % of an 8B decode step, 10 to 14 % of a 1B
one and 25 to 34 % of a 0.5B one at the few hundred tokens of context decode-steady
runs), so neither the one ``efficiency`` nor ``fixed_step_ns`` can absorb them
exactly: the time is a lower bound at the figures' rates (rates issue 11 states for an
H200, not measured here and below the datasheet's peaks, so a kernel may exceed them by
the peaks' margin at most: 1.12x bandwidth, 1.25x bf16). The emulated model's figures come from ``gpu_figures.json`` beside
this module, each with its provenance; ``calibrated`` is false until efficiency and
fixed time are fitted to a GPU run, and every output of an emulated case says which.
The torch model's come from ``measure_device_figures`` (a device-to-device copy and a
square matmul in the model's dtype, timed in the runner's process at start-up), and
``StepRoofline`` keeps its per-step roofline times.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any, Optional

import msgspec
import numpy as np

from ipc_bench.engine.config import ConfigError, TorchPreset

#: The data file of GPU figures (shipped with the package).
GPU_FIGURES_PATH = Path(__file__).resolve().with_name("gpu_figures.json")
#: The GPU the emulated model emulates (the only one in ``gpu_figures.json``).
EMULATED_GPU = "h200"
#: Bytes of one bf16 element.
BF16_BYTES = 2
#: ``sleep_until_ns`` sleeps until this long before the deadline, then spins: Linux
#: wakes a sleeping thread up to ~50-100 µs late (timer slack, scheduling).
SPIN_NS = 150_000


class GpuFigures(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One GPU of ``gpu_figures.json``: ``memory_bandwidth_bytes_per_s``,
    ``bf16_flops_per_s``, ``memory_bytes`` (total), ``efficiency`` (fraction of both
    rates an op reaches), ``fixed_step_ns`` (added to every step), whether the last
    two were ``calibrated`` from a GPU run, and the ``provenance`` of each figure."""

    name: str
    memory_bandwidth_bytes_per_s: float
    bf16_flops_per_s: float
    memory_bytes: int
    efficiency: float
    fixed_step_ns: int
    calibrated: bool
    provenance: dict[str, str]

    @property
    def status(self) -> str:
        """``"calibrated"`` or ``"uncalibrated"``: what every output prints."""
        return "calibrated" if self.calibrated else "uncalibrated"

    def label(self, preset: str) -> str:
        """E.g. ``"emulated llama-3.2-1b on NVIDIA H200 (roofline, uncalibrated)"``:
        the device of a runner emulating ``preset``'s steps, as the tables print it."""
        return f"emulated {preset} on {self.name} (roofline, {self.status})"

    @property
    def flops_per_s(self) -> float:
        """The matmul rate the roofline divides by: ``bf16_flops_per_s``."""
        return self.bf16_flops_per_s


def load_gpu_figures(key: str = EMULATED_GPU, path: Optional[Path] = None) -> GpuFigures:
    """The figures of GPU ``key`` from ``path`` (default ``GPU_FIGURES_PATH``).
    ``ConfigError`` (one line) for an unknown key or a file that is missing, not JSON,
    or has a figure out of range."""
    path = GPU_FIGURES_PATH if path is None else Path(path)
    try:
        gpus = json.loads(path.read_text())["gpus"]
        raw = gpus[key]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"cannot read GPU {key!r} from {path}: "
                          f"{type(exc).__name__}: {exc}") from None
    try:
        figures = msgspec.convert(raw, GpuFigures)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"GPU {key!r} in {path}: {exc}") from None
    if (figures.memory_bandwidth_bytes_per_s <= 0 or figures.bf16_flops_per_s <= 0
            or not 0 < figures.efficiency <= 1 or figures.fixed_step_ns < 0
            or figures.memory_bytes <= 0):
        raise ConfigError(f"GPU {key!r} in {path}: rates and memory must be positive, "
                          "efficiency in (0, 1], fixed_step_ns at least 0")
    return figures


class RooflineStep:
    """Step times of ``preset`` with a ``vocab_size``-id LM head on ``gpu``'s figures
    (a ``GpuFigures`` or ``MeasuredFigures``: ``memory_bandwidth_bytes_per_s``,
    ``flops_per_s``, ``efficiency``, ``fixed_step_ns``), with weights, activations and
    KV cache of ``element_bytes`` bytes an element (2: bf16, the default; 4: float32).
    See the module docstring for the ops and their bytes and FLOPs.

    ``ns(num_tokens, num_reqs, context_tokens, attention_pairs, num_logits)``: one
    step, in ns (float); ``context_tokens`` = sum of the requests' ``seq_len`` (tokens
    in the cache after the step), ``attention_pairs`` = the (query, key) pairs the
    causal mask keeps (``causal_pairs``), ``num_logits`` = the positions that get
    logits (default ``num_reqs``: no drafts).
    ``for_step(query_start_loc, seq_lens, num_logits)``: the same from a step's
    ``StepInputs`` arrays (``[R + 1]`` and ``[R]`` int; ``len(sample_rows)``), as an
    int.
    """

    def __init__(self, preset: TorchPreset, vocab_size: int, gpu: "GpuFigures | MeasuredFigures",
                 element_bytes: int = BF16_BYTES):
        if element_bytes not in (1, 2, 4, 8):
            raise ConfigError(f"element_bytes must be 1, 2, 4 or 8, got {element_bytes}")
        p = preset
        d, f = p.hidden_size, p.intermediate_size
        q_dim, kv_dim = p.num_heads * p.head_dim, p.num_kv_heads * p.head_dim
        #: (in, out) of each matmul of a layer: QKV, O, gate + up, down.
        self.layer_matmuls = ((d, q_dim + 2 * kv_dim), (q_dim, d), (d, 2 * f), (f, d))
        self.num_layers = p.num_layers
        self.hidden_size = d
        self.vocab_size = vocab_size
        self.element_bytes = element_bytes
        self.kv_bytes_per_token = 2 * kv_dim * element_bytes  # K and V of one token, one layer
        self.attention_flops_per_pair = 4 * q_dim
        self.bandwidth = gpu.memory_bandwidth_bytes_per_s * gpu.efficiency
        self.flops = gpu.flops_per_s * gpu.efficiency
        self.fixed_ns = float(gpu.fixed_step_ns)

    def _op_ns(self, num_bytes: float, num_flops: float) -> float:
        return max(num_bytes / self.bandwidth, num_flops / self.flops) * 1e9

    def _matmul_ns(self, rows: int, n_in: int, n_out: int) -> float:
        num_bytes = self.element_bytes * (n_in * n_out + rows * n_in + rows * n_out)
        return self._op_ns(num_bytes, 2.0 * rows * n_in * n_out)

    def breakdown(self, num_tokens: int, num_reqs: int, context_tokens: int,
                  attention_pairs: int, num_logits: Optional[int] = None
                  ) -> dict[str, float]:
        """ns per op kind over the whole step: ``qkv``, ``o``, ``gate_up``, ``down``,
        ``attention`` (all layers), ``lm_head`` (over ``num_logits`` rows, default
        ``num_reqs``), ``fixed``."""
        names = ("qkv", "o", "gate_up", "down")
        out = {name: self.num_layers * self._matmul_ns(num_tokens, n_in, n_out)
               for name, (n_in, n_out) in zip(names, self.layer_matmuls)}
        out["attention"] = self.num_layers * self._op_ns(
            float(self.kv_bytes_per_token) * context_tokens,
            float(self.attention_flops_per_pair) * attention_pairs)
        out["lm_head"] = self._matmul_ns(num_reqs if num_logits is None else num_logits,
                                         self.hidden_size, self.vocab_size)
        out["fixed"] = self.fixed_ns
        return out

    def ns(self, num_tokens: int, num_reqs: int, context_tokens: int,
           attention_pairs: int, num_logits: Optional[int] = None) -> float:
        """The step's roofline time in ns: the sum of ``breakdown``."""
        if num_reqs == 0:
            return 0.0
        return sum(self.breakdown(num_tokens, num_reqs, context_tokens,
                                  attention_pairs, num_logits).values())

    @staticmethod
    def step_counts(query_start_loc: np.ndarray, seq_lens: np.ndarray,
                    num_logits: Optional[int] = None) -> tuple[int, int, int, int, int]:
        """``(num_tokens, num_reqs, context_tokens, attention_pairs, num_logits)`` of one
        step from its ``StepInputs`` arrays (``[R + 1]`` and ``[R]`` int) and the
        positions that get logits (``len(sample_rows)``; default one a request):
        ``ns``'s arguments."""
        num_reqs = len(seq_lens)
        if num_reqs == 0:
            return 0, 0, 0, 0, 0
        return (int(query_start_loc[-1]), num_reqs, int(seq_lens.sum()),
                causal_pairs(np.diff(query_start_loc), seq_lens),
                num_reqs if num_logits is None else int(num_logits))

    def rounded_ns(self, counts: tuple[int, int, int, int, int]) -> int:
        """``ns(*counts)`` rounded to an int (0 for a step without requests)."""
        return int(round(self.ns(*counts))) if counts[1] else 0

    def for_step(self, query_start_loc: np.ndarray, seq_lens: np.ndarray,
                 num_logits: Optional[int] = None) -> int:
        """``ns`` of one step from its ``StepInputs`` arrays, rounded to an int."""
        return self.rounded_ns(self.step_counts(query_start_loc, seq_lens, num_logits))


def causal_pairs(num_scheduled: np.ndarray, seq_lens: np.ndarray) -> int:
    """The (query, key) pairs a causal mask keeps in one step: for each request, its
    ``q`` scheduled tokens (``num_scheduled``, int ``[R]``) each see the ``seq_len - q``
    tokens computed before and the scheduled ones up to itself:
    ``sum q (seq_len - q) + q (q + 1) / 2`` (``seq_lens``, int ``[R]``, tokens after
    the step). ``seq_len`` for a decode (``q`` 1)."""
    q = np.asarray(num_scheduled, dtype=np.int64)
    s = np.asarray(seq_lens, dtype=np.int64)
    return int(np.dot(q, s - q) + (q * (q + 1) // 2).sum())


class MeasuredFigures(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A device's figures measured in this process (``measure_device_figures``), in
    the shape ``RooflineStep`` reads: ``memory_bandwidth_bytes_per_s`` (bytes read +
    written per second by a device-to-device copy of ``copy_bytes``), ``flops_per_s``
    (``matmul_n`` x ``matmul_n`` square matmuls in ``dtype``, ``element_bytes`` bytes an
    element), ``efficiency`` 1 and ``fixed_step_ns`` 0 (not calibrated: the roofline is
    a lower bound), on ``device`` (``cpu``, ``cuda``, ...) named ``name`` with
    ``num_threads`` torch threads, and the ``provenance`` of each figure."""

    name: str
    device: str
    dtype: str
    element_bytes: int
    memory_bandwidth_bytes_per_s: float
    flops_per_s: float
    copy_bytes: int
    matmul_n: int
    num_threads: int
    provenance: dict[str, str]
    efficiency: float = 1.0
    fixed_step_ns: int = 0
    calibrated: bool = False


#: ``measure_device_figures``' defaults per device type: (copy buffer in bytes, matmul
#: size n, seconds of timing per figure). CUDA: 1 GiB (far above any cache) and an
#: 8192-square GEMM; CPU: 64 MiB and 1024, so the measurement stays under a second.
MEASURE_DEFAULTS: dict[str, tuple[int, int, float]] = {
    "cuda": (2**30, 8192, 0.2),
    "cpu": (64 * 2**20, 1024, 0.15),
}


def _median_s(torch, stmt: str, names: dict[str, Any], min_run_time_s: float) -> float:
    """Median seconds of one ``stmt`` (``torch.utils.benchmark.Timer.blocked_autorange``,
    which synchronises the accelerator around each block), at torch's thread count."""
    from torch.utils import benchmark

    timer = benchmark.Timer(stmt=stmt, globals=names, num_threads=torch.get_num_threads())
    return float(timer.blocked_autorange(min_run_time=min_run_time_s).median)


def _size_text(num_bytes: int) -> str:
    return (f"{num_bytes / 2**30:g} GiB" if num_bytes >= 2**30
            else f"{num_bytes / 2**20:g} MiB" if num_bytes >= 2**20 else f"{num_bytes:,} B")


def _threads_text(n: int) -> str:
    return f"{n} torch thread" + ("" if n == 1 else "s")


def measure_device_figures(torch, device: Any = "cpu", dtype: Any = None,
                           copy_bytes: Optional[int] = None, matmul_n: Optional[int] = None,
                           min_run_time_s: Optional[float] = None) -> MeasuredFigures:
    """Measure ``device``'s copy bandwidth and matmul rate in ``dtype`` (default
    float32), the two figures ``gpu_figures.json`` quotes for an H200 from issue 11
    (device-to-device copy bandwidth, dense bf16 matmul rate), with ``torch`` (the
    module, passed in as ``cuda_step``'s helpers take it; ``torch.utils.benchmark`` is
    imported only when this runs): the median time of ``dst.copy_(src)`` over
    ``copy_bytes`` (2 x ``copy_bytes`` moved: read + write) and of
    ``torch.matmul(a, b, out=out)`` over ``[matmul_n, matmul_n]`` operands
    (``2 matmul_n**3`` FLOPs), each timed for ``min_run_time_s`` by
    ``torch.utils.benchmark.Timer`` at torch's thread count; sizes default to
    ``MEASURE_DEFAULTS``. Rates in bytes/s and FLOP/s. The buffers are freed before it
    returns (on CUDA the caching allocator's too). Raises ``ConfigError`` for a buffer
    below one element, ``matmul_n`` below 1 or a figure that is not positive and
    finite."""
    dev = torch.device(device)
    dtype = torch.float32 if dtype is None else dtype
    d_copy, d_n, d_time = MEASURE_DEFAULTS.get(dev.type, MEASURE_DEFAULTS["cpu"])
    copy_bytes, matmul_n = copy_bytes or d_copy, matmul_n or d_n
    min_run_time_s = min_run_time_s or d_time
    element_bytes = torch.empty(0, dtype=dtype).element_size()
    numel = copy_bytes // element_bytes
    if numel < 1 or matmul_n < 1:
        raise ConfigError(f"copy_bytes ({copy_bytes}) must hold one {dtype} element and "
                          f"matmul_n ({matmul_n}) be at least 1")
    src = torch.ones(numel, dtype=dtype, device=dev)
    dst = torch.empty_like(src)
    dst.copy_(src)  # first touch of the pages, outside the timing
    copy_s = _median_s(torch, "dst.copy_(src)", dict(dst=dst, src=src), min_run_time_s)
    del src, dst
    gen = torch.Generator(device=dev).manual_seed(0)
    a, b = (torch.randn(matmul_n, matmul_n, generator=gen, device=dev).to(dtype)
            for _ in range(2))
    out = torch.matmul(a, b)
    matmul_s = _median_s(torch, "torch.matmul(a, b, out=out)",
                         dict(torch=torch, a=a, b=b, out=out), min_run_time_s)
    del a, b, out
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    bandwidth = 2 * numel * element_bytes / copy_s
    flops = 2.0 * matmul_n ** 3 / matmul_s
    if not (math.isfinite(bandwidth) and math.isfinite(flops) and bandwidth > 0 and flops > 0):
        raise ConfigError(f"measured figures of {dev} are not positive and finite: "
                          f"{bandwidth} B/s, {flops} FLOP/s")
    name = (torch.cuda.get_device_name(dev) if dev.type == "cuda"
            else f"{dev.type} ({_threads_text(torch.get_num_threads())})")
    dtype_name = str(dtype).removeprefix("torch.")
    how = (f"measured in this process: median of torch.utils.benchmark.Timer."
           f"blocked_autorange (min_run_time {min_run_time_s:g} s) on {dev}, ")
    return MeasuredFigures(
        name=name, device=str(dev), dtype=dtype_name, element_bytes=element_bytes,
        memory_bandwidth_bytes_per_s=bandwidth, flops_per_s=flops,
        copy_bytes=numel * element_bytes, matmul_n=matmul_n,
        num_threads=torch.get_num_threads(),
        provenance=dict(
            memory_bandwidth_bytes_per_s=how + (
                f"dst.copy_(src) of a {_size_text(numel * element_bytes)} {dtype_name} "
                f"buffer, {copy_s * 1e6:.1f} us, counted as 2 x "
                f"{numel * element_bytes:,} bytes (read + write)"),
            flops_per_s=how + (
                f"torch.matmul of two {matmul_n} x {matmul_n} {dtype_name} matrices, "
                f"{matmul_s * 1e6:.1f} us, counted as 2 x {matmul_n}**3 FLOPs"),
            efficiency="1.0: uncalibrated (every op taken to reach the measured rates)",
            fixed_step_ns="0: uncalibrated (no per-step launch or host time added)"))


def roofline_enabled(setting: str, device: str) -> bool:
    """Whether the torch model keeps a roofline (``ModelConfig.roofline``): ``on``,
    ``off``, or ``auto`` (on for CUDA, off elsewhere: the CPU's figures are for tests)."""
    return setting == "on" or (setting == "auto" and device == "cuda")


class StepRoofline:
    """The torch model's roofline per step: ``RooflineStep`` of ``preset`` on
    ``figures`` (``measure_device_figures``, in the model's dtype and element size).

    ``record(query_start_loc, seq_lens, num_logits)`` once per step (``StepInputs``
    arrays, ``[R + 1]`` and ``[R]`` int, and ``len(sample_rows)``): keeps the step's five
    counts (``RooflineStep.step_counts``),
    so a step pays no float arithmetic. ``columns()``: ``{"roofline_ns": [...]}``, one
    int per recorded step, each ``RooflineStep.for_step`` of that step's arrays.
    ``info()``: ``{"roofline_figures": the figures as builtins}``, for the case's
    summary.
    """

    def __init__(self, preset: TorchPreset, vocab_size: int, figures: MeasuredFigures):
        self.figures = figures
        self.step = RooflineStep(preset, vocab_size, figures, figures.element_bytes)
        self._counts: list[tuple[int, int, int, int, int]] = []

    @classmethod
    def measure(cls, torch, device: Any, dtype: Any, preset: TorchPreset,
                vocab_size: int) -> "StepRoofline":
        """Measure ``device``'s figures in ``dtype`` (``measure_device_figures``'
        default sizes) and keep the roofline of ``preset`` on them."""
        return cls(preset, vocab_size, measure_device_figures(torch, device, dtype))

    def record(self, query_start_loc: np.ndarray, seq_lens: np.ndarray,
               num_logits: Optional[int] = None) -> None:
        self._counts.append(RooflineStep.step_counts(query_start_loc, seq_lens, num_logits))

    def columns(self) -> dict[str, list[int]]:
        return {"roofline_ns": [self.step.rounded_ns(c) for c in self._counts]}

    def info(self) -> dict[str, Any]:
        return {"roofline_figures": msgspec.to_builtins(self.figures)}


def sleep_until_ns(deadline_ns: int, spin_ns: int = SPIN_NS,
                   clock=time.perf_counter_ns) -> int:
    """Return at ``clock() >= deadline_ns`` (``time.perf_counter_ns`` units): sleep
    (leaving the CPU free, as a runner waiting on a GPU would) until ``spin_ns`` before
    it, then spin. Returns how late it returned, in ns (never negative)."""
    remaining = deadline_ns - clock()
    if remaining > spin_ns:
        time.sleep((remaining - spin_ns) / 1e9)
    now = clock()
    while now < deadline_ns:
        now = clock()
    return now - deadline_ns
