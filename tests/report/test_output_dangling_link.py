"""``bench.py report --output LINK`` where LINK, or a folder on the way to it, is a
symbolic link to nothing: refused before any work in the run command's words, exit 2.
It read ``cannot write LINK: Not a directory`` (exit 1) and ``cannot write LINK/sub:
File exists``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from analysis_run import REPO


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    where = tmp_path_factory.mktemp("linkrun") / "run"
    subprocess.run([sys.executable, str(REPO / "bench.py"), "--scenario", "decode-steady",
                    "--num-running", "4", "--steps", "10", "--warmup-steps", "2",
                    "--quiet", "--output", str(where)], check=True, timeout=120,
                   stdout=subprocess.DEVNULL)
    return where


def _report(run_dir, output, cwd):
    return subprocess.run([sys.executable, str(REPO / "bench.py"), "report", str(run_dir),
                           "--no-figures", "--output", output], cwd=cwd, timeout=120,
                          capture_output=True, text=True)


def test_a_dangling_link_as_output_is_refused_as_the_run_refuses_it(run_dir, tmp_path):
    os.symlink(tmp_path / "nothere", tmp_path / "link")
    done = _report(run_dir, "link", tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (f"bench.py report: error: output folder link is a symbolic link "
                           f"to {tmp_path}/nothere, which does not exist\n")
    done = _report(run_dir, "link/sub", tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (f"bench.py report: error: cannot write the report to link/sub: "
                           f"link is a symbolic link to {tmp_path}/nothere, which does not "
                           "exist\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link"]  # nothing made


def test_a_link_to_a_folder_is_still_followed(run_dir, tmp_path):
    (tmp_path / "there").mkdir()
    os.symlink(tmp_path / "there", tmp_path / "link")
    done = _report(run_dir, "link", tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "link").is_symlink()
    assert (tmp_path / "there" / "report.md").is_file()
