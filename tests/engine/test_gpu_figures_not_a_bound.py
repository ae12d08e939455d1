"""The emulated model's figures' provenance (``engine/gpu_figures.json``, where the docs
send readers) says what the efficiency of 1 makes the step: the time at the assumed
rates, not a bound on a GPU's, as the summary's and the report's words do."""
import json
from pathlib import Path

import ipc_bench.engine

FIGURES = Path(ipc_bench.engine.__file__).with_name("gpu_figures.json")


def test_the_efficiency_provenance_calls_the_step_the_time_at_the_rates():
    text = FIGURES.read_text()
    assert "lower bound" not in text
    (gpu,) = json.loads(text)["gpus"].values()
    assert gpu["provenance"]["efficiency"] == (
        "1.0: uncalibrated (every op taken to reach the rates above: the step is the time "
        "at these rates, not a bound on a GPU's, as the rates were not measured here and "
        "a kernel may exceed them, by the datasheet peaks' margin at most: 1.12x "
        "bandwidth, 1.25x bf16).")
