"""A case's ``warnings`` that is NaN is read as any other ``warnings`` that is not a
list is (absent, with the same line), where the whole case was left out as ``not a
finite number``; a ``format_version`` too large for a float (``1E400``, read as
infinity) is quoted as the file writes it, where it was shown as ``Infinity``, a word
the file does not hold."""

from __future__ import annotations

import json
import re
import shutil
import warnings
from pathlib import Path

import pytest

from ipc_bench import cli
from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsError, ResultsWarning

SEND = "num_running=4/send/msgpack#0"
ABSENT = "not a list (read as absent: no warnings recorded)"


def _copy(source: Path, tmp_path: Path, edit) -> Path:
    """A copy of ``source`` at ``tmp_path/run`` with ``edit(text)`` as its summary.json."""
    run = Path(shutil.copytree(source, tmp_path / "run"))
    path = run / "summary.json"
    path.write_text(edit(path.read_text()))
    return run


def _case0(key, value):
    def edit(text):
        summary = json.loads(text)
        summary["cases"][0][key] = value
        return json.dumps(summary)
    return edit


def _loaded(run: Path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResultsWarning)
        results = load([run])
    return results, [str(w.message) for w in caught if issubclass(w.category, ResultsWarning)]


@pytest.mark.parametrize("value, shown", [(float("nan"), "NaN"), (5, "5"),
                                          (float("inf"), "Infinity")])
def test_warnings_that_are_not_a_list_are_read_as_absent_alike(value, shown,
                                                               shared_two_case_run, tmp_path):
    run = _copy(shared_two_case_run, tmp_path, _case0("warnings", value))
    results, lines = _loaded(run)
    assert lines == [f"{run}/summary.json: case {SEND!r} has warnings {shown}, {ABSENT}"]
    assert SEND in set(results.cases["case_id"])


def test_a_nan_warnings_case_is_reported(shared_two_case_run, tmp_path, capsys):
    run = _copy(shared_two_case_run, tmp_path, _case0("warnings", float("nan")))
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 0
    assert capsys.readouterr().err.splitlines() == [
        f"bench.py report: warning: {run}/summary.json: case {SEND!r} has warnings NaN, "
        f"{ABSENT}"]


def test_a_format_version_too_large_for_a_float_is_shown_as_written(shared_two_case_run,
                                                                    tmp_path, capsys):
    run = _copy(shared_two_case_run, tmp_path,
                lambda text: re.sub(r'"format_version": *1\b', '"format_version": 1E400', text))
    with pytest.raises(ResultsError) as caught:
        load([run])
    line = (f"{run}/summary.json: result format version 1E400 is not supported (this "
            "ipc-bench reads version 1)")
    assert str(caught.value) == line
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep")]) == 2
    assert capsys.readouterr().err == f"bench.py report: error: {line}\n"

