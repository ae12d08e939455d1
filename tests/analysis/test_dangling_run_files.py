"""A run folder whose ``summary.json`` or CSV file is a dangling symbolic link is said to
hold one, naming its target, as ``messages`` or a capture file that is one is
(``run_files.dangling_link``): ``RUN: not a run folder (summary.json is a dangling link
(to TARGET), not a regular file)``, ``RUN: not a complete run folder (steps.csv is a
dangling link (to TARGET), not a regular file)``; exit 2, as before, where the lines
said the file was not there (``no summary.json``, ``no steps.csv``)."""

from __future__ import annotations

import shutil

import pytest

from analysis_run import four_case_copy
from ipc_bench import cli
from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsError, why_not_a_file


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    return four_case_copy(tmp_path_factory, tmp_path_factory.mktemp("runs") / "small")


def _refused(run, tmp_path, capsys) -> tuple[str, int, str]:
    """The loader's refusal of ``run`` and ``bench.py report``'s exit code and stderr."""
    with pytest.raises(ResultsError) as exc:
        load(run)
    code = cli.main(["report", str(run), "--output", str(tmp_path / "rep"), "--no-figures"])
    return str(exc.value), code, capsys.readouterr().err


def test_a_dangling_summary_link_is_named(small_run, tmp_path, capsys):
    run = shutil.copytree(small_run, tmp_path / "sumlink")
    (run / "summary.json").unlink()
    (run / "summary.json").symlink_to("/nonexistent")
    line = (f"{run}: not a run folder (summary.json is a dangling link (to /nonexistent), "
            "not a regular file)")
    assert _refused(run, tmp_path, capsys) == (line, 2, f"bench.py report: error: {line}\n")


@pytest.mark.parametrize("name", ["steps.csv", "requests.csv"])
def test_a_dangling_csv_link_is_named(small_run, tmp_path, capsys, name):
    run = shutil.copytree(small_run, tmp_path / "csvlink")
    (run / name).unlink()
    (run / name).symlink_to("gone.csv")
    line = (f"{run}: not a complete run folder ({name} is a dangling link (to gone.csv), "
            "not a regular file)")
    assert _refused(run, tmp_path, capsys) == (line, 2, f"bench.py report: error: {line}\n")


def test_a_missing_file_is_still_said_missing(small_run, tmp_path, capsys):
    run = shutil.copytree(small_run, tmp_path / "nosteps")
    (run / "steps.csv").unlink()
    line = f"{run}: not a complete run folder (no steps.csv)"
    assert _refused(run, tmp_path, capsys) == (line, 2, f"bench.py report: error: {line}\n")
    (run / "floor.csv").unlink()
    (run / "floor.csv").symlink_to(run / "missing" / "floor.csv")
    assert [why_not_a_file(run / n) for n in ("steps.csv", "floor.csv")] == [
        "no steps.csv",
        f"floor.csv is a dangling link (to {run / 'missing' / 'floor.csv'}), not a "
        "regular file"]
