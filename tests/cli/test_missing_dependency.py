"""``python bench.py`` under a Python that lacks a declared dependency: one line naming
the module and what to install, exit code 2, no traceback; a module that is missing
for another reason (one of ipc_bench's own, one inside a dependency) keeps its
traceback."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ipc_bench.errors import DEPENDENCIES

REPO = Path(__file__).resolve().parents[2]

#: Runs bench.py as ``python bench.py ARGS`` does, with module ``HIDDEN`` (and its
#: submodules) not importable, as in a Python where it is not installed.
WRAPPER = """
import runpy, sys
HIDDEN = sys.argv[1]
class Hide:
    def find_spec(self, name, path=None, target=None):
        if name == HIDDEN or name.startswith(HIDDEN + "."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Hide())
sys.argv = ["bench.py"] + sys.argv[2:]
runpy.run_path("bench.py", run_name="__main__")
"""


def bench_without(hidden: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", WRAPPER, hidden, *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def _line(named: str, prog: str = "bench.py") -> str:
    return (f"{prog}: error: missing dependency {named} in {sys.executable}: install "
            f"the project with {sys.executable} -m pip install -e . (or run the Python it "
            "is installed in)\n")


def _run_folder(tmp_path: Path) -> str:
    """A folder that passes report's run-folder check (it holds a summary.json), so
    that report goes on to import pandas and scipy, which it imports only then."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text("{}")
    return str(run)


@pytest.mark.parametrize("hidden, args, line", [
    ("zmq", ["--list"], _line("'zmq' (pyzmq)")),
    ("msgspec", ["--list"], _line("'msgspec'")),
    ("pandas", ["report", "RUN"], _line("'pandas'", "bench.py report")),
    ("pyperf", ["microbench", "results/none"], _line("'pyperf'", "bench.py microbench")),
])
def test_a_missing_dependency_is_one_line_and_exit_2(hidden, args, line, tmp_path):
    proc = bench_without(hidden, *[_run_folder(tmp_path) if a == "RUN" else a
                                   for a in args])
    assert (proc.returncode, proc.stderr, proc.stdout) == (2, line, "")


@pytest.mark.parametrize("hidden", ["ipc_bench.cli.report", "scipy.special"])
def test_a_module_missing_for_another_reason_keeps_its_traceback(hidden, tmp_path):
    proc = bench_without(hidden, "report", _run_folder(tmp_path))
    assert proc.returncode == 1
    assert proc.stderr.startswith("Traceback (most recent call last):\n")
    assert proc.stderr.endswith(f"ModuleNotFoundError: No module named '{hidden}'\n")


def test_the_dependency_table_is_pyproject_toml_s():
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    names = sorted(re.match(r"[A-Za-z0-9_.-]+", d).group(0) for d in declared)
    assert sorted(DEPENDENCIES.values()) == names
