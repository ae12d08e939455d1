"""A runner started by hand on another host: ``python bench.py runner --connect
tcp://SCHEDULER:PORT`` (``cli.runner``) runs ``serve_remote``.

It connects its control socket to the scheduler's (``bench.py ... --remote-runners``,
``wire.remote``: the port of its rank) and sends its hello (``wire.remote.runner_hello``,
with its protocol version: what claims the port for it), then serves the run's cases in a loop until the
scheduler's ``Goodbye``: each case starts with a ``Handshake`` carrying its
``RunnerConfig`` (the protocol version is checked first: another version refuses the
case and the runner exits), gets a fresh ``ModelRunner``, connects its data sockets to
the ports the config names on the scheduler's address, runs the case as a spawned
runner does (``runner_loop.serve_case``; a ``--pp`` stage's config, ``pp_size`` set:
``pp_stage.make_stage`` joins the stages' gloo group through the scheduler's tcp store,
whose address is moved to the scheduler's as the data endpoints are, and
``pp_stage.serve_stage`` runs the stage), then closes its data sockets, unfreezes and
collects the heap (each case freezes it after warm-up) and waits for the next case.
Why a loop and not a runner per case: ``wire.remote``.

CPUs: started with ``--cpu-affinity SET`` (``cli.runner``) it pins itself to SET before
it connects; its connected line says so, and each case's ``Ready`` names the CPUs its
kernel lets it run on (``wire.remote.CPUS_KEY``), which the scheduler records in the
case's ``cpus_allowed`` under ``runner`` / ``rank N``.

What it refuses, before a case starts (an ``ErrorReport`` to the scheduler, the line on
stderr, exit 3): the shared-memory ring (local only: ``--transport shm*``), and a
pickled codec unless this runner was started with ``--allow-pickle-over-tcp`` too: the
scheduler's own flag cannot speak for this host, since a pickle frame from whatever
answers at the scheduler's address runs code here.

Liveness: its control socket is monitored from before its connect; a connection that
ends before the scheduler's first message (the scheduler's PAIR did not take it and
the scheduler ended it: ``wire.remote``) is replaced by a fresh socket that says hello
again, where the scheduler's port takes it (one that refuses it for having its runner:
the line of a first connect so refused, exit 3). When the scheduler's connection closes
(the scheduler exited or was killed, or its host closed it) the runner says so in one line
and exits 5, between cases or during one (within ``transport.POLL_SLICE_MS`` of its
waits), a ``--pp`` stage's join of the scheduler's store included (``wire.pp.StageLink``,
within ``wire.pp.JOIN_SLICE_S``: ``..., noticed while joining the stages' store at
tcp://...``). Within a case the peer timeout of the config applies as for a spawned runner;
between cases it waits without a deadline (the scheduler writes its results there)
but TCP keepalive (``wire.remote.KEEPALIVE``) ends a connection to a host that
vanished.

Exit codes: 0 after the ``Goodbye`` of a run whose cases it all served cleanly; 2 the
scheduler cannot be reached or the peer at that address does not complete the ZeroMQ
handshake (a data port, not the scheduler: one line, within the connect timeout,
``transport.CONNECT_TIMEOUT_S`` unless ``--connect-timeout``); 3 a handshake refused:
by this runner (protocol version, ring, pickle) or by the scheduler, whose control
port already has its runner (``wire.remote.Doorman``: refused as it connects, the
scheduler's run goes on); 4 a step failed (reported to the scheduler first); 5 the
scheduler went away, during the ZeroMQ handshake of the first connect too (the peer
closed or failed it and its port refuses a fresh connect: ``gone_in_handshake``), or
said ``Goodbye`` in the middle of a case, where a control message was due
(``wire.channel.RunnerChannel.recv_control``); 1 a ``Goodbye`` between cases said the
run failed.
"""

from __future__ import annotations

import gc
import sys
from typing import Callable, Optional

import msgspec
import zmq

from ipc_bench.engine.config import ConfigError
from ipc_bench.errors import zmq_context
from ipc_bench.harness.affinity import cpus_allowed
from ipc_bench.harness.environment import source_code
from ipc_bench.harness.runner_loop import (EXIT_HANDSHAKE, EXIT_OK, EXIT_USAGE,
                                           _model_runner, accept_handshake, scheduler_gone,
                                           serve_case, speak_as)
from ipc_bench.wire.codecs import PICKLED_CODECS
from ipc_bench.wire import control
from ipc_bench.wire.control import Goodbye, Handshake, recv_control
from ipc_bench.wire.handshake import RunnerConfig
from ipc_bench.wire.pp import TCP_STORE_PREFIX
from ipc_bench.wire.remote import (CLOCK_KEY, CODE_KEY, CPUS_KEY, KEEPALIVE, ZAP_REFUSED,
                                   clock_id, runner_hello)
from ipc_bench.wire.transport import (CONNECT_TIMEOUT_S, EndpointError, HandshakeRefused,
                                      NoHandshake, PeerError, RunnerSockets,
                                      connect_watched, destroy_context,
                                      recv_monitor_message, split_tcp_endpoint,
                                      tcp_endpoint, tcp_refused)

#: How its lines on stderr begin (the command that runs it, ``cli.runner``).
PREFIX = "bench.py runner"
#: Exit code after a ``Goodbye`` that says the run failed.
EXIT_RUN_FAILED = 1
#: How long a wait for the next case may last: no deadline (module docstring).
_NO_DEADLINE_S = float("inf")


#: The control socket's reconnection interval (ms): about 24 days, so that it never
#: makes a second connection (libzmq still reports a refused first one). A hello sent on
#: it goes on its one connection or nowhere: a connection the scheduler's PAIR did not
#: take, which the scheduler ends (``wire.remote.RemoteRunners._cut_if_dropped``), is
#: replaced by a fresh socket that says hello once more (``_SchedulerWatch.relink``), so
#: that no hello is lost and none comes twice on one connection.
_ONE_CONNECTION_MS = 2**31 - 1
#: Most fresh connections (``_SchedulerWatch.relink``) before the scheduler's first
#: message: each stands for a connection the scheduler's PAIR did not take, which a
#: stray's pipe still attached causes, a few at most; a peer that ends every connection
#: (not this harness's scheduler) ends the runner at the next, not in a silent loop.
MAX_RELINKS = 8
class _RemoteSockets(RunnerSockets):
    """``RunnerSockets`` whose control socket ``ctl`` is one already connected
    (``_SchedulerWatch.connect``); the data sockets as a spawned runner's, with
    ``KEEPALIVE``."""

    def __init__(self, ctl: zmq.Socket, connect_timeout_s: float):
        self.connect_timeout_s, self.options = connect_timeout_s, KEEPALIVE
        self.s2r: Optional[zmq.Socket] = None
        self.r2s: Optional[zmq.Socket] = None
        self.ctl = ctl


class _SchedulerWatch:
    """The runner's control socket and its monitor: ``problem()`` is one line once the
    scheduler's end has closed the connection. Until the scheduler's first message
    (``answered``), a connection that ended is replaced where the scheduler's port
    takes a fresh one (``relink``): a scheduler still there ends the connection its PAIR
    did not take (``_ONE_CONNECTION_MS``)."""

    def __init__(self, ctx: zmq.Context, endpoint: str, connect_timeout_s: float):
        self.ctx, self.endpoint, self.connect_timeout_s = ctx, endpoint, connect_timeout_s
        self.answered = False
        self.sock: Optional[zmq.Socket] = None
        self.monitor: Optional[zmq.Socket] = None
        self.gone = False
        self.relinks = 0

    def connect(self) -> zmq.Socket:
        """Connect a fresh control socket, watched from before its connect
        (``transport.connect_watched``, its exceptions), and say hello on it
        (``wire.remote.runner_hello``: what claims the port). The hello never
        waits: a connected PAIR takes it at once; one whose connection ended already
        keeps it, and ``problem()`` says the connection ended."""
        self.sock, self.monitor = connect_watched(
            self.ctx, zmq.PAIR, self.endpoint, connect_timeout_s=self.connect_timeout_s,
            options={**KEEPALIVE, zmq.RECONNECT_IVL: _ONE_CONNECTION_MS})
        self.gone = False
        try:
            self.sock.send(runner_hello(control.PROTOCOL_VERSION), zmq.NOBLOCK)
        except zmq.Again:  # see above: it never waits
            pass
        return self.sock

    def problem(self) -> Optional[str]:
        while not self.gone and self.monitor is not None and self.monitor.poll(0):
            self.gone = recv_monitor_message(self.monitor)["event"] == zmq.EVENT_DISCONNECTED
        if self.gone:
            again = (f" {self.relinks + 1} times before its first message"
                     if self.relinks >= MAX_RELINKS else "")
            return f"the scheduler at {self.endpoint} closed the connection{again}"
        return None

    def relink(self, socks: RunnerSockets) -> bool:
        """Where the connection ended before the scheduler's first message: close the
        socket (the hello it holds goes with it) and connect a fresh one (``socks.ctl``);
        whether it is connected (a scheduler gone refuses it: the end's line stands; so
        after ``MAX_RELINKS``, with how many times the connection ended).
        ``HandshakeRefused`` where the scheduler's port refused it (it has its runner:
        another took the port meanwhile), for the line of a first connect so refused."""
        if self.answered or not self.gone or self.relinks >= MAX_RELINKS:
            return False
        self.relinks += 1
        self.close()
        try:
            socks.ctl = self.connect()
        except HandshakeRefused:
            raise
        except EndpointError:
            return False
        return True

    def close(self) -> None:
        """Stop the monitor and close the socket (where ``RunnerSockets.close`` has not)."""
        if self.monitor is not None:
            if not self.sock.closed:
                self.sock.disable_monitor()
            self.monitor.close(linger=0)
            self.monitor = None
        if self.sock is not None:
            self.sock.close(linger=0)


def remote_config(host: str, allow_pickle: bool) -> Callable[[RunnerConfig], RunnerConfig]:
    """The check and rewrite of each case's config on a runner started by hand:
    ``ConfigError`` for the ring or a pickled codec this host did not allow; the data
    endpoints moved to ``host``, the scheduler's address as this runner reached it
    (the scheduler names its bind address, which may be a wildcard)."""

    def adapt(config: RunnerConfig) -> RunnerConfig:
        if config.s2r_ring is not None:
            raise ConfigError("the shared-memory ring is local only: a runner on another "
                              "host needs --transport tcp")
        if config.codec in PICKLED_CODECS and not allow_pickle:
            raise ConfigError(f"refusing to decode {config.codec} from the scheduler over "
                              f"tcp (pickle runs code on load); start this runner with "
                              f"--allow-pickle-over-tcp if the scheduler's host and network "
                              f"are trusted")
        ports = [split_tcp_endpoint(e)[1] for e in (config.s2r_endpoint, config.r2s_endpoint)]
        moved = dict(s2r_endpoint=tcp_endpoint(host, ports[0]),
                     r2s_endpoint=tcp_endpoint(host, ports[1]))
        if config.pp_size is not None:  # a pipeline stage: its group's store is there too
            if not (config.pp_store or "").startswith(TCP_STORE_PREFIX):
                raise ConfigError(f"a pipeline stage on another host needs the scheduler's "
                                  f"tcp store, not {config.pp_store!r}")
            moved["pp_store"] = tcp_endpoint(host, split_tcp_endpoint(config.pp_store)[1])
        return msgspec.structs.replace(config, **moved)
    return adapt


def _runner_or_stage(config: RunnerConfig,
                     peer_problem: Optional[Callable[[], Optional[str]]] = None):
    """A pipeline stage (``pp_stage.make_stage``: joins its gloo group through the
    scheduler's store, checking ``peer_problem`` as it waits there) for a config with
    ``pp_size``, else the model runner."""
    if config.pp_size is not None:
        from ipc_bench.harness.pp_stage import make_stage

        return make_stage(config, peer_problem)
    return _model_runner(config)


def connect_problem(ctl_endpoint: str, exc: EndpointError, connect_timeout_s: float) -> str:
    """The one line (after ``bench.py runner: error: ``) for a control connection that
    failed with ``exc``: a port that already has its runner (the scheduler's
    ``wire.remote.Doorman`` refused it), a listener that did not complete the ZeroMQ
    handshake (a data port, or not the scheduler: it failed the handshake, or did not
    complete it within ``connect_timeout_s``: silent, or speaking another protocol), else ``exc``'s own line (nobody
    listens there) and where the port to connect to comes from."""
    if isinstance(exc, HandshakeRefused) and exc.status_code == ZAP_REFUSED:
        return (f"the scheduler at {ctl_endpoint} already has its runner on that port (one "
                f"runner per control port: rank r's is --port's base + r); this one was "
                f"refused")
    if isinstance(exc, NoHandshake):
        if exc.timed_out:
            why = (f"did not complete the ZeroMQ handshake within {connect_timeout_s:g} s "
                   f"(it sent nothing, or bytes that are not ZeroMQ's)")
        else:  # it closed or failed the handshake, whatever time was left
            why = ("failed the ZeroMQ handshake (not a socket of this harness, or one of "
                   "another kind, such as a data port)")
        return (f"the peer at {ctl_endpoint} {why}: is it the scheduler's control port? "
                f"The scheduler prints the command with the port to connect to")
    return (f"{exc} (start the scheduler first, with --remote-runners; it prints the "
            f"command with the port to connect to)")


def gone_in_handshake(ctl_endpoint: str, exc: EndpointError) -> bool:
    """Whether the connect to the control port ``ctl_endpoint`` failed with ``exc``
    because the scheduler went away during the ZeroMQ handshake (killed as it answered):
    its peer closed or failed the handshake (``NoHandshake``, not timed out) and a fresh
    connect to the port is refused now (``transport.tcp_refused``). A peer that failed
    the handshake and still listens (a data port, not ZeroMQ) is not gone."""
    return (isinstance(exc, NoHandshake) and not exc.timed_out
            and tcp_refused(ctl_endpoint))


def serve_remote(ctl_endpoint: str, allow_pickle: bool = False,
                 connect_timeout_s: float = CONNECT_TIMEOUT_S, pinned: bool = False) -> int:
    """Connect to the scheduler's control port ``ctl_endpoint`` (``tcp://ADDR:PORT``),
    waiting at most ``connect_timeout_s`` for its ZeroMQ handshake, and serve its cases
    until ``Goodbye``; returns the exit code (module docstring). ``pinned``: this
    process was pinned to CPUs (``--cpu-affinity``): the connected line and each
    ``Ready`` name the set its kernel reports (``wire.remote.CPUS_KEY``)."""
    speaker = speak_as(PREFIX)  # the runner loop's lines too: this is bench.py runner
    host = split_tcp_endpoint(ctl_endpoint)[0]
    ctx = zmq_context()  # under ulimit -v: our line, not libzmq's abort
    socks: Optional[RunnerSockets] = None
    watch: Optional[_SchedulerWatch] = None
    try:
        watch = _SchedulerWatch(ctx, ctl_endpoint, connect_timeout_s)
        try:
            socks = _RemoteSockets(watch.connect(), connect_timeout_s)
        except EndpointError as exc:
            if gone_in_handshake(ctl_endpoint, exc):
                return scheduler_gone(f"the scheduler at {ctl_endpoint} closed the "
                                      f"connection, noticed while connecting to it (its "
                                      f"port refuses connections now)")
            print(f"{PREFIX}: error: {connect_problem(ctl_endpoint, exc, connect_timeout_s)}",
                  file=sys.stderr)
            return EXIT_HANDSHAKE if isinstance(exc, HandshakeRefused) else EXIT_USAGE
        cpus = f"; pinned to CPUs {cpus_allowed(0)}" if pinned else ""
        print(f"{PREFIX}: connected to {ctl_endpoint}{cpus}; serving cases until the "
              f"scheduler's run ends", file=sys.stderr)
        return _serve_cases(socks, watch.problem, remote_config(host, allow_pickle), pinned,
                            watch)
    finally:
        if socks is not None:
            socks.close(linger_ms=2000)  # the control socket's last report goes first
        if watch is not None:
            watch.close()
        destroy_context(ctx)
        speak_as(speaker)


def _serve_cases(socks: RunnerSockets, peer_problem: Callable[[], Optional[str]],
                 adapt: Callable[[RunnerConfig], RunnerConfig], pinned: bool = False,
                 watch: Optional[_SchedulerWatch] = None) -> int:
    """The loop of ``serve_remote``: one case per ``Handshake`` until ``Goodbye``;
    each ``Ready`` names this checkout's code (``environment.source_code``) and, with
    ``pinned``, the CPUs this process runs on then. A connection that ends before the
    scheduler's first message is replaced where ``watch`` can (``relink``)."""
    served = 0
    checkout = source_code()  # once: the scheduler records it with each case
    while True:
        try:
            msg = recv_control(socks.ctl, _NO_DEADLINE_S, peer_problem,
                               "the next case or the end of the run")
        except PeerError as exc:  # the line of every wait of this runner (no "error:")
            try:
                if watch is not None and watch.relink(socks):
                    continue
            except HandshakeRefused as refused:  # the scheduler is there: as a first connect
                print(f"{PREFIX}: error: "
                      f"{connect_problem(watch.endpoint, refused, watch.connect_timeout_s)}",
                      file=sys.stderr)
                return EXIT_HANDSHAKE
            return scheduler_gone(str(exc))
        if watch is not None:
            watch.answered = True
        if isinstance(msg, Goodbye):
            ended = f"the run failed: {msg.reason}" if msg.reason else "the run is complete"
            print(f"{PREFIX}: {ended} ({served} case(s) served)", file=sys.stderr)
            return EXIT_RUN_FAILED if msg.reason else EXIT_OK
        info = {CLOCK_KEY: clock_id(), CODE_KEY: checkout,
                **({CPUS_KEY: cpus_allowed(0) or "unknown"} if pinned else {})}
        accepted = accept_handshake(socks, msg, peer_problem, adapt, info,
                                    make_runner=lambda c: _runner_or_stage(c, peer_problem))
        if isinstance(accepted, int):
            return accepted if isinstance(msg, Handshake) else EXIT_HANDSHAKE
        try:
            config, runner, _ = accepted
            if config.pp_size is not None:
                from ipc_bench.harness.pp_stage import serve_stage

                code = serve_stage(config, socks, runner, peer_problem)
            else:
                code = serve_case(socks, accepted, peer_problem)
        finally:
            socks.close_data()
        if code != EXIT_OK:
            return code
        served += 1
        gc.unfreeze()
        gc.collect()
