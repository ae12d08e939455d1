"""The findings' line on Python's garbage collector in a send/cached pair.

Both processes freeze their heap after warm-up (``gc.freeze``, as vLLM's
``freeze_gc_heap``), but each step's new objects still start collections: send's token
id lists add objects every step, so at a large running count its steps start more
collections than cached's, in the scheduler (which builds them) and in the runner
(which decodes them), and part of the step time between the arms is the collector's.
Where the arms' collections per counted step (``sched_gc_collections_per_step``,
``runner_gc_collections_per_step``: means over the pair's repetitions) differ by
``GC_DIFFERENCE`` or more in either process, the findings say so in one line
(``gc_line``); nothing where they are about equal, or not recorded.
"""

from __future__ import annotations

import math
from typing import Any

#: Collections per counted step by which the arms must differ, in the scheduler or in
#: the runner process, for ``gc_line`` to speak: one more collection every step.
#: Measured with msgpack on a 2-core machine: 16 running requests, 0.0 per step in
#: each arm and process; 4,096, send 19.0 and cached 13.3 in each process.
GC_DIFFERENCE = 1.0

#: ``gc_line``'s words where send's steps start more collections.
SEND_MORE = ("part of send's extra step time is collection, started by the objects "
             "its token ids add each step (as in vLLM, whose heap is frozen the same way).")
#: ``gc_line``'s words where cached's steps start more collections.
CACHED_MORE = "part of the step-time difference between the arms is collection."

_FIELDS = ("sched_gc_collections_per_step", "runner_gc_collections_per_step")


def _mean(records: list[dict[str, Any]], field: str) -> float | None:
    """The mean of ``field`` over ``records``; None where any lacks it (NaN, absent)."""
    values = [r.get(field) for r in records]
    if not values or any(v is None or not isinstance(v, (int, float))
                         or not math.isfinite(v) for v in values):
        return None
    return sum(values) / len(values)


def gc_line(head: str, pairs: list[tuple[dict, dict]]) -> str:
    """One finding on the collector of a send/cached pair, ``''`` where it does not
    apply. ``head``: the line's start (``At 4,096 running requests (msgpack)``);
    ``pairs``: (send, cached) case records, one pair per repetition
    (``findings.pair_records``). Each arm's collections per counted step are the means
    over the pairs, one decimal; the line is given where, in the scheduler or in the
    runner process, they differ by ``GC_DIFFERENCE`` or more. A process whose figure
    is not recorded (a runner without its report, a run before the field) is left
    out of the line and of the rule."""
    if not pairs:
        return ""
    sends, cacheds = [p[0] for p in pairs], [p[1] for p in pairs]
    procs = []
    for field, where in zip(_FIELDS, ("scheduler", "runner")):
        s, c = _mean(sends, field), _mean(cacheds, field)
        if s is not None and c is not None:
            procs.append((where, s, c))
    differ = [(s, c) for _, s, c in procs if abs(s - c) >= GC_DIFFERENCE]
    if not differ:
        return ""
    owners = [" times per step in send's"] + [" in its"] * (len(procs) - 1)
    send_words = " and ".join(f"{s:.1f}{owner} {where}"
                              for owner, (where, s, _) in zip(owners, procs))
    cached_words = " and ".join(f"{c:.1f}" for _, _, c in procs)
    why = SEND_MORE if all(s > c for s, c in differ) else CACHED_MORE
    return (f"{head}, Python's garbage collector ran {send_words}, against "
            f"cached's {cached_words}: {why}")
