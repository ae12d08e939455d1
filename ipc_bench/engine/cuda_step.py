"""CUDA helpers of the torch model's step: per-step event timing, pinned host-to-device
staging, and the attention backend. On CPU the torch model uses none of them (its
per-step columns are then absent, not zero); each takes torch (or event objects) as an
argument, so its logic runs on CPU in the tests.

Timing, per step, from two CUDA events on the model's stream (``torch.cuda.Event(
enable_timing=True)``), one recorded before the step's first operation (its
host-to-device input copies) and one after its last (the argmax), read once the step
has synchronised (the sampled ids' copy to the host). The step's host-only work comes
before the first event: its input arrays are computed with numpy (positions, KV
slots, the decode / prefill split, bucket padding, the attention backend's block
tables and masks, the device-input path's index arrays) and copied into the pinned
staging buffers (``PinnedStaging.stage``); after it only device work is enqueued (the
copies from those buffers, the kernels or the graph replay). An event recorded on an
idle stream completes at once, so host work after it would count as GPU busy.

- ``gpu_busy_ns``: from the step's first to its last operation on the GPU. Gaps
  inside the step where the GPU waited for the host to launch the next kernel (Python
  dispatch of the eager forward) count as busy: events bound the step, they do not
  sum kernel times.
- ``gpu_idle_ns``: from the previous step's last operation to this step's first: the
  GPU waiting on the scheduler, the IPC and the runner's input preparation
  (``-1`` for the first step, which has no previous one, and for a step without GPU
  work, whose busy time is 0).

The wall time a step takes minus ``gpu_busy_ns`` is the host's share (the summary's
``host_ns_per_step``, ``ipc_bench.analysis.summary``). It leaves out the dispatch
between an eager forward's kernels, which a launch-bound step spends its time on; the
host's own time to launch a step is read on the CPU clock instead
(``StepEventTimer.ended_at_ns``: from the step's start until its last launch returns).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional

import numpy as np

from ipc_bench.engine.paged_attention import DecodeRows

#: What the torch model sets on CUDA before its first forward, as recorded in the
#: runner's device string: cuDNN's SDPA backend off (flash, memory-efficient and math
#: remain). Two runs of the same steps in different processes gave different tokens
#: with cuDNN SDPA on and equal ones with it off (H200, torch 2.11, 2026-11-30:
#: ../shared/measurements/h200-2026-11-30/README.md).
CUDA_ATTENTION = "SDPA without cuDNN"


def configure_cuda_attention(torch) -> str:
    """Turn cuDNN's scaled-dot-product-attention backend off for this process
    (``torch.backends.cuda.enable_cudnn_sdp(False)``); returns ``CUDA_ATTENTION``.
    Safe to call on a CPU-only build (it sets a flag only)."""
    torch.backends.cuda.enable_cudnn_sdp(False)
    return CUDA_ATTENTION


def ms_to_ns(ms: float) -> int:
    """``Event.elapsed_time`` (float ms) as int ns."""
    return int(round(ms * 1e6))


class StepEventTimer:
    """Per-step GPU busy and idle time from pairs of timing events.

    ``make_event()``: a new event with ``record()`` and ``elapsed_time(other) -> ms``
    (``lambda: torch.cuda.Event(enable_timing=True)`` on CUDA). Per step: ``begin()``
    before the step's first GPU operation, ``end()`` after its last, ``collect()`` once
    the step has synchronised. Three pairs of events rotate, so the previous step's
    end is still there for the idle gap and step n + 1 can be launched (``begin``,
    ``end``) before step n is collected (the device-input path). ``columns()``:
    ``{"gpu_busy_ns": [...], "gpu_idle_ns": [...]}``, one int per collected step (see
    the module docstring).

    ``ended_at_ns``: ``clock()`` (``time.perf_counter_ns``) read as the last ``end()``
    returned, i.e. once the step's last launch (the end event's record, after the
    argmax) was handed to the driver, with no synchronisation; ``None`` before the
    first ``end()``. A caller that read the same clock as the step started has the
    host's launch time of the step: its host preparation and the Python dispatch of
    every launch, which ``gpu_busy_ns`` counts as busy wherever the GPU waited on it
    (``scripts/decode_step_check.py``'s ``host_launch_ns``).
    """

    def __init__(self, make_event: Callable[[], Any],
                 clock: Callable[[], int] = time.perf_counter_ns):
        # Three pairs: with the device-input path (``DeviceSampledIds``) step n + 1 is
        # launched (begin, end) before step n is collected, so two pairs can be
        # outstanding while the previous step's end is kept for the idle gap.
        self._pairs = [(make_event(), make_event()) for _ in range(3)]
        self._launch_i = 0   # the pair of the step being launched
        self._collect_i = 0  # the oldest launched, uncollected step's pair
        self._prev_end = None
        self.gpu_busy_ns: list[int] = []
        self.gpu_idle_ns: list[int] = []
        self.clock = clock
        self.ended_at_ns: Optional[int] = None

    def begin(self) -> None:
        self._pairs[self._launch_i][0].record()

    def end(self) -> None:
        self._pairs[self._launch_i][1].record()
        self._launch_i = (self._launch_i + 1) % 3
        self.ended_at_ns = self.clock()

    def collect(self) -> None:
        start, end = self._pairs[self._collect_i]
        self.gpu_busy_ns.append(ms_to_ns(start.elapsed_time(end)))
        prev = self._prev_end
        self.gpu_idle_ns.append(-1 if prev is None else ms_to_ns(prev.elapsed_time(start)))
        self._prev_end = end
        self._collect_i = (self._collect_i + 1) % 3

    def skip(self) -> None:
        """A step with no GPU work: busy 0, idle -1; the previous end stays the
        reference for the next step's idle gap."""
        self.gpu_busy_ns.append(0)
        self.gpu_idle_ns.append(-1)

    def columns(self) -> dict[str, list[int]]:
        return {"gpu_busy_ns": list(self.gpu_busy_ns), "gpu_idle_ns": list(self.gpu_idle_ns)}


class PinnedStaging:
    """Host inputs to persistent device tensors through persistent host buffers.

    ``put(name, array)``: copies the numpy ``array`` into the host buffer ``name``
    (page-locked when ``pin``), then into the device buffer ``name`` with
    ``non_blocking=True``, and returns the device buffer's first ``array.size``
    elements viewed as ``array.shape``. The two halves apart: ``stage(name, array)``
    (the host copy: host work only), then ``put(name)`` (the device copy). Buffers
    grow (doubling) and are reused; a name may be put once per step: the returned
    tensor stays valid until the next ``put`` of that name. Two sets of host buffers
    alternate step by step (``next_step()``, called by the model before each step's
    first ``stage``): with the
    device-input path step n + 1's inputs are staged while step n's non-blocking
    copies may still be queued, and a set is reused only two steps later, after the
    step that used it was waited for (``DeviceSampledIds``: the runner waits for
    step n - 1's copy event before it launches step n + 1).
    """

    def __init__(self, torch, device, pin: bool = True):
        self.torch = torch
        self.device = device
        self.pin = pin
        self._buffers: dict[tuple[str, int], tuple[Any, Any]] = {}
        self._set = 0
        self._staged: dict[str, tuple[Any, Any, tuple]] = {}  # name -> (host, device, shape)

    def next_step(self) -> None:
        """Switch to the other set of host buffers (once per step); forgets what was
        staged and not put."""
        self._set ^= 1
        self._staged.clear()

    def stage(self, name: str, array: np.ndarray) -> None:
        """Host work only: copy the numpy ``array`` into the host buffer ``name`` of
        this step's set (growing it and its device buffer first if too small: an
        allocation, no copy); ``put(name)`` then issues the device copy. The torch
        model stages a step's inputs before the step's first timing event, so that
        this copy counts as host time, not GPU busy."""
        torch = self.torch
        src = torch.from_numpy(np.ascontiguousarray(array).reshape(-1))
        n = src.numel()
        key = (name, self._set)
        bufs = self._buffers.get(key)
        if bufs is None or bufs[0].numel() < n or bufs[0].dtype != src.dtype:
            cap = max(n, 2 * bufs[0].numel() if bufs is not None else 1)
            bufs = (torch.empty(cap, dtype=src.dtype, pin_memory=self.pin),
                    torch.empty(cap, dtype=src.dtype, device=self.device))
            self._buffers[key] = bufs
        host, dev = bufs
        host[:n].copy_(src)
        self._staged[name] = (host[:n], dev[:n], tuple(array.shape))

    def put(self, name: str, array: Optional[np.ndarray] = None):
        """The device copy of the host buffer ``name`` (``non_blocking=True``), as a
        view of the device buffer shaped as the array. With ``array``: ``stage`` it
        first; without, the array staged under ``name`` this step (``KeyError`` if
        none was, or it was put already)."""
        if array is not None:
            self.stage(name, array)
        host, dev, shape = self._staged.pop(name)
        dev.copy_(host, non_blocking=True)
        return dev.view(shape)


def cuda_graph_capture(torch) -> Callable[[Callable[[], Any]], Callable[[], Any]]:
    """A ``capture(fn)`` for ``DecodeGraphs`` on CUDA: runs ``fn`` twice on a side
    stream (warm-up, as ``torch.cuda.graphs`` requires), captures one call into a
    ``torch.cuda.CUDAGraph`` (all graphs share one memory pool) and returns
    ``replay()``, which replays the graph and returns the tensor ``fn`` returned during
    capture (its contents updated by the replay)."""
    pool: list[Any] = [None]

    def capture(fn: Callable[[], Any]) -> Callable[[], Any]:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=pool[0]):
            out = fn()
        pool[0] = graph.pool()

        def replay():
            graph.replay()
            return out

        return replay

    return capture


def eager_capture(fn: Callable[[], Any]) -> Callable[[], Any]:
    """A ``capture(fn)`` without CUDA: ``replay`` calls ``fn`` again. What a graph
    replays is the same work over the same persistent buffers, so a step that forgot to
    refill a buffer gives the same wrong tokens here as a real graph would (tests)."""
    return fn


class CaptureViolation(RuntimeError):
    """What ``strict_capture`` raises where a real CUDA graph capture (or replay) would
    fail or silently go wrong."""


#: ``torch.Tensor`` methods that wait for the device or read a value on the host (a
#: capture raises ``cudaErrorStreamCaptureUnsupported`` on the sync; printing reads
#: values too), and random draws (a graph replays the captured draw's offsets only
#: through a registered generator; the decode step draws nothing).
_CAPTURE_FORBIDDEN_TENSOR = {
    "item": "reads a value on the host (a sync)",
    "tolist": "reads values on the host (a sync)",
    "cpu": "copies to the host (a sync)",
    "numpy": "reads values on the host (a sync)",
    "__bool__": "branches on a device value (a sync, and a branch frozen at capture)",
    "__int__": "reads a value on the host (a sync)",
    "__float__": "reads a value on the host (a sync)",
    "__index__": "reads a value on the host (a sync)",
    "__repr__": "prints values (a sync)",
    "__str__": "prints values (a sync)",
    "__format__": "prints values (a sync)",
    "nonzero": "has a data-dependent shape (a sync)",
    "masked_select": "has a data-dependent shape (a sync)",
    "unique": "has a data-dependent shape (a sync)",
    "normal_": "draws random numbers",
    "uniform_": "draws random numbers",
    "random_": "draws random numbers",
    "bernoulli_": "draws random numbers",
    "exponential_": "draws random numbers",
}
#: ``torch`` functions forbidden during a capture, as above.
_CAPTURE_FORBIDDEN_TORCH = {
    "nonzero": "has a data-dependent shape (a sync)",
    "masked_select": "has a data-dependent shape (a sync)",
    "unique": "has a data-dependent shape (a sync)",
    "rand": "draws random numbers", "randn": "draws random numbers",
    "randint": "draws random numbers", "randperm": "draws random numbers",
    "rand_like": "draws random numbers", "randn_like": "draws random numbers",
    "normal": "draws random numbers", "bernoulli": "draws random numbers",
    "multinomial": "draws random numbers",
}


def _static_tensors(fn: Callable[..., Any]) -> dict[str, int]:
    """``{path: data_ptr}`` of the tensors a captured ``fn`` reaches through its
    closure: tensors, tuples, lists, dicts, closures of functions, and the attributes of
    ``paged_attention``'s objects and flex attention's ``BlockMask`` (the plan); other
    objects (the model: weights and cache are allocated once) are not walked."""
    out: dict[str, int] = {}
    seen: set[int] = set()

    def walk(value: Any, path: str, depth: int) -> None:
        if depth > 6 or id(value) in seen:
            return
        if hasattr(value, "data_ptr") and hasattr(value, "untyped_storage"):
            out[path] = value.data_ptr()
            return
        seen.add(id(value))
        if isinstance(value, (tuple, list)):
            for i, v in enumerate(value):
                walk(v, f"{path}[{i}]", depth + 1)
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{path}[{k!r}]", depth + 1)
        elif callable(value) and getattr(value, "__closure__", None):
            names = value.__code__.co_freevars
            for name, cell in zip(names, value.__closure__):
                try:
                    walk(cell.cell_contents, f"{path}.<{name}>", depth + 1)
                except ValueError:  # an empty cell
                    pass
        else:
            module = type(value).__module__ or ""
            if (module == __name__.replace("cuda_step", "paged_attention")
                    or module.startswith("torch.nn.attention")) and hasattr(value, "__dict__"):
                for k, v in vars(value).items():
                    walk(v, f"{path}.{k}", depth + 1)

    walk(fn, "fn", 0)
    return out


def strict_capture(torch) -> Callable[[Callable[[], Any]], Callable[[], Any]]:
    """A ``capture(fn)`` for ``DecodeGraphs`` without CUDA that enforces what a CUDA
    graph enforces (tests, and the CPU stand-in of the GPU checks):

    - like ``cuda_graph_capture`` it calls ``fn`` twice to warm up (compiles happen
      there, never inside the capture), then once as the capture, during which a host
      sync (``item``, ``tolist``, ``cpu``, ``numpy``, truth / int / float / index of a
      tensor, printing, ``nonzero`` and other data-dependent shapes,
      ``torch.cuda.synchronize``), a random draw or a call to ``capture`` itself raises
      ``CaptureViolation``;
    - ``replay()`` runs ``fn`` again (the same work over the same persistent buffers, as
      ``eager_capture``) but returns the tensor the capture returned with the new values
      copied in, as a graph's output buffer is overwritten by each replay;
    - the tensors ``fn`` reaches through its closure and the plan (``_static_tensors``)
      must keep their addresses: a graph reads the addresses it captured, so a buffer
      reallocated or rebound after the capture raises ``CaptureViolation`` at the next
      replay.
    """
    active = [False]

    def forbid(owner, name: str, why: str, saved: list) -> None:
        original = getattr(owner, name)
        saved.append((owner, name, original, name in vars(owner)))

        def refuse(*args, **kwargs):
            raise CaptureViolation(f"{getattr(owner, '__name__', owner)}.{name} inside a "
                                   f"CUDA graph capture: it {why}")

        setattr(owner, name, refuse)

    def captured_call(fn: Callable[[], Any]):
        saved: list = []
        try:
            for name, why in _CAPTURE_FORBIDDEN_TENSOR.items():
                forbid(torch.Tensor, name, why, saved)
            for name, why in _CAPTURE_FORBIDDEN_TORCH.items():
                forbid(torch, name, why, saved)
            forbid(torch.cuda, "synchronize", "waits for the device", saved)
            active[0] = True
            return fn()
        finally:
            active[0] = False
            for owner, name, original, own in reversed(saved):
                if own:
                    setattr(owner, name, original)
                else:
                    delattr(owner, name)

    def capture(fn: Callable[[], Any]) -> Callable[[], Any]:
        if active[0]:
            raise CaptureViolation("a capture inside a CUDA graph capture")
        for _ in range(2):
            fn()
        out = captured_call(fn)
        addresses = _static_tensors(fn)
        out_ptr = out.data_ptr()

        def replay():
            now = _static_tensors(fn)
            moved = sorted(k for k in addresses.keys() | now.keys()
                           if addresses.get(k) != now.get(k))
            if moved:
                raise CaptureViolation(
                    "tensors the captured step reads moved or were rebound after the "
                    f"capture (a CUDA graph would read the old addresses): {', '.join(moved)}")
            new = fn()
            if out.data_ptr() != out_ptr or new.shape != out.shape:
                raise CaptureViolation("the captured output changed shape or address")
            out.copy_(new)
            return out

        return replay

    capture.replays_eagerly = True  # type: ignore[attr-defined]
    return capture


class DecodeGraphs:
    """Pure-decode steps of a ``models.TorchModel`` replayed per batch-size bucket.

    ``capture``: ``cuda_graph_capture(torch)`` on CUDA (``eager_capture`` in tests).
    A step of ``n`` decode rows is padded to ``bucket = model.attention.bucket(n)``
    rows: pad rows feed token 0 at position 0 and write their K/V to the model's pad
    block, so no request's blocks or tokens change; their sampled ids are dropped.
    Inputs go into persistent device buffers (``[max_bucket]`` int64 ids, positions
    and slots, plus the attention backend's own buffers) before each replay.
    ``capture_all()`` captures every bucket up front with all-pad batches (an engine
    captures at start-up, so no measured step pays for a capture);
    ``captured`` lists the buckets captured, ``replays`` counts replays per bucket.
    """

    def __init__(self, model, capture: Callable[[Callable[[], Any]], Callable[[], Any]]):
        torch = model.torch
        self.model = model
        self.capture = capture
        self.buckets = model.attention.buckets
        i64 = dict(dtype=torch.int64, device=model.torch_device)
        self.input_ids = torch.zeros(self.buckets[-1], **i64)
        self.positions = torch.zeros(self.buckets[-1], **i64)
        self.slots = torch.zeros(self.buckets[-1], **i64)
        self._replay: dict[int, Callable[[], Any]] = {}
        self.captured: list[int] = []
        self.replays: dict[int, int] = {}

    def _inputs(self, input_ids: np.ndarray, positions: np.ndarray, seq_lens: np.ndarray,
                block_table: np.ndarray, bucket: int) -> tuple[dict, DecodeRows, dict]:
        """Host half of a step (numpy only): the step padded to ``bucket`` rows.
        Returns ``(arrays, rows, attention_arrays)``: the ``[bucket]`` int64 ids,
        positions and slots by staging name, the padded ``DecodeRows`` and the
        attention backend's host arrays (``host_inputs``)."""
        model = self.model
        n, bs, pad = len(seq_lens), model.block_size, model.pad_block
        ids = np.zeros(bucket, np.int64)
        ids[:n] = input_ids
        pos = np.zeros(bucket, np.int64)
        pos[:n] = positions
        slots = np.full(bucket, pad * bs, np.int64)
        slots[:n] = block_table[np.arange(n), pos[:n] // bs].astype(np.int64) * bs + pos[:n] % bs
        rows = DecodeRows(block_table, np.asarray(seq_lens, np.int64), bs, pad, bucket)
        arrays = {"graph/input_ids": ids, "graph/positions": pos, "graph/slots": slots}
        return arrays, rows, model.attention.host_inputs(rows)

    def _fill(self, arrays: dict, rows: DecodeRows, attention_arrays: dict, fill=None):
        """Device half of a step: copy ``_inputs``' arrays into the buffers (through
        the model's staging); the attention plan. ``fill(ids_t)``, if given, then
        overwrites input ids on the device (``DeviceSampledIds.fill``: step n - 1's
        sampled ids)."""
        model = self.model
        bucket, n = rows.bucket, rows.num_rows
        put = model._to_device
        self.input_ids[:bucket].copy_(put("graph/input_ids", arrays["graph/input_ids"]),
                                      non_blocking=True)
        self.positions[:bucket].copy_(put("graph/positions", arrays["graph/positions"]),
                                      non_blocking=True)
        self.slots[:bucket].copy_(put("graph/slots", arrays["graph/slots"]),
                                  non_blocking=True)
        if fill is not None:
            fill(self.input_ids)
        model.last_fed = self.input_ids[:n]
        return model.attention.plan(rows, put, attention_arrays)

    def _replay_for(self, bucket: int, plan) -> Callable[[], Any]:
        replay = self._replay.get(bucket)
        if replay is None:
            model = self.model
            decode = (None, 0, plan)
            ids, pos, slots = (self.input_ids[:bucket], self.positions[:bucket],
                               self.slots[:bucket])
            replay = self.capture(
                lambda: model._forward(ids, pos, slots, decode, [], None).argmax(dim=-1))
            self._replay[bucket] = replay
            self.captured.append(bucket)
        return replay

    def capture_all(self) -> None:
        """Capture every bucket with an all-pad batch (writes only the pad block)."""
        empty = np.zeros((0, 1), np.int32)
        with self.model.torch.inference_mode():
            for bucket in self.buckets:
                plan = self._fill(*self._inputs(empty[:, 0], empty[:, 0], empty[:, 0], empty,
                                                bucket))
                self._replay_for(bucket, plan)

    def run(self, input_ids: np.ndarray, positions: np.ndarray, seq_lens: np.ndarray,
            block_table: np.ndarray, timer=None, fill=None):
        """Greedy ids ``[n]`` (a device tensor) of a pure-decode step of ``n`` rows:
        ``input_ids``, ``positions``, ``seq_lens`` ``[n]``; ``block_table`` ``[n, >=
        max blocks]``. ``timer``: a ``StepEventTimer`` whose ``begin`` is recorded
        after the host half (``_inputs``, the staging of its arrays and of ``fill``'s)
        and before the input copies; ``fill``: as ``_fill``'s. The device ids fed are
        left in ``model.last_fed``."""
        n = len(seq_lens)
        model = self.model
        bucket = model.attention.bucket(n)
        with model.torch.inference_mode():
            arrays, rows, attention_arrays = self._inputs(input_ids, positions, seq_lens,
                                                          block_table, bucket)
            model._stage(arrays, attention_arrays, getattr(fill, "inputs", None) or {})
            if timer is not None:  # only device work follows
                timer.begin()
            plan = self._fill(arrays, rows, attention_arrays, fill)
            out = self._replay_for(bucket, plan)()
            self.replays[bucket] = self.replays.get(bucket, 0) + 1
            return out[:n]


class SampledCopy:
    """One step's sampled ids (and the input ids it fed) on their way to the host.

    ``wait()`` -> ``(sampled, fed)``: int64 numpy ``[num_reqs]`` and ``[num_tokens]``,
    once the copy event has completed (``event.synchronize()`` on CUDA; on CPU the
    copies were synchronous and there is no event). The arrays are the caller's own.
    """

    __slots__ = ("event", "sampled_host", "fed_host")

    def __init__(self, event, sampled_host, fed_host):
        self.event = event
        self.sampled_host = sampled_host
        self.fed_host = fed_host

    def ready(self) -> bool:
        """Whether ``wait`` would return at once."""
        return self.event is None or self.event.query()

    def wait(self) -> tuple[np.ndarray, np.ndarray]:
        if self.event is not None:
            self.event.synchronize()
        return self.sampled_host.numpy().copy(), self.fed_host.numpy().copy()


class PlaceholderFill:
    """The device-input path's ``fill(ids_t)`` of one step: ``device_ids.fill(ids_t,
    flat_idx, prev_idx, put)``. ``inputs``: its host arrays by staging name
    (``DeviceSampledIds.fill_inputs``, computed here, before the step), which the
    model stages with the step's other inputs before its first timing event."""

    def __init__(self, device_ids: "DeviceSampledIds", flat_idx: np.ndarray,
                 prev_idx: np.ndarray, put):
        self.device_ids = device_ids
        self.flat_idx = flat_idx
        self.prev_idx = prev_idx
        self.put = put
        self.inputs = device_ids.fill_inputs(flat_idx, prev_idx)

    def __call__(self, ids_t) -> None:
        self.device_ids.fill(ids_t, self.flat_idx, self.prev_idx, self.put)


class DeviceSampledIds:
    """Step n's sampled ids kept on the device, fed into step n + 1 there, and copied
    to the host without blocking: the runner side of vLLM V1's async scheduling
    (PR #23569 "[Perf][V1] Fully overlap model execution", 2025-09: ``GPUModelRunner.
    _prepare_input_ids`` with ``input_batch.prev_sampled_token_ids`` /
    ``prev_req_id_to_index``, and ``AsyncGPUModelRunnerOutput``, whose sampled ids are
    copied on ``async_output_copy_stream`` and waited for through a CUDA event only when
    the output is read).

    ``start_copy(sampled_t, fed_t)``: after a step's sampler, keeps ``sampled_t`` (int64
    ``[num_reqs]``, a private clone made on the compute stream: a CUDA graph's output
    buffer is overwritten by the next replay) as ``prev``, and copies it and the step's
    device input ids ``fed_t`` (``[num_tokens]``, also cloned) into pinned host buffers
    on a side stream that first waits for the compute stream, then records an event;
    returns the ``SampledCopy``. Two sets of host buffers alternate (a step's copy
    is waited for before the step after next is launched).

    ``fill(ids_t, flat_idx, prev_idx, put)``: in the next step, on the device, input
    position ``flat_idx[i]`` of ``ids_t`` takes ``prev[prev_idx[i]]`` (a plain copy
    when both are ``0..k-1``, as vLLM's fast path, else ``scatter_`` of an
    ``index_select``); the index arrays go through ``put`` (the model's staging).
    ``fill_inputs(flat_idx, prev_idx)`` is its host half, which the model stages
    before the step's first timing event (``PlaceholderFill``).

    On CPU (``torch_device.type != "cuda"``) the same calls run with no side stream
    and no event: the copies are synchronous, so nothing overlaps, but the ids fed and
    returned take the same path (device tensor -> gather/scatter -> host copy).
    """

    def __init__(self, torch, torch_device, pin: Optional[bool] = None):
        self.torch = torch
        self.torch_device = torch_device
        self.cuda = torch_device.type == "cuda"
        self.pin = self.cuda if pin is None else pin
        self.stream = torch.cuda.Stream(torch_device) if self.cuda else None
        self.prev = None  # int64 [num_reqs] on the device: the last launched step's ids
        self._host: list[dict[str, Any]] = [{}, {}]
        self._set = 0
        self.num_filled = 0  # input positions filled on the device so far (tests)
        self._planned: Optional[tuple] = None  # (flat_idx, prev_idx, arrays): fill_inputs

    def _host_buffer(self, name: str, n: int):
        bufs = self._host[self._set]
        buf = bufs.get(name)
        if buf is None or buf.numel() < n:
            buf = self.torch.empty(max(n, 2 * (buf.numel() if buf is not None else 1)),
                                   dtype=self.torch.int64, pin_memory=self.pin)
            bufs[name] = buf
        return buf[:n]

    def fill_inputs(self, flat_idx: np.ndarray, prev_idx: np.ndarray) -> dict:
        """Host half of ``fill`` (numpy only): the index arrays it will ``put``, by
        staging name, ``{}`` where it copies the first rows in order (or has nothing to
        fill). ``fill`` with these same array objects reuses the decision."""
        k = len(flat_idx)
        seq = np.arange(k, dtype=np.int64)
        arrays = ({} if not k or (np.array_equal(flat_idx, seq)
                                  and np.array_equal(prev_idx, seq))
                  else {"prev_sampled/src": prev_idx, "prev_sampled/dst": flat_idx})
        self._planned = (flat_idx, prev_idx, arrays)
        return arrays

    def filler(self, flat_idx: np.ndarray, prev_idx: np.ndarray, put) -> PlaceholderFill:
        """The ``fill(ids_t)`` of the next step, its host half done
        (``PlaceholderFill``)."""
        return PlaceholderFill(self, flat_idx, prev_idx, put)

    def fill(self, ids_t, flat_idx: np.ndarray, prev_idx: np.ndarray, put) -> None:
        k = len(flat_idx)
        if not k:
            return
        if self.prev is None:
            raise RuntimeError("device input ids requested with no previous step's ids")
        planned, self._planned = self._planned, None
        if planned is not None and planned[0] is flat_idx and planned[1] is prev_idx:
            arrays = planned[2]
        else:  # not planned with these arrays (a direct call)
            arrays = self.fill_inputs(flat_idx, prev_idx)
            self._planned = None
        if not arrays:
            ids_t[:k].copy_(self.prev[:k])  # the first k rows, in the same order
        else:
            src = self.prev.index_select(0, put("prev_sampled/src", arrays["prev_sampled/src"]))
            ids_t.scatter_(0, put("prev_sampled/dst", arrays["prev_sampled/dst"]), src)
        self.num_filled += k

    def start_copy(self, sampled_t, fed_t) -> SampledCopy:
        torch = self.torch
        sampled_t = sampled_t.to(torch.int64).clone()
        fed_t = fed_t.to(torch.int64).clone()
        self.prev = sampled_t
        self._set ^= 1
        sampled_host = self._host_buffer("sampled", sampled_t.numel())
        fed_host = self._host_buffer("fed", fed_t.numel())
        if not self.cuda:
            sampled_host.copy_(sampled_t)
            fed_host.copy_(fed_t)
            return SampledCopy(None, sampled_host, fed_host)
        stream = self.stream
        stream.wait_stream(torch.cuda.current_stream(self.torch_device))
        with torch.cuda.stream(stream):
            sampled_t.record_stream(stream)
            fed_t.record_stream(stream)
            sampled_host.copy_(sampled_t, non_blocking=True)
            fed_host.copy_(fed_t, non_blocking=True)
            event = torch.cuda.Event()
            event.record(stream)
        return SampledCopy(event, sampled_host, fed_host)


# ---------------------------------------------------------------- pipeline stages
# gloo moves host tensors only (NCCL would need a GPU per stage, which one GPU cannot
# give), so a ``--pp`` stage on CUDA copies its hidden states to page-locked host memory
# before the send and back to its device after the receive (``engine.pipeline``,
# ``wire.pp``). vLLM's PP over NCCL sends device tensors (``vllm.distributed.
# parallel_state.GroupCoordinator.send_tensor_dict``); this is the host-staged form.


def stage_host_buffer(torch, shape: tuple, dtype, device_type: str) -> np.ndarray:
    """A host array of ``shape`` / numpy ``dtype`` for a receive between stages:
    page-locked (``pin_memory``, torch's caching host allocator) when the stage runs
    on ``device_type`` ``"cuda"``, else a plain ``np.empty``. A fresh one per call (a
    buffer may be read by an ``isend`` or a copy while the next step is received)."""
    if device_type != "cuda":
        return np.empty(shape, dtype)
    return torch.empty(shape, dtype=torch.from_numpy(np.empty(0, dtype)).dtype,
                       pin_memory=True).numpy()


def hidden_to_host(torch, hidden) -> np.ndarray:
    """The float32 ``[num_tokens, hidden_size]`` hidden states ``hidden`` (a tensor on
    the stage's device) as a host array for gloo: on CUDA copied (synchronously, so
    the bytes are there before the send reads them) into a fresh page-locked tensor;
    on CPU the tensor's own memory (no copy)."""
    hidden = hidden.float()
    if hidden.device.type == "cpu":
        return hidden.numpy()
    host = torch.empty(tuple(hidden.shape), dtype=torch.float32, pin_memory=True)
    host.copy_(hidden)
    return host.numpy()  # keeps ``host`` alive


def hidden_to_device(torch, hidden: np.ndarray, device):
    """Hidden states received from the previous stage (a host array, page-locked on
    CUDA: ``stage_host_buffer``) as a tensor on ``device``: on CPU the array's own
    memory, on CUDA one host-to-device copy (blocking: the buffer may go once it
    returns)."""
    t = torch.from_numpy(np.ascontiguousarray(hidden))
    return t if torch.device(device).type == "cpu" else t.to(device)
