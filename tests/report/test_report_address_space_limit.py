"""``bench.py report`` under an address-space limit just above what its imports need
(``ulimit -v 200000`` to ``220000`` on 2 cores): scipy's OpenBLAS, loading with
``import scipy.special``, retried its 32 MiB buffer for good once mmap failed, at 100 %
CPU with SIGINT and SIGTERM blocked (they stay blocked while the imports run), so only
SIGKILL ended it; a little higher (``280000`` to ``310000``) numpy's OpenBLAS ended it
with its own line at matplotlib's first matrix inversion. The room is tried first
(``errors.need_address_space``): the command ends with the one line naming the limit,
exit 1, as a run does."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from ipc_bench.errors import need_address_space

REPO = Path(__file__).resolve().parents[2]


def _report_under(kib: int, run: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (kib * 1024, resource.RLIM_INFINITY))

    # a bounded wait: the report that hung is killed (SIGKILL) after it, failing the test
    return subprocess.run([sys.executable, "bench.py", "report", str(run), "--output",
                           str(out), *extra], cwd=REPO, capture_output=True, text=True,
                          timeout=60, preexec_fn=limited)


@pytest.mark.parametrize("kib, mib, extra", [
    (210000, 205, ()),  # hung in scipy's OpenBLAS
    (200000, 195, ("--no-figures",)),  # so did this one
    (300000, 293, ()),  # numpy's OpenBLAS: its own line, 'OpenBLAS error: Memory ...'
])
def test_report_under_a_tight_address_space_limit_names_it(shared_two_case_run, tmp_path,
                                                           kib, mib, extra):
    proc = _report_under(kib, shared_two_case_run, tmp_path / "rep", *extra)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        1, "", f"bench.py report: error: out of memory (MemoryError): the address-space "
        f"limit of {mib} MiB (ulimit -v) is too small for bench.py; raise it\n")
    assert list(tmp_path.iterdir()) == []


def test_need_address_space_raises_memory_error_only_under_a_limit():
    need_address_space(2**40, "a terabyte")  # no limit: nothing tried
    code = ("import resource; from ipc_bench.errors import need_address_space\n"
            "resource.setrlimit(resource.RLIMIT_AS, (2**31, resource.RLIM_INFINITY))\n"
            "need_address_space(2**20, 'a MiB')\n"
            "try:\n    need_address_space(2**32, 'four GiB')\n"
            "except MemoryError as exc:\n    print(exc)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        0, "4,096 MiB of address space for four GiB\n", "")
