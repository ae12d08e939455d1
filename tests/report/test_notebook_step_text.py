"""notebooks/analysis.ipynb's "Where a step's time goes" text holds for the model any
run ran: it says the runner's compute band is that model's (null, emulated,
fixed-step, torch), where it described the null model alone ("so this is the worst
case for send's share") under an emulated run's figure too."""

from __future__ import annotations

import json

from notebook_run import NOTEBOOK


def _text(heading: str) -> str:
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    (cell,) = [c for c in cells if c["cell_type"] == "markdown"
               and "".join(c["source"]).startswith(heading)]
    return " ".join("".join(cell["source"]).split())


def test_the_step_text_names_each_models_compute_band():
    text = _text("## Where a step's time goes")
    assert ("What the runner's compute band holds is the model each run ran (the `model:` "
            "line under \"Load the run\" names it). With the null model no model computes: "
            "the band is its null sampler and `prepare_inputs` alone") in text
    assert ("so a null run is the worst case for send's share. With `--model emulated` the "
            "band holds the step a GPU roofline sleeps on this CPU (uncalibrated, at assumed "
            "GPU rates: no GPU computed it), with `--model fixed-step` the step the runner waits "
            "out, and with `--model torch` the torch model's forward on its device; the "
            "longer that band, the smaller send's share of the step.") in text
    assert "so this is the worst case" not in text
