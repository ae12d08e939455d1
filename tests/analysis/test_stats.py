"""Paired comparison statistics on synthetic samples whose answers are known."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
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
    # [-13.5, +15.6] %: too wide to see a 10 % difference, so no reassurance
    assert cmp.inconclusive is True
    assert cmp.verdict == ("inconclusive: the 95 % interval [-13.5, +15.6] % reaches beyond "
                           "1.1x either way: too few repetitions or too noisy to tell a 10 % "
                           "difference from none")


def test_a_narrow_interval_around_one_is_no_significant_difference():
    # the log ratios of test_ratio_interval_by_hand scaled by 1/10: [-1.4, +1.5] %
    base = [100.0, 200.0, 300.0, 400.0]
    treat = [b * math.exp(x) for b, x in zip(base, [-0.01, 0.01, -0.005, 0.005])]
    cmp = stats.compare_paired(base, treat, baseline_name="send", treatment_name="send'")
    assert 0.9 < cmp.ratio_ci_low < 1.0 < cmp.ratio_ci_high < 1.1
    assert cmp.significant is False and cmp.inconclusive is False
    assert cmp.verdict == "no significant difference"


def test_the_aa_check_of_two_repetitions_is_inconclusive_not_passed():
    # a user's A/A pair of 2 repetitions: tokens/s +54.8 % [-81.2, +1175.0] %
    c = stats.compare_paired([1000.0, 1000.0], [400.0, 5990.0], baseline_name="send",
                             treatment_name="send'")
    assert c.significant is False and c.inconclusive is True
    assert c.verdict.startswith("inconclusive: the 95 % interval [")
    assert c.verdict.endswith("] % reaches beyond 1.1x either way: too few repetitions or too noisy "
                              "to tell a 10 % difference from none")
    assert stats.verdict_of(dict(c.to_dict(), verdict="no significant difference")) \
        == c.verdict  # a summary written before the verdict existed reads the same


@pytest.mark.parametrize("low, high, wide", [
    (0.95, 1.05, False), (0.91, 1.1, False), (1 / 1.1, 1.1, False), (0.9, 1.1, True),
    (0.905, 1.0, True), (0.89, 1.01, True), (0.99, 1.11, True),
    (None, None, False), (math.nan, 1.0, False)])
def test_inconclusive_is_an_interval_beyond_a_factor_of_1_1_either_way(low, high, wide):
    # the band is [1/1.1, 1.1] = [0.9091, 1.1]: 0.9 is a change of -10 % one way but a
    # factor of 1.111 the other (1/0.9), beyond the band
    assert stats.inconclusive(low, high) is wide


def _near_edge(*ends: float) -> bool:
    """Whether any of ``ends`` lies within float rounding of the band's edges or of the
    null, 1 (where a ratio and its reciprocal may round to different sides)."""
    return any(abs(e - edge) < 1e-9 for e in ends for edge in (1 / 1.1, 1.0, 1.1))


@given(st.floats(-0.5, 0.5), st.floats(0.0, 0.5))
@settings(max_examples=2000, deadline=None)
def test_a_share_and_the_reciprocal_ratio_read_alike(low, width):
    """The share lines read send/cached - 1 (``send_cost.reading``, ``too_wide``), the
    comparison block cached/send (``stats.inconclusive``): an interval and its
    reciprocal give the same word, whichever way the ratio is taken."""
    from ipc_bench.analysis.send_cost import reading, too_wide

    share = (low, low + width)  # send/cached - 1
    ratio = (1 / (1 + share[1]), 1 / (1 + share[0]))  # cached/send, the same interval
    assume(not _near_edge(1 + share[0], 1 + share[1], *ratio))
    assert reading(share) == reading(ratio, 1.0)
    assert too_wide(share) is stats.inconclusive(*ratio)
    assert stats.inconclusive(*ratio) is stats.inconclusive(1 + share[0], 1 + share[1])


def test_the_mirrored_shares_of_the_same_spread_read_alike():
    # cached 1e6 ns x5, send - cached = -45,000 ns plus a spread, and its mirror image
    # (+45,000 ns): under a band of 1.1x either way on the share the first read "within noise" by
    # its share, [-9.41, +0.41] %, and "inconclusive" by the block, cached/send [0.995,
    # 1.103], while the mirror agreed; with the band a factor of 1.1 either way both
    # readings agree in both
    from ipc_bench.analysis.send_cost import mean_share, reading, bounds

    spread = [-50_000.0, -25_000.0, 0.0, 25_000.0, 50_000.0]
    seen = {}
    for sign in (-1, 1):
        diffs = [sign * 45_000.0 + d for d in spread]
        share = bounds(mean_share(diffs, [1e6] * 5, "t"))
        sends = [1e6 + d for d in diffs]
        ratio = stats.paired_ratio(sends, [1e6] * 5, "t")  # cached/send
        seen[sign] = (share, ratio[1:], reading(share), reading(ratio[1:], 1.0))
    assert seen[-1][0] == pytest.approx((-0.09407, 0.00407), abs=5e-5)
    assert seen[-1][1] == pytest.approx((0.9953, 1.1031), abs=5e-4)
    assert seen[1][0] == pytest.approx((-0.00407, 0.09407), abs=5e-5)
    assert seen[1][1] == pytest.approx((0.9135, 1.0036), abs=5e-4)
    # send/cached reaches 0.9059 < 1/1.1: inconclusive both ways; its mirror, 1.0941 and
    # cached/send 0.9135, stays within the band: within noise both ways
    assert [s[2:] for s in seen.values()] == [("inconclusive", "inconclusive"),
                                              ("within noise", "within noise")]


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
    a = rng.normal(1000, 50, size=stats.BOOTSTRAP_MIN_PAIRS)
    for method in stats.METHODS:
        cmp = stats.compare_paired(a, a.copy(), method=method)
        assert cmp.ratio_median == 1.0
        assert (cmp.ratio_ci_low, cmp.ratio_ci_high) == (1.0, 1.0)
        assert cmp.p_value == 1.0
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
    cmp = stats.compare_paired([100.0] * 5, [90.0] * 5, method="sign")
    assert cmp.significant is None and cmp.p_value is None
    assert cmp.verdict == ("no verdict: the sign test needs >= 6 pairs, have 5 "
                           "(use --repeat 6 or more, or --ci-method t)")


def test_one_pair_has_no_interval():
    cmp = stats.compare_paired([100.0], [90.0])
    assert cmp.significant is None and cmp.p_value is None
    assert cmp.ratio_ci_low is None and cmp.diff_ci_low is None
    assert cmp.verdict == "no verdict: the t-interval needs >= 2 pairs, have 1 (use --repeat 2 or more)"


def test_minimum_pairs_per_method_and_the_withheld_verdict():
    assert {m: stats.min_pairs(m) for m in stats.METHODS} == {"t": 2, "bootstrap": 34, "sign": 6}
    with pytest.raises(ValueError, match="unknown interval method 'z'"):
        stats.min_pairs("z")
    # A clear 10 % drop over 33 pairs: the bootstrap still gives no verdict.
    rng = np.random.default_rng(4)
    base = rng.lognormal(7, 0.05, size=33)
    cmp = stats.compare_paired(base, 0.9 * base * rng.lognormal(0, 0.01, size=33),
                               method="bootstrap")
    assert cmp.significant is None and cmp.ratio_ci_low is None and cmp.p_value is None
    assert cmp.ratio_median == pytest.approx(0.9, abs=0.01)  # point estimates remain
    assert cmp.verdict == ("no verdict: the bootstrap needs >= 34 pairs, have 33 "
                           "(use --repeat 34 or more, or --ci-method t)")
    one_more = stats.compare_paired(np.append(base, base[0]), 0.9 * np.append(base, base[0]),
                                    method="bootstrap")
    assert one_more.significant is True and one_more.p_value == 0.0


def _bootstrap_error_rate_odd(n: int) -> float:
    """Exact rate at which the 95 % percentile-bootstrap interval of the median of n
    (odd) iid values excludes the true median, with infinitely many resamples: the
    resampled median is x_(j) with P(median* <= x_(j)) = P(Binomial(n, j/n) >= (n+1)/2)."""
    from scipy.stats import binom

    cdf = [binom.sf((n + 1) // 2 - 1, n, j / n) for j in range(1, n + 1)]
    a = next(j for j in range(1, n + 1) if cdf[j - 1] >= 0.025)
    b = next(j for j in range(1, n + 1) if cdf[j - 1] >= 0.975)
    return float(binom.cdf(a - 1, n, 0.5) + binom.sf(b - 1, n, 0.5))


def test_bootstrap_minimum_is_where_its_error_rate_settles():
    rates = {n: _bootstrap_error_rate_odd(n) for n in range(5, 200, 2)}
    assert rates[7] == pytest.approx(0.125) and rates[23] == pytest.approx(0.0931, abs=1e-4)
    assert rates[33] > 0.08  # the last n over 8 %: the minimum is the next one
    assert max(r for n, r in rates.items() if n >= stats.BOOTSTRAP_MIN_PAIRS) <= 0.0725
    # the implementation (10,000 resamples) errs as the formula says at n = 7
    rng = np.random.default_rng(8)
    wrong = sum(not lo <= 0.0 <= hi for lo, hi in (
        stats.bootstrap_median_interval(rng.standard_normal(7))[1:] for _ in range(400)))
    assert 0.08 < wrong / 400 < 0.18


def test_t_interval_false_positive_rate_is_nominal():
    # A/A on iid lognormal noise (sd 10 % per value): about 5 % of 95 % intervals
    # exclude 1 whatever the number of pairs. 1,500 comparisons per n: the standard
    # error of a 5 % rate is 0.56 points.
    rng = np.random.default_rng(20291)
    for n in (2, 3, 6):
        a = rng.lognormal(7, 0.1, size=(1500, n))
        b = rng.lognormal(7, 0.1, size=(1500, n))
        flagged = [stats.compare_paired(x, y).significant for x, y in zip(a, b)]
        assert 0.035 < sum(flagged) / 1500 < 0.065, n
    # the bootstrap at 2 pairs, for contrast (hence its minimum): about half
    flagged = [bool(stats.bootstrap_median_interval(np.log(y / x))[1] > 0
                    or stats.bootstrap_median_interval(np.log(y / x))[2] < 0)
               for x, y in zip(a[:200, :2], b[:200, :2])]
    assert sum(flagged) / 200 > 0.35


def test_the_distribution_functions_are_scipy_stats_own():
    """``stats`` takes its t and binomial functions from ``scipy.special``, whose
    import is a fraction of ``scipy.stats``'s: every p-value and interval bound equals
    ``scipy.stats``'s (every sign count from 2 to 40 pairs, ties at n / 2 included, and t
    tests of either sign)."""
    from scipy.stats import binom, binomtest, t as student, ttest_1samp

    for n in range(2, 41):
        for above in range(n + 1):
            x = np.array([1.0] * above + [-1.0] * (n - above))
            assert stats.p_value(x, "sign") == pytest.approx(
                binomtest(above, n, 0.5).pvalue, rel=1e-12, abs=1e-300), (n, above)
        k = next((k for k in range(n // 2, 0, -1) if binom.cdf(k - 1, n, 0.5) <= 0.025), 0)
        if k:
            srt = np.arange(n, dtype=float)
            assert stats.sign_interval(srt)[1:] == (srt[k - 1], srt[n - k]), n
        else:
            with pytest.raises(ValueError, match="sign-test interval needs more values"):
                stats.sign_interval(np.arange(n, dtype=float))
    assert stats.min_pairs("sign") == 6
    rng = np.random.default_rng(11)
    for n in (2, 3, 5, 12, 40):
        for shift in (-1.0, -0.2, 0.0, 0.3, 2.0):
            x = rng.normal(shift, 1.0, size=n)
            assert stats.p_value(x, "t") == pytest.approx(ttest_1samp(x, 0.0).pvalue,
                                                           rel=1e-10), (n, shift)
            mean, lo, _ = stats.t_interval(x)
            half = student.ppf(0.975, n - 1) * x.std(ddof=1) / np.sqrt(n)
            assert mean - lo == pytest.approx(half, rel=1e-12)


def test_p_values_match_the_intervals():
    rng = np.random.default_rng(6)
    x = rng.normal(0.3, 1.0, size=12)
    from scipy.stats import binomtest, ttest_1samp

    assert stats.p_value(x, "t") == pytest.approx(ttest_1samp(x, 0.0).pvalue)
    above = int(np.sum(x > 0))
    assert stats.p_value(x, "sign") == pytest.approx(binomtest(above, 12, 0.5).pvalue)
    assert stats.p_value([2.0, 2.0], "t") == 0.0 and stats.p_value([0.0, 0.0], "t") == 1.0
    # the t interval excludes 0 exactly when p < 0.05
    for shift in np.linspace(-1, 1, 21):
        _, lo, hi = stats.t_interval(x + shift)
        assert (not lo <= 0 <= hi) == (stats.p_value(x + shift, "t") < 0.05)
    with pytest.raises(ValueError, match="at least 2 values, got 1"):
        stats.p_value([1.0], "t")


def test_holm_known_values():
    # R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") = 0.03 0.06 0.06 0.02
    assert stats.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert stats.holm([]) == []


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
        pair = [_summary("send", rep, a), _summary("cached", rep, b)]
        summaries += pair[::-1] if rep == 0 else pair  # run order does not pick the baseline
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
    assert entry["family"] == ["step_ns_mean"] and m["adjustment"] == "holm"


def test_compare_cases_pairs_each_transport_apart():
    """Two transports of one workload and codec: each transport's send is paired with
    its own cached (as the terminal's ratio line pairs them), never one transport's
    cases overwriting the other's; the block's titles name the transport."""
    from ipc_bench.report.tables import _ratio_lines, format_comparisons

    summaries = []
    for rep in range(3):
        for transport, (a, b) in (("ipc", (100.0 + rep, 80.0 + rep)),
                                  ("tcp", (200.0 + rep, 100.0 + rep))):
            summaries += [dict(_summary(arm, rep, v), transport=transport, model="null")
                          for arm, v in (("send", a), ("cached", b))]
    out = stats.compare_cases(summaries, metrics=[("step_ns_mean", "ns")])
    assert [(c["transport"], c["n_pairs"], c["paired_apart"]) for c in out] == [
        ("ipc", 3, ["transport"]), ("tcp", 3, ["transport"])]
    ipc, tcp = (c["metrics"]["step_ns_mean"]["ratio_geomean"] for c in out)
    assert ipc == pytest.approx(stats.paired_ratio([100, 101, 102], [80, 81, 82])[0])
    assert tcp == pytest.approx(stats.paired_ratio([200, 201, 202], [100, 101, 102])[0])
    lines = _ratio_lines("msgpack", summaries)
    assert [ln.split(";")[0] for ln in lines] == ["  cached/send (msgpack, ipc",
                                                   "  cached/send (msgpack, tcp"]
    assert f"step {ipc:.3f}" in lines[0] and f"step {tcp:.3f}" in lines[1]
    titles = [ln for ln in format_comparisons(out).splitlines() if " vs " in ln]
    assert [t.split(":")[0] for t in titles] == [
        "cached vs send  [num_running=256]  msgpack, ipc",
        "cached vs send  [num_running=256]  msgpack, tcp"]


def _overhead_pair(rep, loop_ns):
    """The overhead scenario's two arms of one repetition: ``steps`` records every
    per-step figure, ``totals`` the loop's total time only (no counted step)."""
    steps = dict(scenario="overhead", workload="num_running=4,of=send", codec="msgpack",
                 policy="send", arm="steps", repetition=rep, complete=True, num_steps=100,
                 loop_steps=100, step_ns_mean=1000.0 + rep, encode_ns_per_step=50.0,
                 loop_step_ns_mean=loop_ns[0])
    totals = dict(steps, arm="totals", num_steps=0, loop_step_ns_mean=loop_ns[1])
    for key in ("step_ns_mean", "encode_ns_per_step"):
        del totals[key]
    return [totals, steps]


def test_arm_pairs_with_no_metric_in_common_make_no_comparison():
    summaries = [c for rep, loops in enumerate([(1100.0, 1000.0), (1210.0, 1100.0)])
                 for c in _overhead_pair(rep, loops)]
    assert stats.compare_cases(summaries) == []
    [entry] = stats.compare_cases(summaries, metrics=[("loop_step_ns_mean", "ns")])
    assert (entry["baseline"], entry["treatment"], entry["n_pairs"]) == ("totals", "steps", 2)
    assert entry["metrics"]["loop_step_ns_mean"]["ratio_geomean"] == pytest.approx(1.1)


def test_a_comparison_with_no_compared_metric_prints_nothing():
    from ipc_bench.report.tables import format_comparisons

    empty = dict(scenario="overhead", workload="num_running=4,of=send", codec="msgpack",
                 baseline="totals", treatment="steps", n_pairs=8, repetitions=list(range(8)),
                 method="t", confidence=0.95, metrics={}, family=[])
    assert format_comparisons([empty]) == ""


def test_arm_rank_puts_send_first():
    assert sorted(["cached", "x", "send'", "send", "cached'", "a"], key=stats.arm_rank) == [
        "send", "send'", "cached", "cached'", "x", "a"]


def test_compare_cases_adjusts_the_timed_metrics_by_holm():
    # step mean: 5 % lower in every pair bar noise (p < 0.001); encode: 2 % lower with
    # more noise (p = 0.045 alone); decode: no change (p = 0.6); bytes: exact, outside
    # the family. Holm: encode's p is doubled (second smallest of three).
    noise = [0.01, -0.012, 0.008, -0.006, 0.0]
    enc_noise = [0.0, 0.012, -0.01, 0.02, -0.015]
    dec_noise = [0.01, -0.01, 0.02, -0.015, 0.0]
    summaries = []
    for rep, (e, f, g) in enumerate(zip(noise, enc_noise, dec_noise)):
        for arm, step, enc, dec, s2r in (("send", 1000.0, 100.0, 50.0, 500.0),
                                         ("cached", 950.0 * (1 + e), 98.0 * (1 + f),
                                          50.0 * (1 + g), 480.0)):
            summaries.append(dict(_summary(arm, rep, step), encode_ns_per_step=enc,
                                  decode_ns_per_step=dec,
                                  sched_to_runner_payload_bytes_per_step=s2r))
    metrics = [("step_ns_mean", "ns"), ("encode_ns_per_step", "ns"),
               ("decode_ns_per_step", "ns"), ("sched_to_runner_payload_bytes_per_step", "B")]
    [entry] = stats.compare_cases(summaries, metrics=metrics)
    assert entry["family"] == ["step_ns_mean", "encode_ns_per_step", "decode_ns_per_step"]
    step, enc, dec, s2r = (entry["metrics"][k] for k, _ in metrics)
    assert enc["p_value"] == pytest.approx(0.0446, abs=1e-4)
    assert enc["ratio_ci_high"] < 1.0  # alone: significant
    assert [m["p_adjusted"] for m in (step, enc, dec)] == pytest.approx(
        stats.holm([step["p_value"], enc["p_value"], dec["p_value"]]))
    assert enc["p_adjusted"] == pytest.approx(2 * enc["p_value"])
    assert enc["significant"] is False and dec["significant"] is False
    # its unadjusted interval excludes 1: the verdict says the adjustment decided it
    assert enc["verdict"] == "not significant after Holm"
    assert stats.verdict_of(enc) == enc["verdict"]
    # a summary.json written before that verdict reads the same
    assert stats.verdict_of(dict(enc, verdict="no significant difference")) == enc["verdict"]
    assert dec["verdict"] == stats.NO_DIFFERENCE  # its interval holds 1
    assert step["significant"] is True and step["verdict"].startswith("significant: cached")
    assert s2r["adjustment"] == "none" and s2r["p_adjusted"] is None
    assert (s2r["significant"], s2r["p_value"]) == (None, None)  # exact: no test
    assert s2r["verdict"].startswith("exact: cached") and s2r["verdict"].endswith(
        " % lower than send")


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


def test_sign_p_value_of_values_without_spread_is_the_binomial_one():
    """Six equal ratios below 1 (exact bytes, a constant build time): the sign test
    gives 2/2^6 = 0.03125, the least it can with 6 pairs, not 0; t and bootstrap 0."""
    assert stats.p_value([0.947] * 6, "sign", null=1.0) == 0.03125
    assert stats.p_value([0.947] * 9, "sign", null=1.0) == 2 / 512
    assert stats.p_value([1.0] * 6, "sign", null=1.0) == 1.0
    assert stats.p_value([0.947] * 6, "t", null=1.0) == 0.0
    assert stats.p_value([0.947] * 6, "bootstrap", null=1.0) == 0.0


def test_equal_values_have_themselves_as_geometric_mean():
    # exp(mean(log(5646.5))) is 5646.500000000003: the comparison block showed 5,647
    # beside the case table's 5,646 (round half to even) for the same exact bytes
    c = stats.compare_paired([5646.5] * 5, [4022.89] * 5)
    assert (c.baseline_geomean, c.treatment_geomean) == (5646.5, 4022.89)
    assert c.ratio_geomean == 4022.89 / 5646.5
    assert stats.geomean_interval([5646.5] * 3) == (5646.5, 5646.5, 5646.5)
    assert stats.geometric_mean(np.array([2.0, 8.0])) == pytest.approx(4.0, rel=1e-15)
