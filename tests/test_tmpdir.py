"""The suite's temporary folder (``conftest.session_tmpdir``): every run the tests start
puts its socket folder under pytest's base temporary folder, and a session that leaves
an ``ipc-bench-*`` folder there fails, even one a later run would remove as left by a
process that no longer runs (the session turns that sweep off)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_socket_folders_of_the_session_land_in_its_tmpdir(session_tmpdir):
    assert os.environ["TMPDIR"] == str(session_tmpdir)
    assert tempfile.gettempdir() == str(session_tmpdir)
    assert not str(session_tmpdir).startswith("/tmp/ipc-bench")
    assert os.environ["IPC_BENCH_KEEP_LEFTOVERS"] == "1"


def test_a_session_that_leaves_a_socket_folder_fails(tmp_path):
    shutil.copy(HERE / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_leak.py").write_text(
        "import tempfile\n\n\ndef test_leak():\n"
        "    tempfile.mkdtemp(prefix='ipc-bench-')\n")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--rootdir", str(tmp_path), "-c", os.devnull,
                           "--basetemp", str(tmp_path / "base"), str(tmp_path / "test_leak.py")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout
    assert "1 passed, 1 error" in proc.stdout
    assert re.search(rf"AssertionError: the suite left socket folders in "
                     rf"{re.escape(str(tmp_path / 'base' / 'tmp0'))}: ipc-bench-\S+ "
                     rf"\(first seen after test_leak\.py::test_leak\)\n", proc.stdout), \
        proc.stdout


def test_a_folder_left_by_a_dead_process_still_fails_the_session(tmp_path):
    """A later run's sweep would hide such a folder: the session keeps it to fail."""
    shutil.copy(HERE / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_leak.py").write_text(
        "import os, subprocess, tempfile\n"
        "from ipc_bench.wire.leftovers import owner_line\n"
        "from ipc_bench.wire.transport import EndpointDir\n\n\n"
        "def test_leak():\n"
        "    child = subprocess.Popen(['true'])\n"
        "    child.wait()\n"
        "    folder = os.path.join(tempfile.gettempdir(), f'ipc-bench-{child.pid}-abcdefgh')\n"
        "    os.mkdir(folder)\n"
        "    with open(os.path.join(folder, 'owner'), 'w') as f:\n"
        "        f.write(owner_line(child.pid))\n"
        "    print('LEFT', os.path.basename(folder))\n\n\n"
        "def test_next_run():\n"
        "    EndpointDir().cleanup()\n")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
                           "--rootdir", str(tmp_path), "-c", os.devnull,
                           "--basetemp", str(tmp_path / "base"), str(tmp_path / "test_leak.py")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout
    assert "2 passed, 1 error" in proc.stdout
    (left,) = [line.split()[-1] for line in proc.stdout.splitlines() if "LEFT " in line]
    assert f"AssertionError: the suite left socket folders in {tmp_path / 'base' / 'tmp0'}: " \
           f"{left} (first seen after test_leak.py::test_leak)\n" in proc.stdout
