"""``engine.pipeline`` without processes: the stages' step against the whole runner's.

- The torch model split by layers over 2 stages (tiny preset, CPU) samples exactly the
  ids of the whole model on the same batches, through prefill chunks and decode, and
  each stage's token buffer feeds the scheduler's ids (send: from the message on the
  first stage, the last stage's own samples).
- The null model's stages (hash carried in the hidden states) sample the whole null
  model's ids; the hidden states are 4,096 bytes per scheduled token.
- The batch-queue scheduler splits the running requests into micro-batches and
  refuses to preempt a request in flight.
"""

from __future__ import annotations

import numpy as np
import pytest

from ipc_bench.engine.config import ConfigError, ModelConfig, SchedulerConfig
from ipc_bench.engine.model_runner import ModelRunner
from ipc_bench.engine.pipeline import (HIDDEN_BYTES_PER_TOKEN, PipelineScheduler,
                                       PipelineStage, check_pp_model)
from ipc_bench.engine.scheduler import Scheduler

CFG = SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=48, max_model_len=128,
                      num_blocks=64, block_size=16)


def _requests(sched, n=4):
    rng = np.random.default_rng(1)
    for i in range(n):
        sched.add_request(f"r{i}", i, rng.integers(0, 5000, 10 + 7 * i).tolist(), 12)


@pytest.mark.parametrize("model", [ModelConfig(name="torch", preset="tiny", vocab_size=5000,
                                               seed=3, device="cpu", attention="gather",
                                               roofline="off"),
                                   ModelConfig()], ids=["torch", "null"])
def test_two_stages_sample_the_whole_models_ids(model):
    sched = Scheduler(CFG, "send")
    _requests(sched)
    whole = ModelRunner(CFG, model, "cached")
    first, last = (PipelineStage(CFG, model, 2, r, direct=False) for r in (0, 1))
    if model.name == "torch":
        assert (first.layers, last.layers) == ((0, 1), (1, 2))
    steps = 0
    while sched.has_unfinished_requests():
        plan = sched.schedule()
        so = sched.build_scheduler_output(plan)
        expected = whole.execute_model(so)
        first.update(so)
        last.update(so)
        in0 = first.runner.prepare_inputs(so)
        in1 = last.runner.prepare_inputs(so)
        assert in0.input_ids.tolist() == in1.input_ids.tolist()
        hidden = first.forward(None, in0)
        shape, dtype = last.hidden_spec(len(in0.input_ids))
        assert hidden.shape == shape and hidden.dtype == dtype
        if model.name == "null":
            assert hidden.nbytes == len(in0.input_ids) * HIDDEN_BYTES_PER_TOKEN
        valid = last.runner.write_back(in1, last.forward(hidden, in1))
        out = last.runner.build_output(in1, valid)
        assert out.sampled_token_ids == expected.sampled_token_ids, steps
        sched.update_from_output(plan, out)
        steps += 1
    assert steps > 12  # prefill chunks, then decode


def test_the_batch_queue_splits_the_running_requests():
    sched = PipelineScheduler(CFG, "send", pp=2)
    _requests(sched)
    assert sched.max_reqs_per_step == 2
    a = sched.schedule()
    b = sched.schedule()
    assert {r.req_id for r in a.scheduled_reqs}.isdisjoint(r.req_id for r in b.scheduled_reqs)
    assert len(a.scheduled_reqs) <= 2 and len(b.scheduled_reqs) <= 2


def test_the_torch_split_takes_cuda_but_not_cuda_graphs():
    check_pp_model(ModelConfig(name="torch", preset="tiny", device="cuda"))  # no error
    with pytest.raises(ConfigError) as err:
        check_pp_model(ModelConfig(name="torch", preset="tiny", device="cuda",
                                   cuda_graphs=True))
    assert str(err.value) == ("--pp runs each stage's share of the torch model's layers "
                              "eagerly: drop --cuda-graphs")


def test_the_hidden_state_copy_helpers_keep_every_byte_on_cpu():
    """The helpers a CUDA stage uses around gloo, on their CPU branch (the page-locked
    branch needs a GPU and has not run here)."""
    import torch

    from ipc_bench.engine.cuda_step import (hidden_to_device, hidden_to_host,
                                            stage_host_buffer)

    buf = stage_host_buffer(torch, (3, 4), np.dtype(np.float32), "cpu")
    assert type(buf) is np.ndarray and buf.shape == (3, 4) and buf.dtype == np.float32
    buf[:] = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    t = hidden_to_device(torch, buf, torch.device("cpu"))
    assert t.dtype == torch.float32 and t.data_ptr() == buf.ctypes.data  # no copy on CPU
    back = hidden_to_host(torch, t.to(torch.bfloat16))  # a stage computes in its dtype
    assert back.dtype == np.float32 and back.shape == (3, 4)
    assert back.tobytes() == t.to(torch.bfloat16).float().numpy().tobytes()
    assert hidden_to_host(torch, t).tobytes() == buf.tobytes()
