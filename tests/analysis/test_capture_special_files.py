"""A capture file in ``messages/`` that is not a regular file, or is larger than any a
run writes, is refused in one line before it is read (``capture._capture_bytes``),
exit code 2, where ``bench.py microbench`` waited for ever on a FIFO and read a link
to ``/dev/zero`` until the memory ran out: the words ``bench.py report`` gives a
run's own files (``steps.csv is a FIFO, not a regular file``)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from ipc_bench import cli
from ipc_bench.analysis import capture
from microbench_runs import FRAME_RUN, capture_path, copy_run, finished_run

REPO = Path(__file__).resolve().parents[2]
NAME = "num_running=1.send.msgpack.r0.s2r.msgpack"


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory, "special-captures", FRAME_RUN)


def _microbench(run: Path) -> subprocess.CompletedProcess:
    """``bench.py microbench RUN --fast`` in a child process of at most 3 GB of
    address space, stopped after 60 s."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3_000_000_000, 3_000_000_000))
    return subprocess.run([sys.executable, "bench.py", "microbench", str(run), "--fast"],
                          cwd=REPO, capture_output=True, text=True, timeout=60,
                          preexec_fn=limit)


def test_a_fifo_in_messages_is_refused_without_waiting(finished, tmp_path):
    run = copy_run(finished, tmp_path)
    path = capture_path(run, "msgpack", "s2r")
    path.unlink()
    os.mkfifo(path)
    proc = _microbench(run)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", f"bench.py microbench: error: {run / 'messages'}: {NAME} is a FIFO, not a "
               "regular file\n")
    assert not (run / "microbench").exists()


def test_a_link_to_dev_zero_is_refused_without_reading(finished, tmp_path):
    run = copy_run(finished, tmp_path)
    path = capture_path(run, "msgpack", "s2r")
    path.unlink()
    path.symlink_to("/dev/zero")
    proc = _microbench(run)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", f"bench.py microbench: error: {run / 'messages'}: {NAME} is a character "
               "device, not a regular file\n")


def test_a_file_larger_than_any_run_writes_is_refused_unread(finished, tmp_path, capsys):
    run = copy_run(finished, tmp_path)
    path = capture_path(run, "msgpack", "s2r")
    assert capture.CAPTURE_MAX_FILE_BYTES == 1 << 30
    with open(path, "r+b") as f:  # sparse: no disk taken, and never read
        f.truncate(capture.CAPTURE_MAX_FILE_BYTES + 1)
    assert cli.main(["microbench", str(run), "--fast"]) == 2
    assert capsys.readouterr() == ("", (
        f"bench.py microbench: error: {path}: 1,073,741,825 bytes, more than the "
        "1,073,741,824 a capture file is read up to (CAPTURE_MAX_FILE_BYTES: a run keeps "
        "about 8 MiB of frames a file): not a capture file a run wrote\n"))


def test_a_file_that_grows_past_the_bound_as_it_is_read_is_refused(finished, tmp_path,
                                                                   monkeypatch):
    path = capture_path(copy_run(finished, tmp_path), "msgpack", "s2r")
    size = path.stat().st_size
    monkeypatch.setattr(capture, "CAPTURE_MAX_FILE_BYTES", size - 1)
    real_fstat = os.fstat

    def smaller(fd):  # the size looked up before the file grew to what it is now
        st = real_fstat(fd)
        return os.stat_result((*st[:6], 10, *st[7:]))
    monkeypatch.setattr(capture.os, "fstat", smaller)
    with pytest.raises(capture.CaptureError) as info:
        capture.load_capture(path)
    assert str(info.value) == (
        f"{path}: {size:,} bytes, more than the {size - 1:,} a capture file is read up to "
        "(CAPTURE_MAX_FILE_BYTES: a run keeps about 8 MiB of frames a file): not a "
        "capture file a run wrote")


def test_a_regular_capture_file_still_loads(finished):
    cap = capture.load_capture(capture_path(finished, "msgpack", "s2r"))
    assert (cap.case_id, cap.direction, cap.codec) == (
        "num_running=1/send/msgpack#0", "s2r", "msgpack")
