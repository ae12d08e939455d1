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


def test_a_run_folder_bench_py_makes_is_0755_whatever_the_umask(tmp_path):
    """Through ``bench.py``: the folder is made before the writer opens it
    (``claim_run_dir``), given or the default one."""
    import subprocess
    import sys

    from analysis_run import REPO

    run = tmp_path / "new" / "run"
    proc = subprocess.run(
        ["bash", "-c", 'umask 077 && exec "$0" bench.py --scenario decode-steady '
         '--num-running 2 --steps 10 --warmup-steps 1 --codecs msgpack --policies send '
         '--no-single-process --no-floor --quiet --output "$1"', sys.executable, str(run)],
        cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert _mode(run) == 0o755
    assert _mode(run / "summary.json") == 0o644
