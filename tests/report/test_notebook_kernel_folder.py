"""A copy of notebooks/analysis.ipynb in a folder outside the checkout, its kernel
started beside it (nbclient, nbconvert and ``jupyter execute`` start it there) and
ipc_bench imported from the checkout, read a relative ``RESULTS`` against the
checkout's notebooks/ and called that "this notebook's folder". The kernel's folder
comes first where it holds the path; where neither holds it, the error line says that
notebooks/ was only the folder of the checkout ipc_bench is imported from."""

from __future__ import annotations

import shutil

from analysis_run import REPO
from notebook_run import NOTEBOOK, cell_errors, needs_jupyter, notebook_outputs, stream_text

needs_jupyter()

#: The end of the error line where the notebook's folder is only a guess.
GUESS = ("the kernel cannot tell this notebook's own folder; give an absolute path or "
         "start the kernel in the notebook's folder")


def _execute(copy, results: str):
    """The notebook ``copy`` run with ``RESULTS = results`` (source text) by a kernel
    started in its folder: (its first stream line, the (name, value) of each error)."""
    outputs = notebook_outputs(results, copy.parent, copy)
    return (stream_text(outputs).splitlines() or [""])[0], cell_errors(outputs)


def test_a_copy_elsewhere_reads_a_relative_path_against_its_kernels_folder(
        shared_small_run, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # as an editable install imports it
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    folder = (tmp_path / "nbdir").resolve()
    folder.mkdir()
    copy = folder / "analysis.ipynb"
    shutil.copy(NOTEBOOK, copy)
    shutil.copytree(shared_small_run, folder / "rAA")
    assert _execute(copy, repr("rAA")) == ("runs: rAA (complete)", [])
    assert _execute(copy, repr(["rAA", "missing"]))[1] == [(
        "SystemExit", f"cannot load the run: {REPO}/notebooks/missing: no such folder "
        f"(RESULTS 'rAA' read against the kernel's folder, {folder}, which holds it; "
        f"'missing' read against notebooks/ of the checkout ipc_bench is imported from, "
        f"{REPO}/notebooks (the kernel's folder, {folder}, holds no such path): {GUESS})")]
