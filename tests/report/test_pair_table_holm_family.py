"""The report's ``cached against send`` table left out two of the seven timed metrics
its verdicts are Holm-adjusted over (``step median``, ``sched cpu``), yet the findings
quoted the step-median test (``p 0.035, adjusted 0.106``) that no table showed. It
shows every metric of the family, and its caption says the timed rows are the family
and where a test's p and adjusted p are."""

from __future__ import annotations

import pandas as pd

from ipc_bench.analysis import stats
from ipc_bench.analysis.metrics import metric
from ipc_bench.report import blocks
from test_metrics import SUMMARIES


def _results(rows):
    res = type("R", (), {})()
    res.cases = pd.DataFrame([dict(r, run_id="run") for r in rows])
    res.labels, res.metadata = ["num_running"], {"run": {}}
    res.paths = {}
    return res


def test_the_pair_table_has_a_row_for_every_metric_of_the_holm_family():
    (_, head, rows), (_, caption) = blocks._pair_table(_results(SUMMARIES))
    assert [r[2:] for r in rows] == [
        ["output tokens/s", "2", "56,300", "69,576", "-13,276", "1.236 [1.069, 1.429]"],
        ["s2r payload B/step", "2", "1,530.00", "1,449.00", "81.00", "0.947 [0.947, 0.947]"],
        ["build µs/step", "2", "8.10", "3.20", "4.90", "0.395 [0.395, 0.395]"],
        ["encode µs/step", "2", "5.40", "5.40", "0.00", "1.000 [1.000, 1.000]"],
        ["decode µs/step", "2", "16.50", "16.50", "0.00", "1.000 [1.000, 1.000]"],
        ["step µs (mean)", "2", "283.85", "230.70", "53.15", "0.813 [0.743, 0.889]"],
        ["step µs (median)", "2", "282.85", "229.70", "53.15", "0.812 [0.742, 0.889]"],
        ["scheduler CPU µs/step", "2", "141.92", "115.35", "26.57", "0.813 [0.743, 0.889]"]]
    family = [metric(k).label for k, _ in stats.COMPARED_METRICS
              if k not in stats.EXACT_KEYS]
    assert sorted(family) == sorted(r[2] for r in rows if "B/step" not in r[2])
    assert caption.endswith(
        "(`--ci-method t`; the same figures as the `cached/send` line under the case table "
        "and the comparison block `bench.py` prints). The timed rows (all but the bytes) "
        "are the tests the findings' verdicts adjust together by Holm's method, per "
        "workload and codec; the intervals here are unadjusted, and a verdict that names "
        "Holm gives its test's p and adjusted p. The build, encode and decode µs/step rows "
        "sum both directions: the scheduler's SchedulerOutput and the runner's "
        "ModelRunnerOutput.")
