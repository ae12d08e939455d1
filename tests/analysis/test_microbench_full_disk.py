"""``bench.py microbench`` writes a small file to its output folder and removes it
before it times anything: on a full disk (or over quota) it is refused at once, one
line, exit 2, as a folder that cannot be made is, where it timed every benchmark
(minutes with the default settings) and only then failed, ``cannot write DIR/send.json:
No space left on device; nothing was written`` (exit 1). Its lock file, empty, is
made on a full disk too: only a write tells."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ipc_bench import cli
from ipc_bench.analysis import microbench
from microbench_runs import ERROR, FRAME_RUN, PYPERF, REPO, copy_run, finished_run

ARGS = ["--ops", "decode", "--codecs", "msgpack", *PYPERF]


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory, "full-disk", FRAME_RUN)


def _full(monkeypatch, folder: Path, code: int = errno.ENOSPC) -> None:
    """Every ``os.write`` of this process to a file in ``folder`` fails with ``code``,
    as on a full disk; the lock file, which is never written, is still made."""
    real = os.write
    inside = str(folder.resolve()) + os.sep

    def write(fd, data):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            target = ""
        if target.startswith(inside):
            raise OSError(code, os.strerror(code))
        return real(fd, data)
    monkeypatch.setattr(os, "write", write)


def _no_arm(monkeypatch) -> list:
    """The arm processes microbench starts, recorded and not run."""
    started = []

    def popen(cmd, *a, **kw):
        started.append(cmd)
        raise AssertionError("an arm was started")
    monkeypatch.setattr(subprocess, "Popen", popen)
    return started


def test_a_full_disk_is_refused_before_anything_is_timed(finished, tmp_path, capsys,
                                                          monkeypatch):
    run = copy_run(finished, tmp_path)
    out = tmp_path / "mb"
    _full(monkeypatch, tmp_path)
    started = _no_arm(monkeypatch)
    code = cli.main(["microbench", str(run), "--output", str(out), *ARGS])
    captured = capsys.readouterr()
    assert (code, captured.out, captured.err, started) == (
        2, "", f"{ERROR}cannot write to {out}: No space left on device\n", [])
    assert not out.exists()  # the folder it made goes: nothing was written


def test_earlier_results_stay_as_they_were(finished, tmp_path, capsys, monkeypatch):
    run = copy_run(finished, tmp_path)
    out = tmp_path / "mb"
    out.mkdir()
    (out / "send.json").write_text("earlier")
    _full(monkeypatch, out, errno.EDQUOT)
    started = _no_arm(monkeypatch)
    code = cli.main(["microbench", str(run), "--output", str(out), *ARGS])
    captured = capsys.readouterr()
    assert (code, captured.out, captured.err, started) == (
        2, "", f"{ERROR}cannot write to {out}: Disk quota exceeded\n", [])
    assert os.listdir(out) == ["send.json"]  # no lock file, no probe file
    assert (out / "send.json").read_text() == "earlier"


def test_a_file_size_limit_is_not_the_folders(tmp_path, monkeypatch):
    """A write the file-size limit refuses (EFBIG) says nothing of the folder: the
    limit is judged against the files themselves (``file_size_refusal``)."""
    _full(monkeypatch, tmp_path, errno.EFBIG)
    microbench._probe_write(tmp_path)
    assert os.listdir(tmp_path) == []


def test_a_short_write_goes_on_until_the_disk_says_why(tmp_path, monkeypatch):
    """A nearly full disk takes part of the probe: the next write says it is full."""
    real, calls = os.write, []

    def write(fd, data):
        calls.append(len(data))
        if len(calls) == 1:
            return real(fd, data[:100])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(os, "write", write)
    with pytest.raises(OSError) as caught:
        microbench._probe_write(tmp_path)
    assert (caught.value.errno, calls) == (errno.ENOSPC, [4096, 3996])
    assert os.listdir(tmp_path) == []


def _can_mount_tmpfs() -> bool:
    if shutil.which("unshare") is None:
        return False
    proc = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs "
                           "/mnt && umount /mnt"], capture_output=True)
    return proc.returncode == 0


@pytest.mark.skipif(not _can_mount_tmpfs(), reason="cannot mount a tmpfs here (no root "
                    "or no mount namespace)")
def test_a_full_tmpfs_in_a_mount_namespace(finished, tmp_path):
    """The real thing: a 400 KiB tmpfs filled to the last block, in a mount namespace
    of its own (unshare -m), so nothing outside sees it."""
    run = copy_run(finished, tmp_path)
    disk = tmp_path / "tiny"
    disk.mkdir()
    script = (f"mount -t tmpfs -o size=400k tmpfs {disk} && "
              f"(dd if=/dev/zero of={disk}/fill bs=4k 2>/dev/null; true) && "
              f"{sys.executable} bench.py microbench {run} --output {disk}/mb "
              f"{' '.join(ARGS)}; echo \"rc=$?\"; ls -A {disk}")
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert (proc.stdout, proc.stderr) == (
        "rc=2\nfill\n", f"{ERROR}cannot write to {disk}/mb: No space left on device\n")
