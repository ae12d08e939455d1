"""A report of several runs compares the cached/send effect between runs: each run's
paired tokens/s ratio (as its own comparison gives it) and the ratio of each run's
effect to the baseline run's, with the unpaired Welch interval of their per-repetition
log ratios and its reading, under a note that a verdict that changed is no evidence by
itself."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import pandas as pd
from scipy.stats import t as student_t, ttest_ind

from ipc_bench.report.blocks import (EFFECT_VERDICT_NOTE, SIDE_NO_INTERVAL_NOTE,
                                     UNLIKE_CELL, _effect_blocks, effect_caption,
                                     effect_interval_note, effect_no_base_note,
                                     effect_no_run_note)

#: Per workload, per run: (send, cached) tokens/s over repetitions.
TOKENS = {
    "num_running=4": {"a": ([1000.0, 1000.0, 1000.0], [1100.0, 1120.0, 1080.0]),
                      "b": ([1000.0, 1000.0, 1000.0], [1000.0, 1150.0, 1250.0])},
    "num_running=8": {"a": ([2000.0, 2100.0], [2200.0, 2260.0]),
                      "b": ([2000.0], [2300.0])},          # one repetition: no interval
    "num_running=16": {"a": ([3000.0, 3000.0], [3300.0, 3330.0])},  # a alone: ratio -
}


def _runs(tokens=TOKENS, ids=("a", "b")) -> SimpleNamespace:
    rows = [dict(run_id=r, workload=w, policy=arm, codec="msgpack", repetition=i,
                 complete=True, output_tokens_per_s=v)
            for w, runs in tokens.items() for r, arms in runs.items()
            for arm, vals in zip(("send", "cached"), arms) for i, v in enumerate(vals)]
    return SimpleNamespace(run_ids=list(ids), cases=pd.DataFrame(rows),
                           metadata={r: {"ci_method": "t"} for r in ids})


def _paired(send, cached) -> tuple[float, float, float]:
    """The geometric mean of cached/send over repetitions and its Student-t interval."""
    logs = np.log(np.array(cached) / np.array(send))
    half = student_t.ppf(0.975, len(logs) - 1) * logs.std(ddof=1) / math.sqrt(len(logs))
    return tuple(math.exp(x) for x in (logs.mean(), logs.mean() - half, logs.mean() + half))


def _welch(base, run) -> tuple[float, float, float]:
    """run's over base's per-repetition ratios: geometric means and scipy's Welch interval."""
    lb = np.log(np.array(base[1]) / np.array(base[0]))
    lr = np.log(np.array(run[1]) / np.array(run[0]))
    ci = ttest_ind(lr, lb, equal_var=False).confidence_interval(0.95)
    return math.exp(lr.mean() - lb.mean()), math.exp(ci.low), math.exp(ci.high)


def test_each_runs_effect_and_its_ratio_to_the_baselines_with_welchs_interval():
    blocks = _effect_blocks(_runs())
    kind, header, rows = blocks[1]
    assert header == ["workload", "codec", "a", "b", "b ÷ a"]
    four = TOKENS["num_running=4"]
    pa, pb, w = _paired(*four["a"]), _paired(*four["b"]), _welch(four["a"], four["b"])
    eight = TOKENS["num_running=8"]
    p8 = _paired(*eight["a"])
    bare8 = (2300.0 / 2000.0) / math.sqrt((2200.0 / 2000.0) * (2260.0 / 2100.0))
    assert rows[0] == ["num_running=4", "msgpack",
                       f"{pa[0]:.3f} [{pa[1]:.3f}, {pa[2]:.3f}]",
                       f"{pb[0]:.3f} [{pb[1]:.3f}, {pb[2]:.3f}]",
                       f"{w[0]:.3f} [{w[1]:.3f}, {w[2]:.3f}] inconclusive"]
    assert rows == [["num_running=4", "msgpack", "1.100 [1.051, 1.151]",
                     "1.129 [0.853, 1.493]", "1.026 [0.783, 1.345] inconclusive"],
                    ["num_running=8", "msgpack", f"{p8[0]:.3f} [{p8[1]:.3f}, {p8[2]:.3f}]",
                     "1.150", f"{bare8:.3f}"],
                    ["num_running=16", "msgpack", "1.105 [1.043, 1.170]", "-", "-"]]
    assert rows[1][2:] == ["1.088 [0.947, 1.250]", "1.150", "1.057"]
    assert blocks[2:] == [("p", effect_no_run_note("b", "a", 1)),
                          ("p", effect_interval_note({"inconclusive"})),
                          ("p", SIDE_NO_INTERVAL_NOTE), ("p", EFFECT_VERDICT_NOTE)]


def test_the_caption_and_notes_say_what_is_compared_and_what_a_verdict_is_not():
    blocks = _effect_blocks(_runs())
    assert blocks[0] == ("p", "**cached/send output tokens/s, run by run** (each run's cell: "
                              "its paired ratio over its repetitions with its interval where "
                              "it has one, as in its own `cached against send` table; the ratio column, "
                              "`b ÷ a`, divides the geometric mean of each run's "
                              "per-repetition ratios by that of run `a`, the first loaded: "
                              "whether the policy's effect changed between the runs)")
    assert EFFECT_VERDICT_NOTE == (
        "A verdict that differs between runs (one run's comparison `significant`, "
        "another's `no significant difference after Holm`) is not by itself evidence "
        "that the effect changed: the interval of the effect's ratio is, and it reads "
        "`significant` only where it excludes 1.")
    assert effect_interval_note({"within noise", "significant"}) == (
        "Effect ratios (`1.042 [0.981, 1.097] within noise`): the 95 % Welch t interval "
        "of the difference of the two runs' mean log cached/send ratios over their "
        "repetitions (Welch-Satterthwaite degrees of freedom), as a ratio of their "
        "geometric means. Each run's ratios pair its own arms, but the two runs' "
        "repetitions are not pairs, so it carries both runs' noise; it is unadjusted for "
        "the number of rows. `within noise`: the interval holds 1 and stays within 1.1x "
        "either way; `significant`: it excludes 1 (the Welch t test's p below 0.05, "
        "unadjusted).")


def test_a_baseline_given_divides_and_is_named_so_even_when_loaded_first():
    three = {"num_running=4": dict(TOKENS["num_running=4"],
                                   c=([1000.0, 1000.0, 1000.0], [1100.0, 1120.0, 1080.0]))}
    blocks = _effect_blocks(_runs(three, ("a", "b", "c")), base="b")
    assert blocks[1][1] == ["workload", "codec", "a", "b", "c", "a ÷ b", "c ÷ b"]
    w = _welch(three["num_running=4"]["b"], three["num_running=4"]["a"])
    assert blocks[1][2][0][5:] == [f"{w[0]:.3f} [{w[1]:.3f}, {w[2]:.3f}] inconclusive"] * 2
    assert blocks[0][1].endswith("by that of run `b`, the baseline given: whether the "
                                 "policy's effect changed between the runs)")
    first = _effect_blocks(_runs(), base="a")[0][1]
    assert first.endswith("by that of run `a`, the baseline given: whether the policy's "
                          "effect changed between the runs)")


def test_identical_runs_read_exact_and_unlike_workloads_are_not_compared():
    same = {"num_running=4": {r: ([1000.0, 1000.0], [1100.0, 1100.0]) for r in "ab"}}
    blocks = _effect_blocks(_runs(same))
    assert blocks[1][2] == [["num_running=4", "msgpack", "1.100 [1.100, 1.100]",
                             "1.100 [1.100, 1.100]", "1.000 exact"]]
    assert blocks[2:] == [("p", effect_interval_note({"exact"}))]  # no verdict to differ
    assert effect_interval_note({"exact"}) == (  # no interval to describe
        "`exact`: every repetition of each run has the same cached/send ratio, so the "
        "ratio of the runs' effects has no spread to draw an interval from.")
    rows = _effect_blocks(_runs(), unlike={("b", "a"): {"num_running=4"}})[1][2]
    assert [(row[0], row[-1]) for row in rows] == [  # marked as the side-by-side rows
        ("num_running=4 ≠", UNLIKE_CELL), ("num_running=8", "1.057"),
        ("num_running=16", "-")]


def test_a_ratio_point_never_rounds_onto_1_beside_its_reading():
    """A ratio 3 decimals would print as 1.000 gets the decimals that show its side,
    as the pair table's points do (``stats.point_text``)."""
    close = {"num_running=4": {"a": ([1000.0] * 3, [1000.0, 1000.1, 1000.05]),
                               "b": ([1000.0] * 3, [999.6, 999.65, 999.7])}}
    cell = _effect_blocks(_runs(close))[1][2][0][-1]
    ratio, low, high = _welch(close["num_running=4"]["a"], close["num_running=4"]["b"])
    assert high < 1 and f"{ratio:.3f}" == "1.000"
    assert cell == "0.9996 [0.999, 0.9997] significant"


def test_run_names_with_backticks_stay_one_code_span():
    assert effect_caption(["a`x", "b"], "a`x") == (
        "**cached/send output tokens/s, run by run** (each run's cell: its paired ratio "
        "over its repetitions with its interval where it has one, as in its own `cached "
        "against send` table; the ratio column, ``b ÷ a`x``, divides the geometric mean "
        "of each run's per-repetition ratios by that of run ``a`x``, the first loaded: "
        "whether the policy's effect changed between the runs)")


def test_with_one_repetition_the_ratios_are_bare_and_no_verdict_note():
    one = {"num_running=8": {"a": ([2000.0], [2200.0]), "b": TOKENS["num_running=8"]["b"]}}
    blocks = _effect_blocks(_runs(one))
    assert blocks[1][2] == [["num_running=8", "msgpack", "1.100", "1.150",
                             f"{1.15 / 1.1:.3f}"]]
    assert f"{1.15 / 1.1:.3f}" == "1.045"
    assert blocks[2:] == [("p", SIDE_NO_INTERVAL_NOTE)]


def test_runs_that_share_no_pair_show_each_effect_without_a_ratio():
    alone = {"num_running=4": {"a": TOKENS["num_running=4"]["a"]},
             "num_running=8": {"b": TOKENS["num_running=8"]["b"]}}
    blocks = _effect_blocks(_runs(alone))
    assert blocks[1][2] == [["num_running=4", "msgpack", "1.100 [1.051, 1.151]", "-", "-"],
                            ["num_running=8", "msgpack", "-", "1.150", "-"]]
    assert blocks[2:] == [("p", effect_no_base_note("a")),
                          ("p", effect_no_run_note("b", "a", 1))]
    assert _effect_blocks(_runs(alone, ids=("a",))) == []  # one run: no table


def test_a_run_compared_by_medians_says_its_cells_and_the_column_differ():
    """Under ``--ci-method sign`` a run's cell is the median of its per-repetition
    ratios, the column a quotient of geometric means: equal cells beside a ratio that
    is not 1, so the table says which run's cells are medians."""
    skew = {"num_running=4": {"a": ([1000.0] * 3, [1100.0, 1100.1, 1300.0]),
                              "b": ([1000.0] * 3, [1099.6, 1099.65, 1099.7])}}
    results = _runs(skew)
    results.metadata["a"]["ci_method"] = "sign"
    blocks = _effect_blocks(results)
    row = blocks[1][2][0]
    assert row[2].split()[0] == "1.100" and row[-1].startswith("0.946 ")
    assert ("p", "Run `a` was compared with `--ci-method sign`: its cells are the median "
                 "of its per-repetition ratios with that method's interval where it has "
                 "pairs enough for one, as its own pair table gives them, while the ratio "
                 "columns divide geometric means, so its cell and a ratio column can "
                 "disagree.") in blocks
    assert not any("--ci-method" in b[1] for b in _effect_blocks(_runs(skew)))


def test_a_run_on_another_transport_meets_the_others_in_its_row():
    """Run ``b`` ran on shm-block, ``a`` on ipc: one row per workload with both runs'
    own effects and no ratio of the two, not two rows each lacking a run's cell, nor
    (with two runs) no row at all; told apart by the cases' transports even where the
    metadata records no difference (``unlike`` empty: a summary.json edited, or
    written by another tool)."""
    results = _runs()
    results.cases["transport"] = results.cases["run_id"].map({"a": "ipc", "b": "shm-block"})
    four = TOKENS["num_running=4"]
    pa, pb = _paired(*four["a"]), _paired(*four["b"])
    expected = [
        ["num_running=4 ≠", "msgpack", f"{pa[0]:.3f} [{pa[1]:.3f}, {pa[2]:.3f}]",
         f"{pb[0]:.3f} [{pb[1]:.3f}, {pb[2]:.3f}]", UNLIKE_CELL],
        ["num_running=8 ≠", "msgpack", "1.088 [0.947, 1.250]", "1.150", UNLIKE_CELL],
        ["num_running=16", "msgpack", "1.105 [1.043, 1.170]", "-", "-"]]
    for unlike in ({("b", "a"): {"num_running=4", "num_running=8"}}, {}):
        assert _effect_blocks(results, unlike=unlike)[1][2] == expected
    assert _paired(*TOKENS["num_running=8"]["a"])[0] == pytest.approx(1.088, abs=5e-4)
    # the same transport in both: compared
    results.cases["transport"] = "shm-block"
    assert _effect_blocks(results)[1][2][1][-1] == "1.057"


def test_a_run_compared_by_medians_without_a_cell_gets_no_note():
    tokens = {"num_running=4": {"a": TOKENS["num_running=4"]["a"],
                                "b": TOKENS["num_running=4"]["b"]},
              "num_running=8": {"c": TOKENS["num_running=8"]["a"][:1]}}  # send alone
    results = _runs(tokens, ids=("a", "b", "c"))
    results.metadata["c"]["ci_method"] = "sign"
    blocks = _effect_blocks(results)
    assert [row[4] for row in blocks[1][2]] == ["-"]  # c has no cached/send pair
    assert not any("--ci-method" in b[1] for b in blocks)
