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
  not follow). When every request replayed is, the run would
  measure nothing: refused (``ConfigError``). When some are, one warning line says how
  many, as the run will record them (``rejection_warning``). A prompt whose output
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
  accepted; the most it can take is refused, as vLLM's start-up check allows for the
  worst case.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ipc_bench.engine.config import CACHED, ConfigError, SchedulerConfig
from ipc_bench.engine.scheduler import Scheduler
from ipc_bench.engine.traces import Trace
from ipc_bench.engine.workloads import TraceWorkload

__all__ = ["CacheOverflow", "Rejections", "StepBounds", "cache_overflow",
           "check_trace_cases", "last_step_slots", "trace_rejections", "replay_steps",
           "step_bounds"]


@dataclass(frozen=True)
class Rejections:
    """The requests of a replay its scheduler rejects on arrival: ``count`` of
    ``total``; ``longest``: the longest rejected prompt (tokens); ``by_len``: whether
    some rejected prompt has ``max_model_len`` tokens or more; ``by_blocks``: whether
    some needs more KV blocks than the cache has; ``mask``: bool array, shape (N,),
    True for each rejected row."""

    count: int
    total: int
    longest: int
    by_len: bool
    by_blocks: bool
    mask: np.ndarray


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
    return Rejections(int(mask.sum()), len(lens), longest, by_len, by_blocks, mask)


@dataclass(frozen=True)
class CacheOverflow:
    """The served requests of a replay that can need more KV blocks than the whole
    cache at their last step, which no preemption frees (the scheduler stops the case
    with ``SchedulerError`` when one gets there): ``count`` of ``total`` served; the
    longest of them: its ``prompt`` and ``output`` tokens (as the trace gives them),
    ``tokens``: the KV slots of its last step (``last_step_slots``' ``most``),
    ``blocks``: ``ceil(tokens / block_size)``; ``drafts``: whether it fits but for
    the drafts its last step may schedule."""

    count: int
    total: int
    prompt: int
    output: int
    tokens: int
    blocks: int
    drafts: bool


def last_step_slots(trace: Trace, served: np.ndarray,
                    cfg: SchedulerConfig) -> tuple[np.ndarray, np.ndarray]:
    """The KV slots the scheduler of ``cfg`` allocates for each request of ``trace``
    that ``served`` (bool, shape (N,)) marks at its last step, the most it holds:
    ``(fewest, most)``, int64 arrays of the served rows. A request stops at ``stop =
    prompt + min(output, max_model_len - prompt)`` tokens; its last step computes the
    K/V of ``stop - 1`` of them (``Scheduler.schedule``: ``num_computed_tokens +
    num_scheduled``, ``max_model_len - 1`` at most; an async step's placeholders
    never reach ``stop - 1``), plus ``num_lookahead_tokens``, capped at
    ``max_model_len``: ``fewest``, exact without drafts. With K drafts a step also
    holds slots for the drafts it schedules, so ``most`` is ``min(stop - 1 + K,
    max_model_len - 1)`` plus the lookahead, capped; whether the last step gets there
    depends on the drafts accepted, ``fewest`` it reaches whatever they were."""
    p = trace.prompt_lens[served]
    mml = cfg.max_model_len
    # p < max_model_len for a served request: capped before the sum, which cannot overflow
    last = p + np.minimum(trace.output_lens[served], mml - p) - 1
    la = cfg.num_lookahead_tokens
    fewest = np.minimum(last + la, mml)
    most = np.minimum(np.minimum(last + cfg.num_spec_tokens, mml - 1) + la, mml)
    return fewest, most


def cache_overflow(trace: Trace, served: np.ndarray,
                   cfg: SchedulerConfig) -> Optional[CacheOverflow]:
    """``CacheOverflow`` of the requests of ``trace`` that ``served`` (bool, shape
    (N,)) marks under ``cfg``, by ``last_step_slots``' ``most``; ``None`` when each
    fits the cache alone (preemption then lets the run go on)."""
    fewest, most = last_step_slots(trace, served, cfg)
    over = most > cfg.num_blocks * cfg.block_size
    if not over.any():
        return None
    i = int(np.argmax(np.where(over, most, -1)))
    row = int(np.flatnonzero(served)[i])
    tokens = int(most[i])
    return CacheOverflow(int(over.sum()), len(most), int(trace.prompt_lens[row]),
                         int(trace.output_lens[row]), tokens, -(-tokens // cfg.block_size),
                         bool(fewest[i] <= cfg.num_blocks * cfg.block_size))


def overflow_problem(over: Optional[CacheOverflow], cfg: SchedulerConfig) -> Optional[str]:
    """The refusal of a replay one of whose served requests can need more KV blocks
    than the whole cache (``cache_overflow``), else ``None``: the scheduler would stop
    the case there (``SchedulerError``), as vLLM refuses at start-up a
    ``max_model_len`` its KV cache cannot hold. ``... the longest (a prompt of 40
    tokens, 200 output tokens) needs 15 KV blocks (16 tokens each) for the 239 tokens
    of its last step, ...: raise --num-blocks to 15 or more, or lower --max-model-len
    to 129 or less``."""
    if over is None:
        return None
    n, total = over.count, over.total
    who = (f"{n:,} of {total:,} requests served" if n < total
           else "the only request served" if n == 1 else "both requests served" if n == 2
           else f"all {n:,} requests served")
    held = [f"a prompt of {over.prompt:,} tokens, {over.output:,} output tokens"]
    if over.prompt + over.output > cfg.max_model_len:
        held.append(f"cut at max_model_len {cfg.max_model_len:,}")
    if over.drafts:
        held.append(f"{cfg.num_spec_tokens} drafts scheduled at its last step")
    if cfg.num_lookahead_tokens:
        held.append(f"{cfg.num_lookahead_tokens} lookahead slots")
    # the largest max_model_len whose every request fits: a last step computes
    # max_model_len - 1 tokens at most, max_model_len with lookahead
    fits = cfg.num_blocks * cfg.block_size + (0 if cfg.num_lookahead_tokens else 1)
    lower = (f", or lower --max-model-len to {fits:,} or less"
             if fits >= max(2, cfg.block_size) else "")
    return (f"{who} would stop every case mid-run when {'it' if n == 1 else 'each'} "
            f"outgrows the KV cache: the longest ({'; '.join(held)}) needs "
            f"{over.blocks:,} KV blocks ({cfg.block_size} tokens each) for the "
            f"{over.tokens:,} tokens of its last step, more than the cache's "
            f"{cfg.num_blocks:,}, which preempting every other request does not free: "
            f"raise --num-blocks to {over.blocks:,} or more{lower}")


def _raise_advice(rej: Rejections, cfg: SchedulerConfig) -> str:
    """What serves the longest rejected prompt: ``raise --max-model-len to N or
    more`` and/or ``--num-blocks to N or more`` (the smallest values that admit it)."""
    parts = []
    if rej.longest >= cfg.max_model_len:
        parts.append(f"--max-model-len to {rej.longest + 1:,} or more")
    need = -(-(rej.longest + 1) // cfg.block_size)
    if need > cfg.num_blocks:
        parts.append(f"--num-blocks to {need:,} or more")
    return "raise " + " and ".join(parts)


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
    n = rej.total
    every = ("the only request replayed" if n == 1 else "both requests replayed" if n == 2
             else f"all {n:,} requests replayed")
    return (f"{every} would be rejected on arrival in every case "
            f"({_rejection_words(rej, cfg)}), so the run would measure nothing: "
            f"{_raise_advice(rej, cfg)}")


def rejection_warning(rej: Rejections, cfg: SchedulerConfig) -> Optional[str]:
    """The warning for a replay some of whose requests (not all) will be rejected on
    arrival, as vLLM rejects a prompt it cannot hold, else ``None``."""
    if not rej.count or rej.count == rej.total:
        return None
    return (f"{rej.count:,} of {rej.total:,} requests replayed will be rejected on arrival "
            f"in every case ({_rejection_words(rej, cfg)}), as vLLM rejects them, and "
            f"counted in num_rejected: {_raise_advice(rej, cfg)} to serve them")


class _Sampled:
    """The part of a ``ModelRunnerOutput`` that ``Scheduler.update_from_output`` reads
    without drafts: one id (0) per scheduled request whose prefill is done, none for a
    partial prefill."""

    __slots__ = ("req_id_to_index", "sampled_token_ids")

    def __init__(self, plan) -> None:
        reqs = plan.scheduled_reqs
        self.req_id_to_index = {r.req_id: i for i, r in enumerate(reqs)}
        self.sampled_token_ids = [[0] if r.num_computed_tokens == len(r.all_token_ids)
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


@dataclass(frozen=True)
class ReplayRows:
    """How many rows a replay read and why no more: ``limit``, the ``--max-requests``
    in effect (``None``: the whole trace); ``given``: whether the command line gave it."""

    rows: int
    limit: Optional[int]
    given: bool

    @property
    def cut(self) -> bool:
        """Whether ``--max-requests`` stopped the reading (the trace may have more)."""
        return self.limit is not None and self.rows >= self.limit

    def words(self) -> str:
        """``the trace's 2 rows``, ``the first 40 rows (--max-requests 40)``; one row:
        ``the trace's only row``, ``the first row (--max-requests 1)``."""
        one = self.rows == 1
        if not self.cut:
            return "the trace's only row" if one else f"the trace's {self.rows:,} rows"
        option = f"{'' if self.given else 'the default '}--max-requests {self.limit:,}"
        return f"the first {'row' if one else f'{self.rows:,} rows'} ({option})"

    def more(self) -> str:
        """What replays more steps: a larger ``--max-requests`` or a longer trace."""
        return "raise --max-requests" if self.cut else "replay a longer trace"


def warmup_problem(rows: ReplayRows, low: int, high: int, warmup: int,
                   warmup_given: bool, timed: bool) -> Optional[str]:
    """The refusal of a replay of ``rows`` that takes ``low`` to ``high`` steps
    (equal: exactly that many) when even ``high`` leaves none past ``warmup`` warm-up
    steps (``warmup_given``: by ``--warmup-steps``), else ``None``; with ``timed`` the
    warning of a timed replay, whose latencies cover every request. The advice names
    a warm-up below ``low``, which counts a step however the batches fall."""
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
            f"{rows.words()} takes {takes}, all within {option}: set --warmup-steps "
            f"below {low:,} (e.g. --warmup-steps {low // 2:,}) or {rows.more()}")


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
    served request can outgrow the whole KV cache (``overflow_problem``) or no step
    would be counted (``warmup_problem``; a timed replay's is a warning);
    returns the warnings (requests some of which will be rejected:
    ``rejection_warning``; a timed replay that will count no step), each once.
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
        key = (id(workload.trace), repr(cfg), case.warmup_steps, case.trace_speedup is None,
               bool(case.async_scheduling))
        if key in seen:
            continue
        seen.add(key)
        rej = trace_rejections(workload.trace, cfg)
        problem = rejection_problem(rej, cfg)
        if problem:
            raise ConfigError(problem)
        problem = overflow_problem(cache_overflow(workload.trace, ~rej.mask, cfg), cfg)
        if problem:
            raise ConfigError(problem)
        warning = rejection_warning(rej, cfg)
        if warning and warning not in warnings:
            warnings.append(warning)
        low, high = _case_steps(case, workload, ~rej.mask)
        rows = ReplayRows(len(workload.trace), rows_limit, rows_given)
        timed = case.trace_speedup is not None
        problem = high is not None and warmup_problem(rows, low, high, case.warmup_steps,
                                                      warmup_given, timed)
        if problem and not timed:
            raise ConfigError(problem)
        if problem and problem not in warnings:
            warnings.append(problem)
    return warnings
