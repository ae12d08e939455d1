"""What a trace replay's cases would do, found before the first case runs
(``bench.py`` calls ``check_trace_cases`` once the scenario built its cases).

Three problems otherwise show only after every case has run, or stop it midway:

- requests rejected on arrival: a prompt the scheduler's admission rule refuses
  (``engine.scheduler.Scheduler.never_fits``: ``max_model_len`` tokens or more, or
  more KV blocks than the cache has for it and one token) is rejected in every case
  and counted in ``num_rejected``. The ``max_model_len`` part is vLLM's
  (``tests/v1/e2e/test_context_length.py``, ``test_decoder_max_context_length_validation``
  at vLLM b91ee1b47c: with ``max_model_len`` 2048 and ``max_tokens`` 1 a prompt of
  2047 tokens is served and one of 2048 refused by
  ``Processor._validate_model_input``, "The decoder prompt (length 2048) plus the
  number of requested output tokens (at least 1) is longer than the maximum model
  length of 2048"; a later version of that file, ``test_max_context_length``,
  expects a prompt of 2048 with ``max_tokens`` 1 to be served, which this rule does
  not follow); the KV-block part is the harness's own, where vLLM would refuse to start
  (a cache smaller than ``max_model_len``, below). When every request replayed is, the
  run would measure nothing: refused (``ConfigError``). When some are, one warning line
  says how many, as the run will record them (``rejection_warning``). The advice names
  the ``--num-blocks`` that serves them to their last step (``Rejections.blocks``), not
  only the one that admits their prompts. A prompt whose output
  would take it past ``max_model_len`` is not rejected: it stops there (the summary's
  ``num_cut_at_max_model_len``).
- a replay whose every step falls in the warm-up, so that no step is counted and
  its per-step figures are absent: refused, but for a timed replay, whose latencies
  cover every request whatever was counted: warned (as its case's warning says after
  the run). A synchronous replay on the logical clock without drafts is simulated with
  the scheduler itself (``replay_steps``), which gives its exact number of steps; a
  timed replay (its batches follow the wall clock), an async one or one with drafts is
  refused only where the most steps it can take (``StepBounds``) all fall in the
  warm-up.
- a served request that can need more KV blocks than the whole cache at its last
  step (its prompt and output, cut at ``max_model_len``, and the draft and lookahead
  slots the scheduler allocates: ``last_step_slots``) stops its case there with
  ``SchedulerError``, whatever else runs (preempting every other request frees no
  more than the cache): refused (``overflow_problem``). vLLM cannot get there: at
  start-up it refuses a ``max_model_len`` its KV cache cannot hold ("The model's max
  seq len (N) is larger than the maximum number of tokens that can be stored in KV
  cache (M). Try increasing `gpu_memory_utilization` or decreasing `max_model_len`
  when initializing the engine.", an early V1 GPU worker's ``initialize_cache``;
  later ``vllm/v1/core/kv_cache_utils.py``,
  ``check_enough_kv_cache_memory``: "To serve at least one request with the models's
  max seq len (N), (X GiB KV cache is needed, which is larger than the available KV
  cache memory (Y GiB). ..."). With drafts the last step's slots depend on the drafts
  accepted: a request that fits but for the slots of the drafts its last step may
  schedule is warned about (``overflow_warning``; a 40-token prompt with 87 output
  tokens and 3 drafts in 8 blocks of 16 runs through at ``--spec-acceptance`` 0.7 and
  1, sync or async), and refused only where its last step schedules them for certain:
  ``--spec-acceptance`` 0 rejects every draft (the runner still proposes K, and the
  scheduler allocates their slots), so the request takes one token a step, up to its
  last, and is the only request served (no other one preempts it first or takes the
  token budget).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ipc_bench.engine.config import CACHED, MAX_MODEL_LEN, ConfigError, SchedulerConfig
from ipc_bench.engine.scheduler import Scheduler
from ipc_bench.engine.traces import Trace
from ipc_bench.engine.workloads import TraceWorkload

__all__ = ["CacheOverflow", "Rejections", "ReplayRows", "StepBounds", "cache_overflow",
           "check_trace_cases", "last_step_slots", "more_steps_advice", "overflow_problem",
           "overflow_warning", "rejection_problem", "rejection_warning",
           "replay_blocks_needed", "replay_steps", "step_bounds", "trace_rejections",
           "warmup_problem"]


@dataclass(frozen=True)
class Rejections:
    """The requests of a replay its scheduler rejects on arrival: ``count`` of
    ``total``; ``longest``: the longest rejected prompt (tokens); ``by_len``: whether
    some rejected prompt has ``max_model_len`` tokens or more; ``by_blocks``: whether
    some needs more KV blocks than the cache has; ``mask``: bool array, shape (N,),
    True for each rejected row; ``blocks``: the KV blocks that serve every request of
    the replay once ``max_model_len`` admits the longest (``longest + 1`` where
    ``by_len``): each admitted (its prompt and one token) and its last step's slots
    as ``last_step_slots`` counts them, drafts included (its ``most``)."""

    count: int
    total: int
    longest: int
    by_len: bool
    by_blocks: bool
    mask: np.ndarray
    blocks: int = 0


def trace_rejections(trace: Trace, cfg: SchedulerConfig) -> Rejections:
    """Which requests of ``trace`` a scheduler of ``cfg`` rejects on arrival, by its
    own rule (``Scheduler.never_fits``, asked once per distinct prompt length), so
    that ``count`` is the ``num_rejected`` every case of the replay records. Raises
    ``ConfigError`` for an invalid ``cfg``."""
    sched = Scheduler(cfg, CACHED)
    lens = trace.prompt_lens
    distinct = np.unique(lens)
    never = np.array([sched.never_fits(int(n)) for n in distinct], dtype=bool)
    mask = never[np.searchsorted(distinct, lens)] if len(lens) else np.zeros(0, bool)
    rejected = lens[mask]
    longest = int(rejected.max()) if rejected.size else 0
    by_len = bool(rejected.size and (rejected >= cfg.max_model_len).any())
    # ceil((n + 1) / block_size) without n + 1, which a prompt of 2**63 - 1 overflows
    by_blocks = bool(rejected.size and (rejected // cfg.block_size + 1
                                        > cfg.num_blocks).any())
    blocks = 0
    if rejected.size:  # a max_model_len past 2**62 is no valid config: capped, no overflow
        mml = min(max(cfg.max_model_len, longest + 1) if by_len else cfg.max_model_len,
                  2**62)
        _, most = _slots(lens, trace.output_lens, mml, cfg)
        blocks = int(max((lens // cfg.block_size + 1).max(),
                         (-(-most // cfg.block_size)).max()))
    return Rejections(int(mask.sum()), len(lens), longest, by_len, by_blocks, mask, blocks)


@dataclass(frozen=True)
class CacheOverflow:
    """The served requests of a replay that can need more KV blocks than the whole
    cache at their last step, which no preemption frees (the scheduler stops the case
    with ``SchedulerError`` when one gets there): ``count`` of ``total`` served, by
    ``last_step_slots``' ``most``; ``sure``: how many of them do whatever the drafts
    accepted (by its ``fewest``). The longest of them (of the ``sure`` ones where
    there are any): its ``prompt`` and ``output`` tokens (as the trace gives them),
    ``fewest`` and ``tokens`` (``most``): the KV slots of its last step, ``blocks``:
    ``ceil(tokens / block_size)``; ``need``: the blocks that hold every served
    request's last step with all its drafts (``ceil(max(most) / block_size)``)."""

    count: int
    sure: int
    total: int
    prompt: int
    output: int
    fewest: int
    tokens: int
    blocks: int
    need: int

    @property
    def drafts(self) -> bool:
        """Whether each of them fits but for the drafts its last step may schedule."""
        return not self.sure


def _draft_slots(cfg: SchedulerConfig) -> int:
    """The drafts a request's last step can schedule alone: ``num_spec_tokens``, cut
    by the token budget (the step's bonus token and the drafts)."""
    return min(cfg.num_spec_tokens, cfg.max_num_batched_tokens - 1)


def _slots(p: np.ndarray, outputs: np.ndarray, mml: int,
           cfg: SchedulerConfig) -> tuple[np.ndarray, np.ndarray]:
    """``last_step_slots`` of prompts ``p`` (each below ``mml``) with ``outputs``
    tokens under ``cfg`` but for its ``max_model_len``, ``mml``."""
    # p < max_model_len: capped before the sum, which cannot overflow
    out = np.minimum(outputs, mml - p)
    last = p + out - 1
    la = cfg.num_lookahead_tokens
    fewest = np.minimum(last + la, mml)
    most = np.minimum(np.minimum(last + _draft_slots(cfg), mml - 1) + la, mml)
    return fewest, np.where(out > 1, most, fewest)


def last_step_slots(trace: Trace, served: np.ndarray,
                    cfg: SchedulerConfig) -> tuple[np.ndarray, np.ndarray]:
    """The KV slots the scheduler of ``cfg`` allocates for each request of ``trace``
    that ``served`` (bool, shape (N,)) marks at its last step, the most it holds:
    ``(fewest, most)``, int64 arrays of the served rows. A request stops at ``stop =
    prompt + min(output, max_model_len - prompt)`` tokens; its last step computes the
    K/V of ``stop - 1`` of them (``Scheduler.schedule``: ``num_computed_tokens +
    num_scheduled``, ``max_model_len - 1`` at most; an async step's placeholders
    never reach ``stop - 1``), plus ``num_lookahead_tokens``, capped at
    ``max_model_len``: ``fewest``, exact without drafts. With K drafts a decode step
    also holds slots for the drafts it schedules (K, or ``max_num_batched_tokens -
    1`` where the budget is smaller), so ``most`` is ``min(stop - 1 + K, max_model_len
    - 1)`` plus the lookahead, capped; whether the last step gets there depends on the
    drafts accepted, ``fewest`` it reaches whatever they were. A request of one output
    token ends at its prefill, which schedules no draft: ``most`` is its ``fewest``."""
    return _slots(trace.prompt_lens[served], trace.output_lens[served],
                  cfg.max_model_len, cfg)


def replay_blocks_needed(trace: Trace, cfg: SchedulerConfig) -> int:
    """The fewest KV blocks (``num_blocks``) that serve every request of ``trace`` that
    the ``max_model_len`` of ``cfg`` admits (a prompt under it) to its last step, as
    ``Rejections.blocks`` counts them: each admitted on arrival (its prompt and one
    token, ``Scheduler.never_fits``) and its last step's slots held
    (``last_step_slots``' ``most``, drafts and lookahead included), the largest of
    those over the requests. A smaller cache rejects the longest on arrival or stops
    every case when it outgrows the cache (``overflow_problem``); this one may still
    preempt (the blocks the requests hold at once follow the schedule). 0 where
    ``max_model_len`` rejects every request. Raises nothing."""
    admitted = trace.prompt_lens < cfg.max_model_len
    p = trace.prompt_lens[admitted]
    if not p.size:
        return 0
    _, most = _slots(p, trace.output_lens[admitted], cfg.max_model_len, cfg)
    return int(max((p // cfg.block_size + 1).max(), (-(-most // cfg.block_size)).max()))


def cache_overflow(trace: Trace, served: np.ndarray,
                   cfg: SchedulerConfig) -> Optional[CacheOverflow]:
    """``CacheOverflow`` of the requests of ``trace`` that ``served`` (bool, shape
    (N,)) marks under ``cfg``, by ``last_step_slots``; ``None`` when each fits the
    cache alone with every draft (preemption then lets the run go on)."""
    fewest, most = last_step_slots(trace, served, cfg)
    room = cfg.num_blocks * cfg.block_size
    over, sure = most > room, fewest > room
    if not over.any():
        return None
    i = int(np.argmax(np.where(sure, fewest, -1)) if sure.any()
            else np.argmax(np.where(over, most, -1)))
    row = int(np.flatnonzero(served)[i])
    tokens = int(most[i])
    return CacheOverflow(int(over.sum()), int(sure.sum()), len(most),
                         int(trace.prompt_lens[row]), int(trace.output_lens[row]),
                         int(fewest[i]), tokens, -(-tokens // cfg.block_size),
                         -(-int(most.max()) // cfg.block_size))


def _who(n: int, total: int, what: str) -> str:
    """``3 of 8 requests served``, ``the only request served``, ``both requests
    served``, ``all 8 requests served`` (``what``: ``served``, ``replayed``)."""
    return (f"{n:,} of {total:,} requests {what}" if n < total
            else f"the only request {what}" if n == 1 else f"both requests {what}" if n == 2
            else f"all {n:,} requests {what}")


def _overflow_tail(over: CacheOverflow, cfg: SchedulerConfig,
                   rej: Optional[Rejections] = None) -> str:
    """The end of an overflow line: what preemption cannot do and the options that
    serve the request (``--num-blocks`` to ``over.need``, or a lower
    ``--max-model-len``, where one leaves a block at least). Where requests of
    ``rej`` are rejected on arrival and need more blocks (``Rejections.blocks``), the
    ``--num-blocks`` named is theirs, said to serve them too, so that one change of
    the option does not meet the next refusal."""
    # the largest max_model_len whose every request fits: a last step computes
    # max_model_len - 1 tokens at most, max_model_len with lookahead
    fits = cfg.num_blocks * cfg.block_size + (0 if cfg.num_lookahead_tokens else 1)
    lower = (f", or lower --max-model-len to {fits:,} or less"
             if fits >= max(2, cfg.block_size) else "")
    need, also = over.need, ""
    if rej is not None and rej.count and rej.blocks > need and _reachable(rej):
        need = rej.blocks
        also = (f" (which serves {'the request' if rej.count == 1 else 'the requests'} "
                "rejected on arrival too"
                + (f", with --max-model-len {rej.longest + 1:,} or more)" if rej.by_len
                   else ")"))
    return (f"which preempting every other request does not free: raise --num-blocks to "
            f"{need:,} or more{also}{lower}")


def _reachable(rej: Rejections) -> bool:
    """Whether a ``--max-model-len`` the command line takes (``MAX_MODEL_LEN`` at
    most) admits the longest rejected prompt of ``rej`` (and its first token)."""
    return rej.longest + 1 <= MAX_MODEL_LEN


def _held(over: CacheOverflow, cfg: SchedulerConfig) -> list[str]:
    """What the longest request of ``over`` holds: ``a prompt of 40 tokens, 90 output
    tokens``, then ``cut at max_model_len 200`` and ``2 lookahead slots`` where so."""
    held = [f"a prompt of {over.prompt:,} tokens, {over.output:,} output tokens"]
    if over.prompt + over.output > cfg.max_model_len:
        held.append(f"cut at max_model_len {cfg.max_model_len:,}")
    if cfg.num_lookahead_tokens:
        held.append(f"{cfg.num_lookahead_tokens} lookahead slots")
    return held


def _all_drafts(k: int) -> str:
    """``all 3 drafts``; ``its one draft`` (``k``: the drafts a last step holds slots
    for, ``max_model_len`` leaving room for fewer than ``--num-spec-tokens``)."""
    return f"all {k} drafts" if k > 1 else "its one draft"


def overflow_problem(over: Optional[CacheOverflow], cfg: SchedulerConfig,
                     acceptance: Optional[float] = None,
                     rej: Optional[Rejections] = None) -> Optional[str]:
    """The refusal of a replay one of whose served requests outgrows the whole KV
    cache at its last step whatever its drafts (``CacheOverflow.sure``), else
    ``None``: the scheduler would stop the case there (``SchedulerError``), as vLLM
    refuses at start-up a ``max_model_len`` its KV cache cannot hold. ``... the
    longest (a prompt of 40 tokens, 200 output tokens) needs 15 KV blocks (16 tokens
    each) for the 239 tokens of its last step, ...: raise --num-blocks to 15 or more,
    or lower --max-model-len to 129 or less``. One that outgrows it only with all its
    drafts is refused too where that is certain: ``acceptance`` (the case's
    ``--spec-acceptance``) 0 rejects every draft, so the request takes one token a
    step and its last step schedules all of them, when it is the only request served
    (no other one preempts it or takes the token budget); else ``overflow_warning``.
    ``rej``: the replay's requests rejected on arrival, whose ``--num-blocks`` the
    advice names where larger (``_overflow_tail``)."""
    if over is None:
        return None
    certain = over.drafts and acceptance == 0 and over.total == 1
    if not over.sure and not certain:
        return None
    n = over.sure or over.count
    held = _held(over, cfg)
    k = over.tokens - over.fewest  # the drafts max_model_len leaves room for
    if certain:
        held.append(f"{_all_drafts(k)} scheduled at its last step, as --spec-acceptance 0 "
                    "rejects every draft")
    tokens = over.tokens if certain else over.fewest
    more = (f" ({over.tokens:,} with the {k} draft{'s' if k > 1 else ''} it can schedule "
            "there)"
            if not certain and over.tokens > over.fewest else "")
    return (f"{_who(n, over.total, 'served')} would stop every case mid-run when "
            f"{'it' if n == 1 else 'each'} outgrows the KV cache: the longest "
            f"({'; '.join(held)}) needs {-(-tokens // cfg.block_size):,} KV blocks "
            f"({cfg.block_size} tokens each) for the {tokens:,} tokens of its last "
            f"step{more}, more than the cache's {cfg.num_blocks:,}, "
            f"{_overflow_tail(over, cfg, rej)}")


def overflow_warning(over: Optional[CacheOverflow], cfg: SchedulerConfig,
                     acceptance: Optional[float] = None,
                     rej: Optional[Rejections] = None) -> Optional[str]:
    """The warning for a replay some of whose served requests fit the KV cache but
    for the drafts their last step may schedule (``CacheOverflow.drafts``) where
    ``overflow_problem`` does not refuse it, else ``None``: whether a case stops
    there depends on the drafts accepted before (a 40-token prompt with 87 output
    tokens and 3 drafts in 8 blocks of 16 runs through at ``--spec-acceptance`` 0.7
    and 1, and stops at 0)."""
    if over is None or over.sure or overflow_problem(over, cfg, acceptance):
        return None
    n, k = over.count, over.tokens - over.fewest  # drafts max_model_len leaves room for
    their = "its" if n == 1 else "their"
    return (f"{_who(n, over.total, 'served')} can stop a case mid-run if {their} last "
            f"step schedules {_all_drafts(k)}, as the drafts accepted before it decide: the "
            f"longest ({'; '.join(_held(over, cfg))}) then needs {over.blocks:,} KV blocks "
            f"({cfg.block_size} tokens each) for the {over.tokens:,} tokens of its last "
            f"step, more than the cache's {cfg.num_blocks:,} (without drafts "
            f"{-(-over.fewest // cfg.block_size):,} for {over.fewest:,} tokens), "
            f"{_overflow_tail(over, cfg, rej)}")


def _raise_advice(rej: Rejections, cfg: SchedulerConfig, purpose: str = "") -> str:
    """What serves the rejected requests: ``raise --max-model-len to N or more``
    (the longest prompt and one token) and/or ``--num-blocks to N or more``
    (``Rejections.blocks``: enough for every request to its last step, so that the
    cache-overflow check passes too), then ``purpose``; where no ``--max-model-len``
    the command line takes admits the longest prompt, that instead."""
    if not _reachable(rej):
        return (f"no --max-model-len serves the longest ({rej.longest + 1:,} tokens with "
                f"its first sampled one, {MAX_MODEL_LEN:,} at most)")
    parts = []
    if rej.longest >= cfg.max_model_len:
        parts.append(f"--max-model-len to {rej.longest + 1:,} or more")
    if rej.blocks > cfg.num_blocks:
        parts.append(f"--num-blocks to {rej.blocks:,} or more")
    return "raise " + " and ".join(parts) + purpose


def _rejection_words(rej: Rejections, cfg: SchedulerConfig) -> str:
    """Why they are rejected: ``a prompt of max_model_len 16,384 tokens or more; the
    longest has 20,000 tokens``, or one needing more KV blocks than the cache has."""
    why = []
    if rej.by_len:
        why.append(f"a prompt of max_model_len {cfg.max_model_len:,} tokens or more")
    if rej.by_blocks:
        why.append(f"{'one' if why else 'a prompt'} needing more KV blocks than the "
                   f"cache's {cfg.num_blocks:,} ({cfg.block_size} tokens each) for itself "
                   "and one token")
    return f"{', or '.join(why)}; the longest has {rej.longest:,} tokens"


def rejection_problem(rej: Rejections, cfg: SchedulerConfig) -> Optional[str]:
    """The refusal of a replay whose every request would be rejected on arrival
    (``Rejections.count == total``), else ``None``."""
    if not rej.total or rej.count < rej.total:
        return None
    return (f"{_who(rej.total, rej.total, 'replayed')} would be rejected on arrival in "
            f"every case ({_rejection_words(rej, cfg)}), so the run would measure "
            f"nothing: {_raise_advice(rej, cfg)}")


def rejection_warning(rej: Rejections, cfg: SchedulerConfig) -> Optional[str]:
    """The warning for a replay some of whose requests (not all) will be rejected on
    arrival, else ``None``. Where the KV cache holds ``max_model_len`` tokens every
    rejected prompt has ``max_model_len`` tokens or more, which vLLM rejects too (the
    line says so); where it holds fewer the harness rejects a prompt it cannot hold,
    where vLLM would refuse to start (module docstring), which the line says
    instead."""
    if not rej.count or rej.count == rej.total:
        return None
    vllm = (" (vLLM would refuse to start with a KV cache smaller than max_model_len)"
            if cfg.num_blocks * cfg.block_size < cfg.max_model_len
            else ", as vLLM rejects them,")
    return (f"{rej.count:,} of {rej.total:,} requests replayed will be rejected on arrival "
            f"in every case ({_rejection_words(rej, cfg)}){vllm} and counted in "
            f"num_rejected: {_raise_advice(rej, cfg, ' to serve them')}")


class _Sampled:
    """The part of a ``ModelRunnerOutput`` that ``Scheduler.update_from_output`` reads
    without drafts: one id (0) per scheduled request whose prefill is done, none for a
    partial prefill."""

    __slots__ = ("req_id_to_index", "sampled_token_ids")

    def __init__(self, plan) -> None:
        reqs = plan.scheduled_reqs
        self.req_id_to_index = {r.req_id: i for i, r in enumerate(reqs)}
        self.sampled_token_ids = [[0] if r.num_computed_tokens == len(r._all_token_ids)
                                  else [] for r in reqs]


def replay_steps(trace: Trace, arrival_steps: np.ndarray, cfg: SchedulerConfig,
                 limit: int) -> Optional[int]:
    """The steps a synchronous logical-clock replay of ``trace`` takes without drafts
    (the loop's ``seq`` at its end: idle steps skipped), found by running the
    scheduler of ``cfg`` on it with one sampled id per finished prefill; ``None`` when
    it takes more than ``limit`` (it stops there). ``arrival_steps``: int64 array,
    shape (N,), each request's arrival step (``TraceWorkload.arrival_steps``).
    Arrivals wait outside the scheduler while ``max_num_seqs`` requests wait in it (a
    step admits no more than that), so a trace arriving at once costs no more."""
    sched = Scheduler(cfg, CACHED)
    prompts, outputs = trace.prompt_lens, trace.output_lens
    n, nxt, seq = len(trace), 0, 0
    cap = cfg.max_num_seqs
    due: deque[int] = deque()
    while seq <= limit:
        while nxt < n and arrival_steps[nxt] <= sched.step:
            due.append(nxt)
            nxt += 1
        while due and len(sched.waiting) < cap:
            i = due.popleft()
            p = int(prompts[i])
            unbuilt = sched.never_fits(p)
            sched.add_request(str(i), i, [] if unbuilt else [0] * p, int(outputs[i]),
                              p if unbuilt else None)
        if not sched.has_unfinished_requests() and not due:
            if nxt >= n:
                return seq
            sched.step = max(int(arrival_steps[nxt]), sched.step + 1)
            continue
        plan = sched.schedule()
        sched.update_from_output(plan, _Sampled(plan))
        seq += 1
    return None


@dataclass(frozen=True)
class StepBounds:
    """The fewest and the most steps a replay can take, whatever its batches (a
    timed replay's follow the wall clock). ``low``: the most of the longest request's
    own steps (its prefill in chunks of the budget, then its outputs, up to K + 1 a
    step with K drafts) and the tokens scheduled in all over the budget. ``high``: a
    step either samples a token (of the requests' outputs in all) or only prefills,
    budget-cut, the whole budget of prompt tokens (at most the prompts' tokens in all
    over the budget): a bound only where no request can be preempted (every served
    request's blocks fit in the cache at once; else ``None``)."""

    low: int
    high: Optional[int]


def step_bounds(trace: Trace, served: np.ndarray, cfg: SchedulerConfig) -> StepBounds:
    """``StepBounds`` of the requests of ``trace`` that ``served`` (bool, shape (N,))
    marks, under ``cfg`` (its budget, ``max_model_len``, drafts, lookahead, KV cache)."""
    p = trace.prompt_lens[served]
    if not p.size:
        return StepBounds(0, 0)
    # p < max_model_len: capped before the sum, which cannot overflow then
    stop = p + np.minimum(trace.output_lens[served], cfg.max_model_len - p)
    k, budget = cfg.num_spec_tokens, cfg.max_num_batched_tokens
    own = int((-(-p // budget) + (-(-(stop - p - 1) // (k + 1)))).max())
    low = max(own, -(-int((stop - 1).sum()) // budget))
    slots = np.minimum(stop + k + cfg.num_lookahead_tokens, cfg.max_model_len)
    blocks = int((-(-slots // cfg.block_size)).sum())
    high = int((stop - p).sum()) + int(p.sum()) // budget
    return StepBounds(low, high if blocks <= cfg.num_blocks else None)


def more_steps_advice(steps: int, cut: Optional[bool]) -> str:
    """What counts a step of a replay of ``steps`` steps or more, all in the warm-up:
    ``set --warmup-steps below 29 (e.g. --warmup-steps 14) or ...``: ``raise
    --max-requests`` where it stopped the reading before more rows (``cut`` True),
    ``replay a longer trace`` where the trace was read whole (False), ``raise
    --max-requests (if the trace has more rows)`` where that is not known (None: as
    after the run, ``analysis.summary``)."""
    more = ("raise --max-requests" if cut else "replay a longer trace" if cut is False
            else "raise --max-requests (if the trace has more rows)")
    return f"set --warmup-steps below {steps:,} (e.g. --warmup-steps {steps // 2:,}) or {more}"


@dataclass(frozen=True)
class ReplayRows:
    """How many rows a replay read and why no more: ``limit``, the ``--max-requests``
    in effect (``None``: the whole trace); ``given``: whether the command line gave it;
    ``after``: whether the trace has rows after those read (``Trace.rows_after``;
    ``None``: not known)."""

    rows: int
    limit: Optional[int]
    given: bool
    after: Optional[bool] = None

    @property
    def cut(self) -> Optional[bool]:
        """Whether ``--max-requests`` stopped the reading before more rows: ``None``
        where it read ``limit`` rows and whether more follow is not known."""
        if self.limit is None or self.rows < self.limit or self.after is False:
            return False
        return self.after

    def words(self) -> str:
        """``the trace's 2 rows``, ``the first 40 rows (--max-requests 40)``; one row:
        ``the trace's only row``, ``the first row (--max-requests 1)``."""
        one = self.rows == 1
        if self.cut is False:
            return "the trace's only row" if one else f"the trace's {self.rows:,} rows"
        option = f"{'' if self.given else 'the default '}--max-requests {self.limit:,}"
        return f"the first {'row' if one else f'{self.rows:,} rows'} ({option})"


def warmup_problem(rows: ReplayRows, low: int, high: int, warmup: int,
                   warmup_given: bool, timed: bool) -> Optional[str]:
    """The refusal of a replay of ``rows`` that takes ``low`` to ``high`` steps
    (equal: exactly that many) when even ``high`` leaves none past ``warmup`` warm-up
    steps (``warmup_given``: by ``--warmup-steps``), else ``None``; with ``timed`` the
    warning of a timed replay, whose latencies cover every request. The advice names
    a warm-up below ``low``, which counts a step however the batches fall, and more
    rows as ``more_steps_advice`` words it."""
    if high > warmup:
        return None
    takes = f"{high:,} step{'' if high == 1 else 's'}" if low == high else \
        f"{low:,} to {high:,} steps"
    if timed:
        takes += " (its batches follow the wall clock)"
    option = f"{'' if warmup_given else 'the default '}--warmup-steps {warmup:,}"
    head = ("no step will be counted (the latencies and tok/s over wall time cover every "
            "request, the per-step figures none)" if timed else "no step would be counted")
    return (f"{head}: the {'timed ' if timed else ''}replay of "
            f"{rows.words()} takes {takes}, all within {option}: "
            f"{more_steps_advice(low, rows.cut)}")


def _case_steps(case, workload: TraceWorkload, served: np.ndarray) -> tuple[int, Optional[int]]:
    """The fewest and most steps ``case`` can take (``step_bounds``); exact, both the
    same (``replay_steps``), for a synchronous logical replay without drafts whose
    fewest steps do not already pass its warm-up. ``(low, None)``: no bound known."""
    cfg = case.scheduler
    bounds = step_bounds(workload.trace, served, cfg)
    exact = (case.trace_speedup is None and not case.async_scheduling
             and not cfg.num_spec_tokens)
    if bounds.low > case.warmup_steps:
        return bounds.low, bounds.high
    if exact:
        steps = replay_steps(workload.trace, workload.arrival_steps, cfg, case.warmup_steps)
        return (steps, steps) if steps is not None else (bounds.low, None)
    return bounds.low, bounds.high


def check_trace_cases(cases: list, rows_limit: Optional[int], rows_given: bool,
                      warmup_given: bool) -> list[str]:
    """Check the trace replays among ``cases`` (those whose ``make_workload`` makes a
    ``TraceWorkload`` and that count every step) before any runs: ``ConfigError`` (one
    line) where every request would be rejected on arrival (``rejection_problem``), a
    served request outgrows the whole KV cache (``overflow_problem``) or no step
    would be counted (``warmup_problem``; a timed replay's is a warning);
    returns the warnings (requests some of which will be rejected:
    ``rejection_warning``; served requests that outgrow the cache if their last step
    schedules all its drafts: ``overflow_warning``; a timed replay that will count no
    step), each once.
    ``rows_limit``: the ``--max-requests`` in effect (``None``: the whole trace);
    ``rows_given``, ``warmup_given``: whether the command line gave
    ``--max-requests``, ``--warmup-steps``."""
    warnings: list[str] = []
    seen: set = set()
    for case in cases:
        if case.count != "all" or case.max_steps is not None:
            continue
        workload = case.make_workload()
        if not isinstance(workload, TraceWorkload):
            continue
        cfg = case.scheduler
        acceptance = case.model.spec_acceptance
        key = (id(workload.trace), repr(cfg), acceptance, case.warmup_steps,
               case.trace_speedup is None, bool(case.async_scheduling))
        if key in seen:
            continue
        seen.add(key)
        rej = trace_rejections(workload.trace, cfg)
        problem = rejection_problem(rej, cfg)
        if problem:
            raise ConfigError(problem)
        over = cache_overflow(workload.trace, ~rej.mask, cfg)
        problem = overflow_problem(over, cfg, acceptance, rej)
        if problem:
            raise ConfigError(problem)
        for warning in (rejection_warning(rej, cfg), overflow_warning(over, cfg, acceptance, rej)):
            if warning and warning not in warnings:
                warnings.append(warning)
        low, high = _case_steps(case, workload, ~rej.mask)
        rows = ReplayRows(len(workload.trace), rows_limit, rows_given,
                          workload.trace.rows_after)
        timed = case.trace_speedup is not None
        problem = high is not None and warmup_problem(rows, low, high, case.warmup_steps,
                                                      warmup_given, timed)
        if problem and not timed:
            raise ConfigError(problem)
        if problem and problem not in warnings:
            warnings.append(problem)
    return warnings
