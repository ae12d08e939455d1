"""notebooks/analysis.ipynb: committed clean, and runs end to end on a small real run."""

from __future__ import annotations

import pytest

from analysis_run import REPO, make_small_run

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK = REPO / "notebooks" / "analysis.ipynb"


def test_notebook_is_committed_clean():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    first = nb.cells[0]
    assert first.cell_type == "code" and "parameters" in first.metadata.get("tags", [])
    assert first.source.splitlines()[-1].startswith("RESULTS = ")
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


def test_notebook_runs_on_a_small_run(tmp_path):
    run_dir = make_small_run(tmp_path / "nb-run")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells[0].source = f"RESULTS = {str(run_dir)!r}"
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=180,
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()  # raises CellExecutionError on any failing cell
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 5  # every figure but the latency CDFs
    text = "\n".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "runs: nb-run (complete)" in text
    assert "not shown: no per-request latencies" in text
    markdown = "\n".join(o["data"]["text/markdown"] for o in outputs
                         if "text/markdown" in o.get("data", {}))
    assert "At 16 running requests (msgpack), cached sends" in markdown
