"""The ``replicated`` baseline: every runner runs the scheduler itself (SGLang style).

Issue 15 item 4. SGLang ships no per-step batch: each tensor-parallel rank runs the
same deterministic scheduler, and only new requests are broadcast. Here the runner
process holds a replica of the case's ``engine.scheduler.Scheduler`` (same
``SchedulerConfig`` and policy, from the handshake). Per step the scheduler sends a
``ReplicatedStep``: the step number, the requests that arrived since the last step
(``req_id``, index, prompt ids as an int32 array inline or out of band as in
``wire.slots``, ``max_tokens``) and an 8-byte digest of its schedule (blake2b of the
MessagePack of ``num_scheduled_tokens``: request ids and counts, in order). The
replica adds the arrivals, sets its clock to the step, schedules and builds the
``SchedulerOutput`` the model runner executes; a digest other than the scheduler's
fails the step (``DecodeError``: ``step N: the replica's schedule differs from the
scheduler's``), so divergence is caught the step it happens. After the model samples,
the replica applies the ``ModelRunnerOutput`` (its own, so it needs nothing from the
scheduler), and the reply is the sampled tokens in the step's order (``wire.slots``'
``SlotsReply``: the scheduler side rebuilds its ``ModelRunnerOutput``).

What every rank now pays: the replica's ``schedule`` + ``build_scheduler_output``
(timed into the runner column ``replica_schedule_ns``, inside the runner's decode
time) and its ``update_from_output`` (``replica_update_ns``, inside the runner's
encode time); the summary gives ``replica_scheduler_ns_per_step``. Synchronous
scheduling only (the replica applies step n's output before it schedules n+1).
"""

from __future__ import annotations

import hashlib
import time
from typing import Optional

import msgspec

from ipc_bench.engine.config import SchedulerConfig
from ipc_bench.engine.messages import ModelRunnerOutput, SchedulerOutput
from ipc_bench.engine.scheduler import Scheduler, SchedulerError
from ipc_bench.errors import one_line
from ipc_bench.wire.decode_error import DecodeError
from ipc_bench.wire.slots import Arr, SlotsReply, SlotsWireCodec, _get, _Out, pack_frame

DIGEST_BYTES = 8


class Arrival(msgspec.Struct, array_like=True, gc=False):
    """A request that arrived since the last step (``Scheduler.add_request``'s args)."""

    req_id: str
    index: int
    prompt_token_ids: Arr
    max_tokens: int


class ReplicatedStep(msgspec.Struct, array_like=True, gc=False):
    """One step: its number, the arrivals, the schedule's digest; ``oob`` as in
    ``wire.slots.SlotsStep``."""

    step: int
    arrivals: list[Arrival]
    digest: bytes
    oob: list[int]


_encode_dict = msgspec.msgpack.Encoder().encode
_STEP_WIRE = SlotsWireCodec(ReplicatedStep)
_REPLY_WIRE = SlotsWireCodec(SlotsReply)
_ENCODE = msgspec.msgpack.Encoder().encode


def schedule_digest(num_scheduled_tokens: dict[str, int]) -> bytes:
    """8-byte blake2b of the MessagePack of ``num_scheduled_tokens`` (ids and counts,
    in order)."""
    return hashlib.blake2b(_encode_dict(num_scheduled_tokens),
                           digest_size=DIGEST_BYTES).digest()


class ReplicatedSchedulerSide:
    """The scheduler's end: ``attach(scheduler)`` starts recording its arrivals;
    ``encode(SchedulerOutput)`` sends the step's number, arrivals and digest;
    ``decode(reply)`` rebuilds the ``ModelRunnerOutput`` in the step's order."""

    _reply, _enc = _REPLY_WIRE, _ENCODE  # stateless, shared

    def __init__(self):
        self.sched: Optional[Scheduler] = None
        self.orders: list[list[str]] = []

    def attach(self, sched: Scheduler) -> None:
        self.sched = sched
        sched.arrivals = []

    def encode(self, so: SchedulerOutput) -> bytes:
        sched = self.sched
        if sched is None:
            raise ValueError("replicated: no scheduler attached")
        out = _Out()
        arrivals = [Arrival(r, i, out.arr(p), m) for r, i, p, m in sched.arrivals]
        sched.arrivals.clear()
        self.orders.append(list(so.num_scheduled_tokens))
        msg = ReplicatedStep(sched.step - 1, arrivals,
                             schedule_digest(so.num_scheduled_tokens), out.counts)
        return pack_frame(self._enc(msg), out.bufs)

    def decode(self, frame) -> ModelRunnerOutput:
        msg, oob = self._reply.decode(frame)
        if not self.orders:
            raise DecodeError("SlotsReply: a reply with no step in flight")
        rids = self.orders.pop(0)
        toks = _get(msg.tokens, oob).tolist()
        if len(toks) != len(rids):
            raise DecodeError(f"SlotsReply: {len(toks)} tokens for {len(rids)} scheduled "
                              "requests")
        return ModelRunnerOutput(rids, {r: i for i, r in enumerate(rids)},
                                 [[t] if t >= 0 else [] for t in toks])


class ReplicatedRunnerSide:
    """The runner's end: a replica ``Scheduler``. ``decode(frame)`` adds the arrivals,
    schedules and checks the digest, returning the replica's ``SchedulerOutput``;
    ``encode(ModelRunnerOutput)`` applies it to the replica and answers the tokens.
    ``columns``: ``replica_schedule_ns`` and ``replica_update_ns`` per step."""

    _step, _enc = _STEP_WIRE, _ENCODE  # stateless, shared

    def __init__(self, config: SchedulerConfig, policy: str):
        self.replica = Scheduler(config, policy)
        self.plan = None
        self.order: list[str] = []
        self.columns: dict[str, list[int]] = {"replica_schedule_ns": [],
                                              "replica_update_ns": []}

    def decode(self, frame) -> SchedulerOutput:
        msg, oob = self._step.decode(frame)
        t0 = time.perf_counter_ns()
        replica = self.replica
        try:
            replica.step = msg.step
            for a in msg.arrivals:
                replica.add_request(a.req_id, a.index, _get(a.prompt_token_ids, oob).tolist(),
                                    a.max_tokens)
            plan = replica.schedule()
            so = replica.build_scheduler_output(plan)
        except (SchedulerError, IndexError, ValueError) as exc:
            raise DecodeError(one_line(f"scheduler step {msg.step}: the replica failed: {exc}")) from None
        self.columns["replica_schedule_ns"].append(time.perf_counter_ns() - t0)
        digest = schedule_digest(so.num_scheduled_tokens)
        if digest != msg.digest:
            raise DecodeError(f"scheduler step {msg.step}: the replica's schedule differs from the "
                              f"scheduler's (digest {digest.hex()}, scheduler's "
                              f"{msg.digest.hex()})")
        self.plan, self.order = plan, list(so.num_scheduled_tokens)
        return so

    def encode(self, out: ModelRunnerOutput) -> bytes:
        t0 = time.perf_counter_ns()
        self.replica.update_from_output(self.plan, out)
        self.columns["replica_update_ns"].append(time.perf_counter_ns() - t0)
        index, sampled = out.req_id_to_index, out.sampled_token_ids
        toks = [(sampled[index[r]] or (-1,))[0] for r in self.order]
        o = _Out()
        return pack_frame(self._enc(SlotsReply(o.arr(toks), o.counts)), o.bufs)
