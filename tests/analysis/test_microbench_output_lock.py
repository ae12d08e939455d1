"""``bench.py microbench`` holds a lock on its output folder while it runs, as ``bench.py
report`` locks its own: a second microbench into the same folder meanwhile is refused
(one line, exit 2), where both ran, timing each other's load, and the loser failed on a
file the winner had renamed (``cannot write DIR/cached.json.new: No such file or
directory``). The next microbench into a folder where a killed one left its new files
(``send.json.new``) removes them, one line naming them, those of arms it does not time
included."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ipc_bench import cli
from microbench_runs import ERROR, FRAME_RUN, PYPERF, REPO, copy_run, finished_run

LOCK = ".microbench.lock"


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory, "output-lock", FRAME_RUN)


def _locked(path: Path) -> bool:
    """Whether another process holds ``path``'s ``flock``."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_a_second_microbench_into_a_folder_in_use_is_refused(finished, tmp_path):
    run = copy_run(finished, tmp_path)
    out = tmp_path / "mb"
    cmd = [sys.executable, "bench.py", "microbench", str(run), "--output", str(out),
           *PYPERF]
    first = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    stopped = False
    try:
        deadline = time.monotonic() + 60
        while not _locked(out / LOCK):
            assert first.poll() is None and time.monotonic() < deadline, first.stderr.read()
            time.sleep(0.01)
        first.send_signal(signal.SIGSTOP)  # holding its lock, whatever the machine's pace
        stopped = True
        second = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
        assert (second.returncode, second.stdout, second.stderr) == (
            2, "", f"{ERROR}output folder {out} is being written by another microbench "
                   "still going; give another --output, or run this one again once it "
                   "ends\n")
        first.send_signal(signal.SIGCONT)
        stopped = False
        _, err = first.communicate(timeout=120)
    finally:
        if stopped:
            first.send_signal(signal.SIGCONT)
        if first.poll() is None:
            first.kill()
            first.communicate()
    assert first.returncode == 0, err
    assert "removed" not in err and "error" not in err
    assert sorted(os.listdir(out)) == ["in_loop_vs_pyperf.json", "send.json"]


def test_a_lock_no_process_holds_is_taken(finished, tmp_path, capsys):
    """A lock file a killed microbench left (the kernel dropped its lock) locks
    nothing, and goes at the end."""
    run = copy_run(finished, tmp_path)
    out = tmp_path / "mb"
    out.mkdir()
    (out / LOCK).touch()
    assert cli.main(["microbench", str(run), "--output", str(out), "--ops", "decode",
                     "--codecs", "msgpack", *PYPERF]) == 0
    assert "error" not in capsys.readouterr().err
    assert sorted(os.listdir(out)) == ["in_loop_vs_pyperf.json", "send.json"]


def test_new_files_a_killed_microbench_left_are_removed_and_named(finished, tmp_path,
                                                                   capsys):
    run = copy_run(finished, tmp_path)
    out = tmp_path / "mb"
    out.mkdir()
    for name in ("send.json.new", "cached.json.new", "send-prime.json.new.tmp",
                 "in_loop_vs_pyperf.json.new", "notes.json.new"):
        (out / name).write_text("{")
    assert cli.main(["microbench", str(run), "--output", str(out), "--ops", "decode",
                     "--codecs", "msgpack", *PYPERF]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[1] == (f"microbench: removed cached.json.new, in_loop_vs_pyperf.json.new, "
                      f"send-prime.json.new.tmp, send.json.new in {out}, left by a "
                      "microbench killed before it finished")
    assert sum("removed" in line for line in err) == 1
    # a file of another name is not microbench's: left as it is
    assert sorted(os.listdir(out)) == ["in_loop_vs_pyperf.json", "notes.json.new",
                                       "send.json"]
    assert (out / "notes.json.new").read_text() == "{"
