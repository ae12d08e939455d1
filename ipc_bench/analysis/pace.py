"""How a timed replay was paced: arrival-bound (the trace's arrivals set its pace: the
engine kept up with them, or drained each burst they brought and then idled until the
next, so its tokens/s over wall time measure the arrivals) or load-bound (requests
queued and the engine was busy nearly all the time, or every request arrived at the
start, an offline batch: the engine set the pace). A replay whose requests all arrived
at its start (``last_arrival_s`` 0: the trace's timestamps all equal, one request
included) is load-bound even where none was left waiting (``arrived_at_start``): no
arrival paced it, the engine's time on that batch set its wall time, e.g. three requests
at one timestamp on the null model (no step with a request waiting, no idle time), or
one request decoded alone, whose tokens/s (wall) is the engine's batch-1 decode rate. Pure
functions of a ``summary.json`` case, so that the loader, the statistics and the report
read one rule (``analysis.summary`` re-exports them, where a case's figures are
made)."""

from __future__ import annotations

from typing import Any, Optional

#: A timed replay is load-bound (saturated: the requests arrived faster than the engine
#: served them, so the engine set its pace and its tokens/s (wall) measure the engine
#: under that backlog) when a request was left waiting (``num_waiting`` above 0: arrived,
#: not scheduled) after at least this share of its steps (``waiting_step_share``): the
#: backlog lasted for most of the replay. Below it the engine kept up, scheduling each
#: request about as it arrived: the replay is arrival-bound, the trace's arrivals set
#: its pace.
QUEUED_STEP_SHARE = 0.5
#: A shorter backlog makes a timed replay load-bound too when the arrivals were over
#: early: a request was left waiting after some step (``waiting_step_share`` above 0)
#: and the last request arrived less than ``ARRIVAL_BOUND_SHARE`` of the way into the
#: wall time (a burst, e.g. 60 requests within 0.03 s of a 1 s replay): the engine then
#: drained a queue it had built, and the arrivals set no pace. One long request at the
#: end, with nothing ever waiting, stays arrival-bound. So does a replay whose queue
#: was too small to matter: fewer than ``BURST_QUEUE_MIN`` requests waiting per step
#: on average over all its steps (``num_waiting_mean``), e.g. a single request left
#: waiting after one step of 181 (a prompt too long for that step's token budget, or
#: a step slowed by another process: 0.006), against a burst of 60 requests (1.3) or
#: two requests at once served one at a time (0.49).
BURST_QUEUE_MIN = 0.1

#: A timed replay that queued (either rule above) is load-bound only where its engine
#: idled less than this share of its wall time (``idle_share``: the scheduler had
#: nothing to schedule and waited for the next arrival). A replay whose arrivals came in
#: bursts queues each burst and idles between them: requests wait after most steps, yet
#: the gaps in the trace, not the engine, set its wall time (e.g. a soak of 60
#: conversation requests at 8x with ``--max-num-seqs 1`` on the null model: a request
#: waiting after 89 % of the steps, the engine idle 25 % of the wall time). It stays
#: arrival-bound. A replay recorded before ``idle_s`` is labelled by the queueing rules
#: alone. A replay that saturates the engine idles about 0 % (only before its first
#: backlog and between late arrivals).
IDLE_SHARE_MAX = 0.1

#: A timed replay recorded without ``num_waiting`` (a run before it) is arrival-bound
#: when its last request arrives at least this share of its ``wall_s`` into the run
#: (``arrival_span_share``): an engine that keeps up finishes each request soon after it
#: arrives, so the wall time is the arrivals' span plus about one request's e2e; below
#: it the replay is taken as load-bound. A stand-in only: one long request at the end
#: lowers the share with nothing queued, and a late last arrival raises it over a
#: backlog, which is why ``num_waiting`` decides where it is recorded.
ARRIVAL_BOUND_SHARE = 0.5


def replay_pace_figures(requests: list[dict[str, Any]],
                        wall_s: Optional[float]) -> dict[str, Any]:
    """A timed replay's ``last_arrival_s`` (s: the last request's arrival on the replay
    clock, trace time over ``--trace-speedup``, from the first arrival) and
    ``arrival_span_share`` (``last_arrival_s`` over ``wall_s``; ``None`` without a
    wall time), which ``replay_pace`` reads for a run without ``num_waiting``. ``{}``
    without requests or arrivals."""
    arrivals = [r["arrival_s"] for r in requests if r.get("arrival_s") is not None]
    return arrival_span_figures(float(max(arrivals)) if arrivals else None, wall_s)


def arrival_span_figures(last_arrival_s: Optional[float],
                         wall_s: Optional[float]) -> dict[str, Any]:
    """``replay_pace_figures`` from the last request's arrival ``last_arrival_s`` (s, on
    the replay clock; ``None`` where no request arrived: ``{}``), as a streamed case
    (soak), whose requests left memory as they finished, keeps it."""
    if last_arrival_s is None:
        return {}
    return dict(last_arrival_s=last_arrival_s,
                arrival_span_share=last_arrival_s / wall_s if wall_s else None)


def idle_figures(idle_ns: int, wall_s: Optional[float]) -> dict[str, Any]:
    """A timed replay's ``idle_s`` (s: the time its scheduler loop waited for the next
    arrival with nothing to schedule and no step in flight, ``CaseResult.idle_ns``
    summed by ``harness.scheduler_loop.wait_for_arrival``) and ``idle_share``
    (``idle_s`` over ``wall_s``; ``None`` without a wall time), which ``replay_pace``
    reads."""
    idle_s = idle_ns / 1e9
    return dict(idle_s=idle_s, idle_share=idle_s / wall_s if wall_s else None)


def _number_or_none(value: Any) -> Optional[float]:
    """``value`` where it is a number (not ``None``, NaN or a bool), else ``None``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return float(value)


def replay_pace_basis(summary: dict[str, Any]) -> Optional[str]:
    """The figure ``replay_pace`` labels a timed replay's case (a ``summary.json``
    case) by: ``"num_waiting"`` where it records ``waiting_step_share``, else
    ``"arrival_span_share"`` where it records that (a run before ``num_waiting``);
    ``None`` for a case that is no timed replay or records neither."""
    if summary.get("trace_speedup") is None:
        return None
    if _number_or_none(summary.get("waiting_step_share")) is not None:
        return "num_waiting"
    if _number_or_none(summary.get("arrival_span_share")) is not None:
        return "arrival_span_share"
    return None


def replay_pace_evidence(summary: dict[str, Any]) -> str:
    """The figures ``replay_pace`` labelled a timed replay's case (a ``summary.json``
    case) by, naming the measure (``replay_pace_basis``): ``by num_waiting: a request
    was left waiting after 78 % of its steps, 12.3 per step on average`` (``by
    num_waiting and last_arrival_s: ..., and every request arrived at its start, 0 s
    into 0.03 s of wall time`` for an offline batch, ``arrived_at_start``), or, for a run before
    it, ``by arrival_span_share (recorded before num_waiting): its last request arrived
    0.10 s into 3.20 s of wall time``; ``""`` where it has no label."""
    basis = replay_pace_basis(summary)
    if basis == "num_waiting":
        mean = _number_or_none(summary.get("num_waiting_mean"))
        words = ("by num_waiting: " + (
            "no request was left waiting after any of its steps"
            if summary["waiting_step_share"] == 0 else
            f"a request was left waiting after {_percent(summary['waiting_step_share'])}"
            " of its steps" + ("" if mean is None else
                               f", {_small(mean)} per step on average")))
        if summary["waiting_step_share"] < QUEUED_STEP_SHARE and _drained_a_burst(summary):
            words += (f", and its last request arrived "
                      f"{100 * summary['arrival_span_share']:.0f} % of the way into its "
                      "wall time")
        idle = _number_or_none(summary.get("idle_share"))
        if arrived_at_start(summary):
            wall = _number_or_none(summary.get("wall_s"))
            words = ("by num_waiting and last_arrival_s: "
                     + words.removeprefix("by num_waiting: ") + ", and every request "
                     + ("arrived at its start" if wall is None else
                        f"arrived at its start, 0 s into {wall:.2f} s of wall time"))
        if idle is not None and _queued(summary):
            words += (f", but the engine idled {100 * idle:.0f} % of its wall time, "
                      "waiting for arrivals"
                      if idled_between_bursts(summary) else
                      f", the engine idle {100 * idle:.0f} % of its wall time")
        return words
    if basis == "arrival_span_share":
        last, wall = summary.get("last_arrival_s"), summary.get("wall_s")
        return ("by arrival_span_share (recorded before num_waiting): its last request "
                + (f"arrived {last:.2f} s into {wall:.2f} s of wall time"
                   if _number_or_none(last) is not None and _number_or_none(wall)
                   else f"arrived {100 * summary['arrival_span_share']:.0f} % of the way "
                   "into its wall time"))
    return ""


def _percent(share: float) -> str:
    """``share`` (0 to 1) as a percentage a reader can set beside its mean: whole
    (``78 %``) but for one under 1 % that is not 0 (``0.6 %``), which rounding would
    make ``1 %`` or ``0 %``."""
    return f"{100 * share:.1g} %" if 0 < share < 0.01 else f"{100 * share:.0f} %"


def _small(value: float) -> str:
    """A mean count per step: one decimal (``12.3``), or one significant digit for one
    that would show as ``0.0`` (``0.008``)."""
    return f"{value:.1g}" if 0 < value < 0.05 else f"{value:.1f}"


def arrived_at_start(summary: dict[str, Any]) -> bool:
    """Whether a timed replay (a ``summary.json`` case) that records ``num_waiting``
    is load-bound only because all its requests arrived at its start: its
    ``last_arrival_s`` (else its ``arrival_span_share``) is 0, and it did not queue
    (``_queued``: that rule labels it first). ``False`` for any other case."""
    if replay_pace_basis(summary) != "num_waiting" or _queued(summary):
        return False
    last = _number_or_none(summary.get("last_arrival_s"))
    if last is None:
        last = _number_or_none(summary.get("arrival_span_share"))
    return last == 0.0


def _queued(summary: dict[str, Any]) -> bool:
    """Whether a timed replay that records ``num_waiting`` queued: a request was left
    waiting after at least ``QUEUED_STEP_SHARE`` of its steps, or after any step of a
    replay whose arrivals were over early (``_drained_a_burst``)."""
    return summary["waiting_step_share"] >= QUEUED_STEP_SHARE or _drained_a_burst(summary)


def idled_between_bursts(summary: dict[str, Any]) -> bool:
    """Whether a timed replay (a ``summary.json`` case) queued (``_queued``) yet is
    arrival-bound because its engine idled at least ``IDLE_SHARE_MAX`` of its wall time
    (``idle_share``) waiting for arrivals: bursts queued, the gaps between them idled.
    ``False`` for a case without ``num_waiting`` or ``idle_share``."""
    if replay_pace_basis(summary) != "num_waiting" or not _queued(summary):
        return False
    idle = _number_or_none(summary.get("idle_share"))
    return idle is not None and idle >= IDLE_SHARE_MAX


def drained_a_burst(summary: dict[str, Any]) -> bool:
    """Whether a timed replay (a ``summary.json`` case) is load-bound only as a burst the
    engine drained: a request was left waiting after fewer than ``QUEUED_STEP_SHARE``
    of its steps, yet its arrivals were over early and it queued (``_drained_a_burst``),
    and it did not idle between bursts (``idled_between_bursts``). Such a replay's
    wall time ends with the tails of its longest requests, few requests running, so
    its tokens/s (wall) depend on the trace's longest outputs: no saturated engine's
    throughput. ``False`` for any other case (one without ``num_waiting`` included)."""
    return (replay_pace_basis(summary) == "num_waiting"
            and summary["waiting_step_share"] < QUEUED_STEP_SHARE
            and _drained_a_burst(summary) and not idled_between_bursts(summary))


def _drained_a_burst(summary: dict[str, Any]) -> bool:
    """Whether a timed replay that records ``num_waiting`` queued a burst (a request
    left waiting after some step, ``BURST_QUEUE_MIN`` or more per step on average) and
    had its last arrival less than ``ARRIVAL_BOUND_SHARE`` of the way into
    its wall time (note at ``QUEUED_STEP_SHARE``)."""
    span = _number_or_none(summary.get("arrival_span_share"))
    share = summary["waiting_step_share"]
    if share <= 0 or span is None or span >= ARRIVAL_BOUND_SHARE:
        return False
    mean = _number_or_none(summary.get("num_waiting_mean"))
    return mean is None or mean >= BURST_QUEUE_MIN


def replay_pace(summary: dict[str, Any]) -> Optional[str]:
    """How a timed replay's case (a ``summary.json`` case) was paced, by
    ``replay_pace_basis``: where it records ``num_waiting``, ``"load-bound"`` when a
    request was left waiting after at least ``QUEUED_STEP_SHARE`` of its steps
    (``waiting_step_share``: the requests arrived faster than the engine served them
    and queued), or after any step of a replay whose arrivals were over in less than
    ``ARRIVAL_BOUND_SHARE`` of its wall time (a burst the engine drained), and its
    engine idled less than ``IDLE_SHARE_MAX`` of its wall time (``idle_share``, where
    recorded), or when every request arrived at its start (``arrived_at_start``: an
    offline batch); else ``"arrival-bound"`` (the engine kept up with the arrivals, or
    queued bursts and idled between them, ``idled_between_bursts``; one long request
    draining after the last arrival with nothing waiting included); in a run before ``num_waiting``,
    ``"arrival-bound"`` where its ``arrival_span_share`` is at least
    ``ARRIVAL_BOUND_SHARE``, else ``"load-bound"``. ``None`` for a case that is no
    timed replay or records neither figure (no wall time)."""
    basis = replay_pace_basis(summary)
    if basis == "num_waiting":
        return ("load-bound" if (_queued(summary) and not idled_between_bursts(summary))
                or arrived_at_start(summary) else "arrival-bound")
    if basis == "arrival_span_share":
        return ("arrival-bound" if summary["arrival_span_share"] >= ARRIVAL_BOUND_SHARE
                else "load-bound")
    return None


def as_record(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` (one row of ``Results.cases`` as a dict) with each NaN or ``pandas.NA``
    (a column the row lacks, ``is_missing``) read as ``None``, as the ``summary.json``
    case it came from has it missing, so that the functions here read it as they read
    that case."""
    return {k: (None if is_missing(v) else v) for k, v in row.items()}


def is_missing(value: Any) -> bool:
    """Whether ``value`` (a cell of a pandas record) is a gap: ``None``, NaN (a float
    column's) or ``pandas.NA`` (a nullable ``Int64`` column's, ``results.load``'s
    ``num_running`` where some case lacks it)."""
    if value is None:
        return True
    if isinstance(value, float):
        return value != value
    if type(value).__name__ != "NAType":
        return False
    import pandas as pd

    return value is pd.NA


def all_load_bound(summaries: Any) -> bool:
    """Whether every one of ``summaries`` (case records of one comparison group, NaN
    already read as missing) is load-bound (``replay_pace``): the rule by which a group
    of timed replay cases gets a ratio of its tokens/s (wall) in the tables, the
    throughput figure and the multi-run side-by-side table alike (one case that kept
    up with its arrivals beside one that queued mixes the two). True without cases."""
    return all(replay_pace(s) == "load-bound" for s in summaries)
