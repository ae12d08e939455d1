"""Stalled steps of a trace replay (``analysis.replay_stall``): each counted step is
judged against the median step of the counted steps that scheduled as many tokens (to
within a power of 2), so many medium stalls, none long enough for the longest-step line,
still warn, and a replay's big prefills are not taken for stalls. Crafted step rows:
the figures, the warning line (logical and timed), the fold with the longest-step line,
and a normal replay that stays silent."""

from __future__ import annotations

import numpy as np

from ipc_bench.analysis.replay_stall import workload_bins, workload_stall_figures
from ipc_bench.analysis.summary import noise_warnings, stall_warnings, summarize_case
from ipc_bench.engine.config import ModelConfig, SchedulerConfig
from ipc_bench.harness.spec import SCHED_COLUMNS, CaseResult, CaseSpec, StepRows

#: (num_scheduled_tokens, step_ns) of the crafted counted steps, in order: 21 steps of 1
#: token (one of 0 tokens among them) of 0.1 ms, 3 of them stalled at 2 ms (20x); 21 of
#: 4-7 tokens of 0.2 ms, one at 1.9 ms (9.5x: not stalled); 2 of 2-3 tokens (a sparse
#: bin, judged against the 4-7 tokens' 0.2 ms), one at 2.5 ms (12.5x: stalled); 3 of
#: 2,000 tokens (a sparse bin with none above it: unjudged).
STEPS = ([(1, 100_000)] * 9 + [(1, 2_000_000)] * 3 + [(0, 100_000)] + [(1, 100_000)] * 8
         + [(4, 200_000)] * 10 + [(5, 1_900_000)] + [(7, 200_000)] * 10
         + [(2, 150_000), (3, 2_500_000)] + [(2000, 900_000)] * 3)
FIRST_SEQ = 100

STALL = ("4 counted steps took over 10x the median step of their workload (the counted "
         "steps that scheduled as many tokens, to within a power of 2), 45 % of the "
         "counted steps' time: stalls (the process did not run: stopped, preempted on a "
         "busy machine or paused with its VM), which the mean step, out tok/s and the "
         "comparisons hold; the longest, step 143 (steps.csv seq), took 2.5 ms, 12x its "
         "workload's median; out tok/s without them: 4,076")


def _arrays(steps=STEPS):
    tokens = np.array([t for t, _ in steps])
    step_ns = np.array([ns for _, ns in steps])
    seq = np.arange(FIRST_SEQ, FIRST_SEQ + len(steps))
    return tokens, step_ns, seq, np.ones(len(steps), dtype=np.int64)


def test_bins_are_powers_of_two_of_the_scheduled_tokens():
    assert workload_bins(np.array([0, 1, 2, 3, 4, 7, 8, 2047, 2048])).tolist() == [
        0, 0, 1, 1, 2, 2, 3, 10, 11]


def test_stalled_steps_are_judged_against_their_workloads_median():
    figures = workload_stall_figures(*_arrays())
    assert figures == dict(
        stalled_steps=4, stalled_step_share=8_500_000 / 19_050_000,
        stalled_step_ns_max=2_500_000.0, stalled_step_ns_max_seq=143,
        stalled_step_ns_max_ratio=12.5,
        output_tokens_per_s_without_stalled=43 / (10_550_000 / 1e9),
        step_ns_bin_ratio_max=20.0, stall_unjudged_steps=3)
    # a steady 1-token run of 0.1 ms steps: nothing stalled
    quiet = workload_stall_figures(*_arrays([(1, 100_000)] * 30))
    assert quiet == dict(stalled_steps=0, stalled_step_share=0.0, stalled_step_ns_max=None,
                         stalled_step_ns_max_seq=None, stalled_step_ns_max_ratio=None,
                         output_tokens_per_s_without_stalled=None, step_ns_bin_ratio_max=1.0,
                         stall_unjudged_steps=0)
    # fewer than 8 steps in every bin: nothing judged
    assert workload_stall_figures(*_arrays([(1, 100_000)] * 7))["step_ns_bin_ratio_max"] is None
    # a bin whose median step is 0 ns (a hand-made row): unjudged, not an infinite ratio
    zero = workload_stall_figures(*_arrays([(1, 0)] * 8 + [(1, 5)] + [(4, 100)] * 8))
    assert (zero["stalled_steps"], zero["step_ns_bin_ratio_max"],
            zero["stall_unjudged_steps"]) == (0, 1.0, 9)


def _summary(**extra):
    figures = workload_stall_figures(*_arrays())
    step_ns = np.array([ns for _, ns in STEPS], dtype=float)
    base = dict(trace="azure-conv:20", num_steps=len(STEPS),
                step_ns_median=float(np.median(step_ns)), step_ns_mean=float(step_ns.mean()),
                step_ns_max=2_500_000.0, step_ns_max_seq=143, **figures)
    return dict(base, **extra)


def test_a_replays_stalled_steps_warn_in_one_line():
    assert stall_warnings(_summary()) == [STALL]
    assert STALL in noise_warnings(_summary())
    (timed,) = stall_warnings(_summary(trace_speedup=4.0))
    assert timed == STALL.replace(
        ", out tok/s and the comparisons hold", " and the requests' latencies hold").replace(
        "; out tok/s without them: 4,076", "")
    one = _summary(stalled_steps=1, stalled_step_share=0.3)
    assert stall_warnings(one) == [
        "1 counted step took over 10x the median step of their workload (the counted "
        "steps that scheduled as many tokens, to within a power of 2), 30 % of the counted "
        "steps' time: a stall (the process did not run: stopped, preempted on a busy "
        "machine or paused with its VM), which the mean step, out tok/s and the "
        "comparisons hold; step 143 (steps.csv seq) took 2.5 ms, 12x its workload's "
        "median; out tok/s without it: 4,076"]
    # over 5 % of the counted steps' time, not at it
    assert stall_warnings(_summary(stalled_step_share=0.05)) == []
    assert len(stall_warnings(_summary(stalled_step_share=0.0501))) == 1
    # a steady case, and a summary written before these figures, get none
    assert stall_warnings(dict(_summary(), stalled_steps=None, stalled_step_share=None)) == []


def test_the_longest_step_is_named_once():
    # the longest step over 100 medians and 5 % of the time, and stalled: one line
    big = _summary(step_ns_max=2_500_000.0, step_ns_median=20_000.0)
    assert stall_warnings(big) == [STALL]
    # the longest step is not the longest stalled one (unjudged): both lines
    other = dict(big, step_ns_max_seq=146)
    lines = stall_warnings(other)
    assert lines[0] == STALL and len(lines) == 2
    assert lines[1].startswith("counted step 146 (steps.csv seq) took 2.5 ms, 125x the "
                               "median step, 13 % of the counted steps' time: a stall")


def _replay_result(steps, trace_speedup=None) -> CaseResult:
    spec = CaseSpec(scenario="azure-conv", labels={"trace": "azure-conv:20"}, policy="send",
                    codec="msgpack", scheduler=SchedulerConfig(), model=ModelConfig(seed=0),
                    make_workload=lambda: None, warmup_steps=2, max_steps=None, count="all",
                    trace_speedup=trace_speedup)
    col = {name: i for i, name in enumerate(SCHED_COLUMNS)}
    rows, t = StepRows(), 0
    for seq, (tokens, step_ns) in enumerate([(1, 100_000)] * 2 + steps):
        row = [0] * len(SCHED_COLUMNS)
        t += step_ns + 1_000
        warm = seq < 2
        row[col["seq"]], row[col["step"]], row[col["warmup"]] = seq, seq, int(warm)
        row[col["counted"]], row[col["num_reqs"]] = int(not warm), 1
        row[col["num_scheduled_tokens"]], row[col["num_output_tokens"]] = tokens, 1
        row[col["step_ns"]], row[col["t_end_ns"]] = step_ns, t
        rows.append(row)
    return CaseResult(spec=spec, sched_rows=rows, wall_s=t / 1e9)


def test_a_normal_replays_summary_has_no_stall_warning():
    # prefills of 1,500-2,000 tokens 5-7x a decode's time, decodes of 1-12 requests,
    # each within 1.2x of its workload's median: no step stalled
    steps = ([(1, 100_000), (1, 120_000), (2, 110_000), (3, 140_000)] * 30
             + [(2000, 500_000), (1500, 700_000)] * 5 + [(12, 150_000)] * 10)
    summary = summarize_case(_replay_result(steps))
    assert (summary["stalled_steps"], summary["stalled_step_share"],
            summary["stalled_step_ns_max_seq"], summary["step_ns_bin_ratio_max"],
            summary["stall_unjudged_steps"]) == (0, 0.0, None, 700_000 / 600_000, 0)
    assert not any("stall" in w for w in noise_warnings(summary))
    # the same replay with 9 steps stalled at 3 ms (every 16th: 1-token steps of 0.1 ms
    # and one 2,000-token prefill, each now 1 token): warned, with its figures
    stalled = [(1, 3_000_000) if i % 16 == 0 else s for i, s in enumerate(steps)]
    summary = summarize_case(_replay_result(stalled))
    assert (summary["stalled_steps"], summary["stalled_step_ns_max_seq"],
            summary["stalled_step_ns_max_ratio"]) == (9, 2, 25.0)
    assert noise_warnings(summary)[0] == (
        "9 counted steps took over 10x the median step of their workload (the counted "
        "steps that scheduled as many tokens, to within a power of 2), 57 % of the "
        "counted steps' time: stalls (the process did not run: stopped, preempted on a "
        "busy machine or paused with its VM), which the mean step, out tok/s and the "
        "comparisons hold; the longest, step 2 (steps.csv seq), took 3.0 ms, 25x its "
        "workload's median; out tok/s without them: 6,453")


def test_a_steady_case_gets_no_workload_figures():
    result = _replay_result([(4, 100_000)] * 30)
    result.spec.labels = {"num_running": 4}
    assert "stalled_steps" not in summarize_case(result)
