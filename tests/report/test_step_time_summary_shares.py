"""The step-time scenario's summary table carries the shares its share lines state
(``send_cost.cost_rows``: send - cached over cached's measured step), where it showed
`—` in both share columns: its rows are keyed by the cases' workload label
(``num_running=16,step_time_ms=2.0``), and the shares were only looked up from the
decode-steady share lines. A share a line withholds (``-*``: the fixed step ran off
nominal, or send's whole step ran longer than its SchedulerOutput path explains) reads
withheld in its cell too."""

from __future__ import annotations

import pandas as pd

from ipc_bench.analysis.results import Results
from ipc_bench.report import findings
from ipc_bench.scenarios.step_time import report
from test_findings_summary import _share_cell
from test_metrics import _summary

#: cached's and send's median steps (ns) and send's SchedulerOutput path (ns; cached's
#: 9,000) per repetition, at 16 running requests and a 2 ms fixed step
CACHED = (2_100_000.0, 2_110_000.0, 2_090_000.0)
SEND = (2_104_000.0, 2_116_000.0, 2_092_000.0)
S2R = (12_000.0, 12_500.0, 11_800.0)


def _case(policy: str, rep: int, step: float, s2r: float, tps: float, b: int = 16,
          ms: float = 2.0, forward_ms: float | None = None) -> dict:
    """A finished step-time case's summary (``test_metrics._summary``'s fields), its
    median step ``step`` and SchedulerOutput path ``s2r`` (ns), its runner's median
    forward ``forward_ms`` (the nominal ``ms`` where not given)."""
    s = _summary(policy, rep, tps, step + 1000)
    w = f"num_running={b},step_time_ms={ms}"
    s.update(scenario="step-time", workload=w, case_id=f"{w}/{policy}/msgpack#{rep}",
             num_running=b, step_time_ms=ms, fixed_step_ms=ms, model="fixed-step",
             step_ns_median=step, s2r_build_encode_decode_ns_median=s2r,
             runner_forward_ns_median=(forward_ms or ms) * 1e6, run_id="run")
    return s


def _results(rows: list[dict]) -> Results:
    """One run of ``rows``, their ``send_cost_*`` fields filled as the run records
    them (``scenarios.step_time.report``)."""
    report(rows)
    empty = pd.DataFrame(columns=["run_id", "case_id"])
    labels = {"num_running": 16, "step_time_ms": 2.0}
    return Results(cases=pd.DataFrame(rows), steps=empty, requests=empty, floor=empty,
                   itl=empty, metadata={"run": {"cases": [{"labels": labels}]}},
                   status={"run": "complete"}, problems={"run": []}, paths={"run": "run"})


def _rows(b: int = 16, ms: float = 2.0, send=SEND, cached=CACHED, forward_ms=None):
    out = []
    for rep in range(3):
        out += [_case("send", rep, send[rep], S2R[rep], 7_600.0 - 10 * rep, b, ms, forward_ms),
                _case("cached", rep, cached[rep], 9_000.0, 7_620.0 + 10 * rep, b, ms,
                      forward_ms)]
    return out


def test_a_step_time_rows_share_cells_hold_its_lines_figures():
    items = findings.findings(_results(_rows()))
    (row,) = items.summary[1]
    path = _share_cell([s - 9_000.0 for s in S2R], list(CACHED))
    whole = _share_cell([s - c for s, c in zip(SEND, CACHED)], list(CACHED))
    assert row == ["num_running=16,step_time_ms=2.0", "msgpack, fixed-step model",
                   "81 (5.3 %)", "+0.5 % [-0.1, +1.2] %",
                   "no significant difference; the tok/s interval spans a factor of 1.01 "
                   "either way of its centre, more than the 0.15 % change (cached faster) "
                   "the SchedulerOutput path share implies: this run cannot tell a change "
                   "of that size from none in tokens/s", path, whole, "—"]  # a step-time line: no net share  # a step-time line gives no net share
    assert row[5:7] == ["+0.15 % [+0.11, +0.19] %", "+0.19 % [-0.04, +0.42] %"]
    # the share line states the same figures
    (line,) = [f for f in items if f.startswith("fixed step 2 ms, B = 16, msgpack:")]
    assert ("costs 3.10 µs per step more than cached's, 0.15 % of the measured step "
            "(cached's median, 2.10 ms as the mean of its 3 repetitions' medians) (send - "
            "cached: [+0.11, +0.19] %, 95 % Student-t interval); send's whole median step "
            "is within noise of cached's: +0.19 % (send - cached: [-0.04, +0.42] %, 95 % "
            "Student-t interval) (noisier).") in line
    assert items.caption == (
        "Bases: tok/s, counted output tokens over the counted steps' summed time (of mean "
        "steps: a few slow steps move it); shares, send - cached in each case's median "
        "step and in its SchedulerOutput path's per-step median, over cached's step; over "
        "repetitions, the mean of the differences over the mean of cached's steps, not "
        "the mean of the per-repetition shares.")


def test_a_share_the_line_withholds_reads_withheld_in_its_cell():
    # 5 ms nominal, the runner's median forward 17.6 ms: both shares withheld
    off = _rows(64, 5.0, send=(18_404_000.0,) * 3, cached=(18_400_000.0,) * 3,
                forward_ms=17.6)
    # send's whole step 1 ms over cached's, its path 3 µs: the whole step's withheld
    long = _rows(16, 5.0, send=(6_100_000.0, 6_110_000.0, 6_090_000.0),
                 cached=(5_100_000.0, 5_110_000.0, 5_090_000.0))
    items = findings.findings(_results(_rows() + off + long))
    cells = {r[0]: r[5:7] for r in items.summary[1]}
    withheld = "-* (withheld: its line below says why)"
    assert findings.WITHHELD_CELL == withheld
    assert cells["num_running=64,step_time_ms=5.0"] == [withheld, withheld]
    assert cells["num_running=16,step_time_ms=5.0"] == [
        _share_cell([s - 9_000.0 for s in S2R], [5_100_000.0, 5_110_000.0, 5_090_000.0]),
        withheld]
    assert cells["num_running=16,step_time_ms=5.0"][0] == "+0.06 % [+0.04, +0.08] %"
    lines = {f.split(":")[0]: f for f in items if f.startswith("fixed step")}
    assert "its share of the measured step (cached's median, 18.40 ms as the mean of its " \
        "3 repetitions' medians): -*; send's whole median step against cached's: -*." \
        in lines["fixed step 5 ms, B = 64, msgpack"]
    assert "0.06 % of the measured step" in lines["fixed step 5 ms, B = 16, msgpack"]
    assert "send's whole median step against cached's: -*." in \
        lines["fixed step 5 ms, B = 16, msgpack"]
