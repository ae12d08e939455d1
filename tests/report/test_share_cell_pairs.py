"""The summary table's share cells (``findings._share_cell``) over fewer pairs than
their row's tokens/s (a case whose floor replay was cut short) say how many, as the
share line does: ``(over 2 of 3 repetitions)`` after an interval, ``one of 3
repetitions, no interval`` without one; over all of them, the words they had."""

from ipc_bench.analysis.send_cost import MeanShare
from ipc_bench.report import findings


def test_an_interval_over_2_of_3_pairs_names_the_count():
    share = MeanShare(120.0, 10_000.0, 0.012, -0.05, 0.08, 2)
    assert findings._share_cell(share, 3) == "+1.20 % [-5.00, +8.00] % (over 2 of 3 repetitions)"
    assert findings._share_cell(share, 2) == "+1.20 % [-5.00, +8.00] %"
    assert findings._share_cell(share) == "+1.20 % [-5.00, +8.00] %"


def test_no_interval_over_fewer_pairs_names_the_count():
    one = MeanShare(45.0, 10_000.0, 0.0045, pairs=1)
    assert findings._share_cell(one, 3) == "+0.45 % (one of 3 repetitions, no interval)"
    assert findings._share_cell(one, 1) == "+0.45 % (one repetition, no interval)"
    five = MeanShare(45.0, 10_000.0, 0.0045, pairs=5, method="sign")
    assert findings._share_cell(five, 6) == (
        "+0.45 % (5 of 6 repetitions, no interval: a sign-test interval needs >= 6 pairs)")
