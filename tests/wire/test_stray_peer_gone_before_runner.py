"""A stray ZeroMQ peer on a control port of ``--remote-runners`` whose ZAP request the
scheduler answers only after the stray has left (the scheduler's thread held the
Doorman's lock meanwhile, as its waits do) does not keep the port: the runner that
connects next is let in and claims it with its hello, and a second one is still refused
(``wire.remote``: the Doorman's answer holds the port for a connection that is still
there, until it ends).

The sequences are made in order, not timed: the test holds the Doorman's lock while the
stray asks and leaves, and reads the port's events itself (``RemoteRunners._events``,
as the scheduler's waits do) until the stray's end has been read."""

from __future__ import annotations

import threading
import time

import pytest
import zmq

import ipc_bench.wire.remote as remote_mod
from fault_helpers import free_base_port
from ipc_bench.wire.control import PROTOCOL_VERSION
from ipc_bench.wire.remote import ZAP_REFUSED, RemoteRunners, runner_hello
from ipc_bench.wire.transport import recv_monitor_message

WAIT_S = 60.0
_SETTLED = (zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_HANDSHAKE_FAILED_AUTH
            | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL)


class Watched:
    """``RemoteRunners`` on ``port`` whose Doorman counts the requests it took and
    answered, and whose monitor events read are kept (``events``)."""

    def __init__(self, port: int, monkeypatch):
        self.events: list[int] = []
        real = remote_mod.recv_monitor_message

        def recv(sock):
            message = real(sock)
            self.events.append(message["event"])
            return message

        monkeypatch.setattr(remote_mod, "recv_monitor_message", recv)
        self.remote = RemoteRunners("127.0.0.1", port, 1)
        self.asked, self.answered = 0, 0
        self.cond = threading.Condition()
        doorman = self.remote.doorman
        answer = doorman.answer

        def counted(request):
            with self.cond:
                self.asked += 1
                self.cond.notify_all()
            reply = answer(request)
            with self.cond:
                self.answered += 1
                self.cond.notify_all()
            return reply

        doorman.answer = counted  # the thread calls self.answer for each request

    def wait(self, what, n: int) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: getattr(self, what) >= n, WAIT_S), \
                (what, n, self.asked, self.answered)

    def read_until_disconnected(self, n: int) -> None:
        """Read the port's events (as a wait does) until ``n`` connections ended."""
        deadline = time.monotonic() + WAIT_S
        while self.events.count(zmq.EVENT_DISCONNECTED) < n:
            assert time.monotonic() < deadline, self.events
            self.remote._events(0)
            self.remote._monitors[0].poll(100)


def connect(ctx: zmq.Context, port: int):
    """A PAIR connected to the control port and a monitor of its handshake."""
    sock = ctx.socket(zmq.PAIR)
    monitor = sock.get_monitor_socket(_SETTLED | zmq.EVENT_DISCONNECTED)
    sock.connect(f"tcp://127.0.0.1:{port}")
    return sock, monitor


def settled(monitor) -> tuple[int, int]:
    """The first handshake outcome the monitor reports (event, value)."""
    while True:
        assert monitor.poll(int(WAIT_S * 1000)), "the handshake did not settle"
        message = recv_monitor_message(monitor)
        if message["event"] & _SETTLED:
            return message["event"], int(message["value"])


def runner_claims_the_port(watched: Watched, port: int) -> None:
    """A runner connects, is let in, says hello and claims the port; a second is
    refused (``ZAP_REFUSED``)."""
    ctx = zmq.Context()
    try:
        runner, monitor = connect(ctx, port)
        assert settled(monitor) == (zmq.EVENT_HANDSHAKE_SUCCEEDED, 0)
        runner.send(runner_hello(PROTOCOL_VERSION))
        watched.remote.wait_connected(0, WAIT_S)
        assert (watched.remote.connected[0], watched.remote.problem(0)) == (True, None)
        second, second_monitor = connect(ctx, port)
        assert settled(second_monitor) == (zmq.EVENT_HANDSHAKE_FAILED_AUTH, ZAP_REFUSED)
    finally:
        ctx.destroy(linger=0)


@pytest.mark.parametrize("junk", [b"\x07", b""], ids=["junk", "silent"])
def test_a_stray_answered_after_it_left_does_not_keep_the_port(monkeypatch, capfd, junk):
    port = free_base_port(3)
    watched = Watched(port, monkeypatch)
    ctx = zmq.Context()
    try:
        with watched.remote.doorman.lock:  # the scheduler's thread holds it, waiting
            stray, monitor = connect(ctx, port)
            if junk:
                stray.send(junk, zmq.NOBLOCK)  # queued: its handshake waits on the answer
            watched.wait("asked", 1)
            ctx.destroy(linger=0)
            watched.read_until_disconnected(1)
        watched.wait("answered", 1)  # the stray's request, answered after it left
        runner_claims_the_port(watched, port)
    finally:
        ctx.destroy(linger=0)
        watched.remote.close()
    assert capfd.readouterr().err == ""  # its junk never got past its handshake


def test_a_stray_ignored_for_its_junk_that_reconnects_and_leaves_does_not_keep_the_port(
        monkeypatch, capfd):
    port = free_base_port(3)
    watched = Watched(port, monkeypatch)
    ctx = zmq.Context()
    try:
        stray, monitor = connect(ctx, port)
        assert settled(monitor) == (zmq.EVENT_HANDSHAKE_SUCCEEDED, 0)
        stray.send(b"\x07")  # msgpack 7: not a runner's hello
        with watched.remote.doorman.lock:
            deadline = time.monotonic() + WAIT_S
            while True:  # the scheduler reads the junk and disconnects the stray
                assert time.monotonic() < deadline, watched.events
                watched.remote._events(0)
                if monitor.poll(100) and recv_monitor_message(monitor)["event"] \
                        == zmq.EVENT_DISCONNECTED:
                    break
            watched.wait("asked", 2)  # its socket, still open, connected again
            ctx.destroy(linger=0)
            watched.read_until_disconnected(2)
        watched.wait("answered", 2)  # the second request, answered after it left
        runner_claims_the_port(watched, port)
    finally:
        ctx.destroy(linger=0)
        watched.remote.close()
    err = capfd.readouterr().err.splitlines()
    assert len(err) == 1
    assert err[0].startswith("bench.py: note: ignored a peer from 127.0.0.1:")
    assert err[0].endswith(
        f" on the control port tcp://127.0.0.1:{port} (rank 0): its first message was not "
        f"a runner's hello; it was disconnected"), err
