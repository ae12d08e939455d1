"""``stats.welch_ratio``: the unpaired ratio of geometric means of two samples and the
Welch t interval of their mean logs, as scipy computes it."""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import ttest_ind

from ipc_bench.analysis.stats import welch_ratio


def test_it_is_scipys_welch_interval_of_the_logs():
    base, treat = [1000.0, 1010.0, 990.0], [1200.0, 1212.0, 1195.0, 1230.0]
    ci = ttest_ind(np.log(treat), np.log(base), equal_var=False).confidence_interval(0.95)
    ratio, low, high = welch_ratio(base, treat)
    assert math.isclose(ratio, math.exp(np.log(treat).mean() - np.log(base).mean()))
    assert math.isclose(low, math.exp(ci.low)) and math.isclose(high, math.exp(ci.high))
    assert (round(low, 6), round(high, 6)) == (1.182605, 1.236424)


def test_other_confidence_levels_follow_scipy():
    base, treat = [10.0, 12.0, 11.0], [13.0, 11.5, 14.0]
    ci = ttest_ind(np.log(treat), np.log(base), equal_var=False).confidence_interval(0.9)
    _, low, high = welch_ratio(base, treat, 0.9)
    assert math.isclose(low, math.exp(ci.low)) and math.isclose(high, math.exp(ci.high))


def test_short_zero_and_spreadless_samples():
    one = welch_ratio([2.0], [3.0, 3.3])
    assert math.isclose(one[0], math.sqrt(3.0 * 3.3) / 2.0)
    assert math.isnan(one[1]) and math.isnan(one[2])
    same = welch_ratio([402.0, 402.0, 402.0], [400.0, 400.0, None, math.nan])
    assert math.isclose(same[0], 400.0 / 402.0) and math.isnan(same[1])
    assert all(math.isnan(v) for v in welch_ratio([0.0, 2.0], [3.0, 3.0]))
    assert all(math.isnan(v) for v in welch_ratio([], [3.0, 3.0]))
    # one sample of equal values: the other's spread alone, its n - 1 degrees of freedom
    _, low, high = welch_ratio([2.0, 2.0], [3.0, 3.3])
    half = 12.706204736174707 * np.log([3.0, 3.3]).std(ddof=1) / math.sqrt(2)
    assert math.isclose(low, math.sqrt(3.0 * 3.3) / 2.0 * math.exp(-half))
    assert math.isclose(high, math.sqrt(3.0 * 3.3) / 2.0 * math.exp(half))
