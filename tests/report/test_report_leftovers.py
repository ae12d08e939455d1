"""A report killed with SIGKILL left its temporary folder (``.NAME.tmp-*``, partial
files) or the earlier report it had moved aside (``.NAME.old-*``) beside its output
folder, and the next report into that folder neither removed nor mentioned them; where
the kill came between the two renames, the output folder was gone and the earlier
report lay only in ``.NAME.old-*``. The next report, holding the folder's lock, removes
them (restoring the earlier report first where the folder is missing), one line each.
``--output .`` looked for its lock inside the folder (``..lock``) and refused an empty
folder for it; the current folder is now refused as an output, spelt ``.`` or
``$PWD``, since renaming it aside leaves the shell in a deleted folder. A report of
another run of the same folder name (``A/run``, then ``B/run``) said nothing of the
earlier report it replaced."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import test_hand_edited_summary as _edited

NO_FIGURES = _edited.NO_FIGURES
good_run = _edited.good_run  # the fixture: a real run of two cases

REPO = Path(__file__).resolve().parents[2]


def _report(cli, run, out):
    return cli.main(["report", str(run), "--output", str(out), NO_FIGURES])


def test_a_killed_reports_temporary_and_set_aside_folders_are_removed(
        good_run, tmp_path, capsys):
    from ipc_bench import cli

    out = tmp_path / "rep"
    assert _report(cli, good_run, out) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    tmp = tmp_path / ".rep.tmp-abcd_123"
    tmp.mkdir()
    (tmp / "report.html").write_bytes(b"<html><body>cut sh")
    old = tmp_path / ".rep.old-zz9_8x7w"
    shutil.copytree(out, old)
    other = tmp_path / ".rep2.tmp-abcd_123"  # another folder's: not this report's
    other.mkdir()
    capsys.readouterr()
    assert _report(cli, good_run, out) == 0
    assert capsys.readouterr() == (
        f"report: {out / 'report.html'}\n",
        f"bench.py report: warning: removed {tmp_path}/.rep.old-zz9_8x7w, the earlier "
        "report a report killed while it replaced it had moved aside\n"
        f"bench.py report: warning: removed {tmp_path}/.rep.tmp-abcd_123, left by a "
        "report killed while it wrote\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".rep2.tmp-abcd_123", "rep"]
    assert sorted(p.name for p in out.iterdir()) == sorted(before)


def test_an_earlier_report_moved_aside_by_a_killed_report_is_restored_then_replaced(
        good_run, tmp_path, capsys):
    from ipc_bench import cli

    other = tmp_path / "other"
    shutil.copytree(good_run, other)
    out = tmp_path / "rep"
    assert _report(cli, good_run, out) == 0
    os.rename(out, tmp_path / ".rep.old-a1b2c3d4")  # killed before the second rename
    capsys.readouterr()
    assert _report(cli, other, out) == 0
    assert capsys.readouterr() == (
        f"report: {out / 'report.html'}\n",
        f"bench.py report: warning: restored the earlier report in {out} from "
        f"{tmp_path}/.rep.old-a1b2c3d4, where a report killed while it replaced it had "
        "moved it\n"
        f"bench.py report: replaced the earlier report of good in {out}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other", "rep"]
    assert sorted(p.name for p in out.iterdir()) == [
        "other.summary.json", "report.html", "report.md"]


def test_a_report_killed_with_sigkill_leaves_nothing_the_next_one_keeps(
        good_run, tmp_path):
    out = tmp_path / "rep"
    cmd = [sys.executable, "bench.py", "report", str(good_run), "--output", str(out),
           NO_FIGURES]
    assert subprocess.run(cmd, cwd=REPO, capture_output=True).returncode == 0
    # killed as soon as its temporary folder appears (or once it ends: nothing left)
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            if any(p.name.startswith((".rep.tmp-", ".rep.old-"))
                   for p in tmp_path.iterdir()):
                break
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0
    assert done.stdout == f"report: {out / 'report.html'}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]
    assert sorted(p.name for p in out.iterdir()) == [
        "good.summary.json", "report.html", "report.md"]


def test_the_current_folder_as_output_is_refused_however_spelt(
        good_run, tmp_path, monkeypatch, capsys):
    from ipc_bench import cli

    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    for spelt in (".", "./", str(here), "../here"):
        assert _report(cli, good_run, spelt) == 2
        shown = str(here) if spelt in (".", "./") else spelt
        assert capsys.readouterr() == (
            "", f"bench.py report: error: output folder {shown} is the current folder "
            "or holds it, which a report cannot replace (it is written beside it and "
            "renamed into place, leaving the shell in a deleted folder): give --output "
            "a folder elsewhere, or run it from another folder\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["here"]
    assert list(here.iterdir()) == []
    assert os.getcwd() == str(here)


def test_dot_dot_as_output_has_its_lock_beside_it(
        good_run, tmp_path, monkeypatch, capsys):
    from ipc_bench import cli

    out = tmp_path / "rep"
    (out / "sub").mkdir(parents=True)
    monkeypatch.chdir(out / "sub")
    # the current folder is inside it: refused, naming it as the real path
    assert _report(cli, good_run, "..") == 2
    assert capsys.readouterr().err.startswith(
        f"bench.py report: error: output folder {out} is the current folder or holds it")
    monkeypatch.chdir(tmp_path)
    (out / "sub").rmdir()
    assert _report(cli, good_run, "rep/sub/..") == 0
    assert capsys.readouterr() == (f"report: {out / 'report.html'}\n", "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]


def test_a_report_of_another_run_of_the_same_name_says_it_replaced_it(
        good_run, tmp_path, capsys):
    from ipc_bench import cli

    a, b = tmp_path / "A" / "good", tmp_path / "B" / "good"
    shutil.copytree(good_run, a)
    shutil.copytree(good_run, b)
    summary = json.loads((b / "summary.json").read_text())
    summary["metadata"]["start_time_utc"] = "2024-05-01T12:00:00.1+00:00"
    (b / "summary.json").write_text(json.dumps(summary))
    out = tmp_path / "rep"
    assert _report(cli, a, out) == 0
    assert _report(cli, a, out) == 0
    assert capsys.readouterr() == (f"report: {out / 'report.html'}\n" * 2, "")
    assert _report(cli, b, out) == 0
    assert capsys.readouterr() == (
        f"report: {out / 'report.html'}\n",
        "bench.py report: replaced the earlier report of good (another run of that "
        f"name) in {out}\n")
    assert _report(cli, b, out) == 0
    assert capsys.readouterr() == (f"report: {out / 'report.html'}\n", "")



def test_a_report_of_some_of_the_same_runs_names_no_run_as_another(
        good_run, tmp_path, capsys):
    from ipc_bench import cli

    out = tmp_path / "rep"
    assert _report(cli, good_run, out) == 0
    shutil.copyfile(good_run / "summary.json", out / "zz.summary.json")  # a second run's
    capsys.readouterr()
    assert _report(cli, good_run, out) == 0
    assert capsys.readouterr() == (
        f"report: {out / 'report.html'}\n",
        f"bench.py report: replaced the earlier report of good, zz in {out}\n")
