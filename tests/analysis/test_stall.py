"""A counted step that stalled (the process stopped for a few seconds, under
``--peer-timeout``, or a VM paused it): ``step_ns_max`` and its ``seq``, out tok/s
without it, and the warning that names it, which the 50-step spread alone would leave
as the noise every case of a busy machine may carry. A stop between two steps is the
loop's time between its timed steps, warned of as such."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd

from analysis_run import REPO
from ipc_bench.analysis.summary import noise_warnings, stall_warnings


def test_a_stalled_step_is_named_with_the_figures_without_it():
    case = dict(num_steps=20_000, step_ns_median=400_000.0, step_ns_mean=700_000.0,
                step_ns_max=6_020_000_000.0, step_ns_max_seq=9448,
                output_tokens_per_s_without_longest=41_210.4)
    line = ("counted step 9448 (steps.csv seq) took 6.02 s, 15,050x the median step, 43 % "
            "of the counted steps' time: a stall (the process did not run: stopped, "
            "preempted on a busy machine or paused with its VM), which the mean step, out "
            "tok/s and the comparisons hold; out tok/s without it: 41,210")
    assert stall_warnings(case) == [line]
    assert line in noise_warnings(case)
    # over 100 median steps and over 5 % of the counted steps' time, both: 200 steps of
    # a mean 1 ms, a median 0.1 ms (a 5 % share is 10 ms)
    short = dict(num_steps=200, step_ns_median=100_000.0, step_ns_mean=1_000_000.0)
    assert len(stall_warnings(dict(short, step_ns_max=10_100_000.0))) == 1  # 101x, 5.05 %
    assert stall_warnings(dict(short, step_ns_max=9_900_000.0)) == []  # 4.95 %
    assert stall_warnings(dict(short, step_ns_median=102_000.0,
                               step_ns_max=10_100_000.0)) == []  # 99x
    # a GC pause (25 median steps, 0.07 % of the time); summaries written before
    assert stall_warnings(dict(case, step_ns_max=10_000_000.0)) == []
    # a timed replay: its tokens/s is over wall time, which the stall barely moves
    (timed,) = stall_warnings(dict(case, trace_speedup=10.0))
    assert timed.endswith("paused with its VM), which the mean step and the requests' "
                          "latencies hold")
    assert stall_warnings({k: v for k, v in case.items() if k != "step_ns_max"}) == []


def test_a_stall_between_two_steps_is_named_with_the_loops_rate():
    case = dict(num_steps=20_000, step_ns_median=400_000.0, step_ns_mean=410_000.0,
                loop_steps=20_010, loop_step_ns_mean=520_000.0, loop_output_tokens_per_s=7_690.6,
                between_steps_ns_max=2_004_000_000.0, between_steps_ns_max_seq=5120)
    line = ("the scheduler loop stood still for 2.00 s before step 5120 (steps.csv seq), "
            "19 % of its time: a stall (the process did not run: stopped, preempted on a "
            "busy machine or paused with its VM) between two steps, which out tok/s, over "
            "the steps' time, leaves out; over the loop's wall time it was 7,691 tok/s")
    assert stall_warnings(case) == [line]
    assert line in noise_warnings(case)
    assert stall_warnings(dict(case, between_steps_ns_max=150_000_000.0)) == []  # 1.4 %


def test_a_run_stopped_for_two_seconds_warns_of_that_step(tmp_path):
    run = tmp_path / "r"
    proc = subprocess.Popen(
        # steps of at least 1 ms (a sleep): 5 s of steps at least, so the stop, once
        # the first periodic flush is written (1 s in), lands before the last of them
        # with 4 s to spare for this process to see that flush on a loaded machine
        # (with 2 s of 0.2 ms steps, a CI run at a load of 4 stopped the scheduler after
        # its last step; null-model steps of ~60 µs could end 20,000 before that flush)
        [sys.executable, "bench.py", "--scenario", "decode-steady", "--num-running", "4",
         "--steps", "5000", "--warmup-steps", "10", "--codecs", "msgpack", "--policies",
         "send", "--no-single-process", "--no-floor", "--model", "fixed-step",
         "--step-time-ms", "1", "--step-wait", "sleep", "--output", str(run)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        partial = run / "steps.partial.csv"
        deadline = time.monotonic() + 60
        while not (partial.exists() and partial.stat().st_size > 0):  # counted steps run
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGSTOP)
        time.sleep(2.0)
        os.kill(proc.pid, signal.SIGCONT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    (case,) = json.loads((run / "summary.json").read_text())["cases"]
    steps = pd.read_csv(run / "steps.csv")
    counted = steps[steps["counted"] == 1]
    longest = counted.loc[counted["step_ns"].idxmax()]
    assert (case["step_ns_max"], case["step_ns_max_seq"]) == (
        float(longest["step_ns"]), int(longest["seq"]))
    rest = counted.drop(index=longest.name)
    assert abs(case["output_tokens_per_s_without_longest"]
               - rest["num_output_tokens"].sum() / (rest["step_ns"].sum() / 1e9)) < 1e-6
    rows = steps[steps["seq"] >= 10]
    gaps = (rows["t_end_ns"] - rows["step_ns"]).to_numpy()[1:] - rows["t_end_ns"].to_numpy()[:-1]
    assert (case["between_steps_ns_max"], case["between_steps_ns_max_seq"]) == (
        float(gaps.max()), int(rows["seq"].to_numpy()[1:][gaps.argmax()]))
    if case["step_ns_max"] > 1.9e9:  # the stop came in a step: that step is named
        assert any(w.startswith(f"counted step {int(longest['seq'])} (steps.csv seq) took ")
                   for w in case["warnings"]), case["warnings"]
    else:  # between two steps (the recording's): the gap before the next is named
        assert case["between_steps_ns_max"] > 1.9e9
        assert any(w.startswith("the scheduler loop stood still for ") and
                   f"before step {case['between_steps_ns_max_seq']} " in w
                   for w in case["warnings"]), case["warnings"]
