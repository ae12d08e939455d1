"""The input oracle and the trace checks read each request's plain ``_all_token_ids``
list, never the ``ConstantList`` view ``Request.all_token_ids``: they are the harness's
own checks, not modelled vLLM code, and a Python call per request and step would add to
a timed replay's wall time and to the runner gap. Their results are the ids the view
would give.
"""

from __future__ import annotations

import struct

import pytest

from view_calls import Counts, answer

from ipc_bench.engine.config import SchedulerConfig
from ipc_bench.engine.messages import ModelRunnerOutput
from ipc_bench.engine.scheduler import SchedulePlan, Scheduler
from ipc_bench.harness.oracle import InputOracle, input_digest
from ipc_bench.harness.trace_checks import _Sampled


def digest(plan, starts, fed: list[int]) -> int:
    n = len(plan.scheduled_reqs)
    total = plan.total_num_scheduled_tokens
    counts = None if total == n else struct.pack(
        f"={n}i", *plan.num_scheduled_tokens.values())
    return input_digest(n, total, counts, struct.pack(f"={len(fed)}i", *fed))


def oracle(sched: Scheduler) -> InputOracle:
    return InputOracle(sched.requests, object(), interval=10**9)  # never checks


def test_expect_and_expect_planned_never_call_the_view(monkeypatch):
    """Decode, chunked prefill, preemption and resume under ``cached`` (whose build
    reads no view): ``expect`` and ``expect_planned`` note the digests of the ids the
    view gives, with no call of the view."""
    cfg = SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=12, max_model_len=64,
                          block_size=4, num_blocks=8)
    sched = Scheduler(cfg, "cached")
    for i in range(4):
        sched.add_request(f"r{i}", i, list(range(10 * i, 10 * i + 6)), max_tokens=6)
    by_step, by_plan = oracle(sched), oracle(sched)
    counts = Counts(monkeypatch)
    steps = resumed = chunked = 0
    while sched.has_unfinished_requests():
        plan = sched.schedule()
        sched.build_scheduler_output(plan)
        sched.update_from_output(plan, answer(sched, plan))
        assert counts.take() == {}
        by_step.expect(plan.step, plan)
        by_plan.expect_planned(plan.step, plan)
        assert counts.take() == {}
        num_running = plan.cached_resumed.count(False)
        starts = plan.cached_num_computed[:num_running]
        starts += [0] * (len(plan.scheduled_reqs) - num_running)
        fed = []
        for req, p in zip(plan.scheduled_reqs, starts):
            fed += list(req.all_token_ids)[p:p + plan.num_scheduled_tokens[req.req_id]]
        want = digest(plan, starts, fed)
        assert by_step.pending[-1][:2] == (plan.step, want)
        assert by_plan.pending[-1][:2] == (plan.step, want)
        counts.take()
        steps += 1
        resumed += plan.num_resumed
        chunked += plan.total_num_scheduled_tokens != len(plan.scheduled_reqs)
    assert sched.num_preemptions > 0 and resumed > 0 and chunked > 0
    assert len(by_step.pending) == len(by_plan.pending) == steps


def hand_plan(reqs, starts, ks, spec, output=None) -> SchedulePlan:
    plan = SchedulePlan(7, set())
    plan.scheduled_reqs = plan.cached_reqs = list(reqs)
    plan.cached_num_computed = list(starts)
    plan.cached_resumed = [False] * len(reqs)
    plan.num_scheduled_tokens = {r.req_id: k for r, k in zip(reqs, ks)}
    plan.total_num_scheduled_tokens = sum(ks)
    plan.spec_tokens = spec
    plan.num_spec_tokens = sum(map(len, spec.values()))
    plan.output = output
    return plan


@pytest.fixture
def two_requests():
    cfg = SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=16, max_model_len=64,
                          block_size=4, num_blocks=16)
    sched = Scheduler(cfg, "send")
    a = sched.add_request("a", 0, [11, 12, 13, 14, 15], max_tokens=4)
    b = sched.add_request("b", 1, [21, 22, 23, 24], max_tokens=4)
    return sched, a, b


def test_the_draft_paths_never_call_the_view(two_requests, monkeypatch):
    """With drafts: ``expect`` (drafts scheduled) and ``expect_planned`` under async
    scheduling (``plan.output`` holds the accepted drafts) read the plain list."""
    sched, a, b = two_requests
    counts = Counts(monkeypatch)
    # a: 2 ids from position 2 then 2 drafts; b: 3 ids from position 1, no drafts
    plan = hand_plan([a, b], [2, 1], [4, 3], {"a": [901, 902]})
    ora = oracle(sched)
    ora.expect(3, plan)
    assert counts.take() == {}
    assert ora.pending[-1][:2] == (3, digest(plan, [2, 1], [13, 14, 901, 902, 22, 23, 24]))
    # async: a accepted 1 of its 2 drafts (sampled ids [901, 55]), the other is -1
    out = ModelRunnerOutput(req_ids=["a", "b"], req_id_to_index={"a": 0, "b": 1},
                            sampled_token_ids=[[901, 55], [66]])
    plan = hand_plan([a, b], [2, 1], [4, 3], {"a": [901, 902]}, output=out)
    ora = oracle(sched)
    ora.expect_planned(4, plan)
    assert counts.take() == {}
    assert ora.pending[-1][:2] == (4, digest(plan, [2, 1], [13, 14, 901, -1, 22, 23, 24]))
    assert ora._rejected == {"a": 1}


def test_trace_checks_sampled_reads_the_plain_list(two_requests, monkeypatch):
    """``trace_checks._Sampled``: one id for a request whose prefill is done, none for
    a partial prefill, from ``len(_all_token_ids)``."""
    sched, a, b = two_requests
    a.num_computed_tokens, b.num_computed_tokens = 5, 2
    plan = hand_plan([a, b], [0, 0], [5, 2], {})
    counts = Counts(monkeypatch)
    sampled = _Sampled(plan)
    assert counts.take() == {}
    assert sampled.sampled_token_ids == [[0], []]
    assert sampled.req_id_to_index == {"a": 0, "b": 1}
