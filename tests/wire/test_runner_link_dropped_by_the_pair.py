"""A runner started by hand whose connection the scheduler's bound PAIR did not take
still claims its port: a PAIR takes one pipe at a time, and libzmq ends a second one
without a word (``pair_t::xattach_pipe``), so a runner that connects while a stray's
pipe is still attached (the stray gone, its end not yet through to the PAIR) had its
connection kept up with nothing reading it: its hello was never read, the scheduler
waited out its --startup-timeout ("no remote runner connected ...", exit 1) and the
runner exited 5. The scheduler now ends such a connection
(``wire.remote.RemoteRunners._cut_if_dropped``) and the runner connects again with a
fresh socket and says hello once more (``harness.remote_runner._SchedulerWatch``).

Ordered, not timed. The stray is attached, then closes; once its connection is past
(libzmq closed its fd, which follows its DISCONNECTED event) the runner connects, and
the Doorman answers it without its read of the port (``_read_hello``), which would
have had the PAIR take in the stray's end: the stand-in for an I/O thread that
delivered that end just after the read (seen once in CI, a loaded 2-core machine).
Nothing touches the PAIR until the runner's handshake completed (its
HANDSHAKE_SUCCEEDED, which libzmq reports after it queued the runner's pipe to the
PAIR), so the PAIR ends the runner's pipe whatever the timing."""

from __future__ import annotations

import threading
import time

import zmq

import ipc_bench.wire.remote as remote_mod
from fault_helpers import free_base_port
from ipc_bench.wire.remote import RemoteRunners
from remote_launch import Launcher

WAIT_S = 60.0


def _until(done, what: str, remote: RemoteRunners = None) -> None:
    """Wait (at most ``WAIT_S``) until ``done()``, reading rank 0's events where
    ``remote`` is given (as the scheduler's waits do)."""
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, what
        if remote is not None:
            remote._events(0)
        time.sleep(0.01)


def test_a_runner_whose_connection_the_pair_dropped_connects_again_and_claims_the_port(
        monkeypatch):
    port = free_base_port(3)
    cut: list[str] = []
    shut_down = remote_mod._shut_down

    def recorded(fd: int, address: str, *how: int) -> None:
        cut.append(address)
        shut_down(fd, address, *how)

    monkeypatch.setattr(remote_mod, "_shut_down", recorded)
    remote = RemoteRunners("127.0.0.1", port, 1)
    answered = threading.Semaphore(0)
    answer = remote.doorman.answer

    def counted(request):
        reply = answer(request)
        answered.release()
        return reply

    remote.doorman.answer = counted  # the thread calls self.answer for each request
    ctx = zmq.Context()
    closed = False
    try:
        with Launcher() as launch:
            runner = launch.runner(port, "--connect-timeout", "100", held=True)
            stray = ctx.socket(zmq.PAIR)
            monitor = stray.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED)
            stray.connect(f"tcp://127.0.0.1:{port}")
            assert monitor.poll(int(WAIT_S * 1000)), "the stray's handshake"
            assert answered.acquire(timeout=WAIT_S)
            _until(lambda: remote._attached[0] is not None, "the stray attached", remote)
            fd, address = remote._attached[0]
            stray.disable_monitor()
            monitor.close(linger=0)
            stray.close(linger=0)
            _until(lambda: remote_mod._peer_address(fd) != address, "the stray's end")
            remote._read_hello = lambda rank: None  # the Doorman's answer, without it
            launch.release(runner)
            assert answered.acquire(timeout=WAIT_S)  # the runner's request, answered
            assert remote._monitors[0].poll(int(WAIT_S * 1000))  # its HANDSHAKE_SUCCEEDED
            del remote._read_hello
            remote.wait_connected(0, WAIT_S)
            assert (remote.connected[0], remote.problem(0)) == (True, None)
            closed = True
            remote.close()  # Goodbye: the run ends
            _, err = runner.communicate(timeout=WAIT_S)
    finally:
        ctx.destroy(linger=0)
        if not closed:
            remote.close()
    # the runner's first connection, ended by the scheduler: not the stray's
    assert len(cut) == 1 and cut[0].startswith("127.0.0.1:") and cut[0] != address, cut
    assert (runner.returncode, err.splitlines()) == (0, [
        f"bench.py runner: connected to tcp://127.0.0.1:{port}; serving cases until the "
        f"scheduler's run ends",
        "bench.py runner: the run is complete (0 case(s) served)"])
