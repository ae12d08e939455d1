"""The findings' line on Python's garbage collector in a send/cached pair
(``report.collector.gc_line``): given where the arms' collections per counted step differ
by one or more in the scheduler or the runner process, as at 4,096 running requests
(send 19.0, cached 13.3 in each), none where they are about equal (16 running
requests: 0.0 in each)."""

from __future__ import annotations

import math

from fault_helpers import one_runner_mark
from ipc_bench.analysis.results import load
from ipc_bench.report import findings
from ipc_bench.report.collector import gc_line

HEAD = "At 4,096 running requests (msgpack)"
SEND_MORE = ("At 4,096 running requests (msgpack), Python's garbage collector ran 19.0 "
             "times per step in send's scheduler and 19.0 in its runner, cached's 13.3 and "
             "13.3: send's extra collections are started by the objects its token ids add "
             "(as in vLLM, whose heap is frozen the same way); their time was not recorded, "
             "so none of the step-time difference is put down to them.")
UNTIMED_SEND = SEND_MORE.split(": ", 1)[1]
#: The same with the time in the collections recorded (``gc_ns``): the 4,096 run's.
TIMED = ("At 4,096 running requests (msgpack), Python's garbage collector ran 19.0 times "
         "per step in send's scheduler and 19.0 in its runner (1.54 and 0.97 ms), cached's "
         "13.3 and 13.3 (1.14 and 0.81 ms): 0.55 ms of send's 2.08 ms longer mean step is "
         "collection, started by the objects its token ids add (as in vLLM, whose heap is "
         "frozen the same way).")


def _arm(sched, runner) -> dict:
    return dict(sched_gc_collections_per_step=sched, runner_gc_collections_per_step=runner)


def _timed(sched, runner, sched_ns, runner_ns, step_ns) -> dict:
    return dict(_arm(sched, runner), sched_gc_ns_per_step=sched_ns,
                runner_gc_ns_per_step=runner_ns, step_ns_mean=step_ns)


#: The 4,096 run's figures (send, cached).
SEND = _timed(19.0075, 19.0075, 1541746.8375, 967114.2325, 14341658.4575)
CACHED = _timed(13.3, 13.3, 1144653.6725, 811667.1125, 12261160.3725)


def test_the_line_where_send_starts_more_collections():
    pairs = [(_arm(19.0, 19.0075), _arm(13.3, 13.3))]
    assert gc_line(HEAD, pairs) == SEND_MORE
    assert len(SEND_MORE) < 400


def test_the_line_with_the_time_in_the_collections():
    assert gc_line(HEAD, [(SEND, CACHED)]) == TIMED
    assert len(TIMED) < 350
    # more collection time than the longer step (noise): said as a difference
    short = dict(SEND, step_ns_mean=12461160.3725)
    assert gc_line(HEAD, [(short, CACHED)]) == (
        f"{HEAD}, Python's garbage collector ran 19.0 times per step in send's scheduler "
        "and 19.0 in its runner (1.54 and 0.97 ms), cached's 13.3 and 13.3 (1.14 and 0.81 "
        "ms): send's collections took +0.55 ms per step against cached's (its mean step "
        "+0.20 ms), started by the objects its token ids add (as in vLLM, whose heap is "
        "frozen the same way).")
    # one arm's time not recorded (a run before gc_ns): the counts alone
    old = {k: v for k, v in SEND.items() if "gc_ns" not in k}
    assert gc_line(HEAD, [(old, CACHED)]) == SEND_MORE


def test_the_means_over_repetitions_and_one_process_alone():
    pairs = [(_arm(18.0, 0.0), _arm(13.0, 0.0)), (_arm(20.0, 0.5), _arm(13.6, 0.0))]
    assert gc_line(HEAD, pairs) == (
        f"{HEAD}, Python's garbage collector ran 19.0 times per step in send's scheduler "
        "and 0.2 in its runner, cached's 13.3 and 0.0: " + UNTIMED_SEND)
    # the runner's figure not recorded (NaN, or absent): left out of the line
    no_runner = [(_arm(19.0, math.nan), _arm(13.3, math.nan))]
    assert gc_line(HEAD, no_runner) == gc_line(
        HEAD, [({"sched_gc_collections_per_step": 19.0},
                {"sched_gc_collections_per_step": 13.3})]) == (
        f"{HEAD}, Python's garbage collector ran 19.0 times per step in send's scheduler, "
        "cached's 13.3: " + UNTIMED_SEND)


def test_the_line_where_cached_starts_more():
    assert gc_line(HEAD, [(_arm(2.0, 2.0), _arm(3.5, 2.0))]) == (
        f"{HEAD}, Python's garbage collector ran 2.0 times per step in send's scheduler "
        "and 2.0 in its runner, cached's 3.5 and 2.0: the time in these collections was not "
        "recorded, so none of the step-time difference is put down to them.")


def test_no_line_where_the_collections_are_about_equal_or_not_recorded():
    assert gc_line(HEAD, [(_arm(0.0, 0.0025), _arm(0.0, 0.0025))]) == ""
    assert gc_line(HEAD, [(_arm(13.9, 14.2), _arm(13.3, 13.3))]) == ""  # < 1 apart
    assert gc_line(HEAD, [(_arm(math.nan, math.nan), _arm(13.3, 13.3))]) == ""
    assert gc_line(HEAD, [({}, {})]) == ""
    assert gc_line(HEAD, []) == ""


def test_a_run_gets_the_line_after_its_pair_finding_only_where_collections_differ(
        shared_two_case_run):
    # 4 running, 20 counted steps, msgpack, no floor, no single-process case
    results = load(shared_two_case_run)
    lines = list(findings.findings(results))
    assert not any("garbage collector" in ln for ln in lines)  # 4 running: no collection
    cases = results.cases
    send, cached = cases["policy"] == "send", cases["policy"] == "cached"
    cases.loc[send, "sched_gc_collections_per_step"] = 19.0
    cases.loc[send, "runner_gc_collections_per_step"] = 19.0075
    cases.loc[cached, "sched_gc_collections_per_step"] = 13.3
    cases.loc[cached, "runner_gc_collections_per_step"] = 13.3
    for name in ("sched_gc_ns_per_step", "runner_gc_ns_per_step"):  # as before gc_ns
        cases[name] = float("nan")
    got = list(findings.findings(results))
    where = f"At 4 running requests (msgpack{one_runner_mark()})"  # ° on exactly 2 cores
    at = next(i for i, ln in enumerate(got) if ln.startswith(f"{where}, cached sends"))
    assert got[at + 1] == SEND_MORE.replace(HEAD, where)
    assert got[:at + 1] + got[at + 2:] == lines
    # with the time recorded: the 4,096 run's figures, its mean steps too
    for arm, figures in ((send, SEND), (cached, CACHED)):
        for name, value in figures.items():
            cases.loc[arm, name] = value
    timed = list(findings.findings(results))
    assert timed[at + 1] == TIMED.replace(HEAD, where)
