"""Continuous-batching scheduler logic, no I/O (vLLM V1 ``Scheduler`` at 7f280d69c).

Use: ``add_request`` as requests arrive; each step ``plan = schedule()``, ``so =
build_scheduler_output(plan)`` (the message), ship ``so`` to the runner, then
``update_from_output(plan, model_runner_output)``. Tests drive it by hand.

Rules mirrored from vLLM 7f280d69c:
- running requests are scheduled first, in order, then waiting ones (FIFO), within the
  step's token budget (``max_num_batched_tokens``) and ``max_num_seqs``; prompts longer
  than the remaining budget are chunked (chunked prefill);
- a request may be scheduled at most ``max_model_len - 1 - num_computed_tokens``
  tokens, leaving room for the sampled token;
- ``num_computed_tokens`` advances as soon as a step is scheduled;
- preemption by recompute: when a running request needs KV blocks and none are free,
  the last request of the running list (the lowest priority under FCFS) is preempted:
  its blocks are freed, ``num_computed_tokens`` goes back to 0, its status becomes
  ``PREEMPTED`` and it goes to the front of the waiting queue; this repeats until the
  allocation succeeds or the request being scheduled is itself the one preempted,
  which ends the running loop for this step. No waiting request is scheduled in a step
  that preempted. A preempted request scheduled again is *resumed*: it is sent as a
  cached request with ``resumed_from_preemption = True`` and all of its (new) block
  ids, which replace the old ones on the runner; its first chunk is prompt + outputs
  from token 0 (``all_token_ids[0 : num_scheduled_tokens]`` under ``send``);
- a request stops when ``num_output_tokens >= max_tokens`` or ``num_tokens >=
  max_model_len``; its blocks are freed and its id goes out in the next step's
  ``finished_req_ids``;
- the ``send`` policy fills ``CachedRequestData.new_token_ids`` with
  ``all_token_ids[num_computed_tokens : num_computed_tokens + num_scheduled_tokens -
  num_spec]`` (vLLM before #20291: draft tokens are not in it); ``cached`` sends an
  empty list, shorter than the per-request lists (as vLLM without pipeline parallelism).

The 1d37eb37 layout (``SchedulerConfig.vllm_layout``, ``--vllm-layout 1d37eb37``):
``build_scheduler_output`` builds vLLM 1d37eb37's ``CachedRequestData``
(``_later_output``): ``resumed_req_ids``, ``all_token_ids`` (a copy of the whole
history of each cached request not scheduled the step before: the plan's
``prev_scheduled``), ``new_block_ids`` entries ``None`` without a new block,
``num_output_tokens``; ``new_token_ids`` as above. The schedule is the same in both
layouts.

Speculative decoding (``SchedulerConfig.num_spec_tokens`` > 0), as vLLM V1
(``vllm/v1/core/sched/scheduler.py`` at 7f280d69c): the runner proposes draft ids for
each request it sampled for (``ModelRunnerOutput.spec_token_ids``), kept in
``Request.spec_token_ids``; a running request is scheduled ``num_tokens +
len(spec_token_ids) - num_computed_tokens`` tokens (vLLM ``num_tokens_with_spec``),
cut by the token budget and ``max_model_len - 1 - num_computed_tokens``; the drafts
that fit (``num_scheduled + num_computed - num_tokens`` of them) go out in
``scheduled_spec_decode_tokens``. ``update_from_output`` takes 1 to ``num_spec + 1``
ids, rolls ``num_computed_tokens`` back by the rejected ``num_spec + 1 - len(ids)``,
appends the ids one by one and stops at the first that completes the request (the
rest are dropped, as vLLM's ``check_stop`` loop does). A preempted request's drafts
are dropped. With ``num_lookahead_tokens`` (the torch model's drafter, which writes
K/V ahead) each allocation covers that many slots past the scheduled tokens, capped at
``max_model_len`` (vLLM ``KVCacheManager.allocate_slots(num_lookahead_tokens=...)``).

Admission rule (documented, counted, never a crash): a request whose prompt has
``max_model_len`` tokens or more, or which would need more KV blocks than the cache
has for its prompt plus one token, is rejected on arrival with ``finish_reason =
"rejected"``. A request that grows past what the whole cache holds (more blocks than
``num_blocks``) could never be scheduled even after preempting every other request:
that stops the run with ``SchedulerError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum
from typing import Optional

from ipc_bench.engine.config import LAYOUT_7F280D69C, POLICIES, SEND, SchedulerConfig
from ipc_bench.engine.kv_cache import KVCacheManager
from ipc_bench.engine.messages import (STRUCTS, MessageSet, ModelRunnerOutput, SchedulerOutput,
                                       in_layout)


class SchedulerError(RuntimeError):
    """The scheduler cannot go on; the message is one line naming the setting to change."""


class ProtocolError(RuntimeError):
    """A peer's message is inconsistent with what was scheduled."""


class RequestStatus(IntEnum):
    WAITING = 0
    RUNNING = 1
    PREEMPTED = 2
    FINISHED = 3
    REJECTED = 4


class ConstantList(Sequence):
    """A read-only view of a list, as vLLM's ``ConstantList`` (``vllm/v1/utils.py``),
    through which vLLM's ``Request`` (``vllm/v1/request.py``) exposes ``all_token_ids``.
    The project mirrors vLLM 7f280d69c; the class was read at stored versions before
    and after it: ``vllm/v1/request.py`` at 000a0d5f, ``vllm/v1/utils.py`` at 0090ad12.

    Reads go through Python methods: ``view[i]`` is the list's item, ``view[a:b]`` a new
    plain ``list`` (what vLLM's slice returns, so ``send``'s ``new_token_ids`` entries
    are lists and encode as before); ``len``, ``iter``, ``in`` and ``index(item, start,
    stop)`` are the list's. Every mutation (``append``, ``extend``, ``insert``, ``pop``,
    ``remove``, ``clear``, item and slice assignment, ``del``) raises ``TypeError``: vLLM
    raised a bare ``Exception`` ("Cannot set item in a constant list" and the like)
    until #22156 (August 2025, after 7f280d69c) made them ``TypeError``, a subclass, so
    whatever caught the old one catches these. No ``__eq__``, as vLLM's: compare
    ``list(view)`` or ``view[:]`` with a list. The owner mutates the wrapped list; the
    view sees it at once.
    """

    def __init__(self, x: list) -> None:
        self._x = x

    def append(self, item):
        raise TypeError("Cannot append to a constant list")

    def extend(self, item):
        raise TypeError("Cannot extend a constant list")

    def insert(self, item):
        raise TypeError("Cannot insert into a constant list")

    def pop(self, item):
        raise TypeError("Cannot pop from a constant list")

    def remove(self, item):
        raise TypeError("Cannot remove from a constant list")

    def clear(self):
        raise TypeError("Cannot clear a constant list")

    def index(self, item, start: int = 0, stop: Optional[int] = None) -> int:
        return self._x.index(item, start, stop if stop is not None else len(self._x))

    def __getitem__(self, item):
        return self._x[item]

    def __setitem__(self, item, value):
        raise TypeError("Cannot set item in a constant list")

    def __delitem__(self, item):
        raise TypeError("Cannot delete item from a constant list")

    def __iter__(self):
        return iter(self._x)

    def __contains__(self, item):
        return item in self._x

    def __len__(self):
        return len(self._x)

    def __repr__(self):
        return f"ConstantList({self._x})"


class Request:
    """Scheduler-side state of one request.

    ``all_token_ids``: prompt followed by outputs, ``[num_tokens]``, a read-only
    ``ConstantList`` view of the list ``_all_token_ids``, which the scheduler alone
    appends to and overwrites, as vLLM's ``Request`` (``vllm/v1/request.py``, read at
    000a0d5f as ``ConstantList`` says: ``self.all_token_ids =
    ConstantList(self._all_token_ids)``); where vLLM reads the view (``send``'s per-step
    ``new_token_ids`` slice) the harness reads it too, and where vLLM reads the list
    (``num_tokens``, ``len(self._all_token_ids)``) so does the harness, and so do its
    own checks (the input oracle, ``trace_checks``), which are not vLLM's code.
    ``prompt_token_ids`` stays the plain list ``NewRequestData`` carries (vLLM
    ``NewRequestData.from_request``). ``index``: the
    request's position in its workload (token digests are taken in this order).
    Steps are scheduler step numbers. ``num_preemptions``: times it was preempted.
    ``stop_num_tokens``: the length at which it stops, ``min(num_prompt_tokens +
    max_tokens, max_model_len)`` (without ``max_model_len``: the first term alone).
    ``sampling_params``: the message set's (``MessageSet.sampling_params``), sent in
    its ``NewRequestData``; default the Structs'.
    """

    __slots__ = (
        "req_id", "index", "num_prompt_tokens", "_all_token_ids", "all_token_ids",
        "sampling_params",
        "max_tokens", "num_computed_tokens", "block_ids", "status", "finish_reason",
        "arrival_step", "first_scheduled_step", "first_token_step", "finish_step",
        "prompt_token_ids", "token_steps", "num_preemptions", "stop_num_tokens",
        "spec_token_ids", "num_ids_kept_at_stop", "num_output_placeholders",
    )

    def __init__(self, req_id: str, index: int, prompt_token_ids: list[int],
                 max_tokens: int, arrival_step: int, max_model_len: int | None = None,
                 sampling_params=None):
        self.req_id = req_id
        self.index = index
        self.prompt_token_ids = prompt_token_ids
        self.num_prompt_tokens = len(prompt_token_ids)
        self._all_token_ids = list(prompt_token_ids)
        self.all_token_ids = ConstantList(self._all_token_ids)  # read-only view
        self.max_tokens = max_tokens
        self.sampling_params = (STRUCTS.sampling_params(max_tokens) if sampling_params is None
                                else sampling_params)
        self.num_computed_tokens = 0
        self.block_ids: list[int] = []
        self.status = RequestStatus.WAITING
        self.finish_reason: str | None = None
        self.arrival_step = arrival_step
        self.first_scheduled_step = -1
        self.first_token_step = -1
        self.finish_step = -1
        self.token_steps: list[int] = []  # steps that sampled each output token (timed clock)
        self.num_preemptions = 0
        self.spec_token_ids: list[int] = []  # drafts for the next step (speculative decoding)
        # With drafts: how many of its finishing step's sampled ids the request kept (the
        # ids after the one that completed it are dropped, as vLLM's stop check does)
        self.num_ids_kept_at_stop = 1
        # AsyncScheduler with drafts: trailing PLACEHOLDER entries of all_token_ids
        # (vLLM ``Request.num_output_placeholders``)
        self.num_output_placeholders = 0
        # The length-stop rule in one comparison: num_tokens >= stop_num_tokens exactly
        # when num_output_tokens >= max_tokens or num_tokens >= max_model_len.
        self.stop_num_tokens = self.num_prompt_tokens + max_tokens
        if max_model_len is not None and max_model_len < self.stop_num_tokens:
            self.stop_num_tokens = max_model_len

    @property
    def num_tokens(self) -> int:
        return len(self._all_token_ids)

    @property
    def output_token_ids(self) -> list[int]:
        return self._all_token_ids[self.num_prompt_tokens:]


class SchedulePlan:
    """What ``schedule()`` decided for one step; consumed by build and update.

    Cached requests are the running requests scheduled this step, in running order,
    followed by the requests resumed from preemption (as vLLM 7f280d69c orders
    ``CachedRequestData``). ``cached_num_computed`` holds each one's
    ``num_computed_tokens`` before the step (what the message carries; 0 for a resumed
    request), ``cached_new_block_ids`` the blocks allocated to it this step (for a
    resumed request: all of its blocks, which replace the old ones on the runner) and
    ``cached_resumed`` whether it resumes from preemption. ``preempted``: the requests
    preempted while scheduling this step, in preemption order. ``scheduled_reqs``: every
    scheduled request in the order of ``num_scheduled_tokens`` (running ones, then
    those taken from the waiting queue, new or resumed). ``sample_positions``
    (``AsyncScheduler`` only): per scheduled request, in that order, the position in
    ``all_token_ids`` that this step's sampled token fills, or -1 for a partial
    prefill (no sample). ``spec_tokens``: ``req_id -> [num_spec]`` draft ids scheduled
    this step (the message's ``scheduled_spec_decode_tokens``); ``num_spec_tokens``
    their total.

    ``AsyncScheduler`` with drafts only: ``num_placeholders``, per scheduled request
    (same order), the output placeholders this step appended (0 for a partial
    prefill); ``scheduled_in_flight``: whether a step was in flight when this one was
    scheduled (then each running request that sampled in that step has an optimistic
    ``cached_num_computed`` entry, which the runner lowers by that step's rejected
    drafts); ``output``: the ``ModelRunnerOutput`` applied to it (for the input
    oracle, which reads the accepted drafts from it).
    """

    __slots__ = ("step", "new_reqs", "cached_reqs", "cached_num_computed",
                 "cached_new_block_ids", "cached_resumed", "num_scheduled_tokens",
                 "total_num_scheduled_tokens", "finished_req_ids", "preempted",
                 "scheduled_reqs", "sample_positions", "spec_tokens", "num_spec_tokens",
                 "num_placeholders", "scheduled_in_flight", "output", "prev_scheduled")

    def __init__(self, step: int, finished_req_ids: set[str]):
        self.step = step
        self.new_reqs: list[Request] = []
        self.scheduled_reqs: list[Request] = []
        self.cached_reqs: list[Request] = []
        self.cached_num_computed: list[int] = []
        self.cached_new_block_ids: list[list[int]] = []
        self.cached_resumed: list[bool] = []
        self.num_scheduled_tokens: dict[str, int] = {}
        self.total_num_scheduled_tokens = 0
        self.finished_req_ids = finished_req_ids
        self.preempted: list[Request] = []
        self.sample_positions: list[int] = []  # AsyncScheduler only
        self.spec_tokens: dict[str, list[int]] = {}
        self.num_spec_tokens = 0
        self.num_placeholders: list[int] = []  # AsyncScheduler with drafts only
        self.scheduled_in_flight = False
        self.output: Optional[ModelRunnerOutput] = None
        #: the previous step's ``num_scheduled_tokens`` (vLLM 1d37eb37's
        #: ``prev_step_scheduled_req_ids``; the 1d37eb37 layout's ``all_token_ids``)
        self.prev_scheduled: dict[str, int] = {}

    @property
    def num_resumed(self) -> int:
        """Requests resumed from preemption this step."""
        return sum(self.cached_resumed)

    @property
    def is_decode_only(self) -> bool:
        """True when every scheduled request is a running request decoding one token
        (plus its scheduled draft tokens, with speculative decoding)."""
        return (not self.new_reqs
                and self.total_num_scheduled_tokens == len(self.cached_reqs)
                + self.num_spec_tokens and not any(self.cached_resumed))


class Scheduler:
    """See the module docstring. ``policy``: ``send`` or ``cached``; ``messages``: the
    message classes it builds (``STRUCTS`` for msgpack, ``VLLM_DATACLASSES`` for
    pickle: ``wire.codecs.messages_of``), taken in ``config.vllm_layout``
    (``messages.in_layout``).

    ``max_reqs_per_step`` (default ``max_num_seqs``): requests one step may schedule
    (``engine.pipeline.PipelineScheduler`` lowers it to split the running requests into
    micro-batches).

    Counters: ``num_rejected``; ``num_preemptions`` (all requests, whole run) and
    ``preemptions``: one ``(step, req_id, num_computed_tokens)`` per preemption, in
    order, with the tokens the request had computed when it was preempted.
    """

    def __init__(self, config: SchedulerConfig, policy: str, messages: MessageSet = STRUCTS):
        config.validate()
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r}")
        self.config = config
        self.messages = messages = in_layout(messages, config.vllm_layout)
        self.send_token_ids = policy == SEND
        self.kv_cache = KVCacheManager(config.num_blocks, config.block_size)
        self.waiting: list[Request] = []  # FIFO; popped from the front
        self.running: list[Request] = []
        self.requests: dict[str, Request] = {}
        self.finished_req_ids: set[str] = set()
        self.step = 0
        self.num_rejected = 0
        self.num_preemptions = 0
        self.preemptions: list[tuple[int, str, int]] = []
        self.num_output_tokens = 0  # tokens sampled so far, all requests
        self.record_token_steps = False  # timed clock: note the step of every token
        # Requests one step may schedule (a pipeline's micro-batch: engine.pipeline)
        self.max_reqs_per_step = config.max_num_seqs
        #: ``None``, or a list each ``add_request`` appends ``(req_id, index, prompt ids,
        #: max_tokens)`` to (the ``replicated`` codec's scheduler end takes them per step)
        self.arrivals: Optional[list[tuple[str, int, list[int], int]]] = None
        #: the 1d37eb37 layout (``--vllm-layout``): ``build_scheduler_output`` builds
        #: its ``CachedRequestData`` (``_later_cached``)
        self.later_layout = config.vllm_layout != LAYOUT_7F280D69C
        self._prev_scheduled: dict[str, int] = {}  # the last plan's num_scheduled_tokens

    # ------------------------------------------------------------------ arrivals
    def never_fits(self, num_prompt_tokens: int) -> bool:
        """Whether a prompt of ``num_prompt_tokens`` tokens is rejected on arrival
        whatever else runs (admission rule, module docstring): ``>= max_model_len``
        tokens, or more KV blocks than the cache has for it plus one token."""
        cfg = self.config
        return (num_prompt_tokens >= cfg.max_model_len
                or -(-(num_prompt_tokens + 1) // cfg.block_size) > cfg.num_blocks)

    def add_request(self, req_id: str, index: int, prompt_token_ids: list[int],
                    max_tokens: int, num_prompt_tokens: Optional[int] = None) -> Request:
        """Queue a request; applies the admission rule (see module docstring).
        ``num_prompt_tokens``: given (with an empty ``prompt_token_ids``) for a prompt
        that ``never_fits`` and was therefore never built; it is rejected on arrival and
        counted like any other (``SchedulerError`` if it would fit)."""
        if req_id in self.requests:
            raise SchedulerError(f"duplicate req_id {req_id!r}")
        unbuilt = num_prompt_tokens is not None and not prompt_token_ids
        if unbuilt and not self.never_fits(num_prompt_tokens):
            raise SchedulerError(f"request {req_id}: a prompt of {num_prompt_tokens} tokens "
                                 "that fits was not built")
        if self.arrivals is not None:  # a replicated case ships them to its replicas
            # (an unbuilt prompt ships empty: a replica rejects it as well)
            self.arrivals.append((req_id, index, prompt_token_ids, max_tokens))
        req = Request(req_id, index, prompt_token_ids, max_tokens, self.step,
                      self.config.max_model_len, self.messages.sampling_params(max_tokens))
        if unbuilt:
            req.num_prompt_tokens = num_prompt_tokens  # all_token_ids stays empty
        self.requests[req_id] = req
        if (self.never_fits(req.num_prompt_tokens) or req.num_prompt_tokens == 0
                or max_tokens < 1):
            req.status = RequestStatus.REJECTED
            req.finish_reason = "rejected"
            req.finish_step = self.step
            self.num_rejected += 1
        else:
            self.waiting.append(req)
        return req

    def has_unfinished_requests(self) -> bool:
        return bool(self.waiting or self.running)

    def _never_fits(self, req: Request, num_tokens: int) -> SchedulerError:
        cfg = self.config
        need = -(-num_tokens // cfg.block_size)
        return SchedulerError(
            f"request {req.req_id} needs {need} KV blocks for {num_tokens} tokens at step "
            f"{self.step} and the cache has only {cfg.num_blocks} (block_size "
            f"{cfg.block_size}); raise num_blocks")

    def _preempt(self, req: Request) -> None:
        """Preempt ``req`` by recompute (vLLM 7f280d69c, FCFS): free its blocks,
        reset ``num_computed_tokens``, put it at the front of the waiting queue."""
        num_computed = req.num_computed_tokens
        self.kv_cache.free(req.block_ids)
        req.block_ids = []
        req.num_computed_tokens = 0
        req.spec_token_ids = []
        req.status = RequestStatus.PREEMPTED
        req.num_preemptions += 1
        self.num_preemptions += 1
        self.preemptions.append((self.step, req.req_id, num_computed))
        self.waiting.insert(0, req)

    # ------------------------------------------------------------------ schedule
    def schedule(self) -> SchedulePlan:
        """Decide this step's batch and advance ``num_computed_tokens``.

        Preempts running requests when KV blocks run out (see the module docstring).
        Raises ``SchedulerError`` when one request needs more KV blocks than the
        whole cache has.
        """
        cfg = self.config
        plan = SchedulePlan(self.step, self.finished_req_ids)
        self.finished_req_ids = set()
        budget = cfg.max_num_batched_tokens
        limit = cfg.max_model_len - 1
        kv = self.kv_cache
        num_scheduled = plan.num_scheduled_tokens
        cached_reqs = plan.cached_reqs
        cached_nc = plan.cached_num_computed
        cached_blocks = plan.cached_new_block_ids
        preempted = plan.preempted
        running = self.running

        block_size = cfg.block_size
        num_blocks = cfg.num_blocks
        spec = cfg.num_spec_tokens > 0
        spec_tokens = plan.spec_tokens
        lookahead = cfg.num_lookahead_tokens
        # Running requests in order. Preemption pops from the end of ``running``, never a
        # request already scheduled this step (those lie before the current one), so the
        # loop may advance ``num_computed_tokens`` as it goes (vLLM does it after both
        # loops, in ``_update_after_schedule``; nothing in between reads it).
        max_reqs = self.max_reqs_per_step
        for req in running:
            if budget <= 0 or len(num_scheduled) >= max_reqs:
                break
            nc = req.num_computed_tokens
            end = len(req._all_token_ids)
            if spec and req.spec_token_ids:  # vLLM: num_tokens_with_spec
                end += len(req.spec_token_ids)
            if end > limit:
                end = limit
            n = end - nc  # min(num_tokens, max_model_len - 1) - num_computed_tokens
            if n > budget:
                n = budget
            if n <= 0:
                continue
            held = req.block_ids
            slots = nc + n  # vLLM allocate_slots: + num_lookahead_tokens, capped
            if lookahead:
                slots = min(slots + lookahead, cfg.max_model_len)
            if slots > len(held) * block_size:  # needs more blocks than it holds
                need = (slots + block_size - 1) // block_size - len(held)
                if len(held) + need > num_blocks:
                    raise self._never_fits(req, slots)
                while True:
                    got = kv.allocate(need)
                    if got is not None:
                        break
                    # Preempt the lowest-priority request: the last one running.
                    victim = running.pop()
                    self._preempt(victim)
                    preempted.append(victim)
                    if victim is req:
                        break  # it preempted itself: nothing left to preempt
                if got is None:
                    break
                new_blocks = got
                held.extend(got)
            else:
                new_blocks = []
            cached_reqs.append(req)
            cached_nc.append(nc)
            cached_blocks.append(new_blocks)
            num_scheduled[req.req_id] = n
            if spec and req.spec_token_ids:
                num_spec = nc + n - len(req._all_token_ids)  # the drafts that fit
                if num_spec > 0:
                    drafts = req.spec_token_ids[:num_spec]
                    spec_tokens[req.req_id] = drafts
                    plan.num_spec_tokens += len(drafts)
                req.spec_token_ids = []
            req.num_computed_tokens = nc + n
            budget -= n
        cached_resumed = plan.cached_resumed = [False] * len(cached_reqs)
        scheduled_reqs = plan.scheduled_reqs = cached_reqs.copy()

        # vLLM schedules no waiting request in a step that preempted.
        waiting = self.waiting
        while (not preempted and waiting and budget > 0
               and len(running) < cfg.max_num_seqs and len(num_scheduled) < max_reqs):
            req = waiting[0]
            resumed = req.status == RequestStatus.PREEMPTED
            # num_tokens, not the prompt: a resumed request recomputes its outputs too.
            n = min(len(req._all_token_ids), budget, limit)
            slots = min(n + lookahead, cfg.max_model_len) if lookahead else n
            need = kv.blocks_needed(0, slots)
            got = kv.allocate(need)
            if got is None:
                if not running:
                    raise self._never_fits(req, slots)
                break
            waiting.pop(0)
            req.block_ids = got
            req.status = RequestStatus.RUNNING
            running.append(req)
            if resumed:
                cached_reqs.append(req)
                cached_nc.append(0)
                cached_blocks.append(list(got))  # req.block_ids grows later steps
                cached_resumed.append(True)
            else:
                req.first_scheduled_step = self.step
                plan.new_reqs.append(req)
            scheduled_reqs.append(req)
            num_scheduled[req.req_id] = n
            req.num_computed_tokens += n  # 0 before: new, or reset by preemption
            budget -= n

        plan.total_num_scheduled_tokens = cfg.max_num_batched_tokens - budget
        plan.prev_scheduled = self._prev_scheduled
        self._prev_scheduled = num_scheduled
        self.step += 1
        return plan

    def build_scheduler_output(self, plan: SchedulePlan) -> SchedulerOutput:
        """The ``SchedulerOutput`` message of ``plan`` (per-request loops, as vLLM).

        A resumed request's ``new_block_ids`` entry is all of its block ids (the runner
        replaces its old ones); under ``send`` its ``new_token_ids`` entry is
        ``all_token_ids[0 : num_scheduled_tokens]``, prompt and outputs. ``send``'s
        slices go through the request's read-only ``all_token_ids`` view (a Python
        ``__getitem__`` call each, as vLLM's ``req.all_token_ids[...]`` in
        ``_make_cached_request_data`` at 7f280d69c) and are plain lists. Every list in
        the message is new or the plan's own (a plan serves one step), so nothing in it
        is shared with a later step's message or with the scheduler's requests.
        """
        msgs = self.messages
        new_request_data = msgs.new_request_data
        new_reqs = [
            new_request_data(req.req_id, req.prompt_token_ids, req.sampling_params,
                             (list(req.block_ids),))
            for req in plan.new_reqs
        ]
        cached_reqs = plan.cached_reqs
        num_scheduled = plan.num_scheduled_tokens
        req_ids = [req.req_id for req in cached_reqs]
        new_block_ids = [(blocks,) for blocks in plan.cached_new_block_ids]
        spec_tokens = plan.spec_tokens
        if self.send_token_ids and spec_tokens:  # num_scheduled - num_spec (vLLM)
            new_token_ids = [req.all_token_ids[nc:nc + num_scheduled[req_id]
                                               - len(spec_tokens.get(req_id, ()))]
                             for req, req_id, nc in zip(cached_reqs, req_ids,
                                                        plan.cached_num_computed)]
        elif self.send_token_ids:
            new_token_ids = [req.all_token_ids[nc:nc + num_scheduled[req_id]]
                             for req, req_id, nc in zip(cached_reqs, req_ids,
                                                        plan.cached_num_computed)]
        else:
            new_token_ids = []
        if self.later_layout:
            return self._later_output(plan, new_reqs, req_ids, new_token_ids)
        cached = msgs.CachedRequestData(
            req_ids=req_ids,
            resumed_from_preemption=plan.cached_resumed,
            new_token_ids=new_token_ids,
            new_block_ids=new_block_ids,
            num_computed_tokens=plan.cached_num_computed,
        )
        return msgs.SchedulerOutput(
            scheduled_new_reqs=new_reqs,
            scheduled_cached_reqs=cached,
            num_scheduled_tokens=num_scheduled,
            total_num_scheduled_tokens=plan.total_num_scheduled_tokens,
            scheduled_spec_decode_tokens=spec_tokens,
            scheduled_encoder_inputs={},
            num_common_prefix_blocks=[0],
            finished_req_ids=plan.finished_req_ids,
            free_encoder_input_ids=[],
            structured_output_request_ids={},
            grammar_bitmask=None,
        )

    def _later_output(self, plan: SchedulePlan, new_reqs: list, req_ids: list[str],
                      new_token_ids: list[list[int]]):
        """The ``SchedulerOutput`` of ``plan`` in the 1d37eb37 layout (vLLM 1d37eb37
        ``Scheduler.schedule`` and ``_make_cached_request_data``): ``resumed_req_ids``
        a set; ``all_token_ids`` a copy of the whole token history of each cached
        request not scheduled in the previous step (resumed, or left out of the last
        batch: ``req.all_token_ids.copy()``); ``new_block_ids`` entries ``None`` where
        a request got no new block (``get_block_ids(allow_none=True)``);
        ``num_output_tokens`` each request's outputs so far; ``preempted_req_ids`` the
        requests preempted this step."""
        msgs = self.messages
        prev = plan.prev_scheduled
        all_token_ids: dict[str, list[int]] = {}
        num_output_tokens: list[int] = []
        for req in plan.cached_reqs:
            if req.req_id not in prev:
                all_token_ids[req.req_id] = req._all_token_ids.copy()
            num_output_tokens.append(len(req._all_token_ids) - req.num_prompt_tokens)
        resumed = {req.req_id for req, r in zip(plan.cached_reqs, plan.cached_resumed) if r}
        cached = msgs.CachedRequestData(
            req_ids=req_ids,
            resumed_req_ids=resumed,
            new_token_ids=new_token_ids,
            all_token_ids=all_token_ids,
            new_block_ids=[(blocks,) if blocks else None
                           for blocks in plan.cached_new_block_ids],
            num_computed_tokens=plan.cached_num_computed,
            num_output_tokens=num_output_tokens,
        )
        return msgs.SchedulerOutput(
            scheduled_new_reqs=new_reqs,
            scheduled_cached_reqs=cached,
            num_scheduled_tokens=plan.num_scheduled_tokens,
            total_num_scheduled_tokens=plan.total_num_scheduled_tokens,
            scheduled_spec_decode_tokens=plan.spec_tokens,
            scheduled_encoder_inputs={},
            num_common_prefix_blocks=[0],
            finished_req_ids=plan.finished_req_ids,
            free_encoder_mm_hashes=[],
            preempted_req_ids={req.req_id for req in plan.preempted},
        )

    # ------------------------------------------------------------------ update
    def update_from_output(self, plan: SchedulePlan, output: ModelRunnerOutput) -> list[Request]:
        """Append sampled ids, apply stop rules, free finished requests.

        Returns the requests that finished this step. Raises ``ProtocolError`` if the
        output lacks a scheduled request or samples more than one token for it (with
        speculative decoding: fewer than one or more than its drafts + 1; see
        ``_update_spec``).
        """
        if plan.spec_tokens or self.config.num_spec_tokens:
            return self._update_spec(plan, output)
        index = output.req_id_to_index
        sampled = output.sampled_token_ids
        finished: list[Request] = []
        step = plan.step
        record_steps = self.record_token_steps
        num_rows = len(sampled)
        num_new_tokens = 0
        try:
            for req in plan.scheduled_reqs:
                i = index.get(req.req_id)
                if i is None or not 0 <= i < num_rows:
                    raise ProtocolError(f"step {step}: ModelRunnerOutput has no row for "
                                        f"{req.req_id}")
                ids = sampled[i]
                all_ids = req._all_token_ids
                num_tokens = len(all_ids)
                if num_tokens != req.num_computed_tokens:
                    if ids:
                        raise ProtocolError(f"step {step}: token sampled for {req.req_id} "
                                            "before its prefill ended")
                    continue  # partial prefill: the runner discards its sample
                if len(ids) != 1:
                    raise ProtocolError(f"step {step}: {len(ids)} tokens sampled for "
                                        f"{req.req_id}, expected 1")
                all_ids.append(ids[0])
                num_new_tokens += 1
                if record_steps:
                    req.token_steps.append(step)
                if req.first_token_step < 0:
                    req.first_token_step = step
                if num_tokens + 1 >= req.stop_num_tokens:  # max_tokens or max_model_len
                    req.status = RequestStatus.FINISHED
                    req.finish_reason = "length"
                    req.finish_step = step
                    finished.append(req)
        finally:
            self.num_output_tokens += num_new_tokens
        if finished:
            self._free_finished(finished)
        return finished

    def _free_finished(self, finished: list[Request]) -> None:
        self.running = [r for r in self.running if r.status == RequestStatus.RUNNING]
        for req in finished:
            self.kv_cache.free(req.block_ids)
            req.block_ids = []
            req.spec_token_ids = []
            self.finished_req_ids.add(req.req_id)

    def _update_spec(self, plan: SchedulePlan, output: ModelRunnerOutput) -> list[Request]:
        """``update_from_output`` with speculative decoding (vLLM 7f280d69c
        ``Scheduler.update_from_output``): per scheduled request, ``sampled_token_ids``
        holds 1 to ``num_spec + 1`` ids (its accepted drafts, then the target's token);
        ``num_computed_tokens`` goes back by the rejected ``num_spec + 1 - len(ids)``;
        the ids are appended one by one until one completes the request (the rest are
        dropped); a request still running takes ``output.spec_token_ids[row]`` as its
        drafts for the next step (``None``: none).

        Raises ``ProtocolError`` for a missing row, ids for a partial prefill, or a
        count outside ``[1, num_spec + 1]`` (or drafts longer than
        ``num_spec_tokens``).
        """
        index = output.req_id_to_index
        sampled = output.sampled_token_ids
        proposals = output.spec_token_ids
        max_drafts = self.config.num_spec_tokens
        spec_tokens = plan.spec_tokens
        finished: list[Request] = []
        step = plan.step
        record_steps = self.record_token_steps
        num_rows = len(sampled)
        num_new_tokens = 0
        try:
            for req in plan.scheduled_reqs:
                i = index.get(req.req_id)
                if i is None or not 0 <= i < num_rows:
                    raise ProtocolError(f"step {step}: ModelRunnerOutput has no row for "
                                        f"{req.req_id}")
                ids = sampled[i]
                all_ids = req._all_token_ids
                num_tokens = len(all_ids)
                if num_tokens != req.num_computed_tokens:
                    drafts = spec_tokens.get(req.req_id)
                    if drafts is None:
                        if ids:
                            raise ProtocolError(f"step {step}: token sampled for "
                                                f"{req.req_id} before its prefill ended")
                        continue  # partial prefill: the runner discards its sample
                    num_spec = len(drafts)
                    if not 1 <= len(ids) <= num_spec + 1:
                        raise ProtocolError(
                            f"step {step}: {len(ids)} tokens sampled for {req.req_id}, "
                            f"expected 1 to {num_spec + 1} ({num_spec} drafts)")
                    # vLLM: num_computed_tokens -= len(spec) + 1 - len(generated)
                    req.num_computed_tokens -= num_spec + 1 - len(ids)
                elif len(ids) != 1:
                    raise ProtocolError(f"step {step}: {len(ids)} tokens sampled for "
                                        f"{req.req_id}, expected 1")
                if req.first_token_step < 0:
                    req.first_token_step = step
                stopped = False
                for kept, token_id in enumerate(ids, 1):
                    all_ids.append(token_id)
                    num_new_tokens += 1
                    if record_steps:
                        req.token_steps.append(step)
                    if len(all_ids) >= req.stop_num_tokens:  # max_tokens or max_model_len
                        stopped = True
                        req.num_ids_kept_at_stop = kept
                        break
                if stopped:
                    req.status = RequestStatus.FINISHED
                    req.finish_reason = "length"
                    req.finish_step = step
                    finished.append(req)
                    continue
                drafts = proposals[i] if proposals is not None and i < len(proposals) else []
                if len(drafts) > max_drafts:
                    raise ProtocolError(f"step {step}: {len(drafts)} draft tokens proposed "
                                        f"for {req.req_id}, num_spec_tokens is {max_drafts}")
                req.spec_token_ids = list(drafts)
        finally:
            self.num_output_tokens += num_new_tokens
        if finished:
            self._free_finished(finished)
        return finished


#: The value an output placeholder holds in ``Request.all_token_ids`` until its token
#: arrives (no vocabulary id is negative).
PLACEHOLDER = -1


class AsyncScheduler(Scheduler):
    """Async scheduling (vLLM #19970, d4d309409: ``AsyncScheduler``): step n+1 is
    scheduled before step n's ``ModelRunnerOutput`` is applied, so two steps may be in
    flight. Only the ``cached`` policy can run it: the ids sampled at step n are unknown
    when step n+1 is built (``ValueError`` for ``send``).

    Output placeholders. vLLM counts them per request (``num_output_placeholders``) and
    schedules ``num_tokens + num_output_placeholders - num_computed_tokens`` tokens. Here
    a placeholder is an entry of ``all_token_ids`` holding ``PLACEHOLDER``: a step whose
    scheduled tokens reach the end of ``all_token_ids`` samples a token, and
    ``schedule`` appends a placeholder at that position, so the inherited rule
    ``len(all_token_ids) - num_computed_tokens`` schedules it next step (the runner
    has the real id in its own buffer). ``update_from_output`` writes each sampled id
    over its placeholder (``SchedulePlan.sample_positions``), in step order.

    A sample that completes the request (``max_tokens`` or ``max_model_len``) gets no
    placeholder, so nothing schedules the request again while that token is in flight
    (vLLM skips such a request in its running loop: "Avoid scheduling an extra step
    when we are sure that the previous step has reached request.max_tokens"). It stays
    running, holding its KV blocks and its ``max_num_seqs`` slot, until its output
    arrives, as in vLLM; the request that replaces it in a steady workload arrives
    one step later than under sync scheduling, so the two schedules differ.

    Preemption while a step is in flight (the kind of vLLM #26385, #38624): the
    preempted request keeps its placeholder; its in-flight sample is valid (the runner
    computed it from the right inputs) and is written when it arrives, possibly
    finishing the request while it waits. It can only resume after that output (a
    request preempted while scheduling step n+1 resumes at n+2 at the earliest, and
    step n's output is applied before n+2 is scheduled); ``SchedulerError`` if it
    would resume with a placeholder. A step that schedules nothing (every running
    request waits for its last token) is not sent: its finished ids and preemptions
    go with the next step that schedules something (``schedule`` returns ``None``).
    A request preempted in such a step may resume in that next step, so the runner
    never saw a step that left it out: it takes a resumed request out of its
    persistent batch before re-adding it (``ModelRunner.update_states``, as vLLM's
    runner does), and the message is the one vLLM sends after its empty step.

    With draft tokens (``num_spec_tokens`` K > 0), as vLLM #24799 ("[Core] Async
    Scheduling X Spec Decoding Compatibility", merged late 2025, the basic support
    listed in vLLM #28947; its ``AsyncScheduler._update_after_schedule`` and
    ``GPUModelRunner._update_states``):
    the drafts of step n are proposed by the runner while step n+1 is being
    scheduled, so the scheduler never learns them. It schedules placeholders assuming
    every draft is accepted: a step that samples for a request with ``s`` drafts
    appends ``s + 1`` placeholders (vLLM: ``num_output_placeholders += 1 + s``) and
    sets its ``spec_token_ids`` to K ``PLACEHOLDER`` drafts, so step n+1 schedules the
    bonus token and K drafts at optimistic positions (``scheduled_spec_decode_tokens``
    carries ``-1`` ids; ``ModelRunnerOutput.spec_token_ids`` stays ``None``). The
    runner keeps its drafts and each request's rejected count, substitutes its drafts
    for the placeholders and lowers the optimistic ``num_computed_tokens`` by the
    rejected drafts of the step before (``ModelRunner``, ``async_scheduling``). When
    step n's output arrives, its ids overwrite the first placeholders, the rejected
    ones are deleted and ``num_computed_tokens`` goes back by ``s + 1 - len(ids)``
    (vLLM: ``num_computed_tokens -= num_rejected``), unless the request was preempted
    meanwhile (its count restarted at 0). Placeholders never reach the request's last
    position (``stop_num_tokens - 1``): a step whose accepted drafts could complete the
    request appends only as many as fit and leaves ``spec_token_ids`` empty, so the
    request waits for that output before it is scheduled again (as without drafts,
    no step is ever scheduled past a request's last token; vLLM instead may run one
    step for a request that turns out finished and drops its output).
    """

    def __init__(self, config: SchedulerConfig, policy: str, messages: MessageSet = STRUCTS):
        super().__init__(config, policy, messages)
        if self.send_token_ids:
            raise ValueError("async scheduling needs the cached policy: under send the "
                             "ids sampled at step n are unknown when step n+1 is built")
        self._held: SchedulePlan | None = None
        self._spec = config.num_spec_tokens > 0
        # vLLM AsyncScheduler._spec_token_placeholders: shared, never mutated
        self._spec_placeholders = [PLACEHOLDER] * config.num_spec_tokens
        self._num_in_flight = 0  # plans returned by schedule() and not yet updated

    def schedule(self) -> SchedulePlan | None:  # type: ignore[override]
        """``Scheduler.schedule``, then one placeholder per sampling request (see the
        class docstring); ``None`` when nothing was scheduled (the plan is held and
        merged into the next one)."""
        plan = super().schedule()
        held = self._held
        if held is not None:
            self._held = None
            plan.finished_req_ids |= held.finished_req_ids
            plan.preempted[:0] = held.preempted
        if not plan.scheduled_reqs:
            self._held = plan
            return None
        positions = plan.sample_positions
        for req, resumed in zip(plan.cached_reqs, plan.cached_resumed):
            if resumed and req._all_token_ids[-1] == PLACEHOLDER:
                raise SchedulerError(f"request {req.req_id} resumed at step {plan.step} "
                                     "with an output still in flight")
        plan.scheduled_in_flight = self._num_in_flight > 0
        self._num_in_flight += 1
        if self._spec:
            self._add_spec_placeholders(plan)
            return plan
        for req in plan.scheduled_reqs:
            ids = req._all_token_ids
            end = len(ids)
            if req.num_computed_tokens != end:
                positions.append(-1)  # partial prefill: its sample is discarded
                continue
            positions.append(end)
            if end + 1 < req.stop_num_tokens:
                ids.append(PLACEHOLDER)
        return plan

    def _add_spec_placeholders(self, plan: SchedulePlan) -> None:
        """With drafts: per sampling request of ``plan``, ``min(s + 1, stop_num_tokens
        - 1 - len(all_token_ids))`` placeholders (``s``: its drafts this step) and, when
        all ``s + 1`` fit, K placeholder drafts for the next step (class docstring).
        Fills ``sample_positions`` (the first position this step's ids fill as
        scheduled, -1 for a partial prefill) and ``num_placeholders``."""
        positions, counts = plan.sample_positions, plan.num_placeholders
        spec_tokens = plan.spec_tokens
        drafts = self._spec_placeholders
        for req in plan.scheduled_reqs:
            ids = req._all_token_ids
            end = len(ids)
            if req.num_computed_tokens < end:
                positions.append(-1)  # partial prefill: its sample is discarded
                counts.append(0)
                continue
            want = len(spec_tokens.get(req.req_id, ())) + 1
            m = req.stop_num_tokens - 1 - end
            if m >= want:
                m = want
                req.spec_token_ids = drafts
            positions.append(end)
            counts.append(m)
            if m:
                ids.extend([PLACEHOLDER] * m)
                req.num_output_placeholders += m

    def update_from_output(self, plan: SchedulePlan, output: ModelRunnerOutput) -> list[Request]:
        """Write each sampled id at its ``sample_positions`` entry, apply the stop rules
        and free finished requests (running ones, and preempted ones whose last
        token was in flight). Returns the requests that finished.

        Raises ``ProtocolError`` if the output lacks a scheduled request, samples for a
        partial prefill, samples other than one token for a sampling request, or
        (a scheduler bug) the position holds no placeholder. With drafts:
        ``_update_spec_async``.
        """
        self._num_in_flight -= 1
        if self._spec:
            return self._update_spec_async(plan, output)
        index = output.req_id_to_index
        sampled = output.sampled_token_ids
        finished: list[Request] = []
        step = plan.step
        num_rows = len(sampled)
        num_new_tokens = 0
        try:
            for req, pos in zip(plan.scheduled_reqs, plan.sample_positions):
                i = index.get(req.req_id)
                if i is None or not 0 <= i < num_rows:
                    raise ProtocolError(f"step {step}: ModelRunnerOutput has no row for "
                                        f"{req.req_id}")
                ids = sampled[i]
                if pos < 0:
                    if ids:
                        raise ProtocolError(f"step {step}: token sampled for {req.req_id} "
                                            "before its prefill ended")
                    continue
                if len(ids) != 1:
                    raise ProtocolError(f"step {step}: {len(ids)} tokens sampled for "
                                        f"{req.req_id}, expected 1")
                self._place(req, pos, ids[0], step)
                num_new_tokens += 1
                if pos + 1 >= req.stop_num_tokens:
                    req.finish_reason = "length"
                    req.finish_step = step
                    finished.append(req)
        finally:
            self.num_output_tokens += num_new_tokens
        if finished:
            self._finish(finished)
        return finished

    def _update_spec_async(self, plan: SchedulePlan, output: ModelRunnerOutput) -> list[Request]:
        """``update_from_output`` with drafts (class docstring; vLLM #24799): per
        sampling request, its 1 to ``s + 1`` ids overwrite its first placeholders (the
        ids past them, when fewer were appended, are appended), the request stops at
        the id that completes it (the rest dropped, its later placeholders removed),
        the unfilled placeholders of this step are deleted and, for a running request,
        ``num_computed_tokens`` goes back by the rejected ``s + 1 - len(ids)``; one
        whose placeholders were cut short gets K placeholder drafts again.

        Raises ``ProtocolError`` for a missing row, ids for a partial prefill, a count
        outside ``[1, s + 1]``, or (a scheduler bug) an id over a non-placeholder.
        """
        plan.output = output
        index = output.req_id_to_index
        sampled = output.sampled_token_ids
        spec_tokens = plan.spec_tokens
        finished: list[Request] = []
        step = plan.step
        num_rows = len(sampled)
        num_new_tokens = 0
        record_steps = self.record_token_steps
        try:
            for req, pos, m in zip(plan.scheduled_reqs, plan.sample_positions,
                                   plan.num_placeholders):
                i = index.get(req.req_id)
                if i is None or not 0 <= i < num_rows:
                    raise ProtocolError(f"step {step}: ModelRunnerOutput has no row for "
                                        f"{req.req_id}")
                ids = sampled[i]
                if pos < 0:
                    if ids:
                        raise ProtocolError(f"step {step}: token sampled for {req.req_id} "
                                            "before its prefill ended")
                    continue
                num = len(ids)
                want = len(spec_tokens.get(req.req_id, ())) + 1
                if not 1 <= num <= want:
                    raise ProtocolError(f"step {step}: {num} tokens sampled for "
                                        f"{req.req_id}, expected 1 to {want} "
                                        f"({want - 1} drafts)")
                all_ids = req._all_token_ids
                first, kept = self._place_ids(req, ids, m, step)
                num_new_tokens += kept
                if record_steps:
                    req.token_steps.extend([step] * kept)
                if req.first_token_step < 0:
                    req.first_token_step = step
                if first + kept >= req.stop_num_tokens:  # max_tokens or max_model_len
                    del all_ids[first + kept:]
                    req.num_output_placeholders = 0
                    req.num_ids_kept_at_stop = kept
                    req.finish_reason = "length"
                    req.finish_step = step
                    finished.append(req)
                    continue
                if kept < m:
                    del all_ids[first + kept:first + m]
                req.num_output_placeholders -= m
                if req.status == RequestStatus.RUNNING:
                    req.num_computed_tokens -= want - num  # vLLM: -= num_rejected
                    if m < want:
                        req.spec_token_ids = self._spec_placeholders
        finally:
            self.num_output_tokens += num_new_tokens
        if finished:
            self._finish(finished)
        return finished

    @staticmethod
    def _place_ids(req: Request, ids: list[int], m: int, step: int) -> tuple[int, int]:
        """Write one step's ``ids`` over its ``m`` placeholders (the first of the
        request's; ids past them are appended), up to the one that completes the
        request. Returns ``(first position, ids kept)``; ``ProtocolError`` when a
        position that should hold a placeholder does not."""
        all_ids = req._all_token_ids
        first = len(all_ids) - req.num_output_placeholders
        stop = req.stop_num_tokens
        kept = 0
        for token_id in ids:
            p = first + kept
            if kept < m:
                if all_ids[p] != PLACEHOLDER:
                    raise ProtocolError(f"step {step}: {req.req_id}: no output placeholder "
                                        f"at position {p}")
                all_ids[p] = token_id
            else:
                all_ids.append(token_id)
            kept += 1
            if p + 1 >= stop:
                break
        return first, kept

    def _place(self, req: Request, pos: int, token_id: int, step: int) -> None:
        """Write ``token_id`` over the placeholder at ``pos`` (or append it: a request's
        last token has none)."""
        all_ids = req._all_token_ids
        if pos == len(all_ids):
            all_ids.append(token_id)
        elif pos < len(all_ids) and all_ids[pos] == PLACEHOLDER:
            all_ids[pos] = token_id
        else:
            raise ProtocolError(f"step {step}: {req.req_id}: no output placeholder at "
                                f"position {pos} ({len(all_ids)} tokens)")
        if self.record_token_steps:
            req.token_steps.append(step)
        if req.first_token_step < 0:
            req.first_token_step = step

    def _finish(self, finished: list[Request]) -> None:
        """Take finished requests out of the running list or, when preempted while
        their last token was in flight, out of the waiting queue; free their blocks."""
        preempted = [r for r in finished if r.status == RequestStatus.PREEMPTED]
        for req in finished:
            req.status = RequestStatus.FINISHED
        self.running = [r for r in self.running if r.status == RequestStatus.RUNNING]
        if preempted:
            self.waiting = [r for r in self.waiting if r.status != RequestStatus.FINISHED]
        for req in finished:
            self.kv_cache.free(req.block_ids)
            req.block_ids = []
            self.finished_req_ids.add(req.req_id)
