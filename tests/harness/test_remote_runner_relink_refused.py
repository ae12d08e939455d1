"""A runner started by hand whose connection ended before the scheduler's first message
connects again (``harness.remote_runner._SchedulerWatch.relink``); where the port
refuses that connection with the scheduler's ZAP status for a port that has its runner
(``wire.remote.ZAP_REFUSED``: another runner took the port meanwhile), the runner says
so in the line a first connect refused so gets, and exits 3 (``EXIT_HANDSHAKE``). It
said "the scheduler ... closed the connection" and exited 5, as if the scheduler had
gone, where the scheduler was there and had refused it.

Ordered, not timed: a stand-in scheduler (a bound PAIR) reads the runner's hello, then
a ZAP handler that refuses every peer with that status is started, and only then is the
runner's connection shut down from the scheduler's end."""

from __future__ import annotations

import threading

import zmq
from zmq.auth.thread import ThreadAuthenticator

from fault_helpers import free_base_port
from ipc_bench.harness.remote_runner import serve_remote
from ipc_bench.wire.remote import ZAP_REFUSED, _peer_address, _shut_down, hello_version
from ipc_bench.wire.transport import recv_monitor_message

WAIT_MS = 60_000


class _Refusing(ThreadAuthenticator):
    """A ZAP handler that refuses every peer with ``ZAP_REFUSED``, as the scheduler's
    ``wire.remote.Doorman`` does on a port that has its runner."""

    def _send_zap_reply(self, request_id, status_code, status_text, user_id="anonymous"):
        super()._send_zap_reply(request_id, str(ZAP_REFUSED).encode(), b"taken", user_id)


def test_a_relink_refused_for_a_taken_port_is_said_as_a_refusal_not_a_scheduler_gone(
        capsys):
    port = free_base_port(1)
    endpoint = f"tcp://127.0.0.1:{port}"
    ctx = zmq.Context()
    auth = _Refusing(ctx)
    codes: list[int] = []
    runner = threading.Thread(target=lambda: codes.append(
        serve_remote(endpoint, connect_timeout_s=60.0)))
    try:
        scheduler = ctx.socket(zmq.PAIR)
        scheduler.setsockopt(zmq.ZAP_DOMAIN, b"ipc-bench-test")
        scheduler.setsockopt(zmq.RCVTIMEO, WAIT_MS)
        monitor = scheduler.get_monitor_socket(zmq.EVENT_ACCEPTED)
        scheduler.bind(endpoint)
        runner.start()
        assert hello_version(scheduler.recv()) is not None  # the runner's hello
        assert monitor.poll(WAIT_MS)
        fd = int(recv_monitor_message(monitor)["value"])

        auth.start()  # from now on every peer is refused, as a port that has its runner
        _shut_down(fd, _peer_address(fd))  # the scheduler's end closes the connection
        runner.join(WAIT_MS / 1000)
        assert not runner.is_alive()
    finally:
        auth.stop()
        ctx.destroy(linger=0)
        runner.join(WAIT_MS / 1000)
    err = capsys.readouterr().err.splitlines()
    assert (codes, err) == ([3], [
        f"bench.py runner: connected to {endpoint}; serving cases until the scheduler's "
        f"run ends",
        f"bench.py runner: error: the scheduler at {endpoint} already has its runner on "
        f"that port (one runner per control port: rank r's is --port's base + r); this "
        f"one was refused"])
