"""The ``slots`` protocol: integer slots, raw int32 arrays, nothing for unchanged requests.

Issue 15 item 4. A stateful encoding of the scheduler <-> runner hop, selectable as the
codec ``slots`` (``wire.codecs``). The scheduler and the runner build and read the same
``engine.messages`` Structs as with ``msgpack``; this module turns them into a much
smaller step message and back, keeping a table of live requests on each side.

**Slots.** A request's first step names it by its string ``req_id`` and gives it a
slot: the lowest integer not held by a live request (the scheduler side assigns it;
it travels in ``SlotsNew``, the ``NewRequestData`` equivalent). From then on it is its
slot alone, in both directions, until its finish frees the slot (a finished slot can
be reused in the same step by a new request: finishes are applied first). The slot
indexes the runner's table of live requests, not the row of its ``InputBatch``: this
runner condenses its batch as vLLM does, so rows move and slots do not.

**Arrays.** Every per-request list is an int32 numpy array. As vLLM's
``serial_utils`` (``MsgpackEncoder``: arrays of ``VLLM_MSGPACK_ZERO_COPY_THRESHOLD``
= 256 B or more go out of band), an array under ``OOB_THRESHOLD_BYTES`` rides inline
in the MessagePack header as raw ``bin`` bytes; a larger one is written after the
header, raw, and the header holds its index. Frame layout: a 4-byte little-endian
header length, the header, then the out-of-band arrays, each padded to 4 bytes. They
travel in the same ZeroMQ frame, not as extra frames (the harness's channels carry one
frame per message): as separate frames each would add its ZMTP frame header (9 B
above 255 B, ``transport.zmtp_frame_bytes``) and drop the 4-byte length and padding.
The decoder reads them zero-copy (``np.frombuffer`` over the frame).

**What is sent** for a step (``SlotsStep``), against what the runner infers. The
runner keeps, per slot, the ``num_computed_tokens`` the request will have at its next
step (``num_computed + num_scheduled`` of its last step) and the last step's
scheduled order. It infers, for every request of that order that is neither finished
nor ``skipped``: scheduled again, one token, at that ``num_computed_tokens``, no new
block, not resumed, in the same relative order. Everything else is sent:

- ``new``: a request scheduled for the first time: slot, ``req_id``, prompt, sampling
  params, block ids, ``num_computed_tokens``, tokens scheduled;
- ``finished``: slots of ``finished_req_ids`` (freed);
- ``skipped``: slots of the last order that are not scheduled now and did not finish
  (preempted, or left out by the token budget; they leave the order);
- ``tail``: slots scheduled now that were not in the last order (new, resumed after
  preemption, back after a skip), in scheduled order, after the inferred ones;
- ``changed``: a cached request whose ``num_computed_tokens`` is not the inferred one
  (resumed: 0), whose tokens scheduled are not 1 (chunked prefill), that got new blocks
  or resumed: parallel arrays ``changed_slots``, ``changed_num_computed``,
  ``changed_num_scheduled``, ``block_counts`` (new blocks per changed slot; for a
  resumed one all its blocks, which replace the old ones) over one flat ``blocks``,
  and ``resumed`` (the changed slots resumed);
- ``tokens``: under ``send``, the ids of ``new_token_ids`` of every cached request,
  flat, in order (the runner splits them by tokens scheduled); empty under ``cached``;
- ``order``: the whole scheduled order, only when the inferred order (survivors in
  last-order order, then ``tail``) is not the scheduled one; ``None`` otherwise.

A decoding request under ``cached`` with no new block sends nothing. The runner's
reply (``SlotsReply``) is one int32 array: the token sampled for each request of the
step's scheduled order, -1 where nothing was sampled (a partial prefill); the
scheduler side rebuilds its ``ModelRunnerOutput`` from its own order.

``SlotsSchedulerSide`` (encode ``SchedulerOutput``, decode the reply) and
``SlotsRunnerSide`` (decode ``SchedulerOutput``, encode ``ModelRunnerOutput``) keep
the state; ``SlotsWireCodec`` is the stateless part (frame <-> ``SlotsStep`` /
``SlotsReply``), what the floor replays and what captures and microbenchmarks time.
Protocol errors (an unknown slot, an array of the wrong length) raise
``DecodeError`` on the runner side and ``ValueError`` on the scheduler side.
"""

from __future__ import annotations

import heapq
import struct
from itertools import chain
from typing import Any, Optional, Union

import msgspec
import numpy as np

from ipc_bench.engine.messages import (CachedRequestData, ModelRunnerOutput, NewRequestData,
                                       SamplingParams, SchedulerOutput)
from ipc_bench.errors import one_line
from ipc_bench.wire.decode_error import DecodeError

#: Arrays of this many bytes or more travel out of band (vLLM serial_utils' default
#: ``VLLM_MSGPACK_ZERO_COPY_THRESHOLD``).
OOB_THRESHOLD_BYTES = 256
_I32 = np.dtype("<i4")
_EMPTY = b""
_LEN = struct.Struct("<I")

#: An int32 array on the wire: raw bytes inline, or the index of an out-of-band buffer.
Arr = Union[bytes, int]


class SlotsNew(msgspec.Struct, array_like=True, gc=False):
    """A request's first step: it gets ``slot``; its ids and blocks are int32 arrays."""

    slot: int
    req_id: str
    prompt_token_ids: Arr
    sampling_params: SamplingParams
    block_ids: Arr
    num_computed_tokens: int
    num_scheduled: int


class SlotsStep(msgspec.Struct, array_like=True, gc=False):
    """One scheduler step in slots (module docstring: what each field holds).
    ``oob``: the element count of each out-of-band array, in index order."""

    new: list[SlotsNew]
    finished: Arr
    skipped: Arr
    tail: Arr
    changed_slots: Arr
    changed_num_computed: Arr
    changed_num_scheduled: Arr
    block_counts: Arr
    blocks: Arr
    resumed: Arr
    tokens: Arr
    order: Optional[Arr]
    oob: list[int]


class SlotsReply(msgspec.Struct, array_like=True, gc=False):
    """One runner step: the token sampled per scheduled request, in the step's order
    (-1: none, a partial prefill); ``oob`` as ``SlotsStep``'s."""

    tokens: Arr
    oob: list[int]


# ======================================================================================
# Frames: header + out-of-band arrays


class _Out:
    """The out-of-band buffers of one frame being encoded."""

    __slots__ = ("bufs", "counts")

    def __init__(self):
        self.bufs: list[bytes] = []
        self.counts: list[int] = []

    def arr(self, values) -> Arr:
        """``values`` (a list of ints) as an ``Arr``: inline under the threshold."""
        if not values:
            return _EMPTY
        data = np.array(values, dtype=_I32).tobytes()
        if len(data) < OOB_THRESHOLD_BYTES:
            return data
        self.bufs.append(data)
        self.counts.append(len(values))
        return len(self.bufs) - 1


def pack_frame(header: bytes, bufs: list[bytes]) -> bytes:
    """4-byte header length, the header, padding to 4 bytes, then the buffers (int32:
    their lengths are multiples of 4)."""
    if not bufs:
        return _LEN.pack(len(header)) + header
    return b"".join([_LEN.pack(len(header)), header, b"\0" * ((-len(header)) % 4), *bufs])


def _split(msg, rest: memoryview) -> list[np.ndarray]:
    """The out-of-band arrays (zero-copy int32 views of ``rest``) by ``msg.oob``."""
    total = sum(msg.oob)
    if any(n <= 0 for n in msg.oob) or len(rest) != 4 * total:
        raise ValueError(f"out-of-band part of {len(rest)} bytes for arrays of "
                         f"{msg.oob} int32")
    flat = np.frombuffer(rest, dtype=_I32)
    out, at = [], 0
    for n in msg.oob:
        out.append(flat[at:at + n])
        at += n
    return out


def unpack_frame(frame, decoder) -> tuple[Any, list[np.ndarray]]:
    """-> (header message, out-of-band arrays). ``ValueError`` / ``msgspec.DecodeError``
    on a malformed frame."""
    mv = memoryview(frame)
    if len(mv) < 4:
        raise ValueError(f"a frame of {len(mv)} bytes")
    (n,) = _LEN.unpack_from(mv)
    if 4 + n > len(mv):
        raise ValueError(f"a header of {n} bytes in a frame of {len(mv)}")
    msg = decoder.decode(mv[4:4 + n])
    if not msg.oob:
        if len(mv) != 4 + n:
            raise ValueError(f"{len(mv) - 4 - n} bytes after a header with no array")
        return msg, []
    return msg, _split(msg, mv[4 + n + (-n) % 4:])


def _get(a: Arr, oob: list[np.ndarray]) -> np.ndarray:
    """An ``Arr`` as an int32 array (``IndexError`` for a missing buffer)."""
    if type(a) is bytes:
        if len(a) % 4:
            raise ValueError(f"an inline array of {len(a)} bytes")
        return np.frombuffer(a, dtype=_I32)
    return oob[a]


class SlotsWireCodec:
    """Stateless: frame <-> ``(SlotsStep or SlotsReply, [out-of-band int32 arrays])``;
    ``encode`` of what ``decode`` returned writes the same bytes."""

    def __init__(self, msg_type: type):
        self.msg_type = msg_type
        self._encode = msgspec.msgpack.Encoder().encode
        self.decoder = msgspec.msgpack.Decoder(msg_type)

    def encode(self, item) -> bytes:
        msg, bufs = item
        return pack_frame(self._encode(msg), [b.tobytes() for b in bufs])

    def decode(self, frame) -> tuple[Any, list[np.ndarray]]:
        try:
            return unpack_frame(frame, self.decoder)
        except (ValueError, msgspec.DecodeError) as exc:
            raise DecodeError(one_line(f"{self.msg_type.__name__}: {exc}")) from None


# ======================================================================================
# The two stateful ends


class _Table:
    """Live requests by slot, and each slot's inferred ``num_computed_tokens``."""

    def __init__(self):
        self.req_of: list[Optional[str]] = []
        self.expect: list[int] = []
        self.prev: list[int] = []  # the last step's scheduled order (slots)

    def put(self, slot: int, req_id: str) -> None:
        if not 0 <= slot < 1 << 31:
            raise ValueError(f"slot {slot} out of range")
        while len(self.req_of) <= slot:
            self.req_of.append(None)
            self.expect.append(0)
        if self.req_of[slot] is not None:
            raise ValueError(f"slot {slot} is held by {self.req_of[slot]}")
        self.req_of[slot] = req_id


_STEP_WIRE = SlotsWireCodec(SlotsStep)
_REPLY_WIRE = SlotsWireCodec(SlotsReply)
_ENCODE = msgspec.msgpack.Encoder().encode


class SlotsSchedulerSide:
    """The scheduler's end: ``encode(SchedulerOutput) -> frame`` assigns slots and sends
    what the runner cannot infer; ``decode(reply frame) -> ModelRunnerOutput`` names
    the tokens by the order of the step they answer (steps in flight are queued, so
    async scheduling works). Its state is plain data (``copy.deepcopy`` copies it)."""

    _reply, _enc = _REPLY_WIRE, _ENCODE  # stateless, shared

    def __init__(self):
        self.t = _Table()
        self.slot_of: dict[str, int] = {}
        self.free: list[int] = []  # a heap of freed slots
        self.orders: list[list[str]] = []  # the scheduled req_ids of steps in flight

    def _alloc(self, req_id: str) -> int:
        slot = heapq.heappop(self.free) if self.free else len(self.t.req_of)
        self.t.put(slot, req_id)
        self.slot_of[req_id] = slot
        return slot

    def _release(self, req_id: str) -> int:
        slot = self.slot_of.pop(req_id)
        self.t.req_of[slot] = None
        heapq.heappush(self.free, slot)
        return slot

    def encode(self, so: SchedulerOutput) -> bytes:
        out = _Out()
        fin = [self._release(r) for r in so.finished_req_ids]
        sched = so.num_scheduled_tokens
        expect = self.t.expect
        new = []
        for r in so.scheduled_new_reqs:
            s, ns = self._alloc(r.req_id), sched[r.req_id]
            expect[s] = r.num_computed_tokens + ns
            new.append(SlotsNew(s, r.req_id, out.arr(r.prompt_token_ids), r.sampling_params,
                                out.arr(r.block_ids[0]), r.num_computed_tokens, ns))
        changed = self._changes(so.scheduled_cached_reqs, sched)
        order = [self.slot_of[r] for r in sched]
        skipped, tail, explicit = self._order(order, fin)
        self.t.prev = order
        self.orders.append(list(sched))
        msg = SlotsStep(new, out.arr(fin), out.arr(skipped), out.arr(tail),
                        *[out.arr(c) for c in changed],
                        out.arr(list(chain.from_iterable(so.scheduled_cached_reqs
                                                         .new_token_ids))),
                        None if explicit is None else out.arr(explicit), out.counts)
        return pack_frame(self._enc(msg), out.bufs)

    def _changes(self, c: CachedRequestData, sched: dict[str, int]) -> list[list[int]]:
        """-> [slots, num_computed, num_scheduled, block counts, blocks, resumed] of the
        cached requests the runner cannot infer; updates the inferred counts."""
        slot_of, expect = self.slot_of, self.t.expect
        ch_s, ch_nc, ch_ns, counts, blocks, resumed = [], [], [], [], [], []
        for rid, nc, groups, res in zip(c.req_ids, c.num_computed_tokens, c.new_block_ids,
                                        c.resumed_from_preemption):
            s, ns, b = slot_of[rid], sched[rid], groups[0]
            if res or b or ns != 1 or nc != expect[s]:
                ch_s.append(s)
                ch_nc.append(nc)
                ch_ns.append(ns)
                counts.append(len(b))
                blocks.extend(b)
                if res:
                    resumed.append(s)
            expect[s] = nc + ns
        return [ch_s, ch_nc, ch_ns, counts, blocks, resumed]

    def _order(self, order: list[int], fin: list[int]):
        """-> (skipped, tail, explicit order or None) for the runner to rebuild ``order``
        from the last one (module docstring)."""
        prev = self.t.prev
        if order == prev and not fin:
            return [], [], None
        if not fin and order[:len(prev)] == prev:
            return [], order[len(prev):], None
        now, gone = set(order), set(fin)
        survivors = [s for s in prev if s not in gone and s in now]
        skipped = [s for s in prev if s not in gone and s not in now]
        if order[:len(survivors)] == survivors:
            return skipped, order[len(survivors):], None
        return [], [], order

    def decode(self, frame) -> ModelRunnerOutput:
        """The runner's reply to the oldest step in flight."""
        msg, oob = self._reply.decode(frame)
        if not self.orders:
            raise DecodeError("SlotsReply: a reply with no step in flight")
        rids = self.orders.pop(0)
        try:
            toks = _get(msg.tokens, oob).tolist()
        except (IndexError, ValueError) as exc:
            raise DecodeError(one_line(f"SlotsReply: {exc}")) from None
        if len(toks) != len(rids):
            raise DecodeError(f"SlotsReply: {len(toks)} tokens for {len(rids)} scheduled "
                              "requests")
        return ModelRunnerOutput(rids, {r: i for i, r in enumerate(rids)},
                                 [[t] if t >= 0 else [] for t in toks])


class SlotsRunnerSide:
    """The runner's end: ``decode(frame) -> SchedulerOutput`` (the msgpack codec's
    Struct, equal to the one the scheduler built) from its table and the step's
    changes; ``encode(ModelRunnerOutput) -> frame``: the sampled tokens in the order of
    the step just decoded. ``DecodeError`` for a step inconsistent with the table."""

    _step, _enc = _STEP_WIRE, _ENCODE  # stateless, shared

    def __init__(self):
        self.t = _Table()
        self.order_rids: list[str] = []

    def decode(self, frame) -> SchedulerOutput:
        msg, oob = self._step.decode(frame)
        try:
            return self._apply(msg, oob)
        except (IndexError, KeyError, ValueError, TypeError) as exc:
            raise DecodeError(one_line(f"SlotsStep: {type(exc).__name__}: {exc}")) from None

    def _finish(self, fin: list[int]) -> set[str]:
        req_of, done = self.t.req_of, set()
        for s in fin:
            rid = req_of[s] if 0 <= s < len(req_of) else None
            if rid is None:
                raise ValueError(f"finished slot {s} holds no request")
            done.add(rid)
            req_of[s] = None
        return done

    def _new(self, msg: SlotsStep, oob) -> tuple[list[NewRequestData], dict[int, int]]:
        reqs, counts = [], {}
        for n in msg.new:
            self.t.put(n.slot, n.req_id)
            self.t.expect[n.slot] = n.num_computed_tokens + n.num_scheduled
            reqs.append(NewRequestData(n.req_id, _get(n.prompt_token_ids, oob).tolist(),
                                       n.sampling_params,
                                       (_get(n.block_ids, oob).tolist(),),
                                       n.num_computed_tokens))
            counts[n.slot] = n.num_scheduled
        return reqs, counts

    def _order(self, msg: SlotsStep, oob, fin: list[int]) -> list[int]:
        if msg.order is not None:
            return _get(msg.order, oob).tolist()
        skipped, tail = _get(msg.skipped, oob).tolist(), _get(msg.tail, oob).tolist()
        prev = self.t.prev
        if fin or skipped:
            gone = set(fin).union(skipped)
            prev = [s for s in prev if s not in gone]
        return prev + tail if tail else prev

    def _changed(self, msg: SlotsStep, oob) -> tuple[dict[int, tuple], set[int]]:
        slots = _get(msg.changed_slots, oob).tolist()
        if not slots:
            return {}, set()
        nc, ns = (_get(msg.changed_num_computed, oob).tolist(),
                  _get(msg.changed_num_scheduled, oob).tolist())
        counts, blocks = _get(msg.block_counts, oob).tolist(), _get(msg.blocks, oob).tolist()
        if not len(slots) == len(nc) == len(ns) == len(counts) or sum(counts) != len(blocks):
            raise ValueError("changed arrays of unequal lengths")
        out, at = {}, 0
        for s, c, n, k in zip(slots, nc, ns, counts):
            out[s] = (c, n, blocks[at:at + k])
            at += k
        return out, set(_get(msg.resumed, oob).tolist())

    def _apply(self, msg: SlotsStep, oob) -> SchedulerOutput:
        fin = _get(msg.finished, oob).tolist()
        finished = self._finish(fin)
        new_reqs, new_counts = self._new(msg, oob)
        order = self._order(msg, oob, fin)
        changed, resumed = self._changed(msg, oob)
        req_of, expect = self.t.req_of, self.t.expect
        sched: dict[str, int] = {}
        req_ids, ncs, nbs, res, counts = [], [], [], [], []
        for s in order:
            rid = req_of[s] if 0 <= s < len(req_of) else None
            if rid is None:
                raise ValueError(f"slot {s} holds no request")
            if s in new_counts:
                sched[rid] = new_counts[s]
                continue
            c = changed.get(s)
            nc, ns, blocks = (expect[s], 1, []) if c is None else c
            expect[s] = nc + ns
            sched[rid] = ns
            req_ids.append(rid)
            ncs.append(nc)
            nbs.append((blocks,))
            res.append(s in resumed)
            counts.append(ns)
        if len(sched) != len(order):
            raise ValueError("a slot scheduled twice")
        self.t.prev = order
        self.order_rids = list(sched)
        cached = CachedRequestData(req_ids, res, self._tokens(msg, oob, counts), nbs, ncs)
        return SchedulerOutput(new_reqs, cached, sched, sum(sched.values()), {}, {}, [0],
                               finished, [], {}, None)

    def _tokens(self, msg: SlotsStep, oob, counts: list[int]) -> list[list[int]]:
        """``new_token_ids``: ``tokens`` split by the cached requests' counts (send), or
        the one empty list (cached)."""
        toks = _get(msg.tokens, oob).tolist()
        if not toks:
            return []
        if len(toks) != sum(counts):
            raise ValueError(f"{len(toks)} token ids for {sum(counts)} scheduled tokens")
        out, at = [], 0
        for n in counts:
            out.append(toks[at:at + n])
            at += n
        return out

    def encode(self, out: ModelRunnerOutput) -> bytes:
        index, sampled = out.req_id_to_index, out.sampled_token_ids
        toks = []
        for rid in self.order_rids:
            ids = sampled[index[rid]]
            if len(ids) > 1:
                raise ValueError(f"{len(ids)} tokens sampled for {rid}: slots carries one")
            toks.append(ids[0] if ids else -1)
        o = _Out()
        msg = SlotsReply(o.arr(toks), o.counts)
        return pack_frame(self._enc(msg), o.bufs)
