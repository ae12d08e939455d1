"""``bench.py report RUN >&-``: stdout closed at start is refused before anything is read
or written, as a run is (``console.closed_stdout_refusal``), not found after the whole
report was written."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

TINY = ("--scenario", "decode-steady", "--num-running", "4", "--steps", "20", "--policies",
        "cached", "--codecs", "msgpack")

REFUSAL = ("bench.py report: error: stdout is closed (>&-): the line naming the report "
           "would go nowhere; send it to a file, or to /dev/null to keep the report alone\n")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("closed_stdout") / "run"
    proc = subprocess.run([sys.executable, "bench.py", *TINY, "--output", str(run)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return run


def report_with_stdout_closed(*args: str) -> subprocess.CompletedProcess:
    """``bench.py report ARGS >&-`` in bash: stdout closed, not /dev/null."""
    line = shlex.join([sys.executable, "bench.py", "report", *args])
    return subprocess.run(["bash", "-c", f"exec {line} >&-"], cwd=REPO, stderr=subprocess.PIPE,
                          text=True, timeout=120)


def test_report_with_stdout_closed_is_refused_before_it_writes(run_dir):
    before = sorted(p.name for p in run_dir.iterdir())
    proc = report_with_stdout_closed(str(run_dir), "--no-figures")
    assert (proc.returncode, proc.stderr) == (2, REFUSAL)
    assert sorted(p.name for p in run_dir.iterdir()) == before  # no report/ folder


def test_report_with_stdout_closed_and_an_output_folder_makes_none(run_dir, tmp_path):
    out = tmp_path / "rep"
    proc = report_with_stdout_closed(str(run_dir), "--no-figures", "--output", str(out))
    assert (proc.returncode, proc.stderr) == (2, REFUSAL)
    assert not out.exists()


def test_bad_options_are_named_before_the_closed_stdout(run_dir):
    proc = report_with_stdout_closed(str(run_dir), "--no-such-flag")
    assert (proc.returncode, proc.stderr) == (
        2, "bench.py report: error: unrecognized arguments: --no-such-flag\n")


def test_report_with_stdout_open_still_writes(run_dir, tmp_path):
    out = tmp_path / "rep"
    proc = subprocess.run([sys.executable, "bench.py", "report", str(run_dir), "--no-figures",
                           "--output", str(out)], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"report: {out}/report.html\n", "")
