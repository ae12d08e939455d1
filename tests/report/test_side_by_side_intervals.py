"""A side-by-side ratio of two runs with repetitions carries its unpaired (Welch) 95 %
interval and the noise band's reading; with one repetition it stays bare, said once."""

from __future__ import annotations

import math
import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
from scipy.stats import ttest_ind

from ipc_bench.report.blocks import (SIDE_ARITHMETIC_NOTE, SIDE_NO_INTERVAL_NOTE,
                                     _side_by_side, side_interval_note)
from ipc_bench.report.render import render_html, render_markdown

#: Tokens/s of each run's repetitions per workload: within noise, inconclusive,
#: significant (b with 4 repetitions against a's 3), one repetition in run a, a 0.
TOKENS = {"num_running=4": ([1000.0, 1010.0, 990.0], [1002.0, 1012.0, 995.0]),
          "num_running=8": ([1000.0, 1300.0, 800.0], [1100.0, 1200.0, 900.0]),
          "num_running=16": ([1000.0, 1010.0, 990.0], [1200.0, 1212.0, 1195.0, 1230.0]),
          "num_running=32": ([1000.0], [1100.0, 1200.0]),
          "num_running=64": ([0.0, 10.0], [5.0, 10.0])}


def _runs(values: dict[str, tuple[list[float], list[float]]] = TOKENS,
          key: str = "output_tokens_per_s", **extra) -> SimpleNamespace:
    rows = [dict(workload=w, policy="send", codec="msgpack", run_id=run, repetition=i,
                 **{key: v}, **extra)
            for w, runs in values.items() for run, vals in zip("ab", runs)
            for i, v in enumerate(vals)]
    return SimpleNamespace(run_ids=["a", "b"], cases=pd.DataFrame(rows))


def _welch(a: list[float], b: list[float]) -> tuple[float, float, float]:
    """b over a: the quotient of geometric means and scipy's Welch interval of the
    difference of mean logs, exponentiated."""
    la, lb = np.log(a), np.log(b)
    with warnings.catch_warnings():  # scipy's warning on a sample of equal values
        warnings.simplefilter("ignore", RuntimeWarning)
        ci = ttest_ind(lb, la, equal_var=False).confidence_interval(0.95)
    return math.exp(lb.mean() - la.mean()), math.exp(ci.low), math.exp(ci.high)


def test_each_ratio_carries_its_welch_interval_and_reading():
    blocks = _side_by_side(_runs(), "output_tokens_per_s")
    cells = {row[0]: row[-1] for row in blocks[1][2]}
    for w, word in (("num_running=4", "within noise"), ("num_running=8", "inconclusive"),
                    ("num_running=16", "significant")):
        ratio, low, high = _welch(*TOKENS[w])
        assert cells[w] == f"{ratio:.3f} [{low:.3f}, {high:.3f}] {word}"
    assert cells == {"num_running=4": "1.003 [0.982, 1.025] within noise",
                     "num_running=8": "1.045 [0.636, 1.718] inconclusive",
                     "num_running=16": "1.209 [1.183, 1.236] significant",
                     "num_running=32": "1.149",
                     "num_running=64": "1.414"}
    assert blocks[1][2][-1][3:5] == ["5 †", "7"]


def test_the_interval_is_welchs_not_the_pooled_students():
    """Unequal repetitions and spread: the pooled-variance interval prints otherwise."""
    a, b = TOKENS["num_running=16"]
    la, lb = np.log(a), np.log(b)
    pooled = ttest_ind(lb, la, equal_var=True).confidence_interval(0.95)
    shown = _side_by_side(_runs(), "output_tokens_per_s")[1][2][2][-1]
    assert shown == "1.209 [1.183, 1.236] significant"
    assert f"[{math.exp(pooled.low):.3f}, {math.exp(pooled.high):.3f}]" == "[1.182, 1.238]"


def test_the_notes_say_what_the_intervals_are_and_which_ratios_have_none():
    blocks = _side_by_side(_runs(), "output_tokens_per_s")
    assert blocks[2:] == [("p", SIDE_ARITHMETIC_NOTE),
                          ("p", side_interval_note({"within noise", "inconclusive",
                                                    "significant"})),
                          ("p", SIDE_NO_INTERVAL_NOTE)]
    assert blocks[3][1] == (
        "Ratio intervals (`1.042 [0.981, 1.097] within noise`): the 95 % Welch t "
        "interval of the difference of the two runs' mean log values over their "
        "repetitions (Welch-Satterthwaite degrees of freedom), as a ratio of geometric "
        "means. It is unpaired: the runs ran at other times, so their repetitions are "
        "not pairs, and it carries both runs' noise and any drift between the times they "
        "ran; it is unadjusted for the number of rows, and is not the paired interval of "
        "a run's own comparison. `within noise`: the interval holds 1 and stays within "
        "1.1x either way; `inconclusive`: it holds 1 but reaches beyond 1.1x either way, "
        "too few repetitions or too noisy to tell a 10 % difference from none; "
        "`significant`: it excludes 1 (the Welch t test's p below 0.05, unadjusted).")
    assert SIDE_NO_INTERVAL_NOTE == (
        "A ratio with no interval (a bare number such as `1.042`): one of its two runs "
        "has only one repetition with a value in that row, so there is no spread to draw "
        "an interval from.")
    assert SIDE_ARITHMETIC_NOTE.endswith(
        "which the ratio columns use for it, with no interval (no logarithm of such a "
        "value).")


def test_only_the_readings_shown_are_defined():
    blocks = _side_by_side(_runs({"num_running=4": TOKENS["num_running=4"]}),
                           "output_tokens_per_s")
    assert blocks[1][2] == [["num_running=4", "send", "msgpack", "1,000", "1,003",
                             "1.003 [0.982, 1.025] within noise"]]
    assert len(blocks) == 3
    assert blocks[2][1].endswith("a run's own comparison. `within noise`: the interval "
                                 "holds 1 and stays within 1.1x either way.")


def test_one_repetition_each_gives_the_bare_ratio_and_one_note():
    values = {"num_running=4": ([1000.0], [1100.0]), "num_running=8": ([900.0], [800.0])}
    blocks = _side_by_side(_runs(values), "output_tokens_per_s")
    assert [row[-1] for row in blocks[1][2]] == ["1.100", "0.889"]
    assert blocks[2:] == [("p", SIDE_NO_INTERVAL_NOTE)]


def test_a_value_of_zero_keeps_the_arithmetic_ratio_without_interval_or_note():
    values = {"num_running=64": TOKENS["num_running=64"]}
    blocks = _side_by_side(_runs(values), "output_tokens_per_s")
    assert blocks[1][2] == [["num_running=64", "send", "msgpack", "5 †", "7",
                             "1.414"]]
    assert blocks[2:] == [("p", SIDE_ARITHMETIC_NOTE)]


def test_repetitions_that_agree_exactly_read_exact():
    """Bytes per step, the same in every repetition of both runs: no spread, no
    interval; one run with spread gets its interval."""
    values = {"num_running=4": ([400.0, 400.0], [402.0, 402.0, 402.0]),
              "num_running=8": ([800.0, 800.0], [800.0, 808.0])}
    blocks = _side_by_side(_runs(values, "sched_to_runner_payload_bytes_per_step"),
                           "sched_to_runner_payload_bytes_per_step")
    ratio, low, high = _welch(*values["num_running=8"])
    assert [row[-1] for row in blocks[1][2]] == [
        "1.005 exact", f"{ratio:.3f} [{low:.3f}, {high:.3f}] within noise"]
    assert blocks[1][2][1][-1] == "1.005 [0.943, 1.071] within noise"
    assert blocks[2][1].endswith(
        "`within noise`: the interval holds 1 and stays within 1.1x either way; `exact`: every "
        "repetition of each run has the same value (as bytes per step for a seed), so "
        "the ratio has no spread to draw an interval from.")
    exact = _side_by_side(_runs({"num_running=4": values["num_running=4"]},
                                "sched_to_runner_payload_bytes_per_step"),
                          "sched_to_runner_payload_bytes_per_step")
    assert exact[2:] == [("p", "`exact`: every repetition of each run has the same value "
                               "(as bytes per step for a seed), so the ratio has no "
                               "spread to draw an interval from.")]


def test_three_runs_each_ratio_has_its_own_interval():
    c = [1500.0, 1480.0, 1530.0]
    rows = [dict(workload="num_running=4", policy="send", codec="msgpack", run_id=r,
                 output_tokens_per_s=v)
            for r, vals in zip("abc", TOKENS["num_running=4"] + (c,)) for v in vals]
    blocks = _side_by_side(SimpleNamespace(run_ids=["a", "b", "c"],
                                           cases=pd.DataFrame(rows)),
                           "output_tokens_per_s", base="b")
    ratio, low, high = _welch(TOKENS["num_running=4"][1], c)
    assert blocks[1][1][-2:] == ["a ÷ b", "c ÷ b"]
    assert blocks[1][2][0][-2:] == ["0.997 [0.976, 1.018] within noise",
                                    f"{ratio:.3f} [{low:.3f}, {high:.3f}] significant"]


def test_a_load_bound_timed_replays_wall_ratio_has_its_interval():
    """A timed replay load-bound in every case of both runs: its wall tok/s ratio gets
    the same interval; arrival-bound in one, it stays withheld."""
    values = {"trace=azure-conv-timed:15": ([600.0, 610.0], [660.0, 650.0])}
    extra = dict(trace_speedup=20.0, waiting_step_share=0.8, num_waiting_mean=2.4,
                 arrival_span_share=0.9, idle_share=0.0)
    blocks = _side_by_side(_runs(values, **extra), "output_tokens_per_s")
    ratio, low, high = _welch(*values["trace=azure-conv-timed:15"])
    assert blocks[1][2] == [["trace=azure-conv-timed:15", "send", "msgpack", "605 (wall)",
                             "655 (wall)",
                             f"{ratio:.3f} [{low:.3f}, {high:.3f}] significant"]]
    assert blocks[1][2][0][-1] == "1.083 [1.031, 1.137] significant"
    paced = _runs(values, **dict(extra, waiting_step_share=0.0))
    assert _side_by_side(paced, "output_tokens_per_s")[1][2][0][-1] == "- (arrival-bound)"


def test_markdown_and_html_show_the_cells_as_built():
    values = {"num_running=4": TOKENS["num_running=4"],
              "num_running=8": ([100.0, 400.0], [300.0, 301.0])}
    blocks = _side_by_side(_runs(values), "output_tokens_per_s")
    md = render_markdown(blocks)
    assert ("| num_running=4 | send | msgpack | 1,000 | 1,003 | 1.003 [0.982, 1.025] "
            "within noise |") in md
    assert ("| num_running=8 | send | msgpack | 200 | 300 | 1.502 [<0.001, >1000] "
            "inconclusive |") in md
    html = render_html(blocks, "t")
    assert "<td>1.003 [0.982, 1.025] within noise</td>" in html
    assert "<td>1.502 [&lt;0.001, &gt;1000] inconclusive</td>" in html
    assert "<code>within noise</code>: the interval holds 1" in html


def test_a_ratio_point_never_rounds_onto_1_beside_significant_or_exact():
    """Points get the decimals that show their side of 1 (``stats.point_text``), as the
    pair table's do: `1.000` beside an interval below 1, or beside `exact` for bytes
    that differ (2,000 against 2,000.8), would say the runs agree."""
    close = {"num_running=4": ([1000.0, 1000.1, 1000.05], [999.6, 999.65, 999.7])}
    assert _side_by_side(_runs(close), "output_tokens_per_s")[1][2][0][-1] == (
        "0.9996 [0.999, 0.9997] significant")
    key = "sched_to_runner_payload_bytes_per_step"
    bytes_ = {"num_running=4": ([2000.0, 2000.0], [2000.8, 2000.8]),
              "num_running=8": ([800.0, 800.0], [800.0, 800.0])}
    assert [row[-1] for row in _side_by_side(_runs(bytes_, key), key)[1][2]] == [
        "1.0004 exact", "1.000 exact"]
