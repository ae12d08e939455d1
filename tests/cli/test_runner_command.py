"""``bench.py runner`` on bad input and interrupted: one line, its exit code, no
process left (the runner has no children; ``Popen.wait`` reaps it)."""

from __future__ import annotations

import signal
import socket

import pytest
import zmq

from fault_helpers import processes_matching
from remote_launch import Launcher, read_line
from ipc_bench import cli


def _run_main(argv, capsys) -> tuple[int, list[str], str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, err.splitlines(), out


EXPECTED_TCP = ("argument --connect: expected tcp://ADDR:PORT (the scheduler's address and "
                "control port; IPv6 in brackets)")
#: (argv after "runner", the exact error after "bench.py runner: error: ")
CASES = [
    (["--connect", "udp://127.0.0.1:5600"], f"{EXPECTED_TCP}, got 'udp://127.0.0.1:5600'"),
    (["--connect", "127.0.0.1:5600"], f"{EXPECTED_TCP}, got '127.0.0.1:5600'"),
    (["--connect", "tcp://127.0.0.1:999999"], f"{EXPECTED_TCP}, got 'tcp://127.0.0.1:999999'"),
    # a port in other digits than ASCII ones (full-width) is no port
    (["--connect", "tcp://127.0.0.1:\uff15\uff16\uff10\uff10"],
     f"{EXPECTED_TCP}, got 'tcp://127.0.0.1:\uff15\uff16\uff10\uff10'"),
    (["--connect", "tcp://no-such-host.invalid:5600"], "argument --connect: "
     "tcp://no-such-host.invalid:5600: 'no-such-host.invalid' is not an IP address"),
    (["--connect", "tcp://127.0.0.1:5600", "--connect-timeout", "0"],
     "argument --connect-timeout: must be 0.1 to 3600 s, got 0"),
    (["--connect", "tcp://127.0.0.1:5600", "--connect-timeout", "nan"],
     "argument --connect-timeout: must be 0.1 to 3600 s, got nan"),
    (["--connect", "tcp://127.0.0.1:5600", "--connect-timeout", "x"],
     "argument --connect-timeout: expected a number of seconds, got 'x'"),
]


@pytest.mark.parametrize("argv,message", CASES, ids=[" ".join(a) for a, _ in CASES])
def test_bad_runner_input_is_one_line_and_exit_2(argv, message, capsys):
    code, lines, out = _run_main(["runner", *argv], capsys)
    assert (code, lines, out) == (2, [f"bench.py runner: error: {message}"], "")


def test_ctrl_c_while_waiting_for_the_scheduler_to_answer_ends_in_one_line():
    listener = socket.socket()  # a scheduler's host still starting: accepts, says nothing
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(30)
    port = listener.getsockname()[1]
    try:
        with Launcher() as launch:
            proc = launch.runner(port, "--connect-timeout", "60")
            conn, _ = listener.accept()  # the runner waits for the ZeroMQ handshake now
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=30)
            conn.close()
    finally:
        listener.close()
    assert (proc.returncode, err) == (130, "bench.py runner: interrupted by SIGINT (exit 130)\n")
    assert processes_matching("runner", "--connect", f"tcp://127.0.0.1:{port}") == []


def test_ctrl_c_while_waiting_for_the_first_case_ends_in_one_line():
    ctx = zmq.Context()
    sched = ctx.socket(zmq.PAIR)  # a scheduler that has not started its first case
    port = sched.bind_to_random_port("tcp://127.0.0.1")
    try:
        with Launcher() as launch:
            proc = launch.runner(port)
            first = read_line(proc, "first line of the runner")
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=30)
    finally:
        sched.close(linger=0)
        ctx.term()
    assert first == (f"bench.py runner: connected to tcp://127.0.0.1:{port}; serving cases "
                     f"until the scheduler's run ends\n")
    assert (proc.returncode, err) == (130, "bench.py runner: interrupted by SIGINT (exit 130)\n")


def test_the_runner_help_names_its_refusals():
    from ipc_bench.cli.runner import build_parser

    text = " ".join(build_parser().format_help().split())
    assert ("One runner per control port: a port that has its runner refuses another as it "
            "connects (one line, exit 3)") in text
    assert ("a peer that does not complete it (not the control port) ends this runner with "
            "one line, exit 2") in text
