"""A ``summary.json`` is read only with the ``format_version`` a run writes: the
integer ``FORMAT_VERSION``. JSON's ``true`` and ``1.0`` (equal to 1 in Python, and so
read as version 1) are refused as ``"1"`` is, with one line that shows the value as
JSON; a missing version is said so."""

from __future__ import annotations

import json
import shutil

import pytest

from ipc_bench import cli
from ipc_bench.analysis.results import read_summary
from ipc_bench.analysis.run_files import ResultsError
from ipc_bench.harness.run_folder import FORMAT_VERSION

READS = "(this ipc-bench reads version 1)"


@pytest.mark.parametrize("version, said", [
    (True, "true"), (1.0, "1.0"), ("1", '"1"'), (False, "false"), (None, "null"),
    ([1], "[1]"), ({"v": 1}, '{"v": 1}')])
def test_a_version_that_is_not_an_integer_is_refused(tmp_path, version, said):
    (tmp_path / "summary.json").write_text(json.dumps({"format_version": version}))
    with pytest.raises(ResultsError) as err:
        read_summary(tmp_path)
    assert str(err.value) == (f"{tmp_path}/summary.json: result format version {said} is "
                              f"not supported {READS}")


def test_a_missing_version_is_said_so(tmp_path):
    (tmp_path / "summary.json").write_text("{}")
    with pytest.raises(ResultsError) as err:
        read_summary(tmp_path)
    assert str(err.value) == f"{tmp_path}/summary.json: result format version is missing {READS}"


def test_the_integer_a_run_writes_is_read(tmp_path):
    assert FORMAT_VERSION == 1
    (tmp_path / "summary.json").write_text('{"format_version": 1, "n": 2}')
    assert read_summary(tmp_path) == {"format_version": 1, "n": 2}


@pytest.mark.parametrize("version, said", [(True, "true"), (1.0, "1.0"), ("1", '"1"')])
def test_report_refuses_it_in_one_line(shared_two_case_run, tmp_path, capsys, version, said):
    run = tmp_path / "run"
    shutil.copytree(shared_two_case_run, run)
    summary = json.loads((run / "summary.json").read_text())
    summary["format_version"] = version
    (run / "summary.json").write_text(json.dumps(summary))
    capsys.readouterr()
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"bench.py report: error: {run}/summary.json: result format version {said} is not "
        f"supported {READS}"]
