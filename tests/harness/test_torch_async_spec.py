"""The torch model with draft tokens under async scheduling (vLLM #24799's scheduler
side; the runner on the host path, ``supervisor.uses_device_inputs`` False).

Tiny preset, float32 on CPU, a vocabulary of 512 (as ``tests/engine/test_spec_decode``).

- By hand (``test_async_spec.drive``): K = 2 with async scheduling gives every token of
  the sync K = 2 run and of the K = 0 run, with chunked prefill, with and without
  preemption; every K/V slot the drafter writes lies in a block the scheduler
  allocated to that request for the step (its optimistic ``num_computed_tokens`` + the
  scheduled tokens + ``num_lookahead_tokens``), and some write falls on the last such
  slot, so K lookahead slots are needed and enough.
- Whole cases (two processes and one): the same equality with the input oracle
  checking every step; the summary names the mode ``process pipelining (drafts: host
  path)``; the kind of vLLM #20530 fails the input oracle naming the step.
- ``bench.py --model torch ... --num-spec-tokens 2 --async-scheduling`` runs.
"""

from __future__ import annotations

import json
from dataclasses import replace

import msgspec
import numpy as np
import pytest

from analysis_run import bench_in_process
from ipc_bench.analysis.summary import summarize_case
from ipc_bench.engine.config import ModelConfig
from ipc_bench.engine.scheduler import PLACEHOLDER, AsyncScheduler, RequestStatus, Scheduler
from ipc_bench.engine.workloads import TraceWorkload
from ipc_bench.harness.recording import token_digest
from ipc_bench.harness.spec import CaseResult
from ipc_bench.harness.supervisor import run_case
from test_async_spec import drive
from test_oracle import oracle_steps, preempting_spec
from test_spec_faults import (fails_at_the_step_after_the_fault, fault,  # noqa: F401 (fixture)
                              torch_spec_case)

TORCH = ModelConfig(name="torch", preset="tiny", device="cpu", vocab_size=512, seed=0)
HOST_PATH = "process pipelining (drafts: host path)"


def digest(run: dict) -> str:
    return token_digest(run["sched"].requests.values())


@pytest.fixture(scope="module")
def torch_no_drafts() -> str:
    return digest(drive(Scheduler, 0, 100_000, False, TORCH))


def record_drafter_slots(writes: list):
    """``drive``'s ``setup``: wrap the runner's ``TorchModel._draft_forward`` to append,
    per slot it writes, ``(position - last slot the scheduler allocated for, block the
    runner writes == the scheduler's block there)``. ``drive`` executes a step right
    after scheduling it, so the request's ``num_computed_tokens`` then is the
    scheduler's optimistic count + the step's scheduled tokens: with the lookahead, the
    slots it allocated blocks for (vLLM ``allocate_slots``), capped at
    ``max_model_len``."""
    def setup(sched, runner):
        model = runner.model
        real = model._draft_forward
        cfg = sched.config
        bs = cfg.block_size

        def draft_forward(tokens, positions, block_table, num_blocks, rows, num_drafts):
            req_ids = runner.input_batch.req_ids
            for p, table, row in zip(positions.tolist(), block_table, rows.tolist()):
                req = sched.requests[req_ids[row]]
                slots = min(req.num_computed_tokens + cfg.num_lookahead_tokens,
                            cfg.max_model_len)
                owned = (p // bs < len(req.block_ids)
                         and int(table[p // bs]) == req.block_ids[p // bs])
                writes.append((p - (slots - 1), owned))
            return real(tokens, positions, block_table, num_blocks, rows, num_drafts)

        model._draft_forward = draft_forward
    return setup


@pytest.mark.parametrize("num_blocks", [100_000, 24], ids=["decode", "preemption"])
def test_by_hand_torch_async_drafts_keep_every_token(torch_no_drafts, num_blocks):
    sync = drive(Scheduler, 2, num_blocks, False, TORCH)
    writes: list = []
    run = drive(AsyncScheduler, 2, num_blocks, True, TORCH, record_drafter_slots(writes))
    sched = run["sched"]
    assert digest(run) == digest(sync) == torch_no_drafts
    for req in sched.requests.values():
        assert req.status == RequestStatus.FINISHED and PLACEHOLDER not in req.all_token_ids
        assert len(req.output_token_ids) == req.max_tokens
    assert sched.kv_cache.num_free_blocks == num_blocks
    assert run["chunks"] >= 4                   # chunked prefill (16-token budget)
    assert run["rolled_back_in_flight"] >= 10   # the runner corrected step n+1's count
    if num_blocks == 24:
        assert sched.num_preemptions > 0 and run["preempted_sampling"] >= 1
    # The drafter's K/V writes: all inside the request's own allocated slots, and
    # some on the last of them (one lookahead slot fewer would not cover it).
    over = np.array([w[0] for w in writes])
    assert len(writes) > 100 and all(w[1] for w in writes)
    assert over.max() == 0
    assert (over == 0).sum() >= 5


@pytest.mark.parametrize("transport", ["ipc", "inproc"])
def test_torch_async_drafts_equal_sync_tokens_under_both_oracles(monkeypatch, transport):
    """``test_oracle.preempting_spec`` with the torch model (six staggered requests,
    16-token chunks, a cache of 24 blocks): K = 2 async, K = 2 sync and K = 0 give one
    token digest; the async case's input oracle checks every step."""
    compared = oracle_steps(monkeypatch)
    base = preempting_spec(transport)
    trace = base.make_workload().trace
    base = replace(base, model=TORCH, input_oracle_interval=1,
                   make_workload=lambda: TraceWorkload(trace, name="mixed", seed=0,
                                                       vocab_size=512, logical_step_s=1.0))
    spec = replace(base, labels={**base.labels, "num_spec_tokens": 2},
                   scheduler=msgspec.structs.replace(base.scheduler, num_spec_tokens=2,
                                                     num_lookahead_tokens=2))
    plain, sync = run_case(base), run_case(spec)
    compared.clear()
    asyn = run_case(replace(spec, async_scheduling=True))
    assert asyn.error is None and sync.error is None and plain.error is None
    assert asyn.token_digest == sync.token_digest == plain.token_digest
    assert compared == list(range(len(asyn.sched_rows)))  # every step checked
    assert sum(r["preemptions"] for r in asyn.requests) > 0
    assert all(r["num_output_tokens"] == r["max_tokens"] for r in asyn.requests)
    summary = summarize_case(asyn)
    assert summary["async_scheduling_mode"] == (
        "runner thread" if transport == "inproc" else HOST_PATH)
    assert summary["num_spec_tokens"] == 2


def test_torch_async_accepted_drafts_not_written_fail_the_input_oracle(fault):  # noqa: F811
    log = fault(20)
    result = CaseResult(spec=torch_spec_case(2, policy="cached", input_oracle_interval=1,
                                             async_scheduling=True))
    fails_at_the_step_after_the_fault(result, log)


def test_bench_runs_the_torch_model_with_drafts_and_async_scheduling(tmp_path):
    out = tmp_path / "run"
    proc = bench_in_process(  # cli.main in this process, its runners processes
        ["--scenario", "decode-steady", "--model", "torch", "--model-preset", "tiny",
         "--device", "cpu", "--vocab-size", "512", "--num-running", "4", "--steps", "30",
         "--warmup-steps", "5", "--codecs", "msgpack", "--no-floor", "--no-single-process",
         "--output", str(out), "--num-spec-tokens", "2", "--async-scheduling"])
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["problems"] == []
    cases = {c["async_scheduling"]: c for c in summary["cases"]}
    assert sorted(cases) == [False, True]
    assert cases[True]["async_scheduling_mode"] == HOST_PATH
    assert cases[False]["async_scheduling_mode"] is None
    for c in cases.values():
        assert c["num_spec_tokens"] == 2 and c["policy"] == "cached"
        assert 0 < c["spec_draft_acceptance_rate"] < 1
        assert c["draft_ns_per_step"] > 0
    assert f"async ({HOST_PATH})" in proc.stdout  # the runner-gap table
