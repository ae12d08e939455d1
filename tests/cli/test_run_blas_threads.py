"""``bench.py`` run, ``bench.py microbench`` and ``bench.py runner`` (a runner started
by hand) load numpy's OpenBLAS with one thread where the user chose no thread count
(``cli.one_blas_thread``, as ``bench.py report`` does: tests/cli/test_report_blas_threads.py),
where they started a thread per core, each reserving about 40 MB of address space:
under ``ulimit -v`` a command then ended from a higher limit, and at some limits with
OpenBLAS's own line or a libzmq abort where it now runs or says the limit is too small
(docs/faults.md). The runs under the limit depend on the machine; what a command's
loader leaves in the environment and the threads its process then has do not. Each
case calls the loader in a child process, so that nothing it sets reaches this one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ipc_bench import cli

REPO = Path(__file__).resolve().parents[2]
#: What OpenBLAS reads its thread count from (``cli.BLAS_THREAD_VARIABLES``).
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")

#: A loader called in a fresh process on two cores (OpenBLAS starts a thread per core),
#: then the variable it leaves and the process's threads once numpy is loaded.
PROBE = """
import os, sys
os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:2])
from ipc_bench import cli
getattr(cli, sys.argv[1])()
import numpy
threads = [line.split()[1] for line in open("/proc/self/status")
           if line.startswith("Threads:")][0]
print(os.environ.get("OPENBLAS_NUM_THREADS"), threads)
"""


def _probe(loader: str, given: dict) -> str:
    env = {k: v for k, v in os.environ.items() if k not in BLAS_THREAD_VARIABLES}
    env.update(given)
    proc = subprocess.run([sys.executable, "-c", PROBE, loader], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2 or not os.path.exists("/proc/self/status"),
                    reason="OpenBLAS starts no second thread on one core")
@pytest.mark.parametrize("loader", ["_run", "_microbench", "_runner"])
@pytest.mark.parametrize("given, seen", [
    ({}, "1 1"),  # one thread: the process's own
    ({"OPENBLAS_NUM_THREADS": "2"}, "2 2"),  # the user's count kept: one more thread
    ({"OMP_NUM_THREADS": "2"}, "None 2"),
])
def test_the_run_microbench_and_runner_load_one_blas_thread(loader, given, seen):
    assert cli.BLAS_THREAD_VARIABLES == BLAS_THREAD_VARIABLES
    assert _probe(loader, given) == seen

