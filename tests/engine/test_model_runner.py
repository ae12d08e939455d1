"""ModelRunner logic in-process, without sockets (ipc_bench.engine.model_runner).

Both policies run side by side on the same scheduler plans and must sample the same
streams; the persistent batch is checked row by row against the scheduler's own
token lists; hand-made ``SchedulerOutput``s hit the runner's error paths; and a
deliberately broken token write-back must change the token digest, so the digest
oracle is shown to catch bookkeeping bugs under each policy.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipc_bench.wire.codecs import scheduler_output_codec
from ipc_bench.engine.config import ModelConfig, SchedulerConfig
from ipc_bench.engine.input_batch import InputBatch
from ipc_bench.engine.messages import (
    CachedRequestData,
    NewRequestData,
    SamplingParams,
    SchedulerOutput,
)
from ipc_bench.engine.model_runner import ModelRunner, RunnerError, decode_token_layout, token_layout
from ipc_bench.harness.recording import token_digest
from ipc_bench.engine.scheduler import ProtocolError, RequestStatus, Scheduler

POLICIES = ("send", "cached")
MODEL = ModelConfig(seed=3)


def config(**kw) -> SchedulerConfig:
    base = dict(max_num_seqs=6, max_num_batched_tokens=24, max_model_len=96, block_size=4,
                num_blocks=6 * 24)
    base.update(kw)
    return SchedulerConfig(**base)


def prompt(n: int, start: int) -> list[int]:
    return [(start * 7919 + 104_729 * k) % 128_256 for k in range(n)]


def check_batch(runner: ModelRunner, sched: Scheduler, plan) -> None:
    """Every row of the persistent batch agrees with the scheduler's request state."""
    batch = runner.input_batch
    assert len(batch.req_ids) == len(batch.req_id_to_index) == batch.num_reqs
    assert sorted(batch.req_ids) == sorted(plan.num_scheduled_tokens)
    new_ids = {r.req_id for r in plan.new_reqs}
    for row, req_id in enumerate(batch.req_ids):
        assert batch.req_id_to_index[req_id] == row
        req = sched.requests[req_id]
        n = int(batch.num_tokens_no_spec[row])
        assert int(batch.num_tokens[row]) == n
        if runner.policy == "cached":
            assert n == req.num_tokens  # the runner holds every sampled token
        elif req_id in new_ids:
            assert n == req.num_prompt_tokens  # the whole prompt came in NewRequestData
        else:
            # send: tokens up to what was scheduled; the sampled one arrives next step
            assert n == req.num_computed_tokens
        assert batch.token_ids_cpu[row, :n].tolist() == req.all_token_ids[:n]
        assert int(batch.num_prompt_tokens[row]) == req.num_prompt_tokens
        assert (int(batch.num_computed_tokens_cpu[row])
                == req.num_computed_tokens - plan.num_scheduled_tokens[req_id])
        if req.status == RequestStatus.RUNNING:  # finished ones gave their blocks back
            nb = int(batch.num_blocks_per_row[row])
            assert batch.block_table[row, :nb].tolist() == req.block_ids


class Lockstep:
    """A ``send`` and a ``cached`` scheduler/runner pair fed the same arrivals.

    Each step asserts both schedulers made the same plan and both runners returned
    the same ``ModelRunnerOutput``; messages go through the msgpack codec so that
    nothing is shared between scheduler and runner objects.
    """

    def __init__(self, cfg: SchedulerConfig):
        self.cfg = cfg
        self.scheds = {p: Scheduler(cfg, p) for p in POLICIES}
        self.runners = {p: ModelRunner(cfg, MODEL, p) for p in POLICIES}
        self.codec = scheduler_output_codec("msgpack")
        self.outputs = []

    def add(self, req_id: str, index: int, prompt_ids: list[int], max_tokens: int) -> None:
        for s in self.scheds.values():
            s.add_request(req_id, index, prompt_ids, max_tokens)

    def busy(self) -> bool:
        return self.scheds["send"].has_unfinished_requests()

    def step(self):
        plans = {p: s.schedule() for p, s in self.scheds.items()}
        assert plans["send"].num_scheduled_tokens == plans["cached"].num_scheduled_tokens
        outs = {}
        for p in POLICIES:
            so = self.scheds[p].build_scheduler_output(plans[p])
            so = self.codec.decode(self.codec.encode(so))
            outs[p] = self.runners[p].execute_model(so)
        assert outs["send"] == outs["cached"]
        for p in POLICIES:
            self.scheds[p].update_from_output(plans[p], outs[p])
            check_batch(self.runners[p], self.scheds[p], plans[p])
        self.outputs.append(outs["send"])
        return plans["send"], outs["send"]

    def digests(self) -> dict[str, str]:
        return {p: token_digest(s.requests.values()) for p, s in self.scheds.items()}


# --- both policies, same plans, same streams -------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_both_policies_sample_identical_streams(seed):
    rng = random.Random(seed)
    ls = Lockstep(config())
    arrivals = {}
    for i in range(24):  # long prompts (chunked prefill) and short ones, staggered
        plen = rng.choice([rng.randint(1, 8), rng.randint(20, 70)])
        arrivals.setdefault(rng.randint(0, 40), []).append((i, plen, rng.randint(1, 25)))
    step = 0
    while step <= 40 or ls.busy():
        for i, plen, mt in arrivals.get(step, []):
            ls.add(f"cmpl-{i:032x}-0", i, prompt(plen, i + 1), mt)
        if ls.busy():
            ls.step()
        step += 1
        assert step < 2000
    d = ls.digests()
    assert d["send"] == d["cached"]
    assert sum(len(o.sampled_token_ids) for o in ls.outputs) > 100
    sched = ls.scheds["send"]
    assert all(r.status == RequestStatus.FINISHED for r in sched.requests.values())
    assert sched.kv_cache.num_free_blocks == sched.config.num_blocks


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), max_num_seqs=st.integers(1, 8),
       budget=st.integers(8, 64), block_size=st.sampled_from([1, 4, 16]),
       max_model_len=st.sampled_from([32, 80]))
def test_identical_streams_property(seed, max_num_seqs, budget, block_size, max_model_len):
    """Random limits and workloads: same plans, same outputs, batch rows right, every
    step (the checks live in ``Lockstep.step``)."""
    rng = random.Random(seed)
    cfg = config(max_num_seqs=max_num_seqs, max_num_batched_tokens=max(budget, max_num_seqs),
                 max_model_len=max_model_len, block_size=block_size,
                 num_blocks=max_num_seqs * (-(-max_model_len // block_size)))
    ls = Lockstep(cfg)
    pending = sorted((rng.randint(0, 30), i) for i in range(rng.randint(1, 14)))
    step = 0
    while pending or ls.busy():
        while pending and pending[0][0] <= step:
            _, i = pending.pop(0)
            ls.add(f"r{i}", i, prompt(rng.randint(1, max_model_len + 4), i + 1),
                   rng.randint(1, 40))
        if ls.busy():
            ls.step()
        step += 1
        assert step < 3000
    d = ls.digests()
    assert d["send"] == d["cached"]


@pytest.mark.parametrize("policy", POLICIES)
def test_partial_prefill_samples_nothing(policy):
    cfg = config(max_num_batched_tokens=16)
    sched = Scheduler(cfg, policy)
    runner = ModelRunner(cfg, MODEL, policy)
    sched.add_request("L", 0, prompt(40, 1), max_tokens=2)
    sampled = []
    while sched.has_unfinished_requests():
        plan = sched.schedule()
        out = runner.execute_model(sched.build_scheduler_output(plan))
        sampled.append(out.sampled_token_ids)
        sched.update_from_output(plan, out)
    assert [len(s[0]) for s in sampled] == [0, 0, 1, 1]
    assert sched.requests["L"].output_token_ids == [sampled[2][0][0], sampled[3][0][0]]


# --- condense: requests finishing in the middle ----------------------------------------


def test_condense_moves_last_row_into_hole():
    ls = Lockstep(config())
    for i, mt in enumerate([10, 2, 10, 10]):  # B finishes at step 1
        ls.add("ABCD"[i], i, prompt(3, i + 1), mt)
    _, out = ls.step()
    assert out.req_ids == ["A", "B", "C", "D"]
    _, out = ls.step()
    assert ls.scheds["send"].finished_req_ids == {"B"}
    plan, out = ls.step()  # B leaves row 1; D moves from row 3 into it
    assert out.req_ids == ["A", "D", "C"]
    assert out.req_id_to_index == {"A": 0, "D": 1, "C": 2}
    for p in POLICIES:
        batch = ls.runners[p].input_batch
        assert batch.req_ids == ["A", "D", "C"] and batch.num_reqs == 3
    while ls.busy():
        ls.step()
    d = ls.digests()
    assert d["send"] == d["cached"]


def test_new_request_fills_lowest_hole_then_condense():
    ls = Lockstep(config())
    for i, mt in enumerate([10, 2, 2, 10, 10]):  # B and C finish at step 1
        ls.add("ABCDE"[i], i, prompt(3, i + 1), mt)
    ls.step()
    ls.step()
    ls.add("F", 5, prompt(5, 9), 4)  # arrives as B and C leave
    plan, out = ls.step()
    # B (row 1) and C (row 2) leave; F takes row 1; E (row 4) moves into row 2.
    assert [r.req_id for r in plan.new_reqs] == ["F"]
    assert out.req_ids == ["A", "F", "E", "D"]
    assert out.req_id_to_index == {"A": 0, "F": 1, "E": 2, "D": 3}
    while ls.busy():
        ls.step()
    d = ls.digests()
    assert d["send"] == d["cached"]


def test_condense_unit():
    batch = InputBatch(max_num_seqs=5, max_model_len=8, max_blocks_per_req=2)
    from ipc_bench.engine.input_batch import CachedRequestState

    sp = SamplingParams(max_tokens=1)
    for i, name in enumerate("abcde"):
        batch.add_request(CachedRequestState(name, [10 * i + k for k in range(i + 1)], sp,
                                             [i], 0))
    batch.remove_request("a")
    batch.remove_request("c")
    batch.remove_request("e")
    batch.condense()
    # Holes 0 and 2: d (row 3) moves to 0, then row 2 is past the end (3 requests -> 2).
    assert batch.req_ids == ["d", "b"]
    assert batch.req_id_to_index == {"d": 0, "b": 1}
    assert batch.token_ids_cpu[0, :4].tolist() == [30, 31, 32, 33]
    assert batch.token_ids_cpu[1, :2].tolist() == [10, 11]
    assert batch.num_tokens[:2].tolist() == [4, 2]
    assert batch.num_prompt_tokens[:2].tolist() == [4, 2]
    assert batch.block_table[:2, 0].tolist() == [3, 1]


# --- prepare_inputs: the pure-decode layout is the general one ----------------------------


@settings(max_examples=50, deadline=None)
@given(num_computed=st.lists(st.integers(0, 4000), min_size=1, max_size=64),
       max_model_len=st.sampled_from([4096, 8192]))
def test_decode_token_layout_equals_token_layout(num_computed, max_model_len):
    nc = np.array(num_computed, dtype=np.int64)
    general = token_layout(nc, [1] * len(num_computed), max_model_len)
    decode = decode_token_layout(nc.copy(), max_model_len)
    for a, b in zip(general, decode):
        assert a.dtype == b.dtype and a.shape == b.shape and (a == b).all()
    ids = {id(a) for a in decode}
    assert len(ids) == len(decode)  # no array returned twice


@pytest.mark.parametrize("policy", POLICIES)
def test_prepare_inputs_takes_the_decode_layout_only_for_pure_decode(policy, monkeypatch,
                                                                    good_digest):
    """Every step of a mixed workload: the inputs equal those of the general layout."""
    import ipc_bench.engine.model_runner as mr

    calls = {"decode": 0, "general": 0}

    def checked(nc, max_model_len):
        calls["decode"] += 1
        out = decode_token_layout(nc, max_model_len)
        ref = token_layout(nc, [1] * len(nc), max_model_len)
        assert all((a == b).all() and a.dtype == b.dtype for a, b in zip(out, ref))
        return out

    def general(nc, num_scheduled, max_model_len, check=None):
        calls["general"] += 1
        return token_layout(nc, num_scheduled, max_model_len, check)

    monkeypatch.setattr(mr, "decode_token_layout", checked)
    monkeypatch.setattr(mr, "token_layout", general)
    assert run_digest(policy) == good_digest
    assert calls["decode"] > 10 and calls["general"] > 3


# --- error paths with hand-made messages -----------------------------------------------


def make_so(new=(), cached_ids=(), new_token_ids=None, num_computed=(), num_scheduled=None,
            finished=()) -> SchedulerOutput:
    cached_ids = list(cached_ids)
    num_scheduled = dict(num_scheduled or {})
    return SchedulerOutput(
        scheduled_new_reqs=list(new),
        scheduled_cached_reqs=CachedRequestData(
            req_ids=cached_ids, resumed_from_preemption=[False] * len(cached_ids),
            new_token_ids=[[] for _ in cached_ids] if new_token_ids is None else new_token_ids,
            new_block_ids=[([],) for _ in cached_ids],
            num_computed_tokens=list(num_computed)),
        num_scheduled_tokens=num_scheduled,
        total_num_scheduled_tokens=sum(num_scheduled.values()),
        scheduled_spec_decode_tokens={}, scheduled_encoder_inputs={},
        num_common_prefix_blocks=[0], finished_req_ids=set(finished),
        free_encoder_input_ids=[], structured_output_request_ids={})


def new_req(req_id: str, n: int, blocks: list[int]) -> NewRequestData:
    return NewRequestData(req_id, prompt(n, 5), SamplingParams(max_tokens=8), (blocks,), 0)


@pytest.mark.parametrize("policy", POLICIES)
def test_sampled_token_ids_exceed_max_model_len(policy):
    """A 16-token prompt at max_model_len 16: the old rule (max_model_len -
    num_computed_tokens) schedules it whole, and the sampled token has no room."""
    cfg = config(max_model_len=16, max_num_seqs=2)
    runner = ModelRunner(cfg, MODEL, policy)
    so = make_so(new=[new_req("X", 16, [0, 1, 2, 3])], num_scheduled={"X": 16})
    msg = ("Sampled token IDs exceed the max model length: X would hold 17 tokens, "
           "max_model_len is 16")
    if policy == "cached":  # the runner writes its own sample at position 16
        with pytest.raises(RunnerError) as info:
            runner.execute_model(so)
    else:  # the scheduler sends it back next step, to be written at position 16
        out = runner.execute_model(so)
        (tok,) = out.sampled_token_ids[0]
        so2 = make_so(cached_ids=["X"], new_token_ids=[[tok]], num_computed=[16],
                      num_scheduled={"X": 1})
        with pytest.raises(RunnerError) as info:
            runner.execute_model(so2)
    assert str(info.value) == msg


@pytest.mark.parametrize("policy", POLICIES)
def test_unknown_cached_request_is_a_protocol_error(policy):
    runner = ModelRunner(config(), MODEL, policy)
    so = make_so(cached_ids=["ghost"], new_token_ids=[[5]] if policy == "send" else [],
                 num_computed=[3], num_scheduled={"ghost": 1})
    with pytest.raises(ProtocolError) as info:
        runner.execute_model(so)
    assert str(info.value) == "cached request ghost is unknown to the runner"


def test_wrong_new_token_ids_length_under_send():
    runner = ModelRunner(config(), MODEL, "send")
    runner.execute_model(make_so(new=[new_req("A", 3, [0]), new_req("B", 3, [1])],
                                 num_scheduled={"A": 3, "B": 3}))
    so = make_so(cached_ids=["A", "B"], new_token_ids=[[]], num_computed=[3, 3],
                 num_scheduled={"A": 1, "B": 1})
    with pytest.raises(ProtocolError) as info:
        runner.execute_model(so)
    assert str(info.value) == ("new_token_ids has 1 entries for 2 cached requests under "
                               "the send policy")


def test_empty_new_token_ids_is_fine_under_cached():
    """vLLM #20485: under ``cached`` the list is empty, shorter than ``req_ids``;
    the runner must never index it."""
    runner = ModelRunner(config(), MODEL, "cached")
    out = runner.execute_model(make_so(new=[new_req("A", 3, [0]), new_req("B", 3, [1])],
                                       num_scheduled={"A": 3, "B": 3}))
    out2 = runner.execute_model(make_so(cached_ids=["A", "B"], new_token_ids=[],
                                        num_computed=[3, 3], num_scheduled={"A": 1, "B": 1}))
    assert [len(x) for x in out.sampled_token_ids + out2.sampled_token_ids] == [1, 1, 1, 1]


def test_new_request_already_on_runner_is_a_protocol_error():
    runner = ModelRunner(config(), MODEL, "cached")
    runner.execute_model(make_so(new=[new_req("A", 3, [0])], num_scheduled={"A": 3}))
    with pytest.raises(ProtocolError) as info:
        runner.execute_model(make_so(new=[new_req("A", 3, [1])], num_scheduled={"A": 3}))
    assert str(info.value) == "new request A is already on the runner"


# --- bug injection: the digest must see bookkeeping bugs -------------------------------


def run_digest(policy: str) -> str:
    """Drive a scheduler and a runner in-process over a fixed workload; the digest."""
    cfg = config(max_model_len=128)
    sched = Scheduler(cfg, policy)
    runner = ModelRunner(cfg, MODEL, policy)
    for i in range(8):
        sched.add_request(f"cmpl-{i:032x}-0", i, prompt(3 + 9 * i, i + 1), 6 + 3 * i)
    while sched.has_unfinished_requests():
        plan = sched.schedule()
        sched.update_from_output(plan, runner.execute_model(sched.build_scheduler_output(plan)))
    return token_digest(sched.requests.values())


def buggy_write(offset: int = 0, row_shift: int = 0):
    """A copy of ModelRunner.write_token_ids writing at ``start + offset`` in row
    ``row + row_shift``; counts and the request state stay right."""
    calls = []

    def write_token_ids(self, state, row, start, token_ids):
        calls.append(row)
        end = start + len(token_ids)
        batch = self.input_batch
        bad_row = (row + row_shift) % batch.max_num_seqs
        base = bad_row * self.max_model_len + start + offset
        batch.token_ids_flat[base:base + len(token_ids)] = np.asarray(token_ids, np.int32)
        batch.num_tokens_no_spec_mv[row] = end
        batch.num_tokens_mv[row] = end
        num_new = end - state.num_tokens
        if num_new > 0:
            state.output_token_ids.extend(token_ids[-num_new:])

    return write_token_ids, calls


@pytest.fixture(scope="module")
def good_digest() -> str:
    d = {p: run_digest(p) for p in POLICIES}
    assert d["send"] == d["cached"]
    return d["send"]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("bug", ["none", "off_by_one", "off_by_minus_one", "wrong_row"])
def test_injected_write_back_bug_changes_digest(monkeypatch, good_digest, policy, bug):
    offset, row_shift = {"none": (0, 0), "off_by_one": (1, 0), "off_by_minus_one": (-1, 0),
                         "wrong_row": (0, 1)}[bug]
    write, calls = buggy_write(offset, row_shift)
    monkeypatch.setattr(ModelRunner, "write_token_ids", write)
    digest = run_digest(policy)
    assert calls  # the policy's write path went through the patched method
    if bug == "none":  # the copy itself is faithful
        assert digest == good_digest
    else:
        assert digest != good_digest


@pytest.mark.parametrize("policy", POLICIES)
def test_condense_without_token_copy_changes_digest(monkeypatch, good_digest, policy):
    """A condense that moves the counts but not the tokens is caught too."""
    real_condense = InputBatch.condense

    def lazy_condense(self):
        saved = self.token_ids_cpu.copy()
        real_condense(self)
        self.token_ids_cpu[:] = saved

    monkeypatch.setattr(InputBatch, "condense", lazy_condense)
    assert run_digest(policy) != good_digest
