"""``num_waiting`` in ``steps.csv``: the requests left waiting once a step was scheduled
(vLLM's ``len(scheduler.waiting)``), the same count ``requests.csv`` gives of each step
(arrived by it, not yet scheduled), under sync and async scheduling alike."""

from __future__ import annotations

import json

import pandas as pd

from analysis_run import run_bench


def _waiting_by_requests(requests: pd.DataFrame, steps: list[int]) -> list[int]:
    """Of each logical step in ``steps``, the requests of ``requests`` (one case's
    rows, none preempted) that had arrived by it and were first scheduled after it."""
    arrival, first = requests["arrival_step"], requests["first_scheduled_step"]
    return [int(((arrival <= s) & ((first > s) | (first < 0))).sum()) for s in steps]


def test_num_waiting_is_the_requests_arrived_and_not_yet_scheduled(tmp_path):
    # 12 requests in three bursts, at most 2 running (--max-num-seqs 2): most wait
    trace = tmp_path / "trace.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(
        f"2023-11-16 18:15:{46 + 2 * (i // 4)}.0000000,{50 + i},{6 + i % 3}\n"
        for i in range(12)))
    run = tmp_path / "run"
    run_bench(run, ["--scenario", "azure-conv", "--trace", str(trace), "--max-requests",
                    "12", "--codecs", "msgpack", "--no-single-process", "--no-floor",
                    "--warmup-steps", "2", "--max-num-seqs", "2", "--async-scheduling"])
    cases = json.loads((run / "summary.json").read_text())["cases"]
    assert [c["arm"] for c in cases] == ["cached", "cached+async"]
    steps, requests = pd.read_csv(run / "steps.csv"), pd.read_csv(run / "requests.csv")
    assert int(steps["num_preempted"].sum()) == 0
    for case in cases:
        rows = steps[steps["case_id"] == case["case_id"]]
        got = list(rows["num_waiting"])
        assert got == _waiting_by_requests(
            requests[requests["case_id"] == case["case_id"]], list(rows["step"]))
        assert max(got) >= 2 and got[-1] == 0
        assert "waiting_step_share" not in case  # a logical replay: no pace label
