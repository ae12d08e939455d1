"""A runner started by hand (``bench.py runner``) at the wrong place or in surplus:
refused or told in one line, at once, the scheduler's run unaffected; a runner
interrupted or left by its scheduler ends in one line, leaving no process.

"Another host" is emulated on 127.0.0.1, as in ``test_remote.py``."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
import zmq

from fault_helpers import free_base_port
from remote_launch import Launcher, no_handshake_line, wait_for_steps

CASE = ["--scenario", "decode-steady", "--transport", "tcp", "--num-running", "4",
        "--policies", "send", "--codecs", "msgpack", "--no-single-process", "--quiet",
        "--no-floor"]


def scheduler(launch: Launcher, port: int, steps: int, out: Path,
              *extra: str) -> subprocess.Popen:
    proc = launch.scheduler([*CASE, "--steps", str(steps), "--remote-runners", "--port",
                             str(port), "--output", str(out), *extra])
    assert proc.first_line.startswith("bench.py: waiting up to ")
    return proc


def test_a_second_runner_on_a_taken_control_port_is_refused_at_once(tmp_path):
    port = free_base_port(3)
    with Launcher() as launch:
        sched = scheduler(launch, port, 20000, tmp_path / "r")  # a few seconds: still running
        first = launch.runner(port)
        wait_for_steps(tmp_path / "r", sched)
        t0 = time.monotonic()
        second = launch.runner(port)
        _, err = second.communicate(timeout=30)
        assert time.monotonic() - t0 < 10  # at once (the interpreter's start included)
        assert (second.returncode, err) == (3, (
            f"bench.py runner: error: the scheduler at tcp://127.0.0.1:{port} already has "
            f"its runner on that port (one runner per control port: rank r's is --port's "
            f"base + r); this one was refused\n"))
        _, first_err = first.communicate(timeout=120)
        _, sched_err = sched.communicate(timeout=60)
    assert (sched.returncode, sched_err) == (0, "")
    assert (first.returncode, first_err.splitlines()[-1]) == (
        0, "bench.py runner: the run is complete (1 case(s) served)")


@pytest.mark.parametrize("offset", [1, 2], ids=["SchedulerOutput", "ModelRunnerOutput"])
def test_a_runner_pointed_at_a_data_port_says_it_is_not_the_control_port(tmp_path, offset):
    port = free_base_port(3)
    with Launcher() as launch:
        sched = scheduler(launch, port, 300_000, tmp_path / "r")
        first = launch.runner(port)
        try:
            wait_for_steps(tmp_path / "r", sched)  # the case binds its data ports
            lost = launch.runner(port + offset, "--connect-timeout", "2")
            _, err = lost.communicate(timeout=30)
            assert (lost.returncode, err) == (2, (
                f"bench.py runner: error: the peer at tcp://127.0.0.1:{port + offset} failed "
                f"the ZeroMQ handshake (not a socket of this harness, or one of another kind, "
                f"such as a data port): is it the scheduler's control port? The scheduler "
                f"prints the command with the port to connect to\n"))
        finally:
            sched.send_signal(signal.SIGINT)
            _, sched_err = sched.communicate(timeout=60)
            _, first_err = first.communicate(timeout=30)
    assert (sched.returncode, first.returncode) == (130, 5), (sched_err, first_err)


def test_a_listener_that_never_answers_is_named_within_the_connect_timeout():
    listener = socket.socket()  # accepts, never speaks ZeroMQ
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    try:
        with Launcher() as launch:
            t0 = time.monotonic()
            proc = launch.runner(port, "--connect-timeout", "0.5")
            _, err = proc.communicate(timeout=30)
            elapsed = time.monotonic() - t0
    finally:
        listener.close()
    assert (proc.returncode, err) == (2, no_handshake_line(port, 0.5))
    assert elapsed < 10


def test_the_doorman_admits_one_peer_per_control_port():
    from ipc_bench.wire.remote import ZAP_REFUSED, Doorman, zap_domain

    ctx = zmq.Context()
    doorman = Doorman(ctx, 2)
    try:
        def ask(domain: str) -> bytes:
            return doorman.answer([b"1.0", b"7", domain.encode(), b"10.0.0.2", b"", b"NULL"])[2]

        assert ask(zap_domain(0)) == b"200"
        assert ask(zap_domain(0)) == str(ZAP_REFUSED).encode() == b"400"
        assert ask(zap_domain(1)) == b"200"
        assert ask("another-domain") == b"200"
        assert doorman.admitted == [True, True]
    finally:
        doorman.close()
        ctx.term()


def test_a_runner_whose_scheduler_hangs_mid_case_exits_within_the_peer_timeout(tmp_path):
    port = free_base_port(3)
    with Launcher() as launch:
        sched = scheduler(launch, port, 300_000, tmp_path / "r", "--peer-timeout", "2")
        proc = launch.runner(port)
        try:
            wait_for_steps(tmp_path / "r", sched)
            sched.send_signal(signal.SIGSTOP)
            t0 = time.monotonic()
            _, err = proc.communicate(timeout=30)
            elapsed = time.monotonic() - t0
        finally:
            sched.send_signal(signal.SIGCONT)
        sched.communicate(timeout=60)
    assert 1.5 < elapsed < 10 and proc.returncode == 5
    lines = err.splitlines()
    assert len(lines) == 2 and re.fullmatch(
        r"bench.py runner: no SchedulerOutput for step \d+ within 2 s \(raise --peer-timeout\)",
        lines[1]), err
    assert sched.returncode == 1  # its runner left: the case failed, said in its own line


def test_a_runner_interrupted_mid_case_ends_in_one_line_and_fails_the_case(tmp_path):
    port = free_base_port(3)
    with Launcher() as launch:
        sched = scheduler(launch, port, 300_000, tmp_path / "r")
        proc = launch.runner(port)
        wait_for_steps(tmp_path / "r", sched)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        _, sched_err = sched.communicate(timeout=30)
    assert (proc.returncode, err.splitlines()[1:]) == (
        130, ["bench.py runner: interrupted by SIGINT (exit 130)"])
    assert sched.returncode == 1
    assert sched_err.splitlines()[0].startswith(
        f"bench.py: error: num_running=4/send/msgpack#0: remote runner 0 (control port "
        f"tcp://127.0.0.1:{port}) disconnected (its process ended or its host closed the "
        f"connection), noticed while ")
