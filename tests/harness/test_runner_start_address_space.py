"""Under a ``ulimit -v`` too small for numpy (``80000`` KiB: numpy's import takes 82 MiB
with one OpenBLAS thread), the runner process started by hand, ``python -m
ipc_bench.harness CTL_ENDPOINT``, ended with numpy's ImportError traceback or OpenBLAS's
own line (``OpenBLAS error: Memory allocation still failed after 10 retries, giving
up.``): it tried no room before numpy loaded, as ``bench.py``'s commands do. It now
does (``cli.one_blas_thread``): one line naming the limit, exit 1."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_limit_below_numpys_need_is_named_in_one_line():
    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (80000 * 1024, resource.RLIM_INFINITY))

    proc = subprocess.run([sys.executable, "-m", "ipc_bench.harness", "tcp://127.0.0.1:1"],
                          cwd=REPO, capture_output=True, text=True, timeout=60,
                          preexec_fn=limited)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        1, "", "python -m ipc_bench.harness: error: out of memory (MemoryError): the "
        "address-space limit of 78 MiB (ulimit -v) is too small for the runner; raise it\n")


def test_without_a_limit_the_refused_endpoint_is_its_line():
    proc = subprocess.run([sys.executable, "-m", "ipc_bench.harness", "tcp://127.0.0.1:1"],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", "runner: cannot connect to tcp://127.0.0.1:1: connection refused or address "
        "unreachable\n")
