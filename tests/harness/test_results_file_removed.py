"""A results CSV removed (or replaced) under a running run: the run ends with one line
naming the file and what it held, exit 1, ``status: failed`` with that line among its
problems, and the file is never made again without its header
(``run_folder.RunWriter``'s ``_files``, ``append_csv``'s ``same_as``). A run that ends
``incomplete`` or ``failed`` for another reason keeps its status and records the same
line among its problems."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ipc_bench.harness.run_folder import STEPS_HEADER, RunWriter

# Two cases of 50 steps (num_running=2/send/msgpack#0, then .../cached/...).
_TINY = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "50",
         "--warmup-steps", "2", "--policies", "send,cached", "--codecs", "msgpack",
         "--no-single-process", "--quiet", "--seed", "1"]


def _at_second_case(monkeypatch, action) -> None:
    """Run ``action`` as the second case starts (the first written whole)."""
    from ipc_bench.cli import execute

    real, calls = execute.run_case, []

    def run_case(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            action()
        return real(*args, **kwargs)

    monkeypatch.setattr(execute, "run_case", run_case)


def _before_writer_call(monkeypatch, method: str, when, action) -> None:
    """Run ``action`` before the call of ``RunWriter.method`` for which ``when(n,
    *args)`` holds (``n``: that call's number, from 1)."""
    real, calls = getattr(RunWriter, method), []

    def wrapped(self, *args, **kwargs):
        calls.append(1)
        if when(len(calls), *args):
            action()
        return real(self, *args, **kwargs)

    monkeypatch.setattr(RunWriter, method, wrapped)


def _summary(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())


def _header_line(path: Path) -> str:
    with open(path) as f:
        return f.readline()


@pytest.mark.parametrize("name,held,lost", [
    ("steps.csv", 52, "; rows not written: 52 of steps.csv (kept in steps.partial.csv)"),
    ("floor.csv", 50, "; rows not written: 50 of floor.csv"),
    ("requests.csv", 2, "; rows not written: 2 of requests.csv"),
])
def test_a_results_file_removed_between_cases_ends_the_run_in_one_line(
        name, held, lost, tmp_path, monkeypatch, capsys):
    from ipc_bench import cli

    run = tmp_path / "run"
    _at_second_case(monkeypatch, lambda: (run / name).unlink())
    assert cli.main(_TINY + ["--output", str(run)]) == 1
    line = (f"cannot write results to {run}: {name} was removed or replaced during the "
            f"run: the {held} rows written to it before are lost{lost}")
    assert capsys.readouterr().err == f"bench.py: error: {line}; partial results: {run}\n"
    summary = _summary(run)
    assert (summary["status"], summary["problems"]) == ("failed", [line])
    assert not (run / name).exists()  # never made again without its header
    assert [c["complete"] for c in summary["cases"]] == [True, False]


def test_a_results_file_replaced_is_not_appended_to(tmp_path, monkeypatch, capsys):
    """Another file put in its place (same name, another inode) is left as it is."""
    from ipc_bench import cli

    run = tmp_path / "run"
    planted = ",".join(STEPS_HEADER) + "\n"

    def replace():
        (run / "steps.csv").unlink()
        (run / "steps.csv").write_text(planted)

    _at_second_case(monkeypatch, replace)
    assert cli.main(_TINY + ["--output", str(run)]) == 1
    line = (f"cannot write results to {run}: steps.csv was removed or replaced during the "
            "run: the 52 rows written to it before are lost; rows not written: 52 of "
            "steps.csv (kept in steps.partial.csv)")
    assert capsys.readouterr().err == f"bench.py: error: {line}; partial results: {run}\n"
    assert (run / "steps.csv").read_text() == planted


def test_a_results_file_removed_after_the_last_case_fails_the_run(
        tmp_path, monkeypatch, capsys):
    """Removed once every case was written, before the run's end: ``finish`` stats the
    files it made, and the run, whose results are not all there, is not complete."""
    from ipc_bench import cli

    run = tmp_path / "run"
    _before_writer_call(monkeypatch, "finish", lambda n, status, *_: status == "complete",
                        lambda: (run / "floor.csv").unlink())
    assert cli.main(_TINY + ["--output", str(run)]) == 1
    line = (f"cannot write results to {run}: floor.csv was removed or replaced during the "
            "run: the 100 rows written to it before are lost")
    assert capsys.readouterr().err == f"bench.py: error: {line}; partial results: {run}\n"
    summary = _summary(run)
    assert (summary["status"], summary["problems"]) == ("failed", [line])
    assert [c["complete"] for c in summary["cases"]] == [True, True]


def test_a_results_file_removed_before_an_interrupt_is_said_as_a_failed_run_says_it(
        tmp_path):
    """Removed after the last append, then the run interrupted (SIGINT): the run stays
    ``incomplete``, and the file's line among its problems is the one a run that would
    be complete ends with (``cannot write results to DIR: ...``), not ``DIR: ...``."""
    run = tmp_path / "run"
    writer = RunWriter(run, {})
    (run / "floor.csv").unlink()
    writer.finish("incomplete", ["interrupted by SIGINT after 1 of 2 cases"])
    summary = _summary(run)
    assert (summary["status"], summary["problems"]) == ("incomplete", [
        "interrupted by SIGINT after 1 of 2 cases",
        f"cannot write results to {run}: floor.csv was removed or replaced during the "
        "run: no row had been written to it"])
    assert not (run / "floor.csv").exists()


def test_the_partial_copy_removed_while_a_case_runs_keeps_the_case_in_steps_csv(
        tmp_path, monkeypatch, capsys):
    """``steps.partial.csv`` removed mid-case: the run ends (exit 1) naming it; its rows
    were a copy of the running case's, which are written to ``steps.csv`` whole."""
    from ipc_bench import cli
    from ipc_bench.harness import recording

    monkeypatch.setattr(recording, "FLUSH_INTERVAL_S", 0.0)  # flush after every step
    run = tmp_path / "run"
    _before_writer_call(monkeypatch, "partial_steps", lambda n, *_: n == 3,
                        lambda: (run / "steps.partial.csv").unlink())
    assert cli.main(_TINY + ["--output", str(run)]) == 1
    line = (f"cannot write results to {run}: steps.partial.csv was removed or replaced "
            "during the run")
    assert capsys.readouterr().err == f"bench.py: error: {line}; partial results: {run}\n"
    summary = _summary(run)
    assert (summary["status"], summary["problems"]) == ("failed", [line])
    assert not (run / "steps.partial.csv").exists()
    steps = (run / "steps.csv").read_text().splitlines()
    assert steps[0] == ",".join(STEPS_HEADER)
    failed_step = summary["cases"][0]["failed_step"]
    assert len(steps) == 1 + failed_step  # every step it ran, from 0


def test_append_csv_to_a_file_replaced_writes_nothing(tmp_path):
    from ipc_bench.harness.run_folder import ResultsFileGone, append_csv

    path = tmp_path / "a.csv"
    made = append_csv(path, [(1, 2)], ("x", "y"))
    st = os.stat(path)
    assert made == (st.st_dev, st.st_ino, len("x,y\r\n1,2\r\n"))
    made = append_csv(path, [(3, 4)], ("x", "y"), same_as=made)
    assert path.read_text() == "x,y\n1,2\n3,4\n"
    path.unlink()
    with pytest.raises(ResultsFileGone) as err:
        append_csv(path, [(5, 6)], ("x", "y"), same_as=made)
    assert (err.value.strerror, path.exists()) == ("a.csv was removed", False)
    path.write_text("x,y\n")  # another file: often the inode number just freed
    with pytest.raises(ResultsFileGone) as err:
        append_csv(path, [(5, 6)], ("x", "y"), same_as=made)
    assert (err.value.strerror, path.read_text()) == ("a.csv was replaced", "x,y\n")
