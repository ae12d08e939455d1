"""Progress of long runs: one tqdm bar per case on a terminal, a line a minute elsewhere.

A bar counts steps done out of the case's warm-up and counted steps (steady scenarios:
the uncounted mixed steps take it a little past them), or out of its step limit, or
requests finished out of the workload's requests (trace replays), shows output
tokens/s since the case's first step and tqdm's ETA. Bars are drawn only when standard
error is a terminal and not in CI (the ``CI`` environment variable set, as GitHub
Actions, GitLab CI and most others do). Elsewhere (a log file, a pipe, a CI job) the run
writes instead one plain line a minute about its current case (``CaseHeartbeat``), its wall-clock time first, so
a long case is seen to advance, through its steps and then its floor, and the end of
each estimated, and of the whole run where the cases' step counts are known
(``RunPace``); nothing at all with ``--quiet``.

The bar is ``run_case``'s ``on_step`` callback, called after every step outside the
timed region, and its ``floor`` method the floor's (``floor.FloorProgress``, which the
supervisor passes on), called outside the floor's step times. To keep its cost per step to one comparison, it
touches the bar only every ``stride`` steps, a stride it re-sizes so that updates come
about every ``interval_s`` (0.1 s) whatever the step rate. In the floor the bar starts
again, named ``... floor``, counting the floor's steps.
"""

from __future__ import annotations

import os
import sys
import time
from typing import IO, Callable, Mapping, NamedTuple, Optional, Sequence

_FALSE = ("", "0", "false", "no")


def progress_enabled(quiet: bool, stream: Optional[IO] = None,
                     environ: Optional[Mapping[str, str]] = None) -> bool:
    """True when bars should be drawn: not ``quiet``, not in CI (``CI`` unset, empty,
    ``0``, ``false`` or ``no``) and ``stream`` (default ``sys.stderr``) is a TTY."""
    if quiet:
        return False
    env = os.environ if environ is None else environ
    if env.get("CI", "").strip().lower() not in _FALSE:
        return False
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class _Strided:
    """What a case's progress shares, callable as ``on_step(seq, num_output_tokens,
    num_finished)``: ``seq`` exchanges done, tokens sampled so far, requests finished
    so far; then ``floor(n, total)`` as its floor replays. It looks at the clock only
    every ``stride`` steps, a stride re-sized so that looks come about every
    ``interval_s``, and hands each look to ``_show`` (``_show_floor``).
    ``total``: steps (``by_requests`` false) or requests; ``None`` if unknown."""

    def __init__(self, total: Optional[int], by_requests: bool, interval_s: float):
        self.total = total
        self.by_requests = by_requests
        self.interval_s = interval_s
        self.stride = 1
        self.next_seq = 1
        self.t_last = time.monotonic()
        self.t_first = self.t_last
        self.tokens_first = 0
        self.updates = 0
        self.t_floor: Optional[float] = None  # when the floor began (``floor``)

    def __call__(self, seq: int, num_output_tokens: int = 0, num_finished: int = 0) -> None:
        if seq < self.next_seq:
            return
        now = time.monotonic()
        n = num_finished if self.by_requests else seq
        if self.updates == 0:  # rates count from the first step (after start-up)
            self.t_first, self.tokens_first = now, num_output_tokens
            rate = None
        else:
            rate = ((num_output_tokens - self.tokens_first) / (now - self.t_first)
                    if now > self.t_first else None)
        self._show(n, rate, now)
        self._restride(now)
        self.next_seq = seq + self.stride

    def floor(self, n: int, total: int) -> int:
        """The floor's progress (``floor.FloorProgress``): ``n`` of its ``total``
        steps replayed (0 as it begins, ``total`` as it ends); returns the count of
        steps replayed at which to be called next, ``stride`` steps on."""
        now = time.monotonic()
        if self.t_floor is None:
            self.t_floor = now
        self._show_floor(n, total, now)
        self._restride(now)
        return n + self.stride

    def _restride(self, now: float) -> None:
        dt = now - self.t_last
        want = self.stride * self.interval_s / dt if dt > 0 else self.stride * 10
        self.stride = int(max(1, min(self.stride * 10, want, 1_000_000)))
        self.t_last = now
        self.updates += 1

    def _show(self, n: int, rate: Optional[float], now: float) -> None:
        raise NotImplementedError

    def _show_floor(self, n: int, total: int, now: float) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """End the case's progress (the caller prints the case's result line)."""


class CaseProgress(_Strided):
    """A tqdm bar for one case (see ``_Strided`` for the call and ``total``); in its
    floor the bar starts again as ``DESC floor``, out of the floor's steps."""

    def __init__(self, desc: str, total: Optional[int], by_requests: bool,
                 stream: Optional[IO] = None, interval_s: float = 0.1):
        from tqdm import tqdm

        super().__init__(total, by_requests, interval_s)
        self.bar = tqdm(total=total, desc=desc, unit="req" if by_requests else "step",
                        file=sys.stderr if stream is None else stream, leave=False,
                        dynamic_ncols=True, mininterval=interval_s, smoothing=0.2)
        self.in_floor = False

    def _show(self, n: int, rate: Optional[float], now: float) -> None:
        if n > self.bar.n:
            self.bar.update(n - self.bar.n)
        if rate is not None:
            self.bar.set_postfix_str(f"{rate:,.0f} tok/s", refresh=False)

    def _show_floor(self, n: int, total: int, now: float) -> None:
        if not self.in_floor:  # the same bar, from 0, counting the floor's steps
            self.in_floor = True
            self.bar.set_description_str(f"{self.bar.desc} floor", refresh=False)
            self.bar.set_postfix_str("", refresh=False)
            self.bar.unit = "step"
            self.bar.reset(total=total)
        if n > self.bar.n:
            self.bar.update(n - self.bar.n)

    def close(self) -> None:
        """Remove the bar (the caller prints the case's result line)."""
        self.bar.close()


def _stamp() -> str:
    """The local time of day a heartbeat line begins with: ``15:42:07``."""
    return time.strftime("%H:%M:%S")


class CaseHeartbeat(_Strided):
    """One case's progress where no bar can be drawn: a line to ``stream`` (default
    standard error) every ``every_s`` seconds (60) of the run (since ``run``'s latest
    line, so that a run of 20-s cases writes one every third case or so; without
    ``run``, of the case, none before), once the case has a step pace over a sixth of
    that (10 s) of steps or is ``every_s`` old; its steps, then its floor::

        15:42:07 [2/8] num_running=256/send/msgpack#0: 41,200 of 60,200 steps (200 of them warm-up) after 1 min 0 s, 3,310 tok/s; about 28 s of steps left at this pace, then the floor; about 9 min 40 s of the run left
        15:43:07 [2/8] num_running=256/send/msgpack#0: floor 31,000 of 60,000 steps, 2 min 0 s into the case; about 19 s of the floor left at this pace; about 8 min 50 s of the run left

    ``warmup``: the case's warm-up steps, which ``total`` counts (the case line gives
    the counted ones), said so. ``stamp()``: the line's first word (default
    ``_stamp``: the local time of day).
    ``after`` / ``into the case``: since the case began (its runner's start-up
    included; a floor line says so, the floor having begun later). The time left is
    the pace since the case's first step (the floor's start) carried to ``total`` (the
    floor's); none without a total. ``floor``: the case replays its floor after its
    steps, which the steps' estimate leaves out. Tokens/s count from the first step, as
    the bar's do. ``run``: the run's ``RunPace``, this case its ``index``-th (from 0):
    the run left, where it can say (``RunPace.left_s``), and before any floor has been
    replayed, ``...; the estimate leaves out the floors (none replayed yet)``, and
    the cases it cannot time (``left_out_words``). ``waited()``: the seconds the case
    has spent so far waiting for runners started by hand (``CaseResult.runner_wait_s``;
    default none), which ``RunPace`` takes out of the time it learns from the case."""

    def __init__(self, desc: str, total: Optional[int], by_requests: bool,
                 stream: Optional[IO] = None, every_s: float = 60.0,
                 interval_s: float = 1.0, floor: bool = False,
                 run: Optional["RunPace"] = None, index: int = 0,
                 stamp: Optional[Callable[[], str]] = None, warmup: int = 0,
                 waited: Optional[Callable[[], float]] = None):
        super().__init__(total, by_requests, interval_s)
        self.waited = waited or (lambda: 0.0)
        self.desc = desc
        self.stream = stream
        self.every_s = every_s
        self.floor_after = floor
        self.warmup = warmup
        self.run, self.index, self.stamp = run, index, stamp or _stamp
        self.t_start = self.t_last
        self._t_shown = self.t_last
        self.n_first: Optional[int] = None
        self.n_step, self.t_step = 0, self.t_last  # the latest look at the steps
        self.floor_n, self.floor_total = 0, 0  # the latest look at the floor
        self.t_floor_look = self.t_last

    def _show(self, n: int, rate: Optional[float], now: float) -> None:
        if self.n_first is None:  # the first step: the pace counts from here
            self.n_first = n
        self.n_step, self.t_step = n, now
        pace = self.step_pace()
        # A pace over a sixth of ``every_s`` of steps at least (10 s), or none a minute in.
        if not self._due(now, (pace is not None and now - self.t_first >= self.every_s / 6)
                         or now - self.t_start >= self.every_s):
            return
        unit = "request" if self.by_requests else "step"
        unit += "" if (self.total or n) == 1 else "s"  # 1 step; 1 of 7 steps
        done = f"{n:,} of {self.total:,} {unit}" if self.total else f"{n:,} {unit}"
        if self.warmup and not self.by_requests:
            done += f" ({self.warmup:,} of them warm-up)"
        line = f"{self.desc}: {done} after {duration_words(now - self.t_start)}"
        if rate is not None:
            line += f", {rate:,.0f} tok/s"
        if self.total and n < self.total and pace is not None:
            unit = "requests" if self.by_requests else "steps"
            line += (f"; {about_words((self.total - n) * pace)} of {unit} left at this "
                     "pace" + (", then the floor" if self.floor_after else ""))
        self._print(line)

    def _show_floor(self, n: int, total: int, now: float) -> None:
        self.floor_n, self.floor_total, self.t_floor_look = n, total, now
        if not self._due(now, n > 0):  # a line with a floor step done and its pace
            return
        line = (f"{self.desc}: floor {n:,} of {total:,} step{'' if total == 1 else 's'}, "
                f"{duration_words(now - self.t_start)} into the case")
        pace = self.floor_pace()
        if n < total and pace is not None:
            line += f"; {about_words((total - n) * pace)} of the floor left at this pace"
        self._print(line)

    def _due(self, now: float, ready: bool) -> bool:
        """Whether to write a line at ``now`` (and mark it written): ``every_s`` since
        the run's latest line (``RunPace.t_shown``, so that a run of short cases writes
        a line a minute too), else since this case's, and ``ready`` (a pace to give,
        or the case a minute old)."""
        shown = self._t_shown if self.run is None else self.run.t_shown
        if now - shown < self.every_s or not ready:
            return False
        self._t_shown = now
        if self.run is not None:
            self.run.t_shown = now
        return True

    def step_pace(self) -> Optional[float]:
        """Seconds per step (request) since the first step, to the latest look at the
        steps; ``None`` before two looks."""
        if self.n_first is None or self.n_step <= self.n_first or self.t_step <= self.t_first:
            return None
        return (self.t_step - self.t_first) / (self.n_step - self.n_first)

    def floor_pace(self) -> Optional[float]:
        """Seconds per floor step since the floor began (its messages' decoding
        included) to the latest look at it; ``None`` before the floor's first look
        past 0."""
        if self.t_floor is None or self.floor_n <= 0 or self.t_floor_look <= self.t_floor:
            return None
        return (self.t_floor_look - self.t_floor) / self.floor_n

    def _print(self, line: str) -> None:
        if self.run is not None:
            left = self.run.left_s(self)
            if left is not None:
                line += f"; {about_words(left.seconds)} of the run left" + \
                    left_out_words(left)
        print(f"{self.stamp()} {line}", file=sys.stderr if self.stream is None else self.stream,
              flush=True)

    def close(self) -> None:
        """Tell the run's ``RunPace`` how the case went (``RunPace.finished``)."""
        if self.run is not None:
            self.run.finished(self, time.monotonic())


class CasePlan(NamedTuple):
    """A case's work, known before it runs: ``steps`` (warm-up and counted), ``floor``
    (the floor's steps: its counted steps, 0 without a floor), ``key`` (the case
    without its repetition: ``case_id`` up to ``#``) and ``transport``."""

    steps: int
    floor: int
    key: str
    transport: str

    @property
    def group(self) -> str:
        """The cases expected to run at one pace: the same workload (``key`` up to its
        first ``/``: its labels, e.g. ``num_running=256``) over the same transport;
        their policies and codecs differ by far less than their sizes."""
        return f"{self.key.split('/', 1)[0]} {self.transport}"


def case_plan(spec) -> Optional[CasePlan]:
    """The ``CasePlan`` of ``spec`` (a ``CaseSpec``); ``None`` when its steps are not
    known before it runs (no ``counted_steps``: a trace replay, a step limit its
    workload may not reach) or its time is not theirs (a timed replay:
    ``trace_speedup``). Raises nothing."""
    counted = getattr(spec, "counted_steps", None)
    if counted is None or getattr(spec, "trace_speedup", None) is not None:
        return None
    return CasePlan(spec.warmup_steps + counted, counted if getattr(spec, "floor", False) else 0,
                    str(spec.case_id).rsplit("#", 1)[0], str(getattr(spec, "transport", "")))


class RunLeft(NamedTuple):
    """``RunPace.left_s``: ``seconds`` of the run left, how many cases left are
    ``untimed`` (their group not run yet, left out of ``seconds``) and whether the
    floors are ``unpriced`` (left out of ``seconds``: no floor has been replayed yet
    whose pace could time them; a floor's pace is not its case's step pace)."""

    seconds: float
    untimed: int
    unpriced: bool


class _Paces(NamedTuple):
    step_s: float  # seconds per step
    floor_s: Optional[float]  # per floor step (None: no floor replayed)
    other_s: float  # the rest of the case: start-up, teardown, the previous case's writing


class RunPace:
    """The run's pace, for the heartbeat's ``about ... of the run left``: the
    ``CasePlan`` of each of the run's ``cases`` (in the order they run) and the paces of
    those finished (``finished``). The run left, from a case's heartbeat
    (``left_s``): the rest of that case at its pace (its floor at the floor's pace;
    before its floor at the floor pace of a finished case of its ``CasePlan.group``,
    else the last floor's pace over its case's step pace times this case's; before any
    floor has been replayed, the floors are left out and said to be), then each case
    after it at the pace of the latest finished case
    of the same ``key`` (an earlier repetition), else the current case's if of that
    key, else of the latest finished case of its group (the same workload and
    transport), else the current case's if of its group, with the time the case that
    gave its pace spent outside its steps and floor (the current case's: the average
    over the finished cases; before any, its start-up), none of it the wait for runners
    started by hand (``CaseHeartbeat.waited``: a person, in the first case that needs
    them, not a cost of each case). A case left whose group has not
    run yet (another size, or the single-process ``inproc`` after two-process ones) is
    counted apart, not timed: sizes run at paces far apart. Rough: codecs and policies
    of one group run at somewhat different paces."""

    def __init__(self, cases: Sequence):
        self.plans = [case_plan(c) for c in cases]
        self.paces: dict[str, _Paces] = {}  # by key, and by "transport " + transport
        self.other_s: list[float] = []
        self.floor_ratio: Optional[float] = None  # floor step over step, the latest
        self.t_mark = time.monotonic()  # the run's start, then the latest case's end
        self.t_shown = self.t_mark  # the run's latest heartbeat line (``CaseHeartbeat``)

    def left_s(self, beat: CaseHeartbeat) -> Optional["RunLeft"]:
        """The run left from ``beat``'s case on, as of its latest look (``RunLeft``);
        ``None`` when some case left has no plan or the case has no pace yet. Raises
        nothing."""
        plans = self.plans[beat.index:]
        step_s = beat.step_pace()
        if not plans or None in plans or step_s is None:
            return None
        this = plans[0]
        floor_s = beat.floor_pace()
        known = self.paces.get(this.key) or self.paces.get(this.group)
        if floor_s is None and known is not None and known.floor_s is not None:
            floor_s = known.floor_s
        if floor_s is None and self.floor_ratio is not None:
            floor_s = step_s * self.floor_ratio
        unpriced = floor_s is None and this.floor > 0  # and of the cases timed, below
        floor_s = floor_s or 0.0  # no floor replayed yet: the floors are left out
        if beat.t_floor is not None:
            left = max(0, this.floor - beat.floor_n) * floor_s
        else:
            left = max(0, this.steps - beat.n_step) * step_s + this.floor * floor_s
        other_s = (sum(self.other_s) / len(self.other_s) if self.other_s
                   else max(0.0, beat.t_first - beat.t_start - beat.waited()))
        current, untimed = _Paces(step_s, floor_s, other_s), 0
        for plan in plans[1:]:
            pace = (self.paces.get(plan.key) or (current if plan.key == this.key else None)
                    or self.paces.get(plan.group)
                    or (current if plan.group == this.group else None))
            if pace is None:
                untimed += 1
                continue
            unpriced = unpriced or (plan.floor > 0 and pace.floor_s is None and not floor_s)
            left += (pace.other_s + plan.steps * pace.step_s
                     + plan.floor * (floor_s if pace.floor_s is None else pace.floor_s))
        return RunLeft(left, untimed, unpriced)

    def finished(self, beat: CaseHeartbeat, now: float) -> None:
        """``beat``'s case ended at ``now``: keep its paces (when it had a plan and a
        pace) for the cases after it, its wait for runners started by hand
        (``CaseHeartbeat.waited``) taken out of its time. ``now``: ``time.monotonic``
        seconds. Raises nothing."""
        wall, self.t_mark = now - self.t_mark - beat.waited(), now
        plan = self.plans[beat.index] if beat.index < len(self.plans) else None
        step_s, floor_s = beat.step_pace(), beat.floor_pace()
        if plan is None or step_s is None:
            return
        steps = max(plan.steps, beat.n_step)
        other = max(0.0, wall - steps * step_s - beat.floor_n * (floor_s or 0.0))
        self.other_s.append(other)
        if floor_s is not None:
            self.floor_ratio = floor_s / step_s
        self.paces[plan.key] = self.paces[plan.group] = _Paces(step_s, floor_s, other)


def left_out_words(left: "RunLeft") -> str:
    """What the run left (``RunPace.left_s``) does not count, said plainly after it:
    ``; the estimate leaves out 2 cases of a size or transport not run yet (no pace
    to time them by)`` and/or ``the floors (none replayed yet)``; ``''`` when it
    counts everything."""
    n = left.untimed
    out = ([f"{n} case{'' if n == 1 else 's'} of a size or transport not run yet (no pace "
            "to time them by)"] if n else []) + (
        ["the floors (none replayed yet)"] if left.unpriced else [])
    return f"; the estimate leaves out {' and '.join(out)}" if out else ""


def about_words(seconds: float) -> str:
    """A time left in the heartbeat's words: ``about 45 s`` (``duration_words``), or
    ``under 1 s`` for a time above 0 that rounds to none (not ``about 0 s``)."""
    if 0 < seconds and round(seconds) == 0:
        return "under 1 s"
    return f"about {duration_words(seconds)}"


def duration_words(seconds: float) -> str:
    """``45 s``, ``1 min 0 s``, ``2 h 5 min``: whole seconds, the heartbeat's words."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def case_progress(spec, desc: str, stream: Optional[IO] = None, bar: bool = True,
                  run: Optional[RunPace] = None, index: int = 0,
                  waited: Optional[Callable[[], float]] = None) -> _Strided:
    """The progress of ``spec`` (a ``CaseSpec``): a tqdm bar (``bar``) or a line a
    minute (``CaseHeartbeat``, with the run's ``RunPace`` ``run``, this case its
    ``index``-th from 0, and the seconds it has waited for runners started by hand,
    ``waited()``), counting requests finished out of the workload's length
    when the workload has one and the case has no step limit, else steps out of
    ``spec.warmup_steps + spec.counted_steps`` when it counts a number of steps, else
    out of ``spec.max_steps``."""
    counted = getattr(spec, "counted_steps", None)
    by_requests, total = False, spec.max_steps
    if counted is not None:
        total = spec.warmup_steps + counted
    elif spec.max_steps is None:
        try:
            total = len(spec.make_workload())
            by_requests = True
        except TypeError:
            pass
    if bar:
        return CaseProgress(desc, total, by_requests, stream=stream)
    return CaseHeartbeat(desc, total, by_requests, stream=stream,
                         floor=bool(getattr(spec, "floor", False)), run=run, index=index,
                         waited=waited,
                         warmup=getattr(spec, "warmup_steps", 0) if counted is not None else 0)
