"""A share finding of several repetitions names its step statistic, the mean over the
repetitions of each case's median step, apart from the terminal comparison block's
``step median`` row, the geometric mean over the repetitions of the same per-case
medians: two numbers, never under one name."""

from __future__ import annotations

import json
import statistics

import pytest

from tests.analysis_run import run_bench

ARGS = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "30",
        "--warmup-steps", "5", "--repeat", "3", "--codecs", "msgpack",
        "--no-single-process", "--no-floor"]


def test_the_finding_and_the_comparison_block_name_their_own_statistic(tmp_path):
    from ipc_bench.analysis.results import load
    from ipc_bench.report.findings import findings

    stdout = run_bench(tmp_path / "run", ARGS)
    cases = json.loads((tmp_path / "run" / "summary.json").read_text())["cases"]
    steps = {p: [c["step_ns_median"] / 1e3 for c in cases if c["policy"] == p]
             for p in ("send", "cached")}
    (share,) = [f for f in findings(load([tmp_path / "run"]))
                if "SchedulerOutput path" in f]
    assert (f"of cached's step, {statistics.mean(steps['cached']):,.1f} µs as the mean of "
            "its 3 repetitions' median steps (") in share
    # "is 3.1 % longer", "is within noise" or, past 1.1x either way, "differs from cached's by"
    whole = f"; send's whole step, {statistics.mean(steps['send']):,.1f} µs as the same mean, "
    assert whole + "is " in share or whole + "differs from cached's by " in share, share
    assert (
        "(noisier; means over 3 repetitions of each case's figures, not the geometric "
        "means over repetitions that `bench.py`'s comparison block prints as `step "
        "median`). Net share (") in share  # the net share's sentence last
    assert "median step," not in share and "µs median step" not in share
    (head,) = [ln for ln in stdout.splitlines() if ln.startswith("metric ")]
    assert head.split()[2:8] == ["send", "(geometric", "mean)", "[IQR]", "cached",
                                 "(geometric"]
    (row,) = [ln for ln in stdout.splitlines() if ln.startswith("step median ")]
    cells = row.split()
    for cell, policy in ((cells[3], "send"), (cells[5], "cached")):
        # rounded to the cell's own precision: one decimal below 1,000 µs, none above
        decimals = len(cell.partition(".")[2])
        assert float(cell.replace(",", "")) == pytest.approx(
            statistics.geometric_mean(steps[policy]), abs=0.5 * 10 ** -decimals + 1e-3), (
                cell, policy)
