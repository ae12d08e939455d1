"""The socket-path check before a run (``cli.run._check_sockets``,
``transport.check_endpoints``) checks the longest ``ipc://`` socket name the run's cases
bind, from the code that binds them (``tp.tp_socket_names``' ``ctl0``,
``frontend.FRONTEND_SOCKET_NAMES``' ``frontend-back``), where it checked only the
scheduler's three-letter ones: a ``TMPDIR`` whose socket folder takes ``s2r`` at the
107-byte limit but not ``ctl0`` or ``frontend-back`` was refused only by the first
case, after the results folder was claimed (``summary.json`` failed, exit 2). Now
exit 2 within seconds, one line, no results folder, no socket folder, no process."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fault_helpers import REPO, runners_of

#: Runs ``bench.py ARGS`` (``os.execv``: the same pid) with ``TMPDIR`` a new folder under
#: ``argv[1]`` whose socket folder (``TMPDIR/ipc-bench-<pid>-XXXXXXXX``) is 103 bytes:
#: its ``/s2r`` socket path 107 bytes, the limit.
AT_LIMIT = """
import os, sys
base = sys.argv[1]
tmpdir = base + "/" + "t" * (83 - len(str(os.getpid())) - len(base) - 1)
os.mkdir(tmpdir)
os.environ["TMPDIR"] = tmpdir
os.execv(sys.executable, [sys.executable, "bench.py", *sys.argv[2:]])
"""
STEADY = ["--num-running", "4", "--steps", "20", "--warmup-steps", "2", "--codecs",
          "msgpack", "--policies", "send", "--quiet"]


def _at_limit(base: Path, args: list[str]) -> tuple[int, int, str, str, Path, float]:
    """``bench.py ARGS`` under ``AT_LIMIT``'s ``TMPDIR`` (60 s at most): its pid, exit
    code, stdout, stderr, the ``TMPDIR`` and the seconds it took."""
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", AT_LIMIT, str(base), *args], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    tmpdir = base / ("t" * (83 - len(str(proc.pid)) - len(str(base)) - 1))
    assert len(f"{tmpdir}/ipc-bench-{proc.pid}-XXXXXXXX/s2r") == 107
    return proc.pid, proc.returncode, out, err, tmpdir, time.monotonic() - t0


@pytest.mark.parametrize("options, name, size", [
    (["--scenario", "decode-steady", "--no-single-process", "--frontend"],
     "frontend-back", 117),
    (["--scenario", "tp-broadcast", "--tp", "2", "--tp-transports", "ipc"], "ctl0", 108),
    (["--scenario", "pp", "--pp", "2"], "ctl0", 108),
])
def test_the_longest_socket_name_is_refused_before_the_run(bench_tmpdir, tmp_path, options,
                                                           name, size):
    out = tmp_path / "run"
    pid, code, stdout, err, tmpdir, elapsed_s = _at_limit(
        bench_tmpdir, options + STEADY + ["--output", str(out)])
    assert (code, stdout) == (2, ""), err
    assert re.fullmatch(rf"bench\.py: error: cannot bind ipc://{re.escape(str(tmpdir))}/"
                        rf"ipc-bench-{pid}-\w{{8}}/{name}: the socket path is {size} "
                        r"bytes, the limit is 107 \(set TMPDIR to a shorter folder\)\n",
                        err), err
    assert not out.exists()  # refused before the results folder was claimed
    assert list(tmpdir.iterdir()) == []  # no socket folder left
    assert runners_of(pid) == []
    assert elapsed_s < 10


def test_a_run_whose_names_all_fit_runs(bench_tmpdir, tmp_path):
    """The scheduler's ``s2r`` at exactly 107 bytes: the check lets it run."""
    out = tmp_path / "run"
    _, code, _, err, tmpdir, _ = _at_limit(bench_tmpdir, [
        "--scenario", "decode-steady", "--no-single-process", "--no-floor", *STEADY,
        "--output", str(out)])
    assert code == 0, err
    assert list(tmpdir.iterdir()) == []
