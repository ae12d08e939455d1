"""A step-time case warned off its nominal fixed step (``send_cost.case_off_nominal``:
the runner's wait, or cached's whole step) is named in its per-case finding, and the
share figure leaves out the shares the step-time table withholds (``-*``), its caption
counting them."""

from __future__ import annotations

import math

import pytest

from ipc_bench.report import findings, plots
from test_metrics import _summary
from test_withheld_figures import results_of

SEND_5MS = ("send: fixed step 5 ms ran a median 7.5 ms (+49 %): the runner was "
            "descheduled; its shares are withheld (-* in the step-time table): the step it "
               "measured is not the nominal one")


def _step_time(policy, b, step_ms, tps, step_ns, forward_ns, s2r_ns, rep=0):
    s = _summary(policy, rep, tps, step_ns + 1000)  # step_ns_median = step_ns
    return dict(s, scenario="step-time", model="fixed-step", workload=(
        f"num_running={b},step_time_ms={step_ms:g}"), num_running=b, step_time_ms=step_ms,
        fixed_step_ms=step_ms, runner_forward_ns_median=forward_ns,
        s2r_build_encode_decode_ns_median=s2r_ns,
        case_id=f"num_running={b},step_time_ms={step_ms:g}/{policy}/pickle#{rep}",
        codec="pickle")


def _rows():
    # The trial's 5 ms case at 64 running: send's runner waited a median 7.5 ms (+49 %,
    # warned), cached's 5.05 ms; cached's whole step 5.2 ms (within 5.5 + 0.44 ms).
    return [_step_time("send", 64, 5.0, 10_000.0, 7_760_000.0, 7_460_000.0, 60_000.0),
            _step_time("cached", 64, 5.0, 14_280.0, 5_200_000.0, 5_050_000.0, 20_000.0),
            _step_time("send", 64, 20.0, 3_000.0, 20_400_000.0, 20_050_000.0, 60_000.0),
            _step_time("cached", 64, 20.0, 3_010.0, 20_380_000.0, 20_050_000.0, 20_000.0)]


def _where(workload: str) -> str:
    return f"At {workload}"


def test_the_per_case_finding_names_the_off_nominal_warning():
    res = results_of(_rows())
    tables = findings._pair_tables(res)
    texts = {key[0]: findings._pair_finding(res.cases, tables, key, _where, timed=False)
             for key in tables["tput"]}
    assert texts["num_running=64,step_time_ms=5"].endswith(
        "output tokens/s changes by +42.8 % (one repetition, no interval: 10,000 → 14,280 "
        f"tok/s). Off nominal (warned): {SEND_5MS}; so these cases did not run the nominal "
        "step (--step-time-ms).")
    assert "Off nominal" not in texts["num_running=64,step_time_ms=20"]


def test_cached_whole_step_over_nominal_is_named_too():
    rows = _rows()
    rows[1] = dict(rows[1], step_ns_median=6_500_000.0)  # over 5.5 + 0.442 ms
    res = results_of(rows)
    tables = findings._pair_tables(res)
    key = next(k for k in tables["tput"] if k[0].endswith("=5"))
    text = findings._pair_finding(res.cases, tables, key, _where, timed=False)
    assert text.endswith(
        f"Off nominal (warned): {SEND_5MS}; cached: fixed step 5 ms: the whole step ran a "
        "median 6.50 ms (+30 %), more than 10 % + 0.44 ms (control plane at B = 64) over "
        "nominal: a process was descheduled outside the runner's wait; its shares are "
        "withheld (-* in the step-time table): the step it measured is not the nominal "
        "one; so these cases did not run the nominal step (--step-time-ms) "
        "(only cached's whole step is checked against the nominal step: send's, longer by "
        "what send costs, stands on the same step, and is checked for what its "
        "SchedulerOutput path does not explain).")


def _drawn_points(ax):
    """(x, y) of every drawn point of ``ax``'s series (lines with markers, not the 0
    and 1 % lines nor the cut markers; NaN: not drawn)."""
    return sorted((round(float(x), 6), round(float(y), 6)) for line in ax.lines
                  if line.get_gid() != plots.CUT_GID and line.get_marker() not in ("None", "")
                  for x, y in zip(line.get_xdata(), line.get_ydata()) if y == y)


def test_the_share_figure_leaves_out_the_withheld_shares():
    rows = _rows()
    rows += [dict(r, workload=r["workload"].replace("=64", "=16"), num_running=16,
                  case_id=r["case_id"].replace("=64", "=16")) for r in rows[2:]]
    fig = plots.send_cost_share(results_of(rows))
    ax = fig.axes[0]
    # cached's steps 5.2 ms (5 ms, off nominal: both shares withheld) and 20.38 ms:
    # only the 20 ms pairs' shares are drawn, whole step (20 / 20.38 ms = 0.0981 %)
    # and build + encode + decode (40 / 20,380 us = 0.1963 %), at both B
    whole, s2r = 100 * 20_000 / 20_380_000, 100 * 40_000 / 20_380_000
    # the two share cached's step, so they are drawn a little apart (plots._dodge_bars):
    # the whole step left, the s2r path right, each half of DODGE_STEP of the axis' log2
    # span (5.2 to 20.38 ms: the withheld pairs' x counts) away: 20.1035 and 20.6603 ms
    half = plots.DODGE_STEP * math.log2(20.38 / 5.2) / 2
    assert (round(20.38 * 2 ** -half, 4), round(20.38 * 2 ** half, 4)) == (20.1035, 20.6603)
    assert _drawn_points(ax) == sorted([(round(20.38 * 2 ** -half, 6), round(whole, 6))] * 2
                                       + [(round(20.38 * 2 ** half, 6), round(s2r, 6))] * 2)
    d = plots.drawn(fig)
    assert d["left_out"] == 2
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert not any("off nominal" in x for x in labels)
    from ipc_bench.report import blocks
    assert blocks.caption("send_cost_share", d).endswith(
        " 2 shares are not drawn, as the step-time table and the findings withhold them "
        "(`-*`): a pair whose fixed step ran off nominal (the runner's wait, or cached's "
        "whole step, more than 10 % over) did not have the step its label names, so "
        "neither share is drawn; a pair whose send's whole step ran longer than its "
        "SchedulerOutput path explains loses its whole-step share only. The findings "
        "give the warnings.")


def test_a_send_step_warning_leaves_out_the_whole_step_share_only():
    rows = [r for r in _rows() if r["step_time_ms"] == 20.0]
    rows += [dict(r, workload="num_running=256,step_time_ms=20", num_running=256,
                  case_id=r["case_id"].replace("=64", "=256")) for r in rows]
    rows[0] = dict(rows[0], send_cost_send_step_off=["fixed step 20 ms: send's whole step"])
    fig = plots.send_cost_share(results_of(rows))
    whole, s2r = 100 * 20_000 / 20_380_000, 100 * 40_000 / 20_380_000
    # B = 64: the whole step's share withheld, the s2r share drawn; B = 256: both; each
    # series a little apart (linear axis, 64 to 256: 2 % of the 192 span between the
    # two, 1.92 each way), the whole step left, the s2r path right
    assert _drawn_points(fig.axes[1]) == sorted(
        [(65.92, round(s2r, 6)), (254.08, round(whole, 6)), (257.92, round(s2r, 6))])
    assert plots.drawn(fig)["running"] == [64.0, 256.0]  # the true counts
    assert plots.drawn(fig)["left_out"] == 1


def test_a_figure_without_warned_cases_leaves_nothing_out():
    rows = [r for r in _rows() if r["step_time_ms"] == 20.0]
    rows += [dict(r, workload="num_running=256,step_time_ms=20", num_running=256)
             for r in rows]
    fig = plots.send_cost_share(results_of(rows))
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert not any("off nominal" in x for x in labels)
    assert plots.drawn(fig)["left_out"] == 0


def test_a_figure_whose_every_share_is_withheld_is_not_drawn():
    rows = [r for r in _rows() if r["step_time_ms"] == 5.0]
    rows += [dict(r, workload="num_running=16,step_time_ms=5", num_running=16,
                  case_id=r["case_id"].replace("=64", "=16")) for r in rows]
    with pytest.raises(plots.NoData) as exc:
        plots.send_cost_share(results_of(rows))
    assert str(exc.value) == (
        "every share is withheld (`-*` in the step-time table: each pair's fixed step ran "
        "off nominal, or send's whole step is not explained by its SchedulerOutput path); "
        "the findings give the warnings")


def test_a_step_shorter_than_the_models_own_work_is_not_called_descheduled():
    """--step-time-ms 0.0001: the model's sampling around the wait takes longer than
    the step; the median keeps its digits (not 0.0 ms)."""
    from ipc_bench.analysis.send_cost import off_nominal_warning

    assert off_nominal_warning(dict(fixed_step_ms=0.0001, runner_forward_ns_median=27196.0)) \
        == ("fixed step 0.0001 ms ran a median 0.0272 ms (+27096 %): a step this short is "
            "less than the model's own sampling and timer reads take, not a wait; its "
            "shares are of the measured step")


def test_a_replays_off_nominal_warning_speaks_of_its_figures_not_shares():
    """A trace replay computes no shares of the step: its warning says its figures are
    of the step it measured."""
    from ipc_bench.analysis.send_cost import whole_step_warning

    replay = dict(fixed_step_ms=2.0, step_ns_median=2_490_000.0, num_running=None,
                  workload="trace=azure-conv:30")
    assert whole_step_warning(replay) == (
        "fixed step 2 ms: the whole step ran a median 2.49 ms (+25 %), more than 10 % + "
        "0.25 ms (control plane) over nominal: a process was descheduled outside the "
        "runner's wait; its figures are of the measured step, not the nominal one")
    assert whole_step_warning(dict(replay, workload="num_running=4")).endswith(
        "; its shares are of the measured step")


def test_with_repetitions_each_warned_case_is_named_with_its_repetition():
    rows = _rows()[:2] + [dict(r, repetition=1, case_id=r["case_id"][:-1] + "1")
                          for r in _rows()[:2]]
    res = results_of(rows)
    tables = findings._pair_tables(res)
    key = next(k for k in tables["tput"] if k[0].endswith("=5"))
    text = findings._pair_finding(res.cases, tables, key, _where, timed=False)
    warning = SEND_5MS[len("send: "):]
    assert (f"Off nominal (warned): send (repetition 0): {warning}; send (repetition 1): "
            f"{warning}; so these cases") in text
