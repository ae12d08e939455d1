"""The slots protocol (``wire.slots``): exact bytes of known steps, what is sent and
what the runner infers, round trips of every step of scheduler runs with chunked
prefill, preemption, resumes and finishes (both policies), equal tokens, errors."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from ipc_bench.engine.messages import (CachedRequestData, ModelRunnerOutput, NewRequestData,
                                       SamplingParams, SchedulerOutput)
from ipc_bench.engine.model_runner import ModelRunner
from ipc_bench.engine.scheduler import Scheduler
from ipc_bench.wire.codecs import (DecodeError, model_runner_output_codec,
                                   scheduler_output_codec, session_codecs)
from ipc_bench.wire.slots import (OOB_THRESHOLD_BYTES, SlotsRunnerSide, SlotsSchedulerSide,
                                  SlotsStep)

from engine.test_preemption import (MIXED, MIXED_CFG, MIXED_TINY_BLOCKS, MODEL, PLENTY, Run,
                                    check_runner, config, drive, workload)

RID = "cmpl-0123456789abcdef0123456789abcdef-0"


def step(new=(), cached=(), finished=(), tokens=None) -> SchedulerOutput:
    """A SchedulerOutput: ``new`` = [(req_id, prompt, blocks, num_scheduled)],
    ``cached`` = [(req_id, num_computed, num_scheduled, new_blocks, resumed)]."""
    sched = {r: n for r, _, n, _, _ in cached}  # running first, as the scheduler
    sched.update({r: n for r, _, _, n in new})
    return SchedulerOutput(
        [NewRequestData(r, list(p), SamplingParams(max_tokens=8), (list(b),), 0)
         for r, p, b, _ in new],
        CachedRequestData([c[0] for c in cached], [c[4] for c in cached],
                          [] if tokens is None else tokens,
                          [(list(c[3]),) for c in cached], [c[1] for c in cached]),
        sched, sum(sched.values()), {}, {}, [0], set(finished), [], {}, None)


def both():
    return SlotsSchedulerSide(), SlotsRunnerSide()


def through(s, r, so):
    frame = s.encode(so)
    back = r.decode(frame)
    assert back == so and list(back.num_scheduled_tokens) == list(so.num_scheduled_tokens)
    return frame, r._step.decode(frame)[0]


def test_pure_decode_step_exact_bytes_and_nothing_per_request():
    """After its first step a decoding request under cached costs nothing: the step is
    a 4-byte length and a 13-item array of empty fields, whatever the batch."""
    s, r = both()
    ids = [f"r{i}" for i in range(64)]
    through(s, r, step(new=[(i, [1, 2, 3], [k], 3) for k, i in enumerate(ids)]))
    frame, msg = through(s, r, step(cached=[(i, 3, 1, [], False) for i in ids]))
    # fixarray(13), [] new, ten empty bins (c4 00), nil order, [] oob
    header = b"\x9d\x90" + b"\xc4\x00" * 10 + b"\xc0\x90"
    assert frame == struct.pack("<I", len(header)) + header
    assert len(frame) == 4 + 24
    # the reply: one int32 per scheduled request, in order; 64 x 4 = 256 B goes out of band
    out = ModelRunnerOutput(ids, {i: k for k, i in enumerate(ids)}, [[k] for k in range(64)])
    reply = r.encode(out)
    rh = b"\x92\x00\x91\x40"  # [0 (buffer index), [64]]
    assert reply == struct.pack("<I", 4) + rh + np.arange(64, dtype="<i4").tobytes()
    assert s.decode(reply) == out


def test_new_request_exact_bytes():
    s, r = both()
    frame, msg = through(s, r, step(new=[(RID, [5, 70000], [7], 2)]))
    # SamplingParams(max_tokens=8): [8, 0.0 as float64, nil seed, true ignore_eos]
    sp = b"\x94\x08" + b"\xcb" + struct.pack(">d", 0.0) + b"\xc0\xc3"
    new = (b"\x97\x00\xd9\x27" + RID.encode()                  # slot 0, str8 of 39 bytes
           + b"\xc4\x08" + struct.pack("<2i", 5, 70000)         # prompt, inline int32
           + sp + b"\xc4\x04" + struct.pack("<i", 7) + b"\x00\x02")  # blocks, nc 0, 2 sched
    # finished, skipped empty; tail [0] (the new request's place in the order); 7 empty
    header = (b"\x9d\x91" + new + b"\xc4\x00" * 2 + b"\xc4\x04" + struct.pack("<i", 0)
              + b"\xc4\x00" * 7 + b"\xc0\x90")
    assert frame == struct.pack("<I", len(header)) + header


def test_what_is_sent():
    """Each change the runner cannot infer travels; the rest is inferred."""
    s, r = both()
    a, b, c = "a", "b", "c"
    through(s, r, step(new=[(a, [1] * 4, [0], 4), (b, [2] * 4, [1], 4), (c, [3] * 4, [2], 4)]))
    # b gets a new block; a and c decode: only b is sent
    _, m = through(s, r, step(cached=[(a, 4, 1, [], False), (b, 4, 1, [9], False),
                                      (c, 4, 1, [], False)]))
    assert m.changed_slots == struct.pack("<i", 1) and m.blocks == struct.pack("<i", 9)
    assert m.block_counts == struct.pack("<i", 1) and m.resumed == b""
    # c is preempted (left out): skipped; a decodes, b too
    _, m = through(s, r, step(cached=[(a, 5, 1, [], False), (b, 5, 1, [], False)]))
    assert m.skipped == struct.pack("<i", 2) and m.changed_slots == b""
    # a finished, c resumes from 0 with all its blocks, a new request d takes slot 0
    _, m = through(s, r, step(new=[("d", [4] * 3, [3], 3)],
                              cached=[(b, 6, 1, [], False), (c, 0, 6, [5, 6], True)],
                              finished=[a]))
    assert m.finished == struct.pack("<i", 0) and m.new[0].slot == 0
    assert m.resumed == struct.pack("<i", 2) and m.changed_num_scheduled == struct.pack("<i", 6)
    assert m.tail == struct.pack("<2i", 2, 0)  # c then d, in scheduled order
    # a chunked-prefill count (3 tokens) is a change; an order the runner cannot
    # infer (d before b) is sent whole
    _, m = through(s, r, step(cached=[("d", 3, 1, [], False), (b, 7, 3, [], False),
                                      (c, 6, 1, [], False)]))
    assert m.order == struct.pack("<3i", 0, 1, 2)
    assert m.changed_slots == struct.pack("<i", 1)
    # send: every cached request's tokens, flat, in order
    _, m = through(s, r, step(cached=[("d", 4, 1, [], False), (b, 10, 2, [], False)],
                              tokens=[[11], [12, 13]]))
    assert m.tokens == struct.pack("<3i", 11, 12, 13) and m.skipped == struct.pack("<i", 2)


def test_large_arrays_go_out_of_band():
    s, r = both()
    prompt = list(range(63))  # 252 B: inline
    frame, m = through(s, r, step(new=[("x", prompt, [0], 63)]))
    assert type(m.new[0].prompt_token_ids) is bytes and m.oob == []
    prompt = list(range(OOB_THRESHOLD_BYTES // 4))  # 256 B: out of band
    frame, m = through(s, r, step(new=[("y", prompt, [1], 64)]))
    assert m.new[0].prompt_token_ids == 0 and m.oob == [64]
    assert frame.endswith(np.arange(64, dtype="<i4").tobytes())
    # the stateless wire codec writes the same bytes back (the floor's replay)
    wire = scheduler_output_codec("slots")
    assert wire.encode(wire.decode(frame)) == frame


def drive_slots(policy: str, cfg, reqs, max_steps: int = 5000) -> Run:
    """``test_preemption.drive`` with every message through slots both ways: each
    decoded SchedulerOutput equals the one built, and the runner runs on it."""
    sched, runner = Scheduler(cfg, policy), ModelRunner(cfg, MODEL, policy)
    (s_enc, s_dec), (r_enc, r_dec) = session_codecs("slots", "scheduler"), \
        session_codecs("slots", "runner")
    run, wl = Run(sched, runner), workload(reqs)
    for _ in range(max_steps):
        for q in wl.arrivals(sched.step):
            sched.add_request(q.req_id, q.index, q.prompt_token_ids, q.max_tokens)
        if not sched.has_unfinished_requests():
            nxt = wl.next_arrival_step()
            if nxt is None:
                return run
            sched.step = max(nxt, sched.step + 1)
            continue
        plan = sched.schedule()
        built = sched.build_scheduler_output(plan)
        so = r_dec(s_enc(built))
        assert so == built and list(so.num_scheduled_tokens) == list(built.num_scheduled_tokens)
        runner.update_states(so)
        check_runner(sched, runner, so, policy)
        inputs = runner.prepare_inputs(so)
        valid = runner.write_back(inputs, runner.sample(inputs))
        sched.update_from_output(plan, s_dec(r_enc(runner.build_output(inputs, valid))))
        run.plans.append(plan)
    raise AssertionError(f"not finished after {max_steps} steps")


@pytest.mark.parametrize("policy", ["send", "cached"])
@pytest.mark.parametrize("num_blocks", [MIXED_TINY_BLOCKS, PLENTY])
def test_scheduler_runs_round_trip_with_equal_tokens(policy, num_blocks):
    """Chunked prefill (budget 16), 11 preemptions with the tiny cache, finishes and
    slot reuse: every step decodes to the message built; tokens equal msgpack's."""
    cfg = config(num_blocks, **MIXED_CFG)
    run = drive_slots(policy, cfg, MIXED)
    assert run.digest == drive(policy, cfg, MIXED).digest
    if num_blocks == MIXED_TINY_BLOCKS:
        assert run.sched.num_preemptions == 11


def test_errors_are_one_line_decode_errors():
    s, r = both()
    with pytest.raises(DecodeError, match="SlotsStep"):
        r.decode(b"\x01\x00")
    frame = s.encode(step(new=[("a", [1], [0], 1)]))
    r2 = SlotsRunnerSide()
    r2.decode(frame)
    s2 = SlotsSchedulerSide()
    s2.slot_of["zz"] = 5  # a slot the runner never saw
    s2.t.put(5, "zz")
    with pytest.raises(DecodeError, match="holds no request"):
        r2.decode(s2.encode(step(cached=[("zz", 3, 1, [], False)])))
    with pytest.raises(DecodeError, match="no step in flight"):
        SlotsSchedulerSide().decode(SlotsRunnerSide().encode(
            ModelRunnerOutput([], {}, [])))


def test_replicated_step_exact_bytes():
    """replicated: step number, arrivals, 8-byte schedule digest (blake2b of the
    MessagePack of num_scheduled_tokens, computed here independently)."""
    import hashlib

    import msgspec

    from ipc_bench.engine.config import SchedulerConfig
    from ipc_bench.wire.replicated import ReplicatedRunnerSide, ReplicatedSchedulerSide

    cfg = SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=64, max_model_len=128,
                          num_blocks=64)
    sched = Scheduler(cfg, "cached")
    end, replica = ReplicatedSchedulerSide(), ReplicatedRunnerSide(cfg, "cached")
    end.attach(sched)
    sched.add_request(RID, 0, [5, 70000], 8)
    plan = sched.schedule()
    so = sched.build_scheduler_output(plan)
    frame = end.encode(so)
    digest = hashlib.blake2b(msgspec.msgpack.encode({RID: 2}), digest_size=8).digest()
    arrival = (b"\x94\xd9\x27" + RID.encode() + b"\x00"
               + b"\xc4\x08" + struct.pack("<2i", 5, 70000) + b"\x08")
    header = b"\x94\x00\x91" + arrival + b"\xc4\x08" + digest + b"\x90"
    assert frame == struct.pack("<I", len(header)) + header
    assert replica.decode(frame) == so  # the replica schedules the same step
    # a step with no arrival: 18 bytes whatever the batch
    out = ModelRunnerOutput([RID], {RID: 0}, [[9]])
    sched.update_from_output(plan, end.decode(replica.encode(out)))
    assert len(end.encode(sched.build_scheduler_output(sched.schedule()))) == 18
