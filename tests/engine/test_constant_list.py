"""``Request.all_token_ids`` is a read-only ``ConstantList`` view, as vLLM's
(``vllm/v1/utils.py`` and ``vllm/v1/request.py``; the project mirrors vLLM 7f280d69c,
and the class was read at stored versions before and after it: ``vllm/v1/request.py`` at
000a0d5f, ``vllm/v1/utils.py`` at 0090ad12), and the scheduler reads it where vLLM does:
``send``'s per-step ``new_token_ids`` slice, one ``__getitem__`` call per cached
request; ``schedule`` and ``update_from_output`` use the wrapped list (vLLM's
``num_tokens`` is ``len(self._all_token_ids)``), and ``cached`` never reads the
view. The slices are plain lists, so the frames are unchanged.
"""

from __future__ import annotations

import pytest

from view_calls import Counts, answer

from ipc_bench.engine.config import SchedulerConfig
from ipc_bench.engine.scheduler import ConstantList, Scheduler
from ipc_bench.wire.codecs import messages_of, scheduler_output_codec


def test_reads_go_to_the_wrapped_list():
    x = [5, 6, 7, 6]
    view = ConstantList(x)
    assert view[0] == 5 and view[-1] == 6
    assert len(view) == 4
    assert list(iter(view)) == [5, 6, 7, 6]
    assert 7 in view and 8 not in view
    assert view.index(6) == 1 and view.index(6, 2) == 3 and view.index(6, 2, 4) == 3
    with pytest.raises(ValueError):
        view.index(6, 2, 3)
    assert view.count(6) == 2  # Sequence's mixin
    assert list(reversed(view)) == [6, 7, 6, 5]
    assert repr(view) == "ConstantList([5, 6, 7, 6])"
    x.append(9)  # the owner's writes show through at once
    assert len(view) == 5 and view[4] == 9


def test_a_slice_is_a_new_plain_list():
    x = [1, 2, 3, 4]
    view = ConstantList(x)
    part = view[1:3]
    assert type(part) is list and part == [2, 3]
    assert type(view[:]) is list and view[:] == x and view[:] is not x
    part.append(99)
    assert x == [1, 2, 3, 4]
    assert view[10:20] == [] and type(view[10:20]) is list


@pytest.mark.parametrize("mutate, message", [
    (lambda v: v.__setitem__(0, 1), "Cannot set item in a constant list"),
    (lambda v: v.__setitem__(slice(0, 1), [1]), "Cannot set item in a constant list"),
    (lambda v: v.__delitem__(0), "Cannot delete item from a constant list"),
    (lambda v: v.append(1), "Cannot append to a constant list"),
    (lambda v: v.extend([1]), "Cannot extend a constant list"),
    (lambda v: v.insert(0), "Cannot insert into a constant list"),
    (lambda v: v.pop(0), "Cannot pop from a constant list"),
    (lambda v: v.remove(1), "Cannot remove from a constant list"),
    (lambda v: v.clear(), "Cannot clear a constant list"),
])
def test_every_mutation_raises_type_error(mutate, message):
    x = [1, 2, 3]
    view = ConstantList(x)
    with pytest.raises(TypeError) as err:
        mutate(view)
    assert str(err.value) == message
    assert x == [1, 2, 3]


def test_item_assignment_and_del_statements_raise():
    view = ConstantList([1, 2, 3])
    with pytest.raises(TypeError, match="^Cannot set item in a constant list$"):
        view[1] = 5
    with pytest.raises(TypeError, match="^Cannot delete item from a constant list$"):
        del view[1:]


def test_no_equality_with_a_list_as_vllm():
    x = [1, 2]
    assert (ConstantList(x) == x) is False
    assert ConstantList(x)[:] == x


def config(**kw) -> SchedulerConfig:
    base = dict(max_num_seqs=4, max_num_batched_tokens=16, max_model_len=64, block_size=4,
                num_blocks=64)
    base.update(kw)
    return SchedulerConfig(**base)


def test_the_request_exposes_a_view_of_its_token_list():
    sched = Scheduler(config(), "send")
    req = sched.add_request("A", 0, [3, 4, 5], max_tokens=4)
    assert type(req.all_token_ids) is ConstantList
    assert req.all_token_ids._x is req._all_token_ids
    assert req._all_token_ids == [3, 4, 5] and req.num_tokens == 3
    plan = sched.schedule()
    sched.build_scheduler_output(plan)
    sched.update_from_output(plan, answer(sched, plan))
    assert req.all_token_ids[:] == [3, 4, 5, 1000] and req.output_token_ids == [1000]
    with pytest.raises(TypeError, match="^Cannot append to a constant list$"):
        req.all_token_ids.append(1)


@pytest.mark.parametrize("policy", ["send", "cached"])
def test_only_sends_build_reads_the_view(policy, monkeypatch):
    """Decode, chunked prefill, preemption and resume (8 KV blocks of 4 tokens for four
    requests that grow to 12 tokens): ``send``'s build slices the view once per cached
    request, nothing else reads it; under ``cached`` nothing does."""
    sched = Scheduler(config(num_blocks=8, max_num_batched_tokens=12), policy)
    for i in range(4):
        sched.add_request(f"r{i}", i, list(range(10 * i, 10 * i + 6)), max_tokens=6)
    counts = Counts(monkeypatch)
    resumed = 0
    while sched.has_unfinished_requests():
        plan = sched.schedule()
        assert counts.take() == {}
        sched.build_scheduler_output(plan)
        build = counts.take()
        sched.update_from_output(plan, answer(sched, plan))
        assert counts.take() == {}
        n = len(plan.cached_reqs)
        assert build == ({"__getitem__": n} if policy == "send" and n else {})
        resumed += plan.num_resumed
    assert sched.num_preemptions > 0 and resumed > 0


@pytest.mark.parametrize("codec", ["msgpack", "pickle"])
def test_sends_frames_hold_plain_lists(codec):
    """A resumed request's first chunk and the decode ids go out as plain lists: the
    frame is the one the same message with fresh lists gives, and no ConstantList
    is pickled."""
    sched = Scheduler(config(num_blocks=8, max_num_batched_tokens=12), "send",
                      messages_of(codec))
    enc = scheduler_output_codec(codec).encode
    for i in range(4):
        sched.add_request(f"r{i}", i, list(range(10 * i, 10 * i + 6)), max_tokens=6)
    seen_resumed = False
    while sched.has_unfinished_requests():
        plan = sched.schedule()
        so = sched.build_scheduler_output(plan)
        ids = so.scheduled_cached_reqs.new_token_ids
        assert all(type(x) is list for x in ids)
        frame = enc(so)
        so.scheduled_cached_reqs.new_token_ids = [list(x) for x in ids]
        assert enc(so) == frame
        if codec == "pickle":
            assert b"ConstantList" not in frame
        seen_resumed |= plan.num_resumed > 0
        sched.update_from_output(plan, answer(sched, plan))
    assert seen_resumed
