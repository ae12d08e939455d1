"""The torch model's CUDA helpers (ipc_bench.engine.cuda_step) on CPU: event arithmetic
with synthetic timestamps, the staging buffers without pinning, the attention switch.
What they do on a GPU (real events, pinned copies, cuDNN SDPA off) needs one."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ipc_bench.engine.cuda_step import (CUDA_ATTENTION, CaptureViolation, PinnedStaging,
                                        StepEventTimer, configure_cuda_attention, ms_to_ns,
                                        strict_capture)


class FakeEvent:
    """An event whose ``record()`` takes the next timestamp (ms) from a shared list,
    as a CUDA event takes the GPU's time when the stream reaches it."""

    def __init__(self, clock: list[float]):
        self.clock = clock
        self.t_ms = None

    def record(self) -> None:
        self.t_ms = self.clock.pop(0)

    def elapsed_time(self, other: "FakeEvent") -> float:
        return other.t_ms - self.t_ms


def test_step_event_timer_gives_busy_and_idle_per_step():
    # step 0 on the GPU from 10.0 to 14.5 ms, step 1 from 15.25 to 19.0, step 2 (no
    # GPU work), step 3 from 30.0 to 30.001
    clock = [10.0, 14.5, 15.25, 19.0, 30.0, 30.001]
    timer = StepEventTimer(lambda: FakeEvent(clock))
    for step in range(4):
        if step == 2:
            timer.skip()
            continue
        timer.begin()
        timer.end()
        timer.collect()
    assert timer.columns() == {"gpu_busy_ns": [4_500_000, 3_750_000, 0, 1_000],
                               "gpu_idle_ns": [-1, 750_000, -1, 11_000_000]}
    assert clock == []
    assert ms_to_ns(0.0000004) == 0 and ms_to_ns(1.5) == 1_500_000


def test_pinned_staging_reuses_and_grows_its_buffers():
    staging = PinnedStaging(torch, "cpu", pin=False)  # pin_memory needs CUDA
    a = staging.put("ids", np.array([5, 6, 7], dtype=np.int64))
    assert a.tolist() == [5, 6, 7]
    ptr = staging._buffers["ids", 0][1].data_ptr()
    b = staging.put("ids", np.array([1, 2], dtype=np.int64))
    assert b.tolist() == [1, 2] and staging._buffers["ids", 0][1].data_ptr() == ptr
    c = staging.put("ids", np.arange(7, dtype=np.int64))  # grows to 7 (2 x 3 < 7)
    assert c.tolist() == list(range(7)) and staging._buffers["ids", 0][0].numel() == 7
    mask = staging.put("mask", np.array([[True, False], [False, True]]))
    assert mask.dtype == torch.bool and mask.shape == (2, 2) and mask.tolist() == [
        [True, False], [False, True]]
    assert staging.put("ids", np.zeros((0,), dtype=np.int64)).numel() == 0


def test_pinned_staging_alternates_two_sets_of_buffers_step_by_step():
    # Step n + 1's inputs are staged while step n's copies may be queued (device-input
    # path): each step writes the other set's host buffer.
    staging = PinnedStaging(torch, "cpu", pin=False)
    a = staging.put("ids", np.array([1, 2], dtype=np.int64))
    staging.next_step()
    b = staging.put("ids", np.array([3, 4], dtype=np.int64))
    assert a.tolist() == [1, 2] and b.tolist() == [3, 4]
    assert staging._buffers["ids", 0][0].data_ptr() != staging._buffers["ids", 1][0].data_ptr()
    staging.next_step()
    assert staging.put("ids", np.array([5], dtype=np.int64)).data_ptr() == a.data_ptr()


def test_step_event_timer_with_the_next_step_launched_before_a_collect():
    # step 0 from 10 to 14 ms; step 1 launched (begun, ended) before step 0 is
    # collected, from 14.5 to 18; step 2 from 18.25 to 20, launched before step 1's
    # collect: each collect reads its own step's pair.
    clock = [10.0, 14.0, 14.5, 18.0, 18.25, 20.0]
    timer = StepEventTimer(lambda: FakeEvent(clock))
    timer.begin()
    timer.end()
    for _ in range(2):
        timer.begin()
        timer.end()
        timer.collect()
    timer.collect()
    assert timer.columns() == {"gpu_busy_ns": [4_000_000, 3_500_000, 1_750_000],
                               "gpu_idle_ns": [-1, 500_000, 250_000]}


def test_cuda_attention_switch_turns_cudnn_sdpa_off():
    before = torch.backends.cuda.cudnn_sdp_enabled()
    try:
        assert configure_cuda_attention(torch) == CUDA_ATTENTION == "SDPA without cuDNN"
        assert torch.backends.cuda.cudnn_sdp_enabled() is False
    finally:
        torch.backends.cuda.enable_cudnn_sdp(before)


@pytest.mark.parametrize("body, what", [
    (lambda x: x * x.sum().item(), r"Tensor\.item inside a CUDA graph capture: it reads"),
    (lambda x: x * float(x.sum()), r"Tensor\.__float__ inside"),
    (lambda x: x if bool(x.sum() > 0) else -x, r"Tensor\.__bool__ inside"),
    (lambda x: x * [0, 1, 2, 3][x.argmin()], r"Tensor\.__index__ inside"),
    (lambda x: x.cpu() + 1, r"Tensor\.cpu inside"),
    (lambda x: torch.tensor(x.tolist()), r"Tensor\.tolist inside"),
    (lambda x: (print(x), x)[1], r"Tensor\.__(repr|str|format)__ inside"),
    (lambda x: x[x.nonzero()], r"Tensor\.nonzero inside"),
    (lambda x: x + torch.randn(x.shape), r"torch\.randn inside a CUDA graph capture: it draws"),
    (lambda x: x.clone().normal_(), r"Tensor\.normal_ inside"),
])
def test_strict_capture_refuses_what_a_cuda_graph_capture_forbids(body, what):
    """The CPU stand-in of a CUDA graph capture: the warm-up calls may sync (as on
    CUDA, they run before the capture), the captured call may not; torch is whole
    again afterwards."""
    x = torch.arange(4.0)
    calls = []

    def fn():
        calls.append(1)
        return body(x)

    with pytest.raises(CaptureViolation, match=what):
        strict_capture(torch)(fn)
    assert len(calls) == 3  # two warm-up calls, then the capture
    assert x.sum().item() == 6.0 and repr(x) and torch.randn(2).shape == (2,)


def test_strict_capture_refuses_a_device_synchronize():
    """``torch.cuda.synchronize`` in the captured call (this machine has no CUDA to
    synchronise in the warm-up calls, so only the capture calls it)."""
    calls = []

    def fn():
        calls.append(1)
        if len(calls) == 3:
            torch.cuda.synchronize()
        return torch.zeros(1)

    with pytest.raises(CaptureViolation, match=r"torch\.cuda\.synchronize inside a CUDA "
                       r"graph capture: it waits for the device"):
        strict_capture(torch)(fn)


def test_strict_capture_replays_into_the_captured_output():
    """A replay overwrites the output the capture returned, as a CUDA graph's output
    buffer: a caller that keeps step n's ids past step n + 1's replay sees them change."""
    buf = torch.zeros(3)
    replay = strict_capture(torch)(lambda: buf * 2)
    buf.copy_(torch.tensor([1.0, 2.0, 3.0]))
    first = replay()
    kept = first
    buf.copy_(torch.tensor([5.0, 6.0, 7.0]))
    second = replay()
    assert second is first and kept.tolist() == [10.0, 12.0, 14.0]


def test_strict_capture_refuses_a_buffer_rebound_after_the_capture():
    """A graph reads the addresses it captured: a plan whose buffer is replaced after
    the capture (instead of refilled in place) would be read stale on CUDA."""
    plan = {"lens": torch.ones(4)}
    replay = strict_capture(torch)(lambda: plan["lens"] + 1)
    plan["lens"].fill_(3)  # refilled in place: fine
    assert replay().tolist() == [4.0] * 4
    plan["lens"] = torch.full((4,), 5.0)  # rebound: a graph would still read the old one
    with pytest.raises(CaptureViolation, match=r"moved or were rebound after the capture.*"
                       r"fn\.<plan>\['lens'\]"):
        replay()


def test_strict_capture_refuses_a_capture_inside_a_capture():
    capture = strict_capture(torch)
    calls = []

    def fn():
        calls.append(1)
        if len(calls) == 3:  # the captured call
            capture(lambda: torch.zeros(1))
        return torch.zeros(1)

    with pytest.raises(CaptureViolation, match="^a capture inside a CUDA graph capture$"):
        capture(fn)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_torch_model_on_cuda_times_its_steps():  # pragma: no cover - GPU only
    from ipc_bench.engine.config import ModelConfig, SchedulerConfig
    from ipc_bench.engine.models import TorchModel

    # flex on CUDA takes KV blocks of a multiple of 16 tokens (flex_unsupported)
    sched = SchedulerConfig(max_num_seqs=4, max_model_len=128, block_size=16, num_blocks=80)
    model = TorchModel(ModelConfig(name="torch", preset="tiny", device="cuda"), sched)
    assert model.device.endswith("; SDPA without cuDNN; attention flex)")
    table = np.arange(32, dtype=np.int32)[None, :]
    for n in (1, 2, 3):
        model.forward_logits(np.array([n], np.int32), np.array([n - 1]), np.array([0, 1]),
                             np.array([n]), table).argmax(dim=-1)
        model.timer.end()
        torch.cuda.synchronize()
        model.timer.collect()
    cols = model.step_columns()
    assert len(cols["gpu_busy_ns"]) == 3 and min(cols["gpu_busy_ns"]) > 0
    assert cols["gpu_idle_ns"][0] == -1 and min(cols["gpu_idle_ns"][1:]) >= 0
