"""The legend under a run's findings named the ratio's interval kind (``[95 %
percentile-bootstrap interval]``) even for a 5-repetition ``--ci-method bootstrap`` run,
whose findings have no interval (a percentile-bootstrap interval needs >= 34 pairs, as
their cells say). Where no pair row of the run has pairs enough for its method's
interval the legend names the point alone and why; where some have, it names the
interval, and where others have not, that those show the point alone."""

from __future__ import annotations

import pandas as pd
import pytest

from ipc_bench.analysis.results import Results
from ipc_bench.report import findings
from test_metrics import _summary

TAIL = (", unadjusted (the pair table's cached/send column); `send - cached` is the median "
        "of the per-repetition differences (its send - cached column): for times and bytes "
        "what send costs, for tokens/s what send gains; tok/s `a → b`: send's, then "
        "cached's.")


def _results(reps: int, method: str) -> Results:
    rows = []
    for rep in range(reps):
        for policy, tps, step in (("send", 56_000.0 + 100 * rep, 282_000.0 + 500 * rep),
                                  ("cached", 69_000.0 + 150 * rep, 231_000.0 + 300 * rep)):
            s = _summary(policy, rep, tps, step)
            s.update(s2r_build_encode_decode_ns_median=12_000.0 if policy == "send"
                     else 9_000.0, run_id="run")
            rows.append(s)
    empty = pd.DataFrame(columns=["run_id", "case_id"])
    return Results(cases=pd.DataFrame(rows), steps=empty, requests=empty, floor=empty,
                   itl=empty, metadata={"run": {"ci_method": method, "cases": [
                       {"labels": {"num_running": 4}}]}},
                   status={"run": "complete"}, problems={"run": []}, paths={"run": "run"})


@pytest.mark.parametrize("reps,method,phrase", [
    (5, "bootstrap", "paired by repetition: median of the per-repetition ratios, no "
     "interval (a percentile-bootstrap interval needs >= 34 pairs)"),
    (5, "sign", "paired by repetition: median of the per-repetition ratios, no interval "
     "(a sign-test interval needs >= 6 pairs)"),
    (6, "sign", "paired by repetition: median of the per-repetition ratios [95 % "
     "sign-test interval]"),
])
def test_the_legend_names_an_interval_only_where_the_run_has_one(reps, method, phrase):
    legend = findings.findings(_results(reps, method)).legend
    assert legend.startswith(f"Reading the findings: a % change is cached/send, {phrase}"
                             + TAIL)


def test_the_legend_by_pair_counts():
    assert findings._legend_ratio("t", [1, 1]) == (
        "paired by repetition: geometric mean of the per-repetition ratios, no interval "
        "(one repetition)")
    assert findings._legend_ratio("sign", [6, 5]) == (
        "paired by repetition: median of the per-repetition ratios [95 % sign-test "
        "interval]; the point alone where the pairs are fewer (a sign-test interval "
        "needs >= 6 pairs)")
    assert findings._legend_ratio("bootstrap", None) == (
        "paired by repetition: median of the per-repetition ratios [95 % "
        "percentile-bootstrap interval]")
