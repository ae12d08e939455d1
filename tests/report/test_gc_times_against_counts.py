"""The collector's findings line where the time in the collections goes against their
counts (``report.collector.gc_line``): on a busy machine a process preempted inside a
collection has the wait timed in it, so send can run more collections per step yet
spend less time in them than cached. The line then gives the figures, says the times
disagree with the counts and puts none of the step-time difference down to collection,
where it gave send's collections a negative time and then the cause of its extra
collection time."""

from __future__ import annotations

from ipc_bench.report.collector import gc_line

HEAD = "At 4,096 running requests (msgpack)"
COUNTS = ("At 4,096 running requests (msgpack), Python's garbage collector ran 19.1 times "
          "per step in send's scheduler and 19.1 in its runner")
DISAGREE = ("the times disagree with the counts (as on a busy machine, where a process "
            "preempted inside a collection has the wait timed in it), so none of the "
            "step-time difference between the arms is put down to collection.")


def _arm(sched, runner, sched_ns=None, runner_ns=None, step_ns=None) -> dict:
    arm = dict(sched_gc_collections_per_step=sched, runner_gc_collections_per_step=runner)
    if sched_ns is not None:
        arm.update(sched_gc_ns_per_step=sched_ns, runner_gc_ns_per_step=runner_ns)
    if step_ns is not None:
        arm["step_ns_mean"] = step_ns
    return arm


#: A loaded machine's 4,096-running run (load 6 on 2 CPUs): send collects more, in less
#: time (1.96 + 3.18 against 3.70 + 2.46 ms), with a mean step 0.36 ms longer.
SEND = _arm(19.1, 19.1, 1.96e6, 3.18e6, 22.294e6)
CACHED = _arm(13.3, 13.3, 3.70e6, 2.46e6, 21.937e6)


def test_send_collecting_more_in_less_time_is_said_to_disagree():
    assert gc_line(HEAD, [(SEND, CACHED)]) == (
        f"{COUNTS} (1.96 and 3.18 ms), cached's 13.3 and 13.3 (3.70 and 2.46 ms): send ran "
        "more collections, but they took -1.02 ms per step against cached's (its mean "
        f"step +0.36 ms): {DISAGREE}")
    # more collections for longer: part of send's longer step is theirs, as before
    faster = dict(CACHED, sched_gc_ns_per_step=1.0e6, runner_gc_ns_per_step=4.0e6)
    assert gc_line(HEAD, [(SEND, faster)]) == (
        f"{COUNTS} (1.96 and 3.18 ms), cached's 13.3 and 13.3 (1.00 and 4.00 ms): 0.14 ms "
        "of send's 0.36 ms longer mean step is collection, started by the objects its "
        "token ids add (as in vLLM, whose heap is frozen the same way).")


def test_a_time_difference_that_prints_as_zero_disagrees_too():
    even = dict(SEND, sched_gc_ns_per_step=2.984e6)  # +0.004 ms in all: printed +0.00
    assert gc_line(HEAD, [(even, CACHED)]) == (
        f"{COUNTS} (2.98 and 3.18 ms), cached's 13.3 and 13.3 (3.70 and 2.46 ms): send ran "
        "more collections, but they took +0.00 ms per step against cached's (its mean "
        f"step +0.36 ms): {DISAGREE}")
    # the mean steps not recorded: the step left out of the words
    no_step = ({k: v for k, v in SEND.items() if k != "step_ns_mean"}, CACHED)
    assert gc_line(HEAD, [no_step]) == (
        f"{COUNTS} (1.96 and 3.18 ms), cached's 13.3 and 13.3 (3.70 and 2.46 ms): send ran "
        f"more collections, but they took -1.02 ms per step against cached's: {DISAGREE}")


def test_cached_collecting_more_in_less_time_is_said_to_disagree():
    send = _arm(2.0, 2.0, 0.40e6, 0.20e6, 5.0e6)
    cached = _arm(3.5, 2.0, 0.25e6, 0.20e6, 4.8e6)
    assert gc_line(HEAD, [(send, cached)]) == (
        f"{HEAD}, Python's garbage collector ran 2.0 times per step in send's scheduler "
        "and 2.0 in its runner (0.40 and 0.20 ms), cached's 3.5 and 2.0 (0.25 and 0.20 ms): "
        "cached ran more collections, but send's took +0.15 ms per step against cached's "
        f"(its mean step +0.20 ms): {DISAGREE}")
    # cached's more collections taking more time: the step-time difference is in part theirs
    cached = dict(cached, sched_gc_ns_per_step=0.55e6)
    assert gc_line(HEAD, [(send, cached)]) == (
        f"{HEAD}, Python's garbage collector ran 2.0 times per step in send's scheduler "
        "and 2.0 in its runner (0.40 and 0.20 ms), cached's 3.5 and 2.0 (0.55 and 0.20 ms): "
        "part of the step-time difference between the arms is collection.")


def test_counts_alone_put_no_step_time_down_to_collection():
    assert gc_line(HEAD, [(_arm(19.1, 19.1), _arm(13.3, 13.3))]) == (
        f"{COUNTS}, cached's 13.3 and 13.3: send's extra collections are started by the "
        "objects its token ids add (as in vLLM, whose heap is frozen the same way); their "
        "time was not recorded, so none of the step-time difference is put down to them.")
    assert gc_line(HEAD, [(_arm(2.0, 2.0), _arm(3.5, 2.0))]) == (
        f"{HEAD}, Python's garbage collector ran 2.0 times per step in send's scheduler "
        "and 2.0 in its runner, cached's 3.5 and 2.0: the time in these collections was "
        "not recorded, so none of the step-time difference is put down to them.")

