"""``python bench.py runner --connect tcp://SCHEDULER:PORT [--allow-pickle-over-tcp]
[--cpu-affinity SET]``: a runner started by hand on another host, for a run started
with ``--remote-runners``.

It connects to the scheduler's control port (``PORT``: ``--port``'s base plus the
rank; the scheduler prints the command for each rank) and serves the run's cases until
the run ends (``harness.remote_runner``: its exit codes). A missing or malformed
``--connect`` (not ``tcp://ADDR:PORT`` with an IP address or ``localhost``, read as
127.0.0.1; a wildcard address, a port outside 1-65535) prints one line and exits 2, as does an address it cannot connect
to or a peer there that fails the ZeroMQ handshake (a data port, not the control
port) or does not answer it within ``--connect-timeout``; a control port that already
has its runner refuses it at once (one line, exit 3).

``--cpu-affinity SET`` pins it to one CPU set (``harness.affinity.parse_cpus``: the
syntax of each set of the scheduler's ``--cpu-affinity``) before it connects; a
malformed set, a CPU this process may not run on, or a platform without
``os.sched_setaffinity`` is refused in one line, exit 2, as the scheduler's option is.
Each case's ``Ready`` then names the set it runs on, recorded in the case's
``cpus_allowed`` (``harness.remote_runner``).
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys

from ipc_bench.cli.once import OnceParser
from ipc_bench.cli.options import UsageError
from ipc_bench.errors import one_line
from ipc_bench.wire.transport import (CONNECT_TIMEOUT_S, check_endpoint, split_tcp_endpoint,
                                      tcp_endpoint)

PROG = "bench.py runner"
EXIT_USAGE = 2
#: Longest ``--connect-timeout`` (s).
MAX_CONNECT_TIMEOUT_S = 3600.0


class _Parser(OnceParser):
    def error(self, message: str):  # one line, exit 2
        raise UsageError(message)


#: The one host name ``--connect`` takes, and the address it stands for: the
#: scheduler's default ``--host``. Any other name is refused (``not an IP address``).
LOCALHOST = ("localhost", "127.0.0.1")


def connect_endpoint(text: str) -> str:
    """``--connect``'s value: ``tcp://ADDR:PORT``, ADDR an IP address of the scheduler
    (IPv6 in brackets, no wildcard or multicast), PORT 1-65535; ``localhost`` (any
    case, without brackets) is read as ``127.0.0.1`` (``LOCALHOST``):
    ``tcp://localhost:5600`` gives ``tcp://127.0.0.1:5600``."""
    try:
        host, port = split_tcp_endpoint(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected tcp://ADDR:PORT (the scheduler's address and control port; IPv6 in "
            f"brackets), got {text!r}") from None
    given = text  # a refusal names the endpoint as typed (tcp://localhost:0)
    if host.lower() == LOCALHOST[0] and not text.startswith("tcp://["):
        text = tcp_endpoint(LOCALHOST[1], port)
    try:
        check_endpoint(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).replace(text, given, 1)) from None
    address = ipaddress.ip_address(split_tcp_endpoint(text)[0])
    if address.is_unspecified or address.is_multicast:
        raise argparse.ArgumentTypeError(
            f"{text}: {address} is not an address to connect to; give the scheduler's "
            f"address")
    return text


def _connect_timeout(text: str) -> float:
    """``--connect-timeout``: seconds, 0.1 to ``MAX_CONNECT_TIMEOUT_S``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") \
            from None
    if not 0.1 <= value <= MAX_CONNECT_TIMEOUT_S:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be 0.1 to {MAX_CONNECT_TIMEOUT_S:g} s, "
                                         f"got {text}")
    return value


def _cpu_set(text: str):
    """``--cpu-affinity``: one CPU set (``affinity.parse_cpus``, ``RUNNER_SYNTAX``)."""
    from ipc_bench.harness.affinity import RUNNER_SYNTAX, AffinityError, parse_cpus

    try:
        return parse_cpus(text, text, RUNNER_SYNTAX)
    except AffinityError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description=(
        "A runner on this host for a bench.py run started with --remote-runners on the "
        "scheduler's host: serves its cases until the run ends."))
    p.add_argument("--connect", required=True, type=connect_endpoint, metavar="tcp://ADDR:PORT",
                   help="the scheduler's address and the control port of this runner's "
                   "rank (--port's base + rank; the scheduler prints the command). One "
                   "runner per control port: a port that has its runner refuses another "
                   "as it connects (one line, exit 3)")
    p.add_argument("--connect-timeout", type=_connect_timeout, default=CONNECT_TIMEOUT_S,
                   metavar="S", help=f"how long to wait for the scheduler's ZeroMQ handshake "
                   f"when connecting (seconds, 0.1 to {MAX_CONNECT_TIMEOUT_S:g}; default "
                   f"{CONNECT_TIMEOUT_S:g}); a peer that does not complete it (not the "
                   f"control port) ends this runner with one line, exit 2")
    p.add_argument("--allow-pickle-over-tcp", action="store_true",
                   help="decode pickle from the scheduler (pickle runs code on load: only "
                   "if the scheduler's host and the network between are trusted)")
    p.add_argument("--cpu-affinity", type=_cpu_set, metavar="SET", help=(
        "pin this runner to CPUs (as taskset) before it connects: one set, a CPU N, a "
        "range N-M, or such items joined by + (1, 2-3, 0+2-3); each CPU one this process "
        "may run on. Linux only. The set it runs on is recorded per case (summary.json "
        "cpus_allowed, as runner or rank N)"))
    return p


def pin(cpus) -> None:
    """Pin this process to ``cpus`` (``--cpu-affinity``); ``UsageError`` (one line) on
    a platform without ``os.sched_setaffinity`` or for a CPU this process may not run
    on (``affinity.check_affinity``)."""
    from ipc_bench.harness.affinity import AffinityError, check_affinity

    try:
        check_affinity((cpus,))
    except AffinityError as exc:
        raise UsageError(str(exc)) from None
    os.sched_setaffinity(0, cpus)


def main(argv: list[str]) -> int:
    """The runner command; returns its exit code (2 on bad input)."""
    try:
        args = build_parser().parse_args(argv)
        if args.cpu_affinity is not None:
            pin(args.cpu_affinity)
    except UsageError as exc:
        print(one_line(f"{PROG}: error: {exc}"), file=sys.stderr)
        return EXIT_USAGE
    from ipc_bench.harness.remote_runner import serve_remote

    return serve_remote(args.connect, args.allow_pickle_over_tcp, args.connect_timeout,
                        pinned=args.cpu_affinity is not None)
