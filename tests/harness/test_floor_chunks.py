"""The floor decodes its recorded messages a chunk of steps at a time
(``floor.FLOOR_CHUNK_STEPS``, ``BeginFloor.chunk_steps``): one floor step time and one
recorded reply per counted step across the chunks, at most one chunk decoded at a time
on either end, a ``FloorReady`` per chunk, no chunk's decoding inside a step's time, and
a runner that fails between two chunks ends the floor with the usual line.

The scheduler runs here (``run_case``), with small chunks (``FLOOR_CHUNK_STEPS``
patched: the runner follows ``BeginFloor.chunk_steps``); the runner side's bound is
checked in this process too, ``answer_floor`` over a channel that replays frames.
"""

from __future__ import annotations

import sys
import textwrap

import pytest

from fault_helpers import FAKE_RUNNER, SlowDecode, steady_case
from ipc_bench.engine.scheduler import ProtocolError
from ipc_bench.harness import floor
from ipc_bench.harness.scheduler_loop import ChannelExchange
from ipc_bench.harness.spec import CaseResult
from ipc_bench.harness.supervisor import run_case
from ipc_bench.wire import channel as channel_module
from ipc_bench.wire import tp as tp_module
from ipc_bench.wire.channel import FLOOR_REPLY, FLOOR_REQUEST
from ipc_bench.wire.control import FLOOR_CHUNK_STEPS, BeginFloor, KeepAlive, Stop

WARMUP = 5  # steady_case's


class _Decoded(list):
    """A chunk's decoded messages (``floor.decode_all``'s list), counted while alive."""

    live = 0
    most = 0

    def __init__(self, items):
        super().__init__(items)
        _Decoded.live += len(self)
        _Decoded.most = max(_Decoded.most, _Decoded.live)
        self.counted = len(self)

    def __del__(self):
        _Decoded.live -= self.counted


def _count_decoded(monkeypatch) -> list[tuple[int, int]]:
    """``floor.decode_all`` made to return a ``_Decoded``; returns ``(messages alive
    as the call starts, messages it decoded)`` for each call, in order."""
    real = floor.decode_all
    _Decoded.live = _Decoded.most = 0
    calls = []

    def decode_all(decode, frames, beat=floor.no_beat):
        calls.append([_Decoded.live])
        out = _Decoded(real(decode, frames, beat))
        calls[-1].append(len(out))
        return out

    monkeypatch.setattr(floor, "decode_all", decode_all)
    return calls


def _count_control(monkeypatch) -> dict[str, int]:
    """Counts of each control message type the scheduler reads (``KeepAlive`` included,
    which its waits skip)."""
    counts: dict[str, int] = {}
    real = channel_module.decode_control

    def decode_control(frame, what="a control message"):
        msg = real(frame, what)
        counts[type(msg).__name__] = counts.get(type(msg).__name__, 0) + 1
        return msg

    monkeypatch.setattr(channel_module, "decode_control", decode_control)
    monkeypatch.setattr(tp_module, "decode_control", decode_control)
    return counts


def _spec(steps: int, **kw):
    spec = steady_case(max_steps=steps, **kw)
    spec.floor = True
    return spec


def test_the_default_chunk():
    assert FLOOR_CHUNK_STEPS == 4096 and BeginFloor(steps=[1]).chunk_steps == 4096


def test_a_floor_over_several_chunks_times_and_answers_every_counted_step(monkeypatch):
    # 55 counted steps in chunks of 7: 7 x 7 + 6
    monkeypatch.setattr(floor, "FLOOR_CHUNK_STEPS", 7)
    calls = _count_decoded(monkeypatch)
    control = _count_control(monkeypatch)
    replies = []
    real_codec = floor.model_runner_output_codec

    class Recording:  # the scheduler's decoder of the floor's replies
        def __init__(self, codec):
            self.codec = codec

        def decode(self, frame):
            replies.append(bytes(frame))
            return self.codec.decode(frame)

    monkeypatch.setattr(floor, "model_runner_output_codec",
                        lambda name: Recording(real_codec(name)))
    result = run_case(_spec(60))
    assert result.error is None and result.counted_seqs == list(range(WARMUP, 60))
    assert len(result.floor_step_ns) == 55 and min(result.floor_step_ns) > 0
    # the runner answered each floor step with its recorded reply of the same step
    assert len(result.r2s_frames) == 55 and replies == [bytes(f) for f in result.r2s_frames]
    # the scheduler's chunks: each decoded with the one before released
    assert calls == [[0, 7]] * 7 + [[0, 6]] and _Decoded.most == 7
    assert control["FloorReady"] == 8


@pytest.mark.parametrize("tp,transport", [(None, "ipc"), (2, "ipc"), (None, "shm")])
def test_the_runner_waits_while_the_scheduler_decodes_a_later_chunk(monkeypatch, tp,
                                                                     transport):
    # 60 counted steps in chunks of 20, each of the scheduler's decodes 60 ms: a chunk
    # is 1.2 s, over a quarter of the 4 s peer timeout, so the scheduler sends a
    # KeepAlive marker while it decodes each later chunk, which each runner (each rank)
    # reads before the chunk's first frame (through the ring with shm). 4 s, not 2 s: the
    # whole run's steps wait under it, and a loaded machine can stall one for 2 s.
    monkeypatch.setattr(floor, "FLOOR_CHUNK_STEPS", 20)
    real = floor.scheduler_output_codec
    monkeypatch.setattr(floor, "scheduler_output_codec",
                        lambda name: SlowDecode(real(name), 0.06))
    heartbeats = []
    real_heartbeat = ChannelExchange.heartbeat

    def heartbeat(self, fresh=True):
        heartbeats.append(real_heartbeat(self, fresh))
        return heartbeats[-1]

    monkeypatch.setattr(ChannelExchange, "heartbeat", heartbeat)
    control = _count_control(monkeypatch)
    result = run_case(_spec(65, peer_timeout_s=4.0, tp=tp, transport=transport))
    assert result.error is None and len(result.floor_step_ns) == 60
    # the floor's heartbeats: the first chunk's, then one made at each later chunk
    floor_beats = heartbeats[-3:]
    assert all(h.sent >= 1 for h in floor_beats[1:]), [h.sent for h in floor_beats]
    assert control["FloorReady"] == 3 * (tp or 1)


def test_no_floor_step_holds_a_chunks_decoding(monkeypatch):
    # 20 counted steps in chunks of 5; each end takes 0.1 s more per message decoded,
    # so each chunk's decoding takes at least 0.5 s on each end: no step took as long
    monkeypatch.setattr(floor, "FLOOR_CHUNK_STEPS", 5)
    real = floor.scheduler_output_codec
    monkeypatch.setattr(floor, "scheduler_output_codec",
                        lambda name: SlowDecode(real(name), 0.1))
    monkeypatch.setenv("FAKE_RUNNER_MODE", "slow-floor")
    monkeypatch.setenv("FAKE_RUNNER_DELAY_S", "0.1")
    calls = _count_decoded(monkeypatch)
    result = run_case(_spec(25), runner_command=[sys.executable, str(FAKE_RUNNER)])
    assert result.error is None and len(result.floor_step_ns) == 20
    assert calls == [[0, 5]] * 4
    assert max(result.floor_step_ns) < 0.5e9, sorted(result.floor_step_ns)[-3:]


def _failing_runner(how: str, at: int) -> list[str]:
    """A runner whose decoding of its ``at``-th recorded reply for the floor (from 1)
    exits with code 7 (``how``: ``"exit"``) or raises (``"raise"``)."""
    code = textwrap.dedent(f"""
        import os, sys, time
        from ipc_bench.harness import floor, runner_loop
        real = floor.model_runner_output_codec
        class Failing:
            def __init__(self, codec):
                self.codec, self.encode, self.n = codec, codec.encode, 0
            def decode(self, frame):
                self.n += 1
                if self.n == {at} and {how!r} == "exit":
                    time.sleep(0.5)  # the last reply sent reaches the scheduler first
                    print("chunk runner: exiting at reply {at}", file=sys.stderr, flush=True)
                    os._exit(7)
                if self.n == {at}:
                    raise ValueError("bad reply {at}")
                return self.codec.decode(frame)
        floor.model_runner_output_codec = lambda name: Failing(real(name))
        sys.exit(runner_loop.runner_main(sys.argv[1]))
    """)
    return [sys.executable, "-c", code]


def test_a_runner_that_exits_between_chunks_fails_the_floor(monkeypatch):
    # chunks of 7: the runner exits decoding its 10th reply, the second chunk's third,
    # after answering the first chunk's 7 steps, while the scheduler waits for FloorReady
    monkeypatch.setattr(floor, "FLOOR_CHUNK_STEPS", 7)
    spec = _spec(40)
    result = CaseResult(spec)
    with pytest.raises(Exception) as info:
        run_case(spec, runner_command=_failing_runner("exit", 10), result=result)
    line = (f"runner process {result.runner_pid} exited with code 7 (chunk runner: "
            "exiting at reply 10), noticed while waiting for floor-ready message from the "
            "runner")
    assert str(info.value) == line and result.floor_failed == line
    assert result.floor_step_ns == [] and len(result.counted_seqs) == 35


def test_a_runner_that_fails_between_chunks_reports_it(monkeypatch):
    # the same runner raising instead: its ErrorReport comes in FloorReady's place
    monkeypatch.setattr(floor, "FLOOR_CHUNK_STEPS", 7)
    spec = _spec(40)
    result = CaseResult(spec)
    with pytest.raises(Exception) as info:
        run_case(spec, runner_command=_failing_runner("raise", 10), result=result)
    # the runner's own line for an error in its loop
    line = ("runner failed before floor step 7: ValueError while handling BeginFloor: "
            "bad reply 10")
    assert str(info.value) == line and result.floor_failed == line


# ======================================================================================
# The runner's end, in this process


class _Channel:
    """A runner's channel that serves ``frames`` (floor frame ``i`` is ``frames[i]``;
    ``extra[i]``: frames and control messages served before it) and records what the
    runner sends: ``sent`` holds ``("reply", i, frame)`` and control message types, each
    ``FloorReady`` with the messages decoded and alive as it was sent. ``chunk``: the
    scheduler's marker and ``KeepAlive`` that end each chunk of that many frames come
    first at each later chunk's first frame."""

    timeout_s = 10.0

    def __init__(self, frames, extra=None, chunk=None):
        self.frames, self.extra = frames, {i: list(v) for i, v in (extra or {}).items()}
        for i in range(chunk or len(frames), len(frames), chunk or 1):
            self.extra[i] = [(b"", KeepAlive())] + self.extra.get(i, [])
        self.sent = []
        self.control = []

    def recv(self, i, label):
        assert label == FLOOR_REQUEST
        pending = self.extra.get(i)
        if pending:
            frame, msg = pending.pop(0)
            self.control.append(msg)
            return frame
        return self.frames[i]

    def recv_control(self, what):
        return self.control.pop(0)

    def send_control(self, msg):
        self.sent.append((type(msg).__name__, _Decoded.live))

    def reply(self, frame, i, label):
        assert label == FLOOR_REPLY
        self.sent.append(("reply", i, frame))


@pytest.fixture(scope="module")
def recorded():
    """The counted steps' frames of a short case: (SchedulerOutput, ModelRunnerOutput)."""
    result = run_case(steady_case(max_steps=25))
    assert result.error is None and len(result.s2r_frames) == 20
    return [bytes(f) for f in result.s2r_frames], [bytes(f) for f in result.r2s_frames]


def test_the_runner_holds_one_chunk_and_answers_each_frame_with_its_recorded_reply(
        monkeypatch, recorded):
    s2r, r2s = recorded
    calls = _count_decoded(monkeypatch)
    channel = _Channel(s2r[:18], chunk=4)
    # the recorded replies of steps 2..19, as the floor of counted steps 2..19 asks
    floor.answer_floor(channel, "msgpack", r2s, list(range(2, 20)), chunk_steps=4)
    assert calls == [[0, 4]] * 4 + [[0, 2]] and _Decoded.most == 4 and _Decoded.live == 0
    ready = [("FloorReady", 4)] * 4 + [("FloorReady", 2)]
    replies = [("reply", i, r2s[i + 2]) for i in range(18)]
    assert channel.sent == (ready[:1] + replies[0:4] + ready[1:2] + replies[4:8]
                            + ready[2:3] + replies[8:12] + ready[3:4] + replies[12:16]
                            + ready[4:] + replies[16:])


def test_the_runner_skips_keepalive_markers_before_a_chunk_only(recorded):
    s2r, r2s = recorded
    steps = list(range(8))
    channel = _Channel(s2r, {4: [(b"", KeepAlive()), (b"", KeepAlive())]}, chunk=4)
    floor.answer_floor(channel, "msgpack", r2s, steps, chunk_steps=4)
    assert [s[2] for s in channel.sent if s[0] == "reply"] == r2s[:8]
    with pytest.raises(ProtocolError) as info:
        floor.answer_floor(_Channel(s2r, {4: [(b"", Stop())]}, chunk=4), "msgpack", r2s,
                           steps, chunk_steps=4)
    assert str(info.value) == "expected KeepAlive before floor frame 4, got Stop"
    with pytest.raises(ProtocolError) as info:
        floor.answer_floor(_Channel(s2r, {5: [(b"", KeepAlive())]}, chunk=4), "msgpack",
                           r2s, steps, chunk_steps=4)
    assert str(info.value) == "empty frame in the middle of the floor (frame 5)"
    with pytest.raises(ProtocolError) as info:
        floor.answer_floor(_Channel(s2r), "msgpack", r2s, steps, chunk_steps=0)
    assert str(info.value) == "floor chunks of 0 steps"


def test_the_runner_decodes_a_later_chunk_only_once_the_scheduler_has_timed_the_last(
        monkeypatch, recorded):
    """The scheduler's marker and ``KeepAlive`` end each chunk (its last step timed);
    the runner decodes the next chunk only then, never while the last step's reply is
    on its way. Without them, or with another message in their place, a
    ``ProtocolError``."""
    s2r, r2s = recorded
    steps = list(range(8))
    calls = _count_decoded(monkeypatch)
    channel = _Channel(s2r, chunk=4)
    order = []
    real_recv_control = channel.recv_control
    channel.recv_control = lambda what: order.append((what, list(calls))) or \
        real_recv_control(what)
    floor.answer_floor(channel, "msgpack", r2s, steps, chunk_steps=4)
    assert order == [("KeepAlive before floor frame 4", [[0, 4]])]  # one chunk decoded
    assert calls == [[0, 4], [0, 4]]
    with pytest.raises(ProtocolError) as info:
        floor.answer_floor(_Channel(s2r), "msgpack", r2s, steps, chunk_steps=4)
    assert str(info.value) == ("floor frame 4 before the scheduler's marker that ends the "
                               "last chunk")
    with pytest.raises(ProtocolError) as info:
        floor.answer_floor(_Channel(s2r, {4: [(b"", Stop())]}), "msgpack", r2s, steps,
                           chunk_steps=4)
    assert str(info.value) == "expected KeepAlive after the last chunk's marker, got Stop"
