"""A run whose metadata records no case (summary.json edited, or written by another
tool) still has its run-wide differences found and its rows marked: the transport it
was given, the seed (``environment.compare_settings``' ``shared_rows``, the workloads
both runs have rows of)."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from ipc_bench.harness.environment import compare_settings
from ipc_bench.report.blocks import setting_differences

CASE = {"policy": "send", "arm": "send", "codec": "msgpack", "transport": "ipc",
        "labels": {"num_running": 4}}
RECORDED = {"seed": 0, "options": {"transport": None}, "cases": [CASE]}
BARE = {"seed": 0, "options": {"transport": "shm-block"}}


def test_the_transport_given_is_compared_and_marks_every_shared_row():
    assert compare_settings(BARE, RECORDED, shared_rows=["num_running=4"]) == (
        ["option --transport differs: shm-block vs default (ipc)"], ["num_running=4"])
    assert compare_settings(RECORDED, BARE) == (
        ["option --transport differs: default (ipc) vs shm-block"], [])


def test_a_seed_difference_marks_the_rows_both_runs_have():
    assert compare_settings({"seed": 1}, RECORDED, shared_rows=["num_running=4"]) == (
        ["seed differs: 1 vs 0"], ["num_running=4"])
    # no difference: nothing marked, whatever the rows
    assert compare_settings(dict(BARE, options={}), RECORDED,
                            shared_rows=["num_running=4"]) == ([], [])


def test_the_report_marks_the_rows_of_both_runs():
    rows = [dict(run_id=r, workload=w, policy="send", codec="msgpack")
            for r, ws in (("a", ["num_running=4", "num_running=8"]), ("d", ["num_running=4"]))
            for w in ws]
    results = SimpleNamespace(run_ids=["a", "d"], metadata={"a": RECORDED, "d": BARE},
                              cases=pd.DataFrame(rows))
    lines, unlike = setting_differences(results)
    assert lines == ["d against a: option --transport differs: shm-block vs default (ipc)"]
    assert unlike == {("d", "a"): {"num_running=4"}}


def test_a_given_transport_is_not_held_against_a_run_of_several():
    """tp-broadcast's cases run each transport its workload label names, whatever
    ``--transport`` says: no difference is claimed from the option alone there."""
    several = dict(RECORDED, cases=[dict(CASE, transport=t, labels={"broadcast": t})
                                    for t in ("ipc", "shm-block")])
    assert compare_settings(dict(BARE, options={"transport": "ipc"}), several,
                            shared_rows=["broadcast=ipc"]) == ([], [])
