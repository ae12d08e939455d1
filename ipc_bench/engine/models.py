"""Runner models: ``null`` (no compute, the control plane alone), ``fixed-step`` (a
busy-wait of a set GPU-like step time, then the null model's sampler), ``torch`` (a
Llama-style decoder with a paged KV cache, greedy sampling) and ``emulated`` (a sleep
of the step's roofline time on a GPU's figures, then the null model's sampler).

Every model computes each token from the runner's own token buffer, so a bookkeeping
bug (wrong row, off-by-one, missed write) changes the token stream and the token
digest that both policies must agree on.

Interface: ``model.execute(batch, inputs) -> np.ndarray`` (int64 ``[num_reqs]``, one
sampled id per row of the persistent batch), called by ``ModelRunner.sample`` with the
runner's ``InputBatch`` and the step's ``StepInputs``; ``model.device`` names where it
runs (sent to the scheduler in ``Ready.device``); ``model.step_columns()`` returns the
model's own per-step columns (``{}`` when it has none; ``model_step_columns``), which
the runner adds to its report. torch is imported only by the torch model.

Speculative decoding: every model samples at ``StepInputs.sample_rows`` /
``sample_positions`` (several positions per row with draft tokens; one id per
position); the null, fixed-step and emulated models draft with ``NullModel.propose``,
the torch model verifies in one forward over every drafted position and drafts with
``TorchModel.propose`` (the target's own decode forward run ahead).
"""

from __future__ import annotations

import gc
import json
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any, Optional, Sequence

import numpy as np

from ipc_bench.engine.config import (ConfigError, ModelConfig, SchedulerConfig, check_max_position,
                                     check_model_memory)
from ipc_bench.engine.cuda_step import (DecodeGraphs, PinnedStaging, StepEventTimer,
                                        configure_cuda_attention, cuda_graph_capture,
                                        eager_capture, hidden_to_device, hidden_to_host)
from ipc_bench.engine.paged_attention import (GRAPH_BACKENDS, DecodeRows, GatherAttention,
                                              decode_buckets, flex_unsupported,
                                              make_attention, resolve_attention,
                                              varlen_kernel_problem, varlen_unsupported)
from ipc_bench.engine.roofline import EMULATED_GPU, RooflineStep, load_gpu_figures, sleep_until_ns
from ipc_bench.engine.token_ids import token_id_distribution

if TYPE_CHECKING:  # imported for annotations only
    from ipc_bench.engine.input_batch import InputBatch, StepInputs

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)
#: Salts of the drafter's two hashes (``NullModel.propose``): whether a draft is the
#: target's token, and the id of a draft that is not.
_ACCEPT_SALT = np.uint64(0x5EC0DEC0DE5A17ED)
_WRONG_SALT = np.uint64(0xD12AF7BADD1D5A17)
#: The hash's constants as 0-d arrays, for ``_mix_into``: a ufunc takes a 0-d array
#: operand faster than a NumPy scalar (no scalar conversion per call).
_M2_0D = np.array(_M2)
_M3_0D = np.array(_M3)
_S30_0D = np.array(_S30)
_S27_0D = np.array(_S27)
_S31_0D = np.array(_S31)
#: The same constants as Python ints, for the hash in Python ints (``_small_hashes``).
_MASK64 = (1 << 64) - 1
_M1_INT = int(_M1)
_M2_INT = int(_M2)
_M3_INT = int(_M3)


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser, in place on a uint64 array (wraps modulo 2**64)."""
    h ^= h >> _S30
    h *= _M2
    h ^= h >> _S27
    h *= _M3
    h ^= h >> _S31
    return h


def _mix_into(h: np.ndarray, tmp: np.ndarray) -> None:
    """``_mix(h)`` with ``tmp`` (same shape and dtype) as scratch: same values, no
    temporary arrays."""
    xor, shift, mul = np.bitwise_xor, np.right_shift, np.multiply
    xor(h, shift(h, _S30_0D, out=tmp), out=h)
    mul(h, _M2_0D, out=h)
    xor(h, shift(h, _S27_0D, out=tmp), out=h)
    mul(h, _M3_0D, out=h)
    xor(h, shift(h, _S31_0D, out=tmp), out=h)


class NullModel:
    """Greedy "sampler" with no forward pass.

    ``sample(token_ids_cpu, rows, positions)``: for each ``rows[i]``, the next token
    is a splitmix64 hash of the ``hash_window`` tokens of ``token_ids_cpu[rows[i]]``
    ending at ``positions[i]`` (the last scheduled position; earlier ones before 0
    read as 0), of ``positions[i]`` and of the seed, mapped into ``[0, vocab_size)`` by
    ``config.token_ids`` (``engine.token_ids.TokenIds.from_hash``: modulo ``vocab_size``
    for ``uniform``, the inverse CDF at the hash's top 53 bits for ``zipf`` and
    ``hist:PATH``). Shapes: ``rows``, ``positions``: ``[num_reqs]`` int; returns
    ``[num_reqs]`` int64. Uniform ids over 128,256 take 3 or 5 msgpack bytes (an upper
    bound for text); Zipf ids mostly 1 or 3.

    Up to ``SMALL_BATCH`` rows the hash runs in Python ints masked to 64 bits
    (``_small_hashes``), above it in NumPy (``_hash``, about 40 ufunc calls whatever
    the batch): the same ids either way, bit for bit; the Python loop costs a few
    microseconds a row, the NumPy one tens of microseconds a step, so each is used
    where it is the faster.
    """

    device = "cpu"
    #: Most rows hashed in Python ints; more go through NumPy (crossover measured on a
    #: 2-core development machine, 2026-12-06).
    SMALL_BATCH = 8

    def __init__(self, config: ModelConfig):
        self.vocab_size = np.uint64(config.vocab_size)
        self.token_ids = token_id_distribution(config.token_ids, config.vocab_size,
                                               config.token_id_histogram or None)
        self.window = np.arange(config.hash_window, dtype=np.int64)
        self._window_col = self.window[:, None]  # [hash_window, 1]
        self.seed = np.uint64(config.seed & 0xFFFFFFFFFFFFFFFF)
        self._seed_int = int(self.seed)
        self._window_len = config.hash_window

    def sample(self, token_ids_cpu: np.ndarray, rows: np.ndarray,
               positions: np.ndarray) -> np.ndarray:
        """The next token of each ``rows[i]`` at ``positions[i]`` (int64 ``[num_reqs]``,
        as the class says); ``IndexError`` when a position lies outside a row."""
        if len(rows) <= self.SMALL_BATCH:
            hashes = self._small_hashes(token_ids_cpu, rows, positions)
            return np.array(self.token_ids.ids_of_hashes(hashes), dtype=np.int64)
        return self.token_ids.from_hash(self.hash_state(token_ids_cpu, rows, positions))

    def hash_state(self, token_ids_cpu: np.ndarray, rows: np.ndarray,
                   positions: np.ndarray) -> np.ndarray:
        """The uint64 hash ``sample`` maps to ids (``[num_reqs]``): what a pipeline's
        first stage carries to the last in its hidden states (``engine.pipeline``).
        Raises ``IndexError`` when a position lies outside a row of the buffer."""
        if len(rows) <= self.SMALL_BATCH:
            return np.array(self._small_hashes(token_ids_cpu, rows, positions),
                            dtype=np.uint64)
        # idx[j, i]: position of the j-th last token of request i (one contiguous row
        # per window slot, so each round of the hash reads one row).
        width = token_ids_cpu.shape[1]
        if len(positions) and positions.max() >= width:  # would read the next row
            raise IndexError(f"position {int(positions.max())} outside a row of {width} tokens")
        idx = positions - self._window_col  # [hash_window, num_reqs]
        flat = np.maximum(idx, 0)
        flat += rows * width
        tokens = token_ids_cpu.ravel().take(flat).astype(np.uint64)
        if len(positions) and positions.min() < len(self.window) - 1:
            tokens[idx < 0] = 0  # before the start of the row
        return self._hash(tokens, positions)

    def _hash(self, tokens: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """The 64-bit hash behind each sampled id: ``tokens`` uint64 ``[hash_window,
        n]`` (row 0 the token at ``positions``, row j the one j positions before it),
        ``positions`` int ``[n]``. Returns uint64 ``[n]`` (``from_hash`` maps it to an id)."""
        h = positions.astype(np.uint64)
        h *= _M1
        h += self.seed
        tmp = np.empty_like(h)
        for column in tokens:
            h ^= column
            _mix_into(h, tmp)
        return h

    def _small_hashes(self, token_ids_cpu: np.ndarray, rows: np.ndarray,
                      positions: np.ndarray) -> list[int]:
        """``hash_state`` as a list of Python ints in ``[0, 2**64)``, computed row by
        row in Python ints masked to 64 bits (no NumPy call per round: the faster for a
        few rows). Same arguments, values and ``IndexError`` as ``hash_state``; a
        token is read as its uint64 cast (``& 2**64 - 1``), as ``astype(np.uint64)``
        reads it."""
        width = token_ids_cpu.shape[1]
        rows_list, positions_list = rows.tolist(), positions.tolist()
        if positions_list and max(positions_list) >= width:  # as hash_state says it
            raise IndexError(f"position {max(positions_list)} outside a row of {width} tokens")
        window, seed, mask, m1, m2, m3 = (self._window_len, self._seed_int, _MASK64,
                                          _M1_INT, _M2_INT, _M3_INT)
        hashes = []
        for row, pos in zip(rows_list, positions_list):
            first = pos - window + 1
            if first >= 0:
                tokens = token_ids_cpu[row, first:pos + 1].tolist()
            elif pos >= 0:  # the slots before position 0 read as 0
                tokens = [0] * -first + token_ids_cpu[row, :pos + 1].tolist()
            else:
                tokens = [0] * window
            h = (pos * m1 + seed) & mask
            for token in reversed(tokens):  # the token at pos first
                h ^= token & mask
                h ^= h >> 30
                h = (h * m2) & mask
                h ^= h >> 27
                h = (h * m3) & mask
                h ^= h >> 31
            hashes.append(h)
        return hashes

    def execute(self, batch: "InputBatch", inputs: "StepInputs") -> np.ndarray:
        """``sample`` over the batch's token buffer at each sampled position
        (``StepInputs.sample_rows`` / ``sample_positions``: each row's last scheduled
        position, and with draft tokens every position from the one before the first
        draft to the last, as vLLM's ``logits_indices`` with spec decoding)."""
        return self.sample(batch.token_ids_cpu, inputs.sample_rows, inputs.sample_positions)

    def propose(self, batch: "InputBatch", rows: np.ndarray, last_positions: np.ndarray,
                first_new: np.ndarray, new_ids: np.ndarray, num_drafts: int,
                acceptance: float) -> np.ndarray:
        """Draft ids for the next step (speculative decoding; vLLM V1 runs its drafter
        in the runner, ``GPUModelRunner.propose_draft_token_ids`` at 7f280d69c).

        For each ``rows[i]`` of the persistent ``batch`` whose tokens run to
        ``last_positions[i]``, of which those from ``first_new[i]`` on were sampled
        this step and are in ``new_ids[i]`` (int64 ``[n, k]``, ``new_ids[i, p -
        first_new[i]]`` at position ``p``; under ``send`` they are not in
        ``batch.token_ids_cpu`` yet), draft ``j`` (0-based) is the
        target's own token at ``last_positions[i] + 1 + j`` (this model's hash over the
        drafts before it, as if all of them were accepted) with probability
        ``acceptance``, else another id of the same distribution. The choice is a hash
        of the target token's hash (its context and position) and a salt, so it is
        seeded by the model's seed, the same under both policies and whatever the
        schedule. Returns int64 ``[n, num_drafts]``.
        """
        token_ids_cpu = batch.token_ids_cpu
        n = len(rows)
        width = token_ids_cpu.shape[1]
        pos = last_positions - self._window_col  # [hash_window, n], newest first
        win = token_ids_cpu.ravel().take(np.maximum(pos, 0) + rows * width).astype(np.int64)
        fresh = pos >= first_new
        if fresh.any():
            cols = np.nonzero(fresh)[1]
            win[fresh] = new_ids[cols, (pos - first_new)[fresh]]
        win[pos < 0] = 0
        win = win.astype(np.uint64)
        threshold = np.uint64(min(int(round(acceptance * 2**53)), 2**53))
        drafts = np.empty((n, num_drafts), dtype=np.int64)
        p = last_positions.astype(np.int64)
        vocab = np.int64(self.token_ids.vocab_size)
        for j in range(num_drafts):
            h = self._hash(win, p)
            true = self.token_ids.from_hash(h.copy())
            u = h ^ _ACCEPT_SALT
            _mix(u)
            accept = (u >> _S11) < threshold
            alt = h ^ _WRONG_SALT
            _mix(alt)
            alt = self.token_ids.from_hash(alt)
            clash = alt == true
            alt[clash] = (true[clash] + 1) % vocab
            drafts[:, j] = np.where(accept, true, alt)
            win = np.roll(win, 1, axis=0)
            win[0] = true.astype(np.uint64)  # the continuation assumes every draft right
            p = p + 1
        return drafts

    def step_columns(self) -> dict[str, list[int]]:
        """The model's own per-step columns: none."""
        return {}


class FixedStepModel(NullModel):
    """Waits ``step_time_ms``, then samples exactly as ``NullModel``: the same seed gives
    the same tokens, and the same digests, as the null model, whichever the wait.
    Models a GPU step of fixed length (2, 5, 20 ms span real decode steps; vLLM's V1
    post reports about 5 ms for Llama 8B on an H100).

    ``config.step_wait``: ``sleep`` (``roofline.sleep_until_ns``: a sleep, then a spin
    over the last ``roofline.SPIN_NS``) leaves the runner's core free while it waits,
    as a runner blocked on a GPU would; ``spin`` (a ``time.perf_counter_ns`` loop)
    keeps it busy, as a runner that polls the GPU does. ``device``: e.g. ``"cpu
    (fixed step: sleep wait)"``.
    """

    def __init__(self, config: ModelConfig):
        super().__init__(config)
        self.step_ns = int(round(config.step_time_ms * 1e6))
        self.wait = config.step_wait
        self.device = f"cpu (fixed step: {config.step_wait} wait)"
        self._wait_until = _spin_until_ns if config.step_wait == "spin" else sleep_until_ns

    def execute(self, batch: "InputBatch", inputs: "StepInputs") -> np.ndarray:
        self._wait_until(time.perf_counter_ns() + self.step_ns)
        return self.sample(batch.token_ids_cpu, inputs.sample_rows, inputs.sample_positions)


def _spin_until_ns(deadline_ns: int) -> None:
    """Busy-wait until ``time.perf_counter_ns() >= deadline_ns``."""
    perf = time.perf_counter_ns
    while perf() < deadline_ns:
        pass


class EmulatedModel(NullModel):
    """Sleeps each step's roofline time for ``config.preset`` on a GPU's figures
    (``roofline.RooflineStep``, ``gpu_figures.json``: an H200), then samples exactly
    as ``NullModel`` (same seed, same tokens, same digests). The wait is a sleep, with
    a spin over its last ``roofline.SPIN_NS``: a runner waiting on a GPU leaves its
    CPU free. What send costs next to the roofline time of a 1B or 8B step (shorter than
    a real one's but for the rates' margin: ``roofline``), on a host without a GPU.

    ``device``: e.g. ``"emulated llama-3.2-1b on NVIDIA H200 (roofline, uncalibrated)"``.
    ``step_columns()``: ``{"emulated_step_ns": [...], "emulated_context_tokens": [...]}``,
    each step's roofline time (ns) and the KV context it was computed for (tokens: the
    sum of the step's ``seq_lens``, tokens in the cache after the step). Raises ``ConfigError`` when the preset's bf16 weights + KV cache would not
    fit the emulated GPU (``check_model_memory``).
    """

    def __init__(self, config: ModelConfig, scheduler: SchedulerConfig):
        super().__init__(config)
        self.gpu = load_gpu_figures(EMULATED_GPU)
        check_max_position(scheduler, config)
        check_model_memory(scheduler, config, EMULATED_GPU, self.gpu.memory_bytes,
                           f"an emulated {self.gpu.name}")
        self.device = self.gpu.label(config.preset)
        self.roofline = RooflineStep(config.torch_preset, config.vocab_size, self.gpu)
        self.emulated_step_ns: list[int] = []
        self.emulated_context_tokens: list[int] = []

    def execute(self, batch: "InputBatch", inputs: "StepInputs") -> np.ndarray:
        t0 = time.perf_counter_ns()
        step_ns = self.roofline.for_step(inputs.query_start_loc, inputs.seq_lens,
                                         len(inputs.sample_rows))
        self.emulated_step_ns.append(step_ns)
        # the roofline's context_tokens (RooflineStep.step_counts)
        self.emulated_context_tokens.append(int(np.sum(inputs.seq_lens)))
        sampled = self.sample(batch.token_ids_cpu, inputs.sample_rows, inputs.sample_positions)
        sleep_until_ns(t0 + step_ns)
        return sampled

    def step_columns(self) -> dict[str, list[int]]:
        return {"emulated_step_ns": list(self.emulated_step_ns),
                "emulated_context_tokens": list(self.emulated_context_tokens)}


def model_step_columns(model) -> dict[str, list[int]]:
    """``model.step_columns()``, or ``{}`` for a model without that method."""
    method = getattr(model, "step_columns", None)
    return method() if method is not None else {}


def release_model(runner) -> None:
    """Drop ``runner.model`` (``runner``: a ``ModelRunner`` whose case is over) and, for
    a model on CUDA, hand the memory it held back to the device: ``gc.collect()`` (a
    model with decode graphs holds itself through ``DecodeGraphs.model``), then
    ``torch.cuda.empty_cache()`` (the caching allocator keeps freed blocks reserved).
    The single-process case runs the model in the scheduler process, which lives on:
    without this the next case's runner process finds that much less free memory, and
    ``check_model_memory`` refuses by it."""
    model, runner.model = runner.model, None
    device = getattr(model, "torch_device", None)
    torch = model.torch if getattr(device, "type", None) == "cuda" else None
    del model
    if torch is not None:
        gc.collect()
        torch.cuda.empty_cache()


def model_info(model) -> dict:
    """What ``model`` measured about its device at start-up, for the case's summary:
    ``{"roofline_figures": {...}}`` (``roofline.StepRoofline.info``: bandwidth, matmul
    rate, dtype, sizes, provenance) for a torch model with its roofline on, else ``{}``."""
    roofline = getattr(model, "step_roofline", None)
    return roofline.info() if roofline is not None else {}


def resolve_device(requested: str) -> str:
    """``auto`` -> ``cuda`` when ``torch.cuda.is_available()``, else ``cpu``; ``cuda``
    without a usable GPU raises ``ConfigError``. Imports torch."""
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device cuda was asked for but torch.cuda.is_available() is False")
    return requested


_PROBE = ("import json\n"
          "try:\n"
          "    import torch\n"
          "except Exception as exc:\n"
          "    print(json.dumps(['no-torch', f'{type(exc).__name__}: {exc}']))\n"
          "    raise SystemExit(0)\n"
          "ok = torch.cuda.is_available()\n"
          "print(json.dumps(['cuda', torch.cuda.mem_get_info(0)[0]] if ok else ['cpu', None]))\n")


def probe_torch_device(requested: str, timeout_s: float = 120.0) -> tuple[str, Optional[int]]:
    """(device, free GPU memory in bytes or ``None``) the torch model will run on,
    found in a child process (``torch.cuda.mem_get_info``) so that the scheduler
    process never imports torch. Raises ``ConfigError`` if torch cannot be imported,
    if the probe process is killed by a signal or exits with an error (saying which,
    with its last stderr line), or if ``cuda`` is asked for and absent."""
    if requested == "cpu":
        return "cpu", None
    try:
        proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                              timeout=timeout_s, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ConfigError(f"probing torch's device took over {timeout_s:.0f} s") from None
    if proc.returncode != 0:
        lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
        last = f"; its last stderr line: {lines[-1]}" if lines else "; it wrote no stderr"
        if proc.returncode < 0:
            try:
                how = f"was killed by {signal.Signals(-proc.returncode).name}"
            except ValueError:
                how = f"was killed by signal {-proc.returncode}"
        else:
            how = f"exited with code {proc.returncode}"
        raise ConfigError(f"the process probing torch's device (python -c 'import torch; "
                          f"torch.cuda.is_available() ...') {how}{last}")
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    if found[0] == "no-torch":
        raise ConfigError(f"the torch model needs torch: importing it failed: {found[1]}")
    device, memory = found
    if requested == "cuda" and device != "cuda":
        raise ConfigError("device cuda was asked for but torch.cuda.is_available() is False")
    return device, memory


class TorchModel:
    """A Llama-style decoder with seeded random weights and a paged KV cache.

    Shape from ``config.torch_preset``: token embedding ``[vocab_size, hidden]``, then
    ``num_layers`` x (RMSNorm, grouped-query attention with rotary position embedding,
    RMSNorm, SwiGLU MLP), a final RMSNorm and an LM head ``[hidden, vocab_size]`` (the
    embedding's transpose when the preset ties them, as Llama 3.2 1B and Qwen2.5 0.5B
    do). ``vocab_size``: ``config.vocab_size`` (a public preset's own, see
    ``ModelConfig.validate``). Weights are drawn from a generator seeded with
    ``config.seed`` on the model's device; float32 on CPU, ``preset.cuda_dtype``
    (bfloat16) on CUDA.

    KV cache: one tensor ``[num_layers, 2, num_blocks, block_size, num_kv_heads,
    head_dim]`` (``scheduler.num_blocks`` real blocks), laid out by the scheduler's block
    ids as vLLM's paged attention is: token ``p`` of the request in batch row ``r`` lives
    in block ``block_table[r, p // block_size]`` at offset ``p % block_size``.

    One forward covers the flat scheduled tokens of the step (prefill chunks and decode
    tokens alike, ``StepInputs.input_ids`` gathered from the runner's token buffer): each
    token's K and V are written to its slot, then each request's queries attend to its
    cached keys ``[0, seq_len)`` causally. Decode rows (one query token) and rows with
    draft tokens to verify (at most ``decode_threshold = 1 + num_spec_tokens`` query
    tokens) run as one batched call of the attention backend per layer
    (``paged_attention``, every backend: ``gather``, ``flex``, ``varlen``); longer rows
    (prefill chunks) one by one through the gathered causal path. Greedy
    sampling: argmax of the logits at each request's last scheduled token (with draft
    tokens at every drafted position and the one before, ``execute``; drafts come
    from ``propose``).

    On CUDA only: cuDNN's SDPA backend is turned off before the first forward
    (``cuda_step.configure_cuda_attention``; ``device`` then reads e.g. ``"cuda
    (NVIDIA H200; SDPA without cuDNN)"``), the step's host inputs go through pinned
    buffers into persistent device tensors (``cuda_step.PinnedStaging``), and each step
    is timed with CUDA events (``step_columns()``: ``gpu_busy_ns``, ``gpu_idle_ns``;
    ``{}`` on CPU). Raises ``ConfigError`` when weights + KV cache do not fit
    (``check_model_memory``: free GPU memory on CUDA) or CUDA is asked for and absent.
    """

    def __init__(self, config: ModelConfig, scheduler: SchedulerConfig):
        import torch

        self.torch = torch
        torch.set_num_threads(config.num_threads)
        device = resolve_device(config.device)
        name = resolve_attention(config.attention, device)
        if name == "varlen":  # before the weights: this torch may lack its paged kernel
            dtype = getattr(torch, config.torch_preset.cuda_dtype)
            why = varlen_unsupported() or varlen_kernel_problem(torch, device,
                                                                scheduler.block_size, dtype)
            if why is not None:
                raise ConfigError(why)
        if name == "flex":  # before the weights: a block size its kernels cannot take
            why = flex_unsupported(device, scheduler.block_size)
            if why is not None:
                raise ConfigError(why)
        free = torch.cuda.mem_get_info()[0] if device == "cuda" else None
        check_max_position(scheduler, config)
        check_model_memory(scheduler, config, device, free)
        p = config.torch_preset
        self.preset = p
        self.rms_eps = p.rms_norm_eps
        self.vocab_size = config.vocab_size
        self.block_size = scheduler.block_size
        self.max_model_len = scheduler.max_model_len
        #: speculative decoding: drafts per request (``propose``), and the drafter's time
        #: per step (``step_columns``: ``draft_ns``; 0 on a step that drafted nothing)
        self.num_spec_tokens = scheduler.num_spec_tokens
        if self.num_spec_tokens and scheduler.num_lookahead_tokens < self.num_spec_tokens:
            raise ConfigError(
                f"the torch model's drafter writes K/V {self.num_spec_tokens} positions "
                f"ahead: num_lookahead_tokens must be {self.num_spec_tokens}, got "
                f"{scheduler.num_lookahead_tokens}")
        self.draft_ns: list[int] = []
        #: rows of at most this many query tokens go through the batched decode
        #: attention (vLLM's ``reorder_batch_threshold``, ``1 + num_speculative_tokens``
        #: for backends that take verification rows as decodes); longer rows one by one
        #: through the gathered causal path. 1 sends verification rows one by one.
        self.decode_threshold = 1 + self.num_spec_tokens
        self._seed = np.uint64(config.seed & 0xFFFFFFFFFFFFFFFF)
        self.dtype = torch.float32 if device == "cpu" else getattr(torch, p.cuda_dtype)
        self.torch_device = torch.device(device)
        self.device = "cpu"
        self.timer: Optional[StepEventTimer] = None
        self.staging: Optional[PinnedStaging] = None
        self.last_fed = None  # the device input ids of the last step (``forward_logits``)
        #: the step's inputs staged before its first timing event (``_stage``):
        #: name -> (array, its tensor on CPU / None where ``staging`` holds it)
        self._staged: dict[str, tuple[np.ndarray, Any]] = {}
        if device == "cuda":
            attention = configure_cuda_attention(torch)
            self.device = f"cuda ({torch.cuda.get_device_name(self.torch_device)}; {attention})"
            self.timer = StepEventTimer(lambda: torch.cuda.Event(enable_timing=True))
            self.staging = PinnedStaging(torch, self.torch_device)
        from ipc_bench.engine.roofline import StepRoofline, roofline_enabled

        self.step_roofline: Optional[StepRoofline] = None
        if roofline_enabled(config.roofline, device):  # measured before the weights exist
            self.step_roofline = StepRoofline.measure(torch, self.torch_device, self.dtype,
                                                      p, config.vocab_size)
        self._init_weights(config, scheduler, device)
        #: the cache's last block: pad rows of a padded batch write and read only it
        self.pad_block = scheduler.num_blocks
        self.attention = make_attention(
            name, torch, self.torch_device, block_size=self.block_size,
            num_cache_blocks=scheduler.num_blocks + 1,
            max_blocks=scheduler.max_blocks_per_req,
            buckets=decode_buckets(scheduler.max_num_seqs, config.cuda_graph_sizes or None),
            max_model_len=scheduler.max_model_len)
        self.graphs: Optional[DecodeGraphs] = None
        if config.cuda_graphs and device != "cuda":
            raise ConfigError("--cuda-graphs needs CUDA; this runner's device is cpu")
        self.prepare_attention(cuda_graph_capture(torch) if config.cuda_graphs else None)
        if self.attention.graphable:
            self.check_attention(scheduler)
        self._add_to_device(f"attention {name}" + ("; CUDA graphs" if self.graphs else ""))

    def _init_weights(self, config: ModelConfig, scheduler: SchedulerConfig, device: str):
        """Seeded random weights, the zeroed KV cache and the RoPE tables."""
        torch, p = self.torch, self.preset
        gen = torch.Generator(device=device).manual_seed(config.seed)

        def weight(rows: int, cols: int, std: float):
            w = torch.randn(rows, cols, generator=gen, device=device, dtype=torch.float32)
            return w.mul_(std).to(self.dtype)

        d, h, k, hd, f = (p.hidden_size, p.num_heads, p.num_kv_heads, p.head_dim,
                          p.intermediate_size)
        ones = lambda: torch.ones(d, device=device, dtype=self.dtype)  # noqa: E731
        self.embed = weight(config.vocab_size, d, 1.0)  # [vocab, hidden]
        self.layers = [dict(
            attn_norm=ones(),
            wqkv=weight(d, (h + 2 * k) * hd, d ** -0.5),  # [hidden, (H + 2K) * hd]
            wo=weight(h * hd, d, (h * hd) ** -0.5),
            mlp_norm=ones(),
            w_gate_up=weight(d, 2 * f, d ** -0.5),  # [hidden, 2 * intermediate]
            w_down=weight(f, d, f ** -0.5),
        ) for _ in range(p.num_layers)]
        self.final_norm = ones()
        # [hidden, vocab]: tied, the embedding's transpose (a view: no second copy)
        self.lm_head = (self.embed.t() if p.tie_word_embeddings
                        else weight(d, config.vocab_size, d ** -0.5))
        # [num_layers, 2, num_blocks, block_size, num_kv_heads, head_dim]; zeros so
        # masked-out slots of a gathered block are finite.
        # (num_blocks + 1: the last is the pad block of padded decode batches)
        self.kv_cache = torch.zeros(p.num_layers, 2, scheduler.num_blocks + 1,
                                    scheduler.block_size, k, hd, device=device,
                                    dtype=self.dtype)
        inv_freq = 1.0 / (p.rope_theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
        angles = torch.outer(torch.arange(scheduler.max_model_len, dtype=torch.float64), inv_freq)
        self.rope_cos = angles.cos().to(device, self.dtype)  # [max_model_len, hd / 2]
        self.rope_sin = angles.sin().to(device, self.dtype)

    def prepare_attention(self, capture=None) -> None:
        """Compile before the first step: with ``capture`` (CUDA graphs), capture
        every bucket (``enable_graphs``), then warm up the multi-query width of draft
        verification, which runs eagerly; without, warm up every bucket and width
        (``warm_up``). A backend without static shapes (``gather``) needs neither."""
        if capture is not None:
            self.enable_graphs(capture)
        if self.attention.graphable and (self.graphs is None or self.decode_threshold > 1):
            self.warm_up(multi_query_only=self.graphs is not None)

    def enable_graphs(self, capture) -> None:
        """Replay pure-decode steps through ``cuda_step.DecodeGraphs`` with
        ``capture`` (``cuda_step.cuda_graph_capture`` on CUDA), capturing every bucket
        now. ``ConfigError`` if the attention backend has no static shapes."""
        if not self.attention.graphable:
            raise ConfigError(f"CUDA graphs need attention {' or '.join(GRAPH_BACKENDS)}; "
                              f"this model's is {self.attention.name}")
        self.graphs = DecodeGraphs(self, capture)
        self.graphs.capture_all()
        if capture is eager_capture or getattr(capture, "replays_eagerly", False):
            self._add_to_device("graphs replayed eagerly")

    def _add_to_device(self, setting: str) -> None:
        """Append ``setting`` to the parenthesised settings of ``self.device``."""
        self.device = (f"{self.device[:-1]}; {setting})" if self.device.endswith(")")
                       else f"{self.device} ({setting})")

    def warm_up(self, multi_query_only: bool = False) -> None:
        """Run every bucket's decode attention once on all-pad batches, with one query
        per row and, with drafts, ``decode_threshold`` (the flex backend compiles once
        per bucket and query width), so no measured step compiles. With
        ``multi_query_only`` (CUDA graphs captured the one-query width; steps with
        drafts to verify run eagerly), only the ``decode_threshold`` width."""
        torch = self.torch
        p = self.preset
        widths = (1,) if self.decode_threshold == 1 else (1, self.decode_threshold)
        if multi_query_only:
            widths = tuple(w for w in widths if w > 1)
        with torch.inference_mode():
            for bucket, nq in ((b, w) for b in self.attention.buckets for w in widths):
                rows = DecodeRows(np.zeros((0, 1), np.int32), np.zeros(0, np.int64),
                                  self.block_size, self.pad_block, bucket,
                                  max_query_len=nq)
                plan = self.attention.plan(rows, self._to_device)
                q = torch.zeros(bucket, p.num_heads, p.head_dim, device=self.torch_device,
                                dtype=self.dtype)
                self.attention(q, self.kv_cache[0, 0], self.kv_cache[0, 1], plan)

    def check_attention(self, scheduler: SchedulerConfig, num_rows: int = 3) -> float:
        """Start-up check of an in-place backend against ``gather`` on random K/V:
        ``num_rows`` decode rows (1 token, one block + 1, three blocks, capped by
        ``max_model_len``) in the first blocks of layer 0's cache, which are zeroed
        again after; with drafts also as multi-query rows (``min(decode_threshold,
        seq_len)`` queries each). Returns the largest absolute difference; raises ``ConfigError``
        (one line, naming ``--attention gather``) above 1e-4 in float32 or 3e-2 in
        bf16, so a kernel that reads the cache wrongly fails before the first step."""
        torch = self.torch
        p = self.preset
        bs = self.block_size
        num_rows = min(num_rows, self.attention.buckets[-1])
        lens = np.minimum([1, bs + 1, 3 * bs], scheduler.max_model_len)[:num_rows]
        width = -(-int(lens.max()) // bs)
        if len(lens) * width > scheduler.num_blocks:
            return 0.0  # too few blocks to check (tiny test caches)
        table = np.arange(len(lens) * width, dtype=np.int32).reshape(len(lens), width)
        gen = torch.Generator(device=self.torch_device).manual_seed(0)
        k_cache, v_cache = self.kv_cache[0, 0], self.kv_cache[0, 1]
        used = len(lens) * width
        shape = (used, bs, p.num_kv_heads, p.head_dim)
        with torch.inference_mode():
            k_cache[:used] = torch.randn(shape, generator=gen, device=self.torch_device)
            v_cache[:used] = torch.randn(shape, generator=gen, device=self.torch_device)
            gather = GatherAttention(torch, bs)
            bucket = self.attention.bucket(len(lens))
            err = 0.0
            for nq in sorted({1, self.decode_threshold}):
                qlens = np.minimum(nq, lens)
                q = torch.randn(int(qlens.sum()), p.num_heads, p.head_dim, generator=gen,
                                device=self.torch_device).to(self.dtype)
                want = gather(q, k_cache, v_cache, gather.plan(DecodeRows(
                    table, lens, bs, self.pad_block, len(lens), qlens, nq), self._to_device))
                plan = self.attention.plan(DecodeRows(table, lens, bs, self.pad_block, bucket,
                                                      qlens, nq), self._to_device)
                got = self._decode_attention(q, k_cache, v_cache, bucket - len(lens), plan)
                err = max(err, float((got.float() - want.float()).abs().max()))
            k_cache[:used] = 0
            v_cache[:used] = 0
        tolerance = 1e-4 if self.dtype == torch.float32 else 3e-2
        if not err <= tolerance:
            raise ConfigError(f"attention {self.attention.name} differs from gather by "
                              f"{err:.3g} (> {tolerance:g}) on {self.torch_device.type} at "
                              "start-up: use --attention gather")
        return err

    def _stage(self, *arrays: dict) -> None:
        """The host half of ``_to_device`` for each ``{name: array}`` of ``arrays``:
        on CUDA the copy into the pinned buffer ``name`` (``PinnedStaging.stage``), on
        CPU the tensor over the array. A step stages its inputs before its first
        timing event, so that only device copies follow it."""
        for named in arrays:
            for name, array in named.items():
                if self.staging is not None:
                    self.staging.stage(name, array)
                    self._staged[name] = (array, None)
                else:
                    self._staged[name] = (array, self.torch.from_numpy(
                        np.ascontiguousarray(array)))

    def _to_device(self, name: str, array: np.ndarray):
        """``array`` on the model's device: on CUDA through the pinned buffer ``name``
        (once per step per name), on CPU the array itself as a tensor (no copy). If
        this very ``array`` was staged under ``name`` (``_stage``), only the device
        copy is left to issue; otherwise it is staged here first."""
        staged = self._staged.pop(name, None)
        if staged is not None and staged[0] is array:
            return staged[1] if self.staging is None else self.staging.put(name)
        if self.staging is not None:
            return self.staging.put(name, array)
        return self.torch.from_numpy(np.ascontiguousarray(array))

    # ---------------------------------------------------------------- pieces
    def _rms_norm(self, x, weight):
        xf = x.float()
        xf = xf * self.torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.rms_eps)
        return xf.to(x.dtype) * weight

    def _rope(self, x, cos, sin):
        """Rotary embedding (rotate-half form), ``x``: ``[T, heads, hd]``; ``cos``/``sin``:
        ``[T, 1, hd / 2]``."""
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        return self.torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    def _qkv(self, layer, x, cos, sin):
        p = self.preset
        h, k, hd = p.num_heads, p.num_kv_heads, p.head_dim
        qkv = self._rms_norm(x, layer["attn_norm"]) @ layer["wqkv"]
        t = x.shape[0]
        q = self._rope(qkv[:, :h * hd].view(t, h, hd), cos, sin)
        key = self._rope(qkv[:, h * hd:(h + k) * hd].view(t, k, hd), cos, sin)
        value = qkv[:, (h + k) * hd:].reshape(t, k, hd)
        return q, key, value

    def _mlp(self, layer, x):
        gate, up = (self._rms_norm(x, layer["mlp_norm"]) @ layer["w_gate_up"]).chunk(2, dim=-1)
        return (self.torch.nn.functional.silu(gate) * up) @ layer["w_down"]

    # ---------------------------------------------------------------- forward
    def forward_logits(self, input_ids: np.ndarray, positions: np.ndarray,
                       query_start_loc: np.ndarray, seq_lens: np.ndarray,
                       block_table: np.ndarray, fill=None,
                       logits_indices: Optional[np.ndarray] = None):
        """Logits at each request's last scheduled token, float32 ``[num_reqs, vocab]``
        (with ``logits_indices``, int ``[num_samples]`` indices into the flat scheduled
        tokens: at those tokens, ``[num_samples, vocab]``, vLLM's ``logits_indices``
        of a speculative-decoding step).

        ``input_ids``, ``positions``: ``[num_tokens]`` (flat scheduled tokens, request by
        request); ``query_start_loc``: ``[num_reqs + 1]`` offsets of each request's tokens;
        ``seq_lens``: ``[num_reqs]`` tokens in the cache after this step (computed +
        scheduled); ``block_table``: ``[num_reqs, >= max blocks]`` KV block ids per row.
        Writes this step's K and V into the paged cache. Decode rows attend through
        ``self.attention`` (padded to its bucket), prefill chunks through the gathered
        copy (``paged_attention``). ``fill(ids_t)``, if given, overwrites input ids on the
        device after they were staged (the device-input path,
        ``cuda_step.DeviceSampledIds.fill``); the device ids fed are left in
        ``self.last_fed`` (``[num_tokens]``).
        """
        torch = self.torch
        n = len(seq_lens)
        if n == 0:
            self.last_fed = torch.empty(0, dtype=torch.int64, device=self.torch_device)
            return torch.empty(0, self.vocab_size, device=self.torch_device)
        with torch.inference_mode():
            ids = {"input_ids": np.asarray(input_ids, dtype=np.int64)}
            arrays, layout = self._plan_host(positions, query_start_loc, seq_lens,
                                             block_table, logits_indices)
            self._stage(ids, arrays, layout[1], getattr(fill, "inputs", None) or {})
            if self.timer is not None:  # CUDA: only device work follows
                self.timer.begin()
            ids_t = self._to_device("input_ids", ids["input_ids"])
            if fill is not None:
                fill(ids_t)
            self.last_fed = ids_t
            return self._forward(ids_t, *self._plan_device(arrays, layout))

    def _step_plan(self, positions: np.ndarray, query_start_loc: np.ndarray,
                   seq_lens: np.ndarray, block_table: np.ndarray,
                   logits_indices: Optional[np.ndarray] = None) -> tuple:
        """``(pos_t, slots_t, decode, prefills, last)`` of a step (``_forward``'s
        arguments after the ids), on the device; arrays as ``forward_logits``'. Rows of
        at most ``decode_threshold`` query tokens (decode rows, and decode rows with
        draft tokens to verify) go through one batched call of ``self.attention`` per
        layer (``Q = decode_threshold`` queries per row when any has more than one,
        ``DecodeRows``); longer rows (prefill chunks) through the gathered causal path
        one by one. K/V are written at every scheduled position first. The host half
        (``_plan_host``) then the device half (``_plan_device``)."""
        return self._plan_device(*self._plan_host(positions, query_start_loc, seq_lens,
                                                  block_table, logits_indices))

    def _plan_host(self, positions: np.ndarray, query_start_loc: np.ndarray,
                   seq_lens: np.ndarray, block_table: np.ndarray,
                   logits_indices: Optional[np.ndarray] = None) -> tuple[dict, tuple]:
        """The host half of ``_step_plan`` (numpy only): ``(arrays, layout)``, the
        step's input arrays by staging name and ``layout = (rows, attention_arrays,
        prefills)``: the batched rows' ``DecodeRows`` (``None`` without), the
        attention backend's arrays for them (``host_inputs``) and ``(start, end,
        ctx)`` per prefill chunk."""
        n = len(seq_lens)
        qsl = np.asarray(query_start_loc, dtype=np.int64)
        num_sched = np.diff(qsl)
        seq_lens = np.asarray(seq_lens, dtype=np.int64)
        positions = np.asarray(positions, dtype=np.int64)
        req_idx = np.repeat(np.arange(n), num_sched)
        bs = self.block_size
        slots = (block_table[req_idx, positions // bs].astype(np.int64) * bs
                 + positions % bs)  # [num_tokens] flat slot of each token's K/V
        arrays = {"positions": positions, "slots": slots}
        batched = (num_sched >= 1) & (num_sched <= self.decode_threshold)
        dec = np.flatnonzero(batched)
        nq = 1 if len(dec) == 0 or int(num_sched[dec].max()) == 1 else self.decode_threshold
        rows, attention_arrays = None, {}
        if len(dec):
            rows = DecodeRows(block_table[dec], seq_lens[dec], bs, self.pad_block,
                              self.attention.bucket(len(dec)), num_sched[dec], nq)
            if len(dec) != n:  # the batched rows' tokens in the flat scheduled tokens
                arrays["decode_rows"] = (np.repeat(qsl[dec] - rows.query_start[:len(dec)],
                                                   num_sched[dec])
                                         + np.arange(int(rows.query_start[len(dec)])))
            attention_arrays = self.attention.host_inputs(rows)
        prefills = []
        for j, r in enumerate(np.flatnonzero(num_sched > self.decode_threshold)):
            start, end, ctx = int(qsl[r]), int(qsl[r + 1]), int(seq_lens[r])
            arrays[f"prefill_block_table/{j}"] = block_table[r, :-(-ctx // bs)].astype(np.int64)
            arrays[f"prefill_mask/{j}"] = (np.arange(ctx)[None, :]
                                           <= np.arange(ctx - (end - start), ctx)[:, None])
            prefills.append((start, end, ctx))
        if logits_indices is not None:
            arrays["logits_indices"] = np.asarray(logits_indices, dtype=np.int64)
        elif not (len(dec) == n and nq == 1):
            arrays["last_tokens"] = qsl[1:] - 1
        return arrays, (rows, attention_arrays, prefills)

    def _plan_device(self, arrays: dict, layout: tuple) -> tuple:
        """The device half of ``_step_plan`` over ``_plan_host``'s result: each array
        to the device (only the copy where it was staged, ``_stage``) and the
        attention backend's plan; ``(pos_t, slots_t, decode, prefills, last)``."""
        put = self._to_device
        rows, attention_arrays, spans = layout
        pos_t = put("positions", arrays["positions"])
        slots_t = put("slots", arrays["slots"])
        decode = None
        if rows is not None:
            rows_t = put("decode_rows", arrays["decode_rows"]) if "decode_rows" in arrays else None
            decode = (rows_t, rows.bucket - rows.num_rows,
                      self.attention.plan(rows, put, attention_arrays))
        prefills = []
        for j, (start, end, ctx) in enumerate(spans):
            name_bt, name_mask = f"prefill_block_table/{j}", f"prefill_mask/{j}"
            prefills.append((start, end, ctx, put(name_bt, arrays[name_bt]),
                             put(name_mask, arrays[name_mask])))
        name = next((k for k in ("logits_indices", "last_tokens") if k in arrays), None)
        last = None if name is None else put(name, arrays[name])
        return pos_t, slots_t, decode, prefills, last

    def _forward(self, ids_t, pos_t, slots_t, decode, prefills, last):
        """The step's device work over tensors only (what a CUDA graph captures for
        pure-decode steps). ``decode``: ``None`` or ``(rows_t, num_pad, plan)``:
        the batched rows' token indices (``None`` when every row is one), the pad rows
        their attention appends (one query token each; bucket minus rows) and the
        backend's plan; ``prefills``:
        ``(start, end, ctx, block_ids, causal mask)`` per prefill chunk; ``last``: each
        request's last token index, ``None`` when every token is one. Returns float32
        logits ``[num_tokens or len(last), vocab]``."""
        x = self._layers(self.embed[ids_t], pos_t, slots_t, decode, prefills, 0,
                         len(self.layers))
        return self._head(x, last)

    def _head(self, x, last):
        """Final norm and LM head at each request's last token (``last``: their indices,
        ``None`` when every token is one): float32 logits."""
        if last is not None:
            x = x[last]
        return (self._rms_norm(x, self.final_norm) @ self.lm_head).float()

    def _layers(self, x, pos_t, slots_t, decode, prefills, lo: int, hi: int):
        """Decoder layers ``lo .. hi - 1`` over hidden states ``x`` ``[num_tokens,
        hidden]`` (a pipeline stage runs its share: ``forward_stage``)."""
        torch = self.torch
        p = self.preset
        h, kh, hd = p.num_heads, p.num_kv_heads, p.head_dim
        num_tokens = x.shape[0]
        cos = self.rope_cos[pos_t].unsqueeze(1)
        sin = self.rope_sin[pos_t].unsqueeze(1)
        for li in range(lo, hi):
            layer = self.layers[li]
            q, key, value = self._qkv(layer, x, cos, sin)
            k_cache = self.kv_cache[li, 0]  # [num_blocks + 1, block_size, K, hd]
            v_cache = self.kv_cache[li, 1]
            k_cache.view(-1, kh, hd).index_copy_(0, slots_t, key)
            v_cache.view(-1, kh, hd).index_copy_(0, slots_t, value)
            if decode is not None and decode[0] is None:  # every token a decode row
                attn = self._decode_attention(q, k_cache, v_cache, decode[1], decode[2])
            else:
                attn = torch.empty(num_tokens, h * hd, device=self.torch_device,
                                   dtype=self.dtype)
                if decode is not None:
                    rows_t, num_pad, plan = decode
                    od = self._decode_attention(q[rows_t], k_cache, v_cache, num_pad, plan)
                    attn[rows_t] = od
                for start, end, ctx, bt, mask in prefills:
                    kb = k_cache[bt].flatten(0, 1)[:ctx].transpose(0, 1)[None]  # [1, K, ctx, hd]
                    vb = v_cache[bt].flatten(0, 1)[:ctx].transpose(0, 1)[None]
                    qp = q[start:end].transpose(0, 1)[None]  # [1, H, ns, hd]
                    op = torch.nn.functional.scaled_dot_product_attention(
                        qp, kb, vb, attn_mask=mask, enable_gqa=True)
                    attn[start:end] = op[0].transpose(0, 1).reshape(end - start, h * hd)
            x = x + attn @ layer["wo"]
            x = x + self._mlp(layer, x)
        return x

    def forward_stage(self, x: np.ndarray, positions: np.ndarray, query_start_loc: np.ndarray,
                      seq_lens: np.ndarray, block_table: np.ndarray, lo: int, hi: int,
                      head: bool) -> np.ndarray:
        """One pipeline stage's share of a step (``engine.pipeline``, CPU): layers ``lo ..
        hi - 1`` from token ids (``lo == 0``: ``x`` int ``[num_tokens]``) or from the
        previous stage's hidden states (``x`` float32 ``[num_tokens, hidden]``). Returns
        the hidden states after layer ``hi - 1`` (float32 ``[num_tokens, hidden]``) or,
        with ``head``, the greedy ids (int64 ``[num_reqs]``). The same operations as
        ``forward_logits``, split: the ids equal the whole model's on the same batch.
        On CUDA the hidden states come in and go out through page-locked host memory
        (``cuda_step.hidden_to_device`` / ``hidden_to_host``: gloo moves host tensors)."""
        torch = self.torch
        n = len(seq_lens)
        if n == 0:
            return (np.zeros(0, np.int64) if head
                    else np.zeros((0, self.preset.hidden_size), np.float32))
        with torch.inference_mode():
            plan = self._step_plan(positions, query_start_loc, seq_lens, block_table)
            if lo == 0:
                x_t = self.embed[self._to_device("input_ids", np.asarray(x, dtype=np.int64))]
            else:
                x_t = hidden_to_device(torch, x, self.torch_device).to(self.dtype)
            x_t = self._layers(x_t, plan[0], plan[1], plan[2], plan[3], lo, hi)
            if head:
                return self._head(x_t, plan[4]).argmax(dim=-1).cpu().numpy().astype(np.int64)
            return hidden_to_host(torch, x_t)

    def _decode_attention(self, q, k_cache, v_cache, num_pad: int, plan):
        """``q`` ``[T, H, hd]`` (the batched rows' query tokens, row by row: ``T = nd``
        for single-token rows) through the backend, with ``num_pad`` zero query tokens
        appended (the pad rows up to the bucket, which attend to the pad block), cut
        back to ``[T, H * hd]``."""
        nt = q.shape[0]
        if num_pad:
            q = self.torch.cat((q, q.new_zeros(num_pad, *q.shape[1:])))
        return self.attention(q, k_cache, v_cache, plan)[:nt]

    def execute(self, batch: "InputBatch", inputs: "StepInputs") -> np.ndarray:
        """``sample_step`` of the step's scheduled tokens over the batch's block table.
        With the roofline on, the step's counts are recorded first
        (``StepRoofline.record``).

        Speculative decoding (vLLM 7f280d69c ``GPUModelRunner``: one target forward
        over each request's last token and its scheduled drafts, logits at
        ``logits_indices``): a row with drafts is a multi-query row of the batched
        decode attention (``_step_plan``, K/V written at every scheduled position
        first) and the greedy
        ids come back at every ``inputs.sample_positions`` (int64 ``[num_samples]``),
        verified by ``ModelRunner.write_back_spec``."""
        if self.step_roofline is not None:
            self.step_roofline.record(inputs.query_start_loc, inputs.seq_lens,
                                      len(inputs.sample_rows))
        n = len(inputs.req_ids)
        logits_indices = None
        if self.num_spec_tokens:
            self.draft_ns.append(0)  # propose adds this step's drafting time
            if inputs.spec_token_ids is not None:
                rows = inputs.sample_rows
                num_computed = np.asarray(inputs.num_computed, dtype=np.int64)
                logits_indices = (inputs.query_start_loc[rows] + inputs.sample_positions
                                  - num_computed[rows])
        return self.sample_step(inputs.input_ids, inputs.token_positions,
                                inputs.query_start_loc, inputs.seq_lens, batch.block_table[:n],
                                logits_indices)

    def launch(self, batch: "InputBatch", inputs: "StepInputs", fill=None):
        """The device-input path (async scheduling, ``model_runner.ModelRunner`` with
        ``device_inputs``): ``execute`` without waiting for the result. Returns
        ``(sampled_t, fed_t)``: the greedy ids ``[num_reqs]`` and the input ids fed
        ``[num_tokens]``, device tensors whose values may not be computed yet (on
        CUDA). ``fill(ids_t)`` overwrites input ids on the device before the forward.
        ``collect(num_reqs)`` once the step's copy to the host has completed."""
        if self.step_roofline is not None:
            self.step_roofline.record(inputs.query_start_loc, inputs.seq_lens,
                                      len(inputs.sample_rows))
        n = len(inputs.req_ids)
        ids = self._launch_step(inputs.input_ids, inputs.token_positions,
                                inputs.query_start_loc, inputs.seq_lens,
                                batch.block_table[:n], fill)
        if self.timer is not None and n:
            self.timer.end()
        return ids, self.last_fed

    def collect(self, n: int) -> None:
        """The timer's side of a launched step of ``n`` rows, once it has synchronised
        (``StepEventTimer.collect``, or ``skip`` for an empty step)."""
        if self.timer is not None:
            if n:
                self.timer.collect()
            else:
                self.timer.skip()

    def _launch_step(self, input_ids, positions, query_start_loc, seq_lens, block_table,
                     fill=None, logits_indices=None):
        """Greedy ids ``[num_reqs]`` (``[num_samples]`` with ``logits_indices``) as a
        device tensor (not waited for)."""
        n = len(seq_lens)
        self._staged.clear()
        if self.staging is not None:
            self.staging.next_step()
        if (self.graphs is not None and n and int(query_start_loc[-1]) == n
                and logits_indices is None):
            return self.graphs.run(input_ids, positions, seq_lens, block_table, self.timer,
                                   fill)
        return self.forward_logits(input_ids, positions, query_start_loc, seq_lens,
                                   block_table, fill, logits_indices).argmax(dim=-1)

    def sample_step(self, input_ids: np.ndarray, positions: np.ndarray,
                    query_start_loc: np.ndarray, seq_lens: np.ndarray,
                    block_table: np.ndarray,
                    logits_indices: Optional[np.ndarray] = None) -> np.ndarray:
        """Greedy ids ``[num_reqs]`` int64 of one step (arrays as ``forward_logits``;
        with ``logits_indices``, ``[num_samples]``: one per index).
        Pure-decode steps replay the bucket's CUDA graph when graphs are on
        (``cuda_step.DecodeGraphs``). On CUDA the step's GPU work is bracketed by the
        timer's events (recorded before the input copies and after the argmax)."""
        n = len(seq_lens)
        ids = self._launch_step(input_ids, positions, query_start_loc, seq_lens, block_table,
                                logits_indices=logits_indices)
        timer = self.timer
        if timer is None:
            return ids.cpu().numpy().astype(np.int64)
        if n == 0:  # no GPU work: no events recorded
            timer.skip()
            return ids.cpu().numpy().astype(np.int64)
        timer.end()
        out = ids.cpu().numpy().astype(np.int64)  # synchronises
        timer.collect()
        return out

    def step_columns(self) -> dict[str, list[int]]:
        """``gpu_busy_ns`` and ``gpu_idle_ns`` per step on CUDA
        (``cuda_step.StepEventTimer``; absent on CPU, not zero), and with the roofline
        on ``roofline_ns``: each step's roofline time on the figures measured at start-up
        (``roofline.StepRoofline``); with speculative decoding ``draft_ns``: the
        drafter's time in each step (``propose``, inside the runner's write-back phase;
        the verification forward is ``runner_forward_ns``)."""
        columns = self.timer.columns() if self.timer is not None else {}
        if self.step_roofline is not None:
            columns.update(self.step_roofline.columns())
        if self.num_spec_tokens:
            columns["draft_ns"] = list(self.draft_ns)
        return columns

    def propose(self, batch: "InputBatch", rows: np.ndarray, last_positions: np.ndarray,
                first_new: np.ndarray, new_ids: np.ndarray, num_drafts: int,
                acceptance: float) -> np.ndarray:
        """Draft ids for the next step (speculative decoding; vLLM V1 runs its drafter
        in the runner after the rejection sampler, ``GPUModelRunner.
        propose_draft_token_ids`` at 7f280d69c): an "oracle" drafter, the target model
        itself run ahead, whose drafts are then spoiled at a set rate. It models a
        drafter's acceptance, not a drafter's cost: a real one (EAGLE, a small draft
        model, n-gram) costs less per forward than the target.

        Arguments as ``NullModel.propose``. For ``rows[i]``, whose last token (the
        target's bonus token, ``new_ids[i, last_positions[i] - first_new[i]]``) sits at
        ``L = last_positions[i]`` and is not in the KV cache yet, forward ``j`` (``j =
        0 .. num_drafts - 1``) is one pure-decode step of the target over every
        drafting row (the model's decode attention, as a K = 0 step): it feeds the id
        at ``L + j`` (the bonus token, then the target's own greedy id of forward ``j -
        1``) and writes its K/V into the request's own slot there. Those slots lie at
        or past the request's ``num_computed_tokens``: no step reads them before the
        next verification step writes them again (it feeds ``L`` on), so the real KV
        cache keeps its values; the scheduler allocated them
        (``SchedulerConfig.num_lookahead_tokens``, as vLLM does for EAGLE, whose
        drafter writes K/V ahead too). With async scheduling (host path) the scheduler
        allocated from its optimistic ``num_computed_tokens`` (every draft of the step
        before accepted), never below the runner's corrected count ``c``; the step feeds
        positions ``c .. c + s`` (``s`` drafts, ``s + 1`` scheduled), so ``L <= c + s +
        1`` and the last slot written, ``L + num_drafts - 1``, lies below ``c + s + 1 +
        num_lookahead_tokens``, inside the allocation: K lookahead slots suffice there
        too (the scheduler frees no block when it rolls its count back; tested, with
        writes on the last allocated slot, in ``tests/harness/test_torch_async_spec.py``).
        A request preempted while its step is in flight has its blocks freed and
        perhaps given to another request in the next step; the host path runs this
        drafter before that step, whose writes then come after its own.
        Its greedy id is the target's token at ``L + j
        + 1``: draft ``j`` with probability ``acceptance``, else a different id, as a
        splitmix64 hash of the seed, the position, that token and the one before it
        decides (reproducible, the same under both policies and whatever the
        schedule). Later drafts continue the target's own tokens, so they are rejected
        after the first wrong one, as ``NullModel.propose``'s. A draft for a position
        that can never be scheduled (``>= max_model_len - 1``) gets a wrong id without
        a forward. Up to numerics (the verification runs multi-query rows) each
        draft is accepted with probability ``acceptance``.

        Cost: ``num_drafts`` decode forwards per drafting step, timed apart
        (``draft_ns``, inside the runner's write-back phase). Returns int64 ``[n,
        num_drafts]``. Raises ``RuntimeError`` (one line) if a slot to write lies past
        the request's KV blocks (a scheduler without ``num_lookahead_tokens``).
        """
        t0 = time.perf_counter_ns()
        n = len(rows)
        drafts = np.empty((n, num_drafts), dtype=np.int64)
        tokens = new_ids[np.arange(n), last_positions - first_new].astype(np.int64)
        pos = np.asarray(last_positions, dtype=np.int64).copy()
        rows = np.asarray(rows, dtype=np.int64)
        table = batch.block_table[rows]
        held = batch.num_blocks_per_row[rows].astype(np.int64)
        for j in range(num_drafts):
            schedulable = pos + 1 < self.max_model_len - 1  # the draft's position
            true = tokens.copy()  # stands in where no forward runs (never scheduled)
            active = np.flatnonzero(schedulable)
            if len(active):
                true[active] = self._draft_forward(tokens[active], pos[active],
                                                   table[active], held[active], rows[active],
                                                   num_drafts)
            drafts[:, j] = self._spoil(tokens, true, pos + 1, schedulable, acceptance)
            tokens = true
            pos += 1
        if self.draft_ns:
            self.draft_ns[-1] += time.perf_counter_ns() - t0
        return drafts

    def _draft_forward(self, tokens: np.ndarray, positions: np.ndarray,
                       block_table: np.ndarray, num_blocks: np.ndarray, rows: np.ndarray,
                       num_drafts: int) -> np.ndarray:
        """One pure-decode forward of the drafter (``propose``): ``tokens`` (int64
        ``[m]``) fed at ``positions`` (``[m]``), K/V written there through
        ``block_table`` (``[m, >= blocks]``, each row holding ``num_blocks[i]``
        blocks). Returns the greedy ids ``[m]`` int64. No step timer, no CUDA graph.
        ``RuntimeError`` if a position lies past its row's blocks (``rows``: batch rows,
        for the message)."""
        bs = self.block_size
        short = np.flatnonzero(positions // bs >= num_blocks)
        if len(short):
            r = int(short[0])
            raise RuntimeError(
                f"the drafter's slot at position {int(positions[r])} of batch row "
                f"{int(rows[r])} lies past its {int(num_blocks[r])} KV blocks (block_size "
                f"{bs}): the scheduler must allocate num_lookahead_tokens {num_drafts}")
        with self.torch.inference_mode():
            plan = self._step_plan(positions, np.arange(len(tokens) + 1, dtype=np.int64),
                                   positions + 1, block_table)
            ids_t = self._to_device("draft_ids", tokens)
            return self._forward(ids_t, *plan).argmax(dim=-1).cpu().numpy().astype(np.int64)

    def _spoil(self, before: np.ndarray, true: np.ndarray, positions: np.ndarray,
               schedulable: np.ndarray, acceptance: float) -> np.ndarray:
        """Drafts for ``positions`` (int64 ``[m]``): the target's id ``true[i]`` with
        probability ``acceptance``, else a different id in ``[0, vocab_size)``, as a
        splitmix64 hash of the seed, the position, ``before[i]`` (the id at the position
        before) and ``true[i]`` decides; a row not ``schedulable`` always gets the
        different id. Returns int64 ``[m]``."""
        h = positions.astype(np.uint64) * _M1 + self._seed
        h ^= before.astype(np.uint64)
        _mix(h)
        h ^= true.astype(np.uint64)
        _mix(h)
        u = h ^ _ACCEPT_SALT
        _mix(u)
        threshold = np.uint64(min(int(round(acceptance * 2**53)), 2**53))
        accept = ((u >> _S11) < threshold) & schedulable
        alt = h ^ _WRONG_SALT
        _mix(alt)
        vocab = np.uint64(self.vocab_size)
        wrong = (true.astype(np.uint64) + np.uint64(1) + alt % (vocab - np.uint64(1))) % vocab
        return np.where(accept, true, wrong.astype(np.int64))

    def reference_logits(self, token_ids: Sequence[int]):
        """Test oracle: logits ``[len(token_ids), vocab]`` (float32) of one sequence from a
        plain full-sequence causal forward, without the KV cache or ``scaled_dot_product_attention``."""
        torch = self.torch
        p = self.preset
        h, k, hd = p.num_heads, p.num_kv_heads, p.head_dim
        dev = self.torch_device
        with torch.inference_mode():
            ids = torch.as_tensor(list(token_ids), dtype=torch.long, device=dev)
            t = len(ids)
            pos = torch.arange(t, device=dev)
            cos = self.rope_cos[pos].unsqueeze(1)
            sin = self.rope_sin[pos].unsqueeze(1)
            causal = torch.ones(t, t, dtype=torch.bool, device=dev).tril()
            x = self.embed[ids]
            for layer in self.layers:
                q, key, value = self._qkv(layer, x, cos, sin)
                key = key.repeat_interleave(h // k, dim=1)  # [T, H, hd]
                value = value.repeat_interleave(h // k, dim=1)
                scores = torch.einsum("qhd,khd->hqk", q.float(), key.float()) * hd ** -0.5
                probs = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)
                out = torch.einsum("hqk,khd->qhd", probs, value.float()).to(self.dtype)
                x = x + out.reshape(t, h * hd) @ layer["wo"]
                x = x + self._mlp(layer, x)
            return (self._rms_norm(x, self.final_norm) @ self.lm_head).float()


def make_model(config: ModelConfig, scheduler: Optional[SchedulerConfig] = None):
    """The model named by ``config.name`` (the torch and emulated models size their KV
    cache from ``scheduler``); ``ValueError`` if unknown, ``ConfigError`` if it cannot
    be built."""
    if config.name == "null":
        return NullModel(config)
    if config.name == "fixed-step":
        return FixedStepModel(config)
    if config.name in ("torch", "emulated"):
        if scheduler is None:
            raise ValueError(f"the {config.name} model needs the scheduler config "
                             "(num_blocks, block_size)")
        return (TorchModel if config.name == "torch" else EmulatedModel)(config, scheduler)
    raise ValueError(f"unknown model {config.name!r}")
