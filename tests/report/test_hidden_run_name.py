"""A run folder whose name starts with a dot (``.hid``) gives report files that are
not hidden: a file-name prefix that would start with ``.`` gets ``_`` before it
(``names.file_slug``: ``_.hid.summary.json``), where the report wrote a hidden
``.hid.summary.json`` (and, beside another run, hidden figures)."""

from __future__ import annotations

import shutil

from ipc_bench import cli
from ipc_bench.report.names import file_slug, file_slugs


def test_a_prefix_that_would_start_with_a_dot_gets_an_underscore_before_it():
    assert [file_slug(name) for name in (".hid", "..", "x/.hid", "_.hid", ".ü x", "a.")] == [
        "_.hid", "_..", "x_.hid", "_.hid", "_.ü_x", "a."]
    assert file_slugs([".hid", "_.hid"]) == {".hid": "_.hid", "_.hid": "_.hid-2"}
    long = file_slug("." + "a" * 300)
    assert (len(long.encode()), long[:3]) == (224, "_.a")


def test_a_report_of_a_run_named_with_a_leading_dot_has_no_hidden_file(
        shared_two_case_run, tmp_path, capsys):
    run = tmp_path / ".hid"
    shutil.copytree(shared_two_case_run, run, ignore=shutil.ignore_patterns("report"))
    out = tmp_path / "rep"
    assert cli.main(["report", str(run), "--output", str(out), "--no-figures"]) == 0
    assert capsys.readouterr() == (f"report: {out / 'report.html'}\n", "")
    assert sorted(p.name for p in out.iterdir()) == [
        "_.hid.summary.json", "report.html", "report.md"]
    assert (out / "_.hid.summary.json").read_bytes() == (run / "summary.json").read_bytes()
    assert "`_.hid.summary.json`" in (out / "report.md").read_text()
