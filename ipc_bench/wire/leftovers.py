"""Socket folders and ring segments left by a process that no longer runs, and their removal.

A case's socket folder (``transport.EndpointDir``) is made and removed by the process
that runs the case's scheduler: ``bench.py`` itself (its supervisor), never a runner, a
``--tp`` rank, a ``--pp`` stage, the frontend or a runner started by hand
(``--remote-runners``), which only connect to sockets in it or write a file there.
Its name says which process made it: ``ipc-bench-<pid>-XXXXXXXX`` (``FOLDER_PREFIX``,
the maker's pid, ``tempfile.mkdtemp``'s 8 random characters). Its ``owner`` file
(``OWNER_FILE``) says where that pid is meant: ``pid <pid> pid_ns pid:[<inode>] boot
<boot id>`` (the maker's pid namespace, ``/proc/self/ns/pid``, and the kernel's boot id,
``/proc/sys/kernel/random/boot_id``). A shared-memory ring's folder in it
(``shm_ring.RingWriter``: ``ring-XXXXXXXX``) holds an empty file named after the ring's
segment (``ipc-bench-ring-<16 hex digits>``, made before the segment is).

A SIGKILL leaves the folder behind (nothing runs after it), and, during a case's
start-up, the ring's segment in ``/dev/shm``. ``sweep`` removes them when the next
socket folder is made in the same parent folder: it removes a folder only when all of
these hold, and leaves it otherwise:

- its name is exactly ``ipc-bench-<pid>-XXXXXXXX`` (an older name without a pid, or
  anything else, is left);
- it is a folder (not a link) owned by this process's user;
- ``os.kill(pid, 0)`` raises ``ProcessLookupError``: no process of that pid runs (one of
  another user that runs raises ``PermissionError``: left);
- its ``owner`` file is a plain file that names the same pid and this process's pid
  namespace and boot id: a pid counts only in the namespace it was taken in, so a
  folder made in another pid namespace (a container sharing the folder), on another
  machine (a shared network folder) or before a reboot is left, as is a folder whose
  ``owner`` file is missing or unreadable; where this process cannot read its own
  namespace or boot id (no ``/proc``), nothing is removed.

With ``IPC_BENCH_KEEP_LEFTOVERS`` set (``KEEP_ENV``, to anything but ``0`` or empty)
nothing is removed: a killed run's folder then keeps its ``runner.stderr`` to read
(the test suite sets it, so that a folder a run fails to remove is not hidden).

A dead owner's pid taken again by another process only delays the removal until that
process ends. Before the folder, each ring segment it names is unlinked from
``/dev/shm`` if it still exists there as a plain file of this user. Failures (a
permission, another run removing the same folder at the same time) are ignored: only
what this process itself removed is reported, and a sweep never fails a run.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from typing import Optional

import msgspec

#: Socket folders' names begin with this; then the maker's pid, ``-`` and 8 characters.
FOLDER_PREFIX = "ipc-bench-"
#: The file in a socket folder that names the pid namespace and boot of its maker's pid.
OWNER_FILE = "owner"
#: Shared-memory ring segments' names begin with this (``/dev/shm/ipc-bench-ring-...``).
SEGMENT_PREFIX = "ipc-bench-ring-"
#: An environment variable that, set to anything but ``0`` or empty, turns ``sweep`` off.
KEEP_ENV = "IPC_BENCH_KEEP_LEFTOVERS"
#: Where Linux keeps POSIX shared-memory segments as files.
SHM_DIR = "/dev/shm"
#: A ring's folder in a socket folder: ``ring-`` and ``tempfile.mkdtemp``'s characters.
RING_FOLDER_PREFIX = "ring-"

_FOLDER = re.compile(re.escape(FOLDER_PREFIX) + r"([1-9][0-9]{0,9})-[a-z0-9_]{8}")
_SEGMENT = re.compile(re.escape(SEGMENT_PREFIX) + r"[0-9a-f]{16}")
_PID_NS = "/proc/self/ns/pid"
_BOOT_ID = "/proc/sys/kernel/random/boot_id"


class Swept(msgspec.Struct, frozen=True):
    """What one ``sweep`` removed: ``pids``, the dead owner of each socket folder removed
    (one entry per folder, in the order removed); ``segments``, the ring segments
    unlinked (names without ``/dev/shm/``)."""

    pids: tuple[int, ...] = ()
    segments: tuple[str, ...] = ()


def folder_pid(name: str) -> Optional[int]:
    """The pid in a socket folder's name ``ipc-bench-<pid>-XXXXXXXX``; ``None`` for any
    other name (an older one without a pid included)."""
    match = _FOLDER.fullmatch(name)
    return int(match.group(1)) if match else None


def owner_line(pid: int) -> Optional[str]:
    """The ``owner`` file's text for a folder made by ``pid`` in this process's pid
    namespace and boot (``pid 4242 pid_ns pid:[4026531836] boot 6f0c...\\n``); ``None``
    where ``/proc`` does not say them."""
    try:
        pid_ns = os.readlink(_PID_NS)
        with open(_BOOT_ID, encoding="ascii") as f:
            boot_id = f.read().strip()
    except (OSError, ValueError):
        return None
    if not boot_id or any(c.isspace() for c in pid_ns + boot_id):
        return None
    return f"pid {pid} pid_ns {pid_ns} boot {boot_id}\n"


def write_owner(folder: str) -> None:
    """Write ``folder``'s ``owner`` file for this process (mode 0600); where ``/proc``
    does not say the namespace or it cannot be written, no file (the folder is then
    never swept)."""
    line = owner_line(os.getpid())
    if line is None:
        return
    try:
        fd = os.open(os.path.join(folder, OWNER_FILE),
                     os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(line)
    except OSError:
        pass


def _read_small(path: str) -> Optional[str]:
    """A plain file's text (at most 512 bytes read), not through a link; ``None`` when
    it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, 512).decode("ascii")
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)


def _pid_gone(pid: int) -> bool:
    """Whether no process of ``pid`` runs in this pid namespace."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (OSError, OverflowError, ValueError):
        return False  # PermissionError: it runs, as another user
    return False


def _is_own_folder(path: str, uid: int) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == uid


def _ring_segments(folder: str) -> list[str]:
    """The segment names recorded in ``folder``'s ring folders (sorted)."""
    names = []
    try:
        rings = [e for e in os.scandir(folder) if e.name.startswith(RING_FOLDER_PREFIX)
                 and e.is_dir(follow_symlinks=False)]
        for ring in rings:
            names += [e.name for e in os.scandir(ring.path) if _SEGMENT.fullmatch(e.name)]
    except OSError:
        pass
    return sorted(names)


def _unlink_segment(name: str, uid: int) -> bool:
    """Unlink ``/dev/shm/NAME`` if it is a plain file of ``uid``; whether this did."""
    path = os.path.join(SHM_DIR, name)
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != uid:
            return False
        os.unlink(path)
    except OSError:
        return False
    return True


def _remove_folder(path: str) -> bool:
    """Remove ``path``'s entries, then the folder; whether this process removed the
    folder itself (a run removing it at the same time makes one of the two fail)."""
    try:
        entries = list(os.scandir(path))
    except OSError:
        return False
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            try:
                os.unlink(entry.path)
            except OSError:
                pass
    try:
        os.rmdir(path)
    except OSError:
        return False
    return True


def sweep(parent: str) -> Swept:
    """Remove the socket folders in ``parent`` whose owner no longer runs, and the ring
    segments they name (the rules: module docstring); nothing with ``KEEP_ENV`` set.
    Never raises: what cannot be judged or removed is left. Returns what this call
    removed."""
    uid = os.getuid()
    if os.environ.get(KEEP_ENV, "") not in ("", "0") or owner_line(os.getpid()) is None:
        return Swept()
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        return Swept()
    pids, segments = [], []
    for name in names:
        pid = folder_pid(name)
        path = os.path.join(parent, name)
        if pid is None or not _is_own_folder(path, uid) or not _pid_gone(pid):
            continue
        if _read_small(os.path.join(path, OWNER_FILE)) != owner_line(pid):
            continue
        segments += [s for s in _ring_segments(path) if _unlink_segment(s, uid)]
        if _remove_folder(path):
            pids.append(pid)
    return Swept(tuple(pids), tuple(segments))


def sweep_note(swept: Swept) -> Optional[str]:
    """The line that says what ``swept`` removed, without ``note: `` (``removed 2 socket
    folders left by processes that no longer run (pids 4242, 4250)``, and ``, and 1
    shared-memory ring segment (/dev/shm/ipc-bench-ring-HEX)``); ``None`` for nothing."""
    k = len(swept.segments)
    segments = (f"{k} shared-memory ring segment{'' if k == 1 else 's'} ("
                + ", ".join(f"{SHM_DIR}/{s}" for s in swept.segments) + ")")
    if not swept.pids:
        return f"removed {segments} left by a process that no longer runs" if k else None
    n, pids = len(swept.pids), sorted(set(swept.pids))
    line = (f"removed {n} socket folder{'' if n == 1 else 's'} left by "
            + ("a process that no longer runs (pid " if len(pids) == 1
               else "processes that no longer run (pids ")
            + ", ".join(map(str, pids)) + ")")
    return line + (f", and {segments}" if k else "")
