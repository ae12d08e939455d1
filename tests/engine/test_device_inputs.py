"""The device-input path of async scheduling (``ModelRunner(device_inputs=True)``:
``launch`` / ``finish``, ``cuda_step.DeviceSampledIds``), by hand, with the torch model
(tiny preset) on CPU, where the same code runs with synchronous copies and no events.

The runner launches step n + 1 before it finishes step n (as the runner process does
when step n + 1's frame is already queued), so step n + 1's placeholder inputs can only
come from step n's sampled ids on the device. Checked: the token streams equal those
of the same ``AsyncScheduler`` with the host-buffer runner (same schedule, same
batches, so the same floats), the replies' ids equal what the runner's host token
buffer holds, the ids fed (read back from the device) equal the scheduler's, and a
wrong index in the device gather is caught by the input oracle's digest comparison.
"""

from __future__ import annotations

import collections

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from by_hand import admit  # noqa: E402
from ipc_bench.engine.config import ModelConfig, SchedulerConfig  # noqa: E402
from ipc_bench.engine.cuda_step import (DeviceSampledIds, PinnedStaging,  # noqa: E402
                                        SampledCopy, strict_capture)
from ipc_bench.engine.model_runner import ModelRunner  # noqa: E402
from ipc_bench.engine.scheduler import AsyncScheduler, RequestStatus  # noqa: E402
from ipc_bench.engine.traces import Trace  # noqa: E402
from ipc_bench.engine.workloads import TraceWorkload  # noqa: E402
from ipc_bench.harness.oracle import fed_in_schedule_order  # noqa: E402
from ipc_bench.harness.recording import token_digest  # noqa: E402

MODEL = ModelConfig(name="torch", preset="tiny", device="cpu", seed=0)
# (arrival step, prompt tokens, max_tokens): chunked prefill (16-token budget)
MIXED = [(0, 10, 14), (0, 20, 12), (1, 7, 18), (2, 33, 6), (2, 5, 20), (5, 16, 8)]


def config(num_blocks: int, block_size: int = 4) -> SchedulerConfig:
    return SchedulerConfig(max_num_seqs=8, max_num_batched_tokens=16, max_model_len=96,
                           block_size=block_size, num_blocks=num_blocks)


def workload() -> TraceWorkload:
    trace = Trace(path="synthetic", arrival_s=np.array([r[0] for r in MIXED], dtype=float),
                  prompt_lens=np.array([r[1] for r in MIXED]),
                  output_lens=np.array([r[2] for r in MIXED]))
    return TraceWorkload(trace, name="mixed", seed=0, vocab_size=MODEL.vocab_size,
                         logical_step_s=1.0)


class DeviceDrive:
    """``MIXED`` under ``AsyncScheduler`` (two steps in flight). ``device``: the runner
    launches each step as soon as it is scheduled and finishes it only when its
    output is needed (so step n + 1 is launched before step n is finished); else the
    host-buffer runner executes each step whole. Records per step the ids fed (in the
    schedule's order) and the scheduler's expected ids, and checks every reply's ids
    against the runner's host token buffer."""

    def __init__(self, device: bool, num_blocks: int = 100_000, graphs: bool = False,
                 model: ModelConfig = MODEL, block_size: int = 4):
        cfg = config(num_blocks, block_size)
        if graphs:
            # The attention shapes of test_paged_attention.py's flex model (SCHED: 4
            # sequences, 80 blocks of 4, 128 tokens), whose compiled flex kernels
            # (about 10 s each on CPU) serve it there, in one process: the test of
            # graphs=True is in that file.
            cfg = SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=16,
                                  max_model_len=128, block_size=4, num_blocks=80)
            model = ModelConfig(name="torch", preset="tiny", device="cpu", seed=0,
                                attention="flex")
        self.sched = AsyncScheduler(cfg, "cached")
        self.runner = ModelRunner(cfg, model, "cached", device_inputs=device)
        if graphs:  # decode steps replayed over the graphs' persistent input buffers
            self.runner.model.enable_graphs(strict_capture(torch))
        self.device = device
        self.fed: list[np.ndarray] = []
        self.expected: list[np.ndarray] = []
        self.launched_before_finish = 0
        self.preempted = 0
        self._run()

    def _finish(self, so, handle):
        runner = self.runner
        if not self.device:
            return handle
        out = runner.finish(handle)
        inputs = handle.inputs
        self.fed.append(fed_in_schedule_order(so.num_scheduled_tokens, handle.rows, inputs)[1])
        # The reply's ids are what the host token buffer now holds for each request.
        batch = runner.input_batch
        for req_id, ids in zip(out.req_ids, out.sampled_token_ids):
            if not ids:
                continue
            state = runner.requests[req_id]
            assert state.output_token_ids[-1] == ids[0]
            row = batch.req_id_to_index.get(req_id)
            if row is not None:
                end = int(batch.num_tokens_no_spec[row])
                assert end == state.num_tokens
                assert int(batch.token_ids_cpu[row, end - 1]) == ids[0]
        return out

    def _run(self) -> None:
        wl = workload()
        sched, runner = self.sched, self.runner
        pending: collections.deque = collections.deque()
        for _ in range(5000):
            if len(pending) < 2 and admit(self.sched, wl):
                plan = sched.schedule()
                if plan is not None:
                    self.preempted += len(plan.preempted)
                    so = sched.build_scheduler_output(plan)
                    if self.device:
                        self.launched_before_finish += bool(pending)
                        handle = runner.launch(so)
                    else:
                        handle = runner.execute_model(so)
                    pending.append((plan, so, handle))
                    if len(pending) < 2:
                        continue
            if not pending:
                if sched.has_unfinished_requests() or wl.next_arrival_step() is not None:
                    continue
                return
            plan, so, handle = pending.popleft()
            out = self._finish(so, handle)
            sched.update_from_output(plan, out)
            # Expected ids of the step, once its output (and so every placeholder it
            # read) is applied: each request's scheduled positions of all_token_ids.
            # (as the input oracle's ``_expect_from_plan``: running requests first)
            reqs = plan.scheduled_reqs
            starts = plan.cached_num_computed[:plan.cached_resumed.count(False)]
            starts = starts + [0] * (len(reqs) - len(starts))
            exp = []
            for req, p, k in zip(reqs, starts, plan.num_scheduled_tokens.values()):
                exp.extend(req.all_token_ids[p:p + k])
            self.expected.append(np.asarray(exp, np.int32))
        raise AssertionError("not finished after 5000 steps")


@pytest.fixture(scope="module")
def host_reference() -> DeviceDrive:
    return DeviceDrive(device=False)


@pytest.mark.parametrize("num_blocks", [100_000, 24])
def test_device_path_equals_host_path_and_feeds_the_scheduled_ids(host_reference, num_blocks):
    run = DeviceDrive(device=True, num_blocks=num_blocks)
    ref = host_reference if num_blocks == 100_000 else DeviceDrive(False, num_blocks)
    sched = run.sched
    assert run.launched_before_finish > 10
    assert run.runner.device_ids.num_filled > 20  # placeholders filled on the device
    if num_blocks == 24:
        assert run.preempted > 0
    assert token_digest(sched.requests.values()) == token_digest(ref.sched.requests.values())
    for req in sched.requests.values():
        assert req.status == RequestStatus.FINISHED
        assert len(req.output_token_ids) == req.max_tokens
    assert len(run.fed) == len(run.expected)
    for i, (fed, exp) in enumerate(zip(run.fed, run.expected)):
        assert fed.tolist() == exp.tolist(), f"step {i}"


def test_a_wrong_gather_index_feeds_wrong_ids(monkeypatch):
    """The fault the input oracle must catch (whole cases: tests/harness/
    test_device_async.py): placeholders that take each other's sampled ids."""
    real = DeviceSampledIds.fill

    def fill(self, ids_t, flat_idx, prev_idx, put):
        return real(self, ids_t, flat_idx, np.roll(prev_idx, 1), put)

    monkeypatch.setattr(DeviceSampledIds, "fill", fill)
    run = DeviceDrive(True)
    bad = [i for i, (f, e) in enumerate(zip(run.fed, run.expected))
           if f.tolist() != e.tolist()]
    assert bad and bad[0] <= 3


class QueuedCopyStaging(PinnedStaging):
    """``PinnedStaging`` (unpinned, on CPU) that records where a CUDA copy would race:
    each write of a host buffer (``stage``) last written in a step not yet known
    complete (on CUDA its ``non_blocking`` copy may still be queued and would read the
    new values).
    A step is complete once its ids reached the host: ``sample_step`` returned (the
    host path) or its ``SampledCopy`` was waited for (the device-input path)."""

    def __init__(self):
        super().__init__(torch, torch.device("cpu"), pin=False)
        self.step = 0
        self.complete = 0  # every step up to this one has completed
        self.written: dict[tuple[str, int], int] = {}  # (name, set) -> step
        self.races: list[tuple[str, int, int]] = []  # (name, written in, rewritten in)

    def next_step(self) -> None:
        super().next_step()
        self.step += 1

    def stage(self, name: str, array: np.ndarray) -> None:
        key = (name, self._set)
        if self.written.get(key, 0) > self.complete:
            self.races.append((name, self.written[key], self.step))
        self.written[key] = self.step
        super().stage(name, array)


@pytest.mark.parametrize("device", [False, True])
def test_staging_rewrites_a_host_buffer_only_after_its_step_completed(monkeypatch, device):
    """The torch model's pinned staging on CUDA: a host buffer is copied to the device
    with ``non_blocking=True``, so it may be rewritten only once the step that last
    used it has completed. With the device-input path step n + 1 is staged while step
    n runs (two sets of buffers, ``next_step``); a step that staged into the set still
    in flight would feed the GPU another step's ids. Checked on CPU (where copies are
    synchronous) by tracking when each buffer's step completes."""
    from ipc_bench.engine.models import TorchModel

    staged: list[QueuedCopyStaging] = []
    build, sample_step = TorchModel.__init__, TorchModel.sample_step
    start_copy, wait = DeviceSampledIds.start_copy, SampledCopy.wait
    copy_steps: dict[int, tuple[QueuedCopyStaging, int]] = {}

    def init(self, *args, **kwargs):
        build(self, *args, **kwargs)
        self.staging = QueuedCopyStaging()
        staged.append(self.staging)

    def sample_and_sync(self, *args, **kwargs):
        out = sample_step(self, *args, **kwargs)  # its ids are on the host: complete
        self.staging.complete = self.staging.step
        return out

    def start_and_note(self, sampled_t, fed_t):
        copy = start_copy(self, sampled_t, fed_t)
        copy_steps[id(copy)] = (staged[-1], staged[-1].step)
        return copy

    def wait_and_note(self):
        staging, step = copy_steps.pop(id(self))
        staging.complete = max(staging.complete, step)
        return wait(self)

    monkeypatch.setattr(TorchModel, "__init__", init)
    monkeypatch.setattr(TorchModel, "sample_step", sample_and_sync)
    monkeypatch.setattr(DeviceSampledIds, "start_copy", start_and_note)
    monkeypatch.setattr(SampledCopy, "wait", wait_and_note)
    run = DeviceDrive(device)
    (staging,) = staged
    assert staging.step > 20 and staging.races == []
    assert not device or run.launched_before_finish > 10
    # the same check fails where both steps in flight share one set of buffers
    monkeypatch.setattr(QueuedCopyStaging, "next_step",
                        lambda self: setattr(self, "step", self.step + 1))
    DeviceDrive(device)
    assert bool(staged[-1].races) == device


class FakeEvent:
    def __init__(self):
        self.done = False
        self.waited = 0

    def query(self) -> bool:
        return self.done

    def synchronize(self) -> None:
        self.waited += 1
        self.done = True


def test_sampled_copy_waits_on_its_event_only_when_read():
    import torch

    event = FakeEvent()
    copy = SampledCopy(event, torch.tensor([7, 8]), torch.tensor([1, 2, 3]))
    assert not copy.ready() and event.waited == 0
    sampled, fed = copy.wait()
    assert event.waited == 1 and copy.ready()
    assert sampled.tolist() == [7, 8] and fed.tolist() == [1, 2, 3]


def test_fill_copies_in_order_or_scatters_from_the_previous_step():
    import torch

    ids = DeviceSampledIds(torch, torch.device("cpu"))
    ids.start_copy(torch.tensor([10, 11, 12]), torch.tensor([0]))
    put = lambda name, a: torch.from_numpy(np.ascontiguousarray(a))  # noqa: E731
    t = torch.zeros(5, dtype=torch.int64)
    ids.fill(t, np.arange(2), np.arange(2), put)  # the first rows, same order
    assert t.tolist() == [10, 11, 0, 0, 0]
    t = torch.zeros(5, dtype=torch.int64)
    ids.fill(t, np.array([4, 1]), np.array([0, 2]), put)  # rows moved
    assert t.tolist() == [0, 12, 0, 0, 10]
    assert ids.num_filled == 4


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.skipif(not _cuda(), reason="needs a GPU")
def test_device_path_on_cuda_equals_host_path():  # pragma: no cover - GPU only
    """On CUDA: side-stream copies, events, pinned buffers, the graphs' buffers."""
    for attention, graphs in (("gather", False), ("flex", True)):
        model = ModelConfig(name="torch", preset="tiny", device="cuda", seed=0,
                            attention=attention, cuda_graphs=graphs)
        # flex on CUDA takes KV blocks of a multiple of 16 tokens (flex_unsupported)
        dev = DeviceDrive(True, model=model, block_size=16)
        host = DeviceDrive(False, model=model, block_size=16)
        assert dev.runner.device_ids.num_filled > 20
        assert token_digest(dev.sched.requests.values()) == token_digest(
            host.sched.requests.values())
        for fed, exp in zip(dev.fed, dev.expected):
            assert fed.tolist() == exp.tolist()
