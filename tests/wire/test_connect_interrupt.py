"""A Ctrl-C while a connect waits for its ZeroMQ handshake is acted on within a wait
slice, also when it lands after the interpreter's last check for signals and before
the poll's system call starts (``transport._connect`` waits in ``POLL_SLICE_MS``
slices): ``bench.py runner`` stayed in a 60 s poll after such a SIGINT."""

from __future__ import annotations

import _thread
import socket
import threading
import time

import pytest
import zmq

from ipc_bench.wire.transport import RunnerSockets


def test_a_signal_the_poll_did_not_see_ends_the_wait_within_a_slice():
    listener = socket.socket()  # accepts the connection, never answers the handshake
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(30)
    port = listener.getsockname()[1]
    accepted: list[socket.socket] = []

    def interrupt_once_connected() -> None:
        conn, _ = listener.accept()
        accepted.append(conn)
        time.sleep(0.3)  # the main thread is inside the poll by now
        _thread.interrupt_main()  # trips the flag as a signal does, wakes no system call

    thread = threading.Thread(target=interrupt_once_connected, daemon=True)
    ctx = zmq.Context()
    thread.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            RunnerSockets(ctx, f"tcp://127.0.0.1:{port}", connect_timeout_s=60.0)
        elapsed = time.monotonic() - t0
    finally:
        thread.join(30)
        for conn in accepted:
            conn.close()
        listener.close()
        ctx.destroy(linger=0)
    assert elapsed < 20  # one slice after the flag, not the 60 s timeout
