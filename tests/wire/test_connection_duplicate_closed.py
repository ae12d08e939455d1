"""The scheduler reads a control connection's peer and shuts it down through a
duplicate of libzmq's file descriptor (``wire.remote._peer_address``, ``_shut_down``).
By the time it does, libzmq may have closed that connection and the number may belong
to something else of the run's, such as the pipe of a ``git`` call made for the run's
metadata. ``socket.socket(fileno=...)`` then raises and leaves the duplicate open: it
held the pipe's write end, so the read of that pipe never ended and the scheduler hung
before its first case (seen once among about 330 runs with strays on the control port).
Now the duplicate is closed: the pipe's reader gets its end."""

from __future__ import annotations

import os
import select

from ipc_bench.wire.remote import _peer_address, _shut_down


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def _reads_its_end(read_fd: int) -> bool:
    """Whether a read of the pipe's read end sees the end at once (no writer left)."""
    ready, _, _ = select.select([read_fd], [], [], 5.0)
    return bool(ready) and os.read(read_fd, 1) == b""


def test_a_number_reused_by_a_pipe_leaves_no_duplicate_open():
    read_fd, write_fd = os.pipe()
    try:
        before = _open_fds()
        assert _peer_address(write_fd) == ""
        _shut_down(write_fd, "127.0.0.1:5600")
        _shut_down(write_fd, "")
        assert _open_fds() == before
    finally:
        os.close(write_fd)
    try:
        assert _reads_its_end(read_fd)
    finally:
        os.close(read_fd)


def test_a_closed_number_is_read_as_no_peer():
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    os.close(write_fd)
    before = _open_fds()
    assert _peer_address(write_fd) == ""
    _shut_down(write_fd, "127.0.0.1:5600")
    assert _open_fds() == before
