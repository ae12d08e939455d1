"""A noisy floor (its 50-step mean floor step times spread over 10 % of their mean) is
warned about with the case, in the step-time noise warning's style; a steady one is not."""

from __future__ import annotations

import numpy as np

from ipc_bench.analysis.summary import (NOISY_FLOOR_BLOCK_CV, floor_figures,
                                        floor_noise_warning, noise_warnings)

#: 200 floor steps: four 50-step blocks of 50, 50, 100 and 50 µs (block means 62.5 µs
#: on average, standard deviation 25 µs: 40 %).
NOISY = np.repeat([50_000, 50_000, 100_000, 50_000], 50).astype(np.int64)
#: 200 floor steps alternating 50 and 52 µs: every block's mean is 51 µs.
STEADY = np.tile([50_000, 52_000], 100).astype(np.int64)
NOISY_WARNING = ("the standard deviation of 50-step mean floor step times is 40.0 % of "
                 "their mean (> 10 %): the machine may be noisy, and the floor tok/s and "
                 "x floor with it")


def _case(floor_step_ns: np.ndarray) -> dict:
    """A two-process case of 200 counted steps of 100 µs, 800 output tokens, with the
    floor figures ``summarize_case`` writes for floor rows ``floor_step_ns``."""
    return dict(num_steps=200, step_ns_block_cv=0.01,
                **floor_figures(floor_step_ns, 800, 200 * 100_000))


def test_a_noisy_floor_carries_the_warning():
    case = _case(NOISY)
    assert case["floor_step_ns_block_cv"] == 0.4
    assert case["floor_step_ns_median"] == 50_000.0  # the median alone hides it
    assert noise_warnings(case) == [NOISY_WARNING]


def test_a_steady_floor_carries_none():
    case = _case(STEADY)
    assert case["floor_step_ns_block_cv"] == 0.0
    assert noise_warnings(case) == []


def test_the_threshold_is_exclusive_and_printed_above_it():
    assert NOISY_FLOOR_BLOCK_CV == 0.10
    assert floor_noise_warning(dict(floor_step_ns_block_cv=0.10)) is None
    assert floor_noise_warning(dict(floor_step_ns_block_cv=0.1004)).startswith(
        "the standard deviation of 50-step mean floor step times is 10.04 % of their mean")


def test_a_case_without_a_floor_of_three_blocks_is_not_checked():
    short = _case(NOISY[:149])  # two whole blocks
    assert short["floor_step_ns_block_cv"] is None
    assert noise_warnings(short) == []
    assert floor_noise_warning({}) is None  # no floor (--no-floor, timed replays)


def test_both_noise_warnings_are_given_apart():
    case = dict(_case(NOISY), step_ns_block_cv=0.2)
    assert noise_warnings(case) == [
        "the standard deviation of 50-step mean step times is 20.0 % of their mean "
        "(> 10 %): the machine may be noisy", NOISY_WARNING]
