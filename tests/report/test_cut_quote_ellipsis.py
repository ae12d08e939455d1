"""A value a warning line quotes cut (``run_files._shown``: its JSON text past 40
characters) ends in ``...``, as the project's other cut quotes do, where it stopped in
the middle with nothing saying so (``{"count": 1, "host": "h", "ports": {"ctl``); one
of 40 characters or fewer is quoted whole."""

from __future__ import annotations

import json
import shutil

from ipc_bench import cli


def test_a_cut_quote_ends_in_an_ellipsis(shared_two_case_run, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(shared_two_case_run, run)
    summary = json.loads((run / "summary.json").read_text())
    summary["metadata"].update(aa="y" * 38, niceness={"a": "b" * 40})
    (run / "summary.json").write_text(json.dumps(summary))
    capsys.readouterr()
    code = cli.main(["report", str(run), "--output", str(tmp_path / "rep"), "--no-figures"])
    assert (code, capsys.readouterr().err.splitlines()) == (0, [
        f'bench.py report: warning: {run}/summary.json: metadata.aa is "{"y" * 38}", not '
        "true or false (left out)",
        f'bench.py report: warning: {run}/summary.json: metadata.niceness is {{"a": '
        f'"{"b" * 33}..., not a whole number (left out)'])
