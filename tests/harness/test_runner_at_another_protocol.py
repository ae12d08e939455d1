"""A runner started by hand whose ``--connect`` reaches a server of another protocol
(one that answers a connection with an HTTP status line, and keeps it open) exits 2
after ``--connect-timeout`` with the line that says the peer did not complete the
ZeroMQ handshake, bytes that are not ZeroMQ's included; it said the peer "did not
answer", which a server that answered at once did."""

from __future__ import annotations

import socket
import threading

from remote_launch import Launcher, no_handshake_line


def test_a_server_of_another_protocol_is_named_within_the_connect_timeout():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(60)
    port = listener.getsockname()[1]
    held: list[socket.socket] = []

    def serve() -> None:  # one connection: the status line at once, then nothing
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        held.append(conn)
        conn.sendall(b"HTTP/1.0 200 OK\r\n\r\n")

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        with Launcher() as launch:
            proc = launch.runner(port, "--connect-timeout", "0.5")
            _, err = proc.communicate(timeout=60)
        server.join(60)
        assert held, "the runner never connected"
    finally:
        for conn in held:
            conn.close()
        listener.close()
    assert (proc.returncode, err) == (2, no_handshake_line(port, 0.5))
