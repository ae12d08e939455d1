"""Scheduler logic driven by hand, without sockets (ipc_bench.engine.scheduler).

The scheduler is a plain object: each test calls ``schedule()``,
``build_scheduler_output()`` and ``update_from_output()`` itself and answers with a
hand-made ``ModelRunnerOutput`` (``fake_output``) or a real in-process ``ModelRunner``.
Expected values are worked out by hand from the rules of vLLM 7f280d69c quoted in
ipc_bench/scheduler.py.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipc_bench.engine.config import ModelConfig, SchedulerConfig
from ipc_bench.engine.messages import ModelRunnerOutput, SchedulerOutput
from ipc_bench.engine.model_runner import ModelRunner
from ipc_bench.engine.scheduler import (
    ProtocolError,
    RequestStatus,
    Scheduler,
    SchedulePlan,
)

POLICIES = ("send", "cached")


def config(**kw) -> SchedulerConfig:
    base = dict(max_num_seqs=4, max_num_batched_tokens=16, max_model_len=64, block_size=4,
                num_blocks=64)
    base.update(kw)
    return SchedulerConfig(**base)


def prompt(n: int, start: int = 1) -> list[int]:
    return list(range(start, start + n))


def token_for(step: int, req_id: str) -> int:
    """The token the fake runner samples: distinct per (step, request)."""
    return 100_000 + 1000 * step + sum(map(ord, req_id))


def fake_output(sched: Scheduler, plan: SchedulePlan) -> ModelRunnerOutput:
    """What a correct runner answers: one token for each request whose prompt is fully
    computed after this step, nothing for a partial prefill."""
    req_ids = list(plan.num_scheduled_tokens)
    sampled = []
    for req_id in req_ids:
        req = sched.requests[req_id]
        done = req.num_computed_tokens >= req.num_tokens
        sampled.append([token_for(plan.step, req_id)] if done else [])
    return ModelRunnerOutput(req_ids=req_ids,
                             req_id_to_index={r: i for i, r in enumerate(req_ids)},
                             sampled_token_ids=sampled)


def step(sched: Scheduler):
    """One step with the fake runner: (plan, SchedulerOutput, finished requests)."""
    plan = sched.schedule()
    so = sched.build_scheduler_output(plan)
    finished = sched.update_from_output(plan, fake_output(sched, plan))
    return plan, so, finished


# --- token budget and max_num_seqs -----------------------------------------------------


@pytest.mark.parametrize("policy", POLICIES)
def test_token_budget_and_max_num_seqs(policy):
    sched = Scheduler(config(), policy)
    for i, name in enumerate("ABCDEF"):
        sched.add_request(name, i, prompt(5, 10 * i), max_tokens=2 if name == "A" else 10)

    plan, so, fin = step(sched)  # step 0: A, B, C whole; D gets the last budget token
    assert plan.num_scheduled_tokens == {"A": 5, "B": 5, "C": 5, "D": 1}
    assert plan.total_num_scheduled_tokens == so.total_num_scheduled_tokens == 16
    assert [r.req_id for r in plan.new_reqs] == ["A", "B", "C", "D"]
    assert [n.req_id for n in so.scheduled_new_reqs] == ["A", "B", "C", "D"]
    assert [r.req_id for r in sched.waiting] == ["E", "F"]
    assert fin == []

    plan, so, fin = step(sched)  # step 1: 4 running = max_num_seqs, budget left unused
    assert plan.num_scheduled_tokens == {"A": 1, "B": 1, "C": 1, "D": 4}
    assert plan.total_num_scheduled_tokens == 7
    assert plan.new_reqs == []
    assert so.scheduled_cached_reqs.req_ids == ["A", "B", "C", "D"]
    assert [r.req_id for r in fin] == ["A"]  # max_tokens=2 reached
    assert [r.req_id for r in sched.waiting] == ["E", "F"]

    plan, so, fin = step(sched)  # step 2: A's slot goes to E
    assert plan.num_scheduled_tokens == {"B": 1, "C": 1, "D": 1, "E": 5}
    assert so.finished_req_ids == {"A"}
    assert [r.req_id for r in sched.running] == ["B", "C", "D", "E"]

    plan, so, fin = step(sched)  # step 3: full again, F keeps waiting
    assert plan.num_scheduled_tokens == {"B": 1, "C": 1, "D": 1, "E": 1}
    assert so.finished_req_ids == set()
    assert [r.req_id for r in sched.waiting] == ["F"]


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1),
       budget=st.integers(4, 40),
       max_num_seqs=st.integers(1, 6),
       policy=st.sampled_from(POLICIES))
def test_limits_hold_on_random_workloads(seed, budget, max_num_seqs, policy):
    """Every step: budget and max_num_seqs respected; ``send``'s new_token_ids are the
    exact slice; ``cached`` sends ``[]``; every request ends with its output length."""
    max_num_seqs = min(max_num_seqs, budget)
    rng = random.Random(seed)
    cfg = config(max_num_seqs=max_num_seqs, max_num_batched_tokens=budget, max_model_len=48,
                 num_blocks=max_num_seqs * 12)
    sched = Scheduler(cfg, policy)
    specs = [(f"r{i}", rng.randint(1, 50), rng.randint(1, 20)) for i in range(10)]
    for i, (rid, plen, mt) in enumerate(specs):
        sched.add_request(rid, i, prompt(plen, 1000 * i), mt)
    for _ in range(2000):
        if not sched.has_unfinished_requests():
            break
        plan = sched.schedule()
        # num_computed_tokens advanced in schedule(); take the pre-step values back.
        before = {rid: sched.requests[rid].num_computed_tokens - n
                  for rid, n in plan.num_scheduled_tokens.items()}
        snapshot = {rid: list(sched.requests[rid].all_token_ids)
                    for rid in plan.num_scheduled_tokens}
        so = sched.build_scheduler_output(plan)
        assert 0 < so.total_num_scheduled_tokens <= budget
        assert so.total_num_scheduled_tokens == sum(so.num_scheduled_tokens.values())
        assert len(sched.running) <= max_num_seqs
        assert len(so.num_scheduled_tokens) <= max_num_seqs
        cached = so.scheduled_cached_reqs
        assert cached.num_computed_tokens == [before[r] for r in cached.req_ids]
        assert cached.resumed_from_preemption == [False] * len(cached.req_ids)
        if policy == "send":
            assert cached.new_token_ids == [
                snapshot[r][before[r]:before[r] + so.num_scheduled_tokens[r]]
                for r in cached.req_ids]
        else:
            assert cached.new_token_ids == []
        for rid, n in so.num_scheduled_tokens.items():
            assert before[rid] + n <= cfg.max_model_len - 1
        sched.update_from_output(plan, fake_output(sched, plan))
    assert not sched.has_unfinished_requests()
    for rid, plen, mt in specs:
        req = sched.requests[rid]
        if plen >= cfg.max_model_len:
            assert req.status == RequestStatus.REJECTED
            continue
        assert req.status == RequestStatus.FINISHED
        assert len(req.output_token_ids) == min(mt, cfg.max_model_len - plen)
    assert sched.kv_cache.num_free_blocks == cfg.num_blocks


# --- chunked prefill and what send / cached put on the wire ----------------------------


@pytest.mark.parametrize("policy", POLICIES)
def test_chunked_prefill(policy):
    sched = Scheduler(config(), policy)  # budget 16, block_size 4
    p = prompt(40, 500)
    sched.add_request("L", 0, p, max_tokens=3)

    plan, so, _ = step(sched)
    assert plan.num_scheduled_tokens == {"L": 16}
    (new,) = so.scheduled_new_reqs
    assert new.req_id == "L" and new.prompt_token_ids == p
    assert new.block_ids == ([0, 1, 2, 3],) and new.num_computed_tokens == 0
    assert so.scheduled_cached_reqs.req_ids == []
    assert so.scheduled_cached_reqs.new_token_ids == []
    req = sched.requests["L"]
    assert req.all_token_ids[:] == p and req.first_token_step == -1  # nothing sampled

    plan, so, _ = step(sched)
    c = so.scheduled_cached_reqs
    assert plan.num_scheduled_tokens == {"L": 16}
    assert c.req_ids == ["L"] and c.num_computed_tokens == [16]
    assert c.new_block_ids == [([4, 5, 6, 7],)]
    assert c.new_token_ids == ([p[16:32]] if policy == "send" else [])
    assert req.all_token_ids[:] == p

    plan, so, _ = step(sched)  # last chunk: 8 tokens, the first token is sampled
    c = so.scheduled_cached_reqs
    assert plan.num_scheduled_tokens == {"L": 8}
    assert c.num_computed_tokens == [32] and c.new_block_ids == [([8, 9],)]
    assert c.new_token_ids == ([p[32:40]] if policy == "send" else [])
    t2 = token_for(2, "L")
    assert req.all_token_ids[:] == p + [t2] and req.first_token_step == 2

    plan, so, _ = step(sched)  # decode: send ships the token sampled last step
    c = so.scheduled_cached_reqs
    assert plan.num_scheduled_tokens == {"L": 1}
    assert c.num_computed_tokens == [40] and c.new_block_ids == [([10],)]  # token 41 -> block 11
    assert c.new_token_ids == ([[t2]] if policy == "send" else [])


def test_token_sampled_for_a_partial_prefill_is_a_protocol_error():
    sched = Scheduler(config(), "send")
    sched.add_request("L", 0, prompt(40), max_tokens=3)
    plan = sched.schedule()
    bad = ModelRunnerOutput(["L"], {"L": 0}, [[7]])
    with pytest.raises(ProtocolError, match=r"^step 0: token sampled for L before its "
                                            r"prefill ended$"):
        sched.update_from_output(plan, bad)


def test_missing_row_and_two_tokens_are_protocol_errors():
    sched = Scheduler(config(), "send")
    sched.add_request("A", 0, prompt(3), max_tokens=3)
    plan = sched.schedule()
    with pytest.raises(ProtocolError, match=r"^step 0: ModelRunnerOutput has no row for A$"):
        sched.update_from_output(plan, ModelRunnerOutput([], {}, []))
    with pytest.raises(ProtocolError, match=r"^step 0: 2 tokens sampled for A, expected 1$"):
        sched.update_from_output(plan, ModelRunnerOutput(["A"], {"A": 0}, [[1, 2]]))


def test_cached_sends_exactly_one_empty_list():
    sched = Scheduler(config(), "cached")
    for i in range(3):
        sched.add_request(f"r{i}", i, prompt(3, 10 * i), max_tokens=5)
    for _ in range(4):
        _, so, _ = step(sched)
        assert so.scheduled_cached_reqs.new_token_ids == []
    assert so.scheduled_cached_reqs.req_ids == ["r0", "r1", "r2"]


# --- stop rules ------------------------------------------------------------------------


@pytest.mark.parametrize("policy", POLICIES)
def test_stop_at_max_tokens(policy):
    sched = Scheduler(config(), policy)
    sched.add_request("A", 0, prompt(5), max_tokens=3)
    outs = []
    while sched.has_unfinished_requests():
        plan, _, fin = step(sched)
        outs.append([r.req_id for r in fin])
    assert outs == [[], [], ["A"]]
    req = sched.requests["A"]
    assert req.output_token_ids == [token_for(0, "A"), token_for(1, "A"), token_for(2, "A")]
    assert (req.status, req.finish_reason, req.finish_step) == (RequestStatus.FINISHED,
                                                                "length", 2)


@pytest.mark.parametrize("policy", POLICIES)
def test_stop_at_max_model_len(policy):
    sched = Scheduler(config(max_model_len=16, max_num_batched_tokens=32), policy)
    sched.add_request("A", 0, prompt(12), max_tokens=100)  # room for 16 - 12 = 4 outputs
    sched.add_request("B", 1, prompt(15), max_tokens=100)  # room for 1 output
    steps = 0
    while sched.has_unfinished_requests():
        plan, so, _ = step(sched)
        for rid in plan.num_scheduled_tokens:
            assert sched.requests[rid].num_computed_tokens <= 16 - 1
        steps += 1
    a, b = sched.requests["A"], sched.requests["B"]
    assert (len(a.output_token_ids), a.num_tokens, a.finish_step) == (4, 16, 3)
    assert (len(b.output_token_ids), b.num_tokens, b.finish_step) == (1, 16, 0)
    assert a.finish_reason == b.finish_reason == "length"
    assert steps == 4


def test_max_model_len_minus_one_rule():
    """A running request is scheduled at most max_model_len - 1 - num_computed_tokens
    tokens (vLLM 7f280d69c; before it: max_model_len - num_computed_tokens)."""
    sched = Scheduler(config(max_model_len=16), "send")
    sched.add_request("A", 0, prompt(10), max_tokens=100)
    step(sched)  # 10 prompt tokens computed, 1 sampled
    req = sched.requests["A"]
    # Hand-made state (as a request resumed with outputs would have): 16 tokens known,
    # 12 computed. The old rule would schedule 16 - 12 = 4, leaving no room to sample.
    req._all_token_ids.extend([7, 7, 7, 7, 7])
    req.num_computed_tokens = 12
    plan = sched.schedule()
    assert plan.num_scheduled_tokens == {"A": 16 - 1 - 12}
    # At max_model_len - 1 computed tokens nothing more may be scheduled.
    sched2 = Scheduler(config(max_model_len=16), "send")
    sched2.add_request("B", 0, prompt(10), max_tokens=100)
    step(sched2)
    req2 = sched2.requests["B"]
    req2._all_token_ids.extend([7] * 5)
    req2.num_computed_tokens = 15
    assert sched2.schedule().num_scheduled_tokens == {}


# --- admission -------------------------------------------------------------------------


def test_admission_rule_rejects_and_counts():
    sched = Scheduler(config(max_model_len=16, num_blocks=64), "send")
    ok = sched.add_request("ok", 0, prompt(15), max_tokens=4)
    long_ = sched.add_request("long", 1, prompt(16), max_tokens=4)
    longer = sched.add_request("longer", 2, prompt(40), max_tokens=4)
    empty = sched.add_request("empty", 3, [], max_tokens=4)
    no_out = sched.add_request("no_out", 4, prompt(3), max_tokens=0)
    assert ok.status == RequestStatus.WAITING
    for r in (long_, longer, empty, no_out):
        assert (r.status, r.finish_reason, r.finish_step) == (RequestStatus.REJECTED,
                                                              "rejected", 0)
    assert sched.num_rejected == 4
    assert [r.req_id for r in sched.waiting] == ["ok"]
    plan = sched.schedule()
    assert plan.num_scheduled_tokens == {"ok": 15}


def test_admission_rejects_a_prompt_larger_than_the_kv_cache():
    # 8 blocks of 4 tokens hold 32 tokens: a 31-token prompt needs ceil(32/4) = 8, fits;
    # a 32-token prompt needs ceil(33/4) = 9 blocks for prompt + one sampled token.
    sched = Scheduler(config(max_model_len=64, num_blocks=8), "cached")
    assert sched.add_request("fits", 0, prompt(31), 1).status == RequestStatus.WAITING
    assert sched.add_request("big", 1, prompt(32), 1).status == RequestStatus.REJECTED
    assert sched.num_rejected == 1


def test_duplicate_request_id():
    sched = Scheduler(config(), "send")
    sched.add_request("A", 0, prompt(3), 1)
    with pytest.raises(Exception, match="duplicate req_id 'A'"):
        sched.add_request("A", 1, prompt(3), 1)


# --- KV blocks -------------------------------------------------------------------------


def test_out_of_blocks_preempts_the_last_running_request():
    """No error when blocks run out: the last running request is preempted by recompute
    (its blocks freed, back to the front of the waiting queue) and the run goes on."""
    sched = Scheduler(config(num_blocks=2, block_size=4), "send")
    sched.add_request("A", 0, prompt(4), max_tokens=10)
    sched.add_request("B", 1, prompt(4, 50), max_tokens=10)
    step(sched)  # each takes its one block; both sample
    assert sched.kv_cache.num_free_blocks == 0
    plan = sched.schedule()  # A's 5th token needs a second block: B gives its one up
    assert [r.req_id for r in plan.preempted] == ["B"]
    assert sched.preemptions == [(1, "B", 4)]
    assert plan.num_scheduled_tokens == {"A": 1}
    assert [r.req_id for r in sched.waiting] == ["B"]
    b = sched.requests["B"]
    assert (b.status, b.num_computed_tokens, b.block_ids) == (RequestStatus.PREEMPTED, 0, [])
    assert b.all_token_ids[:] == prompt(4, 50) + [token_for(0, "B")]  # its output is kept


@pytest.mark.parametrize("policy", POLICIES)
def test_finished_ids_next_step_and_blocks_freed(policy):
    cfg = config(num_blocks=16, block_size=4)
    sched = Scheduler(cfg, policy)
    sched.add_request("A", 0, prompt(6), max_tokens=1)   # finishes at step 0
    sched.add_request("B", 1, prompt(6), max_tokens=3)   # finishes at step 2
    plan, so, fin = step(sched)
    assert so.finished_req_ids == set() and [r.req_id for r in fin] == ["A"]
    # A held ceil(6/4) = 2 blocks: back in the pool at once; B still holds 2.
    assert sched.requests["A"].block_ids == []
    assert sched.kv_cache.num_free_blocks == 16 - 2
    assert sched.finished_req_ids == {"A"}
    plan, so, fin = step(sched)
    assert so.finished_req_ids == {"A"} and fin == []
    assert plan.num_scheduled_tokens == {"B": 1}
    plan, so, fin = step(sched)
    assert so.finished_req_ids == set() and [r.req_id for r in fin] == ["B"]
    assert sched.kv_cache.num_free_blocks == 16
    sched.add_request("C", 2, prompt(2), max_tokens=1)
    plan, so, fin = step(sched)
    assert so.finished_req_ids == {"B"}
    # FIFO free list: the 12 never-used blocks first, then A's, then B's.
    assert so.scheduled_new_reqs[0].block_ids == ([4],)


# --- with a real runner in-process -----------------------------------------------------


@pytest.mark.parametrize("policy", POLICIES)
def test_with_real_runner(policy):
    cfg = config(max_num_seqs=3, max_num_batched_tokens=12, max_model_len=32, num_blocks=40)
    sched = Scheduler(cfg, policy)
    runner = ModelRunner(cfg, ModelConfig(), policy)
    lens = [(20, 5), (3, 9), (7, 2), (30, 4), (5, 6)]
    for i, (plen, mt) in enumerate(lens):
        sched.add_request(f"r{i}", i, prompt(plen, 37 * i), mt)
    while sched.has_unfinished_requests():
        plan = sched.schedule()
        so: SchedulerOutput = sched.build_scheduler_output(plan)
        out = runner.execute_model(so)
        assert out.req_ids == runner.input_batch.req_ids
        sched.update_from_output(plan, out)
    for i, (plen, mt) in enumerate(lens):
        req = sched.requests[f"r{i}"]
        assert len(req.output_token_ids) == min(mt, 32 - plen)
        state = runner.requests.get(req.req_id)  # finished ones leave with the next step
        if state is not None:
            # send: the last sampled token would only reach the runner with the next step.
            known = req.output_token_ids[:-1] if policy == "send" else req.output_token_ids
            assert state.output_token_ids == known
    assert sched.kv_cache.num_free_blocks == cfg.num_blocks
