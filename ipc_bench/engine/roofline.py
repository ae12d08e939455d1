"""The emulated model's clock: a decoder step's roofline time on a GPU's figures.

For one step of a preset (``config.TorchPreset``; weights, activations and KV cache in
bf16, 2 bytes an element) over ``T`` scheduled tokens of ``R`` requests, each op takes
the larger of its bytes / memory bandwidth and its FLOPs / bf16 rate (both rates
times ``efficiency``); the step is the sum over the ops plus ``fixed_step_ns``
(the roofline model: Williams, Waterman and Patterson, "Roofline: an insightful
visual performance model for multicore architectures", CACM 52(4), 2009).

Per layer (times ``num_layers``), with ``d`` hidden, ``H`` / ``K`` query / KV heads
of ``hd`` dims and ``F`` the MLP width:

- four matmuls ``[T, in] @ [in, out]``: QKV ``(d, (H + 2K) hd)``, O ``(H hd, d)``,
  gate + up ``(d, 2F)``, down ``(F, d)``; bytes ``2 (in out + T in + T out)`` (the
  weights read once per step, the activations in and out), FLOPs ``2 T in out``;
- attention: bytes ``2 x 2 K hd x sum_r seq_len_r`` (each request's K and V over its
  whole context, read once), FLOPs ``4 H hd x sum_r q_r seq_len_r`` (``q_r``: the
  request's scheduled tokens; QK^T and PV, no saving for the causal mask).

Then the LM head once, ``[R, d] @ [d, V]`` (logits at each request's last token).

Not modelled (left to ``efficiency`` and ``fixed_step_ns`` once calibrated): the
embedding lookup, norms, RoPE, activation functions, KV-cache writes, sampling and
kernel launches. The figures come from ``gpu_figures.json`` beside this module, each
with its provenance; ``calibrated`` is false until efficiency and fixed time are fitted
to a GPU run, and every output of an emulated case says which.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

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

    @property
    def label(self) -> str:
        """E.g. ``"emulated NVIDIA H200 (roofline, uncalibrated)"``: the emulated
        runner's device, as the tables print it."""
        return f"emulated {self.name} (roofline, {self.status})"


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
    (see the module docstring for the ops and their bytes and FLOPs).

    ``ns(num_tokens, num_reqs, context_tokens, attention_pairs)``: one step, in ns
    (float); ``context_tokens`` = sum of the requests' ``seq_len`` (tokens in the cache
    after the step), ``attention_pairs`` = sum of ``q_r * seq_len_r``.
    ``for_step(query_start_loc, seq_lens)``: the same from a step's
    ``StepInputs`` arrays (``[R + 1]`` and ``[R]`` int), as an int.
    """

    def __init__(self, preset: TorchPreset, vocab_size: int, gpu: GpuFigures):
        p = preset
        d, f = p.hidden_size, p.intermediate_size
        q_dim, kv_dim = p.num_heads * p.head_dim, p.num_kv_heads * p.head_dim
        #: (in, out) of each matmul of a layer: QKV, O, gate + up, down.
        self.layer_matmuls = ((d, q_dim + 2 * kv_dim), (q_dim, d), (d, 2 * f), (f, d))
        self.num_layers = p.num_layers
        self.hidden_size = d
        self.vocab_size = vocab_size
        self.kv_bytes_per_token = 2 * kv_dim * BF16_BYTES  # K and V of one token, one layer
        self.attention_flops_per_pair = 4 * q_dim
        self.bandwidth = gpu.memory_bandwidth_bytes_per_s * gpu.efficiency
        self.flops = gpu.bf16_flops_per_s * gpu.efficiency
        self.fixed_ns = float(gpu.fixed_step_ns)

    def _op_ns(self, num_bytes: float, num_flops: float) -> float:
        return max(num_bytes / self.bandwidth, num_flops / self.flops) * 1e9

    def _matmul_ns(self, rows: int, n_in: int, n_out: int) -> float:
        num_bytes = BF16_BYTES * (n_in * n_out + rows * n_in + rows * n_out)
        return self._op_ns(num_bytes, 2.0 * rows * n_in * n_out)

    def breakdown(self, num_tokens: int, num_reqs: int, context_tokens: int,
                  attention_pairs: int) -> dict[str, float]:
        """ns per op kind over the whole step: ``qkv``, ``o``, ``gate_up``, ``down``,
        ``attention`` (all layers), ``lm_head``, ``fixed``."""
        names = ("qkv", "o", "gate_up", "down")
        out = {name: self.num_layers * self._matmul_ns(num_tokens, n_in, n_out)
               for name, (n_in, n_out) in zip(names, self.layer_matmuls)}
        out["attention"] = self.num_layers * self._op_ns(
            float(self.kv_bytes_per_token) * context_tokens,
            float(self.attention_flops_per_pair) * attention_pairs)
        out["lm_head"] = self._matmul_ns(num_reqs, self.hidden_size, self.vocab_size)
        out["fixed"] = self.fixed_ns
        return out

    def ns(self, num_tokens: int, num_reqs: int, context_tokens: int,
           attention_pairs: int) -> float:
        """The step's roofline time in ns: the sum of ``breakdown``."""
        if num_reqs == 0:
            return 0.0
        return sum(self.breakdown(num_tokens, num_reqs, context_tokens,
                                  attention_pairs).values())

    def for_step(self, query_start_loc: np.ndarray, seq_lens: np.ndarray) -> int:
        """``ns`` of one step from its ``StepInputs`` arrays, rounded to an int."""
        num_reqs = len(seq_lens)
        if num_reqs == 0:
            return 0
        q = np.diff(query_start_loc)
        return int(round(self.ns(int(query_start_loc[-1]), num_reqs, int(seq_lens.sum()),
                                 int(np.dot(q, seq_lens)))))


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
