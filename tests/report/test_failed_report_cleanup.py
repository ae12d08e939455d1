"""A report that fails once its temporary folder is made (``document.write_folder``)
leaves the output's folder as it was: no ``.NAME.tmp-*`` folder, an earlier report byte
for byte. Out of file descriptors (``ulimit -n``) too, where ``shutil.rmtree`` cannot
open the folder it removes (each failed report left a ``.report.tmp-*`` folder with
every figure and page in it); a temporary folder that cannot be removed is named at
the end of the one line."""

from __future__ import annotations

import errno
import os
import resource
import shutil
from pathlib import Path

import pytest

from ipc_bench import cli
from ipc_bench.report import document
from test_hand_edited_summary import NO_FIGURES, good_run  # noqa: F401 (fixture)


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` (relative), hidden ones included, with a file's bytes
    (``None`` for a folder)."""
    return {str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes())
            for p in sorted(root.rglob("*"))}


@pytest.fixture
def run_with_report(good_run, tmp_path, capsys):  # noqa: F811 (fixture)
    """A copy of the run with an earlier report in ``RUN/report`` (its default place)."""
    run = tmp_path / "run"
    shutil.copytree(good_run, run, ignore=shutil.ignore_patterns("report"))
    assert cli.main(["report", str(run), NO_FIGURES]) == 0
    capsys.readouterr()
    return run


@pytest.fixture
def descriptor_limit():
    """Restores the soft ``RLIMIT_NOFILE`` after a test that lowers it."""
    limits = resource.getrlimit(resource.RLIMIT_NOFILE)
    yield limits
    resource.setrlimit(resource.RLIMIT_NOFILE, limits)


def test_a_report_out_of_file_descriptors_leaves_no_temporary_folder(
        run_with_report, descriptor_limit, monkeypatch, capsys):
    """The run's summary is copied last: just before, the limit is lowered to the lowest
    free descriptor, so that no file can be opened (as under ``ulimit -n 8``): the copy
    fails, and so would ``shutil.rmtree`` of the temporary folder."""
    run = run_with_report
    before = _tree(run)
    real_copyfile = shutil.copyfile

    def copyfile(src, dst):
        lowest = os.dup(0)
        os.close(lowest)
        resource.setrlimit(resource.RLIMIT_NOFILE, (lowest, descriptor_limit[1]))
        return real_copyfile(src, dst)

    monkeypatch.setattr(document.shutil, "copyfile", copyfile)
    try:
        code = cli.main(["report", str(run), NO_FIGURES])
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, descriptor_limit)
    assert (code, capsys.readouterr()) == (1, ("", (
        f"bench.py report: error: cannot write {run / 'report' / 'run.summary.json'}: "
        "Too many open files\n")))
    assert _tree(run) == before
    monkeypatch.undo()  # ... and the next report is written as ever
    assert cli.main(["report", str(run), NO_FIGURES]) == 0
    assert sorted(p.name for p in run.iterdir() if "report" in p.name) == ["report"]


def test_a_temporary_folder_that_cannot_be_removed_is_named(run_with_report, monkeypatch,
                                                            capsys):
    run = run_with_report
    before = _tree(run)

    def copyfile(src, dst):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))

    real_rmdir = os.rmdir

    def rmdir(path, *args, **kwargs):
        if Path(path).name.startswith(".report.tmp-"):
            raise PermissionError(errno.EPERM, os.strerror(errno.EPERM), str(path))
        real_rmdir(path, *args, **kwargs)

    monkeypatch.setattr(document.shutil, "copyfile", copyfile)
    monkeypatch.setattr(document.os, "rmdir", rmdir)
    assert cli.main(["report", str(run), NO_FIGURES]) == 1
    monkeypatch.undo()
    left = [p for p in run.iterdir() if p.name.startswith(".report.tmp-")]
    assert len(left) == 1 and sorted(p.name for p in left[0].iterdir()) == []
    assert capsys.readouterr() == ("", (
        f"bench.py report: error: cannot write {run / 'report' / 'run.summary.json'}: "
        f"No space left on device; the temporary folder {left[0]} could not be removed: "
        "Operation not permitted\n"))
    left[0].rmdir()
    assert _tree(run) == before


def test_an_error_other_than_a_write_removes_what_it_made_and_is_raised(tmp_path,
                                                                      monkeypatch):
    """``MemoryError`` (or any other) while the files are written: the temporary folder
    and the folders made for it are removed, and the error goes on as it was."""
    def copyfile(src, dst):
        raise MemoryError

    monkeypatch.setattr(document.shutil, "copyfile", copyfile)
    source = tmp_path / "summary.json"
    source.write_text("{}")
    with pytest.raises(MemoryError):
        document.write_folder(tmp_path / "new" / "rep",
                              [("report.md", b"text"), ("run.summary.json", source)])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]
