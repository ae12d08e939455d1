"""A ZeroMQ peer that connects to a control port of ``--remote-runners`` and leaves
before the runner (a DEALER, REQ or PUSH, which libzmq lets past the ZAP handler before
it finds the socket kind wrong; a PAIR that sends junk or nothing) does not claim the
port: the runner started after it says hello, claims it and the run completes
(``wire.remote``: the runner's hello claims a port, nothing else does)."""

from __future__ import annotations

import re

import pytest
import zmq

from fault_helpers import free_base_port
from ipc_bench.wire.transport import recv_monitor_message
from remote_launch import Launcher, wait_for_steps

CASE = ["--scenario", "decode-steady", "--transport", "tcp", "--num-running", "4",
        "--steps", "40", "--policies", "send", "--codecs", "msgpack", "--no-single-process",
        "--quiet", "--startup-timeout", "100"]

#: What the stray's monitor reports once the scheduler's end has dealt with it: its
#: ZeroMQ handshake completed (a PAIR) or failed (another kind), or it was closed.
_SETTLED = (zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
            | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_AUTH
            | zmq.EVENT_DISCONNECTED)


def stray(port: int, kind: int, junk: bytes = b"") -> bool:
    """Connect a ``kind`` socket to the control port, wait until its ZeroMQ handshake
    succeeded or failed, send ``junk`` (if any) and close it; whether it succeeded."""
    ctx = zmq.Context()
    try:
        sock = ctx.socket(kind)
        monitor = sock.get_monitor_socket(_SETTLED)
        sock.connect(f"tcp://127.0.0.1:{port}")
        assert monitor.poll(30_000), "the stray's handshake did not settle"
        event = recv_monitor_message(monitor)["event"]
        if junk:
            sock.send(junk, zmq.NOBLOCK)
        sock.disable_monitor()
        monitor.close(linger=0)
        sock.close(linger=2000 if junk else 0)  # the junk goes out first
        return event == zmq.EVENT_HANDSHAKE_SUCCEEDED
    finally:
        ctx.term()


@pytest.mark.parametrize("kind,junk,paired", [
    (zmq.DEALER, b"", False),  # the socket kind refused, after the ZAP handler's answer
    (zmq.REQ, b"", False),
    (zmq.PUSH, b"", False),
    (zmq.PAIR, b"\x07", True),  # msgpack 7: not a control message
    (zmq.PAIR, b"", True),
], ids=["DEALER", "REQ", "PUSH", "PAIR-junk", "PAIR-silent"])
def test_a_stray_zmq_peer_before_the_runner_does_not_claim_the_port(tmp_path, kind, junk,
                                                                     paired):
    port = free_base_port(3)
    with Launcher() as launch:
        sched = launch.scheduler([*CASE, "--remote-runners", "--port", str(port)],
                                 tmp_path / "r")
        assert sched.first_line.startswith("bench.py: waiting up to 100 s for 1 runner(s)")
        assert stray(port, kind, junk) is paired
        runner = launch.runner(port)
        (runner_rc, _, runner_err), (sched_rc, _, err) = launch.finish(runner, sched)
    assert runner_rc == 0, runner_err
    assert runner_err.splitlines()[-1] == ("bench.py runner: the run is complete "
                                           "(1 case(s) served)")
    assert sched_rc == 0, err
    # the junk is ignored in one line where it was read before its peer had left
    note = (rf"bench\.py: note: ignored a peer from 127\.0\.0\.1:\d+ on the control port "
            rf"tcp://127\.0\.0\.1:{port} \(rank 0\): its first message was not a runner's "
            rf"hello; it was disconnected")
    lines = err.splitlines()
    assert lines == [] or (junk and len(lines) == 1 and re.fullmatch(note, lines[0])), err


def test_a_second_runner_after_the_first_said_hello_is_still_refused(tmp_path):
    port = free_base_port(3)
    with Launcher() as launch:
        longer = [a if a != "40" else "20000" for a in CASE]  # a few seconds: still running
        sched = launch.scheduler([*longer, "--remote-runners", "--port", str(port),
                                  "--no-floor"], tmp_path / "r")
        assert stray(port, zmq.DEALER) is False
        first = launch.runner(port)
        wait_for_steps(tmp_path / "r", sched)
        second = launch.runner(port)
        _, second_err = second.communicate(timeout=120)
        (first_rc, _, first_err), (sched_rc, _, err) = launch.finish(first, sched)
    assert (second.returncode, second_err) == (3, (
        f"bench.py runner: error: the scheduler at tcp://127.0.0.1:{port} already has its "
        f"runner on that port (one runner per control port: rank r's is --port's base + r); "
        f"this one was refused\n"))
    assert (sched_rc, err, first_rc) == (0, "", 0), (err, first_err)
