"""Send's cost as a share of the step has one definition (``send_cost.mean_share``: the
mean difference over the mean of cached's step): the findings give it at every running
count, and ``send_cost_share.png`` draws that same number, not the mean of the
per-repetition shares, with the mean difference's interval over the same step."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from ipc_bench.analysis.results import Results
from ipc_bench.analysis.send_cost import mean_share
from ipc_bench.report import findings, plots
from test_metrics import _summary

#: (running, [(send median step, cached median step, send - cached s2r)] per repetition)
PAIRS = ((4, [(110_000.0, 100_000.0, 3_000.0), (130_000.0, 100_000.0, 5_000.0)]),
         # per-repetition shares 1 % and 2 % (mean 1.5 %), of means 4 / 250 = 1.60 %;
         # whole step -25 % and -33.3 % (mean -29.17 %), of means -75 / 250 = -30.00 %
         (16, [(150_000.0, 200_000.0, 2_000.0), (200_000.0, 300_000.0, 6_000.0)]))


def _rows() -> list[dict]:
    rows = []
    for b, reps in PAIRS:
        for rep, (send_step, cached_step, d_s2r) in enumerate(reps):
            for policy, step, s2r in (("send", send_step, 9_000.0 + d_s2r),
                                      ("cached", cached_step, 9_000.0)):
                s = _summary(policy, rep, 50_000.0, step + 1000)  # step_ns_median = step
                s.update(workload=f"num_running={b}", num_running=b,
                         case_id=f"num_running={b}/{policy}/msgpack#{rep}",
                         s2r_build_encode_decode_ns_median=s2r, run_id="run")
                rows.append(s)
    return rows


def _results(rows: list[dict]) -> Results:
    empty = pd.DataFrame(columns=["run_id", "case_id"])
    return Results(cases=pd.DataFrame(rows), steps=empty, requests=empty, floor=empty,
                   itl=empty, metadata={"run": {"cases": [{"labels": {"num_running": 4}}]}},
                   status={"run": "complete"}, problems={"run": []}, paths={"run": "run"})


def _where(workload: str) -> str:
    return f"At {workload.split('=')[1]} running requests"


def test_the_share_is_the_mean_difference_over_the_mean_step_with_its_interval():
    m = mean_share([-50_000.0, -100_000.0], [200_000.0, 300_000.0])
    assert (m.diff_ns, m.base_ns, m.share, m.pairs) == (-75_000.0, 250_000.0, -0.3, 2)
    # the ratio estimator's interval: residuals d - R c = (-50,000 + 60,000, -100,000 +
    # 90,000) = (10,000, -10,000) ns, sd 14,142 ns; Student-t, 1 degree of freedom:
    # 12.706 x 14,142 / sqrt(2) / 250,000 = 0.50825 (the difference's own interval over
    # a fixed step would be 12.706 x 35,355 / sqrt(2) / 250,000 = 1.2706 wide each side)
    assert m.low == pytest.approx(-0.3 - 0.508248, rel=1e-5)
    assert m.high == pytest.approx(-0.3 + 0.508248, rel=1e-5)
    assert (m.high + m.low) / 2 == pytest.approx(m.share)  # centred on the share
    one = mean_share([4_000.0], [100_000.0])
    assert (one.share, one.low, one.high) == (0.04, None, None)


def test_the_findings_give_the_share_at_every_running_count():
    cases = pd.DataFrame(_rows())
    assert findings._share_findings(cases, _where, ["num_running"]) == [
        "At 4 running requests (msgpack), send's SchedulerOutput path (build + encode + "
        "decode, medians) differs from cached's by +4.00 µs per step, +4.00 % of "
        "cached's step, 100.0 µs as the mean of its 2 repetitions' median steps (send - cached: "
        "[-8.71, +16.71] %, 95 % Student-t "
        "interval), inconclusive (interval beyond 1.1x either way); send's whole step, 120.0 µs as "
        "the same mean, differs from cached's "
        "by +20.00 % (send - cached: [-107.06, +147.06] %, 95 % Student-t interval), "
        "inconclusive (interval beyond 1.1x either way) (noisier; means over 2 "
        "repetitions of each case's figures, not the geometric means over repetitions that "
        "`bench.py`'s comparison block prints as `step median`).",
        "At 16 running requests (msgpack), send's SchedulerOutput path (build + encode + "
        "decode, medians) is not resolved from cached's: +4.00 µs per step, +1.60 % of "
        "cached's step, 250.0 µs as the mean of its 2 repetitions' median steps (send - cached: "
        "[-4.50, +7.70] %, 95 % Student-t "
        "interval), [-11, +19] µs per step: the interval holds 0 but reaches beyond 1 % of "
        "the step, so it does not show the cost is small; send's whole step, 175.0 µs as the same mean, differs from cached's "
        "by -30.00 % (send - cached: [-80.82, +20.82] %, 95 % Student-t interval), "
        "inconclusive (interval beyond 1.1x either way) (noisier; means over 2 "
        "repetitions of each case's figures, not the geometric means over repetitions that "
        "`bench.py`'s comparison block prints as `step median`)."]


def test_the_figure_draws_the_findings_share_and_its_interval():
    res = _results(_rows())
    fig = plots.send_cost_share(res)
    panel = fig.axes[1]  # against running requests
    drawn = {}
    for c in panel.containers:
        line = c.lines[0]
        drawn[line.get_linewidth()] = [round(y, 9) for y in line.get_ydata()]
    # whole step thick, s2r thin: 20.00 and -30.00 %, 4.00 and 1.60 % as the findings
    # say, not the means of the per-repetition shares (-29.17 and 1.50 % at 16)
    whole, s2r = plots.SHARE_LINEWIDTHS
    assert drawn == {whole: [20.0, -30.0], s2r: [4.0, 1.6]}
    table = plots.send_cost_table(res.cases, labels=res.labels)
    _, axes = plots._figure(1, 2)
    bars, _ = plots._send_cost_series(table, [], axes, {})
    at16 = mean_share([-50_000.0, -100_000.0], [200_000.0, 300_000.0])
    whole = next(b for b in bars if b[6]["linewidth"] == plots.SHARE_LINEWIDTHS[0])
    assert (whole[2][1], whole[3][1], whole[4][1]) == pytest.approx(
        (100 * at16.share, 100 * at16.low, 100 * at16.high))


def test_one_pair_per_point_draws_no_interval():
    rows = [r for r in _rows() if r["repetition"] == 0]
    table = plots.send_cost_table(pd.DataFrame(rows), labels=["num_running"])
    _, axes = plots._figure(1, 2)
    bars, _ = plots._send_cost_series(table, [], axes, {})
    whole = next(b for b in bars if b[6]["linewidth"] == plots.SHARE_LINEWIDTHS[0])
    assert whole[2] == pytest.approx([10.0, -25.0])
    assert all(math.isnan(v) for v in whole[3] + whole[4])


def test_the_single_process_series_is_named_build_alone():
    """The single process has no encode or decode: its thin series is its build."""
    rows = _rows()
    for s in list(rows):
        one = dict(s, codec="none", case_id=s["case_id"].replace("msgpack", "none"))
        rows.append(one)
    fig = plots.send_cost_share(_results(rows))
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["msgpack: whole step", "msgpack: build+encode+decode",
                      "single process: whole step", "single process: build"]
