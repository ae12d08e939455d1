"""Progress bars for long runs: one tqdm bar per case, on a terminal only.

A bar counts steps done out of the case's warm-up and counted steps (steady scenarios:
the uncounted mixed steps take it a little past them), or out of its step limit, or
requests finished out of the workload's requests (trace replays), shows output
tokens/s since the case's first step and tqdm's ETA. It is silent when standard error is not a
terminal, in CI (the ``CI`` environment variable set, as GitHub Actions, GitLab CI
and most others do) and with ``--quiet``.

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


class CaseProgress:
    """A tqdm bar for one case, callable as ``on_step(seq, num_output_tokens,
    num_finished)``: ``seq`` exchanges done, tokens sampled so far, requests finished
    so far. ``total``: steps (``by_requests`` false) or requests; ``None`` if unknown.
    """

    def __init__(self, desc: str, total: Optional[int], by_requests: bool,
                 stream: Optional[IO] = None, interval_s: float = 0.1):
        from tqdm import tqdm

        self.by_requests = by_requests
        self.interval_s = interval_s
        self.bar = tqdm(total=total, desc=desc, unit="req" if by_requests else "step",
                        file=sys.stderr if stream is None else stream, leave=False,
                        dynamic_ncols=True, mininterval=interval_s, smoothing=0.2)
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
        if n > self.bar.n:
            self.bar.update(n - self.bar.n)
        if self.updates == 0:  # rates count from the first step (after start-up)
            self.t_first, self.tokens_first = now, num_output_tokens
        elif now > self.t_first:
            rate = (num_output_tokens - self.tokens_first) / (now - self.t_first)
            self.bar.set_postfix_str(f"{rate:,.0f} tok/s", refresh=False)
        dt = now - self.t_last
        want = self.stride * self.interval_s / dt if dt > 0 else self.stride * 10
        self.stride = int(max(1, min(self.stride * 10, want, 1_000_000)))
        self.next_seq = seq + self.stride
        self.t_last = now
        self.updates += 1

    def close(self) -> None:
        """Remove the bar (the caller prints the case's result line)."""
        self.bar.close()


def case_progress(spec, desc: str, stream: Optional[IO] = None) -> CaseProgress:
    """The bar for ``spec`` (a ``CaseSpec``): requests finished out of the workload's
    length when the workload has one and the case has no step limit, else steps out of
    ``spec.warmup_steps + spec.counted_steps`` when it counts a number of steps, else
    out of ``spec.max_steps``."""
    counted = getattr(spec, "counted_steps", None)
    if counted is not None:
        return CaseProgress(desc, spec.warmup_steps + counted, by_requests=False,
                            stream=stream)
    if spec.max_steps is None:
        total = None
        try:
            total = len(spec.make_workload())
        except TypeError:
            pass
        if total is not None:
            return CaseProgress(desc, total, by_requests=True, stream=stream)
        return CaseProgress(desc, None, by_requests=False, stream=stream)
    return CaseProgress(desc, spec.max_steps, by_requests=False, stream=stream)
