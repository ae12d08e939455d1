"""A run that ends as it is read: the loader reads ``summary.json`` first and checks
the run's lock later, so a run that finished between the two (its complete summary
written, then its lock dropped) would pass for one killed. The loader reads such a run
again; a run killed before it was read keeps its words. The run's end is made to fall
between the two reads deterministically: the lock check is replaced by one that ends
the run as it is called."""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path

import pytest

from analysis_run import four_case_copy
from ipc_bench import cli
from ipc_bench.analysis import results
from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsWarning
from ipc_bench.harness.run_folder import run_in_progress


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    return four_case_copy(tmp_path_factory, tmp_path_factory.mktemp("runs") / "small")


def _last_case_running(run: Path, where: Path) -> tuple[Path, str, list[str]]:
    """A copy of ``run`` (4 cases) as ``bench.py`` leaves it while its last case
    finishes: every row in the CSV files (the last case's appended), the summary
    listing the first three cases, naming the fourth as ``running_case``, no end, a
    ``.claimed`` file. Returns the copy, the complete summary's text and the ids."""
    shutil.copytree(run, where)
    whole = (where / "summary.json").read_text()
    summary = json.loads(whole)
    ids = [c["case_id"] for c in summary["cases"]]
    assert len(ids) == 4 and summary["status"] == "complete"
    summary.update(cases=summary["cases"][:3], status="incomplete", running_case=ids[3])
    summary["metadata"].pop("end_time_utc")
    (where / "summary.json").write_text(json.dumps(summary))
    (where / ".claimed").touch()
    return where, whole, ids


def _replace(path: Path, text: str) -> None:
    """``path`` replaced by a new file holding ``text``, as the run writes its summary
    (``write_json_atomic``)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _reads(monkeypatch) -> list[Path]:
    """A list that each reading of a summary.json by the loader is appended to."""
    seen: list[Path] = []
    real = results.read_summary

    def counted(run_dir):
        seen.append(Path(run_dir))
        return real(run_dir)

    monkeypatch.setattr(results, "read_summary", counted)
    return seen


def test_a_run_that_finishes_as_it_is_read_loads_finished(small_run, tmp_path, monkeypatch):
    run, whole, ids = _last_case_running(small_run, tmp_path / "ending")
    ended = []

    def lock_check(run_dir):  # the run writes its end, then drops its lock
        if not ended:
            _replace(run / "summary.json", whole)
            ended.append(run_dir)
        return run_in_progress(run_dir)

    monkeypatch.setattr(results, "run_in_progress", lock_check)
    reads = _reads(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResultsWarning)
        res = load(run)
    assert ended and reads == [run, run]
    assert res.status == {"ending": "complete"}
    assert list(res.cases["case_id"]) == ids
    assert sorted(set(res.steps["case_id"])) == sorted(ids)
    assert res.warnings == {"ending": []} and res.status_warning == {"ending": ""}
    assert res.status_detail == {"ending": ""} and res.stopped_case == {}
    assert res.unfinished() == [] and res.still_running == []


def test_a_report_made_as_the_run_finishes_covers_every_case(small_run, tmp_path,
                                                              monkeypatch, capsys):
    run, whole, ids = _last_case_running(small_run, tmp_path / "ending")

    def lock_check(run_dir):
        if (run / "summary.json").read_text() != whole:
            _replace(run / "summary.json", whole)
        return run_in_progress(run_dir)

    monkeypatch.setattr(results, "run_in_progress", lock_check)
    assert cli.main(["report", str(run), "--no-figures"]) == 0
    assert capsys.readouterr() == (f"report: {run}/report/report.html\n", "")
    md = (run / "report" / "report.md").read_text()
    assert "incomplete" not in md and "no process holds its lock" not in md
    assert all(f"`{i}`" in md or i in md for i in ids)


def _killed_line(run: Path, res) -> str:
    detail = res.status_detail[run.name]
    assert detail.startswith(
        "stopped without finishing its summary (killed, or summary.json could not be "
        "written: a full disk, say): no process holds its lock, no end was recorded, "
        "summary status incomplete, 3 of 4 cases recorded, last case ")
    return (f"{run}: this run is incomplete: {detail}; 3 cases loaded, all finished; the "
            "case it was running is not loaded (Results.unfinished names it; "
            "Results.finished leaves it out)")


def test_a_killed_run_is_read_once_and_keeps_its_words(small_run, tmp_path, monkeypatch):
    run, _, ids = _last_case_running(small_run, tmp_path / "killed")
    rows = {name: sum(ln.startswith(ids[3] + ",") for ln in
                      (run / name).read_text().splitlines())
            for name in ("steps.csv", "requests.csv")}
    reads = _reads(monkeypatch)
    with pytest.warns(ResultsWarning) as caught:
        res = load(run)
    assert reads == [run]  # lock free, summary unchanged: no second reading
    assert [str(w.message) for w in caught] == [
        _killed_line(run, res),
        f"{run}: case '{ids[3]}' has {rows['steps.csv']:,} rows in steps.csv and "
        f"{rows['requests.csv']:,} rows in requests.csv, but summary.json does not list "
        "it (left out)"]
    assert res.status == {"killed": "incomplete"}
    assert list(res.cases["case_id"]) == ids[:3]
    assert res.unfinished() == [dict(
        run_id="killed", case_id=ids[3],
        error="the run stopped during it, killed or unable to write summary.json")]


def test_a_run_killed_as_it_is_read_is_read_again_as_killed(small_run, tmp_path,
                                                            monkeypatch):
    """Its lock held as the first reading checked it, dropped after with no end written
    (killed, or a summary that could not be written): read again, it is said stopped,
    not still running."""
    run, _, ids = _last_case_running(small_run, tmp_path / "killed")
    readings = []
    real = results._load_once

    def once(pd, run_dir, run_id):
        readings.append(run_id)
        try:
            return real(pd, run_dir, run_id)
        finally:
            readings.append("read")

    monkeypatch.setattr(results, "_load_once", once)
    monkeypatch.setattr(results, "run_in_progress",
                        lambda run_dir: readings == ["killed"])
    with pytest.warns(ResultsWarning) as caught:
        res = load(run)
    assert readings == ["killed", "read", "killed", "read"]
    assert str(caught[0].message) == _killed_line(run, res)
    assert res.still_running == []


def test_a_run_still_going_is_read_once(small_run, tmp_path, monkeypatch):
    run, _, ids = _last_case_running(small_run, tmp_path / "going")
    monkeypatch.setattr(results, "run_in_progress", lambda run_dir: True)
    reads = _reads(monkeypatch)
    with pytest.warns(ResultsWarning):
        res = load(run)
    assert reads == [run]
    assert res.status_detail["going"].startswith(
        "still running (it holds its lock): no end was recorded, summary status "
        "incomplete, 3 of 4 cases recorded, ")
    assert res.still_running == ["going"]
