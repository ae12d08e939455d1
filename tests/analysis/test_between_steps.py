"""The scheduler loop's time between its timed steps (``between_steps_ns_per_step``):
the loop's wall time less its steps' ``step_ns``, and the warning where it is a large
share (out tok/s, over step time, then leaves much of the loop out)."""

from __future__ import annotations

import json

import pandas as pd

from analysis_run import run_bench
from ipc_bench.analysis.summary import between_steps_warning, noise_warnings


def test_the_figure_is_the_loop_time_less_its_steps(tmp_path):
    run = tmp_path / "r"
    run_bench(run, ["--scenario", "decode-steady", "--num-running", "4", "--steps", "60",
                    "--warmup-steps", "7", "--codecs", "msgpack", "--policies", "send",
                    "--no-floor"])
    summary = json.loads((run / "summary.json").read_text())
    steps = pd.read_csv(run / "steps.csv")
    for case in summary["cases"]:
        rows = steps[(steps["case_id"] == case["case_id"]) & (steps["seq"] >= 7)]
        assert len(rows) == case["loop_steps"]
        loop_ns = case["loop_step_ns_mean"] * case["loop_steps"]
        expected = (loop_ns - rows["step_ns"].sum()) / len(rows)
        assert abs(case["between_steps_ns_per_step"] - expected) < 1e-3
        assert 0 < case["between_steps_ns_per_step"] < case["loop_step_ns_mean"]


def test_a_loop_mostly_between_its_steps_is_warned_of():
    case = dict(num_steps=500, loop_step_ns_mean=514_200.0,
                between_steps_ns_per_step=425_397.0, loop_output_tokens_per_s=31_116.2)
    line = ("the scheduler loop spent 83 % of its time between its timed steps (425.4 µs "
            "a step: the process paused, or the per-step recording ran long; the machine "
            "may be busy): out tok/s, over the steps' time, leaves that out; over the "
            "loop's wall time it was 31,116 tok/s")
    assert between_steps_warning(case) == line
    assert line in noise_warnings(case)
    assert between_steps_warning(dict(case, between_steps_ns_per_step=150_000.0)) is None
    assert between_steps_warning(dict(case, between_steps_ns_per_step=None)) is None
