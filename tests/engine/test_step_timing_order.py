"""What the torch model's step timer brackets, on CPU with a recording timer and a
recording staging (``cuda_step.PinnedStaging`` unpinned): every host-only part of a
step (the numpy planning, the writes into the staging buffers) comes before the step's
``begin`` event, and only device work (the copies from the staging buffers, the
kernels, the graph replay) between ``begin`` and ``end``. On CUDA an event recorded on
an idle stream completes at once, so host work after ``begin`` would count as GPU busy
and not as host time. Eager decode, a mixed prefill + decode step, the device-input
path's ``fill`` and the decode graphs (``DecodeGraphs``, replayed eagerly here); the
tokens equal those of the same model without the timer and the staging.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ipc_bench.engine import paged_attention  # noqa: E402
from ipc_bench.engine.config import ModelConfig, SchedulerConfig  # noqa: E402
from ipc_bench.engine.cuda_step import (DecodeGraphs, DeviceSampledIds,  # noqa: E402
                                        PinnedStaging, eager_capture)
from ipc_bench.engine.models import TorchModel  # noqa: E402
from ipc_bench.engine.paged_attention import VarlenAttention, decode_buckets  # noqa: E402

SCHED = SchedulerConfig(max_num_seqs=4, max_model_len=128, block_size=4, num_blocks=80)
GATHER = {"decode_block_table", "decode_mask"}
ROWS = {"rows/seq_lens", "rows/num_blocks", "rows/last_block", "rows/last_len",
        "rows/block_ids"}


class RecordingTimer:
    """``StepEventTimer``'s calls, as ``("begin",)`` / ``("end",)`` in ``log``; between
    them, any call into numpy (host work) as ``("numpy", name)``."""

    def __init__(self, log: list):
        self.log = log

    def _profile(self, frame, event, arg):
        if event == "c_call":
            owner = getattr(arg, "__self__", None)
            if (getattr(arg, "__module__", None) or "").startswith("numpy") or isinstance(
                    owner, np.ndarray):
                self.log.append(("numpy", arg.__name__))
        elif event == "call" and "/numpy/" in frame.f_code.co_filename:
            self.log.append(("numpy", frame.f_code.co_name))

    def begin(self) -> None:
        self.log.append(("begin",))
        sys.setprofile(self._profile)

    def end(self) -> None:
        sys.setprofile(None)
        self.log.append(("end",))

    def collect(self) -> None:
        pass

    def skip(self) -> None:
        pass

    def columns(self) -> dict:
        return {}


class RecordingStaging(PinnedStaging):
    """Unpinned staging on CPU that logs each host-buffer write (``("stage", name)``)
    and each device copy (``("copy", name)``)."""

    def __init__(self, log: list):
        super().__init__(torch, torch.device("cpu"), pin=False)
        self.log = log

    def stage(self, name: str, array: np.ndarray) -> None:
        self.log.append(("stage", name))
        super().stage(name, array)

    def put(self, name: str, array=None):
        if array is not None:
            self.stage(name, array)
        self.log.append(("copy", name))
        return super().put(name)


@pytest.fixture
def log(monkeypatch) -> list:
    """The recording log, with the host planning functions logged as ``("plan",
    name)``."""
    entries: list = []

    def logged(owner, name: str) -> None:
        real = getattr(owner, name)

        def call(*args, **kwargs):
            entries.append(("plan", f"{owner.__name__}.{name}"))
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, call)

    logged(paged_attention.DecodeRows, "__init__")
    logged(TorchModel, "_plan_host")
    logged(DecodeGraphs, "_inputs")
    logged(DeviceSampledIds, "fill_inputs")
    for backend in (paged_attention.GatherAttention, VarlenAttention):
        logged(backend, "host_inputs")
    yield entries
    sys.setprofile(None)


def _model(varlen: bool = False) -> TorchModel:
    model = TorchModel(ModelConfig(name="torch", preset="tiny", vocab_size=5000, seed=3,
                                   device="cpu"), SCHED)
    if varlen:  # no CPU kernel: its documented semantics (graphable: static shapes)
        from tests.engine.test_paged_attention import reference_varlen_attn

        model.attention = VarlenAttention(torch, "cpu", 4, SCHED.max_blocks_per_req,
                                          decode_buckets(4), 128,
                                          varlen_attn=reference_varlen_attn)
    return model


def _instrument(model: TorchModel, log: list) -> TorchModel:
    model.timer = RecordingTimer(log)
    model.staging = RecordingStaging(log)
    return model


def _split(log: list) -> tuple[list, list]:
    """One step's log: ``(before begin, between begin and end)``; checks that nothing
    follows ``end`` and that no copy precedes ``begin``."""
    i, j = log.index(("begin",)), log.index(("end",))
    assert j == len(log) - 1 and log.count(("begin",)) == 1, log[j:]
    before, during = log[:i], log[i + 1:j]
    assert [e for e in before if e[0] not in ("plan", "stage")] == []
    return before, during


def _check_step(log: list, staged: set, plans: set) -> None:
    """Before ``begin``: the host planning ``plans`` and the staging of exactly
    ``staged``; after: each of them copied once, nothing else."""
    before, during = _split(log)
    assert [e for e in during if e[0] != "copy"] == []  # no host work, no late staging
    assert sorted(e[1] for e in during) == sorted(e[1] for e in before if e[0] == "stage")
    assert {e[1] for e in before if e[0] == "stage"} == staged
    assert {e[1] for e in before if e[0] == "plan"} == plans
    log.clear()


# (input ids, positions, query_start_loc, seq_lens) of four requests over TABLE
TABLE = np.random.default_rng(0).permutation(80).astype(np.int32)[:32].reshape(4, 8)
PREFILL = (np.arange(21) % 97 + 5, np.concatenate([np.arange(n) for n in (6, 5, 7, 3)]),
           np.array([0, 6, 11, 18, 21]), np.array([6, 5, 7, 3]))
MIXED = (np.array([11, 12, 13, 14, 15, 16, 17]), np.array([6, 5, 7, 8, 9, 10, 3]),
         np.array([0, 1, 2, 6, 7]), np.array([7, 6, 11, 4]))
DECODE = (np.array([21, 22, 23, 24]), np.array([7, 6, 11, 4]), np.arange(5),
          np.array([8, 7, 12, 5]))
DECODE2 = (np.array([31, 32, 33, 34]), np.array([8, 7, 12, 5]), np.arange(5),
           np.array([9, 8, 13, 6]))
HOST_PLAN = {"TorchModel._plan_host", "DecodeRows.__init__", "GatherAttention.host_inputs"}


def _sample(model: TorchModel, step) -> list[int]:
    ids, pos, qsl, lens = step
    return model.sample_step(ids, pos, qsl, lens, TABLE).tolist()


def _same(model: TorchModel, ref: TorchModel, step, log: list) -> bool:
    """Whether ``model`` samples ``ref``'s ids; ``log`` then holds ``model``'s step."""
    want = _sample(ref, step)
    log.clear()
    return _sample(model, step) == want


def test_eager_steps_plan_and_stage_on_the_host_before_the_first_event(log):
    model, ref = _instrument(_model(), log), _model()
    assert _same(model, ref, PREFILL, log)
    _check_step(log, {"input_ids", "positions", "slots", "prefill_block_table/0",
                      "prefill_mask/0", "prefill_block_table/1", "prefill_mask/1",
                      "prefill_block_table/2", "prefill_mask/2", "prefill_block_table/3",
                      "prefill_mask/3", "last_tokens"}, {"TorchModel._plan_host"})
    # mixed: three decode rows batched, one 4-token prefill chunk
    assert _same(model, ref, MIXED, log)
    _check_step(log, {"input_ids", "positions", "slots", "decode_rows", "prefill_block_table/0",
                      "prefill_mask/0", "last_tokens"} | GATHER, HOST_PLAN)
    assert _same(model, ref, DECODE, log)
    _check_step(log, {"input_ids", "positions", "slots"} | GATHER, HOST_PLAN)


def _launch_with_fill(model: TorchModel, step, flat_idx, prev_idx, prev) -> list[int]:
    """A step of the device-input path: ``prev`` (step n - 1's sampled ids) fed at
    ``flat_idx`` from ``prev_idx`` on the device."""
    ids, pos, qsl, lens = step
    device_ids = DeviceSampledIds(torch, torch.device("cpu"))
    device_ids.start_copy(torch.tensor(prev), torch.tensor([0]))
    fill = device_ids.filler(flat_idx, prev_idx, model._to_device)
    out = model._launch_step(ids, pos, qsl, lens, TABLE, fill)
    if model.timer is not None:
        model.timer.end()
    assert device_ids.num_filled == len(flat_idx)
    return out.tolist()


def _filled_reference(ref, step, flat, src, prev):
    """``(input ids, sampled ids)`` of ``step`` on the plain model ``ref`` with the ids
    the device-input fill writes (``prev[src]`` at rows ``flat``) in place."""
    want_ids = step[0].copy()
    want_ids[flat] = np.array(prev)[src]
    return want_ids, _sample(ref, (want_ids,) + step[1:])


def test_the_device_input_fill_stages_its_indices_before_the_first_event(log):
    model, ref = _instrument(_model(), log), _model()
    for m in (model, ref):
        _sample(m, PREFILL)
        _sample(m, MIXED)
    log.clear()
    flat, src, prev = np.array([2, 0]), np.array([0, 3]), [91, 92, 93, 94]
    want_ids, want = _filled_reference(ref, DECODE, flat, src, prev)
    log.clear()
    assert _launch_with_fill(model, DECODE, flat, src, prev) == want
    _check_step(log, {"input_ids", "positions", "slots", "prev_sampled/src",
                      "prev_sampled/dst"} | GATHER, HOST_PLAN | {"DeviceSampledIds.fill_inputs"})
    assert model.last_fed.tolist() == want_ids.tolist()


def test_decode_graphs_plan_and_stage_on_the_host_before_the_first_event(log):
    model, ref = _model(varlen=True), _model(varlen=True)
    model.enable_graphs(eager_capture)
    _instrument(model, log)
    for m in (model, ref):
        _sample(m, PREFILL)
        _sample(m, MIXED)
    log.clear()
    assert _same(model, ref, DECODE, log)
    assert model.graphs.replays == {4: 1}
    graph_plan = {"DecodeGraphs._inputs", "DecodeRows.__init__", "VarlenAttention.host_inputs"}
    _check_step(log, {"graph/input_ids", "graph/positions", "graph/slots"} | ROWS, graph_plan)
    flat, src, prev = np.array([1, 3]), np.array([2, 0]), [81, 82, 83, 84]
    _, want = _filled_reference(ref, DECODE2, flat, src, prev)
    log.clear()
    assert _launch_with_fill(model, DECODE2, flat, src, prev) == want
    assert model.graphs.replays == {4: 2}
    _check_step(log, {"graph/input_ids", "graph/positions", "graph/slots", "prev_sampled/src",
                      "prev_sampled/dst"} | ROWS, graph_plan | {"DeviceSampledIds.fill_inputs"})


def test_the_check_fails_where_host_work_follows_the_first_event(log, monkeypatch):
    """The recording sees host work after ``begin``: a step whose planning is moved
    after the event (as before the split) shows its numpy calls and stagings there."""
    model = _instrument(_model(), log)
    _sample(model, PREFILL)
    log.clear()
    plan_host = TorchModel._plan_host

    def late_plan(self, *args):
        self.timer.begin()  # the event first, then the planning
        self.timer = RecordingTimer([])  # the model's own begin goes elsewhere
        return plan_host(self, *args)

    monkeypatch.setattr(TorchModel, "_plan_host", late_plan)
    ids, pos, qsl, lens = MIXED
    model.forward_logits(ids, pos, qsl, lens, TABLE)
    log.append(("end",))
    sys.setprofile(None)
    _, during = _split(log)
    assert ("plan", "DecodeRows.__init__") in during
    assert ("stage", "input_ids") in during and ("numpy", "repeat") in during
