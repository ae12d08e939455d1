"""Under a ``ulimit -v`` too small for numpy itself (``80000`` KiB: numpy's import takes
82 MiB with one OpenBLAS thread), numpy's OpenBLAS ended every command with its own line,
``OpenBLAS error: Memory allocation still failed after 10 retries, giving up.``, exit 1.
The room is tried first (``cli.one_blas_thread``, ``errors.need_address_space``): the
command's out-of-memory line names the limit, exit 1."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _under(kib: int, args: list[str]) -> subprocess.CompletedProcess:
    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (kib * 1024, resource.RLIM_INFINITY))

    return subprocess.run([sys.executable, "bench.py", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=60, preexec_fn=limited)


@pytest.mark.parametrize("word", ["", "report"])
def test_a_limit_below_numpys_need_is_named(tmp_path, word):
    args = (["report", str(tmp_path / "no-run")] if word else
            ["--scenario", "decode-steady", "--num-running", "4", "--steps", "20",
             "--codecs", "msgpack", "--output", str(tmp_path / "run")])
    proc = _under(80000, args)
    prog = f"bench.py {word}".strip()
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        1, "", f"{prog}: error: out of memory (MemoryError): the address-space limit of "
        "78 MiB (ulimit -v) is too small for bench.py; raise it\n")
    assert list(tmp_path.iterdir()) == []
