"""The steps a steady case takes to count its pure-decode steps, from its seeded workload.

A steady case (``scenario.steady_case``) keeps B requests running: a request that
finishes at step t is replaced at step t + 1 (``SteadyDecodeWorkload.on_finished``),
and the step that prefills the replacement is mixed, not counted (``count``
``decode_only``). Outputs of M tokens on average (1,280 with the workload's default
``STEADY_OUTPUT_LEN_RANGE``) mean that B requests see about B / M finishes a step; when
the budget left after the decodes
(``max_num_batched_tokens`` less one token a decode, K + 1 with K drafts) is smaller
than the replacements' prompts, their prefill spans several steps, and none of those
is pure decode either. ``simulate_steady_steps`` replays ``Scheduler.schedule``'s token
budget over the workload's own prompt and output lengths, step by step, without
messages or tokens: it says at which step the case counts its last step.

Exact without drafts, with a KV cache that holds every request
(``scenario.check_steady_cache``: no preemption): the running requests decode one token
each, in order, then the budget left goes to the prompts being prefilled, oldest first,
then to the waiting ones (chunked prefill). With async scheduling (a step in flight) a
finish is seen after the next step was scheduled, so its replacement is admitted a step
later. With ``--pp N`` (``engine.pipeline.PipelineScheduler``, N steps in flight) a step
schedules at most ``ceil(max_num_seqs / N)`` requests and a decoding request is in
flight until its step's reply is read, just before the step N later: the requests form
N lanes (micro-batches), a step decodes its own lane's, a prompt's chunks run on
consecutive steps, and a replacement is admitted N steps after its request's last
token (a pipeline that fills with fewer lanes, a step finding nothing to schedule,
runs with those). With K drafts each
decode is taken to cost K + 1 tokens of budget and to gain ``1 + a + ... + a**K``
tokens (``a``: ``spec_acceptance``, each draft accepted after the ones before it), so
the figure is an estimate. A stretch with no prompt to prefill is skipped to the next
finish in one move, so a small batch costs about one workload draw a request (about
10-20 us: ``SteadyDecodeWorkload.request_lens``); a large one, a few microseconds a
step more. ``max_requests`` bounds the draws: past it the simulation stops and says so
(``SteadySteps.complete`` false) for the caller to extrapolate.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass
from typing import Optional

from ipc_bench.engine.workloads import (STEADY_OUTPUT_LEN_RANGE, STEADY_PROMPT_LEN_RANGE,
                                         SteadyDecodeWorkload)


#: Steps past the first prefill after which every first request of the default workload
#: has finished (its longest output, ``STEADY_OUTPUT_LEN_RANGE``; N times as many with N
#: micro-batches). A simulation of other lengths settles after its own longest output.
SETTLE_STEPS = STEADY_OUTPUT_LEN_RANGE[1]


@dataclass(frozen=True)
class SteadySteps:
    """What ``simulate_steady_steps`` saw. ``steps_in_all``: the steps up to and
    including the last counted one (the case's ``num_total_steps``), ``None`` when the
    simulation stopped first; ``simulated_steps``: steps simulated; ``counted``:
    pure-decode steps counted (past the warm-up) in them; ``first_prefill_steps``: the
    steps until the B first prompts were all computed (``None``: not within
    ``simulated_steps``); ``window_steps`` and ``window_pure_steps``: the steps after
    those and the pure-decode steps among them (warm-up or not); ``settled_steps`` and
    ``settled_pure_steps``: the same from the longest output (``SETTLE_STEPS`` by
    default) past the first prefill on,
    once every first request has finished (before, none finishes for 511 steps and
    the steps are pure decode more often than later); ``complete``: the
    simulation ran to ``steps_in_all`` or to its ``patience``, not stopped by
    ``max_requests``; ``lanes``: the micro-batches the pipeline filled with (``pp``,
    fewer when a step of the first ``pp`` found nothing to schedule)."""

    steps_in_all: Optional[int]
    simulated_steps: int
    counted: int
    first_prefill_steps: Optional[int]
    window_steps: int
    window_pure_steps: int
    settled_steps: int
    settled_pure_steps: int
    complete: bool
    lanes: int = 1

    @property
    def pure_fraction(self) -> Optional[float]:
        """Pure-decode steps per step after the first prefill: of the settled steps
        when any was simulated, else of all those (``None``: no such step)."""
        if self.settled_steps:
            return self.settled_pure_steps / self.settled_steps
        if not self.window_steps:
            return None
        return self.window_pure_steps / self.window_steps


def expected_tokens_per_decode(num_spec_tokens: int, acceptance: float) -> float:
    """Tokens one decode step gains on average with ``num_spec_tokens`` drafts, each
    accepted with probability ``acceptance`` once the drafts before it are:
    ``1 + a + ... + a**K`` (1 without drafts)."""
    return sum(acceptance ** j for j in range(num_spec_tokens + 1))


class _Batch:
    """The simulated scheduler state: decoding requests (a count per lane and a heap of
    their finish steps), prompts being prefilled (``[tokens left, index]``, oldest
    first), waiting requests (indices, in arrival order) and replacements not yet
    handed to the scheduler (``[step, index]``, in arrival order).

    ``lanes``: the micro-batches in flight (``--pp N``: N; one otherwise): a decoding
    request is scheduled every ``lanes`` steps, at the steps of its lane (``step %
    lanes``: the step whose reply frees it comes back just before), so a step decodes
    its lane's requests only. ``max_reqs``: requests one step may schedule
    (``PipelineScheduler.max_reqs_per_step``). ``delay``: steps from a request's last
    token to the step that may admit its replacement (one synchronously; two with a
    step in flight, ``--async-scheduling``; ``lanes`` with N micro-batches: the finish
    is seen when its step's reply is read, just before its lane's next step)."""

    def __init__(self, workload: SteadyDecodeWorkload, max_model_len: int,
                 tokens_per_decode: float, lanes: int = 1, max_reqs: Optional[int] = None,
                 delay: int = 1):
        self.workload = workload
        self.max_model_len = max_model_len
        self.tokens_per_decode = tokens_per_decode
        self.lanes, self.delay = lanes, delay
        self.max_reqs = max_reqs or workload.num_running
        self.lane_decoding = [0] * lanes
        self.finishes: list[int] = []  # one finish step per decoding request (heap)
        self.prefilling: deque = deque()
        self.waiting: deque = deque(range(workload.num_running))
        self.arriving: deque = deque()  # [step the replacement may be admitted, index]
        self.next_index = workload.num_running
        self.output_lens: dict[int, int] = {}
        self.first_computed = 0  # of the B first prompts
        self.unplaced: Optional[list] = [] if lanes > 1 else None  # (step, decodes)

    @property
    def decoding(self) -> int:
        """Requests decoding, every lane."""
        return sum(self.lane_decoding)

    def prompt_len(self, index: int) -> int:
        """Tokens of request ``index``'s prompt (its output length kept for later)."""
        prompt, output = self.workload.request_lens(index)
        # Scheduler.add_request: it stops at max_model_len tokens in all
        self.output_lens[index] = min(prompt + output, self.max_model_len) - prompt
        return prompt

    def computed(self, index: int, step: int) -> None:
        """Request ``index``'s prompt was computed at ``step``: its first token is
        sampled then, one a decode after (``tokens_per_decode`` with drafts), one
        decode every ``lanes`` steps."""
        outputs = self.output_lens.pop(index)
        decodes = _ceil_div(outputs - 1, self.tokens_per_decode)
        if self.unplaced is not None:  # the lanes are known once the pipeline has filled
            self.unplaced.append((step, decodes))
        else:
            heapq.heappush(self.finishes, step + self.lanes * decodes)
        self.lane_decoding[step % self.lanes] += 1
        if index < self.workload.num_running:
            self.first_computed += 1

    def set_lanes(self, lanes: int) -> None:
        """The pipeline filled with ``lanes`` micro-batches (fewer than asked when a
        step found nothing to schedule: ``PipelineScheduler.schedule`` returns
        ``None``, and the loop reads the oldest reply first): the finishes of the
        requests computed so far are placed."""
        self.lane_decoding = self.lane_decoding[:lanes]
        self.lanes, self.delay = lanes, lanes
        for step, decodes in self.unplaced:
            heapq.heappush(self.finishes, step + lanes * decodes)
        self.unplaced = None

    def idle(self, step: int) -> bool:
        """Whether ``step`` has nothing to schedule (its lane decodes nothing, and no
        prompt is being prefilled or waiting)."""
        self.arrive(step)
        return not (self.lane_decoding[step % self.lanes] or self.prefilling or self.waiting)

    def arrive(self, step: int) -> None:
        """Hand the replacements due by ``step`` to the scheduler."""
        arriving = self.arriving
        while arriving and arriving[0][0] <= step:
            self.waiting.append(arriving.popleft()[1])

    def prefill(self, budget: int, step: int, limit: int, slots: int) -> bool:
        """Give ``budget`` tokens to the prompts being prefilled, then to the waiting
        ones (at most ``limit`` tokens of one at once, ``slots`` requests at most), as
        ``Scheduler.schedule``. Returns whether the step still counts as pure decode
        (``SchedulePlan.is_decode_only``): no request admitted, and no prompt given
        more than one token (a prompt's last token alone looks like a decode)."""
        self.arrive(step)
        prefilling = self.prefilling
        pure = True
        while budget > 0 and slots > 0 and prefilling:
            entry = prefilling[0]
            take = min(entry[0], budget)
            pure = pure and take == 1
            entry[0] -= take
            budget -= take
            slots -= 1
            if entry[0]:
                return pure
            prefilling.popleft()
            self.computed(entry[1], step)
        waiting = self.waiting
        while budget > 0 and slots > 0 and waiting:
            pure = False
            index = waiting.popleft()
            prompt = self.prompt_len(index)
            take = min(prompt, budget, limit)
            budget -= take
            slots -= 1
            if take < prompt:
                prefilling.append([prompt - take, index])
                return pure
            self.computed(index, step)
        return pure

    def finish(self, step: int) -> int:
        """Remove the requests that finish at ``step``; their replacements may be
        admitted from step + ``delay``. Returns how many finished."""
        n = 0
        finishes = self.finishes
        while finishes and finishes[0] == step:
            heapq.heappop(finishes)
            n += 1
        self.lane_decoding[step % self.lanes] -= n
        for _ in range(n):
            self.arriving.append((step + self.delay, self.next_index))
            self.next_index += 1
        return n


def _ceil_div(a: int, b: float) -> int:
    """``ceil(a / b)`` for ``a >= 0`` tokens at ``b`` tokens a step; 0 for ``a <= 0``."""
    if a <= 0:
        return 0
    q = int(a // b)
    return q + (q * b < a)


def _check_simulation(num_running: int, max_num_batched_tokens: int,
                      counted_steps: int) -> None:
    """``simulate_steady_steps``' arguments: raises ``ValueError`` when
    ``counted_steps`` is below 1 or the budget cannot decode every request once a
    step."""
    if counted_steps < 1:
        raise ValueError(f"counted_steps must be at least 1, got {counted_steps}")
    if max_num_batched_tokens < num_running:
        raise ValueError(f"a budget of {max_num_batched_tokens} tokens cannot decode "
                         f"{num_running} requests a step")


def _new_batch(num_running: int, seed: int, lens: tuple[tuple[int, int], tuple[int, int]],
               max_model_len: int, num_spec_tokens: int, acceptance: float, lanes: int,
               max_num_seqs: Optional[int], async_scheduling: bool) -> _Batch:
    """The simulation's ``_Batch`` (``simulate_steady_steps``' arguments; ``lens``: the
    workload's prompt and output length ranges)."""
    workload = SteadyDecodeWorkload(num_running, seed=seed, vocab_size=2,
                                    prompt_len_range=lens[0], output_len_range=lens[1])
    return _Batch(workload, max_model_len,
                  expected_tokens_per_decode(num_spec_tokens, acceptance), lanes=lanes,
                  max_reqs=-(-(max_num_seqs or num_running) // lanes),
                  delay=lanes if lanes > 1 else 1 + bool(async_scheduling))


def simulate_steady_steps(num_running: int, *, seed: int, max_num_batched_tokens: int,
                          max_model_len: int, warmup_steps: int, counted_steps: int,
                          patience: int, num_spec_tokens: int = 0, acceptance: float = 0.7,
                          max_requests: Optional[int] = None, pp: int = 1,
                          async_scheduling: bool = False, max_num_seqs: Optional[int] = None,
                          prompt_len_range: tuple[int, int] = STEADY_PROMPT_LEN_RANGE,
                          output_len_range: tuple[int, int] = STEADY_OUTPUT_LEN_RANGE
                          ) -> SteadySteps:
    """Simulate the steady case of ``num_running`` requests of the ``SteadyDecodeWorkload``
    of ``seed``, ``prompt_len_range`` and ``output_len_range`` (module docstring) under
    ``max_num_batched_tokens`` tokens a step and ``max_model_len``, ``warmup_steps``
    warm-up steps then ``counted_steps`` counted pure-decode steps, for at most
    ``patience`` steps past the warm-up and the first prompts' prefill (whichever ends
    later) and (``max_requests``) about that many requests drawn; ``num_spec_tokens``
    drafts accepted with probability ``acceptance`` each; ``pp`` micro-batches in flight
    (``--pp N``, at most ``ceil(max_num_seqs / pp)`` requests a step, ``max_num_seqs``
    default ``num_running``) or ``async_scheduling`` (a step in flight: a replacement is
    admitted a step later). Raises ``ValueError`` when ``counted_steps`` is below 1 or
    the budget cannot decode every request once a step."""
    _check_simulation(num_running, max_num_batched_tokens, counted_steps)
    lanes = max(1, pp)
    batch = _new_batch(num_running, seed, (prompt_len_range, output_len_range), max_model_len,
                       num_spec_tokens, acceptance, lanes, max_num_seqs, async_scheduling)
    width, limit = num_spec_tokens + 1, max_model_len - 1
    step = counted = 0
    tally = [0, 0, 0, 0]  # window steps, pure ones; settled steps, pure ones
    first_prefill: Optional[int] = None
    horizon = 2**62  # patience steps past the warm-up and the first prefill

    def note(first: int, last: int, pure: bool) -> None:
        """Steps ``first`` to ``last`` (included) after the first prefill, all pure or
        all mixed."""
        n = last - first + 1  # settled: once every first request has finished
        settle = first_prefill + output_len_range[1] * batch.lanes
        settled = max(0, last - max(first, settle) + 1)
        tally[0] += n
        tally[1] += n * pure
        tally[2] += settled
        tally[3] += settled * pure

    def result(steps_in_all: Optional[int], complete: bool = True) -> SteadySteps:
        if batch.unplaced is not None:
            batch.set_lanes(lanes)
        return SteadySteps(steps_in_all, step, counted, first_prefill, *tally, complete,
                           batch.lanes)

    while step < horizon:
        if max_requests is not None and batch.next_index > max_requests:
            return result(None, complete=False)
        if first_prefill is None and batch.first_computed == num_running:
            first_prefill = step
            horizon = max(warmup_steps, step) + patience
        if batch.unplaced is not None and (step == lanes or batch.idle(step)):
            batch.set_lanes(step)  # the pipeline has filled: its lanes are known
        if (not batch.prefilling and not batch.waiting and not batch.arriving
                and batch.unplaced is None):  # pure decode to the next finish
            end = min(batch.finishes[0], horizon - 1)
            first = max(step, warmup_steps)
            if end >= first and counted + end - first + 1 >= counted_steps:
                last = first + counted_steps - counted - 1
                note(step, last, True)
                step, counted = last + 1, counted_steps
                return result(step)
            counted += max(0, end - first + 1)
            note(step, end, True)
            batch.finish(end)
            step = end + 1
            continue
        decoding = batch.lane_decoding[step % batch.lanes]
        budget = max_num_batched_tokens - decoding * width
        pure = batch.prefill(budget, step, limit, batch.max_reqs - decoding)
        if first_prefill is not None:
            note(step, step, pure)
        batch.finish(step)
        step += 1
        if pure and step > warmup_steps:
            counted += 1
            if counted == counted_steps:
                return result(step)
    return result(None)
