"""``send_cost_share.png``'s left panel (against cached's step time) joined each
series' points in the order of the running requests, so that a step not monotone in
them (a noisy one, a fixed-step sweep) drew the line back and forth across the axis.
Each panel's line joins its points in the order of its own x: the left one by step
time, the right one by running requests, as before."""

from __future__ import annotations

import pandas as pd

from ipc_bench.analysis.results import Results
from ipc_bench.report import plots
from test_metrics import _summary

#: running -> (send median step, cached median step, send - cached s2r), ns: cached's
#: step is 300, 100 and 200 µs at 4, 8 and 16 running requests
PAIRS = {4: (306_000.0, 300_000.0, 3_000.0), 8: (104_000.0, 100_000.0, 2_000.0),
         16: (210_000.0, 200_000.0, 4_000.0)}


def _results() -> Results:
    rows = []
    for b, (send_step, cached_step, d_s2r) in PAIRS.items():
        for policy, step, s2r in (("send", send_step, 9_000.0 + d_s2r),
                                  ("cached", cached_step, 9_000.0)):
            s = _summary(policy, 0, 50_000.0, step + 1000)  # step_ns_median = step
            s.update(workload=f"num_running={b}", num_running=b,
                     case_id=f"num_running={b}/{policy}/msgpack#0",
                     s2r_build_encode_decode_ns_median=s2r, run_id="run")
            rows.append(s)
    empty = pd.DataFrame(columns=["run_id", "case_id"])
    return Results(cases=pd.DataFrame(rows), steps=empty, requests=empty, floor=empty,
                   itl=empty, metadata={"run": {"cases": [{"labels": {"num_running": 4}}]}},
                   status={"run": "complete"}, problems={"run": []}, paths={"run": "run"})


def test_each_panel_joins_its_points_in_the_order_of_its_x():
    res = _results()
    table = plots.send_cost_table(res.cases, labels=res.labels)
    _, axes = plots._figure(1, 2)
    bars, _ = plots._send_cost_series(table, [], axes, {})
    drawn = [(b[0] is axes[0][0], b[6]["linewidth"], b[1], [round(y, 9) for y in b[2]])
             for b in bars]
    whole, s2r = plots.SHARE_LINEWIDTHS
    # whole step: +2 % at 4 (300 µs), +4 % at 8 (100 µs), +5 % at 16 (200 µs); the
    # SchedulerOutput path: +1 %, +2 %, +2 %
    assert drawn == [
        (True, whole, [0.1, 0.2, 0.3], [4.0, 5.0, 2.0]),
        (False, whole, [4.0, 8.0, 16.0], [2.0, 4.0, 5.0]),
        (True, s2r, [0.1, 0.2, 0.3], [2.0, 2.0, 1.0]),
        (False, s2r, [4.0, 8.0, 16.0], [1.0, 2.0, 2.0])]


def test_the_figures_step_panel_lines_run_left_to_right():
    fig = plots.send_cost_share(_results())
    for c in fig.axes[0].containers:
        xs = list(c.lines[0].get_xdata())
        assert xs == sorted(xs)
