"""A complete run whose stdout failed as it ended: ``load``'s warning points at the
command that prints its tables as the run recorded its own (``metadata.command_line``
and ``cwd``): ``cd CWD && python SCRIPT report /abs/RUN``, quoted where a shell needs
it, from any folder; a run that recorded no folder, ``python bench.py report RUN``.
``write_report`` called from Python with no ``command`` names that call, not a
``bench.py`` command that never ran."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest

from ipc_bench.analysis.results import RunStatusWarning, load, report_pointer

NO_SPACE = "cannot write to stdout: No space left on device"
HEAD = ("run: this run is complete, every case measured and written; as it ended: "
        f"{NO_SPACE} (its terminal tables were not printed: ")


def _full_stdout_run(tmp_path: Path, source: Path, **metadata) -> Path:
    """A copy of ``source`` as ``tmp_path/run`` whose stdout failed as it ended (its
    ``problems``), its metadata's ``command_line`` and ``cwd`` set from ``metadata``
    (a value of ``None`` removed)."""
    run = Path(shutil.copytree(source, tmp_path / "run"))
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "complete"
    summary["problems"] = [NO_SPACE]
    for key, value in metadata.items():
        if value is None:
            summary["metadata"].pop(key, None)
        else:
            summary["metadata"][key] = value
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def _warned(monkeypatch, folder: Path) -> list[str]:
    """The warnings of ``load("run")`` read from ``folder``, as texts."""
    monkeypatch.chdir(folder)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load("run")
    assert {w.category for w in caught} == {RunStatusWarning}
    return [str(w.message) for w in caught]


def test_the_pointer_is_the_runs_own_bench_py_in_its_folder(tmp_path, monkeypatch,
                                                             shared_two_case_run):
    run = _full_stdout_run(tmp_path, shared_two_case_run,
                           command_line=["bench.py", "--scenario", "decode-steady"],
                           cwd="/home/me/ipc-bench")
    assert _warned(monkeypatch, tmp_path) == [
        f"{HEAD}cd /home/me/ipc-bench && python bench.py report {run} shows them)"]


def test_a_script_and_folder_that_need_quoting_are_quoted(tmp_path, monkeypatch,
                                                          shared_two_case_run):
    where = tmp_path / "w d"
    where.mkdir()
    run = _full_stdout_run(where, shared_two_case_run,
                           command_line=["../head 2/bench.py", "--quiet"], cwd="/r/w d")
    assert _warned(monkeypatch, where) == [
        f"{HEAD}cd '/r/w d' && python '../head 2/bench.py' report '{run}' shows them)"]


def test_a_run_that_recorded_no_folder_points_at_bench_py_here(tmp_path, monkeypatch,
                                                               shared_two_case_run):
    _full_stdout_run(tmp_path, shared_two_case_run, cwd=None)
    assert _warned(monkeypatch, tmp_path) == [
        f"{HEAD}python bench.py report run shows them)"]


@pytest.mark.parametrize("metadata, line", [
    ({"command_line": ["/x/bench.py"], "cwd": "/w"}, "cd /w && python /x/bench.py report /run"),
    ({"command_line": [], "cwd": "/w"}, "python bench.py report run"),
    ({"command_line": ["python3"], "cwd": "/w"}, "python bench.py report run"),
    ({"command_line": "bench.py", "cwd": "/w"}, "python bench.py report run"),
    ({"command_line": ["bench.py"], "cwd": "w"}, "python bench.py report run"),
    ({"command_line": ["bench.py"]}, "python bench.py report run"),
    (None, "python bench.py report run"),
])
def test_report_pointer_takes_only_what_a_run_writes(monkeypatch, metadata, line):
    monkeypatch.chdir("/")
    assert report_pointer(Path("run"), metadata) == line


def test_write_report_from_python_names_the_call(tmp_path, monkeypatch, shared_two_case_run):
    from ipc_bench.report.document import python_call, write_report

    monkeypatch.chdir(tmp_path)
    shutil.copytree(shared_two_case_run, tmp_path / "run")
    out = write_report(["run"], "rep", figures=False)
    line = next(ln for ln in (out / "report.md").read_text().splitlines()
                if ln.startswith("Rendered "))
    assert line.split(" by ", 1)[1] == (
        f"`ipc_bench.report.document.write_report(['run'], output='rep', figures=False)  "
        f"# in {tmp_path}` from run folder `run` (raw data: `run.summary.json` beside "
        "this file).")
    assert python_call([Path("a"), "b\nc"], baseline="a") == (
        f"ipc_bench.report.document.write_report(['a', 'b\\nc'], baseline='a')  "
        f"# in {tmp_path}")
