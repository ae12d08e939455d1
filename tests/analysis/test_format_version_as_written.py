"""A ``format_version`` that is an integer of this ipc-bench's or another is echoed in
its refusal as written, its digits cut at 40 with ``...`` as other quoted values are,
where one of more than 40 digits read in %g form (``1e+400``), as if it were the
number ``1E400``, which is no integer."""

from __future__ import annotations

import json
import shutil

import pytest

from ipc_bench import cli
from ipc_bench.analysis.results import read_summary
from ipc_bench.analysis.run_files import ResultsError

HINTS = {"newer": "read it with the newer ipc-bench that wrote it",
         "older": "re-run the scenario with this ipc-bench"}


@pytest.mark.parametrize("written, shown, age", [
    ("1" + "0" * 400, "1" + "0" * 39 + "...", "newer"),
    ("-" + "9" * 41, "-" + "9" * 39 + "...", "older"),
    ("1" + "0" * 39, "1" + "0" * 39, "newer"),
    ("12345678901234567890123456789012345678901", "1234567890123456789012345678901234567890...",
     "newer")])
def test_an_integer_version_is_echoed_as_written(tmp_path, written, shown, age):
    (tmp_path / "summary.json").write_text('{"format_version": ' + written + "}")
    with pytest.raises(ResultsError) as err:
        read_summary(tmp_path)
    assert str(err.value) == (
        f"{tmp_path}/summary.json: result format version {shown} is {age} than the version "
        f"this ipc-bench reads (1); {HINTS[age]}")


def test_report_refuses_10_to_the_400_as_written(shared_two_case_run, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(shared_two_case_run, run, ignore=shutil.ignore_patterns("report"))
    text = (run / "summary.json").read_text()
    summary = json.loads(text)
    assert summary["format_version"] == 1 and text.count('"format_version": 1,') == 1
    (run / "summary.json").write_text(
        text.replace('"format_version": 1,', '"format_version": 1' + "0" * 400 + ","))
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 2
    assert capsys.readouterr().err == (
        f"bench.py report: error: {run}/summary.json: result format version "
        f"1{'0' * 39}... is newer than the version this ipc-bench reads (1); read it with "
        "the newer ipc-bench that wrote it\n")
    assert not (tmp_path / "rep").exists()
