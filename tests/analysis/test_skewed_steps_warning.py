"""A case of 150 counted steps or more whose mean step is over 1.5 times its median
warns, whatever its 50-step block CV: long steps spread evenly through a case raise
its mean (and cut its tok/s) while its block means stay alike. The trial's case:
cached at 64 running, mean 462.9 µs, median 234.9 µs, block CV 7.4 %, no warning."""

from __future__ import annotations

import math

from ipc_bench.analysis.summary import (SKEWED_STEP_RATIO, noise_warnings,
                                        skewed_steps_warning, step_spread_warnings)

TRIAL = dict(case_id="num_running=64/cached/msgpack#0", num_steps=300, num_running=64,
             step_ns_mean=462_853.97, step_ns_median=234_906.0, step_ns_block_cv=0.074)
TRIAL_LINE = ("the mean step is 1.97x the median (462.9 against 234.9 µs, > 1.5x): long "
              "steps spread through the case raise its mean and lower its tok/s: the "
              "machine may be noisy")


def test_the_trials_case_warns_with_its_ratio():
    assert SKEWED_STEP_RATIO == 1.5
    assert noise_warnings(TRIAL) == [TRIAL_LINE]
    assert step_spread_warnings(TRIAL) == [TRIAL_LINE]


def test_the_line_ends_as_the_other_noise_warnings_do():
    assert TRIAL_LINE.endswith("may be noisy")


def test_with_a_noisy_block_cv_both_lines_are_given():
    assert noise_warnings(dict(TRIAL, step_ns_block_cv=0.2)) == [
        "the standard deviation of 50-step mean step times is 20.0 % of their mean "
        "(> 10 %): the machine may be noisy", TRIAL_LINE]


def test_the_bound_and_the_ratio_printed_above_it():
    base = dict(num_steps=1000, step_ns_median=100_000.0, step_ns_block_cv=0.01)
    assert skewed_steps_warning(dict(base, step_ns_mean=150_000.0)) is None
    assert skewed_steps_warning(dict(base, step_ns_mean=150_400.0)) == (
        "the mean step is 1.504x the median (150.4 against 100.0 µs, > 1.5x): long steps "
        "spread through the case raise its mean and lower its tok/s: the machine may be "
        "noisy")
    assert skewed_steps_warning(dict(base, step_ns_mean=1_234_567.0)) == (
        "the mean step is 12.35x the median (1,234.6 against 100.0 µs, > 1.5x): long "
        "steps spread through the case raise its mean and lower its tok/s: the machine "
        "may be noisy")
    # quiet steady cases measured on a loaded 2-core machine gave at most 1.16x
    assert skewed_steps_warning(dict(base, step_ns_mean=116_000.0)) is None


def test_replays_bare_loops_short_cases_and_missing_figures_are_left_out():
    assert skewed_steps_warning(dict(TRIAL, trace="azure-conv:300")) is None
    assert noise_warnings(dict(TRIAL, trace="azure-conv:300")) == []
    assert skewed_steps_warning(dict(TRIAL, instrumentation="totals")) is None
    assert skewed_steps_warning(dict(TRIAL, num_steps=149)) is None
    # under 150 steps the short case's line gives the ratio, once
    assert noise_warnings(dict(TRIAL, num_steps=149)) == [
        "only 149 counted steps (< 150: 3 blocks of 50): step-time noise not measured "
        "(mean step 1.97x the median)"]
    assert skewed_steps_warning(dict(TRIAL, step_ns_median=math.nan)) is None
    assert skewed_steps_warning(dict(TRIAL, step_ns_median=0.0)) is None
    assert skewed_steps_warning({k: v for k, v in TRIAL.items() if k != "step_ns_mean"}) \
        is None
