"""``bench.py``'s start-up error lines (a declared dependency missing, a memory limit
too small for an import) name the command as its other lines do: ``bench.py report:
error: missing dependency 'zmq' (pyzmq) in PYTHON: ...``, ``bench.py microbench:``,
``bench.py runner:``; ``bench.py:`` for a run. They said ``bench.py: error:`` for every
command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: Runs bench.py as ``python bench.py ARGS`` does, the import of module zmq failing
#: with ``ERROR``: ``missing`` (not installed), ``memory`` (a MemoryError).
WRAPPER = """
import runpy, sys
error = sys.argv[1]
class Fail:
    def find_spec(self, name, path=None, target=None):
        if name == "zmq" or name.startswith("zmq."):
            if error == "missing":
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            raise MemoryError()
        return None
sys.meta_path.insert(0, Fail())
sys.argv = ["bench.py"] + sys.argv[2:]
runpy.run_path("bench.py", run_name="__main__")
"""

COMMANDS = [
    (["report", "results/none"], "bench.py report"),
    (["microbench", "results/none", "--fast"], "bench.py microbench"),
    (["runner", "--connect", "tcp://127.0.0.1:1"], "bench.py runner"),
    (["--scenario", "decode-steady"], "bench.py"),
    (["--list"], "bench.py"),
    # a word that is not a command is the run's (an option's value, a typo)
    (["reports"], "bench.py"),
]


def _bench(error: str, args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", WRAPPER, error, *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args,prog", COMMANDS, ids=[" ".join(a) for a, _ in COMMANDS])
def test_a_missing_dependency_names_the_command(args, prog):
    proc = _bench("missing", args)
    assert (proc.returncode, proc.stderr, proc.stdout) == (2, (
        f"{prog}: error: missing dependency 'zmq' (pyzmq) in {sys.executable}: install "
        f"the project with {sys.executable} -m pip install -e . (or run the Python it is "
        "installed in)\n"), "")


@pytest.mark.parametrize("args,prog", COMMANDS[:3], ids=[a[0] for a, _ in COMMANDS[:3]])
def test_an_import_out_of_memory_names_the_command(args, prog):
    proc = _bench("memory", args)
    assert (proc.returncode, proc.stderr, proc.stdout) == (1, (
        f"{prog}: error: out of memory (MemoryError): a memory limit (a container's) or "
        "the machine's memory is too small for bench.py; raise it\n"), "")
