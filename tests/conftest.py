"""Suite-wide fixtures: the temporary folder every test and process of the session uses.

``session_tmpdir`` points ``TMPDIR`` (and ``tempfile``) at a folder under pytest's base
temporary folder for the whole session, so the ``ipc-bench-*`` socket folders of every
run the suite starts land there and not in ``/tmp``, which other users' runs share;
after the last test it fails the session if any ``ipc-bench-*`` folder is left in it.
A test that SIGKILLs ``bench.py`` (which then cannot remove its socket folder) gives
that process a ``TMPDIR`` under its own ``tmp_path`` instead.
"""

from __future__ import annotations

import os
import tempfile

import pytest


@pytest.fixture(scope="session", autouse=True)
def session_tmpdir(tmp_path_factory):
    """``TMPDIR`` for the session (short: socket paths are limited to 107 bytes);
    after the session, no ``ipc-bench-*`` folder may remain in it."""
    tmp = tmp_path_factory.mktemp("tmp")
    before = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(tmp)
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    try:
        yield tmp
    finally:
        if before is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = before
        tempfile.tempdir = None
    left = sorted(p.name for p in tmp.glob("ipc-bench-*"))
    assert left == [], f"the suite left socket folders in {tmp}: {', '.join(left)}"
