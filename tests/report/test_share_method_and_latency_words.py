"""The findings' share lines give intervals by the run's ``--ci-method``, as the pair
clauses do (none where the method needs more pairs, said so); an encode or build
clause whose interval holds 0 % but reaches beyond 1.1x either way says it is inconclusive, as
the terminal's verdict does; a timed replay's latency clause gives E2E too, in the
Latency table's cells, and says its figures are means over repetitions."""

from __future__ import annotations

import pandas as pd

from ipc_bench.analysis.send_cost import (MeanShare, mean_share, path_difference,
                                          share_interval, step_difference)
from ipc_bench.analysis.stats import INCONCLUSIVE_CLAUSE
from ipc_bench.report import findings
from test_send_cost_one_share import _rows, _where

BOTH = "the SchedulerOutput and the ModelRunnerOutput"


def test_the_share_line_with_the_sign_method_and_too_few_pairs_has_no_interval():
    cases = pd.DataFrame(_rows())
    lines = findings._share_findings(cases, _where, ["num_running"], "sign")
    assert lines[0] == (
        "At 4 running requests (msgpack), send's SchedulerOutput path (build + encode + "
        "decode, medians) costs 4.00 µs per step more than cached's, 4.00 % of cached's "
        "step, 100.0 µs as the median of its 2 repetitions' median steps (no interval: a "
        "sign-test interval needs >= 6 pairs); "
        "send's whole step, 120.0 µs as the same median, is 20.00 % longer than cached's "
        "(no interval: a sign-test interval needs >= 6 pairs) (noisier; medians over 2 "
        "repetitions of each case's figures, not the geometric means the comparison block "
        "prints as `step median`; each % "
        "is the paired differences' median over cached's median step, not the two "
        "medians' gap).")
    boot = findings._share_findings(cases, _where, ["num_running"], "bootstrap")[1]
    assert "(no interval: a percentile-bootstrap interval needs >= 34 pairs)" in boot
    assert "Student-t" not in boot


def test_the_share_interval_by_the_sign_method_is_of_the_per_pair_shares():
    diffs = [1_000.0, 2_000.0, 3_000.0, 4_000.0, 5_000.0, 30_000.0]
    m = mean_share(diffs, [100_000.0] * 6, "sign")
    # 6 pairs: the sign-test interval is [x_(1), x_(6)] of the per-pair shares, around
    # the median difference (3,500 ns) over the median step (one step here: the shares
    # are the differences over it)
    assert (m.share, m.low, m.high, m.pairs, m.method) == (0.035, 0.01, 0.3, 6, "sign")
    assert share_interval((m.low, m.high), m.method, m.pairs) == (
        " (send - cached: [+1.00, +30.00] %, 95 % sign-test interval of the per-pair "
        "shares)")
    assert share_interval((0.01, 0.02)) == (
        " (send - cached: [+1.00, +2.00] %, 95 % Student-t interval)")
    assert share_interval(None, "sign", 1) == ""


def test_a_share_interval_end_near_0_prints_on_its_side():
    # an upper end of -0.0004 %, -0.00 at 2 decimals, beside "shorter": printed with the
    # digits that show it below 0; an end of exactly 0 holds 0 and prints as it is
    near = (-0.031, -0.000004)
    assert step_difference(-0.015, near) == (
        "is 1.50 % shorter than cached's (send - cached: [-3.10, -0.0004] %, 95 % "
        "Student-t interval)")
    assert step_difference(-0.015, (-0.031, 0.0)) == (
        "is not resolved from cached's: -1.50 % (send - cached: [-3.10, +0.00] %, 95 % "
        "Student-t interval): the interval holds 0 but reaches beyond 1 % of the step, so it "
        "does not show the cost is small")
    assert findings._share_cell(MeanShare(-150.0, 10_000.0, -0.015, *near, 3)) == (
        "-1.50 % [-3.10, -0.0004] %")


def test_an_end_near_the_noise_bands_edge_prints_on_its_side():
    # -1.2 % [-9.1, +7.3] % read "within noise" (its low end -9.0887 %, inside -9.09 %)
    # beside -2.2 % [-9.4, +5.5] %, inconclusive: -9.0887 now prints with the digits
    # that show it inside the band, and a share's +10.0004 % with those that show it
    # beyond +10 %
    words = findings.TIME_CLAUSE_WORDS["enc"]
    near = dict(n=5, diff=-40.0, ratio=0.988, ratio_low=1 - 0.090887, ratio_high=1.073,
                method="t")
    assert findings._time_clause(near, *words) == (
        f"encodes {BOTH} within noise of send's time per step (-1.2 % [-9.089, +7.3] %; "
        "send - cached: -0.04 µs)")
    beyond = dict(near, ratio=0.978, ratio_low=1 - 0.094, ratio_high=1.055)
    assert findings._time_clause(beyond, *words) == (
        f"changes encode time per step of {BOTH} by -2.2 % [-9.4, +5.5] % (send - cached: "
        "-0.04 µs; inconclusive (interval beyond 1.1x either way))")
    assert step_difference(-0.012, (-0.090887, 0.073)) == (
        "is not resolved from cached's: -1.20 % (send - cached: [-9.089, +7.30] %, 95 % "
        "Student-t interval): the interval holds 0 but reaches beyond 1 % of the step, so it "
        "does not show the cost is small")
    assert step_difference(0.012, (-0.05, 0.100004)) == (
        "differs from cached's by +1.20 % (send - cached: [-5.00, +10.0004] %, 95 % "
        f"Student-t interval), {INCONCLUSIVE_CLAUSE}")
    assert findings._share_cell(MeanShare(120.0, 10_000.0, 0.012, -0.05, 0.100004, 3)) == (
        "+1.20 % [-5.00, +10.0004] %")


def test_a_share_point_and_difference_near_0_print_on_their_side():
    # a share of -0.02 % printed -0.00 %, a difference of 0.004 µs and its share of
    # 0.002 % printed 0.00 beside an interval excluding 0: each gets the digits that
    # show its side of 0 (stats.point_text)
    assert step_difference(-0.0002, (-0.01, 0.009)) == (
        "is within noise of cached's: -0.02 % (send - cached: [-1.00, +0.90] %, 95 % "
        "Student-t interval)")
    assert path_difference(4.0, 0.00002, (0.00001, 0.00003), "BASE") == (
        "costs 0.004 µs per step more than cached's, 0.002 % of BASE (send - cached: "
        "[+0.001, +0.003] %, 95 % Student-t interval)")
    assert path_difference(-4.0, -0.00002, (-0.01, 0.009), "BASE") == (
        "is within noise of cached's: -0.004 µs per step, -0.002 % of BASE (send - cached: "
        "[-1.00, +0.90] %, 95 % Student-t interval)")
    assert findings._share_cell(MeanShare(-2.0, 10_000.0, -0.0002, -0.01, 0.009, 3)) == (
        "-0.02 % [-1.00, +0.90] %")


def test_a_time_clause_within_noise_but_wider_than_ten_percent_is_inconclusive():
    words = findings.TIME_CLAUSE_WORDS["enc"]
    wide = dict(n=3, diff=-40.0, ratio=1.014, ratio_low=0.906, ratio_high=1.134,
                method="t")
    assert findings._time_clause(wide, *words) == (
        f"changes encode time per step of {BOTH} by +1.4 % [-9.4, +13.4] % (send - cached: "
        "-0.04 µs; inconclusive (interval beyond 1.1x either way))")
    narrow = dict(wide, ratio_low=0.95, ratio_high=1.08)
    assert findings._time_clause(narrow, *words) == (
        f"encodes {BOTH} within noise of send's time per step (+1.4 % [-5.0, +8.0] %; "
        "send - cached: -0.04 µs)")


def test_the_latency_clause_gives_e2e_table_cells_and_its_repetitions():
    figures = {"send": [(3.9, 5.0, 2.6, 2.3, 6.2, 45.5, 380.1), (4.0, 6.44, 2.7, 2.4, 6.3,
                                                                45.56, 390.1)],
               "cached": [(4.1, 7.0, 2.66, 2.35, 6.1, 45.0, 370.0), (4.0, 8.0, 2.62,
                                                                     2.43, 6.2, 46.0,
                                                                     371.0)]}
    cols = ("ttft_ms_p50", "ttft_ms_p99", "tpot_ms_mean", "itl_ms_p50", "itl_ms_p99",
            "e2e_ms_p50", "e2e_ms_p99")
    rows = [dict(zip(cols, f), policy=p, workload="trace", codec="msgpack",
                 transport="ipc", repetition=rep)
            for p, reps in figures.items() for rep, f in enumerate(reps)]
    key = ("trace", "msgpack", "ipc", None)
    # a sign-test interval needs 6 pairs: none from 2
    assert findings._latency_clause(pd.DataFrame(rows), key, "sign") == (
        "latency send → cached: TTFT p50 3.95 → 4.05 ms, p99 5.72 → 7.50 ms; ITL p50 "
        "2.350 → 2.390 ms, p99 6.250 → 6.150 ms; TPOT mean 2.650 → 2.640 ms; E2E p50 "
        "45.5 → 45.5 ms, p99 385.1 → 370.5 ms (means over 2 repetitions, no interval)")
    # Student-t from 2: TTFT p50's per-repetition ratios 4.1/3.9 and 4.0/4.0, their
    # logs' mean 0.0250 and standard error 0.0250, t(0.975, 1) = 12.706:
    # exp(0.0250 ± 0.318) = [0.746, 1.409]
    assert findings._latency_clause(pd.DataFrame(rows), key, "t") == (
        "latency send → cached: TTFT p50 3.95 → 4.05 ms [-25.4, +40.9] %, p99 5.72 → 7.50 "
        "ms [-38.3, +181.9] %; ITL p50 2.350 → 2.390 ms [-4.0, +7.8] %, p99 6.250 → 6.150 "
        "ms [-1.8, -1.4] %; TPOT mean 2.650 → 2.640 ms [-28.8, +39.4] %; E2E p50 45.5 → "
        "45.5 ms [-12.4, +13.9] %, p99 385.1 → 370.5 ms [-17.0, +11.5] % (means over 2 "
        "repetitions, [low, high] %: 95 % Student-t interval of cached's change from "
        "send, paired by repetition, each figure's own, not adjusted for the 7 together; "
        "only ITL p99's excludes 0, the others include it)")
    one = findings._latency_clause(pd.DataFrame([r for r in rows if not r["repetition"]]),
                                   key)
    assert one.endswith("E2E p50 45.5 → 45.0 ms, p99 380.1 → 370.0 ms")
    # the loader withheld send's repetition 1 TTFT (an impossible requests.csv row): its
    # TTFT mean is over repetition 0 alone, and the clause says so
    withheld = [dict(r, ttft_ms_p50=float("nan"), ttft_ms_p99=float("nan"))
                if r["policy"] == "send" and r["repetition"] == 1 else r for r in rows]
    assert findings._latency_clause(pd.DataFrame(withheld), key, "sign") == (
        "latency send → cached: TTFT p50 3.90 → 4.05 ms, p99 5.00 → 7.50 ms; ITL p50 "
        "2.350 → 2.390 ms, p99 6.250 → 6.150 ms; TPOT mean 2.650 → 2.640 ms; E2E p50 "
        "45.5 → 45.5 ms, p99 385.1 → 370.5 ms (means over 1 and 2 repetitions; a "
        "repetition's withheld figures left out, no interval)")
    # Student-t: TTFT has one pair left, too few for its interval; the others keep theirs
    assert findings._latency_clause(pd.DataFrame(withheld), key, "t").startswith(
        "latency send → cached: TTFT p50 3.90 → 4.05 ms, p99 5.00 → 7.50 ms; ITL p50 "
        "2.350 → 2.390 ms [-4.0, +7.8] %")


def test_sends_median_step_is_its_own_median_not_cacheds_plus_the_median_difference(
        monkeypatch):
    # 3 pairs (send, cached): (150, 100), (110, 105), (140, 130) µs. The median of the
    # differences (50, 5, 10) is 10 µs and cached's median 105 µs, but send's own median
    # is 140 µs, not 115 µs (the line said 115 under sign or bootstrap).
    import test_send_cost_one_share as one

    monkeypatch.setattr(one, "PAIRS", ((4, [(150_000.0, 100_000.0, 3000.0),
                                            (110_000.0, 105_000.0, 3000.0),
                                            (140_000.0, 130_000.0, 3000.0)]),))
    line = findings._share_findings(pd.DataFrame(one._rows()), _where, ["num_running"],
                                    "sign")[0]
    assert "send's whole step, 140.0 µs as the same median, is 9.52 % longer" in line
    assert "cached's step, 105.0 µs as the median of its 3 repetitions' median" in line


def test_each_figure_of_a_time_clause_names_its_statistic():
    """The µs are the mean (or median) difference send - cached, the % the paired
    ratio's point: the clauses give them in one form, and the legend under the findings
    names both once, by the run's --ci-method."""
    words = findings.TIME_CLAUSE_WORDS["enc"]
    row = dict(n=3, diff=1070.0, ratio=0.88, ratio_low=0.85, ratio_high=0.91, method="t")
    assert findings._time_clause(row, *words) == (
        f"saves 1.07 µs per step encoding {BOTH} (-12.0 % [-15.0, -9.0] %)")
    row = dict(row, n=6, method="sign")
    noise = dict(row, ratio=1.01, ratio_low=0.95, ratio_high=1.08, diff=-40.0)
    assert findings._time_clause(noise, *words) == (
        f"encodes {BOTH} within noise of send's time per step (+1.0 % [-5.0, +8.0] %; "
        "send - cached: -0.04 µs)")
    assert findings.findings_legend([], "t", {}) == (
        "Reading the findings: a % change is cached/send, paired by repetition: geometric "
        "mean of the per-repetition ratios [95 % Student-t interval], unadjusted (the pair "
        "table's cached/send column); `send - cached` is the mean of the per-repetition "
        "differences (its send - cached column): for times and bytes what send costs, for "
        "tokens/s what send gains; tok/s `a → b`: send's, then cached's.")
    assert findings.findings_legend([], "sign", {}).startswith(
        "Reading the findings: a % change is cached/send, paired by repetition: median of "
        "the per-repetition ratios [95 % sign-test interval], unadjusted (the pair table's "
        "cached/send column); `send - cached` is the median of the per-repetition "
        "differences")


def test_a_share_whose_step_the_holm_verdict_rejects_says_so():
    """A whole step's share interval that excludes 0 reads as a claim; where the run's
    recorded comparison of that step is not significant after Holm's correction, the
    line says its interval is unadjusted, as the tokens/s finding does."""
    m = dict(adjustment="holm", significant=False, p_value=0.023, p_adjusted=0.093,
             family_size=7)
    recorded = {("num_running=16", "msgpack", "ipc", "null"): {"step_ns_median": m}}
    assert findings._step_verdict(recorded, "num_running=16", "msgpack", "step_ns_median") \
        == (", but the comparison's step median is not significant after Holm (p 0.023, "
            "adjusted 0.093)")
    assert findings._step_verdict(recorded, "num_running=16", "pickle", "step_ns_median") \
        == ""
    significant = {k: {"step_ns_median": dict(m, significant=True, p_adjusted=0.01)}
                   for k in recorded}
    assert findings._step_verdict(significant, "num_running=16", "msgpack",
                                  "step_ns_median") == ""
