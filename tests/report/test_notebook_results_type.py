"""notebooks/analysis.ipynb given a ``RESULTS`` that is not a path (a number, a dict, a
list holding one) stops with one line naming what it takes, as it does for a path it
cannot load, where pathlib raised its ``TypeError`` (``expected str, bytes or
os.PathLike object, not int``), a traceback."""

from __future__ import annotations

import pytest

from notebook_run import NOTEBOOK, cell_errors, needs_jupyter, notebook_outputs

needs_jupyter()

TAKES = ("not a path: RESULTS takes a run folder's path (a str or pathlib.Path), a list of "
         "them, or None (the newest run in ../results/)")


def _errors(results: str):
    """The (name, value) of each error of the notebook run with ``RESULTS = results``
    (source text), its kernel started beside it."""
    return cell_errors(notebook_outputs(results, NOTEBOOK.parent))


@pytest.mark.parametrize("results, line", [
    ("42", "RESULTS 42 is an int, "),
    ("2.5", "RESULTS 2.5 is a float, "),
    ("True", "RESULTS True is a bool, "),
    ("{'run': 1}", "RESULTS {'run': 1} is a dict, "),
    ("['../results/r1', 42]", "RESULTS ['../results/r1', 42] holds 42, an int, "),
    ("('../results/r1', None)", "RESULTS ('../results/r1', None) holds None, "),
])
def test_a_results_that_is_not_a_path_says_what_it_takes(results, line):
    assert _errors(results) == [("SystemExit", f"cannot load the run: {line}{TAKES}")]
