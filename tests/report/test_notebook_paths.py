"""notebooks/analysis.ipynb reads a relative ``RESULTS`` (and finds the newest run for
``None``) against its own folder, notebooks/, wherever the kernel started (papermill starts
it in the folder it is called from): it read them against ``<kernel folder>/notebooks``.
Where its folder cannot be known (a kernel started outside a checkout, ipc_bench not
imported from one), its error line says what the path was read against and to give an
absolute one."""

from __future__ import annotations

import os
import shutil

import pytest

from analysis_run import REPO
from notebook_run import NOTEBOOK, cell_errors, needs_jupyter, notebook_outputs, stream_text

needs_jupyter()

#: What the notebook says, after what it read a relative path against, where it cannot
#: tell its own folder.
UNKNOWN = ("a kernel started outside an ipc-bench checkout cannot tell this notebook's "
           "folder; give the run folder's absolute path")


def _execute(results: str, cwd):
    """The notebook run with ``RESULTS = results`` (source text) by a kernel started in
    ``cwd``: (the stream text of its load cell, the (name, value) of each error)."""
    outputs = notebook_outputs(results, cwd)
    return stream_text(outputs), cell_errors(outputs)


@pytest.fixture()
def elsewhere(tmp_path):
    """A folder outside the checkout for the kernel to start in."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    return folder.resolve()


@pytest.fixture()
def outside_checkout(tmp_path, monkeypatch):
    """ipc_bench importable from a folder that is not a checkout (a link to the package,
    as an installed copy would be), first on the kernel's path."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "ipc_bench").symlink_to(REPO / "ipc_bench", target_is_directory=True)
    monkeypatch.setenv("PYTHONPATH", str(site))
    return site


def test_a_relative_path_is_read_against_notebooks_from_a_kernel_started_elsewhere(
        shared_small_run, elsewhere, monkeypatch):
    # ipc_bench imported from the checkout (as an editable install imports it)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    relative = os.path.relpath(shared_small_run, NOTEBOOK.parent)
    text, errors = _execute(repr(relative), elsewhere)
    assert errors == []
    assert text.splitlines()[0] == "runs: small-run (complete)"
    text, errors = _execute(repr("../results/no-such-run"), elsewhere)
    assert errors == [("SystemExit", f"cannot load the run: {REPO}/results/no-such-run: no "
                       f"such folder (RESULTS '../results/no-such-run' read against "
                       f"notebooks/ of the checkout ipc_bench is imported from, "
                       f"{REPO}/notebooks (the kernel's folder, {elsewhere}, holds no such "
                       f"path): the kernel cannot tell this notebook's own folder; give an "
                       f"absolute path or start the kernel in the notebook's folder)")]


def test_a_kernel_started_under_a_checkout_reads_against_its_notebooks(
        shared_small_run, outside_checkout):
    """A kernel started in a folder of the checkout other than notebooks/ and the
    checkout's own (papermill called from tests/report/), ipc_bench not imported from
    the checkout."""
    text, errors = _execute(repr(os.path.relpath(shared_small_run, NOTEBOOK.parent)),
                            REPO / "tests" / "report")
    assert errors == []
    assert text.splitlines()[0] == "runs: small-run (complete)"


def test_the_folder_jupyter_names_is_the_notebooks(shared_small_run, elsewhere,
                                                   outside_checkout, monkeypatch):
    monkeypatch.setenv("JPY_SESSION_NAME", str(NOTEBOOK))
    text, errors = _execute(repr(os.path.relpath(shared_small_run, NOTEBOOK.parent)),
                            elsewhere)
    assert errors == []
    assert text.splitlines()[0] == "runs: small-run (complete)"


def test_a_kernel_outside_a_checkout_says_what_it_read_the_path_against(
        shared_small_run, elsewhere, outside_checkout):
    shutil.copytree(shared_small_run, elsewhere / "here")
    text, errors = _execute(repr("here"), elsewhere)  # the kernel's folder: found
    assert errors == []
    assert text.splitlines()[0] == "runs: here (complete)"
    _, errors = _execute(repr(["here", "../results/r1"]), elsewhere)
    assert errors == [("SystemExit", f"cannot load the run: {elsewhere.parent}/results/r1: no "
                       f"such folder (RESULTS 'here', '../results/r1' read against the "
                       f"kernel's folder, {elsewhere}: {UNKNOWN})")]
    _, errors = _execute("None", elsewhere)
    assert errors == [("SystemExit", "no run looked for: RESULTS None is the newest run in "
                       f"../results/ beside this notebook, and this kernel started in "
                       f"{elsewhere}: {UNKNOWN}")]
