"""notebooks/analysis.ipynb (``NOTEBOOK``) for the notebook tests: what running it
needs, each missing one skipping the test module (``needs_jupyter``), the notebook
executed headless on a run (``run_notebook``, with nbclient, as docs/usage.md's recipe
does) and the lines of its first output (``first_output_lines``: the runs, their
scenario, model, steps and load), or run past a failing cell (``notebook_outputs``)
for what it printed (``stream_text``) and its errors (``cell_errors``)."""

from __future__ import annotations

import pytest

from analysis_run import REPO

NOTEBOOK = REPO / "notebooks" / "analysis.ipynb"


def needs_jupyter():
    """``(nbformat, nbclient)``, imported, where ipykernel is installed too; called at a
    test module's top, a missing one skips the module (``pytest.importorskip``: nbformat,
    then nbclient, then ipykernel), as the notebook cannot run without all three."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    return nbformat, nbclient


def run_notebook(results):
    """The notebook with ``RESULTS = results`` in its first cell, executed beside itself
    (its kernel in notebooks/); raises nbclient's ``CellExecutionError`` on a failing
    cell. The caller skips without them (``needs_jupyter``)."""
    import nbclient
    import nbformat

    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells[0].source = f"RESULTS = {results!r}"
    nbclient.NotebookClient(nb, kernel_name="python3", timeout=180,
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    return nb


def notebook_outputs(results: str, folder, notebook=NOTEBOOK) -> list:
    """The outputs of the code cells, in order, of ``notebook`` (the project's, or a
    copy) run with ``RESULTS = results`` (source text) in its first cell by a kernel
    started in ``folder``, up to the first failing cell, whose error is among them
    (nbclient's ``CellExecutionError`` is not raised). The caller skips without
    nbformat, nbclient or ipykernel (``needs_jupyter``)."""
    import nbclient
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    nb.cells[0].source = f"RESULTS = {results}"
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=180,
                                     resources={"metadata": {"path": str(folder)}})
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError:
        pass
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]


def stream_text(outputs) -> str:
    """What ``outputs`` (``notebook_outputs``) printed, joined."""
    return "".join(o.get("text", "") for o in outputs if o.output_type == "stream")


def cell_errors(outputs) -> list[tuple[str, str]]:
    """The (name, value) of each error among ``outputs`` (``notebook_outputs``)."""
    return [(o.ename, o.evalue) for o in outputs if o.output_type == "error"]


def first_output_lines(nb) -> list[str]:
    """The lines of the executed notebook ``nb``'s first text output."""
    first = next(o for c in nb.cells if c.cell_type == "code" for o in c.outputs
                 if o.output_type == "stream")
    return first["text"].splitlines()
