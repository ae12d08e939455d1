"""The tok/s verdict's resolution words (docs/comparisons.md, "What a tok/s verdict can
see"): the rule on the log scale, h = ln(high / low) / 2 over |ln(1 + s)|; h printed as
the factor e^h the interval spans either way of its centre; the implied change's size
with its direction; both printed to enough digits that the printed factor is over 1 +
the printed change (not "1.05" beside "5.02 %", nor "1.00" beside "0.004 %")."""

from __future__ import annotations

import math

from ipc_bench.analysis.send_cost import step_shares
from ipc_bench.report.findings import _resolution

PATH = [50_000, 50_400, 50_200]
STEPS = [1_000_000] * 3
TAIL = (" the net share implies: this run cannot tell a change of that size from none in "
        "tokens/s")
HEAD = "; the tok/s interval spans a factor of "


def _shares(net_ns: list[float]):
    """Shares of three pairs over a 1 ms step, the net share mean(net_ns) / 1 ms."""
    return step_shares(PATH, PATH, STEPS, net_diffs_ns=net_ns)


def _cell(low: float, high: float, net_ns: list[float]) -> str:
    return _resolution({"ratio_low": low, "ratio_high": high}, _shares(net_ns), cell=True)


def test_a_half_width_that_rounds_onto_the_share_gets_more_digits():
    # net share 5.02 %; h = ln(1.0504 / 0.952) / 2: a factor of 1.0504 (1.05 would not
    # be over 1.0502)
    assert f"{math.exp(math.log(1.0504 / 0.952) / 2):.5f}" == "1.05041"
    assert _cell(0.952, 1.0504, [50_100, 50_300, 50_200]) == (
        HEAD + "1.0504 either way of its centre, more than the 5.02 % change (cached "
        "faster)" + TAIL)
    # a wide one keeps 2 decimals
    assert _cell(0.9, 1.1, [50_100, 50_300, 50_200]) == (
        HEAD + "1.11 either way of its centre, more than the 5.02 % change (cached "
        "faster)" + TAIL)


def test_tiny_figures_get_digits():
    # net share 0.0041 %; e^h: 1.000045 (not 1.00)
    assert _cell(0.99996, 1.00005, [40, 42, 41]) == (
        HEAD + "1.00005 either way of its centre, more than the 0.004 % change (cached "
        "faster)" + TAIL)
    # 0.00004 %: its first significant digit, not 4e-05
    assert _cell(0.99, 1.01, [0.4, 0.4, 0.4]) == (
        HEAD + "1.01 either way of its centre, more than the 0.00004 % change (cached "
        "faster)" + TAIL)


def test_a_negative_share_reads_cached_slower():
    assert _resolution({"ratio_low": 0.98, "ratio_high": 1.02}, _shares([-40, -42, -41])) == (
        " The tok/s interval spans a factor of 1.02 either way of its centre, more than the "
        "0.004 % change (cached slower)" + TAIL + ", so its verdict is no evidence of no "
        "change.")


def test_the_rule_is_on_the_log_scale():
    # e^h = 1.0515: over 1.0502 (+5.02 %), whose log is 0.0490; not over -5.02 %, whose
    # log's size 0.0515 is h's (cached slower by 5.02 % is 1 / 0.9498 - 1 = 5.29 % the other way)
    low, high = 1 / 1.0515, 1.0515
    assert _cell(low, high, [50_100, 50_300, 50_200]) == (
        HEAD + "1.052 either way of its centre, more than the 5.02 % change (cached "
        "faster)" + TAIL)
    assert _cell(low, high, [-50_100, -50_300, -50_200]) == ""
    assert _cell(1 / 1.054, 1.054, [-50_100, -50_300, -50_200]) == (
        HEAD + "1.054 either way of its centre, more than the 5.02 % change (cached "
        "slower)" + TAIL)


def test_an_uneven_interval_reads_as_a_factor_either_way():
    # [-98.9, +20129.6] %: a factor of 135.61 either way of its centre
    assert f"{math.sqrt(202.296 / 0.011):.2f}" == "135.61"
    assert _cell(0.011, 202.296, [3_800, 3_850, 3_870]) == (
        HEAD + "135.61 either way of its centre, more than the 0.38 % change (cached "
        "faster)" + TAIL)
