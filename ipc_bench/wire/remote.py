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

Liveness. Each control socket is monitored (``ZMQ_EVENT_ACCEPTED``,
``ZMQ_EVENT_HANDSHAKE_SUCCEEDED``, ``ZMQ_EVENT_DISCONNECTED``; the runner's connection is
the first to complete a ZeroMQ handshake, so another peer that connects to the port and
leaves is not taken for it): a runner whose connection closes (its process died, was
killed, or its host closed it) is named by ``problem(rank)`` within the next wait slice
(``transport.POLL_SLICE_MS``) of any wait, as a spawned runner's exit is. A host that
vanishes without closing the connection is caught by the peer timeout while a case runs,
and by TCP keepalive (``KEEPALIVE``: about 25 s) between cases.

One runner per control port: the ``Doorman`` (a ZAP handler) admits the first peer whose
ZeroMQ handshake reaches it and refuses every later one at once, as it connects (a
second runner started for a taken port exits with one line; the run goes on).

Security: every port here accepts a connection from anyone who can reach ``--host``. The
first peer on a control port is the runner of that rank (it can feed the scheduler
made-up outputs, which the input and token oracles may catch; with
``--allow-pickle-over-tcp`` it can run code in the scheduler), and a second peer on the
``SchedulerOutput`` port would receive frames in turn with the runner (PUSH). The stages'
store (``--pp``) takes any client: one can read or overwrite the gloo rendezvous keys
(misdirecting or stalling the stages); each stage's gloo listener (an ephemeral port on
its own address towards the scheduler) takes whoever connects during the rendezvous.
Bind an address of a trusted network only.
"""

from __future__ import annotations

import threading
import time
from typing import NamedTuple, Optional

import zmq

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

_EVENTS = zmq.EVENT_ACCEPTED | zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_DISCONNECTED

#: ZAP status (RFC 27) of a connection refused on a control port that already has its
#: runner; the refused peer's monitor reports it (``ZMQ_EVENT_HANDSHAKE_FAILED_AUTH``).
ZAP_REFUSED = 400
#: Longest wait of the doorman's thread for a request (ms): ``close`` wakes it at once,
#: so it wakes (and takes the GIL) only for requests, not on a timer.
_DOORMAN_POLL_MS = 10_000


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
    on each control port it admits the first peer whose ZeroMQ handshake
    reaches it (the runner of that rank) and refuses every later one with status
    ``ZAP_REFUSED``, which ends that peer's handshake at once: a second runner started
    for a port that has one is told so when it connects (``transport.HandshakeRefused``)
    instead of waiting on a PAIR socket that never reads it (a bound PAIR takes one
    peer and drops the pipes of the others, silently). Libzmq asks the handler because
    each control socket has a ``ZMQ_ZAP_DOMAIN`` (``zap_domain``); the answer comes from
    this thread, so it does not wait for the scheduler's loop; between requests the
    thread sleeps in ``zmq_poll`` (no timer wakes it during a measured case).
    ``admitted[rank]``: that rank's runner got in. ``close`` wakes and stops the thread."""

    ENDPOINT = "inproc://zeromq.zap.01"

    def __init__(self, ctx: zmq.Context, n: int, start_timeout_s: float = 10.0):
        self.ctx, self.n = ctx, n
        self.admitted = [False] * n
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
        id, mechanism, ...): 200 for the first peer of a control port's domain,
        ``ZAP_REFUSED`` after it, 200 for a domain that is not a control port's."""
        version, request_id = (request + [b"1.0", b""])[:2]
        domain = request[2].decode(errors="replace") if len(request) > 2 else ""
        status = b"200"
        for rank in range(self.n):
            if domain == zap_domain(rank):
                if self.admitted[rank]:
                    status = str(ZAP_REFUSED).encode()
                self.admitted[rank] = True
        return [version, request_id, status, b"" if status == b"200" else
                b"this control port already has its runner", b"", b""]

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
        self.ctx = zmq.Context()
        self.ctls: list[zmq.Socket] = []
        self._monitors: list[zmq.Socket] = []
        self.connected = [False] * n
        self.gone = [False] * n
        # The runner's connection: the last one accepted when the first ZeroMQ handshake
        # succeeded (its fd, as the monitor's ACCEPTED and DISCONNECTED events give it),
        # so that another peer's connection coming and going is not taken for its.
        self._accepted: list[Optional[int]] = [None] * n
        self._runner_fd: list[Optional[int]] = [None] * n
        self.doorman: Optional[Doorman] = None
        try:
            self.doorman = Doorman(self.ctx, n)
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
        ctx = zmq.Context()
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
        monitor = self._monitors[rank]
        while monitor.poll(0):
            message = recv_monitor_message(monitor)
            event, fd = message["event"], message["value"]
            if event == zmq.EVENT_ACCEPTED:
                self._accepted[rank] = fd
            elif event == zmq.EVENT_HANDSHAKE_SUCCEEDED and self._runner_fd[rank] is None:
                self._runner_fd[rank] = self._accepted[rank]
                self.connected[rank] = True
            elif event == zmq.EVENT_DISCONNECTED and fd == self._runner_fd[rank] \
                    and self.connected[rank]:
                self.connected[rank], self.gone[rank] = False, True

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
            self._monitors[rank].poll(POLL_SLICE_MS)

    def close(self, reason: str = "") -> None:
        """Send ``Goodbye(reason)`` to every runner still connected (each gets up to
        ``GOODBYE_LINGER_MS`` to take it), then close every socket and the context."""
        frame = encode_control(Goodbye(reason))
        for rank, sock in enumerate(self.ctls):
            self._events(rank)
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
