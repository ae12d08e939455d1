"""The sweep of socket folders and ring segments left by processes that no longer run
(``ipc_bench.wire.leftovers``), as a new ``transport.EndpointDir`` runs it."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile

import pytest

from ipc_bench.wire import leftovers, transport
from ipc_bench.wire.leftovers import KEEP_ENV, Swept, owner_line, sweep_note
from ipc_bench.wire.shm_ring import SHM_PREFIX, RingWriter
from ipc_bench.wire.transport import EndpointDir, set_sweep_sink

pytestmark = pytest.mark.skipif(owner_line(1) is None,
                                reason="/proc does not say the pid namespace or boot id")


@pytest.fixture
def parent(monkeypatch, tmp_path):
    """``tmp_path`` as the temporary folder, with the sweep on (the suite turns it off)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv(KEEP_ENV, raising=False)
    return tmp_path


@pytest.fixture
def notes():
    """The lines the sweep says, in order."""
    lines: list[str] = []
    previous = set_sweep_sink(lines.append)
    yield lines
    set_sweep_sink(previous)


def dead_pid() -> int:
    """The pid of a child that has exited and been reaped."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def left_folder(parent, pid: int, suffix: str = "abcdefgh", owner: str | None = None):
    """A socket folder as the process ``pid`` leaves it: its ``owner`` file (``owner``
    instead when given) and a socket-like file."""
    folder = parent / f"ipc-bench-{pid}-{suffix}"
    folder.mkdir(mode=0o700)
    (folder / "owner").write_text(owner_line(pid) if owner is None else owner)
    (folder / "runner.stderr").write_text("last line\n")
    return folder


def new_folder(parent) -> EndpointDir:
    """A new socket folder made in ``parent``; only it is removed after."""
    made = EndpointDir()
    assert os.path.dirname(made.path) == str(parent)
    return made


def test_a_new_socket_folder_names_its_process_and_namespace(parent, notes):
    made = new_folder(parent)
    name = os.path.basename(made.path)
    assert re.fullmatch(rf"ipc-bench-{os.getpid()}-[a-z0-9_]{{8}}", name), name
    assert leftovers.folder_pid(name) == os.getpid()
    assert os.listdir(made.path) == ["owner"]
    owner = (parent / name / "owner").read_text()
    assert owner == owner_line(os.getpid())
    assert re.fullmatch(rf"pid {os.getpid()} pid_ns pid:\[\d+\] boot [0-9a-f-]{{36}}\n", owner)
    assert os.stat(os.path.join(made.path, "owner")).st_mode & 0o777 == 0o600
    assert made.swept == Swept() and notes == []
    made.cleanup()


def test_a_dead_processs_folder_and_ring_segment_are_removed_and_named(parent, notes):
    pid = dead_pid()
    folder = left_folder(parent, pid)
    ring = folder / "ring-a1b2c3d4"
    ring.mkdir()
    segment = SHM_PREFIX + secrets.token_hex(8)
    (ring / segment).touch()
    (ring / "overflow").touch()
    os.close(os.open(f"/dev/shm/{segment}", os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600))
    try:
        made = new_folder(parent)
    finally:
        gone = not os.path.exists(f"/dev/shm/{segment}")
        if not gone:
            os.unlink(f"/dev/shm/{segment}")
    assert gone
    assert not folder.exists()
    assert made.swept == Swept((pid,), (segment,))
    assert notes == [f"removed 1 socket folder left by a process that no longer runs "
                     f"(pid {pid}), and 1 shared-memory ring segment (/dev/shm/{segment})"]
    assert [p.name for p in parent.iterdir()] == [os.path.basename(made.path)]
    made.cleanup()


def test_a_ring_writers_folder_names_its_segment(bench_tmpdir, monkeypatch, notes):
    monkeypatch.setattr(tempfile, "tempdir", str(bench_tmpdir))  # short: the socket fits
    made = new_folder(bench_tmpdir)
    writer = RingWriter(1, n_chunks=1, chunk_bytes=64, folder=made.path)
    try:
        assert sorted(os.listdir(writer.folder)) == [writer.handle.shm_name, "overflow"]
        assert os.path.basename(writer.folder).startswith("ring-")
    finally:
        writer.close()
        made.cleanup()


def test_folders_of_running_processes_are_kept(parent, notes):
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        mine = left_folder(parent, os.getpid())
        sleeping = left_folder(parent, sleeper.pid)
        dead = dead_pid()
        left_folder(parent, dead)
        made = new_folder(parent)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert mine.is_dir() and sleeping.is_dir() and (sleeping / "runner.stderr").is_file()
    assert made.swept == Swept((dead,)) and len(notes) == 1
    made.cleanup()


def test_only_exactly_named_folders_with_this_namespaces_owner_file_are_removed(parent, notes):
    pid = dead_pid()
    other_ns = owner_line(pid).replace("pid_ns pid:[", "pid_ns pid:[1")
    kept = [left_folder(parent, pid, "abcdefg"),  # 7 characters
            left_folder(parent, pid, "abcdefghi"),
            left_folder(parent, pid, "ABCDEFGH"),
            left_folder(parent, pid, "bbbbbbbb", owner=other_ns),  # another pid namespace
            left_folder(parent, pid, "cccccccc", owner=owner_line(pid + 1)),
            left_folder(parent, pid, "dddddddd", owner="")]
    (kept[-1] / "owner").unlink()  # no owner file
    for name in ("ipc-bench-abcdefgh", f"ipc-bench-0{pid}-abcdefgh", f"xipc-bench-{pid}-abcdefgh",
                 f"ipc-bench-{pid}-abcdefgh.old", f"ipc-bench--{pid}-abcdefgh"):
        (parent / name).mkdir()
        kept.append(parent / name)
    (parent / f"ipc-bench-{pid}-ffffffff").write_text("a file")
    target = left_folder(parent, pid, "eeeeeeee")
    os.rename(target, parent / "elsewhere")
    os.symlink(parent / "elsewhere", target)
    made = new_folder(parent)
    assert all(p.is_dir() for p in kept)
    assert (parent / f"ipc-bench-{pid}-ffffffff").is_file() and target.is_symlink()
    assert (parent / "elsewhere" / "runner.stderr").is_file()
    assert made.swept == Swept() and notes == []
    made.cleanup()


UNSHARE = shutil.which("unshare")


def _thread_ids(pid: str) -> list[str]:
    """The thread ids of process ``pid`` (``/proc/PID/task``), none if it has ended."""
    try:
        return os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []


@pytest.mark.skipif(os.geteuid() != 0 or UNSHARE is None,
                    reason="a new pid namespace needs root and unshare(1)")
def test_a_live_folder_made_in_another_pid_namespace_is_kept(parent, notes):
    """A run in a new pid namespace (as in a container sharing the folder) whose pid is
    free here: its folder's pid is dead here, but its owner file names another
    namespace."""
    # every thread's id: kill() reaches a thread by its id too, and /proc lists only the
    # processes' (a thread made after the pids wrapped can hold a low one)
    running = {int(t) for p in os.listdir("/proc") if p.isdigit()
               for t in _thread_ids(p)}
    target = min(p for p in range(100, 5000) if p not in running)
    script = (f"import os, sys\nfrom ipc_bench.wire.transport import EndpointDir\n"
              f"while True:\n    pid = os.fork()\n    if pid == 0:\n"
              f"        if os.getpid() == {target}:\n            made = EndpointDir()\n"
              f"            print(made.path, flush=True)\n            sys.stdin.read()\n"
              f"            made.cleanup()\n        os._exit(0)\n    os.waitpid(pid, 0)\n"
              f"    if pid >= {target}:\n        break\n")
    other = subprocess.Popen([UNSHARE, "--pid", "--fork", sys.executable, "-c", script],
                             env=dict(os.environ, TMPDIR=str(parent)), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        path = other.stdout.readline().strip()
        assert os.path.basename(path).startswith(f"ipc-bench-{target}-")
        made = new_folder(parent)
        with pytest.raises(ProcessLookupError):
            os.kill(target, 0)  # the pid is free here: only the namespace keeps the folder
        assert os.path.isdir(path) and made.swept == Swept() and notes == []
        made.cleanup()
    finally:
        other.communicate("", timeout=30)
    assert other.returncode == 0 and not os.path.exists(path)


def test_keep_leftovers_turns_the_sweep_off(parent, notes, monkeypatch):
    folder = left_folder(parent, dead_pid())
    monkeypatch.setenv(KEEP_ENV, "1")
    made = new_folder(parent)
    assert folder.is_dir() and made.swept == Swept() and notes == []
    made.cleanup()
    monkeypatch.setenv(KEEP_ENV, "0")
    made = new_folder(parent)
    assert not folder.exists() and len(notes) == 1
    made.cleanup()


def test_without_a_sink_the_note_goes_to_stderr(parent, capsys):
    pid = dead_pid()
    left_folder(parent, pid)
    previous = set_sweep_sink(None)
    try:
        made = new_folder(parent)
    finally:
        set_sweep_sink(previous)
    assert capsys.readouterr().err == (f"note: removed 1 socket folder left by a process that "
                                       f"no longer runs (pid {pid})\n")
    made.cleanup()
    assert transport._sweep_sink is previous


def test_the_note_counts_folders_and_names_each_pid_once():
    assert sweep_note(Swept()) is None
    assert sweep_note(Swept((4250, 4242))) == (
        "removed 2 socket folders left by processes that no longer run (pids 4242, 4250)")
    assert sweep_note(Swept((4242, 4242))) == (
        "removed 2 socket folders left by a process that no longer runs (pid 4242)")
    assert sweep_note(Swept((), ("ipc-bench-ring-00112233445566ff",))) == (
        "removed 1 shared-memory ring segment (/dev/shm/ipc-bench-ring-00112233445566ff) left "
        "by a process that no longer runs")
    assert sweep_note(Swept((7,), ("ipc-bench-ring-0", "ipc-bench-ring-1"))) == (
        "removed 1 socket folder left by a process that no longer runs (pid 7), and 2 "
        "shared-memory ring segments (/dev/shm/ipc-bench-ring-0, /dev/shm/ipc-bench-ring-1)")
