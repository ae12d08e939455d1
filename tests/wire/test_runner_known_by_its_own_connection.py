"""The connection ``--remote-runners`` takes for its runner is the one the runner's
hello came in on (``ZMQ_SRCFD``), not the one the Doorman's answer was tied to: a
silent TCP connection accepted just before the runner's (a port scan, a health check,
a peer slow to greet) neither ends the runner when it closes ("remote runner 0 ...
disconnected" of a runner still up) nor hides the runner's own end.

Ordered, not timed: the silent connection's acceptance is read before the runner
connects, and its end before the runner's."""

from __future__ import annotations

import socket
import time

import zmq

from fault_helpers import free_base_port
from ipc_bench.wire.control import PROTOCOL_VERSION
from ipc_bench.wire.remote import RemoteRunners, runner_hello

WAIT_S = 60.0


def _until(remote: RemoteRunners, done, what: str) -> None:
    """Read rank 0's events (as the scheduler's waits do) until ``done()``."""
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, what
        remote._events(0)
        remote._monitors[0].poll(100)


def test_a_silent_connection_accepted_before_the_runner_is_not_taken_for_it():
    port = free_base_port(3)
    remote = RemoteRunners("127.0.0.1", port, 1)
    ctx = zmq.Context()
    silent = socket.create_connection(("127.0.0.1", port))  # never greets
    try:
        _until(remote, lambda: len(remote._live[0]) == 1, "the silent connection accepted")
        runner = ctx.socket(zmq.PAIR)
        runner.connect(f"tcp://127.0.0.1:{port}")
        runner.send(runner_hello(PROTOCOL_VERSION))
        remote.wait_connected(0, WAIT_S)
        silent.close()
        _until(remote, lambda: len(remote._live[0]) == 1, "the silent connection's end")
        assert (remote.connected[0], remote.problem(0)) == (True, None)
        runner.close(linger=0)
        _until(remote, lambda: remote.gone[0], "the runner's end")
        assert remote.problem(0) == (f"{remote.name(0)} disconnected (its process ended or "
                                     f"its host closed the connection)")
    finally:
        silent.close()
        ctx.destroy(linger=0)
        remote.close()
