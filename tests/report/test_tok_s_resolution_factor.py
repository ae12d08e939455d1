"""The tok/s resolution note's words (docs/comparisons.md#tok-s-resolution): the interval
spans a factor e^h either way of its centre, √(low × high), compared with the size of the
change the share implies and its direction (a share s > 0, send's work costing more:
cached faster; s < 0: cached slower); the run cannot tell a change of that size from
none. The factor prints with the digits that put it over 1 + the printed size / 100."""

from __future__ import annotations

import math

from ipc_bench.analysis.send_cost import step_shares
from ipc_bench.report.findings import _factor_apart, _resolution

PATH = [50_000, 50_400, 50_200]
STEPS = [1_000_000] * 3
TAIL = " the net share implies: this run cannot tell a change of that size from none in tokens/s"


def _note(low: float, high: float, net_ns: list[float], cell: bool) -> str:
    shares = step_shares(PATH, PATH, STEPS, net_diffs_ns=net_ns)  # net: mean(net_ns) / 1 ms
    return _resolution({"ratio_low": low, "ratio_high": high}, shares, cell=cell)


def test_an_uneven_interval_and_a_negative_share_read_as_a_factor_and_cached_slower():
    # [-41.83, +50.84] % (3 repetitions) against a net share of -1.13 %
    low, high = 0.5817, 1.5084
    assert f"{math.exp(math.log(high / low) / 2):.4f}" == "1.6103"
    assert f"{math.sqrt(low * high) / low:.4f}" == f"{high / math.sqrt(low * high):.4f}"
    assert _note(low, high, [-11_300] * 3, cell=False) == (
        " The tok/s interval spans a factor of 1.61 either way of its centre, more than the "
        "1.13 % change (cached slower)" + TAIL + ", so its verdict is no evidence of no "
        "change.")
    assert _note(low, high, [11_300] * 3, cell=True) == (
        "; the tok/s interval spans a factor of 1.61 either way of its centre, more than "
        "the 1.13 % change (cached faster)" + TAIL)


def test_a_zero_share_names_no_direction():
    assert _note(0.98, 1.02, [0, 0, 0], cell=True) == (
        "; the tok/s interval spans a factor of 1.02 either way of its centre, more than "
        "the 0.00 % change" + TAIL)


def test_the_factor_gets_the_digits_that_put_it_over_the_change():
    assert _factor_apart(1.6103, -1.13) == ("1.61", "1.13")
    assert _factor_apart(1.0114, -1.13) == ("1.0114", "1.13")  # not 1.01 beside 1.13 %
    assert _factor_apart(1.05038, 5.035) == ("1.05038", "5.035")  # 1.0504 beside 5.04 %
    assert _factor_apart(1.000045, 0.0041) == ("1.00005", "0.004")
    assert _factor_apart(1.001, 0.0) == ("1.001", "0.00")
    assert _factor_apart(13_561.4, 0.38) == ("13,561.40", "0.38")
