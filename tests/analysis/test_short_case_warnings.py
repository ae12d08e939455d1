"""A case of fewer counted steps than the step-time noise check needs (3 blocks of 50
for ``step_ns_block_cv``) says that its noise is not measured, with its mean step over
its median from 100 steps on, where its figures are not called rough; under 100 the
rough line says it too. A trace replay, whose block CV is no noise measure, keeps the
rough line alone; a steady case of 150 steps or more warns as before."""

from __future__ import annotations

import json

from analysis_run import run_bench
from ipc_bench import cli
from ipc_bench.analysis.summary import (NOISE_MIN_STEPS, STEP_BLOCK, noise_warnings,
                                        short_case_warning)

MEDIAN = 100_000.0  # ns


def _steady(n: int, mean_over_median: float = 1.0, **more) -> dict:
    return dict(num_steps=n, step_ns_median=MEDIAN, step_ns_mean=MEDIAN * mean_over_median,
                **more)


def test_the_threshold_is_the_block_cvs_three_blocks():
    assert (NOISE_MIN_STEPS, STEP_BLOCK) == (150, 50)


def test_a_steady_case_of_120_steps_with_a_few_huge_steps_says_its_noise_is_unmeasured():
    # the user's case: mean step 2.89 medians, the longest 88 (under the stall's 100)
    summary = _steady(120, 2.89, step_ns_max=88 * MEDIAN, step_ns_max_seq=70)
    assert noise_warnings(summary) == [
        "only 120 counted steps (< 150: 3 blocks of 50): step-time noise not measured "
        "(mean step 2.89x the median)"]


def test_the_bounds_of_the_unmeasured_range():
    assert noise_warnings(_steady(100, 1.0)) == [
        "only 100 counted steps (< 150: 3 blocks of 50): step-time noise not measured "
        "(mean step 1.00x the median)"]
    assert noise_warnings(_steady(149, 1.234)) == [
        "only 149 counted steps (< 150: 3 blocks of 50): step-time noise not measured "
        "(mean step 1.23x the median)"]
    # 150 steps: the block CV is there, and a mean over 1.5 medians warns on its own
    skewed = ("the mean step is 2.89x the median (289.0 against 100.0 µs, > 1.5x): long "
              "steps spread through the case raise its mean and lower its tok/s: the "
              "machine may be noisy")
    assert noise_warnings(_steady(150, 2.89, step_ns_block_cv=0.05)) == [skewed]
    assert noise_warnings(_steady(150, 1.5, step_ns_block_cv=0.05)) == []
    assert noise_warnings(_steady(150, 2.89, step_ns_block_cv=0.125)) == [
        "the standard deviation of 50-step mean step times is 12.5 % of their mean "
        "(> 10 %): the machine may be noisy", skewed]


def test_without_its_step_times_the_line_gives_no_ratio():
    assert noise_warnings({"num_steps": 120}) == [
        "only 120 counted steps (< 150: 3 blocks of 50): step-time noise not measured"]


def test_a_steady_case_under_100_steps_is_rough_and_unmeasured_in_one_line():
    assert noise_warnings(_steady(40, 3.0)) == [
        "only 40 counted steps (< 100): step-time noise not measured (under 150: 3 blocks "
        "of 50) and figures are rough"]
    assert noise_warnings({"num_steps": 1}) == [
        "only 1 counted step (< 100): step-time noise not measured (under 150: 3 blocks "
        "of 50) and figures are rough"]


def test_a_trace_replay_keeps_the_rough_line_alone():
    replay = dict(trace="azure-conv:300")
    assert noise_warnings(_steady(40, 3.0, **replay)) == [
        "only 40 counted steps (< 100): figures are rough"]
    assert noise_warnings(_steady(120, 3.0, **replay)) == []
    assert short_case_warning(_steady(120, 3.0, **replay)) is None


def test_no_line_without_counted_steps_or_with_totals_only():
    assert short_case_warning({"num_steps": 0}) is None
    assert short_case_warning({}) is None
    assert noise_warnings({"num_steps": 0, "instrumentation": "totals"}) == []


def test_a_run_of_120_steps_warns_in_its_summary_and_its_report(tmp_path):
    run = tmp_path / "run"
    run_bench(run, ["--scenario", "decode-steady", "--num-running", "4", "--steps", "120",
                    "--codecs", "msgpack", "--no-single-process", "--policies", "send"])
    (case,) = json.loads((run / "summary.json").read_text())["cases"]
    assert case["num_steps"] == 120 and case["step_ns_block_cv"] is None
    ratio = case["step_ns_mean"] / case["step_ns_median"]
    line = ("only 120 counted steps (< 150: 3 blocks of 50): step-time noise not measured "
            f"(mean step {ratio:.2f}x the median)")
    assert case["warnings"][0] == line
    out = tmp_path / "rep"
    assert cli.main(["report", str(run), "--output", str(out), "--no-figures"]) == 0
    md = (out / "report.md").read_text().splitlines()
    assert f"- `{case['case_id']}`: {line}" in md
