"""``bench.py report`` loads numpy's and scipy's OpenBLAS with one thread where the user
chose no thread count (``cli.report_blas_threads``): under an address-space limit
(``ulimit -v``) just too small for the threads OpenBLAS would start, one per core, it
used to spin in scipy's OpenBLAS for good, at 100 % CPU and with SIGTERM blocked; now
it writes the report, or says in one line that the limit is too small."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from ipc_bench import cli

REPO = Path(__file__).resolve().parents[2]
BENCH = str(REPO / "bench.py")
#: Address-space limits (KiB) at which, on 2 cores, the report of a one-case run used
#: to spin in scipy's OpenBLAS (its allocation retried for good).
SPUN_AT = (250_000, 275_000)
#: What OpenBLAS reads its thread count from (``cli.BLAS_THREAD_VARIABLES``): none set.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
OUT_OF_MEMORY = re.compile(
    r"bench\.py: error: out of memory \((MemoryError|SystemError|ImportError)\): the "
    r"address-space limit of [\d,]+ MiB \(ulimit -v\) is too small for bench\.py; "
    r"raise it\n")


@pytest.mark.parametrize("given, threads", [
    ({}, "1"),
    ({"OPENBLAS_NUM_THREADS": ""}, "1"),  # empty: OpenBLAS reads it as not set
    ({"OPENBLAS_NUM_THREADS": "3"}, "3"),
    ({"GOTO_NUM_THREADS": "2"}, None),
    ({"OMP_NUM_THREADS": "4"}, None),
])
def test_one_blas_thread_unless_the_user_chose(monkeypatch, given, threads):
    assert cli.BLAS_THREAD_VARIABLES == BLAS_THREAD_VARIABLES
    for name in BLAS_THREAD_VARIABLES:  # set, then removed: the teardown puts back
        monkeypatch.setenv(name, "")     # what was there, unset included (a delenv
        monkeypatch.delenv(name)         # of an unset variable records nothing)
    for name, value in given.items():
        monkeypatch.setenv(name, value)
    cli.report_blas_threads()
    assert os.environ.get("OPENBLAS_NUM_THREADS") == threads


@pytest.fixture(scope="module")
def one_case_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("limit") / "run"
    run = subprocess.run(
        [sys.executable, BENCH, "--scenario", "decode-steady", "--num-running", "2",
         "--steps", "50", "--codecs", "msgpack", "--policies", "send",
         "--no-single-process", "--output", str(out)],
        capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return out


def _two_cores_and_a_limit(kib: int):
    """Run on at most two of this process's cores, which OpenBLAS counts as its
    thread count (the limits of ``SPUN_AT`` were found on 2), with ``kib`` KiB of
    address space."""
    def preexec():
        cores = sorted(os.sched_getaffinity(0))[:2]
        os.sched_setaffinity(0, cores)
        resource.setrlimit(resource.RLIMIT_AS, (kib * 1024, resource.RLIM_INFINITY))
    return preexec


@pytest.mark.parametrize("kib", SPUN_AT)
def test_report_under_a_tight_address_space_limit_ends(one_case_run, tmp_path, kib):
    env = {k: v for k, v in os.environ.items() if k not in BLAS_THREAD_VARIABLES}
    out = tmp_path / "rep"
    try:
        proc = subprocess.run([sys.executable, BENCH, "report", str(one_case_run),
                               "--output", str(out), "--no-figures"], env=env,
                              capture_output=True, text=True, timeout=60,
                              preexec_fn=_two_cores_and_a_limit(kib))
    except subprocess.TimeoutExpired:  # killed by subprocess.run
        pytest.fail(f"bench.py report under ulimit -v {kib} still going after 60 s")
    if proc.returncode == 0:
        assert (proc.stdout, proc.stderr) == (f"report: {out}/report.html\n", "")
    else:
        assert proc.returncode == 1 and proc.stdout == ""
        assert OUT_OF_MEMORY.fullmatch(proc.stderr), proc.stderr
