"""A script's ``--json`` that is a symbolic link to nothing is refused before any work,
as a run's ``--output`` is: the check opened it (making an empty target), then removed
the link, and the run wrote a regular file in its place (exit 0, no word)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest

from ipc_bench.cli.options import writable_file
from script_module import ROOT


def test_a_dangling_link_is_refused_and_nothing_is_made(tmp_path):
    link = tmp_path / "lnk"
    os.symlink(tmp_path / "tgt", link)
    with pytest.raises(argparse.ArgumentTypeError) as err:
        writable_file(str(link))
    assert str(err.value) == f"{link} is a symbolic link to {tmp_path}/tgt, which does not exist"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lnk"] and link.is_symlink()


def test_a_link_to_an_existing_file_is_still_taken(tmp_path):
    (tmp_path / "tgt").write_text("old")
    os.symlink(tmp_path / "tgt", tmp_path / "lnk")
    assert writable_file(str(tmp_path / "lnk")) == str(tmp_path / "lnk")
    assert (tmp_path / "tgt").read_text() == "old"


def test_byte_sweep_refuses_it_in_one_line(tmp_path):
    os.symlink(tmp_path / "tgt", tmp_path / "lnk")
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "byte_sweep.py"), "--json",
                           "lnk"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"byte_sweep.py: error: argument --json: lnk is a symbolic link to {tmp_path}/tgt, "
        "which does not exist\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lnk"]
