"""A SIGINT that lands while ``bench.py``'s first statements run, before it blocks the
signals (``import signal`` included): Python's handler raises ``KeyboardInterrupt``
there, and ``bench.py`` ends it as every other interrupt, one line and exit 130, no
traceback. The interrupt is made deterministic by an import hook that raises it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: Runs bench.py as ``python bench.py ARGS`` does, with ``KeyboardInterrupt`` raised
#: when module ``AT`` is first imported, as Python's SIGINT handler raises it there.
WRAPPER = """
import runpy, sys
AT = sys.argv[1]
sys.modules.pop(AT, None)
class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == AT:
            raise KeyboardInterrupt
        return None
sys.meta_path.insert(0, Interrupt())
sys.argv = ["bench.py"] + sys.argv[2:]
runpy.run_path("bench.py", run_name="__main__")
"""


@pytest.mark.parametrize("at", ["signal", "ipc_bench.errors"])
def test_an_interrupt_in_bench_py_s_first_statements_is_one_line_and_exit_130(at):
    proc = subprocess.run([sys.executable, "-c", WRAPPER, at, "--list"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stderr, proc.stdout) == (
        130, "bench.py: interrupted by SIGINT (exit 130)\n", "")
