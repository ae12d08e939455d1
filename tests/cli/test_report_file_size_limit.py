"""``bench.py report`` under ``ulimit -f``: the line naming the file it could not write
names the file-size limit too (``errors.file_size_text``), as a run's line does, and
nothing is left behind."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

TINY = ("--scenario", "decode-steady", "--num-running", "4", "--steps", "20", "--policies",
        "cached", "--codecs", "msgpack")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """A tiny run, made without the limit."""
    run = tmp_path_factory.mktemp("file_size_limit") / "run"
    proc = subprocess.run([sys.executable, "bench.py", *TINY, "--output", str(run)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return run


def report_under_limit(kib: int, *args: str) -> subprocess.CompletedProcess:
    """``ulimit -f KIB; bench.py report ARGS`` in bash."""
    line = shlex.join([sys.executable, "bench.py", "report", *args])
    return subprocess.run(["bash", "-c", f"ulimit -f {kib} && exec {line}"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_report_names_the_file_size_limit(run_dir, tmp_path):
    """With figures the first file written is the first figure (48 KB or so)."""
    out = tmp_path / "rep"
    proc = report_under_limit(2, str(run_dir), "--output", str(out))
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        1, "", f"bench.py report: error: cannot write {out}/bytes_per_step.png: File too "
               "large (the file-size limit, ulimit -f 2: 2 KiB a file)\n")
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_report_without_figures_names_the_file_size_limit(run_dir, tmp_path):
    """Without figures report.md is written first (about 8 KB)."""
    out = tmp_path / "rep"
    proc = report_under_limit(4, str(run_dir), "--no-figures", "--output", str(out))
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        1, "", f"bench.py report: error: cannot write {out}/report.md: File too large (the "
               "file-size limit, ulimit -f 4: 4 KiB a file)\n")
    assert list(tmp_path.iterdir()) == []


def test_report_under_a_limit_it_fits_is_written(run_dir, tmp_path):
    out = tmp_path / "rep"
    proc = report_under_limit(1024, str(run_dir), "--no-figures", "--output", str(out))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"report: {out}/report.html\n", "")
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.md",
                                                     "run.summary.json"]
