"""``bench.py report RUN > /dev/full``: the report is written before its line is
printed, so the one error line says where it is (``console.written_elsewhere``), exit 1,
no traceback; the earlier report it replaced is gone, the new one whole."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

TINY = ("--scenario", "decode-steady", "--num-running", "4", "--steps", "20", "--policies",
        "cached", "--codecs", "msgpack", "--no-single-process", "--no-floor", "--quiet")
NO_SPACE = "No space left on device"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("full_stdout") / "run"
    proc = subprocess.run([sys.executable, "bench.py", *TINY, "--output", str(run)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return run


def _report_to_full(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    with open("/dev/full", "w") as full:
        return subprocess.run([sys.executable, str(REPO / "bench.py"), "report", *args,
                               "--no-figures"], cwd=cwd, stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120)


def test_a_full_stdout_says_where_the_report_replacing_the_earlier_one_is(run_dir):
    out = run_dir / "report"
    first = subprocess.run([sys.executable, "bench.py", "report", str(run_dir),
                            "--no-figures"], cwd=REPO, capture_output=True, text=True,
                           timeout=120)
    assert (first.returncode, first.stdout) == (0, f"report: {out / 'report.html'}\n")
    (out / "report.md").write_text("the earlier report\n")
    proc = _report_to_full(str(run_dir))
    assert (proc.returncode, proc.stderr) == (
        1, f"bench.py report: error: cannot write to stdout: {NO_SPACE}; the report is in "
           f"{out / 'report.html'}\n")
    assert (out / "report.md").read_text() != "the earlier report\n"  # replaced
    assert (out / "report.html").read_text().rstrip().endswith("</html>")


def test_the_line_spells_the_path_as_the_report_line_would(run_dir, tmp_path):
    """A relative run folder gives a relative path, as ``report: PATH`` does; a line
    break in an ``--output`` name is escaped, the line stays one line."""
    rel = os.path.relpath(run_dir, tmp_path)
    proc = _report_to_full(rel, "--output", "a\nb", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (
        1, f"bench.py report: error: cannot write to stdout: {NO_SPACE}; the report is in "
           f"a\\nb/report.html\n")
    assert (tmp_path / "a\nb" / "report.html").is_file()


def test_a_report_that_fails_to_write_says_nothing_of_a_report(run_dir, tmp_path):
    """Nothing written: the line is the write's own, with no note of a report."""
    (tmp_path / "file").write_text("")
    proc = _report_to_full(str(run_dir), "--output", str(tmp_path / "file" / "rep"))
    assert (proc.returncode, proc.stderr) == (
        2, f"bench.py report: error: cannot write the report to "
           f"{tmp_path / 'file' / 'rep'}: {tmp_path / 'file'} is not a folder\n")
