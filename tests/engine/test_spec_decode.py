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
- The torch model: its tokens with drafts equal those without (float32 on CPU; with
  ``--attention flex`` in test_paged_attention.py, whose flex kernels it shares), its
  drafter (the target run ahead) is accepted at P = 1 always and at P = 0 never, and
  writes K/V only into lookahead slots that the next verification overwrites; the
  scheduler allocates those slots (``num_lookahead_tokens``).
- What is refused: too many ids back, the device-input path (async scheduling with
  drafts runs on the host path), a torch drafter without lookahead slots.
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
                assert batch.token_ids_cpu[row, :req.num_tokens].tolist() == req.all_token_ids[:]
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


def test_the_device_input_path_and_a_torch_drafter_without_lookahead_are_refused():
    sc = config(2)
    with pytest.raises(ConfigError) as err:
        ModelRunner(config(2, num_lookahead_tokens=2), TORCH, "cached", device_inputs=True,
                    async_scheduling=True)
    assert str(err.value) == ("the device-input path takes no draft tokens: the torch model "
                              "with --num-spec-tokens runs async scheduling on the host path")
    runner = ModelRunner(config(2, num_lookahead_tokens=2), TORCH, "cached",
                         async_scheduling=True)  # the host path (async_spec)
    assert runner.async_spec and runner.device_ids is None
    with pytest.raises(ConfigError) as err:
        ModelRunner(sc, TORCH, "cached")
    assert str(err.value) == ("the torch model's drafter writes K/V 2 positions ahead: "
                              "num_lookahead_tokens must be 2, got 0")
    with pytest.raises(ConfigError) as err:
        config(2, num_lookahead_tokens=3).validate()
    assert str(err.value) == "num_lookahead_tokens must be in [0, num_spec_tokens 2], got 3"


def test_lookahead_slots_are_allocated_past_the_scheduled_tokens_up_to_max_model_len():
    """vLLM ``allocate_slots(num_lookahead_tokens=...)``: blocks for the scheduled tokens
    + the lookahead, capped at ``max_model_len``, for new and running requests."""
    blocks = {}
    for lookahead in (0, 2):
        sched = Scheduler(config(2, num_lookahead_tokens=lookahead, max_model_len=16),
                          "cached")
        sched.add_request("a", 0, list(range(1, 8)), 100)  # 7 tokens (+ 2: 9)
        sched.add_request("b", 1, list(range(1, 16)), 100)  # 15 tokens (+ 2, capped: 16)
        sched.schedule()
        blocks[lookahead] = [len(sched.requests[r].block_ids) for r in ("a", "b")]
    assert blocks == {0: [2, 4], 2: [3, 4]}


# The torch model (tiny preset, float32 on CPU): a vocabulary of 512 keeps it fast.
TORCH = ModelConfig(name="torch", preset="tiny", device="cpu", vocab_size=512)


def torch_pair(k: int, policy: str = "cached", acceptance: float = 0.7,
               attention: str = "auto", **kw):
    sc = config(k, num_lookahead_tokens=k, **kw)
    model = ModelConfig(**{**{f: getattr(TORCH, f) for f in TORCH.__struct_fields__},
                           "spec_acceptance": acceptance, "attention": attention})
    return Scheduler(sc, policy), ModelRunner(sc, model, policy)


def add_torch(sched: Scheduler, n: int = 6) -> None:
    rng = np.random.default_rng(1)
    for i in range(n):
        sched.add_request(f"r{i}", i, rng.integers(0, 512, 5 + 7 * i).tolist(), 10 + 13 * i)


@pytest.fixture(scope="module")
def torch_base_streams():
    sched, runner = torch_pair(0, "send")
    add_torch(sched)
    return drain(sched, runner)[0]


@pytest.mark.parametrize("policy", ["send", "cached"])
@pytest.mark.parametrize("limits", [{}, dict(num_blocks=30), dict(max_num_batched_tokens=7)],
                         ids=["decode", "preemption", "chunked-prefill"])
def test_torch_token_streams_with_drafts_equal_those_without(torch_base_streams, policy,
                                                             limits):
    """The verification forward (every drafted position, K/V written at each) gives
    the K = 0 run's tokens, float32 on CPU, through preemption and chunked prefill."""
    sched, runner = torch_pair(2, policy, **limits)
    add_torch(sched)
    streams, steps = drain(sched, runner)
    assert streams == torch_base_streams
    assert [len(streams[f"r{i}"]) for i in range(6)] == [10, 23, 36, 38, 31, 24]
    assert any(len(o.sampled_token_ids[o.req_id_to_index[r]]) == 3
               for _, so, o in steps for r in so.scheduled_spec_decode_tokens)
    if "num_blocks" in limits:
        assert sched.num_preemptions > 0
    draft_ns = runner.model.step_columns()["draft_ns"]
    assert len(draft_ns) == len(steps) and sum(d > 0 for d in draft_ns) > len(steps) // 2


def test_torch_acceptance_one_accepts_every_draft_and_zero_none():
    """The drafter is the target itself: at P = 1 every scheduled draft is the
    verification's own token, at P = 0 none is."""
    for acceptance in (1.0, 0.0):
        sched, runner = torch_pair(3, "cached", acceptance)
        add_torch(sched, 3)
        _, steps = drain(sched, runner)
        drafted = accepted = 0
        for _, so, out in steps:
            for req_id, drafts in so.scheduled_spec_decode_tokens.items():
                ids = out.sampled_token_ids[out.req_id_to_index[req_id]]
                drafted += len(drafts)
                accepted += len(ids) - 1
                assert ids[:-1] == drafts[:len(ids) - 1]
        assert drafted > 30
        assert accepted == (drafted if acceptance == 1.0 else 0)


def test_torch_drafter_writes_only_slots_the_verification_overwrites():
    """``TorchModel.propose`` runs the target's decode forward ahead: it writes K/V at
    positions from each row's bonus token on (at or past ``num_computed_tokens``, in
    the request's lookahead slots) and nowhere else in the cache."""
    sched, runner = torch_pair(3, "cached")
    add_torch(sched, 4)
    model = runner.model
    bs = 4
    for _ in range(6):  # prefill, then steps with drafts
        plan = sched.schedule()
        so = sched.build_scheduler_output(plan)
        runner.update_states(so)
        inputs = runner.prepare_inputs(so)
        sampled = runner.sample(inputs)
        before = model.kv_cache.clone()
        valid = runner.write_back(inputs, sampled)  # verifies, then drafts
        out = runner.build_output(inputs, valid)
        diff = (before != model.kv_cache).any(dim=(0, 1, 4, 5))  # [blocks + 1, bs]
        changed = set(map(tuple, diff.nonzero().tolist()))
        allowed = set()
        batch = runner.input_batch
        for row, req_id in enumerate(inputs.req_ids):
            if not valid[row]:
                continue
            drafts = len(inputs.spec_token_ids[row]) if inputs.spec_token_ids else 0
            # the bonus token's position: the last real token's + the ids kept
            start = (inputs.num_computed[row] + inputs.num_scheduled[row] - 1 - drafts
                     + len(valid[row]))
            for p in range(start, start + 3):
                allowed.add((int(batch.block_table[row, p // bs]), p % bs))
        assert changed and changed <= allowed
        sched.update_from_output(plan, out)

    with pytest.raises(ConfigError, match=r"num_spec_tokens \(--num-spec-tokens\) must be in "
                                          r"\[0, 32\], got 33"):
        config(33).validate()
    with pytest.raises(ConfigError, match=r"spec_acceptance \(--spec-acceptance\) must be in"):
        ModelConfig(spec_acceptance=1.5).validate()


def test_each_k_is_its_own_workload_and_only_torch_cases_get_lookahead_slots():
    """``cli.run.with_spec_decoding``: one copy per K, labelled (K = 0 not: it runs as
    a case without drafts, ``tests/cli/test_spec_zero_label.py``), P set where K > 0
    (K = 0 keeps the case's model: ``tests/cli/test_spec_zero_acceptance.py``); the torch
    model's copies allocate K lookahead slots (its drafter writes K/V ahead), the
    null model's none."""
    from fault_helpers import steady_case

    from ipc_bench.cli.run import with_spec_decoding

    null = steady_case(4)
    torch_case = steady_case(4, policy="cached")
    torch_case.model = TORCH
    cases = with_spec_decoding([null, torch_case], [0, 3], 0.5)
    assert [(c.labels.get("num_spec_tokens"), c.model.name, c.scheduler.num_spec_tokens,
             c.scheduler.num_lookahead_tokens, c.model.spec_acceptance) for c in cases] == [
        (None, "null", 0, 0, 0.7),
        (None, "torch", 0, 0, 0.7),
        (3, "null", 3, 0, 0.5), (3, "torch", 3, 3, 0.5)]
