"""``bench.py report results/published`` (a folder of published report folders, not a
run) says what it holds and what to do, as ``report results`` and ``report
results/published/decode-steady`` do, where it gave the bare refusal."""

from __future__ import annotations

from ipc_bench import cli


def _report_folder(path):
    path.mkdir(parents=True)
    (path / "report.md").write_text("# report\n")
    (path / "report.html").write_text("<p>report</p>\n")


def test_a_folder_of_report_folders_says_so(tmp_path, capsys):
    published = tmp_path / "published"
    for name in ("tp", "decode-steady"):
        _report_folder(published / name)
    (published / "variants").mkdir()  # no report.md: not counted
    (published / "README.md").write_text("notes\n")
    assert cli.main(["report", str(published)]) == 2
    assert capsys.readouterr() == ("", (
        f"bench.py report: error: {published}: not a run folder (no summary.json); it "
        f"holds 2 folders of rendered reports: read them, e.g. "
        f"{published}/decode-steady/report.md, or report the run folders they were made "
        "from\n"))


def test_one_report_folder_and_run_folders_beside_reports(tmp_path, capsys):
    one = tmp_path / "one"
    _report_folder(one / "only")
    assert cli.main(["report", str(one)]) == 2
    assert capsys.readouterr().err == (
        f"bench.py report: error: {one}: not a run folder (no summary.json); it holds a "
        f"folder of a rendered report: read it, {one}/only/report.md, or report the run "
        "folders it was made from\n")
    both = tmp_path / "both"
    _report_folder(both / "a-report")
    (both / "z-run").mkdir()
    (both / "z-run" / "summary.json").write_text("{}")
    assert cli.main(["report", str(both)]) == 2
    assert capsys.readouterr().err == (
        f"bench.py report: error: {both}: not a run folder (no summary.json); it holds 1 "
        f"run folder: give it, e.g. {both}/z-run\n")
