"""The floor: a case's recorded frames exchanged again, bare.

After a two-process case, the scheduler replays the SchedulerOutput messages of its
counted steps through the same codec and sockets, and the runner answers each with
the ModelRunnerOutput it sent for the same step: no scheduling, no runner work, no
per-step records. The floor's step time is what the exchange alone costs, so a case's
step time over the floor's (``step_to_floor_ratio``) is the harness's overhead,
measured side by side.

Sequence, ``FLOOR_CHUNK_STEPS`` (4,096) counted steps at a time: the scheduler decodes
its frames of the chunk (before the first chunk it then sends the marker and
``BeginFloor(steps, chunk_steps)``); the runner decodes its recorded replies of the
chunk and answers ``FloorReady``; the scheduler starts the clock of the chunk's first
step only once it has that and its own frames decoded, so no floor step pays for either
end's decoding; then one frame and one reply per step of the chunk, each encoded and
decoded as in the case; then each end drops the chunk and decodes the next one (the
scheduler once it has timed the chunk's last step, when it also sends a marker and
``KeepAlive``; the runner once it has that: both at the same time, and neither frees
nor decodes while the last step's reply is on its way). ``--tp`` ranks each answer
``FloorReady`` per chunk, and the scheduler's wait gathers one from every rank.

Chunks bound the floor's memory: a decoded message is several times its frame, and
decoding every counted step up front kept them all (at 256 running requests, 187 kB a
step in the scheduler and 123 kB in the runner where a case without a floor kept 68 kB
and 33 kB, so a 50,000-step case needed some 15 GB); a chunk at a time, each counted
step costs what it costs without a floor (63 kB and 33 kB, ``memory.STEP_BYTES_*``) and
the floor adds one chunk's messages, at most 4,096 steps' (about 118 kB and 90 kB a
step at 256 running, ``memory.FLOOR_CHUNK_BYTES_PER_RUNNING``: some 480 MB and 370 MB),
however many steps the case counted (``decode-steady``, msgpack, 2-core development
machine, 2026-12-05). Decoding a chunk of 1,024 steps took about 0.25 s in the
scheduler and 0.13 s in the runner at 256 running, far under the peer timeout. Chunks
cost the floor some speed: a chunk's first step runs with the caches its decoding
cooled (0.7 ms against about 0.27 ms for the others at 256 running, as the floor's
first step always did), and the first hundred or so steps of each later chunk run
slower than the rest (about 20 % for the first 128 at 256 running; a pause before
them, or the runner decoding after the scheduler, did not remove it; the cause is not
known): with chunks of 1,024 steps, at 256 running the floor's median step came out
about 5 % slower and its mean 8 % than with every counted step in one chunk (282
against 269 us and 299 against 276 us, the medians of 10 runs of 6,000 counted steps,
``--policies send``, on that machine while it was lightly loaded). Hence 4,096: a case
of up to 4,096 counted steps (the default is 1,000) replays its floor in one chunk, as
before chunks, and a longer one has one such start per 4,096 steps (about 3 % of its
floor steps), for a chunk's memory that the run's memory check counts.

``decode_all`` decodes a chunk with the collector off and freezes what it decoded: the
chunk's messages live until it ends, so a collection would only walk them, and the
walks grew with the messages alive (decoding 30,000 msgpack frames of 16 running
requests took 1.13 s with the collector on, 0.41 s with it off). Frozen objects are
still freed by their reference counts (``gc.freeze`` only hides them from the
collector; the decoded messages hold no reference cycles), so a dropped chunk's memory
is freed and reused by the next; the scheduler's freeze is undone at the floor's end
(``memory.thaw_heap``), the runner's heap stays frozen from its warm-up to its exit.
The scheduler collects and freezes the case's heap before its first chunk, not after
the runner is ready, so that collection also happens before the marker (one call,
under ``wire.control.beating``). While an end decodes, it sends ``KeepAlive`` to the
other every quarter of the peer timeout (``wire.control.Heartbeat``: the scheduler
markers with ``KeepAlive``, which the runner's loop reads before the floor's marker and
its floor before a later chunk's first frame, where it waits once done with its own
part of the chunk; the runner ``KeepAlive`` on the control socket, which the scheduler's
wait for ``FloorReady`` skips).

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

from ipc_bench.engine.config import DEFAULT_VLLM_LAYOUT
from ipc_bench.engine.scheduler import ProtocolError
from ipc_bench.harness.memory import freeze_heap, thaw_heap
from ipc_bench.harness.spec import CaseError
from ipc_bench.wire.channel import FLOOR_REPLY, FLOOR_REQUEST, RunnerChannel
from ipc_bench.wire.codecs import DecodeError, model_runner_output_codec, scheduler_output_codec
from ipc_bench.wire.control import (FLOOR_CHUNK_STEPS, BeginFloor, ErrorReport,
                                    FloorReady, Heartbeat, KeepAlive, beating, no_beat)
from ipc_bench.wire.decode_error import undecodable_text

#: ``progress(done, total)`` -> the count of steps done at which to call it next:
#: ``done`` of the floor's ``total`` steps replayed, 0 as it begins (before its
#: messages are decoded) and ``total`` as it ends.
FloorProgress = Callable[[int, int], int]


def decode_all(decode, frames, beat: Callable[[], None] = no_beat) -> list:
    """``decode`` of each of ``frames`` (a floor chunk's), in order, with the collector
    off, ``beat()`` after each (``Heartbeat.beat``); what was decoded is then frozen
    (``gc.freeze``: later collections do not walk it; it is still freed once the caller
    drops the list, and the caller unfreezes the rest of the heap when it is done, or
    never, as the runner, whose heap stays frozen from its warm-up to its exit)."""
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


def _s2r_codec(codec: str, layout: str):
    """``scheduler_output_codec`` of ``codec`` for frames of ``layout`` (called with the
    codec alone for the default layout, as before the layouts)."""
    if layout == DEFAULT_VLLM_LAYOUT:
        return scheduler_output_codec(codec)
    return scheduler_output_codec(codec, layout)


def replay_floor(exchange, codec: str, frames: list[bytes], seqs: list[int],
                 progress: Optional[FloorProgress] = None,
                 layout: str = DEFAULT_VLLM_LAYOUT) -> list[int]:
    """Scheduler side: replay ``frames`` (the counted steps ``seqs``) through
    ``exchange`` (a ``scheduler_loop.ChannelExchange``), ``FLOOR_CHUNK_STEPS`` at a
    time (this module's, read at the call), telling ``progress`` (``FloorProgress``,
    none by default) how far it is, outside the steps' times. Returns ns per floor step,
    one per frame. Raises ``CaseError`` if the runner fails or answers with garbage,
    and what ``progress`` raises. ``layout``: the frames' ``SchedulerOutput`` layout."""
    s_codec = _s2r_codec(codec, layout)  # stateless (slots: its wire part)
    channel = exchange.channel
    encode, decode = s_codec.encode, model_runner_output_codec(codec).decode
    perf = time.perf_counter_ns
    chunk = FLOOR_CHUNK_STEPS
    out = []
    next_i = len(frames) if progress is None else progress(0, len(frames)) - 1
    beat = exchange.heartbeat(fresh=False).beat  # after the end of the case's records
    with beating(beat):  # one call over the whole heap
        gc.collect()  # the case's garbage, before the messages exist
    owned = freeze_heap()
    try:
        for first in range(0, len(frames), chunk):
            if first:  # the runner has just had the last chunk's last frame
                beat = exchange.heartbeat().beat
            msgs = _ready_chunk(exchange, s_codec.decode, frames[first:first + chunk],
                                first, beat, seqs, chunk)
            t_prev = perf()
            for i, so in enumerate(msgs, first):
                channel.send(encode(so), i, FLOOR_REQUEST)
                reply = channel.recv(i, label=FLOOR_REPLY)
                if not reply:
                    raise exchange.read_runner_error(i)
                try:
                    decode(reply)
                except DecodeError as exc:
                    origin = getattr(exchange, "reply_origin", None)
                    raise CaseError(f"floor step {i}: "
                                    f"{undecodable_text(len(reply), origin)}: {exc}") from None
                t = perf()
                out.append(t - t_prev)
                if i >= next_i:  # outside the floor's step times
                    next_i = progress(i + 1, len(frames)) - 1
                    t = perf()
                t_prev = t
            msgs = so = None  # released (freed) before the next chunk is decoded
            if first + chunk < len(frames):  # the chunk's last step timed: the runner
                exchange.send_marker(KeepAlive())  # may decode its next one now
    finally:
        thaw_heap(owned)
    if progress is not None:
        progress(len(frames), len(frames))
    return out


def _ready_chunk(exchange, decode, frames: list[bytes], first: int,
                 beat: Callable[[], None], seqs: list[int], chunk: int) -> list:
    """``replay_floor``'s work before the floor step ``first``, the first of a chunk of
    ``frames``: decode them (``decode_all``, ``beat`` after each); before the first
    chunk, send the marker and ``BeginFloor(seqs, chunk)``; then wait for the runner's
    ``FloorReady`` (the replies of the same steps decoded). Returns the decoded
    messages. ``CaseError`` for an ``ErrorReport`` or another message in its place."""
    msgs = decode_all(decode, frames, beat)  # re-encoded: timed
    if not first:
        exchange.send_marker(BeginFloor(steps=seqs, chunk_steps=chunk))
    ready = exchange.channel.recv_control("floor-ready message from the runner")
    when = "before the floor" if not first else f"before floor step {first}"
    if isinstance(ready, ErrorReport):
        raise CaseError(f"runner failed {when}: {ready.message}")
    if not isinstance(ready, FloorReady):
        raise CaseError(f"expected FloorReady from the runner {when}, got "
                        f"{type(ready).__name__}")
    return msgs


def answer_floor(channel: RunnerChannel, codec: str, out_frames, seqs: list[int],
                 timeout_s: Optional[float] = None,
                 chunk_steps: int = FLOOR_CHUNK_STEPS,
                 layout: str = DEFAULT_VLLM_LAYOUT) -> None:
    """Runner side: answer each floor frame with the recorded reply (``out_frames``,
    one per step the runner executed) of the same step, ``chunk_steps`` steps at a
    time (``BeginFloor.chunk_steps``): decode the chunk's replies, send ``FloorReady``,
    answer the chunk's frames, drop the chunk. ``ProtocolError`` for steps it never
    ran, a ``chunk_steps`` under 1, an empty frame in the middle of a chunk or a control
    message other than ``KeepAlive`` before a chunk's first frame. While it decodes a
    chunk it sends ``KeepAlive`` every quarter of ``timeout_s`` (the scheduler's peer
    timeout; default ``channel.timeout_s``). ``layout``: the frames'
    ``SchedulerOutput`` layout."""
    if any(not 0 <= s < len(out_frames) for s in seqs):
        raise ProtocolError(f"floor steps outside the {len(out_frames)} steps run")
    if chunk_steps < 1:
        raise ProtocolError(f"floor chunks of {chunk_steps} steps")
    reply_codec = model_runner_output_codec(codec)
    decode = _s2r_codec(codec, layout).decode
    timeout_s = channel.timeout_s if timeout_s is None else timeout_s
    outs = None
    for first in range(0, len(seqs), chunk_steps):
        if first:
            _await_next_chunk(channel, first)
        outs = None  # the last chunk freed now, not while its last reply is on its way
        beat = Heartbeat(lambda: channel.send_control(KeepAlive()), timeout_s).beat
        outs = decode_all(reply_codec.decode,
                          (out_frames[s] for s in seqs[first:first + chunk_steps]), beat)
        channel.send_control(FloorReady())
        _answer_chunk(channel, decode, reply_codec.encode, outs, first)


def _await_next_chunk(channel: RunnerChannel, first: int) -> None:
    """``answer_floor``'s wait, before it frees the last chunk and decodes the one from
    floor frame ``first``, for the scheduler's marker and ``KeepAlive`` that say it has
    timed the last chunk's last step: freeing the chunk's messages as soon as it had
    replied to that step's frame, the runner made that step 1.5 to 8 ms against a median
    of 50 to 100 us (2 running, 9,000 counted steps, 2-core development machine;
    freed after the marker, the chunks' last steps are at the median). ``ProtocolError``
    for a frame or another control message in their place."""
    if channel.recv(first, FLOOR_REQUEST):
        raise ProtocolError(f"floor frame {first} before the scheduler's marker that "
                            "ends the last chunk")
    msg = channel.recv_control(f"KeepAlive before floor frame {first}")
    if not isinstance(msg, KeepAlive):
        raise ProtocolError(f"expected KeepAlive after the last chunk's marker, got "
                            f"{type(msg).__name__}")


def _answer_chunk(channel: RunnerChannel, decode, encode, outs: list, first: int) -> None:
    """``answer_floor``'s chunk: the floor frames ``first`` on, one per message of
    ``outs``, each answered with it encoded. Before the chunk's first frame, markers
    each followed by ``KeepAlive`` (the scheduler decoding its frames of the chunk) are
    skipped."""
    recv, reply = channel.recv, channel.reply
    for i, out in enumerate(outs, first):
        frame = recv(i, FLOOR_REQUEST)
        while not frame and i == first:
            msg = channel.recv_control(f"KeepAlive before floor frame {i}")
            if not isinstance(msg, KeepAlive):
                raise ProtocolError(f"expected KeepAlive before floor frame {i}, got "
                                    f"{type(msg).__name__}")
            frame = recv(i, FLOOR_REQUEST)
        if not frame:
            raise ProtocolError(f"empty frame in the middle of the floor (frame {i})")
        decode(frame)
        reply(encode(out), i, FLOOR_REPLY)
