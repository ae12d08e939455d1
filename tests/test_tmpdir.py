"""The suite's temporary folder (``conftest.session_tmpdir``): every run the tests start
puts its socket folder under pytest's base temporary folder, and a session that leaves
an ``ipc-bench-*`` folder there fails."""

from __future__ import annotations

import os
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
    assert f"AssertionError: the suite left socket folders in {tmp_path / 'base' / 'tmp0'}: " \
           "ipc-bench-" in proc.stdout
