"""A runner started by hand connects again where its connection ended before the
scheduler's first message (``harness.remote_runner._SchedulerWatch.relink``), at most
``MAX_RELINKS`` times: a peer that ends every connection (not this harness's scheduler,
whose port ends only one its PAIR did not take) ends the runner with the scheduler-gone
line and exit 5, saying how many times, where the runner went on connecting for good.

Ordered, not timed: a stand-in scheduler (a bound PAIR) reads each hello, then shuts
that connection down from its end."""

from __future__ import annotations

import threading

import zmq

from fault_helpers import free_base_port
from ipc_bench.harness.remote_runner import MAX_RELINKS, serve_remote
from ipc_bench.wire.remote import _peer_address, _shut_down, hello_version
from ipc_bench.wire.transport import recv_monitor_message

WAIT_MS = 60_000


def test_a_peer_that_ends_every_connection_ends_the_runner_after_the_last_relink(capsys):
    port = free_base_port(1)
    endpoint = f"tcp://127.0.0.1:{port}"
    ctx = zmq.Context()
    codes: list[int] = []
    runner = threading.Thread(target=lambda: codes.append(
        serve_remote(endpoint, connect_timeout_s=60.0)))
    try:
        scheduler = ctx.socket(zmq.PAIR)
        scheduler.setsockopt(zmq.RCVTIMEO, WAIT_MS)
        monitor = scheduler.get_monitor_socket(zmq.EVENT_ACCEPTED)
        scheduler.bind(endpoint)
        runner.start()
        for _ in range(MAX_RELINKS + 1):  # the first connection and every relink
            assert hello_version(scheduler.recv()) is not None  # one hello a connection
            assert monitor.poll(WAIT_MS)
            fd = int(recv_monitor_message(monitor)["value"])
            _shut_down(fd, _peer_address(fd))
        runner.join(WAIT_MS / 1000)
        assert not runner.is_alive()
        assert not scheduler.poll(200)  # no further hello came
    finally:
        ctx.destroy(linger=0)
        runner.join(WAIT_MS / 1000)
    err = capsys.readouterr().err.splitlines()
    assert (codes, err[-1]) == ([5], (
        f"bench.py runner: the scheduler at {endpoint} closed the connection "
        f"{MAX_RELINKS + 1} times before its first message, noticed while waiting for "
        f"the next case or the end of the run"))
    assert MAX_RELINKS == 8
