"""The findings' share lines give intervals by the run's ``--ci-method``, as the pair
clauses do (none where the method needs more pairs, said so); an encode or build
clause whose interval holds 0 % but reaches beyond ±10 % says it is inconclusive, as
the terminal's verdict does."""

from __future__ import annotations

import pandas as pd

from ipc_bench.analysis.send_cost import mean_share, share_interval
from ipc_bench.report import findings
from test_send_cost_one_share import _rows, _where

BOTH = "the SchedulerOutput and the ModelRunnerOutput"


def test_the_share_line_with_the_sign_method_and_too_few_pairs_has_no_interval():
    cases = pd.DataFrame(_rows())
    lines = findings._share_findings(cases, _where, ["num_running"], "sign")
    assert lines[0] == (
        "At 4 running requests (msgpack), send's SchedulerOutput path (build + encode + "
        "decode, medians) costs 4.00 µs per step more than cached's, 4.00 % of cached's "
        "100.0 µs median step (no interval: a sign-test interval needs >= 6 pairs); "
        "send's whole median step, 120.0 µs, is 20.00 % longer than cached's (no "
        "interval: a sign-test interval needs >= 6 pairs) (noisier; means over 2 "
        "repetitions of each case's figures).")
    boot = findings._share_findings(cases, _where, ["num_running"], "bootstrap")[1]
    assert "(no interval: a percentile-bootstrap interval needs >= 34 pairs)" in boot
    assert "Student-t" not in boot


def test_the_share_interval_by_the_sign_method_is_of_the_median_difference():
    diffs = [1_000.0, 2_000.0, 3_000.0, 4_000.0, 5_000.0, 30_000.0]
    m = mean_share(diffs, [100_000.0] * 6, "sign")
    # 6 pairs: the sign-test interval is [x_(1), x_(6)], over the mean step
    assert (m.share, m.low, m.high, m.pairs, m.method) == (0.075, 0.01, 0.3, 6, "sign")
    assert share_interval((m.low, m.high), m.method, m.pairs) == (
        " (send - cached: [+1.00, +30.00] %, 95 % sign-test interval of the median "
        "difference)")
    assert share_interval((0.01, 0.02)) == (
        " (send - cached: [+1.00, +2.00] %, 95 % Student-t interval)")
    assert share_interval(None, "sign", 1) == ""


def test_a_time_clause_within_noise_but_wider_than_ten_percent_is_inconclusive():
    words = findings.TIME_CLAUSE_WORDS["enc"]
    wide = dict(n=3, diff=-40.0, ratio=1.014, ratio_low=0.906, ratio_high=1.134,
                method="t")
    assert findings._time_clause(wide, *words) == (
        f"changes encode time per step of {BOTH} by +1.4 % [-9.4, +13.4] % (mean "
        "difference +0.04 µs, inconclusive: the interval reaches beyond ±10 %, too few "
        "repetitions or too noisy to tell a 10 % difference from none)")
    narrow = dict(wide, ratio_low=0.95, ratio_high=1.08)
    assert findings._time_clause(narrow, *words) == (
        f"encodes {BOTH} within noise of send's time per step (+0.04 µs, +1.4 % "
        "[-5.0, +8.0] %)")
