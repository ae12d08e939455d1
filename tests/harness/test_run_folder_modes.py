"""A run folder the writer creates is 0755 and its files 0644 whatever the umask; an
empty folder given that exists keeps its mode (``--output /dev/shm`` once left the
system's 1777 folder 0755)."""

from __future__ import annotations

import os
import stat

from ipc_bench.harness.run_folder import RunWriter


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_created_folder_is_0755_and_its_files_0644_whatever_the_umask(tmp_path):
    mask = os.umask(0)
    try:
        writer = RunWriter(tmp_path / "new" / "run", {"scenario": "x"})
        writer.finish("complete")
    finally:
        os.umask(mask)
    assert _mode(tmp_path / "new" / "run") == 0o755
    assert _mode(tmp_path / "new" / "run" / "summary.json") == 0o644


def test_an_existing_empty_folder_keeps_its_mode(tmp_path):
    given = tmp_path / "shared"
    given.mkdir()
    os.chmod(given, 0o1777)
    writer = RunWriter(given, {"scenario": "x"})
    writer.finish("complete")
    assert _mode(given) == 0o1777
    assert _mode(given / "summary.json") == 0o644
