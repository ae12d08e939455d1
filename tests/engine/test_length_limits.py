"""Length limits at ``max_model_len`` under both policies (vLLM 7f280d69c rules).

A request stops when it holds ``max_model_len`` tokens; a running request is scheduled
at most ``max_model_len - 1 - num_computed_tokens`` tokens, so the runner's last write
ends exactly at ``max_model_len`` and never trips "Sampled token IDs exceed the max
model length" (the fault of vLLM #25120). A prompt of ``max_model_len`` tokens or more
is rejected on arrival.
"""

from __future__ import annotations

import numpy as np
import pytest

from ipc_bench.harness.spec import CaseSpec
from ipc_bench.engine.config import ModelConfig, SchedulerConfig
from ipc_bench.engine.input_batch import CachedRequestState
from ipc_bench.engine.messages import SamplingParams
from ipc_bench.analysis.summary import summarize_case
from ipc_bench.engine.model_runner import ModelRunner, RunnerError
from ipc_bench.harness.supervisor import run_case
from ipc_bench.harness.recording import token_digest
from ipc_bench.engine.scheduler import RequestStatus, Scheduler
from ipc_bench.engine.traces import Trace
from ipc_bench.engine.workloads import TraceWorkload

MML = 32
MODEL = ModelConfig(seed=0)

# (arrival step, prompt tokens, max_tokens) and what each must end as:
# (finish_reason, output tokens, finish step)
REQUESTS = [
    (0, 20, 100),      # stops at exactly max_model_len: 12 outputs, the last at step 11
    (0, 20, MML - 20),  # max_tokens and max_model_len reached together
    (0, MML - 1, 10),  # prompt max_model_len - 1: one output, at its prefill step
    (0, MML, 5),       # prompt max_model_len: rejected on arrival
    (3, 25, 100),      # arrives later: 7 outputs, steps 3..9
]
EXPECTED = [("length", 12, 11), ("length", 12, 11), ("length", 1, 0), ("rejected", 0, 0),
            ("length", 7, 9)]


def config(*, budget: int = 128, num_blocks: int = 1024, block_size: int = 4) -> SchedulerConfig:
    return SchedulerConfig(max_num_seqs=8, max_num_batched_tokens=budget, max_model_len=MML,
                           block_size=block_size, num_blocks=num_blocks)


def workload(reqs) -> TraceWorkload:
    trace = Trace(path="synthetic",
                  arrival_s=np.array([r[0] for r in reqs], dtype=np.float64),
                  prompt_lens=np.array([r[1] for r in reqs], dtype=np.int64),
                  output_lens=np.array([r[2] for r in reqs], dtype=np.int64))
    return TraceWorkload(trace, name="synthetic", seed=0, vocab_size=MODEL.vocab_size,
                         logical_step_s=1.0)


def drive(policy: str, cfg: SchedulerConfig, reqs, max_steps: int = 1000):
    """Run ``reqs`` in one process; returns (scheduler, requests in index order).

    Checks at every step that each scheduled request's runner row holds the
    scheduler's tokens and never more than ``max_model_len``.
    """
    sched = Scheduler(cfg, policy)
    runner = ModelRunner(cfg, MODEL, policy)
    wl = workload(reqs)
    for _ in range(max_steps):
        for r in wl.arrivals(sched.step):
            sched.add_request(r.req_id, r.index, r.prompt_token_ids, r.max_tokens)
        if not sched.has_unfinished_requests():
            nxt = wl.next_arrival_step()
            if nxt is None:
                return sched, sorted(sched.requests.values(), key=lambda r: r.index)
            sched.step = max(nxt, sched.step + 1)
            continue
        plan = sched.schedule()
        out = runner.execute_model(sched.build_scheduler_output(plan))
        batch = runner.input_batch
        for req_id in plan.num_scheduled_tokens:
            req, row = sched.requests[req_id], batch.req_id_to_index[req_id]
            assert batch.num_tokens[row] <= MML
            end = req.num_computed_tokens
            assert batch.token_ids_cpu[row, :end].tolist() == req.all_token_ids[:end]
        sched.update_from_output(plan, out)
    raise AssertionError(f"not finished after {max_steps} steps")


def outcome(reqs) -> list[tuple[str, int, int]]:
    return [(r.finish_reason, len(r.output_token_ids), r.finish_step) for r in reqs]


@pytest.mark.parametrize("policy", ["send", "cached"])
def test_requests_end_at_max_model_len(policy):
    sched, reqs = drive(policy, config(), REQUESTS)
    assert outcome(reqs) == EXPECTED
    assert [r.num_tokens for r in reqs] == [MML, MML, MML, MML, MML]
    assert reqs[3].status == RequestStatus.REJECTED and sched.num_rejected == 1
    assert [r.first_token_step for r in reqs] == [0, 0, 0, -1, 3]


def test_policies_agree_at_max_model_len():
    digests = {policy: token_digest(drive(policy, config(), REQUESTS)[1])
               for policy in ("send", "cached")}
    assert digests["send"] == digests["cached"]


@pytest.mark.parametrize("policy", ["send", "cached"])
def test_prompt_of_max_model_len_minus_one_in_chunks(policy):
    # Budget 16: the 31-token prompt takes chunks of 16 and 15; its one output is
    # sampled at step 1, written (cached) at position 31, the last one there is.
    _, reqs = drive(policy, config(budget=16), [(0, MML - 1, 10)])
    assert outcome(reqs) == [("length", 1, 1)]
    _, ref = drive("cached", config(), [(0, MML - 1, 10)])
    assert reqs[0].output_token_ids == ref[0].output_token_ids


@pytest.mark.parametrize("policy", ["send", "cached"])
def test_max_model_len_with_preemption(policy):
    # Two requests growing to max_model_len need 8 blocks each at their last step;
    # 11 blocks make one preempt the other, which recomputes up to 31 tokens.
    reqs_spec = [(0, 20, 100), (0, 20, 100)]
    sched, reqs = drive(policy, config(num_blocks=11), reqs_spec)
    assert sched.num_preemptions > 0
    assert [(r.finish_reason, len(r.output_token_ids)) for r in reqs] == [("length", 12)] * 2
    _, ref = drive("cached", config(), reqs_spec)
    assert token_digest(reqs) == token_digest(ref)


def test_admission_rule_at_max_model_len():
    sched = Scheduler(config(), "cached")
    over = sched.add_request("over", 0, [1] * (MML + 1), 5)
    at = sched.add_request("at", 1, [1] * MML, 5)
    below = sched.add_request("below", 2, [1] * (MML - 1), 5)
    assert [r.status for r in (over, at, below)] == [
        RequestStatus.REJECTED, RequestStatus.REJECTED, RequestStatus.WAITING]
    assert at.finish_reason == "rejected" and below.finish_reason is None
    assert sched.waiting == [below] and sched.num_rejected == 2


def test_runner_write_may_end_at_max_model_len_not_past_it():
    runner = ModelRunner(config(), MODEL, "cached")
    state = CachedRequestState("r", list(range(MML - 1)), SamplingParams(max_tokens=5), [0], 0)
    runner.requests["r"] = state
    row = runner.input_batch.add_request(state)
    runner.write_token_ids(state, row, MML - 1, [7])
    assert state.output_token_ids == [7] and runner.input_batch.num_tokens[row] == MML
    with pytest.raises(RunnerError) as info:
        runner.write_token_ids(state, row, MML, [8])
    assert str(info.value) == ("Sampled token IDs exceed the max model length: r would hold "
                               "33 tokens, max_model_len is 32")


def test_run_case_ends_at_max_model_len():
    results = []
    for codec in ("msgpack", "pickle"):
        for policy in ("send", "cached"):
            spec = CaseSpec(scenario="test-length", labels={"w": "limits"}, policy=policy,
                            codec=codec, scheduler=config(), model=MODEL,
                            make_workload=lambda: workload(REQUESTS), warmup_steps=0,
                            floor=False, peer_timeout_s=20.0)
            result = run_case(spec)
            assert result.error is None
            assert [(r["finish_reason"], r["num_output_tokens"], r["finish_step"])
                    for r in result.requests] == EXPECTED
            summary = summarize_case(result)
            assert summary["num_rejected"] == 1 and summary["num_finished"] == 4
            assert summary["num_preemptions"] == 0
            results.append(result)
    _, reqs = drive("cached", config(), REQUESTS)
    assert {r.token_digest for r in results} == {token_digest(reqs)}


TRACE_ROWS = ["TIMESTAMP,ContextTokens,GeneratedTokens",
              "2023-11-16 18:15:46.6805900,100,4",
              "2023-11-16 18:15:47.0000000,80,4",
              "2023-11-16 18:15:48.5000000,120,4"]


def _replay(tmp_path, rows: list[str], *args: str) -> tuple[int, str, dict]:
    """``bench.py --scenario azure-conv`` in this process over a trace of ``rows``;
    returns the exit code, stderr and summary.json."""
    import contextlib
    import io
    import json

    from ipc_bench.cli import main

    trace = tmp_path / "trace.csv"
    trace.write_text("\r\n".join(rows) + "\r\n")
    out = tmp_path / "run"
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["--scenario", "azure-conv", "--trace", str(trace), "--codecs", "msgpack",
                     "--policies", "cached", "--no-single-process", "--no-floor",
                     "--warmup-steps", "0", "--quiet", "--output", str(out), *args])
    return code, err.getvalue(), json.loads((out / "summary.json").read_text())


def test_a_run_that_would_serve_no_request_is_refused_before_it_runs(tmp_path):
    """Every prompt of ``TRACE_ROWS`` has 64 tokens or more: all would be rejected on
    arrival, so nothing runs (the line after the run, ``no request was served``, is
    what a run that got there says: ``analysis.summary.no_request_served``)."""
    import contextlib
    import io

    from ipc_bench.cli import main

    trace = tmp_path / "trace.csv"
    trace.write_text("\r\n".join(TRACE_ROWS) + "\r\n")
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["--scenario", "azure-conv", "--trace", str(trace), "--max-model-len",
                     "64", "--quiet", "--output", str(tmp_path / "run")])
    assert code == 2
    assert err.getvalue().splitlines() == [
        "bench.py: error: all 3 requests replayed would be rejected on arrival in every "
        "case (a prompt of max_model_len 64 tokens or more; the longest has 120 tokens), so "
        "the run would measure nothing: raise --max-model-len to 121 or more"]
    assert not (tmp_path / "run").exists()


def test_a_run_that_served_some_requests_exits_0(tmp_path):
    code, err, summary = _replay(tmp_path, TRACE_ROWS, "--max-model-len", "96")
    assert code == 0, err
    assert summary["status"] == "complete"
    assert [(c["num_requests"], c["num_rejected"]) for c in summary["cases"]] == [(3, 2)]
    # said before the run, with the count the run then records
    assert err.splitlines()[0] == (
        "bench.py: warning: 2 of 3 requests replayed will be rejected on arrival in every "
        "case (a prompt of max_model_len 96 tokens or more; the longest has 120 tokens), "
        "as vLLM rejects them, and counted in num_rejected: raise --max-model-len to 121 "
        "or more to serve them")
