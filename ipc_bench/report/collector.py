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
mean step that is; nothing where they are about equal, or not recorded. Where the time
was not recorded, or its difference between the arms (both processes summed, as
printed) does not go the way the counts' does (send collecting more but not for longer:
a busy machine, whose preemption inside a collection is timed as part of it), the line
gives the figures and says so, and puts none of the step-time difference down to
collection.
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
#: ``gc_line``'s words where the time in the collections was not recorded (a run before
#: ``gc_ns``): nothing is put down to them.
UNTIMED = ("the time in these collections was not recorded, so none of the step-time "
           "difference is put down to them.")
#: ``gc_line``'s words for that where send's steps start more collections.
SEND_MORE = (f"send's extra collections are {SEND_CAUSE[:-1]}; their time was not recorded, "
             "so none of the step-time difference is put down to them.")
#: ``gc_line``'s words where cached's steps start more collections, their time recorded
#: and going the same way (or where the processes' counts differ in opposite ways).
CACHED_MORE = "part of the step-time difference between the arms is collection."
#: ``gc_line``'s words where the time in the collections goes against their counts:
#: on a busy machine a process preempted inside a collection has the wait timed in it.
DISAGREE = ("the times disagree with the counts (as on a busy machine, where a process "
            "preempted inside a collection has the wait timed in it), so none of the "
            "step-time difference between the arms is put down to collection.")

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


def _step_words(step_ns: float | None) -> str:
    return "" if step_ns is None else f" (its mean step {step_ns / 1e6:+.2f} ms)"


def _why(more: int, gc_ns: float | None, step_ns: float | None) -> str:
    """The line's words after its figures. ``more``: 1 where send's steps start more
    collections in every process whose counts differ, -1 where cached's do, 0 where they
    differ in opposite ways; ``gc_ns``: send's collections' time per step less cached's,
    both processes summed (in a synchronous loop the runner's lie in the scheduler's
    wait), and ``step_ns``: send's mean step less cached's, either None where not
    recorded. The time is taken as printed (ms, two decimals): one that rounds to 0, or
    goes against the counts, is said to disagree with them."""
    if gc_ns is None:
        return SEND_MORE if more > 0 else UNTIMED
    shown = float(f"{gc_ns / 1e6:.2f}")
    if more > 0 and shown <= 0 or more < 0 and shown >= 0:
        who = "send ran more collections, but they" if more > 0 else (
            "cached ran more collections, but send's")
        return (f"{who} took {gc_ns / 1e6:+.2f} ms per step against cached's"
                f"{_step_words(step_ns)}: {DISAGREE}")
    return _send_words(gc_ns, step_ns) if more > 0 else CACHED_MORE


def _send_words(gc_ns: float, step_ns: float | None) -> str:
    """Why send's steps are longer, from ``gc_ns`` (its collections' time per step less
    cached's, over 0) and ``step_ns`` (its mean step less cached's, None where not
    recorded), as ``_why``'s."""
    if step_ns is not None and 0 < gc_ns <= step_ns:
        return (f"{_ms(gc_ns)} ms of send's {_ms(step_ns)} ms longer mean step is "
                f"collection, {SEND_CAUSE}")
    return (f"send's collections took {gc_ns / 1e6:+.2f} ms per step against cached's"
            f"{_step_words(step_ns)}, {SEND_CAUSE}")


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
    of send's longer mean step (``step_ns_mean``) it is, both processes summed; where
    it is not, or goes against the counts, none of the step-time difference is put
    down to collection (``_why``)."""
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
    more = 1 if all(s > c for s, c in differ) else -1 if all(s < c for s, c in differ) else 0
    why = _why(more, gc_ns, step_ns)
    return (f"{head}, Python's garbage collector ran {send_words}, cached's "
            f"{cached_words}: {why}")
