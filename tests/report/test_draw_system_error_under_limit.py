"""Under a ``ulimit -v`` just above what ``bench.py report``'s imports need (310000
KiB), matplotlib drawing its figures failed most times with CPython's ``SystemError:
error return without exception set`` (an allocation that failed in C code set no
``MemoryError``), which ``bench.py`` printed as a 40-line traceback: it named the limit
only for a ``SystemError`` raised in an import. Wherever a command raises it, a
``SystemError`` under a set ``RLIMIT_AS`` ends with the out-of-memory line naming the
limit, exit 1; without one it is a bug and keeps its traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: Runs ``bench.py report RUN --output OUT`` as ``python bench.py`` does, with an
#: address-space limit (KiB, 0 for none) and the figures' drawing failing as it does
#: under a tight ``ulimit -v`` (at any machine's memory figures).
_FAILING_DRAW = """
import resource, runpy, sys
kib, run, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
if kib:
    resource.setrlimit(resource.RLIMIT_AS, (kib * 1024, resource.RLIM_INFINITY))
import ipc_bench.report.plots as plots
def utf8_figure_text(fig):
    raise SystemError("error return without exception set")
plots.utf8_figure_text = utf8_figure_text
sys.argv = ["bench.py", "report", run, "--output", out]
runpy.run_path("bench.py", run_name="__main__")
"""


def _report(kib: int, run: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _FAILING_DRAW, str(kib), str(run), str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)


def test_a_system_error_drawing_under_ulimit_v_is_the_out_of_memory_line(
        shared_small_run, tmp_path):
    proc = _report(64 * 2**20, shared_small_run, tmp_path / "report")
    assert (proc.returncode, proc.stderr) == (1, (
        "bench.py report: error: out of memory (SystemError): the address-space limit of "
        "65,536 MiB (ulimit -v) is too small for bench.py; raise it\n"))
    assert list(tmp_path.iterdir()) == []


def test_without_a_limit_the_system_error_keeps_its_traceback(shared_small_run, tmp_path):
    proc = _report(0, shared_small_run, tmp_path / "report")
    assert proc.returncode == 1
    assert proc.stderr.startswith("Traceback (most recent call last):")
    assert proc.stderr.rstrip().endswith("SystemError: error return without exception set")
    assert "out of memory" not in proc.stderr
    assert list(tmp_path.iterdir()) == []
