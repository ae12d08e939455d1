"""What ``options.writable_folder`` (a script's ``--output DIR``) says for each output
that cannot be a folder. A file, a link to a file, a dangling link, at the path or
above it, are refused in the run's words before the parent is looked at, so no input
reaches a ``not a folder`` line of its own: that branch is gone, and a parent replaced
by a file between the two looks (a race) is named by the system as the temporary
folder is made (``Not a directory``), where it read ``PATH: not a folder: PARENT``."""

from __future__ import annotations

import argparse
import os
import shutil

import pytest

from ipc_bench import errors
from ipc_bench.cli.options import writable_folder


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("x")
    (tmp_path / "d").mkdir()
    os.symlink("afile", tmp_path / "lfile")
    os.symlink("nowhere", tmp_path / "dang")
    os.symlink("d", tmp_path / "ld")
    return tmp_path


def _said(text: str) -> str:
    try:
        return f"ok {writable_folder(text)}"
    except argparse.ArgumentTypeError as exc:
        return str(exc)


def test_each_kind_of_path_gets_its_line(tree):
    said = {text: _said(text) for text in (
        "afile", "lfile", "afile/", "afile/.", "afile/x", "afile/x/y", "afile/..",
        "lfile/x", "ld/../afile/x", "dang", "dang/x", "nope/x", "d/x", "ld/x", ".")}
    assert said == {
        "afile": "output path afile exists and is not a folder",
        "lfile": "output path lfile is a symbolic link to afile, which is not a folder",
        "afile/": "output path afile/ exists and is not a folder",
        "afile/.": "output path afile/. exists and is not a folder",
        "afile/x": "cannot write results to afile/x: afile is not a folder",
        "afile/x/y": "cannot write results to afile/x/y: afile is not a folder",
        "afile/..": "cannot write results to afile/..: afile is not a folder",
        "lfile/x": "cannot write results to lfile/x: lfile is a symbolic link to afile, "
                   "which is not a folder",
        "ld/../afile/x": "cannot write results to ld/../afile/x: ld/../afile is not a "
                         "folder",
        "dang": "output folder dang is a symbolic link to nowhere, which does not exist",
        "dang/x": "cannot write results to dang/x: dang is a symbolic link to nowhere, "
                  "which does not exist",
        "nope/x": "nope/x: no such folder: nope",
        "d/x": "ok d/x", "ld/x": "ok ld/x", ".": "ok ."}
    assert sorted(p.name for p in tree.iterdir()) == ["afile", "d", "dang", "ld", "lfile"]
    assert list((tree / "d").iterdir()) == []  # the write check's folder removed


def test_a_parent_replaced_by_a_file_after_its_check_is_the_systems_word(tree, monkeypatch):
    """The race made deterministic: ``d`` becomes a file right after the links and
    files above ``d/out`` were looked at."""
    checked = errors.broken_link_text

    def then_replaced(folder, writing):
        found = checked(folder, writing)
        shutil.rmtree(tree / "d")
        (tree / "d").write_text("now a file")
        return found

    monkeypatch.setattr(errors, "broken_link_text", then_replaced)
    assert _said("d/out") == "d/out: cannot write in d: Not a directory"
