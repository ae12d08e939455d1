"""Two reports into one ``--output`` folder at once both said ``report: DIR/report.html``
and exited 0, while the folder held only the later one. A report holds a lock beside
its output folder (``.NAME.lock``, ``flock``) while it renders and writes, as a run holds
its folder's claim; a second one is refused with one line, exit 2. A report that
replaces an earlier report of other runs says so in one line, as ``microbench`` does."""

from __future__ import annotations

import fcntl
import os
import shutil

from test_hand_edited_summary import NO_FIGURES, good_run  # noqa: F401 (fixture)


def test_a_report_into_a_folder_another_report_is_writing_is_refused(
        good_run, tmp_path, capsys):  # noqa: F811 (fixture)
    from ipc_bench import cli

    out = tmp_path / "rep"
    assert cli.main(["report", str(good_run), "--output", str(out), NO_FIGURES]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    capsys.readouterr()
    fd = os.open(tmp_path / ".rep.lock", os.O_WRONLY | os.O_CREAT)  # as a report writing
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert cli.main(["report", str(good_run), "--output", str(out), NO_FIGURES]) == 2
    finally:
        os.close(fd)
    assert capsys.readouterr() == (
        "", f"bench.py report: error: output folder {out} is being written by another "
        "report still going; give another --output, or run this one again once it ends\n")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".rep.lock", "rep"]


def test_a_lock_file_a_killed_report_left_locks_nothing_and_is_removed(
        good_run, tmp_path, capsys):  # noqa: F811 (fixture)
    from ipc_bench import cli

    out = tmp_path / "new" / "rep"
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / ".rep.lock").write_bytes(b"")  # its holder gone: no flock
    assert cli.main(["report", str(good_run), "--output", str(out), NO_FIGURES]) == 0
    assert capsys.readouterr() == (f"report: {out / 'report.html'}\n", "")
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == ["rep"]


def test_a_report_of_other_runs_says_which_report_it_replaced(
        good_run, tmp_path, capsys):  # noqa: F811 (fixture)
    from ipc_bench import cli

    other = tmp_path / "other"
    shutil.copytree(good_run, other)
    out = tmp_path / "rep"
    assert cli.main(["report", str(good_run), "--output", str(out), NO_FIGURES]) == 0
    assert cli.main(["report", str(good_run), "--output", str(out), NO_FIGURES]) == 0
    assert capsys.readouterr() == (f"report: {out / 'report.html'}\n" * 2, "")
    assert cli.main(["report", str(other), "--output", str(out), NO_FIGURES]) == 0
    assert capsys.readouterr() == (
        f"report: {out / 'report.html'}\n",
        f"bench.py report: replaced the earlier report of good in {out}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other", "rep"]
