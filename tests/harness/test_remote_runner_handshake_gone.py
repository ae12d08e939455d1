"""A runner started by hand whose scheduler goes away during the ZeroMQ handshake of
its connect (killed as it answered: the connection closed, the port refusing the next
one) says the scheduler went away, exit 5, as it does once connected; a peer that
closes the handshake and still listens (a data port, not ZeroMQ) stays exit 2."""

from __future__ import annotations

import socket
import threading

from ipc_bench.harness.remote_runner import serve_remote
from ipc_bench.wire.transport import tcp_refused


def _closing_peer(keep_listening: bool) -> tuple[int, threading.Thread, socket.socket]:
    """A listener on a free port that accepts one connection and closes it before any
    ZeroMQ greeting (closing itself first unless ``keep_listening``)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve():
        conn, _ = listener.accept()
        if not keep_listening:
            listener.close()
        conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return listener.getsockname()[1], thread, listener


def test_a_scheduler_gone_during_the_handshake_is_exit_5(capsys):
    port, thread, listener = _closing_peer(keep_listening=False)
    try:
        code = serve_remote(f"tcp://127.0.0.1:{port}", connect_timeout_s=5)
    finally:
        thread.join(5)
        listener.close()
    assert (code, capsys.readouterr().err) == (5, (
        f"bench.py runner: the scheduler at tcp://127.0.0.1:{port} closed the connection, "
        f"noticed while connecting to it (its port refuses connections now)\n"))


def test_a_peer_that_closes_the_handshake_and_still_listens_is_exit_2(capsys):
    port, thread, listener = _closing_peer(keep_listening=True)
    try:
        code = serve_remote(f"tcp://127.0.0.1:{port}", connect_timeout_s=5)
        assert not tcp_refused(f"tcp://127.0.0.1:{port}")
    finally:
        thread.join(5)
        listener.close()
    assert (code, capsys.readouterr().err) == (2, (
        f"bench.py runner: error: the peer at tcp://127.0.0.1:{port} failed the ZeroMQ "
        f"handshake (not a socket of this harness, or one of another kind, such as a data "
        f"port): is it the scheduler's control port? The scheduler prints the command "
        f"with the port to connect to\n"))
    assert tcp_refused(f"tcp://127.0.0.1:{port}")
