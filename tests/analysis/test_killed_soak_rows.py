"""A soak killed in a case (SIGKILL: its summary names the case as running and does not
list it) leaves the rows that case streamed in steps.csv, requests.csv and itl.csv:
loading says the run stopped during it, as a killed decode-steady run's rows in
steps.partial.csv are said, not that summary.json leaves out a case (an edit)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from analysis_run import four_case_copy
from ipc_bench import cli
from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsWarning


@pytest.fixture(scope="module")
def four(tmp_path_factory):
    return four_case_copy(tmp_path_factory, tmp_path_factory.mktemp("runs") / "four")


def _killed_soak(run: Path, where: Path, claimed: bool = True,
                 problems: list[str] | None = None) -> tuple[Path, str, str]:
    """A copy of ``run`` as a soak killed in its third case leaves it: two cases
    listed, the third streamed (``stream``), named as ``running_case`` and its rows in
    the CSV files, the fourth's gone, no end. Returns the copy, the third case's id and
    its rows as the lines count them."""
    shutil.copytree(run, where)
    summary = json.loads((where / "summary.json").read_text())
    ids = [c["case_id"] for c in summary["cases"]]
    summary.update(cases=summary["cases"][:2], status="incomplete", running_case=ids[2],
                   problems=problems or [])
    summary["metadata"].pop("end_time_utc", None)
    for case in summary["metadata"]["cases"]:
        case["stream"] = case["case_id"] == ids[2]
    (where / "summary.json").write_text(json.dumps(summary))
    counts = {}
    for name in ("steps.csv", "requests.csv", "floor.csv", "itl.csv"):
        lines = (where / name).read_text().splitlines(keepends=True)
        kept = [ln for ln in lines if not ln.startswith(ids[3] + ",")]
        (where / name).write_text("".join(kept))
        counts[name] = sum(ln.startswith(ids[2] + ",") for ln in kept)
    if not claimed:
        (where / ".claimed").unlink(missing_ok=True)
    else:
        (where / ".claimed").touch()
    rows = (f"{counts['steps.csv']:,} rows in steps.csv and {counts['requests.csv']:,} "
            "rows in requests.csv")
    assert counts["steps.csv"] and counts["requests.csv"] and not counts["itl.csv"]
    return where, ids[2], rows


def _row_line(res, run_id: str, case: str) -> list[str]:
    return [ln for ln in res.warnings[run_id] if f"case '{case}'" in ln]


def test_a_killed_soaks_streamed_rows_are_said_as_the_runs_stop(four, tmp_path, capsys):
    run, case, rows = _killed_soak(four, tmp_path / "killed")
    with pytest.warns(ResultsWarning):
        res = load(run)
    line = (f"{run}: case '{case}': the run stopped during it, killed or unable to write "
            f"summary.json; it streams its rows, and its {rows} are not loaded")
    assert _row_line(res, "killed", case) == [line]
    assert case not in set(res.steps["case_id"]) and case not in set(res.requests["case_id"])
    assert res.unfinished()[-1] == dict(
        run_id="killed", case_id=case,
        error="the run stopped during it, killed or unable to write summary.json")
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 0
    assert f"bench.py report: warning: {line}\n" in capsys.readouterr().err
    md = (tmp_path / "rep" / "report.md").read_text()
    assert f"> **Note:** Loading this run: {line}.\n" in md
    assert "does not list it" not in md


def test_a_run_without_its_claim_file_may_still_be_running(four, tmp_path):
    run, case, rows = _killed_soak(four, tmp_path / "unclaimed", claimed=False)
    with pytest.warns(ResultsWarning):
        res = load(run)
    assert _row_line(res, "unclaimed", case) == [
        f"{run}: case '{case}': the run stopped during it, killed or unable to write "
        f"summary.json, or is still running; it streams its rows, and its {rows} are not "
        "loaded"]


def test_a_run_stopped_with_its_problems_says_so(four, tmp_path):
    run, case, rows = _killed_soak(four, tmp_path / "problems",
                                   problems=["cannot write results to DIR: File too large"])
    with pytest.warns(ResultsWarning):
        res = load(run)
    assert _row_line(res, "problems", case) == [
        f"{run}: case '{case}': the run stopped during it, as its status says; it streams "
        f"its rows, and its {rows} are not loaded"]


def test_unlisted_rows_of_a_streamed_case_the_run_was_not_running_are_an_edit(four,
                                                                              tmp_path):
    run, case, rows = _killed_soak(four, tmp_path / "edited")
    summary = json.loads((run / "summary.json").read_text())
    summary["running_case"] = None
    (run / "summary.json").write_text(json.dumps(summary))
    with pytest.warns(ResultsWarning):
        res = load(run)
    assert _row_line(res, "edited", case) == [
        f"{run}: case '{case}' has {rows}, but summary.json does not list it (left out)"]
