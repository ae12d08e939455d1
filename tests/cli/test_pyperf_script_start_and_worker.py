"""The pyperf scripts (hot_path_bench, variant_table) at their start and when a worker
dies. A SIGINT / SIGTERM / SIGHUP while the script imports its modules, before
``pyperf_staged`` has its handlers in, is kept pending by the mask set in the script's
first statements and ends it as a later one does: one line, ``NAME.py: interrupted by
SIGINT (exit 130)``, and 130 / 143 / 129 (before, a ``KeyboardInterrupt`` traceback,
or killed by SIGTERM / SIGHUP with nothing said). The signal is made deterministic by
an import hook that sends it, a real one, as that module's import begins. A pyperf
worker killed with SIGKILL mid-benchmark is one line naming it and exit 1, with no
``-o`` file and an ``--append`` file as it was (before, pyperf's ``RuntimeError:
.../python failed with exit code -9`` traceback)."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fault_helpers import children

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 120

#: Runs ``python SCRIPT ARGS`` as the shell does, sending this process signal ``SIG``
#: when module ``AT`` is first imported (the script still starting).
WRAPPER = """
import os, runpy, signal, sys
AT, SIG, SCRIPT = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sys.modules.pop(AT, None)
class Signal:
    def find_spec(self, name, path=None, target=None):
        if name == AT:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), SIG)
        return None
sys.meta_path.insert(0, Signal())
sys.argv = sys.argv[3:]
runpy.run_path(SCRIPT, run_name="__main__")
"""

HOT_ONE = "encode SchedulerOutput msgpack B=1"
HOT = ("hot_path_bench", "--only", HOT_ONE)
VARIANT = ("variant_table", "--batch-sizes", "1", "--only", "encode send msgpack")
FAST = ("-p", "1", "-n", "1", "-w", "0", "-l", "1", "-q")


@pytest.mark.parametrize("script, at, sig", [
    (HOT, "zmq", signal.SIGINT),
    (HOT, "ipc_bench.engine.workloads", signal.SIGTERM),
    (VARIANT, "pyperf", signal.SIGHUP),
    (VARIANT, "ipc_bench.engine.outputs", signal.SIGINT),
])
def test_a_signal_while_the_script_starts_is_one_line_and_its_code(script, at, sig, tmp_path):
    name, *argv = script
    path = tmp_path / "out.json"
    proc = subprocess.run(
        [sys.executable, "-c", WRAPPER, at, str(int(sig)),
         str(ROOT / "scripts" / f"{name}.py"), *argv, *FAST, "-o", str(path)],
        cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S)
    code = 128 + sig
    assert (proc.returncode, proc.stderr, proc.stdout) == (
        code, f"{name}.py: interrupted by {sig.name} (exit {code})\n", "")
    assert list(tmp_path.iterdir()) == []


def _worker(pid: int):
    """The pid of ``pid``'s child running pyperf's ``--worker`` (exec'd), or None."""
    for child in children(pid):
        try:
            if b"--worker" in Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0"):
                return child
        except OSError:
            pass
    return None


def _kill_worker(cmd: list[str]) -> tuple[int, str, int]:
    """Run ``cmd``, SIGKILL the first pyperf worker once it runs; (exit code, stderr,
    the worker's pid)."""
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while (worker := _worker(proc.pid)) is None:
            assert proc.poll() is None and time.monotonic() < deadline, proc.returncode
            time.sleep(0.01)
        os.kill(worker, signal.SIGKILL)
        _, err = proc.communicate(timeout=TIMEOUT_S)
        return proc.returncode, err, worker
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


#: Long enough that the worker is still measuring when it is killed.
SLOW = ("-p", "3", "-n", "50", "-w", "1", "-l", "300000", "-q")


def test_hot_path_bench_killed_worker_is_one_line_and_no_output_file(tmp_path):
    path = tmp_path / "hot.json"
    code, err, worker = _kill_worker(
        [sys.executable, str(ROOT / "scripts" / "hot_path_bench.py"), "--only", HOT_ONE,
         *SLOW, "-o", str(path)])
    assert (code, err) == (
        1, f"hot_path_bench.py: error: pyperf's worker process {worker} for benchmark "
           f"'{HOT_ONE}' was killed by SIGKILL; nothing was written to {path}\n")
    assert list(tmp_path.iterdir()) == []


def test_variant_table_killed_worker_leaves_the_append_file_as_it_was(tmp_path):
    path = tmp_path / "vt.json"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "hot_path_bench.py"), "--only",
                    HOT_ONE, *FAST, "-o", str(path)], cwd=ROOT, check=True,
                   capture_output=True)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    code, err, worker = _kill_worker(
        [sys.executable, str(ROOT / "scripts" / "variant_table.py"), *VARIANT[1:],
         *SLOW, "--append", str(path)])
    assert (code, err) == (
        1, f"variant_table.py: error: pyperf's worker process {worker} for benchmark "
           f"'encode s2r msgpack send uniform B=1' was killed by SIGKILL; {path} is as "
           "it was\n")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert [p.name for p in tmp_path.iterdir()] == ["vt.json"]
