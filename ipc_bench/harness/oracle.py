"""Checks that hold whatever the model computes: the input oracle and the schedule digest.

**Input oracle.** After each step the runner folds the token ids it fed the model into
one 64-bit digest (``input_digest``): for each scheduled request, in the order of the
step's ``SchedulerOutput.num_scheduled_tokens``, the ids it gathered from that
request's row of its token buffer (``StepInputs.input_ids`` between the row's
``query_start_loc`` offsets: positions ``num_computed_tokens .. num_computed_tokens +
num_scheduled - 1``), with each request's boundaries. The scheduler computes the same
digest from its own ``Request.all_token_ids`` (read as the plain list
``Request._all_token_ids``, not through the ``ConstantList`` view: the oracle is the
harness's check, not vLLM's code, and a Python call per request and step would add to
a timed replay's wall time and to the runner gap). A runner that feeds a wrong id (a
sampled id written to the wrong row or position, a missed write, a stale row) fails
the case, whatever its model makes of that id (with speculative decoding the fed ids
include the step's draft ids, which the scheduler takes from its
``scheduled_spec_decode_tokens``: a runner that writes a wrong id over a draft, or
leaves a rejected draft where an accepted or sampled id belongs, fails; under async
scheduling, where the drafts stay on the runner (vLLM #24799), the accepted drafts are
the step's sampled ids and both sides digest each rejected draft as -1): the token
oracle across cases cannot be
the only gate where the model's numerics differ between cases (greedy sampling on a GPU
flips on last-bit differences).

The digests never ride in the measured frames. The runner keeps them
(``RunnerInputLog``); every ``CHECK_INTERVAL_STEPS`` steps (``CaseSpec.input_oracle_interval``;
0: no digest and no check on either side) and after the last step, between
two steps and outside every timed region, the scheduler (``InputOracle``) asks for
them on the control socket (``CheckInputs`` -> ``InputDigests``), so a bad step is
found at most ``CHECK_INTERVAL_STEPS`` steps late. On a mismatch it asks for that step's
ids (``RecheckInputs`` -> ``StepInputIds``), names the first request and position
that differ, and fails the case (``CaseError``: ``input oracle: step S: request R:
...``). The single-process baseline keeps the runner's log in the scheduler's
process and checks the same way, by calls. The loops of ``instrumentation ==
"totals"`` (the bare twins) check nothing.

Digest layout: blake2b with an 8-byte digest over ``num_reqs`` and ``num_tokens``
(int64 each), then, unless every request has one token (``num_tokens == num_reqs``),
each request's token count (int32 ``[num_reqs]``), then the ids (int32
``[num_tokens]``), requests in the scheduler's order; native byte order (both
processes run on one machine); the digest read as an unsigned little-endian integer.

**Schedule digest** (``ScheduleDigest``): sha256 over every step's
``num_scheduled_tokens`` (request id -> tokens scheduled, in the scheduler's order)
encoded as MessagePack, steps in order, warm-up included; a step that scheduled the same
requests in the same order with the same counts as the step before contributes the one
byte 0xC1 instead (a byte MessagePack never uses: pure-decode steps mostly repeat).
Equal schedule digests mean the two cases computed exactly the same batches at every
step; only such cases can be expected to produce bitwise-equal tokens on a GPU
(``analysis.summary.check_digests`` compares token streams only between them).
"""

from __future__ import annotations

import hashlib
import itertools
import struct
from typing import Any, Callable, Optional

import msgspec
import numpy as np

from ipc_bench.engine.scheduler import Request, SchedulePlan
from ipc_bench.harness.spec import INPUT_ORACLE_INTERVAL, CaseError
from ipc_bench.wire.control import InputDigests, StepInputIds

#: Steps between two input checks by default (``CaseSpec.input_oracle_interval``,
#: ``--input-oracle-interval``): a bad step fails the case at most this many steps
#: after it ran (and at the end of the loop in any case).
CHECK_INTERVAL_STEPS = INPUT_ORACLE_INTERVAL

_HEADER = struct.Struct("=qq")


def _int32s(values: list[int]) -> bytes:
    """``values`` as native int32 bytes (``struct.error`` for one outside int32)."""
    return struct.pack(f"={len(values)}i", *values)


def input_digest(num_reqs: int, num_tokens: int, counts, input_ids) -> int:
    """The 64-bit input digest of one step (layout in the module docstring).

    ``counts``: each request's token count, a C-contiguous int32 buffer ``[num_reqs]``
    (numpy, or native int32 bytes), ignored when ``num_tokens == num_reqs`` (may be
    ``None`` then); ``input_ids``: C-contiguous int32 buffer ``[num_tokens]`` of the
    step's ids, request by request. Returns an int in ``[0, 2**64)``. A
    non-contiguous buffer raises ``BufferError``.
    """
    h = hashlib.blake2b(_HEADER.pack(num_reqs, num_tokens), digest_size=8)
    if num_tokens != num_reqs:
        h.update(counts)
    h.update(input_ids)
    return int.from_bytes(h.digest(), "little")


def fed_in_schedule_order(num_scheduled_tokens: dict[str, int], req_id_to_index: dict[str, int],
                          inputs: Any) -> tuple[Optional[np.ndarray], np.ndarray]:
    """The runner's side of one step: ``(counts, ids)`` of what its rows fed, taken in
    the order of ``num_scheduled_tokens`` (the step's ``SchedulerOutput``) through
    ``req_id_to_index`` (the persistent batch's rows). Each request's count comes from
    the runner's own ``inputs.query_start_loc``, its ids from ``inputs.input_ids``
    (``StepInputs``). Shapes: int32 ``[num_reqs]`` (``None`` when every row fed one
    token), int32 ``[num_tokens]``."""
    rows = [req_id_to_index[r] for r in num_scheduled_tokens]
    ids = inputs.input_ids
    if len(ids) == len(rows):  # one token per row: row r's token is ids[r]
        return None, ids.take(rows)
    qsl = inputs.query_start_loc
    starts = qsl.take(rows)
    counts = qsl.take(np.add(rows, 1)) - starts
    gather = np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(len(ids))
    return counts.astype(np.int32), ids.take(gather)


class RunnerInputLog:
    """The runner's side: one input digest per step, kept until the scheduler asks.

    ``record(seq, num_scheduled_tokens, req_id_to_index, inputs)`` after step ``seq``
    (its ``SchedulerOutput.num_scheduled_tokens``, the batch's rows, its ``StepInputs``;
    see ``fed_in_schedule_order``). ``take()`` -> ``InputDigests`` of the steps recorded
    since the last ``take``; their ids stay for two more ``take``s so that
    ``step_ids(seq)`` can answer a re-check, also under async scheduling, where the
    next check's digests may have been taken before the scheduler compared these.
    Memory: at most three check intervals of steps' ids.
    """

    def __init__(self) -> None:
        self._steps: list[tuple] = []   # (seq, digest, num_scheduled_tokens, counts, ids)
        self._taken: list[tuple] = []
        self._older: list[tuple] = []

    def record(self, seq: int, num_scheduled_tokens: dict[str, int],
               req_id_to_index: dict[str, int], inputs: Any) -> None:
        counts, ids = fed_in_schedule_order(num_scheduled_tokens, req_id_to_index, inputs)
        digest = input_digest(len(num_scheduled_tokens), len(ids), counts, ids)
        self._steps.append((seq, digest, num_scheduled_tokens, counts, ids))

    def take(self, through: Optional[int] = None) -> InputDigests:
        """The digests since the last ``take`` (``first_seq`` -1 when there are none);
        with ``through``, only those of steps up to that seq (later ones stay for the
        next ``take``: a runner thread may already have run the next step)."""
        self._older = self._taken
        if through is None:
            steps = self._taken = self._steps
            self._steps = []
        else:
            k = next((i for i, s in enumerate(self._steps) if s[0] > through),
                     len(self._steps))
            steps = self._taken = self._steps[:k]
            self._steps = self._steps[k:]
        return InputDigests(first_seq=steps[0][0] if steps else -1,
                            digests=[s[1] for s in steps])

    def step_ids(self, seq: int) -> StepInputIds:
        """What was fed at step ``seq`` (one of the last two ``take``s' steps, or a
        step recorded since); ``found=False`` when it is no longer held."""
        for s, _, scheduled, counts, ids in self._older + self._taken + self._steps:
            if s == seq:
                return StepInputIds(seq=seq, found=True, req_ids=list(scheduled),
                                    offsets=_offsets(len(scheduled), counts),
                                    input_ids=_as_ints(ids))
        return StepInputIds(seq=seq, found=False)


def _offsets(num_reqs: int, counts) -> list[int]:
    """``[num_reqs + 1]`` offsets of each request's ids (counts ``None``: one each)."""
    if counts is None:
        return list(range(num_reqs + 1))
    return [0, *itertools.accumulate(_as_ints(counts))]


def _as_ints(buf) -> list[int]:
    """An int32 buffer (numpy array or native bytes) as Python ints."""
    return buf.tolist() if hasattr(buf, "tolist") else memoryview(buf).cast("i").tolist()


class InputOracle:
    """The scheduler's side: the expected digest of every step, checked in batches.

    ``requests``: the scheduler's ``req_id -> Request``. ``link``: the case's exchange,
    with ``runner_input_digests(next_seq) -> InputDigests`` and ``runner_step_ids(seq) ->
    StepInputIds`` (and, in the single-process baseline, ``record_runner_inputs(seq,
    so)``, called here after each step). ``expect`` runs after each step's update,
    outside its timed region, and checks every ``interval`` steps (default
    ``CHECK_INTERVAL_STEPS``); ``check`` runs the last check. Both raise ``CaseError``
    (one line naming the step and, from the re-check, the request) on a mismatch.
    """

    def __init__(self, requests: dict[str, Request], link: Any,
                 interval: Optional[int] = None):
        self.requests = requests
        self.link = link
        self.interval = interval or CHECK_INTERVAL_STEPS
        # (seq, digest, (num_scheduled_tokens, cached_num_computed, cached_resumed),
        #  counts, ids): a few objects per step, not the plan (whose hundreds of lists
        #  the garbage collector would walk while they wait for the check)
        self.pending: list[tuple] = []
        self._record_runner = getattr(link, "record_runner_inputs", None)
        self._packers: dict[int, Callable[..., bytes]] = {}  # n -> pack n int32s
        # async scheduling with drafts: rejected drafts per request of the last step
        self._rejected: dict[str, int] = {}

    def expect(self, seq: int, plan: SchedulePlan, so: Any = None) -> None:
        """Step ``seq`` ran ``plan`` (its message ``so``, used only to record the
        in-process runner's side): note what the runner should have fed it. The ids
        are read after ``update_from_output``: positions before ``num_computed_tokens``
        never change."""
        if self._record_runner is not None:
            self._record_runner(seq, so)
        if plan.spec_tokens:
            self._expect_from_plan(seq, plan)
            if len(self.pending) >= self.interval:
                self.check()
            return
        reqs = plan.scheduled_reqs
        n = len(reqs)
        num_tokens = plan.total_num_scheduled_tokens
        try:
            if num_tokens == n:  # one token per request (each has at least one)
                counts = None
                pack = self._packers.get(n)
                if pack is None:
                    pack = self._packers[n] = struct.Struct(f"={n}i").pack
                ids = pack(*[r._all_token_ids[r.num_computed_tokens - 1] for r in reqs])
            else:
                counts = _int32s(list(plan.num_scheduled_tokens.values()))
                fed: list[int] = []
                for req, k in zip(reqs, plan.num_scheduled_tokens.values()):
                    end = req.num_computed_tokens  # advanced by schedule(): computed + k
                    fed.extend(req._all_token_ids[end - k:end])
                ids = _int32s(fed)
        except struct.error as exc:
            raise CaseError(f"input oracle: step {seq}: a token id the runner's int32 "
                            f"token buffer cannot hold ({exc})", seq) from None
        self.pending.append((seq, input_digest(n, num_tokens, counts, ids),
                             (plan.num_scheduled_tokens, plan.cached_num_computed,
                              plan.cached_resumed), counts, ids))
        if len(self.pending) >= self.interval:
            self.check()

    def expect_planned(self, seq: int, plan: SchedulePlan, so: Any = None) -> None:
        """``expect`` under async scheduling, where ``num_computed_tokens`` has moved on
        to the next step by the time step ``seq``'s output is applied: each request's
        first position comes from the plan (``cached_num_computed`` for running
        requests, 0 for new and resumed ones). Read after step ``seq``'s
        ``update_from_output``: every fed position holds a real id by then (a
        placeholder is filled before the step that feeds it is applied). Never checks
        by itself: the async loop calls ``check_requested`` (``CaseError`` on a
        mismatch, or for an id the int32 buffer cannot hold)."""
        if self._record_runner is not None:
            self._record_runner(seq, so)
        if plan.output is not None:  # AsyncScheduler with drafts
            self._expect_async_spec(seq, plan)
        else:
            self._expect_from_plan(seq, plan)

    def _expect_async_spec(self, seq: int, plan: SchedulePlan) -> None:
        """``_expect_from_plan`` under async scheduling with drafts (vLLM #24799), from
        ``plan`` after its update. A running request of a step scheduled while the
        step before was in flight (``plan.scheduled_in_flight``) starts at its
        optimistic ``cached_num_computed`` less that step's rejected drafts for it
        (what the runner corrects it to). A request with ``s`` drafts fed its non-draft
        ids from ``all_token_ids``, then ``a`` accepted drafts, which are its first
        ``a`` sampled ids in ``plan.output`` (``a + 1`` ids), then ``s - a`` rejected
        ones, which the scheduler never learns and the runner's digest shows as -1.
        ``CaseError`` for an id the int32 buffer cannot hold."""
        reqs = plan.scheduled_reqs
        n = len(reqs)
        num_tokens = plan.total_num_scheduled_tokens
        spec = plan.spec_tokens
        out = plan.output
        index, sampled = out.req_id_to_index, out.sampled_token_ids
        num_running = plan.cached_resumed.count(False)
        before = self._rejected if plan.scheduled_in_flight else {}
        starts = [p - before.get(r.req_id, 0)
                  for r, p in zip(reqs, plan.cached_num_computed[:num_running])]
        starts += [0] * (n - num_running)
        rejected: dict[str, int] = {}
        fed: list[int] = []
        for req, p, k in zip(reqs, starts, plan.num_scheduled_tokens.values()):
            drafts = spec.get(req.req_id)
            if drafts:
                s = len(drafts)
                ids = sampled[index[req.req_id]]
                a = len(ids) - 1
                fed.extend(req._all_token_ids[p:p + k - s])
                fed.extend(ids[:a])
                fed.extend([-1] * (s - a))
                rejected[req.req_id] = s - a
            else:
                fed.extend(req._all_token_ids[p:p + k])
        self._rejected = rejected
        try:
            counts = None if num_tokens == n else _int32s(list(plan.num_scheduled_tokens.values()))
            ids = _int32s(fed)
        except struct.error as exc:
            raise CaseError(f"input oracle: step {seq}: a token id the runner's int32 "
                            f"token buffer cannot hold ({exc})", seq) from None
        self.pending.append((seq, input_digest(n, num_tokens, counts, ids),
                             (plan.num_scheduled_tokens, starts[:num_running],
                              plan.cached_resumed), counts, ids))

    def _expect_from_plan(self, seq: int, plan: SchedulePlan) -> None:
        """Note step ``seq``'s expected digest from the plan alone: each request's first
        position (``cached_num_computed`` for running requests, 0 for new and resumed
        ones), its ids from ``all_token_ids`` and, for a request with draft tokens
        (``plan.spec_tokens``), those drafts as its last ids (``num_computed_tokens``
        may have been rolled back, and the rejected drafts are in no ``all_token_ids``).
        ``CaseError`` for an id the int32 buffer cannot hold."""
        reqs = plan.scheduled_reqs
        n = len(reqs)
        num_tokens = plan.total_num_scheduled_tokens
        spec = plan.spec_tokens
        starts = plan.cached_num_computed[:plan.cached_resumed.count(False)]
        starts = starts + [0] * (n - len(starts))
        try:
            if num_tokens == n:
                counts = None
                ids = _int32s([r._all_token_ids[p] for r, p in zip(reqs, starts)])
            else:
                counts = _int32s(list(plan.num_scheduled_tokens.values()))
                fed: list[int] = []
                for req, p, k in zip(reqs, starts, plan.num_scheduled_tokens.values()):
                    drafts = spec.get(req.req_id) if spec else None
                    if drafts:
                        fed.extend(req._all_token_ids[p:p + k - len(drafts)])
                        fed.extend(drafts)
                    else:
                        fed.extend(req._all_token_ids[p:p + k])
                ids = _int32s(fed)
        except struct.error as exc:
            raise CaseError(f"input oracle: step {seq}: a token id the runner's int32 "
                            f"token buffer cannot hold ({exc})", seq) from None
        self.pending.append((seq, input_digest(n, num_tokens, counts, ids),
                             (plan.num_scheduled_tokens, plan.cached_num_computed,
                              plan.cached_resumed), counts, ids))

    def check_requested(self) -> None:
        """Compare the pending steps with the runner's digests, asked for earlier
        (``link.request_input_digests`` after the frame of the last pending step,
        so the runner's answer covers exactly those steps; it is read here with
        ``link.requested_input_digests``). ``CaseError`` on a mismatch."""
        seq = self.pending[-1][0] if self.pending else None
        self._compare(self.link.requested_input_digests(seq))

    def check(self) -> None:
        """Compare the runner's digests of the pending steps with the expected ones.
        A link with several runner ranks (``harness.tp_case.TpExchange``) answers with
        one ``InputDigests`` per rank: each rank is checked, and the error names the
        first rank that differs (``rank R: input oracle: ...``)."""
        next_seq = self.pending[-1][0] + 1 if self.pending else None
        self._compare(self.link.runner_input_digests(next_seq))

    def _compare(self, answers: Any) -> None:
        """``CaseError`` unless ``answers`` (one ``InputDigests``, or a list of one per
        rank) hold the pending steps' expected digests."""
        ranked = isinstance(answers, list)
        pending, self.pending = self.pending, []
        first = pending[0][0] if pending else -1
        for rank, got in enumerate(answers if ranked else [answers]):
            who = f"rank {rank}: " if ranked else ""
            if len(got.digests) != len(pending) or (pending and got.first_seq != first):
                raise CaseError(f"{who}input oracle: the runner reports input digests of "
                                f"{len(got.digests)} steps from step {got.first_seq}, the "
                                f"scheduler ran {len(pending)} from step {first}",
                                first if pending else None)
            for entry, digest in zip(pending, got.digests):
                if digest != entry[1]:
                    raise CaseError(who + self._recheck(entry, digest, rank if ranked
                                                        else None), entry[0])

    def _recheck(self, entry: tuple, digest: int, rank: Optional[int] = None) -> str:
        """The error line for a step whose digests differ, from the runner's ids
        (``rank``: which answer of a ranked link)."""
        seq, expected, schedule, counts, ids = entry
        where = f"input oracle: step {seq}"
        fed = self.link.runner_step_ids(seq)
        if rank is not None:
            fed = fed[rank]
        req_ids = list(schedule[0])
        if not fed.found:
            return (f"{where}: input digest {digest:#018x}, expected {expected:#018x} "
                    "(the runner no longer holds that step's ids)")
        if fed.req_ids != req_ids:
            return f"{where}: the runner's requests {fed.req_ids[:4]} are not the schedule's"
        return describe_difference(where, req_ids, _offsets(len(req_ids), counts),
                                   _as_ints(ids), fed, _start_positions(*schedule))


def _start_positions(num_scheduled_tokens: dict[str, int], cached_num_computed: list[int],
                     cached_resumed: list[bool]) -> dict[str, int]:
    """Position of each scheduled request's first token this step, from its plan's
    lists: the running requests come first in ``num_scheduled_tokens`` and in
    ``cached_num_computed``; new and resumed requests start at 0."""
    running = cached_resumed.count(False)
    return {req_id: (cached_num_computed[i] if i < running else 0)
            for i, req_id in enumerate(num_scheduled_tokens)}


def describe_difference(where: str, req_ids: list[str], offsets: list[int],
                        ids: list[int], fed: StepInputIds,
                        starts: Optional[dict[str, int]] = None) -> str:
    """One line naming the first request whose fed ids (``fed``) differ from the
    expected ``ids`` (sliced by ``offsets``, requests as ``req_ids``), the position and
    both ids, and how many other requests differ. ``starts``: each request's first
    position this step (positions are given within the step without it)."""
    diffs = []
    for i, req_id in enumerate(req_ids):
        mine = ids[offsets[i]:offsets[i + 1]]
        theirs = fed.input_ids[fed.offsets[i]:fed.offsets[i + 1]]
        if mine != theirs:
            diffs.append((req_id, mine, theirs))
    if not diffs:
        return f"{where}: input digests differ but the runner's ids equal the scheduler's"
    req_id, mine, theirs = diffs[0]
    others = f" ({len(diffs) - 1} other requests differ too)" if len(diffs) > 1 else ""
    if len(mine) != len(theirs):
        return (f"{where}: request {req_id}: the runner fed {len(theirs)} token ids, "
                f"the scheduler scheduled {len(mine)}{others}")
    j = next(k for k, (a, b) in enumerate(zip(mine, theirs)) if a != b)
    pos = (starts or {}).get(req_id, 0) + j
    return (f"{where}: request {req_id}: the runner fed token id {theirs[j]} at position "
            f"{pos}, the scheduler's all_token_ids hold {mine[j]}{others}")


class ScheduleDigest:
    """sha256 of a case's schedule (layout in the module docstring): ``add`` each
    step's ``SchedulePlan`` in order, then ``hexdigest()``. Keeps references to the last
    plan's request list and ``num_scheduled_tokens``, which the scheduler never changes
    once the plan is built."""

    REPEAT = b"\xc1"

    def __init__(self) -> None:
        self._h = hashlib.sha256()
        self._encode = msgspec.msgpack.Encoder().encode
        self._last_reqs: list[Request] = []
        self._last: dict[str, int] = {}
        self._last_ones = False

    def add(self, plan: SchedulePlan) -> None:
        reqs, scheduled = plan.scheduled_reqs, plan.num_scheduled_tokens
        ones = plan.total_num_scheduled_tokens == len(reqs)  # one token each
        # The same requests in the same order (list equality: identity, element by
        # element, in C) with the same counts: one each in both steps, or equal dicts.
        if reqs and reqs == self._last_reqs and ((ones and self._last_ones)
                                                 or scheduled == self._last):
            self._h.update(self.REPEAT)
        else:
            self._h.update(self._encode(scheduled))
        self._last_reqs, self._last, self._last_ones = reqs, scheduled, ones

    def hexdigest(self) -> str:
        return self._h.hexdigest()
