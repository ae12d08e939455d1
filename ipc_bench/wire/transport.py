"""ZeroMQ sockets between the scheduler and runner processes (``channel`` wraps them).

Three sockets per case, all bound by the scheduler and connected by the runner:

- ``s2r``: PUSH -> PULL, one frame per ``SchedulerOutput`` (measured);
- ``r2s``: PUSH -> PULL, one frame per ``ModelRunnerOutput`` (measured);
- ``ctl``: PAIR, control messages (``ipc_bench.wire.control``), never counted.

An empty frame on a data socket is never a valid message; it tells the peer to read
the control socket (phase change, stop or error), so data sockets carry measured
traffic only. ``ipc://`` endpoints live in a private directory (mode 0700) unique to
the case, ``TMPDIR/ipc-bench-<pid>-XXXXXXXX`` (``EndpointDir``, named for the process
that makes and removes it); making one removes those that processes which no longer run
left in the same folder (``leftovers``). ``tcp://`` endpoints bind to 127.0.0.1 unless
another host is given.

Every receive has a timeout and a liveness check of the peer. Setting up never hangs:
a socket that cannot be bound or connected raises ``EndpointError`` (one line naming
the endpoint and the reason) after closing every socket opened so far, a connect
waits at most ``CONNECT_TIMEOUT_S`` for the ZeroMQ handshake, and every socket has
``ZMQ_LINGER`` 0 so that ``Context.destroy(linger=0)`` returns at once.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import re
import shutil
import struct
import sys
import tempfile
import time
from typing import Callable, Optional, Sequence

import msgspec
import zmq

from ipc_bench.errors import (fd_limit_text, fd_shortage_text, fds_exhausted, one_line,
                              out_of_fds, zmq_context)
from ipc_bench.wire import leftovers


#: Receive timeout of one wait slice; between slices the peer's liveness is checked.
POLL_SLICE_MS = 100
#: Longest wait of a connecting socket for its ZeroMQ handshake with the bound peer
#: (locally it takes a millisecond; a refused connection fails at once).
CONNECT_TIMEOUT_S = 10.0
#: Longest ``ipc://`` socket path in bytes (``sockaddr_un.sun_path`` less its NUL).
IPC_PATH_MAX_BYTES = getattr(zmq, "IPC_PATH_MAX_LEN", 0) or 107

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


def noticed(problem: str, doing: str) -> str:
    """The line for a peer's ``problem`` (how it ended, with its last line: ``runner
    process 7 exited with code 5 (runner: ...)``) that this end found while ``doing``
    (``sending SchedulerOutput for step 1``): ``PROBLEM, noticed while DOING``. The
    peer may have ended long before (a runner that gave up waiting for that very
    message): the clause says when this end found out, not when the peer ended."""
    return f"{problem}, noticed while {doing}"


class EndpointError(RuntimeError):
    """A socket could not be set up: its folder not created, its endpoint not bound
    or not connected. The message is one line: ``cannot bind ENDPOINT: REASON``,
    ``cannot connect to ENDPOINT: REASON`` or ``cannot create a socket folder in
    DIR: REASON``."""

    def __init__(self, message: str):
        super().__init__(one_line(message))


class NoHandshake(EndpointError):
    """A connect reached a listener that did not complete the ZeroMQ handshake: it
    closed the connection during it (a socket of an incompatible type, e.g. a PAIR
    connecting to a PUSH port), failed it (not ZeroMQ), or did not answer within the
    connect timeout (``timed_out``: only then did the connect wait the whole timeout)."""

    def __init__(self, message: str, timed_out: bool = False):
        super().__init__(message)
        self.timed_out = timed_out


class HandshakeRefused(EndpointError):
    """A connect whose ZeroMQ handshake the bound peer's ZAP handler (RFC 27) denied
    (``ZMQ_EVENT_HANDSHAKE_FAILED_AUTH``): ``status_code`` is the handler's (400 for a
    control port that already has its runner, ``wire.remote``)."""

    def __init__(self, message: str, status_code: int):
        super().__init__(message)
        self.status_code = status_code


#: How the two processes talk (--transport): ZeroMQ over ``ipc`` or ``tcp``, or ``shm`` /
#: ``shm-block``: the scheduler -> runner frames through the shared-memory ring
#: (``wire.shm_ring``; its reader spins as vLLM's, or blocks), the replies and control
#: messages over ``ipc`` sockets (so these bind as ``ipc``).
TRANSPORTS = ("ipc", "tcp", "shm", "shm-block")

#: Default bind address of tcp sockets (``--host`` names another).
DEFAULT_HOST = "127.0.0.1"


def check_host(host: str) -> str:
    """Validate a ``--host`` value: an IPv4 or IPv6 address literal (no other names, so
    no DNS lookup decides where a benchmark listens), or ``localhost`` (any case), read
    as ``127.0.0.1`` as a runner's ``--connect`` reads it, not a multicast or broadcast
    address (those bind but cannot be connected to). Returns it normalised
    (``"localhost"`` gives ``"127.0.0.1"``); raises ``ValueError`` (one line) otherwise.
    Whether the address is one of this machine's shows when it is bound
    (``check_endpoints``)."""
    if host.lower() == "localhost":
        return DEFAULT_HOST
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(one_line(f"--host must be an IP address such as 127.0.0.1 or ::1 "
                                  f"(or localhost), got {host!r}")) from None
    if address.is_multicast or address == ipaddress.IPv4Address("255.255.255.255"):
        kind = "a multicast" if address.is_multicast else "the broadcast"
        raise ValueError(f"--host {address} is {kind} address; give an address of this "
                         f"machine such as 127.0.0.1 or ::1")
    return str(address)


def tcp_bind_endpoint(host: str) -> str:
    """``tcp://HOST:*`` (an ephemeral port), brackets around an IPv6 address."""
    return f"tcp://[{host}]:*" if ":" in host else f"tcp://{host}:*"


_TCP_ENDPOINT = re.compile(r"tcp://(?:\[(?P<v6>[^\]]*)\]|(?P<v4>[^:\[\]]*)):(?P<port>[0-9]{1,5})")


def tcp_endpoint(host: str, port: int) -> str:
    """``tcp://HOST:PORT``, brackets around an IPv6 address."""
    return f"tcp://[{host}]:{port}" if ":" in host else f"tcp://{host}:{port}"


def split_tcp_endpoint(endpoint: str) -> tuple[str, int]:
    """``(host, port)`` of a ``tcp://ADDR:PORT`` endpoint (``check_endpoint``'s form);
    ``ValueError`` for anything else."""
    match = _TCP_ENDPOINT.fullmatch(endpoint)
    if match is None:
        raise ValueError(one_line(f"expected tcp://ADDR:PORT, got {endpoint!r}"))
    return (match["v6"] if match["v6"] is not None else match["v4"]), int(match["port"])


def check_endpoint(endpoint: str) -> str:
    """Validate an endpoint to connect to: ``ipc://PATH`` (an absolute path of at
    most ``IPC_PATH_MAX_BYTES`` UTF-8 bytes) or ``tcp://ADDR:PORT`` (an IP address
    literal, IPv6 in brackets, port 1-65535). Returns it; raises ``ValueError`` (one
    line) otherwise."""
    if endpoint.startswith("ipc://"):
        problem = _ipc_path_problem(endpoint[len("ipc://"):])
        if problem:
            raise ValueError(one_line(f"{endpoint}: {problem}"))
        return endpoint
    match = _TCP_ENDPOINT.fullmatch(endpoint)
    if match is None:
        raise ValueError(one_line(f"expected ipc://PATH or tcp://ADDR:PORT, got {endpoint!r}"))
    host = match["v6"] if match["v6"] is not None else match["v4"]
    if (":" in host) != (match["v6"] is not None):
        raise ValueError(f"{endpoint}: an IPv6 address goes in brackets, an IPv4 one does not")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(one_line(f"{endpoint}: {host!r} is not an IP address")) from None
    if not 1 <= int(match["port"]) <= 65535:
        raise ValueError(f"{endpoint}: the port must be 1 to 65535")
    return endpoint


def _ipc_path_problem(path: str) -> Optional[str]:
    """Why ZeroMQ cannot use ``path`` as an ``ipc://`` socket path, or ``None``."""
    if not path.startswith("/"):
        return "the socket path must be absolute"
    try:
        size = len(path.encode("utf-8"))
    except UnicodeEncodeError:
        return "the socket path is not valid UTF-8 (set TMPDIR to another folder)"
    if size > IPC_PATH_MAX_BYTES:
        return (f"the socket path is {size} bytes, the limit is {IPC_PATH_MAX_BYTES} "
                f"(set TMPDIR to a shorter folder)")
    return None


#: The sockets ``SchedulerSockets`` binds, by name (an ``ipc://`` socket's file name in
#: its ``EndpointDir``), and their ZeroMQ types.
SCHEDULER_SOCKETS = (("s2r", zmq.PUSH), ("r2s", zmq.PULL), ("ctl", zmq.PAIR))
#: The names of ``SCHEDULER_SOCKETS``.
SCHEDULER_SOCKET_NAMES = tuple(name for name, _ in SCHEDULER_SOCKETS)


class Endpoints(msgspec.Struct, frozen=True):
    """ZeroMQ endpoint strings of one case's three sockets."""

    s2r: str
    r2s: str
    ctl: str


def _print_note(line: str) -> None:
    print(f"note: {line}", file=sys.stderr, flush=True)


#: Where ``EndpointDir`` sends the line saying what its sweep removed (``set_sweep_sink``).
_sweep_sink: Callable[[str], None] = _print_note


def set_sweep_sink(sink: Optional[Callable[[str], None]]) -> Callable[[str], None]:
    """Send the lines saying what a new ``EndpointDir``'s sweep removed
    (``leftovers.sweep_note``, without ``note: ``) to ``sink`` from now on (``None``: to
    stderr as ``note: LINE``, the default); returns the sink it replaces."""
    global _sweep_sink
    previous, _sweep_sink = _sweep_sink, sink or _print_note
    return previous


class EndpointDir:
    """Private directory for ``ipc://`` socket files (``TMPDIR/ipc-bench-<pid>-XXXXXXXX``,
    mode 0700: this process's pid, ``leftovers``); ``cleanup()`` removes it. Raises
    ``EndpointError`` when it cannot be created.

    Once it is made, the socket folders in the same parent that processes which no
    longer run left behind (a SIGKILLed ``bench.py``), and the ring segments they name,
    are removed (``leftovers.sweep``; never fails); ``swept`` says what was, and a line
    saying so goes to the sweep sink (``set_sweep_sink``) when anything was."""

    def __init__(self) -> None:
        parent = None
        try:
            parent = tempfile.gettempdir()  # TMPDIR, else /tmp ... (Python's order)
            self.path = tempfile.mkdtemp(prefix=f"{leftovers.FOLDER_PREFIX}{os.getpid()}-",
                                         dir=parent)  # mode 0700
        except OSError as exc:  # also gettempdir's "no usable temporary directory"
            where = parent or os.environ.get("TMPDIR") or "any temporary folder"
            raise EndpointError(f"cannot create a socket folder in {where}: "
                                f"{exc.strerror or exc}") from None
        os.chmod(self.path, 0o700)
        leftovers.write_owner(self.path)
        self.swept = leftovers.sweep(parent)
        note = leftovers.sweep_note(self.swept)
        if note is not None:
            _sweep_sink(note)

    def cleanup(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def _configure(sock: zmq.Socket) -> None:
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVTIMEO, POLL_SLICE_MS)
    sock.setsockopt(zmq.SNDTIMEO, POLL_SLICE_MS)


#: A hint for the ``errno`` of a failed bind (after the system's own words).
_BIND_HINTS = {
    errno.EADDRNOTAVAIL: "not an address of this machine",
    errno.EADDRINUSE: "another socket holds this port",
    errno.ENOENT: "the socket folder does not exist",
}

#: Monitor events that end the wait of ``_connect``.
_CONNECT_EVENTS = (zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_CONNECT_RETRIED
                   | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
                   | zmq.EVENT_HANDSHAKE_FAILED_AUTH | zmq.EVENT_DISCONNECTED)


#: The ``ZMQ_ZAP_DOMAIN`` ``open_socket`` gives a socket it binds on tcp (``options``
#: may name another): with a ZAP domain, libzmq refuses peers of the ZMTP 1.0 and 2.0
#: protocols, which it otherwise accepts from any first byte that is not 0xFF and
#: whose bytes it then reads as frames, so that random bytes sent to the port become
#: messages (a port scan, or junk, sent to the ``ModelRunnerOutput`` port). No ZAP
#: handler needs to answer it: without one (or with ``wire.remote.Doorman``, which
#: admits every domain but the control ports'), a ZMTP 3.0 peer's NULL handshake is
#: admitted as before, byte for byte.
LEGACY_GUARD_DOMAIN = b"ipc-bench-zmtp3-only"


def _admit_without_zap_handler(sock: zmq.Socket) -> None:
    """Set ``ZMQ_ZAP_ENFORCE_DOMAIN`` 0 on ``sock``: a ZMTP 3.0 peer is admitted where
    no ZAP handler answers for ``LEGACY_GUARD_DOMAIN``, as libzmq 4.3 does by default;
    libzmq's documentation says strict enforcement (every peer refused without a
    handler) may become the default, which would shut out the harness's own runners,
    ranks and frontend. A libzmq without the option (``EINVAL``) enforces nothing."""
    option = getattr(zmq, "ZAP_ENFORCE_DOMAIN", None)
    if option is None:
        return
    try:
        sock.setsockopt(option, 0)
    except zmq.ZMQError as exc:
        if exc.errno != zmq.EINVAL:
            raise


def open_socket(ctx: zmq.Context, socket_type: int, endpoint: str, *, bind: bool,
                connect_timeout_s: float = CONNECT_TIMEOUT_S,
                options: Optional[dict[int, int | bytes]] = None) -> zmq.Socket:
    """A configured socket (``ZMQ_LINGER`` 0, ``POLL_SLICE_MS`` send / receive
    timeouts, ``ZMQ_IPV6`` for ``tcp://[...]``, ``LEGACY_GUARD_DOMAIN`` for a tcp
    bind, then ``options``: socket option ->
    value, set before the bind or connect) bound to or connected to
    ``endpoint``; a connect waits up to ``connect_timeout_s`` for the ZeroMQ handshake
    with the bound peer. On any failure the socket is closed and ``EndpointError``
    raised (``cannot bind ENDPOINT: REASON`` / ``cannot connect to ENDPOINT: REASON``;
    a process out of file descriptors, ``EMFILE``, whether libzmq raised it or hid it
    behind a refused or silent connect: ``errors.fd_limit_text``; the system's file
    table full, ``ENFILE``: ``errors.file_table_text``).
    """
    return _open_socket(ctx, socket_type, endpoint, bind, connect_timeout_s, options,
                        watch=False)[0]


def connect_watched(ctx: zmq.Context, socket_type: int, endpoint: str, *,
                    connect_timeout_s: float = CONNECT_TIMEOUT_S,
                    options: Optional[dict[int, int | bytes]] = None
                    ) -> tuple[zmq.Socket, Optional[zmq.Socket]]:
    """``open_socket``'s connect (its options, wait and errors, line for line), with the
    monitor of the wait kept on after it: the socket and that monitor (``_CONNECT_EVENTS``,
    at an inproc address of its own), started before the connect, so that no event of
    the connection is missed, its ``EVENT_DISCONNECTED`` included. The caller stops it
    (``Socket.disable_monitor``, then closes it) before it closes the socket; on a
    failure both are closed."""
    return _open_socket(ctx, socket_type, endpoint, False, connect_timeout_s, options,
                        watch=True)


def _open_socket(ctx: zmq.Context, socket_type: int, endpoint: str, bind: bool,
                 connect_timeout_s: float, options: Optional[dict[int, int | bytes]],
                 watch: bool) -> tuple[zmq.Socket, Optional[zmq.Socket]]:
    """``open_socket``, and with ``watch`` (a connect) the monitor ``connect_watched``
    keeps."""
    action = "bind" if bind else "connect to"
    if endpoint.startswith("ipc://"):
        problem = _ipc_path_problem(endpoint[len("ipc://"):])
        if problem:
            raise EndpointError(f"cannot {action} {endpoint}: {problem}")
    try:
        sock = ctx.socket(socket_type)
    except zmq.ZMQError as exc:
        if out_of_fds(exc):
            raise EndpointError(f"cannot {action} {endpoint}: {fd_shortage_text(exc)}"
                                ) from None
        raise
    monitor: Optional[zmq.Socket] = None
    try:
        _configure(sock)
        if endpoint.startswith("tcp://["):
            sock.setsockopt(zmq.IPV6, 1)
        if bind and endpoint.startswith("tcp://"):
            sock.setsockopt(zmq.ZAP_DOMAIN, LEGACY_GUARD_DOMAIN)
            _admit_without_zap_handler(sock)
        for option, value in (options or {}).items():
            sock.setsockopt(option, value)
        if bind:
            sock.bind(endpoint)
        else:
            if watch:  # an address apart from the default one (_connect's own monitor)
                monitor = sock.get_monitor_socket(
                    _CONNECT_EVENTS, addr=f"inproc://ipc-bench-watch-{id(sock)}")
            _connect(sock, endpoint, connect_timeout_s, monitor)
    except zmq.ZMQError as exc:
        _close(sock, monitor)
        hint = _BIND_HINTS.get(exc.errno) if bind else None
        reason = (fd_shortage_text(exc) if out_of_fds(exc)
                  else zmq.strerror(exc.errno) + (f" ({hint})" if hint else ""))
        raise EndpointError(f"cannot {action} {endpoint}: {reason}") from None
    except EndpointError:
        # libzmq reports a connect whose socket() (or its peer's accept(), in this
        # process) found no descriptor left as refused or silent: checked before the
        # close frees one
        exhausted = fds_exhausted()
        _close(sock, monitor)
        if exhausted:
            raise EndpointError(f"cannot {action} {endpoint}: {fd_limit_text()}") from None
        raise
    except BaseException:
        _close(sock, monitor)
        raise
    return sock, monitor


def _close(sock: zmq.Socket, monitor: Optional[zmq.Socket]) -> None:
    """Close ``sock`` (linger 0), its kept monitor first where it has one."""
    if monitor is not None:
        sock.disable_monitor()
        monitor.close(linger=0)
    sock.close(linger=0)


def recv_monitor_message(monitor: zmq.Socket) -> dict:
    """The next event on ``monitor`` (a PAIR socket from ``Socket.get_monitor_socket``),
    as pyzmq's ``zmq.utils.monitor.recv_monitor_message`` gives it: ``event``
    (``zmq.Event``), ``value`` (the event's value as ``zmq.Event``, an fd or a status
    code) and ``endpoint`` (bytes); blocks until one comes. That module imports
    ``zmq.asyncio``, and with it asyncio (30 ms of CPU in every scheduler, runner and
    stage process), for this one parse. Raises ``RuntimeError`` on a message not in
    libzmq's event format (two frames, the first of 6 bytes)."""
    msg = monitor.recv_multipart()
    if len(msg) != 2 or len(msg[0]) != 6:
        raise RuntimeError(f"Invalid event message format: {msg}")
    event_id, value = struct.unpack("=hi", msg[0])
    return {"event": zmq.Event(event_id), "value": zmq.Event(value), "endpoint": msg[1]}


def _connect(sock: zmq.Socket, endpoint: str, timeout_s: float,
             kept: Optional[zmq.Socket] = None) -> None:
    """Connect ``sock`` and wait (``timeout_s`` at most) until the ZeroMQ handshake
    with the bound peer succeeded; ``EndpointError`` when the connection is refused,
    ``HandshakeRefused`` when the peer's ZAP handler denies it, ``NoHandshake`` when the
    handshake fails, the peer closes the connection before it completes, or it does not
    come. Watched by ``kept`` (``_CONNECT_EVENTS``), left on, where given; else by a
    monitor of its own, stopped after the wait."""
    monitor = kept if kept is not None else sock.get_monitor_socket(_CONNECT_EVENTS)
    try:
        sock.connect(endpoint)
        deadline = time.monotonic() + timeout_s
        while True:
            # in slices: a signal that lands after the interpreter's last check and
            # before the poll's system call starts is acted on when the poll returns,
            # so one wait for the whole timeout could leave a Ctrl-C unanswered for it
            left_ms = int((deadline - time.monotonic()) * 1000)
            if left_ms <= 0:
                raise NoHandshake(f"cannot connect to {endpoint}: no ZeroMQ handshake within "
                                  f"{timeout_s:g} s", timed_out=True)
            if not monitor.poll(min(left_ms, POLL_SLICE_MS)):
                continue
            message = recv_monitor_message(monitor)
            event = message["event"]
            if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                return
            if event == zmq.EVENT_CONNECT_RETRIED:
                raise EndpointError(f"cannot connect to {endpoint}: {_refused(endpoint)}")
            if event == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
                raise HandshakeRefused(f"cannot connect to {endpoint}: the peer refused the "
                                       f"connection (ZAP status {message['value']})",
                                       message["value"])
            # failed, or the peer closed the connection before it completed (a socket
            # type that does not pair with this one: either event may come first)
            raise NoHandshake(f"cannot connect to {endpoint}: the ZeroMQ handshake "
                              f"failed (not a socket of this harness, or one of another "
                              f"kind)")
    finally:
        if kept is None:
            sock.disable_monitor()
            monitor.close(linger=0)


def tcp_refused(endpoint: str, timeout_s: float = 1.0) -> bool:
    """Whether a fresh TCP connect to ``endpoint`` (``tcp://ADDR:PORT``) is refused now:
    nothing listens there (a peer that closed a connection during its ZeroMQ handshake
    and whose port refuses the next one went away; one that accepts it, or does not
    answer within ``timeout_s``, is still there). The connection, if made, is closed at
    once. ``ValueError`` for an endpoint of another form."""
    import socket

    host, port = split_tcp_endpoint(endpoint)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return False
    except ConnectionRefusedError:
        return True
    except OSError:  # unreachable, timed out: not known to be gone
        return False


def _refused(endpoint: str) -> str:
    """Why a connection to ``endpoint`` was refused, as far as this side can tell."""
    if endpoint.startswith("ipc://"):
        if not os.path.exists(endpoint[len("ipc://"):]):
            return "no such socket file (is the scheduler still running?)"
        return "connection refused (no process listens on that socket file)"
    return "connection refused or address unreachable"


def destroy_context(ctx: zmq.Context) -> None:
    """Close every socket of ``ctx`` still open with ``ZMQ_LINGER`` 0, then terminate
    it: never blocks on a socket left open (``zmq.Context.term`` alone would).
    Sockets closed earlier with a linger keep it (the runner's last report)."""
    ctx.destroy(linger=0)


class SchedulerSockets:
    """The scheduler's bound sockets. ``transport``: ``ipc``, ``shm`` or ``shm-block``
    (socket files in ``endpoint_dir``; under ``shm*`` the ``s2r`` socket carries
    nothing) or ``tcp`` (ephemeral ports on ``host``).

    Raises ``EndpointError`` (after closing what it opened) when a socket cannot be
    bound, ``ValueError`` for an unknown transport.
    """

    def __init__(self, ctx: zmq.Context, transport: str, endpoint_dir: Optional[EndpointDir],
                 host: str = DEFAULT_HOST):
        if transport not in TRANSPORTS:
            raise ValueError(f"unknown transport {transport!r}")
        if transport != "tcp" and endpoint_dir is None:
            raise ValueError(f"the {transport} transport needs an EndpointDir")
        self.s2r: Optional[zmq.Socket] = None
        self.r2s: Optional[zmq.Socket] = None
        self.ctl: Optional[zmq.Socket] = None
        names = {}
        try:
            for name, socket_type in SCHEDULER_SOCKETS:
                endpoint = (tcp_bind_endpoint(host) if transport == "tcp"
                            else f"ipc://{endpoint_dir.path}/{name}")
                sock = open_socket(ctx, socket_type, endpoint, bind=True)
                setattr(self, name, sock)
                names[name] = sock.getsockopt_string(zmq.LAST_ENDPOINT)
        except BaseException:
            self.close()
            raise
        self.endpoints = Endpoints(**names)

    def close(self) -> None:
        for sock in (self.s2r, self.r2s, self.ctl):
            if sock is not None:
                sock.close(linger=0)


class RunnerSockets:
    """The runner's connected sockets: ``ctl`` at once, ``s2r`` / ``r2s`` by
    ``connect_data``. Each connect waits for its ZeroMQ handshake (at most
    ``connect_timeout_s``); ``EndpointError`` (after closing what it opened) when the
    endpoint is malformed, refused or silent."""

    def __init__(self, ctx: zmq.Context, ctl_endpoint: str,
                 connect_timeout_s: float = CONNECT_TIMEOUT_S,
                 options: Optional[dict[int, int]] = None):
        self.connect_timeout_s = connect_timeout_s
        self.options = options
        self.s2r: Optional[zmq.Socket] = None
        self.r2s: Optional[zmq.Socket] = None
        self.ctl = open_socket(ctx, zmq.PAIR, ctl_endpoint, bind=False,
                               connect_timeout_s=connect_timeout_s, options=options)

    def connect_data(self, s2r_endpoint: str, r2s_endpoint: str) -> None:
        """Connect the PULL ``s2r`` and PUSH ``r2s`` sockets (``EndpointError``)."""
        ctx = self.ctl.context
        try:
            self.s2r = open_socket(ctx, zmq.PULL, s2r_endpoint, bind=False,
                                   connect_timeout_s=self.connect_timeout_s,
                                   options=self.options)
            self.r2s = open_socket(ctx, zmq.PUSH, r2s_endpoint, bind=False,
                                   connect_timeout_s=self.connect_timeout_s,
                                   options=self.options)
        except BaseException:
            for sock in (self.s2r, self.r2s):
                if sock is not None:
                    sock.close(linger=0)
            self.s2r = self.r2s = None
            raise

    def close_data(self) -> None:
        """Close the data sockets (linger 0), keep ``ctl``: a runner serving several
        cases (``harness.remote_runner``) connects them again for the next one."""
        for sock in (self.s2r, self.r2s):
            if sock is not None:
                sock.close(linger=0)
        self.s2r = self.r2s = None

    def close(self, linger_ms: int = 0) -> None:
        """Close the sockets; messages still queued are sent for up to ``linger_ms``
        (``ZMQ_LINGER``; 0 discards them, even a control message already sent). A SUB
        ``s2r`` (a ``--tp`` rank, ``wire.tp``) sends only subscriptions, which a
        reconnect to the scheduler's closed socket would leave queued: it closes with
        linger 0, or the context's termination would wait ``linger_ms`` for them."""
        for sock in (self.s2r, self.r2s, self.ctl):
            if sock is not None:
                sock.close(linger=0 if sock.type == zmq.SUB else linger_ms)


#: File descriptors ``check_endpoints`` needs free: at its peak it holds 22 more than
#: before it (tcp; 20 for ipc and shm: six sockets, their connections and listeners,
#: a connect's monitor, libzmq's context), measured with pyzmq 27.3 / libzmq 4.3.5,
#: plus the two a connect in flight holds. libzmq aborts the process (an assertion in
#: its listener) when an ``accept`` finds none left, so it is checked before.
ENDPOINT_CHECK_FDS = 24

#: File descriptors a case needs free at the sockets' check (the check's own closed
#: again) to run to its end, by transport: ``CASE_FDS_BASE`` for the scheduler and one
#: runner, ``CASE_FDS_PER_PEER`` more for each further ``--tp`` rank or ``--pp``
#: stage, ``CASE_FDS_FRONTEND`` more for the ``--frontend`` process. Measured as the
#: lowest ``ulimit -n`` at which a ``--steps 100`` case ran to its end with the check
#: left out, less the 5 open at the check (pyzmq 27.3 / libzmq 4.3.5, Linux): ipc and
#: tcp 15, --frontend 27, --tp 2 19, --tp 4 29 to 30, --pp 2 20, --pp 4 30; shm 19,
#: shm-block 21, with --frontend 32 and 34, --tp 2 28, --tp 4 42 (shm-block); --tp 2
#: 26, --tp 4 38 (shm, the spinning ring: its own 6 per rank past the first, on the
#: base it shares with shm-block, covers them, 27 and 39). shm's --tp figures are the
#: lowest N at which every run of::
#:
#:     ulimit -n N; python bench.py --scenario tp-broadcast --tp T --tp-transports shm \
#:         --steps 100 --policies send --codecs msgpack --quiet --output DIR
#:
#: (``cli.run.check_endpoints`` replaced by a no-op, so that the check does not refuse
#: it) ended with exit 0, less 5: T = 2 31 (4 of 4 runs; 30 in 2 of 4), T = 4 43 (8
#: of 8; 42 in none of 4: the results could not be written), 2 cores, pyzmq 27.3.
#: Short of them a case stops with libzmq aborting the process (an accept with none
#: left), a results file that cannot be written or a process that cannot start.
CASE_FDS_BASE = {"ipc": 15, "tcp": 15, "shm": 21, "shm-block": 21}
CASE_FDS_PER_PEER = {"ipc": 5, "tcp": 5, "shm": 6, "shm-block": 7}
CASE_FDS_FRONTEND = {"ipc": 12, "tcp": 12, "shm": 13, "shm-block": 13}
#: Added to ``case_fds``: one descriptor's difference was seen between two runs of
#: the same case (--tp 4 over ipc).
CASE_FDS_MARGIN = 2


def case_fds(transport: str, runners: int = 1, frontend: bool = False) -> int:
    """File descriptors a case over ``transport`` (one of ``TRANSPORTS``) with
    ``runners`` runner processes (``--tp`` ranks or ``--pp`` stages; 1 for one runner)
    and, with ``frontend``, the ``--frontend`` process needs free before it starts:
    ``CASE_FDS_BASE`` + ``CASE_FDS_PER_PEER`` per runner past the first (+
    ``CASE_FDS_FRONTEND``) + ``CASE_FDS_MARGIN``. ``KeyError`` for another
    transport."""
    need = CASE_FDS_BASE[transport] + CASE_FDS_PER_PEER[transport] * (max(runners, 1) - 1)
    if frontend:
        need += CASE_FDS_FRONTEND[transport]
    return need + CASE_FDS_MARGIN


def free_fds() -> Optional[int]:
    """How many more file descriptors this process may open under its soft
    ``RLIMIT_NOFILE`` (those open counted in ``/proc/self/fd``); ``None`` where that
    cannot be read (no ``/proc``) or the limit is infinite."""
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        num_open = len(os.listdir("/proc/self/fd")) - 1  # less listdir's own
    except OSError:
        return None
    return soft - num_open


def check_endpoints(transport: str, host: str = DEFAULT_HOST,
                    case_need: int = 0, socket_names: Sequence[str] = ()) -> None:
    """Set up a case's sockets once in this process and close them again: the
    scheduler's three bound, the runner's three connected to them (all but ``tcp``:
    in a fresh ``EndpointDir``, removed after). Raises ``EndpointError`` where a case
    would fail to set up, in milliseconds and before any process starts; first, when
    fewer than ``ENDPOINT_CHECK_FDS`` file descriptors are free (``free_fds``), or
    fewer than ``case_need`` (the most a case over ``transport`` needs: ``case_fds``),
    one naming the limit (``errors.fd_limit_text``) and the need; then (all but
    ``tcp``) where the longest of ``socket_names`` and ``SCHEDULER_SOCKET_NAMES`` (the
    ``ipc://`` socket names the cases bind in their socket folders, each as long as
    this one: ``wire.tp.tp_socket_names``' ``ctl0``..., ``wire.frontend``'s
    ``frontend-out``) makes a socket path ZeroMQ cannot take, ``cannot bind
    ipc://DIR/frontend-out: the socket path is 116 bytes, the limit is 107 (set TMPDIR
    to a shorter folder)``, as binding it would say."""
    free = free_fds()
    if free is not None and free < max(ENDPOINT_CHECK_FDS, case_need):
        need = (f"the {transport} sockets' check needs {ENDPOINT_CHECK_FDS}"
                if case_need <= ENDPOINT_CHECK_FDS
                else f"the {transport} cases need {case_need}")
        raise EndpointError(f"{fd_limit_text()} ({need} free, {max(free, 0)} are)")
    endpoint_dir: Optional[EndpointDir] = None
    ctx = zmq_context()  # under ulimit -v: our line, not libzmq's abort
    try:
        endpoint_dir = EndpointDir() if transport != "tcp" else None
        if endpoint_dir is not None:
            longest = max((*SCHEDULER_SOCKET_NAMES, *socket_names), key=len)  # ASCII names
            endpoint = f"ipc://{endpoint_dir.path}/{longest}"
            problem = _ipc_path_problem(endpoint[len("ipc://"):])
            if problem:
                raise EndpointError(f"cannot bind {endpoint}: {problem}")
        bound = SchedulerSockets(ctx, transport, endpoint_dir, host=host)
        connected = RunnerSockets(ctx, bound.endpoints.ctl)
        connected.connect_data(bound.endpoints.s2r, bound.endpoints.r2s)
        connected.close()
        bound.close()
    finally:
        destroy_context(ctx)
        if endpoint_dir is not None:
            endpoint_dir.cleanup()


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
    (``noticed``: "..., noticed while waiting for WHAT"), unless a frame the peer sent
    before it went is queued or arrives within one more slice, which is returned first
    (an empty frame announcing its error report). Raises ``PeerTimeout`` ("no WHAT within N s") on
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
            raise PeerError(noticed(problem, f"waiting for {what}"))
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
    Raises ``PeerError`` ("..., noticed while sending WHAT") or ``PeerTimeout``.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        problem = peer_problem()
        if problem:
            raise PeerError(noticed(problem, f"sending {what}"))
        try:
            sock.send(frame)  # blocks at most SNDTIMEO = POLL_SLICE_MS
            return
        except zmq.Again:
            if time.monotonic() > deadline:
                raise PeerTimeout(f"could not send {what} within {timeout_s:g} s") from None
