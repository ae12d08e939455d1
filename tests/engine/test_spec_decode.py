"""Speculative decoding in the engine (``--num-spec-tokens``), driven by hand.

- The scheduler schedules 1 + K tokens per decoding request, its drafts in
  ``scheduled_spec_decode_tokens``, cut by ``max_model_len`` and the token budget as
  vLLM does; ``send``'s ``new_token_ids`` leave the drafts out; rejected positions are
  rolled back from ``num_computed_tokens``.
- The runner writes drafts into its row, verifies them, keeps accepted ids + the
  bonus token and proposes the next drafts; with acceptance 1 every draft is accepted,
  with 0 none, and the same seed gives the same drafts under both policies.
- Token streams with drafts equal those without, for K = 1, 2, 4, both policies, both
  message sets, with chunked prefill, max_model_len stops and preemption.
- What is refused: too many ids back, the torch model, async scheduling.
"""

from __future__ import annotations

import numpy as np
import pytest

from ipc_bench.engine.config import ConfigError, ModelConfig, SchedulerConfig
from ipc_bench.engine.messages import STRUCTS, VLLM_DATACLASSES
from ipc_bench.engine.model_runner import ModelRunner
from ipc_bench.engine.scheduler import ProtocolError, Scheduler


def config(k: int, **kw) -> SchedulerConfig:
    base = dict(max_num_seqs=8, max_num_batched_tokens=8192, max_model_len=64, block_size=4,
                num_blocks=400, num_spec_tokens=k)
    base.update(kw)
    return SchedulerConfig(**base)


def pair(k: int, policy: str = "cached", acceptance: float = 0.7, messages=STRUCTS, **kw):
    sc = config(k, **kw)
    return (Scheduler(sc, policy, messages),
            ModelRunner(sc, ModelConfig(spec_acceptance=acceptance), policy, messages))


def add(sched: Scheduler, n: int = 6) -> None:
    rng = np.random.default_rng(1)
    for i in range(n):
        sched.add_request(f"r{i}", i, rng.integers(0, 1000, 5 + 7 * i).tolist(), 10 + 13 * i)


def drain(sched: Scheduler, runner: ModelRunner, check_buffer: bool = True):
    """Run to the end; after each step, check that the runner's row of every running
    request holds the scheduler's tokens (the accepted ids were written) and that
    ``num_computed_tokens`` is one behind ``num_tokens`` for decoding requests."""
    steps = []
    while sched.has_unfinished_requests():
        plan = sched.schedule()
        so = sched.build_scheduler_output(plan)
        out = runner.execute_model(so)
        sched.update_from_output(plan, out)
        steps.append((plan, so, out))
        if check_buffer and runner.tokens_from_scheduler is False:
            batch = runner.input_batch
            for req in sched.running:
                row = batch.req_id_to_index.get(req.req_id)
                if row is None or req.num_computed_tokens != req.num_tokens - 1:
                    continue
                assert batch.token_ids_cpu[row, :req.num_tokens].tolist() == req.all_token_ids
    return {r.req_id: r.output_token_ids for r in sched.requests.values()}, steps


@pytest.fixture(scope="module")
def base_streams():
    sched, runner = pair(0, "send")
    add(sched)
    return drain(sched, runner)[0]


@pytest.mark.parametrize("k", [1, 2, 4])
@pytest.mark.parametrize("policy", ["send", "cached"])
@pytest.mark.parametrize("messages", [STRUCTS, VLLM_DATACLASSES], ids=["structs", "dataclasses"])
def test_token_streams_equal_those_without_drafts(base_streams, k, policy, messages):
    sched, runner = pair(k, policy, messages=messages)
    add(sched)
    streams, steps = drain(sched, runner)
    assert streams == base_streams
    # every token once: max_tokens 10 + 13 i, or up to max_model_len 64 from prompts of 5 + 7 i
    assert [len(streams[f"r{i}"]) for i in range(6)] == [10, 23, 36, 38, 31, 24]
    assert any(so.scheduled_spec_decode_tokens for _, so, _ in steps)


@pytest.mark.parametrize("policy", ["send", "cached"])
@pytest.mark.parametrize("limits", [dict(num_blocks=30), dict(max_num_batched_tokens=7)],
                         ids=["preemption", "chunked-prefill"])
def test_streams_equal_through_chunked_prefill_and_preemption(base_streams, policy, limits):
    sched, runner = pair(3, policy, **limits)
    add(sched)
    streams, steps = drain(sched, runner)
    assert streams == base_streams
    if "num_blocks" in limits:
        assert sched.num_preemptions > 0
    else:  # prompts of up to 40 tokens in chunks of at most 7
        assert any(len(so.scheduled_new_reqs) and so.total_num_scheduled_tokens == 7
                   for _, so, _ in steps)
    assert any(len(o.sampled_token_ids[o.req_id_to_index[r]]) > 1
               for _, so, o in steps for r in so.scheduled_spec_decode_tokens)


def test_acceptance_one_accepts_every_draft_and_zero_none():
    for acceptance, expect in ((1.0, 4), (0.0, 0)):
        sched, runner = pair(4, "cached", acceptance)
        add(sched, 2)
        _, steps = drain(sched, runner)
        for _, so, out in steps:
            for req_id, drafts in so.scheduled_spec_decode_tokens.items():
                ids = out.sampled_token_ids[out.req_id_to_index[req_id]]
                assert len(ids) == min(expect, len(drafts)) + 1
                assert ids[:-1] == drafts[:len(ids) - 1]


def test_drafts_are_seeded_and_the_same_under_both_policies():
    drafts = {}
    for policy in ("send", "cached"):
        sched, runner = pair(2, policy)
        add(sched, 3)
        _, steps = drain(sched, runner)
        drafts[policy] = [so.scheduled_spec_decode_tokens for _, so, _ in steps]
    assert drafts["send"] == drafts["cached"]
    assert sum(len(d) for step in drafts["send"] for d in step.values()) > 50


def test_one_decode_step_by_hand():
    """Two requests decode; the second step schedules 1 + 2 tokens each, the message
    carries the drafts, send's slice is the one real token, and the runner's ids
    roll num_computed_tokens back by the rejected drafts."""
    sched, runner = pair(2, "send", acceptance=0.7)
    sched.add_request("a", 0, [5, 6, 7], 20)
    sched.add_request("b", 1, [8, 9], 20)
    plan = sched.schedule()  # prefill: no drafts yet
    so = sched.build_scheduler_output(plan)
    assert so.scheduled_spec_decode_tokens == {}
    out = runner.execute_model(so)
    assert [len(d) for d in out.spec_token_ids] == [2, 2]  # drafts for the next step
    sched.update_from_output(plan, out)
    a, b = sched.requests["a"], sched.requests["b"]
    assert a.spec_token_ids == out.spec_token_ids[0]

    plan = sched.schedule()
    so = sched.build_scheduler_output(plan)
    assert so.num_scheduled_tokens == {"a": 3, "b": 3}
    assert so.total_num_scheduled_tokens == 6
    assert so.scheduled_spec_decode_tokens == {"a": out.spec_token_ids[0],
                                               "b": out.spec_token_ids[1]}
    # vLLM before #20291: all_token_ids[nc : nc + num_scheduled - num_spec]
    assert so.scheduled_cached_reqs.new_token_ids == [[a.all_token_ids[3]],
                                                      [b.all_token_ids[2]]]
    assert plan.is_decode_only
    nc_before = [a.num_computed_tokens, b.num_computed_tokens]  # 3 + 3, 2 + 3 after schedule
    out = runner.execute_model(so)
    sched.update_from_output(plan, out)
    for req, before, ids in zip((a, b), nc_before, out.sampled_token_ids):
        assert 1 <= len(ids) <= 3
        assert req.num_computed_tokens == before - (3 - len(ids))
        assert req.num_computed_tokens == req.num_tokens - 1


def test_max_model_len_and_the_budget_cut_the_drafts():
    sched, runner = pair(4, "cached", acceptance=0.0, max_model_len=16)
    sched.add_request("a", 0, list(range(1, 13)), 100)  # 12 prompt tokens
    plan = sched.schedule()
    sched.update_from_output(plan, runner.execute_model(sched.build_scheduler_output(plan)))
    # 13 tokens, 12 computed: at most max_model_len - 1 - 12 = 3 tokens, so 2 drafts
    plan = sched.schedule()
    so = sched.build_scheduler_output(plan)
    assert so.num_scheduled_tokens == {"a": 3}
    assert len(so.scheduled_spec_decode_tokens["a"]) == 2

    sched, runner = pair(4, "cached", acceptance=0.0, max_num_batched_tokens=3)
    sched.add_request("a", 0, [1, 2], 100)
    plan = sched.schedule()
    sched.update_from_output(plan, runner.execute_model(sched.build_scheduler_output(plan)))
    plan = sched.schedule()
    so = sched.build_scheduler_output(plan)
    assert so.num_scheduled_tokens == {"a": 3}  # the budget: 1 + 2 of the 4 drafts
    assert len(so.scheduled_spec_decode_tokens["a"]) == 2


def test_more_ids_than_drafts_plus_one_is_a_protocol_error():
    sched, runner = pair(2, "cached")
    sched.add_request("a", 0, [1, 2, 3], 20)
    plan = sched.schedule()
    sched.update_from_output(plan, runner.execute_model(sched.build_scheduler_output(plan)))
    plan = sched.schedule()
    out = runner.execute_model(sched.build_scheduler_output(plan))
    out.sampled_token_ids[0] = [1, 2, 3, 4]
    with pytest.raises(ProtocolError, match=r"4 tokens sampled for a, expected 1 to 3 "
                                            r"\(2 drafts\)"):
        sched.update_from_output(plan, out)


def test_torch_model_is_refused_and_bad_settings_too():
    sc = config(2)
    with pytest.raises(ConfigError, match="needs a model whose drafts can be verified"):
        ModelRunner(sc, ModelConfig(name="torch", preset="tiny", device="cpu"), "cached")
    with pytest.raises(ConfigError, match="needs a model whose drafts can be verified"):
        ModelRunner(sc, ModelConfig(name="torch", preset="tiny", device="cpu"), "cached",
                    async_scheduling=True)
    with pytest.raises(ConfigError, match=r"num_spec_tokens \(--num-spec-tokens\) must be in "
                                          r"\[0, 32\], got 33"):
        config(33).validate()
    with pytest.raises(ConfigError, match=r"spec_acceptance \(--spec-acceptance\) must be in"):
        ModelConfig(spec_acceptance=1.5).validate()
