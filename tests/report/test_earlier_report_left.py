"""A report that replaces an earlier one renames the earlier folder aside
(``.NAME.old-*``) and removes it once the new one is in place; where that removal
failed, the folder stayed beside the report without a word. It is one warning line
naming it and why; the new report is in place, exit 0."""

from __future__ import annotations

import errno

from test_hand_edited_summary import NO_FIGURES, good_run  # noqa: F401 (fixture)


def test_an_earlier_report_that_cannot_be_removed_is_named_in_one_warning(
        good_run, tmp_path, capsys, monkeypatch):  # noqa: F811 (fixture)
    from ipc_bench import cli
    from ipc_bench.report import document

    out = tmp_path / "rep"
    assert cli.main(["report", str(good_run), "--output", str(out), NO_FIGURES]) == 0
    (out / "report.md").write_text("earlier\n")
    real = document._remove_folder

    def stuck(folder, names):  # as a folder whose files cannot be unlinked
        if folder.name.startswith(".rep.old-"):
            raise PermissionError(errno.EACCES, "Permission denied", str(folder))
        return real(folder, names)

    monkeypatch.setattr(document, "_remove_folder", stuck)
    capsys.readouterr()
    assert cli.main(["report", str(good_run), "--output", str(out), NO_FIGURES]) == 0
    [old] = tmp_path.glob(".rep.old-*")
    assert capsys.readouterr() == (
        f"report: {out / 'report.html'}\n",
        f"bench.py report: warning: the earlier report, moved aside to {old}, could not "
        "be removed: Permission denied; remove it by hand\n")
    assert (old / "report.md").read_text() == "earlier\n"
    assert (out / "report.md").read_text() != "earlier\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == [old.name]


def test_an_earlier_report_removed_gives_no_warning(good_run, tmp_path,
                                                    capsys):  # noqa: F811 (fixture)
    from ipc_bench import cli

    out = tmp_path / "rep"
    for _ in range(2):
        assert cli.main(["report", str(good_run), "--output", str(out), NO_FIGURES]) == 0
    assert capsys.readouterr() == (f"report: {out / 'report.html'}\n" * 2, "")
    assert not list(tmp_path.glob(".rep.*"))
