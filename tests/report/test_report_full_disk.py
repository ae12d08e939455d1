"""``bench.py report`` on a folder whose disk is full (or quota spent) is refused before
its tables and figures are made, one line, exit 2, nothing left behind, where it drew
every figure and then failed with exit 1 (``document._probe_folder``)."""
from __future__ import annotations

import errno
import os
import shutil

from ipc_bench import cli
from ipc_bench.harness import run_folder
from ipc_bench.report import document


def _full(monkeypatch, err: int) -> None:
    """Every write to a probe file fails with ``err``; other writes go through."""
    real_write, probes = os.write, set()
    real_mkstemp = run_folder.tempfile.mkstemp

    def mkstemp(*args, **kwargs):
        fd, name = real_mkstemp(*args, **kwargs)
        probes.add(fd)
        return fd, name

    def write(fd, data):
        if fd in probes:
            raise OSError(err, os.strerror(err))
        return real_write(fd, data)

    monkeypatch.setattr(run_folder.tempfile, "mkstemp", mkstemp)
    monkeypatch.setattr(os, "write", write)


def test_a_full_disk_is_refused_before_any_table_or_figure(
        shared_small_run, tmp_path, monkeypatch, capsys):
    run = shutil.copytree(shared_small_run, tmp_path / "run")
    built = []
    monkeypatch.setattr(document, "_libraries",
                        lambda figures: lambda *a, **k: built.append(1) or [])
    _full(monkeypatch, errno.ENOSPC)
    assert cli.main(["report", str(run)]) == 2
    assert capsys.readouterr() == ("", (
        f"bench.py report: error: cannot write {run}/report: No space left on device\n"))
    assert built == []
    assert sorted(os.listdir(run)) == sorted(os.listdir(shared_small_run))


def test_a_spent_quota_given_output_is_refused_alike(
        shared_small_run, tmp_path, monkeypatch, capsys):
    out = tmp_path / "reports" / "r1"
    _full(monkeypatch, errno.EDQUOT)
    assert cli.main(["report", str(shared_small_run), "--output", str(out),
                     "--no-figures"]) == 2
    assert capsys.readouterr() == ("", (
        f"bench.py report: error: cannot write {out}: Disk quota exceeded\n"))
    assert os.listdir(tmp_path) == []


def test_a_folder_that_takes_files_gets_its_report_and_no_probe_left(
        shared_small_run, tmp_path, capsys):
    run = shutil.copytree(shared_small_run, tmp_path / "run")
    assert cli.main(["report", str(run), "--no-figures"]) == 0
    assert capsys.readouterr() == (f"report: {run}/report/report.html\n", "")
    assert not [n for n in os.listdir(run) if "probe" in n]


def test_a_file_size_limit_is_left_to_the_reports_files(
        shared_small_run, tmp_path, monkeypatch):
    """A probe the file-size limit refuses (EFBIG) says nothing of the folder: the
    report's own writes name the limit (``test_report_file_size_limit``)."""
    run = shutil.copytree(shared_small_run, tmp_path / "run")
    _full(monkeypatch, errno.EFBIG)
    assert document._probe_folder(run / "report", run / "report") == run / "report"
    assert sorted(os.listdir(run)) == sorted(os.listdir(shared_small_run))
