"""``bench.py report --output LOOP`` (a loop of symbolic links, or a folder under one):
refused in the run's own sentence (``errors.broken_link_text``), exit 2. It read
``cannot write LOOP: Too many levels of symbolic links`` where the run said ``output
folder LOOP is a symbolic link to ..., which cannot be followed (...)``."""

from __future__ import annotations

import os

import pytest

from analysis_run import bench_in_process
from ipc_bench import cli


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    where = tmp_path_factory.mktemp("looprun") / "run"
    proc = bench_in_process(["--scenario", "decode-steady", "--num-running", "4", "--steps",
                             "10", "--warmup-steps", "2", "--quiet", "--output", where])
    assert proc.returncode == 0, proc.stderr
    return where


@pytest.mark.parametrize("output, message", [
    ("loopa", "output folder {tmp}/loopa is a symbolic link to loopb, which cannot be "
              "followed (Too many levels of symbolic links)"),
    ("loopa/sub", "cannot write {what} to {tmp}/loopa/sub: {tmp}/loopa is a symbolic link "
                  "to loopb, which cannot be followed (Too many levels of symbolic links)"),
    ("self/a/b", "cannot write {what} to {tmp}/self/a/b: {tmp}/self is a symbolic link to "
                 "self, which cannot be followed (Too many levels of symbolic links)"),
])
def test_a_link_loop_reads_the_same_for_a_run_and_a_report(output, message, run_dir,
                                                           tmp_path, capsys):
    os.symlink("loopb", tmp_path / "loopa")
    os.symlink("loopa", tmp_path / "loopb")
    os.symlink("self", tmp_path / "self")
    out = str(tmp_path / output)
    assert cli.main(["report", str(run_dir), "--no-figures", "--output", out]) == 2
    said = message.format(tmp=tmp_path, what="the report")
    assert capsys.readouterr() == ("", f"bench.py report: error: {said}\n")
    assert cli.main(["--scenario", "decode-steady", "--output", out]) == 2
    said = message.format(tmp=tmp_path, what="results")
    assert capsys.readouterr() == ("", f"bench.py: error: {said}\n")
    assert sorted(os.listdir(tmp_path)) == ["loopa", "loopb", "self"]
