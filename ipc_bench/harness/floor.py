"""The floor: a case's recorded frames exchanged again, bare.

After a two-process case, the scheduler replays the SchedulerOutput messages of its
counted steps through the same codec and sockets, and the runner answers each with
the ModelRunnerOutput it sent for the same step: no scheduling, no runner work, no
per-step records. The floor's step time is what the exchange alone costs, so a case's
step time over the floor's (``step_to_floor_ratio``) is the harness's overhead,
measured side by side.

Sequence: the scheduler sends the marker and ``BeginFloor(steps)``; the runner decodes
the recorded replies of those steps and answers ``FloorReady`` (the floor's clock
starts only then, so no floor step pays for that decoding); then one frame and one
reply per step, each encoded and decoded as in the case.

Both ends decode a message per counted step before the floor starts (the scheduler its
frames, before the marker; the runner its replies, before ``FloorReady``), while the
other end waits under its peer timeout. ``decode_all`` does it with the collector off
and freezes what it decoded: every decoded message lives on, so a collection would
only walk them, and the walks grew with the step count (decoding 30,000 msgpack
frames of 16 running requests took 1.13 s with the collector on, 0.41 s with it off).
The scheduler collects and freezes the case's heap before it decodes, not after the
runner is ready, so that collection also happens before the marker (one call, under
``wire.control.beating``). Whatever is left
grows with the step count, so while it decodes each end sends ``KeepAlive`` to the
other every quarter of the peer timeout (``wire.control.Heartbeat``: the scheduler
markers with ``KeepAlive``, which the runner's loop reads before the floor's marker;
the runner ``KeepAlive`` on the control socket, which the scheduler's wait for
``FloorReady`` skips).

Progress: ``replay_floor`` tells its ``progress`` callable (the case's bar or
heartbeat, ``progress.CaseHeartbeat.floor``, passed by the supervisor) how far it is:
as it begins, every so many steps
(as the callable asks), as it ends; no floor step's time holds a call's, though the
step after one may run with colder caches (one step in each stride the callable asks
for: about 0.1 s of steps for the bar, a second or more for the heartbeat).
"""

from __future__ import annotations

import gc
import time
from typing import Callable, Optional

from ipc_bench.engine.scheduler import ProtocolError
from ipc_bench.harness.memory import freeze_heap, thaw_heap
from ipc_bench.harness.scheduler_loop import undecodable_text
from ipc_bench.harness.spec import CaseError
from ipc_bench.wire.channel import FLOOR_REPLY, FLOOR_REQUEST, RunnerChannel
from ipc_bench.wire.codecs import DecodeError, model_runner_output_codec, scheduler_output_codec
from ipc_bench.wire.control import (BeginFloor, ErrorReport, FloorReady, Heartbeat,
                                    KeepAlive, beating, no_beat)

#: ``progress(done, total)`` -> the count of steps done at which to call it next:
#: ``done`` of the floor's ``total`` steps replayed, 0 as it begins (before its
#: messages are decoded) and ``total`` as it ends.
FloorProgress = Callable[[int, int], int]


def decode_all(decode, frames, beat: Callable[[], None] = no_beat) -> list:
    """``decode`` of each of ``frames``, in order, with the collector off, ``beat()``
    after each (``Heartbeat.beat``); what was decoded is then frozen (``gc.freeze``:
    later collections do not walk it; the caller unfreezes when it is done, or never,
    as the runner, whose heap stays frozen from its warm-up to its exit)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        out = []
        append = out.append
        for frame in frames:
            append(decode(frame))
            beat()
        gc.freeze()
    finally:
        if enabled:
            gc.enable()
    return out


def replay_floor(exchange, codec: str, frames: list[bytes], seqs: list[int],
                 progress: Optional[FloorProgress] = None) -> list[int]:
    """Scheduler side: replay ``frames`` (the counted steps ``seqs``) through
    ``exchange`` (a ``scheduler_loop.ChannelExchange``), telling ``progress``
    (``FloorProgress``, none by default) how far it is, outside the steps' times.
    Returns ns per floor step. Raises ``CaseError`` if the runner fails or answers with
    garbage, and what ``progress`` raises."""
    s_codec = scheduler_output_codec(codec)  # stateless (slots: its wire part)
    channel = exchange.channel
    encode, decode = s_codec.encode, model_runner_output_codec(codec).decode
    perf = time.perf_counter_ns
    out = []
    next_i = len(frames) if progress is None else progress(0, len(frames)) - 1
    beat = exchange.heartbeat(fresh=False).beat  # after the end of the case's records
    with beating(beat):  # one call over the whole heap
        gc.collect()  # the case's garbage, before the messages exist (they all live on)
    owned = freeze_heap()
    try:
        msgs = decode_all(s_codec.decode, frames, beat)  # re-encoded: timed
        exchange.send_marker(BeginFloor(steps=seqs))
        ready = channel.recv_control("floor-ready message from the runner")
        if isinstance(ready, ErrorReport):
            raise CaseError(f"runner failed before the floor: {ready.message}")
        if not isinstance(ready, FloorReady):
            raise CaseError(f"expected FloorReady from the runner, got {type(ready).__name__}")
        t_prev = perf()
        for i, so in enumerate(msgs):
            channel.send(encode(so), i, FLOOR_REQUEST)
            reply = channel.recv(i, label=FLOOR_REPLY)
            if not reply:
                raise exchange.read_runner_error(i)
            try:
                decode(reply)
            except DecodeError as exc:
                origin = getattr(exchange, "reply_origin", None)
                raise CaseError(f"floor step {i}: {undecodable_text(len(reply), origin)}: "
                                f"{exc}") from None
            t = perf()
            out.append(t - t_prev)
            if i >= next_i:  # outside the floor's step times
                next_i = progress(i + 1, len(msgs)) - 1
                t = perf()
            t_prev = t
    finally:
        thaw_heap(owned)
    if progress is not None:
        progress(len(msgs), len(msgs))
    return out


def answer_floor(channel: RunnerChannel, codec: str, out_frames, seqs: list[int],
                 timeout_s: Optional[float] = None) -> None:
    """Runner side: answer each floor frame with the recorded reply (``out_frames``,
    one per step the runner executed) of the same step. ``ProtocolError`` for steps
    it never ran or an empty frame in the middle of the floor. While it decodes the
    replies it sends ``KeepAlive`` every quarter of ``timeout_s`` (the scheduler's
    peer timeout; default ``channel.timeout_s``)."""
    if any(not 0 <= s < len(out_frames) for s in seqs):
        raise ProtocolError(f"floor steps outside the {len(out_frames)} steps run")
    reply_codec = model_runner_output_codec(codec)
    decode = scheduler_output_codec(codec).decode
    beat = Heartbeat(lambda: channel.send_control(KeepAlive()),
                     channel.timeout_s if timeout_s is None else timeout_s).beat
    outs = decode_all(reply_codec.decode, (out_frames[s] for s in seqs), beat)
    channel.send_control(FloorReady())
    for i, out in enumerate(outs):
        frame = channel.recv(i, FLOOR_REQUEST)
        if not frame:
            raise ProtocolError(f"empty frame in the middle of the floor (frame {i})")
        decode(frame)
        channel.reply(reply_codec.encode(out), i, FLOOR_REPLY)
