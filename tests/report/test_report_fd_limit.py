"""``bench.py report`` under a file-descriptor limit too small for it (``ulimit -n``):
run out of descriptors as a library's module was read on import (PIL's, as a figure
was saved), it said ``cannot write .../PIL/BmpImagePlugin.py: Too many open files``,
a write of a library file it never made. It names the limit, and no library file;
out of them as a report file is written, it names that file, as before."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

from test_hand_edited_summary import good_run  # noqa: F401 (fixture)

REPO = Path(__file__).resolve().parents[2]


def _report_under(limit: int, run, out) -> subprocess.CompletedProcess:
    """``bench.py report RUN --output OUT`` in a process whose soft and hard limit on
    open files is ``limit`` (set in ``preexec_fn``, as ``ulimit -n`` does)."""
    def limited():
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    return subprocess.run([sys.executable, "bench.py", "report", str(run), "--output",
                           str(out)], cwd=REPO, capture_output=True, text=True,
                          timeout=120, preexec_fn=limited)


def test_out_of_descriptors_on_an_import_names_the_limit_not_a_library_file(
        good_run, tmp_path):  # noqa: F811 (fixture)
    proc = _report_under(5, good_run, tmp_path / "rep")
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", "bench.py report: error: too many open files (ulimit -n 5): raise it "
        "(e.g. ulimit -n 1024) and run again\n")
    assert list(tmp_path.iterdir()) == []


def test_out_of_descriptors_on_a_report_file_names_that_file(
        good_run, tmp_path):  # noqa: F811 (fixture)
    """Two more descriptors (one of them the report's lock, ``document.output_lock``):
    the imports pass, the copy of the run's summary fails."""
    proc = _report_under(7, good_run, tmp_path / "rep")
    out = tmp_path / "rep"
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        1, "", f"bench.py report: error: cannot write {out / 'good.summary.json'}: Too "
        "many open files\n")
    assert list(tmp_path.iterdir()) == []
