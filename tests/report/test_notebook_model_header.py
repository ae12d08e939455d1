"""notebooks/analysis.ipynb's first output says which model the run ran."""
import pytest

from analysis_run import REPO

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK = REPO / "notebooks" / "analysis.ipynb"


def test_the_first_output_names_the_null_model(shared_small_run):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells[0].source = f"RESULTS = {str(shared_small_run)!r}"
    nbclient.NotebookClient(nb, kernel_name="python3", timeout=180,
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    first = next(o for c in nb.cells if c.cell_type == "code" for o in c.outputs
                 if o.output_type == "stream")
    lines = first["text"].splitlines()
    assert lines[0] == "runs: small-run (complete)"
    assert lines[2] == "model: null (no model computed: the step is the harness's own)"
    assert lines[3].startswith("steps: ")
