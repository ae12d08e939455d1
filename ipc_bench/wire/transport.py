"""ZeroMQ sockets between the scheduler and runner processes (``channel`` wraps them).

Three sockets per case, all bound by the scheduler and connected by the runner:

- ``s2r``: PUSH -> PULL, one frame per ``SchedulerOutput`` (measured);
- ``r2s``: PUSH -> PULL, one frame per ``ModelRunnerOutput`` (measured);
- ``ctl``: PAIR, control messages (``ipc_bench.wire.control``), never counted.

An empty frame on a data socket is never a valid message; it tells the peer to read
the control socket (phase change, stop or error), so data sockets carry measured
traffic only. ``ipc://`` endpoints live in a private directory (mode 0700) unique to
the run; ``tcp://`` endpoints bind to 127.0.0.1 unless another host is given.

Every receive has a timeout and a liveness check of the peer.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import tempfile
import time
from typing import Callable, Optional

import msgspec
import zmq


#: Receive timeout of one wait slice; between slices the peer's liveness is checked.
POLL_SLICE_MS = 100

def zmtp_frame_bytes(payload_bytes: int) -> int:
    """ZMTP 3.x stream bytes of a one-frame message of ``payload_bytes``.

    A frame is a flags byte, then its size in 1 byte (up to 255) or 8 bytes (above),
    then the payload (RFC 23/ZMTP). TCP/IP headers are not counted.
    """
    return payload_bytes + (2 if payload_bytes <= 255 else 9)


def zmtp_handshake_bytes(socket_type: str) -> int:
    """Bytes one peer sends to open a ZMTP 3.0 connection with the NULL mechanism.

    The 64-byte greeting, then a READY command (flags + 1-byte size + body) whose
    body is ``\\x05READY`` plus the ``Socket-Type`` property (1-byte name length, name,
    4-byte value length, value). PUSH, PULL and PAIR send no ``Identity`` property.
    Counted once per connection and direction, apart from message traffic.
    """
    body = 1 + len("READY") + 1 + len("Socket-Type") + 4 + len(socket_type)
    return 64 + 2 + body


class PeerError(RuntimeError):
    """The peer process died, stopped answering or sent garbage; message is one line."""


class PeerTimeout(PeerError):
    """The peer process is alive but sent nothing within the timeout."""


TRANSPORTS = ("ipc", "tcp")  # the ZeroMQ transports between the processes (--transport)

#: Default bind address of tcp sockets (``--host`` names another).
DEFAULT_HOST = "127.0.0.1"


def check_host(host: str) -> str:
    """Validate a ``--host`` value: an IPv4 or IPv6 address literal (no names, so no
    DNS lookup decides where a benchmark listens). Returns it normalised; raises
    ``ValueError`` (one line) otherwise."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        raise ValueError(f"--host must be an IP address such as 127.0.0.1 or ::1, "
                         f"got {host!r}") from None


def tcp_bind_endpoint(host: str) -> str:
    """``tcp://HOST:*`` (an ephemeral port), brackets around an IPv6 address."""
    return f"tcp://[{host}]:*" if ":" in host else f"tcp://{host}:*"


class Endpoints(msgspec.Struct, frozen=True):
    """ZeroMQ endpoint strings of one case's three sockets."""

    s2r: str
    r2s: str
    ctl: str


class EndpointDir:
    """Private directory for ``ipc://`` socket files; ``cleanup()`` removes it."""

    def __init__(self) -> None:
        self.path = tempfile.mkdtemp(prefix="ipc-bench-")  # mode 0700
        os.chmod(self.path, 0o700)

    def cleanup(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def _configure(sock: zmq.Socket) -> None:
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVTIMEO, POLL_SLICE_MS)
    sock.setsockopt(zmq.SNDTIMEO, POLL_SLICE_MS)


class SchedulerSockets:
    """The scheduler's bound sockets. ``transport``: ``ipc`` or ``tcp``; ``host`` for tcp."""

    def __init__(self, ctx: zmq.Context, transport: str, endpoint_dir: Optional[EndpointDir],
                 host: str = DEFAULT_HOST):
        self.s2r = ctx.socket(zmq.PUSH)
        self.r2s = ctx.socket(zmq.PULL)
        self.ctl = ctx.socket(zmq.PAIR)
        names = {}
        for name, sock in (("s2r", self.s2r), ("r2s", self.r2s), ("ctl", self.ctl)):
            _configure(sock)
            if transport == "ipc":
                assert endpoint_dir is not None
                sock.bind(f"ipc://{endpoint_dir.path}/{name}")
            elif transport == "tcp":
                if ":" in host:
                    sock.setsockopt(zmq.IPV6, 1)
                sock.bind(tcp_bind_endpoint(host))
            else:
                raise ValueError(f"unknown transport {transport!r}")
            names[name] = sock.getsockopt_string(zmq.LAST_ENDPOINT)
        self.endpoints = Endpoints(**names)

    def close(self) -> None:
        for sock in (self.s2r, self.r2s, self.ctl):
            sock.close(linger=0)


class RunnerSockets:
    """The runner's connected sockets."""

    def __init__(self, ctx: zmq.Context, ctl_endpoint: str):
        self.ctl = ctx.socket(zmq.PAIR)
        _configure(self.ctl)
        self.ctl.connect(ctl_endpoint)
        self.s2r: Optional[zmq.Socket] = None
        self.r2s: Optional[zmq.Socket] = None

    def connect_data(self, s2r_endpoint: str, r2s_endpoint: str) -> None:
        self.s2r = self.ctl.context.socket(zmq.PULL)
        self.r2s = self.ctl.context.socket(zmq.PUSH)
        for sock, endpoint in ((self.s2r, s2r_endpoint), (self.r2s, r2s_endpoint)):
            _configure(sock)
            if endpoint.startswith("tcp://["):
                sock.setsockopt(zmq.IPV6, 1)
            sock.connect(endpoint)

    def close(self, linger_ms: int = 0) -> None:
        """Close the sockets; messages still queued are sent for up to ``linger_ms``
        (``ZMQ_LINGER``; 0 discards them, even a control message already sent)."""
        for sock in (self.s2r, self.r2s, self.ctl):
            if sock is not None:
                sock.close(linger=linger_ms)


def recv_frame(sock: zmq.Socket, timeout_s: float, peer_problem: Callable[[], Optional[str]],
               what: str) -> bytes:
    """Receive one frame, waiting at most ``timeout_s`` seconds (plus one slice).

    The first try waits one ``POLL_SLICE_MS`` slice (``RCVTIMEO``); then ``wait_recv``.
    """
    try:
        return sock.recv()
    except zmq.Again:
        return wait_recv(sock, timeout_s, peer_problem, what)


def wait_recv(sock: zmq.Socket, timeout_s: float, peer_problem: Callable[[], Optional[str]],
              what: str) -> bytes:
    """Wait for one frame for at most ``timeout_s`` seconds, in slices.

    ``peer_problem()`` is called every ``POLL_SLICE_MS`` while waiting; a non-None
    return (e.g. "runner process 12 was killed by SIGKILL") raises ``PeerError``
    ("... while waiting for WHAT"), unless a frame the peer sent before it went is
    queued or arrives within one more slice, which is returned first (an empty frame
    announcing its error report). Raises ``PeerTimeout`` ("no WHAT within N s") on
    timeout.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        problem = peer_problem()
        if problem:
            # A peer may send its last message and exit within one wait slice: take
            # what is already on its way (one more slice) before declaring it gone.
            if sock.poll(POLL_SLICE_MS, zmq.POLLIN):
                return sock.recv(zmq.NOBLOCK)
            raise PeerError(f"{problem} while waiting for {what}")
        try:
            return sock.recv()
        except zmq.Again:
            if time.monotonic() > deadline:
                raise PeerTimeout(f"no {what} within {timeout_s:g} s") from None


def send_frame(sock: zmq.Socket, frame: bytes, timeout_s: float,
               peer_problem: Callable[[], Optional[str]], what: str) -> None:
    """Send one frame, waiting at most ``timeout_s`` seconds for the peer to take it.

    Tries without blocking first (the peer is there), then ``wait_send``.
    """
    try:
        sock.send(frame, zmq.NOBLOCK)
    except zmq.Again:
        wait_send(sock, frame, timeout_s, peer_problem, what)


def wait_send(sock: zmq.Socket, frame: bytes, timeout_s: float,
              peer_problem: Callable[[], Optional[str]], what: str) -> None:
    """Wait for the peer to take ``frame`` for at most ``timeout_s`` seconds.

    A PUSH or PAIR socket whose peer is gone (or not yet connected) blocks on send;
    this waits in ``POLL_SLICE_MS`` slices, checking ``peer_problem()`` between them.
    Raises ``PeerError`` ("... while sending WHAT") or ``PeerTimeout``.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        problem = peer_problem()
        if problem:
            raise PeerError(f"{problem} while sending {what}")
        try:
            sock.send(frame)  # blocks at most SNDTIMEO = POLL_SLICE_MS
            return
        except zmq.Again:
            if time.monotonic() > deadline:
                raise PeerTimeout(f"could not send {what} within {timeout_s:g} s") from None
