"""The findings' line on Python's garbage collector in a send/cached pair.

Both processes freeze their heap after warm-up (``gc.freeze``, as vLLM's
``freeze_gc_heap``), but each step's new objects still start collections: send's token
id lists add objects every step, so at a large running count its steps start more
collections than cached's, in the scheduler (which builds them) and in the runner
(which decodes them), and part of the step time between the arms is the collector's.
Where the arms' collections per counted step (``sched_gc_collections_per_step``,
``runner_gc_collections_per_step``: means over the pair's repetitions) differ by
``GC_DIFFERENCE`` or more in either process, the findings say so in one line
(``gc_line``), with the time in those collections where it was recorded
(``sched_gc_ns_per_step``, ``runner_gc_ns_per_step``) and how much of send's longer
mean step that is; nothing where they are about equal, or not recorded.
"""

from __future__ import annotations

import math
from typing import Any

#: Collections per counted step by which the arms must differ, in the scheduler or in
#: the runner process, for ``gc_line`` to speak: one more collection every step.
#: Measured with msgpack on a 2-core machine: 16 running requests, 0.0 per step in
#: each arm and process; 4,096, send 19.0 and cached 13.3 in each process.
GC_DIFFERENCE = 1.0

#: Why send's steps start more collections, ending ``gc_line``'s words for them.
SEND_CAUSE = ("started by the objects its token ids add (as in vLLM, whose heap is "
              "frozen the same way).")
#: ``gc_line``'s words where send's steps start more collections and no time in them
#: was recorded (a run before ``gc_ns``).
SEND_MORE = f"part of send's extra step time is collection, {SEND_CAUSE}"
#: ``gc_line``'s words where cached's steps start more collections.
CACHED_MORE = "part of the step-time difference between the arms is collection."

#: Per process: its collections per step, and the time in them (ns per step).
_FIELDS = (("scheduler", "sched_gc_collections_per_step", "sched_gc_ns_per_step"),
           ("runner", "runner_gc_collections_per_step", "runner_gc_ns_per_step"))


def _mean(records: list[dict[str, Any]], field: str) -> float | None:
    """The mean of ``field`` over ``records``; None where any lacks it (NaN, absent)."""
    values = [r.get(field) for r in records]
    if not values or any(v is None or isinstance(v, bool) or not isinstance(v, (int, float))
                         or not math.isfinite(v) for v in values):
        return None
    return sum(values) / len(values)


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.2f}"


def _send_words(gc_ns: float | None, step_ns: float | None) -> str:
    """Why send's steps are longer, from ``gc_ns`` (its collections' time per step less
    cached's, both processes summed: in a synchronous loop the runner's lie in the
    scheduler's wait) and ``step_ns`` (its mean step less cached's), either None where
    not recorded."""
    if gc_ns is None:
        return SEND_MORE
    if step_ns is not None and 0 < gc_ns <= step_ns:
        return (f"{_ms(gc_ns)} ms of send's {_ms(step_ns)} ms longer mean step is "
                f"collection, {SEND_CAUSE}")
    step = "" if step_ns is None else f" (its mean step {step_ns / 1e6:+.2f} ms)"
    return (f"send's collections took {gc_ns / 1e6:+.2f} ms per step against cached's"
            f"{step}, {SEND_CAUSE}")


def gc_line(head: str, pairs: list[tuple[dict, dict]]) -> str:
    """One finding on the collector of a send/cached pair, ``''`` where it does not
    apply. ``head``: the line's start (``At 4,096 running requests (msgpack)``);
    ``pairs``: (send, cached) case records, one pair per repetition
    (``findings.pair_records``). Each arm's collections per counted step are the means
    over the pairs, one decimal; the line is given where, in the scheduler or in the
    runner process, they differ by ``GC_DIFFERENCE`` or more. A process whose figure
    is not recorded (a runner without its report, a run before the field) is left
    out of the line and of the rule. Where every process's time in its collections
    is recorded (``*_gc_ns_per_step``), the line gives it (ms per step) and how much
    of send's longer mean step (``step_ns_mean``) it is, both processes summed."""
    if not pairs:
        return ""
    sends, cacheds = [p[0] for p in pairs], [p[1] for p in pairs]
    procs = []
    for where, count, ns in _FIELDS:
        s, c = _mean(sends, count), _mean(cacheds, count)
        if s is not None and c is not None:
            procs.append((where, s, c, _mean(sends, ns), _mean(cacheds, ns)))
    differ = [(p[1], p[2]) for p in procs if abs(p[1] - p[2]) >= GC_DIFFERENCE]
    if not differ:
        return ""
    timed = all(p[3] is not None and p[4] is not None for p in procs)
    owners = [" times per step in send's"] + [" in its"] * (len(procs) - 1)
    send_words = " and ".join(f"{p[1]:.1f}{owner} {p[0]}" for owner, p in zip(owners, procs))
    cached_words = " and ".join(f"{p[2]:.1f}" for p in procs)
    gc_ns = step_ns = None
    if timed:
        send_words += f" ({' and '.join(_ms(p[3]) for p in procs)} ms)"
        cached_words += f" ({' and '.join(_ms(p[4]) for p in procs)} ms)"
        gc_ns = sum(p[3] - p[4] for p in procs)
        s, c = _mean(sends, "step_ns_mean"), _mean(cacheds, "step_ns_mean")
        step_ns = None if s is None or c is None else s - c
    why = (_send_words(gc_ns, step_ns) if all(s > c for s, c in differ)
           else CACHED_MORE)
    return (f"{head}, Python's garbage collector ran {send_words}, cached's "
            f"{cached_words}: {why}")
