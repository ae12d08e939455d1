"""Paired comparison statistics on synthetic samples whose answers are known."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipc_bench import stats

# Student's t quantiles t_{df, 0.975} from printed tables (e.g. Fisher & Yates).
T975 = {3: 3.182, 4: 2.776, 9: 2.262}


def test_median_iqr_type7():
    med, iqr = stats.median_iqr([1, 2, 3, 4, 5, 6, 7, 8])
    assert med == 4.5
    assert iqr == pytest.approx(6.25 - 2.75)  # type-7 quartiles 2.75 and 6.25
    with pytest.raises(ValueError, match="empty"):
        stats.median_iqr([])


def test_t_interval_by_hand():
    # mean 3, s = sqrt(2.5), n = 5: half-width = t_{4,.975} * sqrt(2.5 / 5)
    mean, lo, hi = stats.t_interval([1, 2, 3, 4, 5])
    half = T975[4] * math.sqrt(0.5)
    assert mean == 3.0
    assert lo == pytest.approx(3 - half, abs=1e-3)
    assert hi == pytest.approx(3 + half, abs=1e-3)
    with pytest.raises(ValueError, match="at least 2 values, got 1"):
        stats.t_interval([1.0])


def test_ratio_interval_by_hand():
    # log ratios -0.1, +0.1, -0.05, +0.05: mean 0, s = sqrt(0.025 / 3), n = 4
    base = [100.0, 200.0, 300.0, 400.0]
    logs = [-0.1, 0.1, -0.05, 0.05]
    treat = [b * math.exp(x) for b, x in zip(base, logs)]
    cmp = stats.compare_paired(base, treat, baseline_name="send", treatment_name="send'")
    half = T975[3] * math.sqrt(0.025 / 3) / 2
    assert cmp.ratio_geomean == pytest.approx(1.0)
    assert cmp.ratio_ci_low == pytest.approx(math.exp(-half), abs=1e-3)
    assert cmp.ratio_ci_high == pytest.approx(math.exp(half), abs=1e-3)
    assert cmp.ratio_ci_low < 1.0 < cmp.ratio_ci_high
    assert cmp.significant is False
    assert cmp.verdict == "no significant difference"


def test_constant_ratio():
    cmp = stats.compare_paired([100.0] * 5, [80.0] * 5, baseline_name="send",
                               treatment_name="cached")
    assert cmp.ratio_median == pytest.approx(0.8)
    assert (cmp.ratio_ci_low, cmp.ratio_ci_high) == pytest.approx((0.8, 0.8))
    assert cmp.diff_mean == pytest.approx(20.0)
    assert (cmp.diff_ci_low, cmp.diff_ci_high) == pytest.approx((20.0, 20.0))
    assert cmp.diff_half_width == pytest.approx(0.0)
    assert cmp.significant is True
    assert cmp.verdict == "significant: cached 20.0 % lower than send"


def test_identical_samples_are_no_difference():
    rng = np.random.default_rng(3)
    a = rng.normal(1000, 50, size=10)
    for method in stats.METHODS:
        cmp = stats.compare_paired(a, a.copy(), method=method)
        assert cmp.ratio_median == 1.0
        assert (cmp.ratio_ci_low, cmp.ratio_ci_high) == (1.0, 1.0)
        assert cmp.significant is False
        assert cmp.verdict == stats.NO_DIFFERENCE


def test_paired_difference_t_interval():
    base = [10.0, 12.0, 11.0, 13.0, 14.0, 10.0, 12.0, 11.0, 13.0, 14.0]
    treat = [b - d for b, d in zip(base, [1, 2, 3, 1, 2, 3, 1, 2, 3, 2])]
    cmp = stats.compare_paired(base, treat)
    d = np.array([1, 2, 3, 1, 2, 3, 1, 2, 3, 2], dtype=float)
    half = T975[9] * d.std(ddof=1) / math.sqrt(10)
    assert cmp.diff_mean == pytest.approx(2.0)
    assert cmp.diff_ci_low == pytest.approx(2.0 - half, abs=1e-3)
    assert cmp.diff_ci_high == pytest.approx(2.0 + half, abs=1e-3)


def test_sign_interval_by_hand():
    # n = 6: P(B <= 0) = 1/64 <= 0.025 < P(B <= 1) = 7/64, so [x(1), x(6)]
    assert stats.sign_interval([5, 1, 4, 2, 6, 3]) == (3.5, 1.0, 6.0)
    # n = 30: P(B <= 9) = 0.0214 <= 0.025 < P(B <= 10) = 0.0494, so [x(10), x(21)]
    values = list(range(1, 31))
    assert stats.sign_interval(values) == (15.5, 10.0, 21.0)
    # one wild value does not move it
    assert stats.sign_interval(values[:-1] + [1e9])[1:] == (10.0, 21.0)
    with pytest.raises(ValueError, match="95% sign-test interval needs more values, got 5"):
        stats.sign_interval([1, 2, 3, 4, 5])
    assert stats.min_pairs("sign") == 6 and stats.min_pairs("t") == 2
    cmp = stats.compare_paired([100.0] * 5, [90.0] * 5, method="sign")
    assert cmp.significant is None
    assert cmp.verdict == "too few repetitions for an interval (use --repeat 6 or more)"


def test_one_pair_has_no_interval():
    cmp = stats.compare_paired([100.0], [90.0])
    assert cmp.significant is None
    assert cmp.ratio_ci_low is None and cmp.diff_ci_low is None
    assert cmp.verdict == "too few repetitions for an interval (use --repeat 2 or more)"


def test_bootstrap_is_deterministic_and_brackets_the_median():
    rng = np.random.default_rng(0)
    values = rng.lognormal(0, 0.1, size=12)
    first = stats.bootstrap_median_interval(values)
    assert stats.bootstrap_median_interval(values) == first
    med, lo, hi = first
    assert med == pytest.approx(float(np.median(values)))
    assert lo <= med <= hi


def test_bad_input():
    with pytest.raises(ValueError, match="equal length, got 2 and 3"):
        stats.compare_paired([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="unknown interval method 'z'"):
        stats.compare_paired([1, 2], [1, 2], method="z")


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(1.0, 1e6), min_size=2, max_size=20), st.floats(0.1, 10.0))
def test_scaled_copy_gives_its_scale(base, scale):
    cmp = stats.compare_paired(base, [b * scale for b in base])
    assert cmp.ratio_median == pytest.approx(scale)
    assert cmp.ratio_ci_low == pytest.approx(scale)
    assert cmp.ratio_ci_high == pytest.approx(scale)
    assert cmp.significant == (not cmp.ratio_ci_low <= 1.0 <= cmp.ratio_ci_high)


def _summary(arm, rep, step_ns, codec="msgpack", workload="num_running=256"):
    return dict(scenario="decode-steady", workload=workload, codec=codec, policy=arm.rstrip("'"),
                arm=arm, repetition=rep, complete=True, num_steps=100, step_ns_mean=step_ns)


def test_compare_cases_pairs_by_repetition():
    summaries = []
    for rep, (a, b) in enumerate([(100.0, 80.0), (110.0, 88.0), (90.0, 72.0)]):
        summaries += [_summary("send", rep, a), _summary("cached", rep, b)]
    summaries.append(_summary("send", 3, 500.0))  # unpaired: left out
    out = stats.compare_cases(summaries, metrics=[("step_ns_mean", "ns")])
    assert len(out) == 1
    entry = out[0]
    assert (entry["baseline"], entry["treatment"], entry["n_pairs"]) == ("send", "cached", 3)
    m = entry["metrics"]["step_ns_mean"]
    assert m["ratio_median"] == pytest.approx(0.8)
    assert m["significant"] is True
    assert m["unit"] == "ns"
    assert m["diff_mean"] == pytest.approx(20.0)
