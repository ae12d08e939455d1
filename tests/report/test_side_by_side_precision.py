"""A side-by-side table of several runs prints each metric as the case tables do
(``Metric.fmt``): step µs with one decimal, bytes and tokens/s whole, so one column
holds one precision (``91.0`` above ``168.2``, where it read ``90.97`` above ``168``)."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from ipc_bench.analysis.metrics import metric
from ipc_bench.report.blocks import _side_by_side
from ipc_bench.report.render import render_markdown

#: One repetition per case: (workload, policy) -> (run a's value, run b's value).
VALUES = {"step_ns_mean": {("num_running=4", "send"): (90_970.0, 168_200.0),
                           ("num_running=4", "cached"): (99_260.0, 173_000.0),
                           ("num_running=16", "send"): (1_039_340.0, 5_004.0)},
          "sched_to_runner_payload_bytes_per_step": {
              ("num_running=4", "send"): (42.4, 393.45),
              ("num_running=4", "cached"): (1_374.6, 9.0),
              ("num_running=16", "send"): (0.4, 1_000.5)},
          "output_tokens_per_s": {("num_running=4", "send"): (43_969.3, 96.26),
                                  ("num_running=4", "cached"): (7.07, 40_297.0),
                                  ("num_running=16", "send"): (1_000.0, 1_100.0)}}


def _runs(key: str) -> SimpleNamespace:
    rows = [dict(workload=w, policy=p, codec="msgpack", run_id=run, repetition=0,
                 **{key: v})
            for (w, p), values in VALUES[key].items() for run, v in zip("ab", values)]
    return SimpleNamespace(run_ids=["a", "b"], cases=pd.DataFrame(rows))


def _table(key: str) -> list[str]:
    blocks = _side_by_side(_runs(key), key)
    assert blocks[1][0] == "table"
    return render_markdown([blocks[1]]).strip().splitlines()


def test_step_times_have_one_decimal_in_every_row():
    assert _table("step_ns_mean") == [
        "| workload | arm | codec | a | b | b ÷ a |",
        "|---|---|---|---|---|---|",
        "| num_running=4 | send | msgpack | 91.0 | 168.2 | 1.849 |",
        "| num_running=4 | cached | msgpack | 99.3 | 173.0 | 1.743 |",
        "| num_running=16 | send | msgpack | 1,039.3 | 5.0 | 0.005 |"]


def test_bytes_and_tokens_are_whole_in_every_row():
    assert _table("sched_to_runner_payload_bytes_per_step")[2:] == [
        "| num_running=4 | send | msgpack | 42 | 393 | 9.279 |",
        "| num_running=4 | cached | msgpack | 1,375 | 9 | 0.007 |",
        "| num_running=16 | send | msgpack | 0 | 1,000 | 2501.250 |"]
    assert _table("output_tokens_per_s")[2:] == [
        "| num_running=4 | send | msgpack | 43,969 | 96 | 0.002 |",
        "| num_running=4 | cached | msgpack | 7 | 40,297 | 5699.717 |",
        "| num_running=16 | send | msgpack | 1,000 | 1,100 | 1.100 |"]


def test_a_cell_reads_as_the_case_table_prints_the_metric():
    for key, rows in VALUES.items():
        cells = [row.split(" | ")[3:5] for row in _table(key)[2:]]
        assert cells == [[metric(key).cell(v) for v in values] for values in rows.values()]
