"""A case stopped by a resource limit (a thread that cannot start, no memory) is said
in one line naming the limit, exit 1, with no traceback: it is the machine's limit, not
a bug (a thread limit or ``ulimit -v`` once printed a traceback and "internal error")."""

from __future__ import annotations

import json

import pytest

from ipc_bench import cli
from ipc_bench.cli import execute
from ipc_bench.errors import resource_shortage_text

ARGS = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "20",
        "--warmup-steps", "2", "--codecs", "msgpack", "--policies", "send",
        "--no-single-process", "--quiet"]


@pytest.mark.parametrize("exc, words", [
    (RuntimeError("can't start new thread"),
     "cannot start a thread: the process is at a resource limit (ulimit -u, a "
     "container's pids limit, or ulimit -v leaving no room for its stack)"),
    (MemoryError(),
     "out of memory (MemoryError): a memory limit (ulimit -v, a container's) or the "
     "machine's memory is too small for this case")])
def test_a_case_stopped_by_a_resource_limit_says_so_in_one_line(exc, words, tmp_path,
                                                                 monkeypatch, capsys):
    def limited(*args, **kwargs):
        raise exc

    monkeypatch.setattr(execute, "run_case", limited)
    run = tmp_path / "r"
    assert cli.main(ARGS + ["--output", str(run)]) == 1
    err = capsys.readouterr().err
    assert err == (f"bench.py: error: num_running=4/send/msgpack#0: {words}; run folder "
                   f"(nothing measured): {run}\n")
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["status"], summary["problems"]) == (
        "failed", [f"num_running=4/send/msgpack#0: {words}"])


def test_other_errors_are_not_called_a_limit():
    assert resource_shortage_text(RuntimeError("dictionary changed size")) is None
    assert resource_shortage_text(ValueError("can't start new thread")) is None


#: Runs bench.py as ``python bench.py`` does, with an address-space limit (KiB, or
#: none) and an import of the harness that fails as an allocation under ``ulimit -v``
#: does (a MemoryError, or CPython's SystemError), at any machine's memory figures.
_FAILING_IMPORT = """
import resource, runpy, sys
kib, error = int(sys.argv[1]), sys.argv[2]
if kib:
    resource.setrlimit(resource.RLIMIT_AS, (kib * 1024, resource.RLIM_INFINITY))
class Fail:
    def find_spec(self, name, path=None, target=None):
        if name == "ipc_bench.cli.execute":
            raise {"memory": MemoryError(), "system": SystemError(
                "error return without exception set"), "value": ValueError("a bug"),
                   "map": ImportError("libscipy_openblas64_.so: failed to map segment "
                                      "from shared object")}[error]
sys.meta_path.insert(0, Fail())
sys.argv = ["bench.py", "--scenario", "decode-steady", "--output", "/nonexistent/x"]
runpy.run_path("bench.py", run_name="__main__")
"""


def _failing_start(kib: int, error: str):
    import subprocess
    import sys
    from pathlib import Path

    return subprocess.run([sys.executable, "-c", _FAILING_IMPORT, str(kib), error],
                          cwd=Path(__file__).resolve().parents[2], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("kib, error, exc", [(64 * 2**20, "memory", "MemoryError"),
                                             (64 * 2**20, "system", "SystemError"),
                                             (64 * 2**20, "map", "ImportError")])
def test_an_import_out_of_memory_under_ulimit_v_says_so_in_one_line(kib, error, exc):
    proc = _failing_start(kib, error)
    assert (proc.returncode, proc.stderr) == (1, (
        f"bench.py: error: out of memory ({exc}): the address-space limit of 65,536 MiB "
        "(ulimit -v) is too small for bench.py; raise it\n"))


def test_other_startup_errors_keep_their_traceback():
    # a SystemError with no memory limit, or any other error, is a bug
    for error, last in (("system", "SystemError: error return without exception set"),
                        ("value", "ValueError: a bug"),
                        ("map", "ImportError: libscipy_openblas64_.so: failed to map "
                                "segment from shared object")):
        proc = _failing_start(0, error)
        assert proc.returncode == 1
        assert proc.stderr.startswith("Traceback (most recent call last):")
        assert proc.stderr.rstrip().endswith(last)
    proc = _failing_start(0, "memory")
    assert (proc.returncode, proc.stderr) == (1, (
        "bench.py: error: out of memory (MemoryError): a memory limit (a container's) or "
        "the machine's memory is too small for bench.py; raise it\n"))
