"""Async scheduling with the torch model: the runner process on the device-input
path (``RunnerConfig.device_inputs``, ``RunnerLoop.run_pipelined``), tiny preset on CPU.

- Steady decode where no request finishes within the run, so sync and async schedule
  the same batches: the token streams of sync, async on the device path and async on
  the host-buffer path are equal, and the summary names the mode honestly
  (``device-input path (CPU: process overlap only)``; ``device pipelining`` needs CUDA).
- Chunked prefill with preemptions: the input oracle checks every step (interval 1)
  of the device path and passes (it digests the ids read back from the device input
  tensor, once the step's copy has completed).
- A wrong index in the device gather (step 12's placeholders take each other's
  sampled ids) fails the case through the input oracle, naming step 12.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("torch")

from fault_helpers import REPO  # noqa: E402,F401
from ipc_bench.analysis.summary import summarize_case  # noqa: E402
from ipc_bench.engine.config import ModelConfig, SchedulerConfig  # noqa: E402
from ipc_bench.engine.workloads import SteadyDecodeWorkload  # noqa: E402
from ipc_bench.harness import supervisor  # noqa: E402
from ipc_bench.harness.spec import CaseError, CaseResult, CaseSpec  # noqa: E402
from ipc_bench.harness.supervisor import run_case  # noqa: E402
from test_oracle import preempting_spec  # noqa: E402

TORCH = ModelConfig(name="torch", preset="tiny", device="cpu", seed=0)


def steady_torch(async_scheduling: bool, max_steps: int = 30, **kw) -> CaseSpec:
    """4 running, outputs of 60-80 tokens: none finishes within ``max_steps``."""
    return CaseSpec(
        scenario="t", labels={"num_running": 4}, policy="cached", codec="msgpack",
        scheduler=SchedulerConfig(max_num_seqs=4, max_model_len=256, num_blocks=256),
        model=TORCH,
        make_workload=lambda: SteadyDecodeWorkload(4, seed=3, vocab_size=128_256,
                                                   prompt_len_range=(8, 24),
                                                   output_len_range=(60, 80)),
        warmup_steps=3, max_steps=max_steps, count="all", floor=False,
        input_oracle_interval=4, async_scheduling=async_scheduling, **kw)


def test_device_path_tokens_equal_sync_and_host_path(monkeypatch):
    sync = run_case(steady_torch(False))
    dev = run_case(steady_torch(True))
    monkeypatch.setattr(supervisor, "uses_device_inputs", lambda spec: False)
    host = run_case(steady_torch(True))
    for r in (sync, dev, host):
        assert r.error is None
    assert dev.schedule_digest == sync.schedule_digest == host.schedule_digest
    assert dev.token_digest == sync.token_digest == host.token_digest
    s = summarize_case(dev)
    assert s["async_scheduling_mode"] == "device-input path (CPU: process overlap only)"
    # Step n + 1's frame is usually queued when step n is launched (the scheduler sends
    # it before it waits), so the runner launched some steps before replying; how many
    # depends on which process the machine runs first (about half on a loaded 2-core
    # machine), so only "some" is asserted.
    assert 0 < s["runner_lookahead_share"] <= 1
    assert "runner_lookahead_share" not in summarize_case(host)
    assert summarize_case(sync)["async_scheduling_mode"] is None


def test_device_path_passes_the_input_oracle_every_step_through_preemptions():
    spec = replace(preempting_spec("ipc"), model=TORCH, input_oracle_interval=1,
                   async_scheduling=True)
    result = run_case(spec)
    assert result.error is None
    assert sum(r["preemptions"] for r in result.requests) > 0
    assert all(r["finish_reason"] == "length" for r in result.requests)


WRONG_GATHER = '''
import os
if os.environ.get("IPC_BENCH_TEST_GATHER_AT"):
    import numpy as _np
    from ipc_bench.engine import cuda_step as _cs, model_runner as _mr
    _at = int(os.environ["IPC_BENCH_TEST_GATHER_AT"])
    _seq = [-1]
    _launch = _mr.ModelRunner.launch_prepared
    _fill = _cs.DeviceSampledIds.fill

    def launch_prepared(self, so, inputs):
        _seq[0] += 1
        return _launch(self, so, inputs)

    def fill(self, ids_t, flat_idx, prev_idx, put):
        if _seq[0] == _at:  # the wrong index: each placeholder takes its neighbour's id
            prev_idx = _np.roll(prev_idx, 1)
        return _fill(self, ids_t, flat_idx, prev_idx, put)

    _mr.ModelRunner.launch_prepared = launch_prepared
    _cs.DeviceSampledIds.fill = fill
'''


def test_a_wrong_index_in_the_device_gather_fails_the_input_oracle(monkeypatch, tmp_path):
    (tmp_path / "sitecustomize.py").write_text(WRONG_GATHER)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path) + os.pathsep
                       + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("IPC_BENCH_TEST_GATHER_AT", "12")
    result = CaseResult(spec=steady_torch(True, max_steps=40))
    with pytest.raises(CaseError) as err:
        run_case(result.spec, result=result)
    assert err.value.step == 12
    assert re.match(r"input oracle: step 12: request \S+: the runner fed token id \d+ at "
                    r"position \d+, the scheduler's all_token_ids hold \d+", str(err.value))


def test_shm_ring_runs_the_device_path_without_lookahead():
    """The ring's runner cannot poll (``RingRunnerChannel.poll`` is always ``None``):
    it finishes each step before it reads the next, and the mode says so."""
    sync = run_case(steady_torch(False, transport="shm"))
    dev = run_case(steady_torch(True, transport="shm"))
    assert sync.error is None and dev.error is None
    assert dev.token_digest == sync.token_digest
    s = summarize_case(dev)
    assert s["async_scheduling_mode"] == "device-input path (shm ring: no lookahead)"
    assert s["runner_lookahead_share"] == 0


def test_async_scheduling_mode_names_what_ran():
    from types import SimpleNamespace as NS

    from ipc_bench.analysis.summary import async_scheduling_mode

    def spec(model="torch", transport="ipc", async_scheduling=True, k=0):
        return NS(model=NS(name=model), transport=transport,
                  async_scheduling=async_scheduling, scheduler=NS(num_spec_tokens=k))

    gpu = "cuda (NVIDIA H200; SDPA without cuDNN; attention flex)"
    assert async_scheduling_mode(spec(), gpu) == "device pipelining"
    assert async_scheduling_mode(spec(), "cpu (attention gather)") == (
        "device-input path (CPU: process overlap only)")
    assert async_scheduling_mode(spec(transport="shm-block"), gpu) == (
        "device-input path (shm ring: no lookahead)")
    assert async_scheduling_mode(spec(transport="inproc"), gpu) == "runner thread"
    for model in ("null", "fixed-step", "emulated"):
        assert async_scheduling_mode(spec(model=model), gpu) == "process pipelining"
    assert async_scheduling_mode(spec(async_scheduling=False), gpu) is None
    assert supervisor.uses_device_inputs(spec()) is True
    assert supervisor.uses_device_inputs(spec(model="fixed-step")) is False
    # drafts: the torch model's runner takes the host path, named so on any device
    for transport in ("ipc", "shm-block"):
        assert async_scheduling_mode(spec(transport=transport, k=2), gpu) == (
            "process pipelining (drafts: host path)")
    assert async_scheduling_mode(spec(transport="inproc", k=2), gpu) == "runner thread"
    assert async_scheduling_mode(spec(model="null", k=2), gpu) == "process pipelining"
    assert supervisor.uses_device_inputs(spec(k=2)) is False
