"""``bench.py report --output LINK`` where LINK, or a folder on the way to it, is a
symbolic link to nothing: refused before any work in the run command's words, exit 2.
It read ``cannot write LINK: Not a directory`` (exit 1) and ``cannot write LINK/sub:
File exists``."""

from __future__ import annotations

import os
import subprocess

import pytest

from analysis_run import bench_in_process
from ipc_bench import cli


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    where = tmp_path_factory.mktemp("linkrun") / "run"
    proc = bench_in_process(["--scenario", "decode-steady", "--num-running", "4", "--steps",
                             "10", "--warmup-steps", "2", "--quiet", "--output", where])
    assert proc.returncode == 0, proc.stderr
    return where


def _report(run_dir, output, cwd, capsys, monkeypatch):
    """``bench.py report RUN_DIR --no-figures --output OUTPUT`` from the folder ``cwd``,
    as ``cli.main`` in this process: its exit code, stdout and stderr."""
    monkeypatch.chdir(cwd)
    code = cli.main(["report", str(run_dir), "--no-figures", "--output", output])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["bench.py", "report"], code, out, err)


def test_a_dangling_link_as_output_is_refused_as_the_run_refuses_it(run_dir, tmp_path, capsys,
                                                                   monkeypatch):
    os.symlink(tmp_path / "nothere", tmp_path / "link")
    done = _report(run_dir, "link", tmp_path, capsys, monkeypatch)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (f"bench.py report: error: output folder link is a symbolic link "
                           f"to {tmp_path}/nothere, which does not exist\n")
    done = _report(run_dir, "link/sub", tmp_path, capsys, monkeypatch)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (f"bench.py report: error: cannot write the report to link/sub: "
                           f"link is a symbolic link to {tmp_path}/nothere, which does not "
                           "exist\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link"]  # nothing made


def test_a_link_to_a_folder_is_still_followed(run_dir, tmp_path, capsys, monkeypatch):
    (tmp_path / "there").mkdir()
    os.symlink(tmp_path / "there", tmp_path / "link")
    done = _report(run_dir, "link", tmp_path, capsys, monkeypatch)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "link").is_symlink()
    assert (tmp_path / "there" / "report.md").is_file()
