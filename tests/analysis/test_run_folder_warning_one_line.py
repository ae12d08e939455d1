"""A run folder whose name holds a newline or another control character: ``load``'s run
status lines (a complete run's lost-tables line, ``complete_problems_line``; a failed
run's, ``status_line``) start with the folder escaped to one line, as the command after
it already was, where the folder was written raw and the line spanned two; the report's
``Loading this run`` notes are one line each too."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

from ipc_bench import cli
from ipc_bench.analysis.results import RunStatusWarning, load, report_pointer

NO_SPACE = "cannot write to stdout: No space left on device"
NAME = "t\nx\x01y"
SHOWN = "t\\nx\\x01y"


def _run(tmp_path: Path, source: Path, **fields) -> Path:
    """A copy of ``source`` as ``tmp_path/NAME`` with ``fields`` set in its summary."""
    run = Path(shutil.copytree(source, tmp_path / NAME))
    summary = json.loads((run / "summary.json").read_text())
    summary.update(fields)
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def _status_warnings(run: Path) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load(run)
    return [str(w.message) for w in caught if w.category is RunStatusWarning]


def test_a_complete_runs_line_names_its_folder_on_one_line(tmp_path, shared_two_case_run):
    run = _run(tmp_path, shared_two_case_run, problems=[NO_SPACE])
    md = json.loads((run / "summary.json").read_text())["metadata"]
    assert _status_warnings(run) == [
        f"{tmp_path}/{SHOWN}: this run is complete, every case measured and written; as it "
        f"ended: {NO_SPACE} (its terminal tables were not printed: "
        f"{report_pointer(run, md)} shows them)"]
    assert "\n" not in report_pointer(run, md)


def test_a_failed_runs_line_names_its_folder_on_one_line(tmp_path, shared_two_case_run):
    run = _run(tmp_path, shared_two_case_run, status="failed", problems=["boom"])
    lines = _status_warnings(run)
    assert len(lines) == 1
    assert lines[0].startswith(f"{tmp_path}/{SHOWN}: this run failed: boom; ")
    assert "\n" not in lines[0] and "\x01" not in lines[0]


def test_the_reports_loading_notes_are_one_line(tmp_path, shared_two_case_run, capsys):
    summary = json.loads((shared_two_case_run / "summary.json").read_text())
    summary["cases"][0]["no_floor"] = "yes"
    run = _run(tmp_path, shared_two_case_run, cases=summary["cases"])
    line = (f"{tmp_path}/{SHOWN}/summary.json: case {summary['cases'][0]['case_id']!r} has "
            'no_floor "yes", not true or false (read as absent: inferred from the case\'s '
            "settings)")
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 0
    assert capsys.readouterr().err.splitlines() == [f"bench.py report: warning: {line}"]
    md = (tmp_path / "rep" / "report.md").read_text()
    assert f"> **Note:** Loading this run: {line}." in md.splitlines()
