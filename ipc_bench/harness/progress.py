"""Progress of long runs: one tqdm bar per case on a terminal, a line a minute elsewhere.

A bar counts steps done out of the case's warm-up and counted steps (steady scenarios:
the uncounted mixed steps take it a little past them), or out of its step limit, or
requests finished out of the workload's requests (trace replays), shows output
tokens/s since the case's first step and tqdm's ETA. Bars are drawn only when standard
error is a terminal and not in CI (the ``CI`` environment variable set, as GitHub
Actions, GitLab CI and most others do). Elsewhere (a log file, a pipe, a CI job) a case
writes instead one plain line a minute (``CaseHeartbeat``), so a long case is seen to
advance and the end of its steps estimated (its floor, after them, writes none);
nothing at all with ``--quiet``.

The bar is ``run_case``'s ``on_step`` callback, called after every step outside the
timed region. To keep its cost per step to one comparison, it touches the bar only
every ``stride`` steps, a stride it re-sizes so that updates come about every
``interval_s`` (0.1 s) whatever the step rate.
"""

from __future__ import annotations

import os
import sys
import time
from typing import IO, Mapping, Optional

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
    so far. It looks at the clock only every ``stride`` steps, a stride re-sized so
    that looks come about every ``interval_s``, and hands each look to ``_show``.
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
        dt = now - self.t_last
        want = self.stride * self.interval_s / dt if dt > 0 else self.stride * 10
        self.stride = int(max(1, min(self.stride * 10, want, 1_000_000)))
        self.next_seq = seq + self.stride
        self.t_last = now
        self.updates += 1

    def _show(self, n: int, rate: Optional[float], now: float) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """End the case's progress (the caller prints the case's result line)."""


class CaseProgress(_Strided):
    """A tqdm bar for one case (see ``_Strided`` for the call and ``total``)."""

    def __init__(self, desc: str, total: Optional[int], by_requests: bool,
                 stream: Optional[IO] = None, interval_s: float = 0.1):
        from tqdm import tqdm

        super().__init__(total, by_requests, interval_s)
        self.bar = tqdm(total=total, desc=desc, unit="req" if by_requests else "step",
                        file=sys.stderr if stream is None else stream, leave=False,
                        dynamic_ncols=True, mininterval=interval_s, smoothing=0.2)

    def _show(self, n: int, rate: Optional[float], now: float) -> None:
        if n > self.bar.n:
            self.bar.update(n - self.bar.n)
        if rate is not None:
            self.bar.set_postfix_str(f"{rate:,.0f} tok/s", refresh=False)

    def close(self) -> None:
        """Remove the bar (the caller prints the case's result line)."""
        self.bar.close()


class CaseHeartbeat(_Strided):
    """One case's progress where no bar can be drawn: a line to ``stream`` (default
    standard error) every ``every_s`` seconds (60) of the case, none before, so a short
    case writes nothing::

        [2/8] num_running=256/send/msgpack#0: 41,200 of 60,200 steps after 1 min 0 s, 3,310 tok/s; about 28 s of steps left at this pace, then the floor

    ``after``: since the case began (its runner's start-up included). The time left is
    the pace since the case's first step carried to ``total`` (none without a total);
    ``floor``: the case replays its floor after its steps, which the estimate leaves
    out. Tokens/s count from the first step, as the bar's do."""

    def __init__(self, desc: str, total: Optional[int], by_requests: bool,
                 stream: Optional[IO] = None, every_s: float = 60.0,
                 interval_s: float = 1.0, floor: bool = False):
        super().__init__(total, by_requests, interval_s)
        self.desc = desc
        self.stream = stream
        self.every_s = every_s
        self.floor = floor
        self.t_start = self.t_last
        self.t_shown = self.t_last
        self.n_first: Optional[int] = None

    def _show(self, n: int, rate: Optional[float], now: float) -> None:
        if self.n_first is None:  # the first step: the pace counts from here
            self.n_first = n
        if now - self.t_shown < self.every_s:
            return
        self.t_shown = now
        unit = "request" if self.by_requests else "step"
        unit += "" if (self.total or n) == 1 else "s"  # 1 step; 1 of 7 steps
        done = f"{n:,} of {self.total:,} {unit}" if self.total else f"{n:,} {unit}"
        line = f"{self.desc}: {done} after {_duration(now - self.t_start)}"
        if rate is not None:
            line += f", {rate:,.0f} tok/s"
        if self.total and self.n_first < n < self.total and now > self.t_first:
            left = (self.total - n) * (now - self.t_first) / (n - self.n_first)
            unit = "requests" if self.by_requests else "steps"
            line += (f"; about {_duration(left)} of {unit} left at this pace"
                     + (", then the floor" if self.floor else ""))
        print(line, file=sys.stderr if self.stream is None else self.stream, flush=True)


def _duration(seconds: float) -> str:
    """``45 s``, ``1 min 0 s``, ``2 h 5 min``: whole seconds, the heartbeat's words."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def case_progress(spec, desc: str, stream: Optional[IO] = None,
                  bar: bool = True) -> _Strided:
    """The progress of ``spec`` (a ``CaseSpec``): a tqdm bar (``bar``) or a line a
    minute (``CaseHeartbeat``), counting requests finished out of the workload's length
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
                         floor=bool(getattr(spec, "floor", False)))
