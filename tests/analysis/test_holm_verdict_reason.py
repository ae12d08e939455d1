"""A comparison that Holm's adjustment finds not significant while its unadjusted ratio
interval excludes 1 gives that reason, in the same words, in ``summary.json``'s
``comparisons`` (``PairedComparison.adjusted``), in the verdict read back from an older
summary (``stats.verdict_of``), in the comparison block's cell and in the report's
finding, wherever the interval lies: wholly beyond -10 % as much as straddling it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from ipc_bench.analysis import stats
from ipc_bench.report import tables

#: Three pairs whose treatment ran at 30, 50 and 40 % of the baseline: the log ratios'
#: t-interval lies wholly below 1 (about [-79, -26] %), p about 0.024, which Holm over
#: 7 metrics (this the smallest p) multiplies by 7: 0.17, not significant.
BASE, TREAT = [100.0, 100.0, 100.0], [30.0, 50.0, 40.0]


def _expected():
    logs = np.log(np.asarray(TREAT) / np.asarray(BASE))
    n, mean, sd = logs.size, logs.mean(), logs.std(ddof=1)
    half = sps.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    p = 2 * sps.t.sf(abs(mean) / (sd / math.sqrt(n)), n - 1)
    return math.exp(mean - half), math.exp(mean + half), p


def test_the_recorded_verdict_names_holm_not_the_interval_width():
    low, high, p = _expected()
    assert high < 0.9 and 7 * p > 0.05  # wholly beyond -10 %, not significant after Holm
    c = stats.compare_paired(BASE, TREAT)
    assert (c.ratio_ci_low, c.ratio_ci_high, c.p_value) == (
        pytest.approx(low), pytest.approx(high), pytest.approx(p))
    adj = c.adjusted(min(1.0, 7 * c.p_value), "holm").to_dict()
    text = (f"inconclusive: not significant after Holm; the 95 % interval "
            f"[{100 * (low - 1):+.1f}, {100 * (high - 1):+.1f}] % does not include 0 % "
            "but is unadjusted")
    assert text == ("inconclusive: not significant after Holm; the 95 % interval "
                    "[-79.3, -26.0] % does not include 0 % but is unadjusted")
    assert adj["verdict"] == text and adj["significant"] is False
    assert "too few repetitions" not in adj["verdict"]
    # a summary written before: the interval-width reason is read as the true one
    old = dict(adj, verdict=stats.inconclusive_verdict(low, high))
    assert stats.verdict_of(old) == text
    # ... and so is the Holm reason in its words before the findings' legend's
    older = dict(adj, verdict=text.replace("after Holm;", "after Holm adjustment;"))
    assert stats.verdict_of(older) == text
    # the comparison block's cell starts the same way, with no width note under it
    assert tables.inconclusive_cell(adj) == tables.INCONCLUSIVE_HOLM
    assert text.startswith(tables.INCONCLUSIVE_HOLM)


def test_within_ten_percent_it_stays_no_significant_difference_after_holm():
    base = [100.0] * 4
    treat = [97.0, 93.0, 96.0, 95.0]
    c = stats.compare_paired(base, treat)
    assert 0.9 < c.ratio_ci_low < c.ratio_ci_high < 1.0 and c.p_value < 0.05
    adj = c.adjusted(min(1.0, 7 * c.p_value), "holm")
    assert adj.significant is False and adj.verdict == stats.NOT_SIGNIFICANT_HOLM
    assert stats.NOT_SIGNIFICANT_HOLM == "not significant after Holm"


def test_an_interval_holding_one_keeps_its_width_reason():
    c = stats.compare_paired([100.0] * 3, [60.0, 140.0, 100.0])
    adj = c.adjusted(min(1.0, 7 * c.p_value), "holm")
    assert c.ratio_ci_low < 1 < c.ratio_ci_high
    assert adj.verdict == stats.inconclusive_verdict(c.ratio_ci_low, c.ratio_ci_high)
    assert tables.inconclusive_cell(adj.to_dict()) == tables.INCONCLUSIVE_WIDE
