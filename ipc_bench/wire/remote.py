"""Runners started by hand on other hosts (``--remote-runners``): fixed tcp ports and
control connections that last the whole run.

Ports, from ``--port BASE`` (default ``DEFAULT_PORT``), for R runners (R = 1, or the
largest ``--tp`` of the run): rank r's control socket (PAIR) at ``BASE + r``, the
``SchedulerOutput`` socket (PUSH; XPUB for ``--tp``) at ``BASE + R`` and the
``ModelRunnerOutput`` socket (PULL) at ``BASE + R + 1``, all bound by the scheduler on
``--host``; with ``--pp`` stages (R = the largest ``--pp``) also the stages'
``torch.distributed`` store (a ``TCPStore``, ``wire.pp.StoreServer``, one per case) at
``BASE + R + 2``. A runner is told only its control endpoint (``python bench.py runner
--connect tcp://SCHEDULER:BASE+r``); each case's ``Handshake`` carries the rest (the
``RunnerConfig``: limits, model, policy, codec, the data endpoints and its rank).

One long-lived runner per host serves the run's cases in a loop
(``harness.remote_runner``), rather than one runner per case: a person starts it once
per host, not once per case (the tp-broadcast grid has dozens); its control connection
stays up between cases, so the scheduler notices a runner that dies at any time (a
closed connection, below), and the runner notices a scheduler that goes away between
cases as well as during one. The control sockets are bound once, here, in their own
context; the data sockets are bound for each case in the case's context and closed with
it (the runner connects its data sockets per case and closes them after its report, so
no case inherits a frame or a subscription from the one before). After the last case,
or the first that fails (a failed case ends the run), ``close`` sends every connected
runner ``control.Goodbye`` and the runners exit.

Claiming a control port. A port is the runner's once a peer sends the runner's hello
(``runner_hello``: ``ipc-bench runner hello, protocol N``, the first frame a runner
sends on its control socket, before the scheduler's ``Handshake``), and only then:
whatever else connects is a stray and never locks the runner out. Two guards:

- The ``Doorman`` (a ZAP handler) admits one peer at a time per control port and
  refuses every other at once, as it connects (``ZAP_REFUSED``: a second runner started
  for a taken port exits with one line; the run goes on). The port is held by a
  connection, not by an answer: before each answer the port's monitor events are read
  (``RemoteRunners._admit``), the request is taken for the oldest connection accepted
  and not yet answered, and the one let in holds the port until its connection ends
  (its ``ZMQ_EVENT_DISCONNECTED``, by its fd), unless it said hello. A stray ends so: a
  DEALER, REQ or PUSH (libzmq asks the ZAP handler before it checks the socket kind, so
  such a peer passes the Doorman and is then dropped), a PAIR that leaves without saying
  hello, one disconnected for its first frame (below). A request answered only after its
  connection ended (the answer waits for the lock that the scheduler's thread holds
  while it waits on the port, so a stray that asks and leaves at once can be gone
  before it) is of no connection still there: it holds nothing, and the runner that
  comes after the stray is let in.
- A PAIR peer (the control socket's own kind) completes the ZeroMQ handshake and is
  attached; its first frame decides: the hello claims the port (``connected``); any
  other frame is ignored (one note line on stderr naming the peer's address), the peer
  is disconnected (its TCP connection shut down, so the bound PAIR, which takes one peer
  at a time, is free) and the port freed as its connection ends. A malformed frame from
  a peer that has not said hello is never read as a control message: it does not end the
  run. A PAIR peer that stays connected without a word holds the port while it stays (as
  one that was disconnected does once its ZeroMQ socket, still open, reconnects): the
  runner that comes meanwhile is refused, in its one line.
- The PAIR takes one pipe at a time: a connection let in while the pipe of one that
  ended is still attached (its end not yet through to the PAIR) gets none, and libzmq
  says nothing of it. Such a connection is shut down once the PAIR is seen with no pipe
  for it (``RemoteRunners._cut_if_dropped``, after ``CUT_AFTER_S``); a runner whose
  connection ends before the scheduler's first message connects again with a fresh
  socket and says hello once more (``harness.remote_runner``: one hello a connection).

Why not another socket kind (a ROUTER that tells peers apart by identity): every
control exchange, ``wire.tp``'s included, is written for one PAIR per rank; the hello
and the monitor's events tell the runner from a stray without changing them. Why not a
ZAP mechanism with credentials (PLAIN): it needs a ZAP handler in every run, spawned
runners' included. The hello's protocol version is not compared here: a runner of
another version claims its port, and the ``Handshake`` refuses it in one line on both
ends (``harness.runner_loop.accept_handshake``).

Liveness. Each control socket is monitored (``ZMQ_EVENT_ACCEPTED``,
``ZMQ_EVENT_HANDSHAKE_SUCCEEDED``, ``ZMQ_EVENT_DISCONNECTED``): a runner whose
connection closes (its process died, was killed, or its host closed it) is named by
``problem(rank)`` within the next wait slice (``transport.POLL_SLICE_MS``) of any
wait, as a spawned runner's exit is; a stray's connection coming and going is not the
runner's. A host that vanishes without closing the connection is caught by the peer
timeout while a case runs, and by TCP keepalive (``KEEPALIVE``: about 25 s) between
cases.

Security: every port here accepts a connection from anyone who can reach ``--host``. The
hello is no password: the first peer that sends it on a control port is the runner of
that rank (it can feed the scheduler
made-up outputs, which the input and token oracles may catch; with
``--allow-pickle-over-tcp`` it can run code in the scheduler), and a second peer on the
``SchedulerOutput`` port would receive frames in turn with the runner (PUSH). The stages'
store (``--pp``) takes any client: one can read or overwrite the gloo rendezvous keys
(misdirecting or stalling the stages); each stage's gloo listener (an ephemeral port on
its own address towards the scheduler) takes whoever connects during the rendezvous.
Bind an address of a trusted network only.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from typing import Callable, NamedTuple, Optional

import zmq

from ipc_bench.errors import zmq_context
from ipc_bench.wire.control import Goodbye, encode_control
from ipc_bench.wire.transport import (POLL_SLICE_MS, EndpointError, Endpoints, PeerTimeout,
                                      destroy_context, open_socket, recv_monitor_message,
                                      tcp_endpoint)

#: Default first port of ``--port``.
DEFAULT_PORT = 5600
#: TCP keepalive of every socket to or from a remote runner: probes after 10 s idle,
#: every 5 s, 3 unanswered end the connection (a host gone without a FIN).
KEEPALIVE = {zmq.TCP_KEEPALIVE: 1, zmq.TCP_KEEPALIVE_IDLE: 10, zmq.TCP_KEEPALIVE_INTVL: 5,
             zmq.TCP_KEEPALIVE_CNT: 3}
#: How long ``close`` lets the ``Goodbye`` messages go out (ms).
GOODBYE_LINGER_MS = 1000
#: What to type where the scheduler binds every interface (its address is not known here).
SCHEDULER_PLACEHOLDER = "SCHEDULER_ADDRESS"

#: Key of ``control.Ready.model_info`` by which a runner started by hand names its
#: machine's monotonic clock (``clock_id``).
CLOCK_KEY = "monotonic_clock_id"
#: Key of ``control.Ready.model_info`` by which a runner started by hand with
#: ``--cpu-affinity`` names the CPUs it runs on, as its kernel reports them at the
#: handshake (``harness.affinity.cpus_allowed`` text, ``1`` or ``0+2-3``).
CPUS_KEY = "cpus_allowed"
#: Key of ``control.Ready.model_info`` by which a runner started by hand names the code
#: it runs (``harness.environment.source_code``: its checkout's commit, dirty or not),
#: which may be another checkout's than the scheduler's.
CODE_KEY = "runner_code"

#: What a runner sends first on its control socket, then its protocol version (``runner_hello``).
HELLO_PREFIX = b"ipc-bench runner hello, protocol "

#: Monitor events read on a control socket: every connection accepted ends in one
#: ``ZMQ_EVENT_DISCONNECTED`` (of the same fd), whether its handshake succeeded, failed
#: (a port scan's bytes, a peer of another socket kind, one refused) or never finished.
_EVENTS = zmq.EVENT_ACCEPTED | zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_DISCONNECTED

#: ZAP status (RFC 27) of a connection refused on a control port that already has its
#: runner; the refused peer's monitor reports it (``ZMQ_EVENT_HANDSHAKE_FAILED_AUTH``).
ZAP_REFUSED = 400
#: How long a connection the bound PAIR did not take is left up before it is ended
#: (``RemoteRunners._cut_if_dropped``), from the first time it was seen so (s).
CUT_AFTER_S = 0.5
#: Longest wait of the doorman's thread for a request (ms): ``close`` wakes it at once,
#: so it wakes (and takes the GIL) only for requests, not on a timer.
_DOORMAN_POLL_MS = 10_000


def runner_hello(version: int) -> bytes:
    """The first frame a runner sends on its control socket: ``HELLO_PREFIX`` and the
    protocol version it speaks (module docstring)."""
    return HELLO_PREFIX + str(version).encode()


def hello_version(frame: bytes) -> Optional[int]:
    """The protocol version of a runner's hello ``frame``; ``None`` for a frame that is
    not one (then its sender is not a runner)."""
    if not frame.startswith(HELLO_PREFIX):
        return None
    digits = frame[len(HELLO_PREFIX):]
    return int(digits) if digits.isdigit() and len(digits) <= 9 else None


def clock_id() -> str:
    """This machine's boot id (``/proc/sys/kernel/random/boot_id``): processes with the
    same one read the same ``CLOCK_MONOTONIC`` (``perf_counter_ns``), so their times
    can be compared; ``""`` where it cannot be read (then none are compared)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


class RemotePorts(NamedTuple):
    """The fixed ports of a run with remote runners (module docstring); ``store``:
    the pipeline stages' store, ``None`` in a run without ``--pp``."""

    ctls: list[int]
    s2r: int
    r2s: int
    store: Optional[int] = None


def remote_ports(base: int, n: int, store: bool = False) -> RemotePorts:
    """The ports of ``n`` remote runners from ``base`` (and the stages' store port with
    ``store``); ``ValueError`` (one line) when they do not fit below 65536."""
    last = base + n + 1 + store
    if not 1 <= base or last > 65535:
        raise ValueError(f"--port {base} with {n} remote runner(s) needs ports {base} to "
                         f"{last}: the first must be at least 1, the last at most 65535")
    return RemotePorts([base + r for r in range(n)], base + n, base + n + 1,
                       base + n + 2 if store else None)


def runner_command(host: str, port: int) -> str:
    """The command that starts the runner of the control port ``port`` on its host."""
    address = SCHEDULER_PLACEHOLDER if host in ("0.0.0.0", "::") else host
    return f"python bench.py runner --connect {tcp_endpoint(address, port)}"


def zap_domain(rank: int) -> str:
    """The ZAP domain of rank ``rank``'s control socket (``Doorman``)."""
    return f"ipc-bench-ctl-{rank}"


class Doorman:
    """The ZAP handler (RFC 27, ``inproc://zeromq.zap.01``) of the control sockets'
    context ``ctx`` with ``n`` control ports (``EndpointError`` if it cannot start):
    on each control port it admits one peer and refuses every other with status
    ``ZAP_REFUSED`` while the admitted one holds the port (module docstring), which
    ends that peer's handshake at once: a second runner started
    for a port that has one is told so when it connects (``transport.HandshakeRefused``)
    instead of waiting on a PAIR socket that never reads it (a bound PAIR takes one
    peer and drops the pipes of the others, silently). Libzmq asks the handler because
    each control socket has a ``ZMQ_ZAP_DOMAIN`` (``zap_domain``); the answer comes from
    this thread, so it does not wait for the scheduler's loop (only for ``lock``, which
    the loop holds while it reads the control ports); between requests the
    thread sleeps in ``zmq_poll`` (no timer wakes it during a measured case).
    ``admit(rank)``, if given, decides (under ``lock``) whether the peer asking on that
    rank's port gets in (``RemoteRunners._admit``: it ties the answer to a connection
    that is still there); without it, ``admitted[rank]`` (a peer got in) holds the port
    until ``release``. ``close`` wakes and stops the thread."""

    ENDPOINT = "inproc://zeromq.zap.01"

    def __init__(self, ctx: zmq.Context, n: int, start_timeout_s: float = 10.0,
                 admit: Optional[Callable[[int], bool]] = None):
        self.ctx, self.n = ctx, n
        self.admitted = [False] * n
        self.admit = admit
        #: Held by each answer and by whoever reads the control ports' events.
        self.lock = threading.RLock()
        self._wake_endpoint = f"inproc://ipc-bench-doorman-{id(self)}"
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._serve, name="ipc-bench-doorman",
                                        daemon=True)
        self._thread.start()
        if not self._ready.wait(start_timeout_s) or self._error is not None:
            self.close()
            raise EndpointError(f"cannot bind {self.ENDPOINT} (the control ports' ZAP "
                                f"handler): {self._error or 'its thread did not start'}")

    def _serve(self) -> None:
        rep = self.ctx.socket(zmq.REP)
        wake = self.ctx.socket(zmq.PULL)
        try:
            for sock, endpoint in ((rep, self.ENDPOINT), (wake, self._wake_endpoint)):
                sock.setsockopt(zmq.LINGER, 0)
                sock.bind(endpoint)
        except zmq.ZMQError as exc:
            self._error = exc
        self._ready.set()
        poller = zmq.Poller()
        poller.register(rep, zmq.POLLIN)
        poller.register(wake, zmq.POLLIN)
        try:
            while self._error is None and not self._stop.is_set():
                if rep in dict(poller.poll(_DOORMAN_POLL_MS)):
                    rep.send_multipart(self.answer(rep.recv_multipart()))
        finally:
            rep.close(linger=0)
            wake.close(linger=0)

    def answer(self, request: list[bytes]) -> list[bytes]:
        """The ZAP reply to ``request`` (version, request id, domain, address, routing
        id, mechanism, ...): for a control port's domain, 200 where ``admit`` lets the
        peer in (without ``admit``: the first peer, until ``release``), else
        ``ZAP_REFUSED``; 200 for a domain that is not a control port's."""
        version, request_id = (request + [b"1.0", b""])[:2]
        domain = request[2].decode(errors="replace") if len(request) > 2 else ""
        status = b"200"
        with self.lock:
            for rank in range(self.n):
                if domain == zap_domain(rank):
                    if self.admit is not None:
                        try:
                            admit = self.admit(rank)
                        except Exception:  # noqa: BLE001 - never end the thread: refuse
                            admit = False
                    else:
                        admit = not self.admitted[rank]
                    if not admit:
                        status = str(ZAP_REFUSED).encode()
                    self.admitted[rank] = self.admitted[rank] or admit
        return [version, request_id, status, b"" if status == b"200" else
                b"this control port already has its runner", b"", b""]

    def release(self, rank: int) -> None:
        """The peer admitted to ``rank``'s port was a stray: admit the next one."""
        with self.lock:
            self.admitted[rank] = False

    def close(self) -> None:
        """Stop the thread (woken at once) and wait for it (at most 5 s)."""
        self._stop.set()
        waker = self.ctx.socket(zmq.PUSH)
        waker.setsockopt(zmq.LINGER, 0)
        waker.setsockopt(zmq.SNDTIMEO, 1000)
        waker.connect(self._wake_endpoint)
        try:
            waker.send(b"")
        except zmq.ZMQError:  # its thread ended already (or ends within _DOORMAN_POLL_MS)
            pass
        waker.close(linger=0)
        self._thread.join(timeout=5.0)


class RemoteRunners:
    """The scheduler's side of ``n`` runners started by hand: one PAIR control socket
    per rank, bound on ``host`` at its fixed port for the whole run and monitored.

    Raises ``transport.EndpointError`` (one line naming the endpoint, e.g. ``cannot bind
    tcp://127.0.0.1:5600: Address already in use (another socket holds this port)``)
    when a control port cannot be bound or a data port is taken, after closing what it
    opened. ``problem(rank)``: ``None`` while rank ``rank`` is connected or has not
    connected yet, else one line; ``wait_connected`` bounds the wait for the first
    connection; ``close`` says goodbye."""

    def __init__(self, host: str, base_port: int, n: int, store: bool = False):
        self.host, self.n = host, n
        self.ports = remote_ports(base_port, n, store)
        self.ctx = zmq_context()  # under ulimit -v: our line, not libzmq's abort
        self.ctls: list[zmq.Socket] = []
        self._monitors: list[zmq.Socket] = []
        self.connected = [False] * n  # the runner said hello (module docstring)
        self.gone = [False] * n
        # Connections by their fd, as the monitor's ACCEPTED and DISCONNECTED events give
        # it (HANDSHAKE_SUCCEEDED gives none): ``_live``, those accepted and not ended, in
        # the order accepted; ``_asking``, those of them whose ZAP request the Doorman
        # has not answered yet; ``_holder``, the one it let in (it holds the port until
        # its DISCONNECTED is read); ``_attached``: the holder once its handshake
        # completed, until it said hello or sent something else (fd, address);
        # ``_runner_fd``: the runner's, once it said hello.
        self._live: list[list[int]] = [[] for _ in range(n)]
        self._asking: list[list[int]] = [[] for _ in range(n)]
        self._holder: list[Optional[int]] = [None] * n
        self._shaken = [False] * n  # the holder completed its handshake
        self._attached: list[Optional[tuple[int, str]]] = [None] * n
        self._runner_fd: list[Optional[int]] = [None] * n
        # _cut_if_dropped's: the attached peer seen with no pipe at the PAIR, and when
        self._dropped: list[Optional[tuple[tuple[int, str], float]]] = [None] * n
        self._closing = False
        self.doorman: Optional[Doorman] = None
        try:
            self.doorman = Doorman(self.ctx, n, admit=self._admit)
            for rank, port in enumerate(self.ports.ctls):
                sock = open_socket(self.ctx, zmq.PAIR, tcp_endpoint(host, port), bind=True,
                                   options={**KEEPALIVE,
                                            zmq.ZAP_DOMAIN: zap_domain(rank).encode()})
                self.ctls.append(sock)
                self._monitors.append(sock.get_monitor_socket(_EVENTS))
            self._check_data_ports()
        except BaseException:
            self.close()
            raise

    def _check_data_ports(self) -> None:
        """Bind the data ports once, in a context of their own that is gone before this
        returns (each case binds them again): ``EndpointError`` if one is taken."""
        ctx = zmq_context()  # under ulimit -v: our line, not libzmq's abort
        try:
            for endpoint in self.data_endpoints():
                open_socket(ctx, zmq.PULL, endpoint, bind=True).close(linger=0)
            if self.ports.store is not None:  # the stages' store: a plain socket
                open_socket(ctx, zmq.PULL, self.store_endpoint(), bind=True).close(linger=0)
        finally:
            destroy_context(ctx)

    def store_endpoint(self) -> str:
        """``tcp://HOST:PORT`` of the pipeline stages' store (``ports.store``; ``None``
        in a run without ``--pp``)."""
        return None if self.ports.store is None else tcp_endpoint(self.host, self.ports.store)

    def ctl_endpoint(self, rank: int) -> str:
        return tcp_endpoint(self.host, self.ports.ctls[rank])

    def data_endpoints(self) -> tuple[str, str]:
        """The ``SchedulerOutput`` and ``ModelRunnerOutput`` endpoints to bind."""
        return tcp_endpoint(self.host, self.ports.s2r), tcp_endpoint(self.host, self.ports.r2s)

    def name(self, rank: int) -> str:
        """How messages name the runner of ``rank``."""
        return f"remote runner {rank} (control port {self.ctl_endpoint(rank)})"

    def rank_of(self, ctl_endpoint: str) -> int:
        """The rank whose control endpoint is ``ctl_endpoint`` (``ValueError``)."""
        return [self.ctl_endpoint(r) for r in range(self.n)].index(ctl_endpoint)

    def _events(self, rank: int) -> None:
        """Read rank ``rank``'s monitor events, then, until its runner said hello, the
        first frames of its attached peer (module docstring); under the Doorman's lock
        (its thread calls this too, before it answers a peer)."""
        if self.doorman is None or rank >= len(self._monitors):
            return
        with self.doorman.lock:
            if self._closing:
                return
            monitor = self._monitors[rank]
            while monitor.poll(0):
                message = recv_monitor_message(monitor)
                event, value = message["event"], int(message["value"])
                if event == zmq.EVENT_ACCEPTED:
                    self._live[rank].append(value)
                    self._asking[rank].append(value)
                elif event == zmq.EVENT_DISCONNECTED:
                    self._ended(rank, value)
                elif event == zmq.EVENT_HANDSHAKE_SUCCEEDED and not (
                        self.connected[rank] or self.gone[rank]):
                    # only a peer the Doorman let in completes its handshake: the holder
                    # (or, after an answer it could not tie to a connection, the newest)
                    if self._holder[rank] is None and self._live[rank]:
                        self._holder[rank] = self._live[rank][-1]
                    fd = self._holder[rank]
                    if fd is not None:
                        self._shaken[rank] = True
                        self._attached[rank] = (fd, _peer_address(fd))
            if not (self.connected[rank] or self.gone[rank]):
                self._read_hello(rank)
                self._cut_if_dropped(rank)

    def _cut_if_dropped(self, rank: int) -> None:
        """End the attached peer's connection where the bound PAIR has no pipe it can
        write to nor a frame to read (``ZMQ_EVENTS``, once its commands are processed):
        the PAIR did not take that connection's pipe, having another still attached
        when it came (a stray's, whose end had not reached it yet: libzmq's
        ``pair_t::xattach_pipe`` ends a second pipe without a word), or the peer is
        leaving. Such a connection stays up with nothing reading it: what the peer sends
        (the runner's hello) is never read, and once it sent something libzmq stops
        reading the connection and never reports its end. So it is shut down for
        writing (the peer reads the end of its handshake, then the connection's end,
        and a runner connects again: ``harness.remote_runner``) and taken as ended at
        once (``_ended``: the port is free). Not before ``CUT_AFTER_S`` from the first
        time it was seen so: libzmq reports a handshake complete just before it writes
        its last command to the peer, which a shutdown in between would keep from it
        (the peer's handshake would fail). The PAIR's pipe is active while a peer is
        attached: nothing is written to it before the hello."""
        attached = self._attached[rank]
        if attached is None:
            return
        if self.ctls[rank].getsockopt(zmq.EVENTS) & (zmq.POLLOUT | zmq.POLLIN):
            self._dropped[rank] = None
            return
        seen = self._dropped[rank]
        if seen is None or seen[0] != attached:
            self._dropped[rank] = (attached, time.monotonic())
            return
        if time.monotonic() - seen[1] < CUT_AFTER_S:
            return
        self._dropped[rank] = None
        _shut_down(*attached, socket.SHUT_WR)
        self._ended(rank, attached[0])

    def _ended(self, rank: int, fd: int) -> None:
        """The connection ``fd`` of rank ``rank``'s port ended (its DISCONNECTED event):
        the runner's makes it gone; a stray holder's frees the port."""
        for fds in (self._live[rank], self._asking[rank]):
            if fd in fds:
                fds.remove(fd)
        if self.connected[rank] and fd == self._runner_fd[rank]:
            self.connected[rank], self.gone[rank] = False, True
        if fd == self._holder[rank] and not (self.connected[rank] or self.gone[rank]):
            self._holder[rank], self._shaken[rank], self._attached[rank] = None, False, None

    def _admit(self, rank: int) -> bool:
        """The Doorman's answer to a peer asking on rank ``rank``'s port (under its lock):
        whether it gets in. The port's events are read first, so a stray that left is no
        longer its holder; the request is taken for the oldest asking connection's
        (``_asking``; taken off it even where the read raised): it is let in, and holds
        the port, when the port has no runner and no holder. A request no live
        connection is asking is of one that ended meanwhile (or of one an earlier such
        request was taken for): let in while no holder has completed its handshake, it
        holds nothing. That the acceptance of a connection is read before its request
        rests on libzmq: its listener's I/O thread (one: the context's default) reports
        the acceptance before the connection's handshake can send the request. Which
        connection said hello is read from the frame itself (``_read_hello``)."""
        try:
            self._events(rank)
        finally:
            fd = self._asking[rank].pop(0) if self._asking[rank] else None
        if self._closing or self.connected[rank] or self.gone[rank]:
            return False
        if fd is not None:
            if self._holder[rank] is None:
                self._holder[rank] = fd
                return True
            return False
        return not self._shaken[rank]

    def _read_hello(self, rank: int) -> None:
        """Read what rank ``rank``'s attached peer sent: the hello makes it the runner;
        anything else is ignored (one note line) and the peer disconnected. The sender
        is the frame's own connection (``ZMQ_SRCFD``) where libzmq gives it: the
        connection the Doorman's answer was tied to (``_admit``: the oldest one asking)
        may be another, accepted earlier and still silent."""
        sock = self.ctls[rank]
        while sock.poll(0, zmq.POLLIN):
            try:
                message = sock.recv(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return
            frame, src = message.bytes, _source_fd(message)
            attached = self._attached[rank]
            if attached is not None and src is not None and src != attached[0]:
                attached = (src, _peer_address(src))
            if hello_version(frame) is not None:
                self.connected[rank] = True
                self._runner_fd[rank] = src if src is not None else (
                    attached[0] if attached else self._holder[rank])
                self._attached[rank] = None
                return
            if attached is None:  # what a peer that left, or is being disconnected, sent
                continue
            fd, address = attached
            self._holder[rank] = fd  # the sender holds the port until its connection ends
            self._attached[rank] = None
            peer = f" from {address}" if address else ""
            try:
                print(f"bench.py: note: ignored a peer{peer} on the control port "
                      f"{self.ctl_endpoint(rank)} (rank {rank}): its first message was not "
                      f"a runner's hello; it was disconnected", file=sys.stderr, flush=True)
            finally:
                _shut_down(fd, address)

    def problem(self, rank: int) -> Optional[str]:
        """One line when rank ``rank``'s runner was connected and its connection closed."""
        self._events(rank)
        if self.gone[rank]:
            return f"{self.name(rank)} disconnected (its process ended or its host closed " \
                   f"the connection)"
        return None

    def wait_connected(self, rank: int, timeout_s: float) -> None:
        """Wait (at most ``timeout_s``) until rank ``rank``'s runner is connected;
        ``PeerTimeout`` (one line with the command that starts it) when it is not."""
        deadline = time.monotonic() + timeout_s
        while True:
            self._events(rank)
            if self.connected[rank] or self.gone[rank]:
                return
            if time.monotonic() > deadline:
                raise PeerTimeout(
                    f"no remote runner connected to {self.ctl_endpoint(rank)} (rank {rank}) "
                    f"within {timeout_s:g} s; start it on its host with: "
                    f"{runner_command(self.host, self.ports.ctls[rank])}")
            poller = zmq.Poller()  # the next event or frame (under the Doorman's lock,
            poller.register(self._monitors[rank], zmq.POLLIN)  # which reads them too)
            poller.register(self.ctls[rank], zmq.POLLIN)
            with self.doorman.lock:
                poller.poll(POLL_SLICE_MS)

    def close(self, reason: str = "") -> None:
        """Send ``Goodbye(reason)`` to every runner still connected (each gets up to
        ``GOODBYE_LINGER_MS`` to take it), then close every socket and the context."""
        frame = encode_control(Goodbye(reason))
        for rank in range(len(self.ctls)):
            self._events(rank)
        if self.doorman is not None:
            with self.doorman.lock:  # its thread reads no socket of these from now on
                self._closing = True
        for rank, sock in enumerate(self.ctls):
            linger = 0
            if self.connected[rank]:
                try:
                    sock.send(frame, zmq.NOBLOCK)
                    linger = GOODBYE_LINGER_MS
                except zmq.ZMQError:
                    pass
            sock.disable_monitor()
            sock.close(linger=linger)
        for monitor in self._monitors:
            monitor.close(linger=0)
        if self.doorman is not None:
            self.doorman.close()
        self.ctx.term()  # every socket is closed: waits at most GOODBYE_LINGER_MS


def _source_fd(frame: zmq.Frame) -> Optional[int]:
    """The fd of the tcp connection ``frame`` came in on (``ZMQ_SRCFD``, deprecated in
    libzmq 4.3 but there); ``None`` where this libzmq does not give it."""
    try:
        fd = frame.get(zmq.SRCFD)
    except (zmq.ZMQError, AttributeError, TypeError):
        return None
    return fd if isinstance(fd, int) and fd >= 0 else None


def _duplicate(fd: int) -> socket.socket:
    """A socket object on a duplicate of ``fd`` (libzmq's connection; closing it leaves
    libzmq's open). Raises ``OSError`` where ``fd`` is closed or, its number reused, no
    socket (a pipe of the run's own, say): the duplicate is then closed here, as
    ``socket.socket`` leaves it open on that error, and a duplicate left open would
    hold that pipe's write end, and its reader's wait for the end, for good."""
    dup = os.dup(fd)
    try:
        return socket.socket(fileno=dup)
    except BaseException:
        os.close(dup)
        raise


def _peer_address(fd: int) -> str:
    """``HOST:PORT`` of the peer of the tcp connection ``fd`` (one of libzmq's, read
    through a duplicate); ``""`` where it cannot be read."""
    try:
        with _duplicate(fd) as conn:
            host, port = conn.getpeername()[:2]
    except (OSError, ValueError, TypeError):
        return ""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _shut_down(fd: int, address: str, how: int = socket.SHUT_RDWR) -> None:
    """Shut down the tcp connection ``fd`` (libzmq's, through a duplicate: libzmq sees
    it end and closes it), if it still is the one to ``address``; ``how``: ``SHUT_WR``
    only sends the peer the connection's end, after what was sent to it."""
    try:
        with _duplicate(fd) as conn:
            if not address or _peer_address(conn.fileno()) != address:
                return  # closed meanwhile, its number reused: not that peer's
            conn.shutdown(how)
    except (OSError, ValueError):
        pass


class RemoteSchedulerSockets:
    """``transport.SchedulerSockets``' interface for one remote runner (rank 0): the
    PUSH ``s2r`` and PULL ``r2s`` bound at the fixed data ports in the case's context
    ``ctx``, and the run's control socket of rank 0, which ``close`` leaves open."""

    def __init__(self, ctx: zmq.Context, remote: RemoteRunners):
        s2r, r2s = remote.data_endpoints()
        self.s2r: Optional[zmq.Socket] = None
        self.r2s: Optional[zmq.Socket] = None
        try:
            self.s2r = open_socket(ctx, zmq.PUSH, s2r, bind=True, options=KEEPALIVE)
            self.r2s = open_socket(ctx, zmq.PULL, r2s, bind=True, options=KEEPALIVE)
        except BaseException:
            self.close()
            raise
        self.ctl = remote.ctls[0]
        self.endpoints = Endpoints(s2r=s2r, r2s=r2s, ctl=remote.ctl_endpoint(0))

    def close(self) -> None:
        for sock in (self.s2r, self.r2s):
            if sock is not None:
                sock.close(linger=0)
