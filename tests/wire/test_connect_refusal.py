"""A connect that reaches the wrong socket or a control port that has its runner:
``NoHandshake`` / ``HandshakeRefused``, one line, at once (``transport._connect``,
``remote.Doorman``)."""

from __future__ import annotations

import time

import pytest
import zmq

from fault_helpers import free_base_port
from ipc_bench.wire.remote import ZAP_REFUSED, RemoteRunners, runner_hello
from ipc_bench.wire.transport import HandshakeRefused, NoHandshake, RunnerSockets


@pytest.mark.parametrize("kind", [zmq.PUSH, zmq.PULL, zmq.XPUB], ids=["PUSH", "PULL", "XPUB"])
def test_a_control_connect_to_a_data_socket_fails_the_handshake_at_once(kind):
    ctx = zmq.Context()
    data = ctx.socket(kind)
    data.setsockopt(zmq.LINGER, 0)
    port = data.bind_to_random_port("tcp://127.0.0.1")
    try:
        t0 = time.monotonic()
        with pytest.raises(NoHandshake) as err:
            RunnerSockets(ctx, f"tcp://127.0.0.1:{port}", connect_timeout_s=30.0)
        assert time.monotonic() - t0 < 10.0  # not the timeout: the peer said no
        assert str(err.value) == (f"cannot connect to tcp://127.0.0.1:{port}: the ZeroMQ "
                                  f"handshake failed (not a socket of this harness, or one "
                                  f"of another kind)")
        assert err.value.timed_out is False  # the runner's line names no wait
    finally:
        data.close(linger=0)
        ctx.destroy(linger=0)


def test_a_second_peer_on_a_control_port_is_refused_and_the_first_kept():
    port = free_base_port(3)
    remote = RemoteRunners("127.0.0.1", port, 1)
    ctx = zmq.Context()
    try:
        first = RunnerSockets(ctx, f"tcp://127.0.0.1:{port}")
        with pytest.raises(HandshakeRefused) as err:
            RunnerSockets(ctx, f"tcp://127.0.0.1:{port}")
        assert err.value.status_code == ZAP_REFUSED
        assert str(err.value) == (f"cannot connect to tcp://127.0.0.1:{port}: the peer "
                                  f"refused the connection (ZAP status 400)")
        first.ctl.send(runner_hello(14))  # the runner's hello claims the port
        remote.wait_connected(0, 5.0)
        assert remote.connected == [True] and remote.problem(0) is None
        first.ctl.send(b"still the runner's")  # the first connection still carries
        assert remote.ctls[0].poll(5000) and remote.ctls[0].recv() == b"still the runner's"
        first.close()
    finally:
        ctx.destroy(linger=0)
        remote.close()


def test_a_doorman_that_cannot_bind_is_one_line_and_leaves_no_thread():
    import threading

    from ipc_bench.wire.remote import Doorman
    from ipc_bench.wire.transport import EndpointError

    ctx = zmq.Context()
    taken = ctx.socket(zmq.REP)
    taken.bind(Doorman.ENDPOINT)
    try:
        with pytest.raises(EndpointError) as err:
            Doorman(ctx, 1)
        assert str(err.value).startswith("cannot bind inproc://zeromq.zap.01 (the control "
                                         "ports' ZAP handler): Address already in use")
        assert not [t for t in threading.enumerate() if t.name == "ipc-bench-doorman"]
    finally:
        taken.close(linger=0)
        ctx.term()
