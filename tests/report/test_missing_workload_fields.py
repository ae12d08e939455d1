"""A case field that repeats one of its workload labels (``num_running``, ``trace``) but
is null or missing (a hand edit) is read as its workload's, with one warning line in
the words of the one for another value, where the report said nothing and its findings
lost the workload (``On `num_running=4` `` for ``At 4 running requests``; a replay's
whole ``On trace=...`` bullet and the shares of its summary row)."""

from __future__ import annotations

import json
import shutil

import pytest

from ipc_bench import cli

STEADY_SEND = "num_running=4/send/msgpack#0"


def _copy(source, folder, key=None, how=None):
    """``source`` copied to ``folder/run``, case 0's ``key`` set to null (``how``
    ``"null"``) or deleted (``"deleted"``); the folder."""
    run = folder / "run"
    shutil.copytree(source, run)
    if key is not None:
        summary = json.loads((run / "summary.json").read_text())
        if how == "null":
            summary["cases"][0][key] = None
        else:
            del summary["cases"][0][key]
        (run / "summary.json").write_text(json.dumps(summary))
    return run


def _report(run, capsys):
    """``bench.py report RUN`` (no figures): (exit code, stderr lines, report.md)."""
    capsys.readouterr()
    code = cli.main(["report", str(run), "--output", str(run.parent / "rep"),
                     "--no-figures"])
    err = capsys.readouterr().err.splitlines()
    return code, err, (run.parent / "rep" / "report.md").read_text()


def _body(md: str) -> list[str]:
    """``md``'s lines but its Rendered line, which names the command, the loading notes
    and the blank lines."""
    return [line for line in md.splitlines() if line and not line.startswith(
        ("Rendered ", "> **Note:** Loading this run"))]


@pytest.mark.parametrize("how", ["null", "deleted"])
def test_a_num_running_null_or_missing_is_read_as_the_workloads(how, shared_two_case_run,
                                                                 tmp_path, capsys):
    run = _copy(shared_two_case_run, tmp_path, "num_running", how)
    shown = "num_running null" if how == "null" else "no num_running"
    line = (f"{run}/summary.json: case {STEADY_SEND!r} has {shown}, but its workload is "
            "num_running=4 (read as 4, its workload's)")
    code, err, md = _report(run, capsys)
    assert (code, err) == (0, [f"bench.py report: warning: {line}"])
    assert f"> **Note:** Loading this run: {line}." in md.splitlines()
    assert "At 4 running requests" in md and "On `num_running=4`" not in md


@pytest.mark.parametrize("how", ["null", "deleted"])
def test_a_trace_null_or_missing_is_read_as_the_workloads(how, shared_timed_run, tmp_path,
                                                          capsys):
    source, _, send, _ = shared_timed_run
    intact = _copy(source, tmp_path / "intact")
    run = _copy(source, tmp_path / "edited", "trace", how)
    trace = json.loads((source / "summary.json").read_text())["cases"][0]["trace"]
    shown = "trace null" if how == "null" else "no trace"
    line = (f"{run}/summary.json: case {send!r} has {shown}, but its workload is "
            f"trace={trace} (read as {json.dumps(trace)}, its workload's)")
    code, err, md = _report(run, capsys)
    assert (code, err) == (0, [f"bench.py report: warning: {line}"])
    assert f"> **Note:** Loading this run: {line}." in md.splitlines()
    assert _report(intact, capsys)[:2] == (0, [])
    assert _body(md) == _body((intact.parent / "rep" / "report.md").read_text())
