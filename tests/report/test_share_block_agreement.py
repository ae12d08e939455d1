"""The whole step's share line and the comparison block read the same median steps:
where the share's interval (send - cached over cached's step, the ratio estimator's)
stays within 1.1x either way but the block's ratio (cached/send, the per-pair geometric mean,
``stats.paired_ratio``) reaches beyond it or excludes 1, the line does not say within
noise alone (``send_cost.block_clause``); where they agree it is unchanged."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest

from ipc_bench.analysis.send_cost import (block_clause, reading, record_step_shares,
                                          steady_share_words, step_shares)
from ipc_bench.analysis.stats import compare_cases
from ipc_bench.report import findings
from test_metrics import _summary

#: cached's median step per repetition (ns): one short repetition among two long ones
CACHED_STEPS = [100_000.0, 300_000.0, 300_000.0]
#: send - cached per repetition: +9 % of the short step, -1 % of each long one; the
#: share (weighted by the step) +0.43 % [-7.47, +8.33] %, the per-pair ratios'
#: geometric mean 0.978 [0.852, 1.123]
DISAGREE = [9_000.0, -3_000.0, -3_000.0]
S2R = [1_000.0, 1_100.0, 1_200.0]

TAIL = (" (noisier; means over 3 repetitions of each case's figures, not the geometric "
        "means over repetitions that `bench.py`'s comparison block prints as `step "
        "median`).")
UNRESOLVED = (": the interval holds 0 but reaches beyond 1 % of the step, so it does not "
              "show the cost is small")
PATH = ("send's SchedulerOutput path (build + encode + decode, medians) is within noise "
        "of cached's: +1.10 µs per step, +0.47 % of cached's step, {base} µs as the mean "
        "of its 3 repetitions' median steps (send - cached: [-0.02, +0.96] %, 95 % "
        "Student-t interval); ")


def test_a_share_within_noise_beside_a_block_ratio_beyond_10_pct_is_not_noise_alone():
    shares = step_shares(S2R, DISAGREE, CACHED_STEPS, "t")
    point, low, high = shares.block_ratio
    assert (round(point, 4), round(low, 4), round(high, 4)) == (0.9782, 0.8521, 1.123)
    assert (round(shares.whole.low, 4), round(shares.whole.high, 4)) == (-0.0747, 0.0833)
    assert (reading((shares.whole.low, shares.whole.high)),
            reading((low, high), 1.0)) == ("within noise", "inconclusive")
    assert steady_share_words(shares) == (
        PATH.format(base="233.3") + "send's whole step, 234.3 µs as the same mean, is "
        "not resolved from cached's: +0.43 % (send - cached: [-7.47, +8.33] %, 95 % "
        "Student-t interval)" + UNRESOLVED + "; the comparison block's step median, "
        "cached/send 0.978 [0.852, 1.123], holds 1 but reaches beyond 1.1x either way" + TAIL)


def test_where_the_share_and_the_block_agree_the_line_is_unchanged():
    # steps of 290, 300, 310 µs, send +1.0, -2.0, +1.5 µs: both intervals hold 0 (1)
    # and stay within 1.1x either way
    shares = step_shares(S2R, [1_000.0, -2_000.0, 1_500.0],
                         [290_000.0, 300_000.0, 310_000.0], "t")
    point, low, high = shares.block_ratio
    assert (round(point, 4), round(low, 4), round(high, 4)) == (0.9995, 0.984, 1.0152)
    assert block_clause(shares) == ""
    words = steady_share_words(shares)
    assert words == steady_share_words(replace(shares, block_ratio=None)) == (
        "send's SchedulerOutput path (build + encode + decode, medians) costs 1.10 µs per "
        "step more than cached's, 0.37 % of cached's step, 300.0 µs as the mean of its 3 "
        "repetitions' median steps (send - cached: [+0.31, +0.42] %, 95 % Student-t "
        "interval); send's whole step, 300.2 µs as the same mean, is not resolved from "
        "cached's: +0.06 % (send - cached: [-1.51, +1.62] %, 95 % Student-t interval)"
        + UNRESOLVED + TAIL)


@pytest.mark.parametrize("cached, diffs, clause", [
    # the share excludes 0 ([+0.33, +8.24] %), the block's ratio holds 1 (0.903 is
    # below 1/1.1)
    ([300_000.0, 300_000.0, 100_000.0], [15_000.0, 15_000.0, 0.0],
     ", but the comparison block's step median, cached/send 0.968 [0.903, 1.038], holds "
     "1 but reaches beyond 1.1x either way: the difference is not established"),
    # the share not resolved ([-8.47, +0.19] %), the block's ratio excludes 1: the
    # block's words alone
    ([300_000.0, 100_000.0, 300_000.0], [-16_000.0, -5_000.0, -8_000.0],
     "; the comparison block's step median, cached/send 1.045 [1.007, 1.085], excludes 1"),
    # the share inconclusive (kept: [-1.69, +10.19] %), the block's ratio within 1.1x either way
    ([300_000.0, 300_000.0, 200_000.0], [8_000.0, 20_000.0, 6_000.0],
     ", though the comparison block's step median, cached/send 0.961 [0.911, 1.013], "
     "holds 1 and stays within 1.1x either way"),
    # share [-1.59, +10.59] % and cached/send [0.908, 1.012]: reciprocals near enough
    # that both reach beyond a factor of 1.1, so no clause
    ([300_000.0, 300_000.0, 200_000.0], [9_000.0, 21_000.0, 6_000.0], ""),
])
def test_each_disagreement_names_the_blocks_ratio(cached, diffs, clause):
    assert block_clause(step_shares(S2R, diffs, cached, "t")) == clause


def test_a_recorded_verdict_takes_the_place_of_the_clause():
    shares = step_shares(S2R, [15_000.0, 15_000.0, 0.0],
                         [300_000.0, 300_000.0, 100_000.0], "t")
    verdict = ", but the comparison's step median is not significant after Holm"
    words = steady_share_words(shares, verdict=verdict)
    assert verdict + " (noisier" in words and "comparison block's" not in words


def _rows() -> list[dict]:
    rows = []
    for rep, (cached, diff) in enumerate(zip(CACHED_STEPS, DISAGREE)):
        for policy, step, s2r in (("send", cached + diff, 9_000.0 + S2R[rep]),
                                  ("cached", cached, 9_000.0)):
            s = _summary(policy, rep, 50_000.0, step + 1000)  # step_ns_median = step
            s.update(workload="num_running=256", num_running=256,
                     case_id=f"num_running=256/{policy}/msgpack#{rep}",
                     s2r_build_encode_decode_ns_median=s2r, run_id="run")
            rows.append(s)
    return rows


def test_the_finding_and_the_terminal_give_the_block_ratio_the_block_records():
    rows = _rows()
    block = [c["metrics"]["step_ns_median"] for c in compare_cases(rows)]
    assert [(round(m["ratio_geomean"], 3), round(m["ratio_ci_low"], 3),
             round(m["ratio_ci_high"], 3)) for m in block] == [(0.978, 0.852, 1.123)]
    terminal = record_step_shares(rows)[("num_running=256", "msgpack")]
    assert [round(x, 9) for x in terminal.block_ratio] == \
        [round(block[0][k], 9) for k in ("ratio_geomean", "ratio_ci_low", "ratio_ci_high")]
    line, = findings._share_findings(pd.DataFrame(rows),
                                     lambda w: "At 256 running requests", ["num_running"])
    assert line == (
        "At 256 running requests (msgpack), " + PATH.format(base="233.3")
        + "send's whole step, 234.3 µs as the same mean, is not resolved from cached's: "
        "+0.43 % (send - cached: [-7.47, +8.33] %, 95 % Student-t interval)" + UNRESOLVED
        + "; the comparison block's step median, cached/send 0.978 [0.852, 1.123], holds 1 "
        "but reaches beyond 1.1x either way" + TAIL)


def _step_time_records(pairs: list[tuple[float, float]]) -> list[dict]:
    """step-time send records: (cached's median step, send - cached) in ns per pair."""
    return [dict(policy="send", send_cost_share_of_step=d / c, step_time_ms=0.3,
                 num_running=16, codec="msgpack", send_cost_step_ns=d,
                 send_cost_measured_step_ns=c, send_cost_s2r_ns=1_000.0)
            for c, d in pairs]


def test_a_step_time_share_line_names_the_block_ratio_where_it_reads_otherwise():
    from ipc_bench.analysis.send_cost import cost_rows, share_line

    # cached 100, 300, 300 µs; send +9 % on the short step, -1 % on the long ones: the
    # share is +0.43 % [-7.47, +8.33] %, the block's cached/send 0.978 [0.852, 1.123]
    row = cost_rows(_step_time_records([(100_000.0, 9_000.0), (300_000.0, -3_000.0),
                                        (300_000.0, -3_000.0)]))[0]
    assert [round(x, 3) for x in row.block_ratio] == [0.978, 0.852, 1.123]
    line = share_line(row)
    assert ("send's whole median step is not resolved from cached's: +0.43 % (send - "
            "cached: [-7.47, +8.33] %, 95 % Student-t interval)" + UNRESOLVED + "; the "
            "comparison block's step median, cached/send 0.978 [0.852, 1.123], ") in line
    assert "1.1x either way (noisier). Means over 3 repetitions" in line


def test_a_step_time_share_line_of_one_repetition_names_no_block_ratio():
    from ipc_bench.analysis.send_cost import cost_rows, share_line

    row = cost_rows(_step_time_records([(100_000.0, 9_000.0)]))[0]
    assert row.block_ratio is None
    assert share_line(row) == (
        "fixed step 0.3 ms, B = 16, msgpack: send's SchedulerOutput path (build + encode "
        "+ decode, medians) costs 1.00 µs per step more than cached's, 1.00 % of the "
        "measured step (cached's median, 0.10 ms); send's whole median step is 9.00 % "
        "longer than cached's (noisier). One repetition, no interval.")
