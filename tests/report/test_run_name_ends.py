"""A report's file names follow docs/usage.md's rule at the ends of a run folder's name
too: each run of other characters is one ``_`` wherever it is, and no ``_`` is dropped
(``$(id)`` gives ``_id_.summary.json``, ``*`` gives ``_.summary.json``), where leading
and trailing ones were dropped (``id.summary.json``, ``run.summary.json``: the name of
a run in ``id`` or of an unnamed one)."""

from __future__ import annotations

import shutil

from ipc_bench import cli
from ipc_bench.report.names import file_slug, file_slugs


def test_the_ends_of_a_name_follow_the_rule():
    names = ("$(id)", "*", "..x", "_a_", "(x)/run", "a" * 223 + "(b")
    assert [file_slug(n) for n in names] == [
        "_id_", "_", "_..x", "_a_", "_x_run", "a" * 223 + "_"]
    assert file_slugs(["id", "$(id)", "[id]"]) == {
        "id": "id", "$(id)": "_id_", "[id]": "_id_-2"}


def test_a_report_of_runs_named_with_odd_ends(shared_two_case_run, tmp_path, capsys):
    for name in ("$(id)", "*", "..x"):
        run = tmp_path / name
        shutil.copytree(shared_two_case_run, run, ignore=shutil.ignore_patterns("report"))
        out = tmp_path / f"rep{len(name)}"
        assert cli.main(["report", str(run), "--output", str(out), "--no-figures"]) == 0
        assert capsys.readouterr() == (f"report: {out / 'report.html'}\n", "")
        slug = {"$(id)": "_id_", "*": "_", "..x": "_..x"}[name]
        assert sorted(p.name for p in out.iterdir()) == [
            f"{slug}.summary.json", "report.html", "report.md"]
        assert f"(raw data: `{slug}.summary.json` beside this file)." in \
            (out / "report.md").read_text()
