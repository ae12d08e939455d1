"""``bench.py runner --connect tcp://localhost:PORT`` connects to 127.0.0.1, the
scheduler's default ``--host``; ``localhost`` is the one host name taken: any other is
refused in the words it always was, and a refusal names the endpoint as typed."""
from __future__ import annotations

import pytest

from ipc_bench.cli.runner import build_parser, connect_endpoint, main as runner_main


@pytest.mark.parametrize("given", ["tcp://localhost:5600", "tcp://LOCALHOST:5600"])
def test_localhost_is_read_as_127_0_0_1(given):
    assert connect_endpoint(given) == "tcp://127.0.0.1:5600"
    assert build_parser().parse_args(["--connect", given]).connect == "tcp://127.0.0.1:5600"


def test_an_ip_address_is_kept_as_given():
    assert connect_endpoint("tcp://127.0.0.1:5601") == "tcp://127.0.0.1:5601"
    assert connect_endpoint("tcp://[::1]:5601") == "tcp://[::1]:5601"


@pytest.mark.parametrize("given, reason", [
    ("tcp://sched.example:5600", "'sched.example' is not an IP address"),
    ("tcp://localhost.localdomain:5600", "'localhost.localdomain' is not an IP address"),
    ("tcp://[localhost]:5600", "an IPv6 address goes in brackets, an IPv4 one does not"),
    ("tcp://localhost:0", "the port must be 1 to 65535"),
])
def test_other_names_and_bad_ports_keep_their_refusal(given, reason, capsys):
    assert runner_main(["--connect", given]) == 2
    assert capsys.readouterr().err == (
        f"bench.py runner: error: argument --connect: {given}: {reason}\n")
