"""Preemption by recompute (vLLM 7f280d69c): scheduler, runner and the whole case.

With a KV cache too small for the workload, the scheduler preempts the last running
request, frees its blocks and later resumes it as a cached request
(``resumed_from_preemption``, replacement block ids, recompute from token 0). The
oracle: the token streams of every policy and codec equal each other and equal those
of the same workload run with a cache large enough that nothing is preempted.

The in-process driver runs ``Scheduler`` and ``ModelRunner`` by hand (no sockets) and
checks after every step that the runner's buffer holds the scheduler's tokens at every
scheduled position and that the runner's outputs of each request are the scheduler's
(under ``send``: all but at most the last one, which the next ``new_token_ids`` bring).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ipc_bench.harness.spec import SCHED_COLUMNS, CaseSpec
from ipc_bench.engine.config import ModelConfig, SchedulerConfig
from ipc_bench.engine.messages import CachedRequestData, NewRequestData, SamplingParams, SchedulerOutput
from ipc_bench.analysis.summary import summarize_case
from ipc_bench.engine.model_runner import ModelRunner
from ipc_bench.engine.scheduler import ProtocolError
from ipc_bench.harness.supervisor import run_case
from ipc_bench.harness.recording import token_digest
from ipc_bench.engine.scheduler import RequestStatus, Scheduler, SchedulerError
from ipc_bench.engine.traces import Trace
from ipc_bench.engine.workloads import TraceWorkload

MODEL = ModelConfig(seed=0)
PLENTY = 100_000


def workload(reqs: list[tuple[int, int, int]]) -> TraceWorkload:
    """``reqs``: (arrival step, prompt tokens, max_tokens) per request."""
    trace = Trace(path="synthetic",
                  arrival_s=np.array([r[0] for r in reqs], dtype=np.float64),
                  prompt_lens=np.array([r[1] for r in reqs], dtype=np.int64),
                  output_lens=np.array([r[2] for r in reqs], dtype=np.int64))
    return TraceWorkload(trace, name="synthetic", seed=0, vocab_size=MODEL.vocab_size,
                         logical_step_s=1.0)


def config(num_blocks: int, *, block_size: int, budget: int, max_model_len: int = 128,
           max_num_seqs: int = 8) -> SchedulerConfig:
    return SchedulerConfig(max_num_seqs=max_num_seqs, max_num_batched_tokens=budget,
                           max_model_len=max_model_len, block_size=block_size,
                           num_blocks=num_blocks)


class Run:
    """What ``drive`` saw: the scheduler, the runner, and per step the plan and message."""

    def __init__(self, sched: Scheduler, runner: ModelRunner):
        self.sched = sched
        self.runner = runner
        self.plans = []
        self.outputs = []

    @property
    def digest(self) -> str:
        return token_digest(self.sched.requests.values())


def check_runner(sched: Scheduler, runner: ModelRunner, so, policy: str) -> None:
    """After ``update_states``: rows hold the scheduler's tokens at every scheduled
    position; each request's runner outputs are the scheduler's (send: but the last)."""
    batch = runner.input_batch
    for req_id, n in so.num_scheduled_tokens.items():
        req = sched.requests[req_id]
        row = batch.req_id_to_index[req_id]
        end = req.num_computed_tokens  # already advanced by n
        assert batch.token_ids_cpu[row, :end].tolist() == req.all_token_ids[:end], req_id
        assert batch.num_computed_tokens_cpu[row] == end - n
        nb = int(batch.num_blocks_per_row[row])
        assert batch.block_table[row, :nb].tolist() == req.block_ids
        assert runner.requests[req_id].block_ids == req.block_ids
    for req_id, state in runner.requests.items():
        want = sched.requests[req_id].output_token_ids
        have = state.output_token_ids
        if policy == "cached":
            assert have == want, req_id
        else:
            assert have == want[:len(have)] and len(want) - len(have) <= 1, req_id


def drive(policy: str, cfg: SchedulerConfig, reqs, max_steps: int = 5000) -> Run:
    """Run ``reqs`` (see ``workload``) to completion in one process, checking each step."""
    sched = Scheduler(cfg, policy)
    runner = ModelRunner(cfg, MODEL, policy)
    run = Run(sched, runner)
    wl = workload(reqs)
    for _ in range(max_steps):
        for r in wl.arrivals(sched.step):
            sched.add_request(r.req_id, r.index, r.prompt_token_ids, r.max_tokens)
        if not sched.has_unfinished_requests():
            nxt = wl.next_arrival_step()
            if nxt is None:
                return run
            sched.step = max(nxt, sched.step + 1)
            continue
        plan = sched.schedule()
        so = sched.build_scheduler_output(plan)
        runner.update_states(so)
        check_runner(sched, runner, so, policy)
        inputs = runner.prepare_inputs(so)
        valid = runner.write_back(inputs, runner.sample(inputs))
        sched.update_from_output(plan, runner.build_output(inputs, valid))
        run.plans.append(plan)
        run.outputs.append(so)
    raise AssertionError(f"not finished after {max_steps} steps")


# Six requests with staggered arrivals: prompts need chunked prefill (budget 16),
# and 24 blocks of 4 tokens hold about a third of what they need at their longest.
MIXED = [(0, 10, 30), (0, 20, 25), (1, 7, 40), (2, 33, 12), (2, 5, 50), (5, 16, 16)]
MIXED_CFG = dict(block_size=4, budget=16)
MIXED_TINY_BLOCKS = 24


@pytest.fixture(scope="module")
def mixed_reference() -> Run:
    run = drive("cached", config(PLENTY, **MIXED_CFG), MIXED)
    assert run.sched.num_preemptions == 0
    return run


@pytest.mark.parametrize("policy", ["send", "cached"])
def test_tiny_cache_preempts_and_keeps_tokens(policy, mixed_reference):
    run = drive(policy, config(MIXED_TINY_BLOCKS, **MIXED_CFG), MIXED)
    sched = run.sched
    # Observed: 11 preemptions, 4 of them in the middle of a chunked prefill.
    assert sched.num_preemptions == 11
    assert sum(nc < sched.requests[r].num_prompt_tokens for _, r, nc in sched.preemptions) == 4
    assert sched.num_preemptions == len(sched.preemptions)
    assert sched.num_preemptions == sum(r.num_preemptions for r in sched.requests.values())
    assert all(r.finish_reason == "length" for r in sched.requests.values())
    ref = mixed_reference.sched.requests
    for req in sched.requests.values():
        assert req.output_token_ids == ref[req.req_id].output_token_ids
        assert len(req.output_token_ids) == req.max_tokens
    assert run.digest == mixed_reference.digest
    assert sched.kv_cache.num_free_blocks == MIXED_TINY_BLOCKS
    # Only the requests that finished in the last step (their ids would go out in the
    # next SchedulerOutput) are still on the runner.
    assert set(run.runner.requests) == sched.finished_req_ids


def test_both_policies_schedule_alike():
    runs = {p: drive(p, config(MIXED_TINY_BLOCKS, **MIXED_CFG), MIXED)
            for p in ("send", "cached")}
    send, cached = runs["send"], runs["cached"]
    assert send.sched.preemptions == cached.sched.preemptions
    assert ([p.num_scheduled_tokens for p in send.plans]
            == [p.num_scheduled_tokens for p in cached.plans])
    assert send.digest == cached.digest


def resumed_entries(run: Run):
    """(step index, position in CachedRequestData, req_id) of every resumption."""
    out = []
    for k, so in enumerate(run.outputs):
        cached = so.scheduled_cached_reqs
        for i, (req_id, resumed) in enumerate(zip(cached.req_ids,
                                                   cached.resumed_from_preemption)):
            if resumed:
                out.append((k, i, req_id))
    return out


@pytest.mark.parametrize("policy", ["send", "cached"])
def test_resumed_requests_are_cached_with_full_block_ids(policy):
    run = drive(policy, config(MIXED_TINY_BLOCKS, **MIXED_CFG), MIXED)
    entries = resumed_entries(run)
    assert len(entries) == run.sched.num_preemptions  # every preempted request resumed
    block_size = MIXED_CFG["block_size"]
    for k, i, req_id in entries:
        so, plan = run.outputs[k], run.plans[k]
        cached = so.scheduled_cached_reqs
        assert req_id not in {n.req_id for n in so.scheduled_new_reqs}
        n = so.num_scheduled_tokens[req_id]
        assert cached.num_computed_tokens[i] == 0
        blocks = cached.new_block_ids[i][0]
        assert len(blocks) == -(-n // block_size)  # all its blocks, not a diff
        assert blocks == plan.cached_new_block_ids[i]
        # Resumed requests follow the running ones (vLLM's order).
        assert all(cached.resumed_from_preemption[i:])
        req = run.sched.requests[req_id]
        if policy == "send":
            prefix = req.all_token_ids[:n]
            assert cached.new_token_ids[i] == prefix
        else:
            assert cached.new_token_ids == []
    # Non-resumed cached requests only ever get the blocks allocated that step.
    for so in run.outputs:
        cached = so.scheduled_cached_reqs
        assert len(cached.resumed_from_preemption) == len(cached.req_ids)


# Two 3-token prompts, 6 outputs each, one token per block, 8 blocks, budget 3.
# r1 samples its first token at step 2 and is preempted at step 3 (r0 needs its
# 6th block) before the runner under `send` has been sent that token. At step 6 it
# resumes with a chunk of 3 tokens: exactly one short of its 4 tokens.
EDGE = [(0, 3, 6), (0, 3, 6)]
EDGE_CFG = dict(block_size=1, budget=3, max_model_len=32)


@pytest.mark.parametrize("policy", ["send", "cached"])
def test_resume_chunk_ending_before_the_unsent_token(policy):
    run = drive(policy, config(8, **EDGE_CFG), EDGE)
    sched = run.sched
    r1_id = sorted(sched.requests.values(), key=lambda r: r.index)[1].req_id
    assert sched.preemptions == [(3, r1_id, 3)]
    entries = resumed_entries(run)
    assert [(run.plans[k].step, req_id) for k, _, req_id in entries] == [(6, r1_id)]
    k, i, _ = entries[0]
    assert run.outputs[k].num_scheduled_tokens[r1_id] == 3
    cached = run.outputs[k].scheduled_cached_reqs
    assert cached.new_block_ids[i] == ([0, 1, 2],)
    prompt = sched.requests[r1_id].prompt_token_ids
    assert cached.new_token_ids == ([prompt] if policy == "send" else [])
    # Step 6 was a partial recompute: no sample for r1; step 7 samples its 2nd token.
    assert sched.requests[r1_id].first_token_step == 2
    ref = drive("cached", config(PLENTY, **EDGE_CFG), EDGE)
    assert ref.sched.num_preemptions == 0
    assert run.digest == ref.digest
    assert [len(r.output_token_ids) for r in sched.requests.values()] == [6, 6]


# Mid-prefill: r1's 12-token prompt is being prefilled 2 tokens a step when r0, a
# decoding request ahead of it, needs a block: r1 (the last running) is preempted
# with 9 of its 12 prompt tokens computed.
MID = [(0, 2, 8), (0, 12, 2)]
MID_CFG = dict(block_size=2, budget=3, max_model_len=64)
# Self-preemption: r1 (8-token prompt, 6 prefilled at step 0) needs a block at step 1
# when none is free and it is the last running request: it preempts itself, and the
# running loop stops.
SELF = [(0, 2, 8), (0, 8, 2)]
SELF_CFG = dict(block_size=2, budget=8, max_model_len=64)


@pytest.mark.parametrize("policy", ["send", "cached"])
def test_preemption_in_the_middle_of_chunked_prefill(policy):
    run = drive(policy, config(8, **MID_CFG), MID)
    r0_id, r1_id = (r.req_id for r in sorted(run.sched.requests.values(),
                                             key=lambda r: r.index))
    assert run.sched.preemptions == [(5, r1_id, 9)]
    plan = run.plans[5]
    assert plan.step == 5 and [r.req_id for r in plan.preempted] == [r1_id]
    assert list(plan.num_scheduled_tokens) == [r0_id]  # the victim was not scheduled
    entries = resumed_entries(run)
    assert len(entries) == 1
    k, i, _ = entries[0]
    so = run.outputs[k]
    n = so.num_scheduled_tokens[r1_id]
    assert so.scheduled_cached_reqs.num_computed_tokens[i] == 0
    if policy == "send":
        assert so.scheduled_cached_reqs.new_token_ids[i] == \
            run.sched.requests[r1_id].prompt_token_ids[:n]
    ref = drive("cached", config(PLENTY, **MID_CFG), MID)
    assert run.digest == ref.digest


@pytest.mark.parametrize("policy", ["send", "cached"])
def test_request_preempting_itself_stops_the_running_loop(policy):
    run = drive(policy, config(5, **SELF_CFG), SELF)
    r0_id, r1_id = (r.req_id for r in sorted(run.sched.requests.values(),
                                             key=lambda r: r.index))
    assert run.sched.preemptions[0] == (1, r1_id, 6)
    plan = run.plans[1]
    assert [r.req_id for r in plan.preempted] == [r1_id]
    assert list(plan.num_scheduled_tokens) == [r0_id]
    ref = drive("cached", config(PLENTY, **SELF_CFG), SELF)
    assert run.digest == ref.digest


def test_preempted_requests_go_to_the_front_of_the_waiting_queue():
    # Three 4-token prompts, one 4-token block each, 3 blocks; r3 arrives at step 1.
    # At step 1 r0 needs a 2nd block: r2 (the last running) is preempted; then r1
    # needs one and preempts itself. Each goes to the front, so r1 ends up first, and
    # no waiting request is scheduled in a step that preempted.
    cfg = config(3, block_size=4, budget=16, max_model_len=64)
    sched = Scheduler(cfg, "cached")
    runner = ModelRunner(cfg, MODEL, "cached")
    wl = workload([(0, 4, 8), (0, 4, 8), (0, 4, 8), (1, 4, 8)])
    for _ in range(2):
        for r in wl.arrivals(sched.step):
            sched.add_request(r.req_id, r.index, r.prompt_token_ids, r.max_tokens)
        plan = sched.schedule()
        sched.update_from_output(plan, runner.execute_model(sched.build_scheduler_output(plan)))
    ids = [r.req_id for r in sorted(sched.requests.values(), key=lambda r: r.index)]
    assert [r.req_id for r in plan.preempted] == [ids[2], ids[1]]
    assert sched.preemptions == [(1, ids[2], 4), (1, ids[1], 4)]
    assert [r.req_id for r in sched.waiting] == [ids[1], ids[2], ids[3]]
    assert all(sched.requests[i].status == RequestStatus.PREEMPTED for i in ids[1:3])
    assert sched.requests[ids[3]].status == RequestStatus.WAITING
    assert [r.req_id for r in sched.running] == [ids[0]]
    assert list(plan.num_scheduled_tokens) == [ids[0]]
    assert sched.kv_cache.num_free_blocks == 1
    assert runner.input_batch.req_ids == [ids[0]]
    assert set(runner.requests) == set(ids[:3])  # preempted states are kept


def test_request_larger_than_the_cache_is_an_error():
    # 4-token prompt fits 2 blocks of 4 (prompt + 1 token), but at 9 tokens it would
    # need a 3rd block, more than the cache has: preempting others cannot help.
    cfg = config(2, block_size=4, budget=16, max_model_len=64)
    with pytest.raises(SchedulerError) as info:
        drive("cached", cfg, [(0, 4, 10)])
    assert str(info.value) == (
        "request cmpl-0335886941cc99793c5d68a67ef66417-0 needs 3 KV blocks for 9 tokens at "
        "step 5 and the cache has only 2 (block_size 4); raise num_blocks")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(block_size=st.sampled_from([1, 2, 4, 8]), budget=st.integers(2, 40),
       max_model_len=st.sampled_from([16, 32, 64]), max_num_seqs=st.integers(1, 6),
       spare_blocks=st.integers(0, 12), data=st.data())
def test_random_workloads_with_a_tiny_cache(block_size, budget, max_model_len, max_num_seqs,
                                            spare_blocks, data):
    reqs = data.draw(st.lists(
        st.tuples(st.integers(0, 6), st.integers(1, max_model_len - 1), st.integers(1, 40)),
        min_size=1, max_size=6))
    # Enough blocks for the largest request alone (admission: prompt + 1 tokens; at its
    # last step: all its tokens but the last), so that every request can finish.
    largest = max(max(p + 1, min(p + m - 1, max_model_len - 1)) for _, p, m in reqs)
    num_blocks = -(-largest // block_size) + spare_blocks
    kw = dict(block_size=block_size, budget=budget, max_model_len=max_model_len,
              max_num_seqs=max_num_seqs)
    ref = drive("cached", config(PLENTY, **kw), reqs)
    for policy in ("send", "cached"):
        run = drive(policy, config(num_blocks, **kw), reqs)
        assert run.digest == ref.digest
        for req in run.sched.requests.values():
            assert len(req.output_token_ids) == min(req.max_tokens,
                                                    max_model_len - req.num_prompt_tokens)


def _message(new=(), cached=(), policy="cached", finished=()):
    """A SchedulerOutput by hand: ``new``: (req_id, prompt, blocks, n);
    ``cached``: (req_id, num_computed, new_token_ids, new_blocks, n, resumed)."""
    new_reqs = [NewRequestData(r, p, SamplingParams(max_tokens=100), (b,), 0)
                for r, p, b, _ in new]
    num_scheduled = {r: n for r, _, _, n in new}
    num_scheduled.update({c[0]: c[4] for c in cached})
    data = CachedRequestData(
        req_ids=[c[0] for c in cached], resumed_from_preemption=[c[5] for c in cached],
        new_token_ids=[c[2] for c in cached] if policy == "send" else [],
        new_block_ids=[(c[3],) for c in cached], num_computed_tokens=[c[1] for c in cached])
    return SchedulerOutput(new_reqs, data, num_scheduled, sum(num_scheduled.values()), {}, {},
                           [0], set(finished), [], {})


@pytest.mark.parametrize("policy", ["send", "cached"])
def test_runner_re_adds_a_request_left_out_for_a_step(policy):
    """A running request the scheduler leaves out for a step (not preempted) leaves the
    persistent batch and comes back from its kept state with the same tokens."""
    cfg = config(16, block_size=4, budget=16, max_model_len=64)
    pa, pb = [11, 12, 13], [21, 22, 23]

    def first_steps(skip_b: bool) -> tuple[int, ModelRunner]:
        runner = ModelRunner(cfg, MODEL, policy)
        out = runner.execute_model(_message(new=[("a", pa, [0], 3), ("b", pb, [1], 3)],
                                            policy=policy))
        ta0, tb0 = out.sampled_token_ids[0][0], out.sampled_token_ids[1][0]
        step1 = [("a", 3, [ta0], [], 1, False)]
        if not skip_b:
            step1.append(("b", 3, [tb0], [], 1, False))
        out = runner.execute_model(_message(cached=step1, policy=policy))
        ta1 = out.sampled_token_ids[out.req_id_to_index["a"]][0]
        if skip_b:
            assert runner.input_batch.req_ids == ["a"] and "b" in runner.requests
            out = runner.execute_model(_message(
                cached=[("a", 4, [ta1], [], 1, False), ("b", 3, [tb0], [5], 1, False)],
                policy=policy))
            assert runner.requests["b"].block_ids == [1, 5]
        return out.sampled_token_ids[out.req_id_to_index["b"]][0], runner

    tb1_skipped, runner = first_steps(skip_b=True)
    tb1, _ = first_steps(skip_b=False)
    assert tb1_skipped == tb1
    row = runner.input_batch.req_id_to_index["b"]
    assert runner.input_batch.block_table[row, :2].tolist() == [1, 5]


@pytest.mark.parametrize("policy", ["send", "cached"])
def test_runner_takes_a_resumed_request_still_in_its_batch_out_first(policy):
    """A request resumed from preemption with no step in between that left it out
    (async scheduling: it was preempted in a step that scheduled nothing and was not
    sent) is still in the persistent batch: the runner takes it out and re-adds it
    from its kept state with its replacement block ids (vLLM: unscheduled = in batch -
    (scheduled - resumed)). Its recompute samples the id it would have sampled had it
    never been preempted."""
    cfg = config(16, block_size=4, budget=16, max_model_len=64)
    pa, pb = [11, 12, 13], [21, 22, 23]

    def two_steps(async_scheduling: bool = True) -> tuple[ModelRunner, int, int, int]:
        runner = ModelRunner(cfg, MODEL, policy, async_scheduling=async_scheduling)
        out = runner.execute_model(_message(new=[("a", pa, [0], 3), ("b", pb, [1], 3)],
                                            policy=policy))
        ta0, tb0 = out.sampled_token_ids[0][0], out.sampled_token_ids[1][0]
        out = runner.execute_model(_message(
            cached=[("a", 3, [ta0], [], 1, False), ("b", 3, [tb0], [2], 1, False)],
            policy=policy))
        ta1, tb1 = (out.sampled_token_ids[out.req_id_to_index[r]][0] for r in "ab")
        return runner, ta1, tb0, tb1

    runner, ta1, tb0, tb1 = two_steps()
    out = runner.execute_model(_message(
        cached=[("a", 4, [ta1], [], 1, False), ("b", 4, [tb1], [], 1, False)], policy=policy))
    tb2 = out.sampled_token_ids[out.req_id_to_index["b"]][0]

    runner, ta1, tb0, tb1 = two_steps()
    assert runner.input_batch.req_ids == ["a", "b"]
    out = runner.execute_model(_message(
        cached=[("a", 4, [ta1], [], 1, False), ("b", 0, pb + [tb0, tb1], [7, 8], 5, True)],
        policy=policy))
    assert out.sampled_token_ids[out.req_id_to_index["b"]] == [tb2]
    assert runner.requests["b"].block_ids == [7, 8]
    row = runner.input_batch.req_id_to_index["b"]
    assert runner.input_batch.block_table[row, :2].tolist() == [7, 8]
    # under send the sampled id comes in the next step's new_token_ids
    known = [tb0, tb1, tb2] if policy == "cached" else [tb0, tb1]
    assert runner.input_batch.token_ids_cpu[row, :3 + len(known)].tolist() == pb + known
    assert runner.requests["b"].output_token_ids == known
    # synchronous scheduling sends every step, the one that left b out among them: b
    # resumed while still in the batch is the scheduler's bookkeeping bug, refused
    runner, ta1, tb0, tb1 = two_steps(async_scheduling=False)
    with pytest.raises(ProtocolError, match="^request b resumed from preemption is still "
                                            "in the persistent batch$"):
        runner.execute_model(_message(
            cached=[("a", 4, [ta1], [], 1, False), ("b", 0, pb + [tb0, tb1], [7, 8], 5,
                                                    True)], policy=policy))


# ------------------------------------------------------------------ whole cases


def case(policy: str, codec: str, num_blocks: int, transport: str = "ipc") -> CaseSpec:
    return CaseSpec(scenario="test-preemption", labels={"w": "mixed"}, policy=policy,
                    codec=codec, scheduler=config(num_blocks, **MIXED_CFG), model=MODEL,
                    make_workload=lambda: workload(MIXED), warmup_steps=0, floor=False,
                    peer_timeout_s=20.0, transport=transport)


def test_run_case_digests_equal_across_policies_codecs_and_cache_sizes():
    summaries = {}
    for codec in ("msgpack", "pickle"):
        for policy in ("send", "cached"):
            result = run_case(case(policy, codec, MIXED_TINY_BLOCKS))
            assert result.error is None
            summaries[(policy, codec)] = s = summarize_case(result)
            steps = np.asarray(result.sched_rows, dtype=np.int64)
            preempted = int(steps[:, SCHED_COLUMNS.index("num_preempted")].sum())
            resumed = int(steps[:, SCHED_COLUMNS.index("num_resumed")].sum())
            assert s["num_preemptions"] == preempted == resumed > 0
            assert sum(r["preemptions"] for r in result.requests) == preempted
            assert s["num_finished"] == len(MIXED)
    for policy in ("send", "cached"):  # single process: the messages are not copied
        summaries[(policy, "none")] = summarize_case(
            run_case(case(policy, "none", MIXED_TINY_BLOCKS, transport="inproc")))
    reference = summarize_case(run_case(case("cached", "msgpack", PLENTY)))
    assert reference["num_preemptions"] == 0
    in_process = drive("send", config(MIXED_TINY_BLOCKS, **MIXED_CFG), MIXED)
    counts = {s["num_preemptions"] for s in summaries.values()}
    assert counts == {in_process.sched.num_preemptions}
    digests = {s["token_digest"] for s in summaries.values()}
    assert digests == {reference["token_digest"]} == {in_process.digest}
