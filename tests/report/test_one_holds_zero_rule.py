"""One rule for every share whose interval holds 0, through ``_holds_zero_words``: the
whole step's share (``step_difference``) reads "not resolved" where its interval holds 0
within 1.1x but reaches beyond 1 % of the step, as the SchedulerOutput path's and the
net share's do, so that one share line never calls a wide whole-step interval within
noise beside a narrower path interval it calls not resolved; and the step-length line
(``step_length_line``) says the path's cost per step depends on the step's length only
where both costs are resolved from 0 and their intervals are apart, printing each with
its interval and the digits that show the ratio."""
from __future__ import annotations

from ipc_bench.analysis.send_cost import (CostRow, path_difference, ratio_clause,
                                          step_difference, step_length_line)

UNRESOLVED = (": the interval holds 0 but reaches beyond 1 % of the step, so it does not "
              "show the cost is small")


def test_a_wide_whole_step_interval_is_not_resolved_as_the_paths_is():
    # the reviewer's figures: the path's [-0.42, +3.10] % and the whole step's
    # [-0.20, +8.33] % read alike
    assert path_difference(157160, 0.0134, (-0.0042, 0.031), "cached's step", "t", 5,
                           11.7e6) == (
        "is not resolved from cached's: +157.16 µs per step, +1.34 % of cached's step "
        "(send - cached: [-0.42, +3.10] %, 95 % Student-t interval), [-49, +363] µs per "
        "step" + UNRESOLVED)
    assert step_difference(0.0406, (-0.0020, 0.0833), "t", 5) == (
        "is not resolved from cached's: +4.06 % (send - cached: [-0.20, +8.33] %, 95 % "
        "Student-t interval)" + UNRESOLVED)
    # within 1 % either way: within noise, as before
    assert step_difference(0.0019, (-0.0004, 0.0042), "t", 5) == (
        "is within noise of cached's: +0.19 % (send - cached: [-0.04, +0.42] %, 95 % "
        "Student-t interval)")


def test_the_block_clause_beside_a_share_not_resolved_gives_the_blocks_words_alone():
    ratio = (0.978, 0.852, 1.123)
    assert ratio_clause((-0.0747, 0.0833), ratio) == (
        "; the comparison block's step median, cached/send 0.978 [0.852, 1.123], holds 1 "
        "but reaches beyond 1.1x either way")
    # a share within noise (within 1 %) beside it keeps its clause
    assert ratio_clause((-0.004, 0.008), ratio) == (
        " by this share, but the comparison block's step median, cached/send 0.978 "
        "[0.852, 1.123], holds 1 but reaches beyond 1.1x either way: within noise is not "
        "established")


def _row(step_ms: float, s2r_ns: float, measured_ns: float,
         interval: tuple[float, float]) -> CostRow:
    return CostRow(step_ms, 1, "msgpack", 0.0, s2r_ns, measured_ns, 0.0,
                   s2r_ns / measured_ns, repetitions=5, s2r_interval=interval)


def test_a_noisy_pair_of_path_costs_gives_no_step_length_line():
    # the reviewer's rows: 400 ns at 2 ms, 1,200 ns at 5 ms, 3x apart, but each
    # interval holds 0
    rows = [_row(2.0, 400.0, 2e6, (-0.0005, 0.0009)), _row(5.0, 1200.0, 5e6, (-0.0004, 0.0009))]
    assert step_length_line(rows) is None
    # resolved from 0 but overlapping: [0.2, 0.6] and [0.5, 1.9] µs
    rows = [_row(2.0, 400.0, 2e6, (0.0001, 0.0003)), _row(5.0, 1200.0, 5e6, (0.0001, 0.00038))]
    assert step_length_line(rows) is None


def test_a_resolved_pair_gives_the_line_with_its_intervals():
    rows = [_row(2.0, 400.0, 2e6, (0.00015, 0.00025)),
            _row(5.0, 1200.0, 5e6, (0.0002, 0.00028))]
    assert step_length_line(rows) == (
        "send's SchedulerOutput path cost per step changed with the step time at the "
        "same B and codec (msgpack at B = 1: 0.40 µs [0.30, 0.50] at 2 ms, 1.20 µs "
        "[1.00, 1.40] at 5 ms): the messages are the same, so on this machine the cost "
        "per step depends on the step's length, not on the messages alone, and a share "
        "at one step time does not carry to another.")
