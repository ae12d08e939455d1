"""Paired comparison statistics on synthetic samples whose answers are known."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipc_bench.analysis import stats

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


# ---------------------------------------------------------------- pairs of a cases table


def _cases_table(rows):
    import pandas as pd

    return pd.DataFrame([dict(run_id="r", scenario="decode-steady", workload=f"num_running={b}",
                              num_running=b, codec="msgpack", transport="ipc", model="null",
                              complete=True, policy=arm.rstrip("'"), arm=arm, repetition=rep,
                              output_tokens_per_s=v)
                         for b, arm, rep, v in rows])


def test_mean_interval_known_answers():
    # mean 2, sd 1, n 3: half-width t_{2,.975} / sqrt(3) = 4.303 / 1.732
    m, lo, hi = stats.mean_interval([1.0, 2.0, None, 3.0, float("nan")])
    assert m == 2.0
    assert (lo, hi) == pytest.approx((2 - 4.303 / math.sqrt(3), 2 + 4.303 / math.sqrt(3)),
                                     abs=1e-3)
    m, lo, hi = stats.mean_interval([5.0])
    assert m == 5.0 and math.isnan(lo) and math.isnan(hi)
    assert all(math.isnan(v) for v in stats.mean_interval([]))


def test_paired_and_summarize_pairs_match_compare_paired():
    cases = _cases_table([(4, "send", 0, 100.0), (4, "cached", 0, 200.0),
                          (4, "cached", 1, 220.0), (4, "send", 1, 110.0),
                          (4, "send", 2, 90.0), (4, "cached", 2, 180.0),
                          (16, "send", 0, 10.0), (16, "cached", 0, 40.0),
                          (16, "send", 1, 10.0), (16, "cached", 1, 10.0),
                          (16, "send", 2, 50.0)])  # unpaired: left out
    assert list(stats.paired(cases, "output_tokens_per_s").columns) == [
        "run_id", "scenario", "workload", "codec", "transport", "model", "repetition", "send",
        "cached", "diff", "ratio"]  # no label columns unless named
    p = stats.paired(cases, "output_tokens_per_s", labels=["num_running", "not_a_column"])
    assert list(p.columns) == ["run_id", "scenario", "workload", "codec", "transport", "model",
                               "repetition", "send", "cached", "diff", "ratio", "num_running"]
    assert p[["num_running", "repetition", "send", "cached", "diff", "ratio"]].values.tolist() == [
        [4, 0, 100.0, 200.0, -100.0, 2.0], [4, 1, 110.0, 220.0, -110.0, 2.0],
        [4, 2, 90.0, 180.0, -90.0, 2.0], [16, 0, 10.0, 40.0, -30.0, 4.0],
        [16, 1, 10.0, 10.0, 0.0, 1.0]]
    b4, b16 = stats.summarize_pairs(p)
    assert (b4["workload"], b4["n"], b4["send"], b4["cached"]) == ("num_running=4", 3, 100.0, 200.0)
    assert (b4["ratio"], b4["ratio_low"], b4["ratio_high"]) == pytest.approx((2.0, 2.0, 2.0))
    assert b4["diff"] == pytest.approx(-100.0) and b4["significant"] is True
    assert b16["ratio"] == pytest.approx(2.0)  # geometric mean of 4 and 1
    cmp = stats.compare_paired([10.0, 10.0], [40.0, 10.0])
    assert (b16["ratio_low"], b16["ratio_high"]) == (cmp.ratio_ci_low, cmp.ratio_ci_high)
    assert (b16["diff_low"], b16["diff_high"]) == (cmp.diff_ci_low, cmp.diff_ci_high)
    assert b16["significant"] is False
    # the sign test needs 6 pairs: point estimates (medians) but no interval
    (s4, _) = stats.summarize_pairs(p, method="sign")
    assert s4["ratio"] == 2.0 and s4["diff"] == -100.0
    assert math.isnan(s4["ratio_low"]) and s4["significant"] is None
    assert stats.summarize_pairs(p.iloc[:0]) == []


def test_paired_pairs_arms_not_policies():
    # An A/A run has send and send' (both policy send): no send/cached pair, no error.
    aa = _cases_table([(4, "send", 0, 1.0), (4, "send'", 0, 1.1)])
    assert stats.paired(aa, "output_tokens_per_s").empty
    p = stats.paired(aa, "output_tokens_per_s", baseline="send", treatment="send'")
    assert p[["send", "cached"]].values.tolist() == [[1.0, 1.1]]
    # an incomplete case or a missing value leaves its pair out
    cases = _cases_table([(4, "send", 0, 1.0), (4, "cached", 0, 2.0),
                          (4, "send", 1, 1.0), (4, "cached", 1, float("nan"))])
    assert stats.paired(cases, "output_tokens_per_s")["repetition"].tolist() == [0]
    cases.loc[0, "complete"] = False
    assert stats.paired(cases, "output_tokens_per_s").empty
    assert stats.paired(cases, "no_such_metric").empty


def test_results_ci_method():
    assert stats.results_ci_method({"a": {"ci_method": "sign"}}) == "sign"
    assert stats.results_ci_method({"a": {}}) == "t"
    assert stats.results_ci_method({"a": {"ci_method": "sign"},
                                    "b": {"ci_method": "bootstrap"}}) == "t"
