"""Under a ``ulimit -v`` that leaves numpy room but not libzmq's threads (their stacks,
``ulimit -s`` each: 8 MiB), ``bench.py runner`` and ``python -m ipc_bench.harness``
were aborted by libzmq at their first socket (``Resource temporarily unavailable
(src/thread.cpp:241)``, exit 134), as was a run at the start of a case. The room for
the threads is now tried before each ZeroMQ context is made
(``errors.need_zmq_threads``): the out-of-memory line naming the limit, exit 1."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _limited(kib: int):
    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (kib * 1024, resource.RLIM_INFINITY))
        resource.setrlimit(resource.RLIMIT_STACK, (8 * 2**20, resource.RLIM_INFINITY))
    return limited


def test_bench_runner_short_of_libzmqs_threads_says_one_line():
    proc = subprocess.run([sys.executable, "bench.py", "runner", "--connect",
                           "tcp://127.0.0.1:1"], cwd=REPO, capture_output=True, text=True,
                          timeout=60, preexec_fn=_limited(125000))
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        1, "", "bench.py runner: error: out of memory (MemoryError): the address-space "
        "limit of 122 MiB (ulimit -v) is too small for bench.py; raise it\n")


def test_the_runner_process_short_of_libzmqs_threads_says_one_line():
    proc = subprocess.run([sys.executable, "-m", "ipc_bench.harness", "tcp://127.0.0.1:1"],
                          cwd=REPO, capture_output=True, text=True, timeout=60,
                          preexec_fn=_limited(120000))
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        1, "", "python -m ipc_bench.harness: error: out of memory (MemoryError): the "
        "address-space limit of 117 MiB (ulimit -v) is too small for the runner; raise it\n")


def test_stacks_glibc_kept_are_not_asked_for_again():
    code = ("import resource, zmq\n"
            "from ipc_bench.errors import need_zmq_threads\n"
            "ctx = zmq.Context(); ctx.socket(zmq.PUSH); ctx.destroy(linger=0)\n"
            "def vm():\n"
            "    return next(int(l.split()[1]) for l in open('/proc/self/status')\n"
            "                if l.startswith('VmSize'))\n"
            "room = 4 * 2**20\n"
            "resource.setrlimit(resource.RLIMIT_AS, (vm() * 1024 + room, -1))\n"
            "need_zmq_threads()  # the two kept stacks: 1 MiB of margin to try\n"
            "try:\n"
            "    need_zmq_threads(3)  # two more stacks\n"
            "except MemoryError as exc:\n"
            "    print(exc)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=60, preexec_fn=_limited(4 * 2**20))
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        0, "17 MiB of address space for libzmq's 4 threads\n", "")
