"""A run folder whose name holds control characters (``t_nl<newline>x y``) gives its
report's files a name with each run of them one ``_`` (``t_nl_x_y.summary.json``), as
docs/usage.md says: the name is cleaned from the folder's name, not from its run id,
which writes the newline as ``\\n`` (and so left an ``n``: ``t_nl_nx_y``)."""

from __future__ import annotations

import shutil
from pathlib import Path

from ipc_bench import cli
from ipc_bench.analysis.results import load, run_labels, run_names
from ipc_bench.report.names import file_slugs, run_slugs


def test_the_names_keep_what_the_labels_escape(tmp_path):
    dirs = [tmp_path / "t_nl\nx y", tmp_path / "a\x1b[0m\tb"]
    assert run_labels(dirs) == ["t_nl\\nx y", "a\\x1b[0m\\tb"]
    assert run_names(dirs) == ["t_nl\nx y", "a\x1b[0m\tb"]
    assert file_slugs(run_labels(dirs), run_names(dirs)) == {
        "t_nl\\nx y": "t_nl_x_y", "a\\x1b[0m\\tb": "a_0m_b"}
    assert file_slugs(["x/run", "x_run"]) == {"x/run": "x_run", "x_run": "x_run-2"}


def test_the_report_of_such_a_run_names_its_files_so(shared_two_case_run, tmp_path, capsys):
    run = tmp_path / "t_nl\nx y"
    shutil.copytree(shared_two_case_run, run)
    assert run_slugs(load(run), ["t_nl\\nx y"]) == {"t_nl\\nx y": "t_nl_x_y"}
    out = tmp_path / "rep"
    assert cli.main(["report", str(run), "--output", str(out), "--no-figures"]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in out.iterdir()) == [
        "report.html", "report.md", "t_nl_x_y.summary.json"]
    assert "(raw data: `t_nl_x_y.summary.json` beside this file)." in \
        (out / "report.md").read_text()
    assert (out / "t_nl_x_y.summary.json").read_bytes() == \
        Path(run / "summary.json").read_bytes()
