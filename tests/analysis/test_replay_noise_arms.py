"""A trace replay's machine noise is judged arm by arm: one disturbed arm makes the
workload noisy, its line names the arm and the repetition that stands out, and its cases
carry the warning the report lists and counts; an arm is not measured for the real
reason (its cases' steps rows missing, a logical-clock replay whose digests differ, too
few steps), and the floor's figure says why it is absent (``analysis.replay_noise``)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd

from ipc_bench.analysis.replay_noise import (noisy_arm_warnings, repetition_noise,
                                             replay_noise_findings)

QUIET = [(100_000, 200_000, 400_000), (105_000, 200_000, 400_000),
         (95_000, 200_000, 400_000)]  # block CVs 0.05, 0, 0
#: Repetition 1 of send/msgpack ran every block at twice the others' mean step.
DISTURBED = [(200_000, 300_000, 500_000), (400_000, 600_000, 1_000_000),
             (200_000, 300_000, 500_000)]
ARMS = {("cached", "msgpack"): QUIET, ("cached", "pickle"): QUIET,
        ("send", "pickle"): QUIET, ("send", "msgpack"): DISTURBED}
W = "trace=azure-conv:30"


def _blocks(means) -> np.ndarray:
    return np.concatenate([np.repeat(float(m), 50) for m in means])


def _results(arms=None, floor: bool = True, drop=(), **fields) -> SimpleNamespace:
    """A ``Results`` stand-in of one replay workload: per (arm, codec) of ``arms`` its
    repetitions' 50-step block means (ns), each after 10 uncounted warm-up steps of
    5 s; its floor rows (each step a tenth of the case's) where ``floor``; the step
    rows of the cases ``drop`` left out; ``fields`` set on every case."""
    cases, step_rows, floor_rows = [], [], []
    for (arm, codec), reps in (arms or ARMS).items():
        for r, means in enumerate(reps):
            cid = f"{W}/{arm}/{codec}#{r}"
            cases.append(dict(dict(run_id="run", case_id=cid, workload=W,
                                   trace="azure-conv:30", arm=arm, codec=codec,
                                   transport="ipc", model="null", repetition=r,
                                   num_steps=50 * len(means), step_ns_block_cv=0.25,
                                   schedule_digest="d", warnings=[]), **fields))
            values = np.concatenate([np.repeat(5e9, 10), _blocks(means)])
            if cid not in drop:
                step_rows += [dict(run_id="run", case_id=cid, seq=i, counted=i >= 10,
                                   step_ns=v) for i, v in enumerate(values)]
            if floor:
                floor_rows += [dict(run_id="run", case_id=cid, i=i, floor_step_ns=v / 10)
                               for i, v in enumerate(_blocks(means))]
    ns = SimpleNamespace(
        cases=pd.DataFrame(cases), steps=pd.DataFrame(step_rows),
        floor=pd.DataFrame(floor_rows, columns=["run_id", "case_id", "i", "floor_step_ns"]))
    ns.finished = lambda: ns
    return ns


HEAD = ("On `trace=azure-conv:30` the step times vary with the trace's batches, so their "
        "50-step block means do too (`step_ns_block_cv` 25.0 %, the workload's spread as "
        "well as the machine's, not held to the 10 % noise threshold); ")


def test_one_disturbed_arm_makes_the_workload_noisy():
    arms = repetition_noise(_results())
    send = arms[3]
    # [200, 400, 200] k: sd 115.47 over mean 266.67 in every block
    assert round(send["step_ns_rep_block_cv"], 6) == 0.433013
    # repetition 1 sits 100 % over the others' median; each other one 33 % under theirs
    assert send["outlier"] == {"case_id": f"{W}/send/msgpack#1", "index": 1,
                               "deviation": 1.0}
    assert arms[0]["outlier"] is None  # 5 %: no repetition stands out
    # pooled over the 12 blocks: a median 2.5 %, under 10 %, which the old verdict took
    assert replay_noise_findings(_results()) == [
        HEAD + "across the 3 repetitions of each of its 4 arm-codec pairs, which ran the "
        "same schedule (one `schedule_digest`), a 50-step block's mean step time varied by "
        "a median 2.5 % (CV across repetitions, `step_ns_rep_block_cv`; 0.0-43.3 % by "
        "arm), its floor's by a median 2.5 % (`floor_step_ns_rep_block_cv`): over the "
        "10 % that marks noise in `send/msgpack` (43.3 %, its floor's 43.3 %; "
        "`trace=azure-conv:30/send/msgpack#1` stands out: its blocks sit a median 100.0 % "
        "from the other repetitions'): the machine may be noisy, and its step times and "
        "floor with it."]


def test_the_noisy_arms_cases_carry_warnings_the_report_lists_and_counts():
    from ipc_bench.report import blocks, findings

    results = _results()
    step = ("across the 3 repetitions of its arm, its 50-step block means vary by a "
            "median 43.3 % (`step_ns_rep_block_cv`, > 10 %): the machine may be noisy")
    floor = ("across the 3 repetitions of its arm, its 50-step mean floor step times vary "
             "by a median 43.3 % (`floor_step_ns_rep_block_cv`, > 10 %): the machine may "
             "be noisy, and the floor tok/s and x floor with it")
    stands = ("; this repetition stands out: its blocks sit a median 100.0 % from the "
              "others'")
    added = noisy_arm_warnings(results)
    assert added == {f"{W}/send/msgpack#0": [step, floor],
                     f"{W}/send/msgpack#1": [step + stands, floor],
                     f"{W}/send/msgpack#2": [step, floor]}
    assert blocks._case_warnings(results) == [
        f"`{W}/send/msgpack#0`: {step}", f"`{W}/send/msgpack#0`: {floor}",
        f"`{W}/send/msgpack#1`: {step + stands}", f"`{W}/send/msgpack#1`: {floor}",
        f"`{W}/send/msgpack#2`: {step}", f"`{W}/send/msgpack#2`: {floor}"]
    got = blocks._warning_blocks(results, 2)
    assert got[0] == ("h", 2, "Measurement warnings")
    assert got[-1] == ("p", "The lines on a trace replay arm's repetitions "
                            "(`step_ns_rep_block_cv`, `floor_step_ns_rep_block_cv`) are the "
                            "report's, not the run's: each 50-step block's mean compared "
                            "across the repetitions of one schedule, over 10 % in that arm; "
                            "the repetition that stands out, where one does, is named, and "
                            "the findings give every arm's figures.")
    assert findings._noise_findings(results.cases, added) == [
        "3 of 12 cases carry measurement warnings on their steps: their times, and the "
        "intervals and verdicts drawn from them, are less certain than the figures alone "
        "say (all listed under Measurement warnings); bytes are exact whatever the load."]
    # a quiet replay adds none, and its count stays empty
    quiet = _results({k: QUIET for k in ARMS})
    assert noisy_arm_warnings(quiet) == {}
    assert findings._noise_findings(quiet.cases, {}) == []


def test_a_noisy_floor_alone_is_counted_as_one():
    from ipc_bench.report import findings

    results = _results({("cached", "msgpack"): QUIET})
    # the floor's blocks alone vary: every block of repetition 2 at 1.5x; blocks 2 and
    # 3 then [20, 20, 30] k: sd 5.77 over 23.3 = 24.7 %, the median
    results.floor.loc[results.floor["case_id"] == f"{W}/cached/msgpack#2",
                      "floor_step_ns"] *= 1.5
    [arm] = repetition_noise(results)
    assert arm["step_ns_rep_block_cv"] == 0.0 and arm["floor_step_ns_rep_block_cv"] > 0.1
    assert replay_noise_findings(results)[0].endswith(
        ": over the 10 % that marks noise in `cached/msgpack` (its floor's 24.7 %): the "
        "machine may be noisy, and its floor with it.")
    added = noisy_arm_warnings(results)
    assert list(added) == [f"{W}/cached/msgpack#{r}" for r in range(3)]
    assert findings._noise_findings(results.cases, added) == [
        "3 of 3 cases have a noisy floor alone: their x floor and floor tok/s are less "
        "certain, their times not (all listed under Measurement warnings); bytes are exact "
        "whatever the load."]


def test_a_case_without_steps_rows_is_left_out_or_named():
    one = {("send", "msgpack"): QUIET}
    gone = f"{W}/send/msgpack#2"
    [arm] = repetition_noise(_results(one, drop=[gone]))
    assert (arm["why"], arm["compared"], arm["missing_steps"]) == (None, 2, [gone])
    # [100, 105] k: sd 3.54 over 102.5 = 3.4 %; then 0, 0
    assert replay_noise_findings(_results(one, drop=[gone])) == [
        HEAD + "across the 2 repetitions of its arm-codec pair, which ran the same "
        "schedule (one `schedule_digest`), a 50-step block's mean step time varied by a "
        "median 0.0 % (CV across repetitions, `step_ns_rep_block_cv`), its floor's by a "
        "median 0.0 % (`floor_step_ns_rep_block_cv`) (steps.csv lacks the counted rows of "
        "`trace=azure-conv:30/send/msgpack#2`: left out): under the 10 % that marks "
        "noise."]
    two = [f"{W}/send/msgpack#1", gone]
    assert replay_noise_findings(_results(one, drop=two)) == [
        HEAD + "the machine's own share cannot be measured: steps.csv lacks the counted "
        "rows of `trace=azure-conv:30/send/msgpack#1`, `trace=azure-conv:30/send/msgpack#2`, "
        "which leaves fewer than the 2 repetitions the measure compares."]


def test_why_the_floor_figure_is_absent():
    one = {("send", "msgpack"): QUIET}
    tail = (", a 50-step block's mean step time varied by a median 0.0 % (CV across "
            "repetitions, `step_ns_rep_block_cv`), no floor figure: {}: under the 10 % "
            "that marks noise.")
    assert replay_noise_findings(_results(one, floor=False))[0].endswith(tail.format(
        "floor.csv holds no rows for its cases (their floor replays cut short, or the "
        "rows removed)"))
    assert replay_noise_findings(_results(one, floor=False, no_floor=True))[0].endswith(
        tail.format("the run's --no-floor left its cases without a floor"))
    short = _results(one)
    short.floor = short.floor[short.floor["i"] < 120]
    assert replay_noise_findings(short)[0].endswith(tail.format(
        "fewer than 150 floor steps (3 blocks of 50)"))


def test_a_logical_clock_replay_whose_digests_differ_is_not_called_timed():
    one = {("send", "msgpack"): QUIET}
    logical = _results(one)
    logical.cases["schedule_digest"] = ["a", "b", "a"]
    assert replay_noise_findings(logical) == [
        HEAD + "the machine's own share cannot be measured: their `schedule_digest` "
        "differs although they replayed on the logical clock: the schedules should be "
        "equal; a hand-edited summary or a harness bug."]
    timed = _results(one, trace_speedup=10.0)
    timed.cases["schedule_digest"] = ["a", "b", "a"]
    assert replay_noise_findings(timed) == [
        HEAD + "the machine's own share cannot be measured: its repetitions ran different "
        "schedules (`schedule_digest` differs, as a timed replay's do: its batches follow "
        "the wall clock)."]


def test_a_replay_under_150_steps_says_why():
    short = _results({("cached", "msgpack"): [(100_000, 200_000)] * 2},
                     step_ns_block_cv=None)
    assert replay_noise_findings(short) == [
        "On `trace=azure-conv:30` the step times vary with the trace's batches (no case "
        "recorded a `step_ns_block_cv`); the machine's own share cannot be measured: fewer "
        "than 150 counted steps (3 blocks of 50)."]
    # a streamed replay (no step rows, no block CV) still gets no line
    short.steps = short.steps.iloc[0:0]
    assert replay_noise_findings(short) == []
