"""Tensor-parallel broadcast: one scheduler, N runner ranks (``--tp N``).

As vLLM's multiprocess executor with TP > 1 (``vllm/v1/executor/multiproc_executor.py``
and ``vllm/distributed/device_communicators/shm_broadcast.py``): the scheduler encodes
each ``SchedulerOutput`` once and broadcasts it to every rank; every rank decodes it and
runs the same step on its own persistent batch; one rank (the driver, rank 0 here)
replies with the ``ModelRunnerOutput``.

Broadcast transports (``TpSchedulerSockets`` / ``TpSchedulerChannel``):

- ``shm`` / ``shm-block``: the shared-memory ring (``shm_ring.RingWriter``) with N
  readers, each rank reading as its own reader index (vLLM's ``MessageQueue``); the
  payload is written once into shared memory.
- ``ipc`` / ``tcp``: ZeroMQ XPUB -> SUB, vLLM's own path for messages larger than a
  chunk and for readers on other nodes. The frame is encoded once and handed to ZeroMQ
  once; libzmq queues the same reference-counted message on every subscriber's pipe
  and writes its bytes to each connection, so ``N`` copies cross the kernel (one PAIR
  per rank would send the same encoded bytes ``N`` times from Python; XPUB keeps the
  single send call that the ring also has, and its subscription messages tell the
  scheduler when every rank is connected, so no frame is lost to a late joiner).
  ``SNDHWM`` is 0 (never drop); the scheduler's window and the oracle's checks bound
  how far a slow rank can fall behind.

Replies: rank 0 answers every step on ``r2s`` (PUSH -> PULL). Every rank has its own
control socket (``ctl0`` .. ``ctl{N-1}``, PAIR); control messages go to every rank and
``recv_control`` gathers one answer per rank (``per_rank`` keeps them all: the input
oracle checks every rank's digests, the report carries every rank's columns). A rank
other than 0 never writes to ``r2s`` but for the empty frame that announces its error
report, which the scheduler, waiting there for rank 0, then reads from that rank's
control socket.
"""

from __future__ import annotations

import hashlib
import time
from typing import Callable, Optional

import zmq

from ipc_bench.errors import one_line
from ipc_bench.wire.channel import REPLY, REQUEST, ChannelError, RingRunnerChannel, RunnerChannel
from ipc_bench.wire.control import (ControlMessage, ErrorReport, KeepAlive, decode_control,
                                    encode_control, no_beat)
from ipc_bench.wire.remote import KEEPALIVE, RemoteRunners
from ipc_bench.wire.shm_ring import RingReader, RingWriter
from ipc_bench.wire.transport import (POLL_SLICE_MS, TRANSPORTS, EndpointDir, PeerError,
                                      PeerTimeout, RunnerSockets, noticed, open_socket,
                                      send_frame, tcp_bind_endpoint, wait_recv)

#: Rank counts ``--tp`` accepts.
TP_SIZES = (1, 2, 4)
#: How often the scheduler's channel checks every rank's liveness while frames flow
#: (a rank other than 0 that dies is otherwise noticed only at the next control
#: exchange or, on the ring, when its unread chunks fill the ring).
LIVENESS_INTERVAL_NS = POLL_SLICE_MS * 1_000_000
#: Column a rank adds to its ``RunnerReport``: the ``perf_counter_ns`` (CLOCK_MONOTONIC,
#: one clock for every process of the machine) at which its loop started, so its
#: relative ``runner_t0_ns`` can be put on the scheduler's clock.
ORIGIN_COLUMN = "runner_origin_ns"
#: Column a rank adds to its ``RunnerReport``: per step, the 64-bit blake2b digest
#: (unsigned) of the ``ModelRunnerOutput`` frame it encoded (rank 0's is the frame the
#: scheduler received; the other ranks encode theirs and send nothing). Equal digests:
#: the rank sampled the same tokens for the same requests.
OUTPUT_DIGEST_COLUMN = "runner_output_digest"


def frame_digest(frame: bytes) -> int:
    """The 64-bit blake2b digest of ``frame``, as an unsigned little-endian integer."""
    return int.from_bytes(hashlib.blake2b(frame, digest_size=8).digest(), "little")


def check_tp(value: int) -> int:
    """``value`` if it is one of ``TP_SIZES``; ``ValueError`` (one line) otherwise."""
    if value not in TP_SIZES:
        raise ValueError(f"--tp must be one of {', '.join(map(str, TP_SIZES))}, got {value}")
    return value


def tp_socket_names(n: int) -> tuple[str, ...]:
    """The names of the sockets ``TpSchedulerSockets`` binds for ``n`` ranks (or
    ``--pp`` stages), each an ``ipc://`` socket's file name in its ``EndpointDir``:
    ``s2r``, ``r2s``, then rank ``r``'s control socket ``ctl<r>``."""
    return ("s2r", "r2s", *(f"ctl{rank}" for rank in range(n)))


class TpSchedulerSockets:
    """The scheduler's bound sockets for ``n`` ranks: ``s2r`` XPUB (the broadcast over
    ZeroMQ; bound but unused under ``shm*``), ``r2s`` PULL (rank 0's replies),
    ``ctls[r]`` PAIR (rank ``r``'s control socket). ``transport`` and ``host`` as
    ``transport.SchedulerSockets``'. ``remote``: ranks started by hand on other hosts
    (``wire.remote``): ``s2r`` and ``r2s`` at the run's fixed ports, the control
    sockets the run's (tcp only). ``endpoints``: ``s2r``, ``r2s`` and ``ctls``
    (strings). Raises ``transport.EndpointError`` (after closing what it opened),
    ``ValueError`` for an unknown transport or a bad ``n``."""

    def __init__(self, ctx: zmq.Context, transport: str, endpoint_dir: Optional[EndpointDir],
                 n: int, host: str = "127.0.0.1", remote: Optional[RemoteRunners] = None):
        if transport not in TRANSPORTS:
            raise ValueError(f"unknown transport {transport!r}")
        check_tp(n)
        if transport != "tcp" and endpoint_dir is None:
            raise ValueError(f"the {transport} transport needs an EndpointDir")
        if remote is not None and (transport != "tcp" or n > remote.n):
            raise ValueError(f"{n} remote rank(s) over {transport}: needs tcp and at most "
                             f"{remote.n} rank(s)")
        self.n = n
        self.s2r: Optional[zmq.Socket] = None
        self.r2s: Optional[zmq.Socket] = None
        self.ctls: list[zmq.Socket] = []
        self._own_ctls = remote is None
        fixed = dict(zip(("s2r", "r2s"), remote.data_endpoints())) if remote else {}

        def bind(kind: int, name: str) -> zmq.Socket:
            endpoint = (fixed[name] if name in fixed else tcp_bind_endpoint(host)
                        if transport == "tcp" else f"ipc://{endpoint_dir.path}/{name}")
            return open_socket(ctx, kind, endpoint, bind=True,
                               options=KEEPALIVE if remote else None)

        s2r, r2s, *ctls = tp_socket_names(n)
        try:
            self.s2r = bind(zmq.XPUB, s2r)
            self.s2r.setsockopt(zmq.SNDHWM, 0)
            self.s2r.setsockopt(zmq.XPUB_VERBOSE, 1)
            self.r2s = bind(zmq.PULL, r2s)
            for rank in range(n):
                self.ctls.append(remote.ctls[rank] if remote else bind(zmq.PAIR, ctls[rank]))
        except BaseException:
            self.close()
            raise
        last = zmq.LAST_ENDPOINT
        self.endpoints = dict(s2r=self.s2r.getsockopt_string(last),
                              r2s=self.r2s.getsockopt_string(last),
                              ctls=[s.getsockopt_string(last) for s in self.ctls])

    def wait_for_subscribers(self, timeout_s: float,
                             peer_problem: Callable[[], Optional[str]]) -> None:
        """Wait until every rank's SUB socket has subscribed to ``s2r`` (at most
        ``timeout_s``): a frame published before would be lost to that rank.
        ``PeerTimeout`` names how many subscribed, ``PeerError`` when ``peer_problem``
        reports."""
        deadline = time.monotonic() + timeout_s
        subscribed = 0
        while subscribed < self.n:
            if self.s2r.poll(POLL_SLICE_MS, zmq.POLLIN):
                subscribed += self.s2r.recv()[:1] == b"\x01"
                continue
            problem = peer_problem()
            if problem:
                raise PeerError(one_line(noticed(problem,
                                                 "waiting for the ranks' subscriptions")))
            if time.monotonic() > deadline:
                raise PeerTimeout(f"no subscription of every rank within {timeout_s:g} s "
                                  f"({subscribed} of {self.n} subscribed)")

    def close(self) -> None:
        """Close every socket (linger 0); remote ranks' control sockets stay open (the
        run's, ``remote.RemoteRunners``)."""
        for sock in (self.s2r, self.r2s, *(self.ctls if self._own_ctls else ())):
            if sock is not None:
                sock.close(linger=0)


class TpSchedulerChannel:
    """The scheduler's end for N ranks, with ``SchedulerChannel``'s methods (the
    scheduler loop, the floor and the input oracle run through it unchanged).

    ``ring``: a ``shm_ring.RingWriter`` with N readers (``shm*``), else ``None``
    (XPUB). ``timeout_s`` / ``window`` as ``SchedulerChannel``'s; ``peer_problem()``:
    ``None`` while every rank lives, else one line naming the first rank that ended.
    ``sent_ns``: the ``perf_counter_ns`` at which each data frame (not the markers)
    was handed to the transport, in order, for the receive-to-ready figures.
    ``per_rank``: the messages of the last ``recv_control``, one per rank.
    ``rank_problem(r)``: as ``peer_problem`` for rank ``r`` alone (``recv_control``
    then minds only the ranks that have not answered: one that answered and exited,
    as every rank does after its report, is no fault); default: ``peer_problem``.
    """

    reply_rank = 0

    def __init__(self, socks: TpSchedulerSockets, ring: Optional[RingWriter], timeout_s: float,
                 peer_problem: Callable[[], Optional[str]], window: int = 1,
                 rank_problem: Optional[Callable[[int], Optional[str]]] = None):
        if window < 1:
            raise ValueError(f"window must be at least 1, got {window}")
        if ring is not None and ring.n_readers != socks.n:
            raise ValueError(f"the ring has {ring.n_readers} readers, the channel {socks.n}")
        self.socks, self.ring = socks, ring
        self.num_readers = socks.n
        self.timeout_s, self.window = timeout_s, window
        self.peer_problem = peer_problem
        self.rank_problem = rank_problem
        if ring is not None:
            ring.peer_problem = peer_problem
        self.in_flight = 0
        self.sent_ns: list[int] = []
        self.per_rank: list[ControlMessage] = []
        self._checked_ns = time.perf_counter_ns()
        self._pull = socks.r2s.recv

    def _check_ranks(self, now_ns: int) -> None:
        self._checked_ns = now_ns
        problem = self.peer_problem()
        if problem:
            raise PeerError(problem)

    def send(self, frame: bytes, seq: int, label: str = REQUEST,
             perf=time.perf_counter_ns) -> None:
        """Broadcast ``frame`` (step ``seq``) to every rank; ``ChannelError`` past the
        window; ``PeerError`` naming the rank when a rank has ended (checked at most
        every ``LIVENESS_INTERVAL_NS``), ``PeerTimeout`` when the ring stays full."""
        t = perf()
        if self.in_flight >= self.window:
            raise ChannelError(f"{label} {seq}: {self.in_flight} frames already in flight "
                               f"(window {self.window})")
        self.sent_ns.append(t)
        if self.ring is not None:
            self.ring.send(frame, self.timeout_s, label, seq)
        else:
            self.socks.s2r.send(frame)  # SNDHWM 0: queued, never blocks
        self.in_flight += 1
        if t - self._checked_ns > LIVENESS_INTERVAL_NS:
            self._check_ranks(t)

    def recv(self, seq: int, timeout_s: Optional[float] = None, label: str = REPLY) -> bytes:
        """Rank 0's reply to step ``seq`` (an empty frame, from any rank: read the
        control sockets), waiting at most ``timeout_s`` (default ``self.timeout_s``)."""
        try:
            frame = self._pull()  # waits at most one slice (RCVTIMEO)
        except zmq.Again:
            frame = wait_recv(self.socks.r2s, self.timeout_s if timeout_s is None else timeout_s,
                              self.peer_problem, f"{label} {seq} from rank {self.reply_rank}")
        self.in_flight -= 1
        return frame

    def send_marker(self, what: str = "a phase marker") -> None:
        """The empty frame to every rank: each turns to its control socket."""
        if self.ring is not None:
            self.ring.send(b"", self.timeout_s, what)
        else:
            self.socks.s2r.send(b"")

    def send_control(self, msg: ControlMessage, timeout_s: Optional[float] = None) -> None:
        """``msg`` to every rank's control socket."""
        frame = encode_control(msg)
        for rank, sock in enumerate(self.socks.ctls):
            send_frame(sock, frame, self.timeout_s if timeout_s is None else timeout_s,
                       self.peer_problem, f"{type(msg).__name__} to rank {rank}")

    def recv_control(self, what: str = "control message",
                     timeout_s: Optional[float] = None) -> ControlMessage:
        """One control message from every rank; returns rank 0's (all of them in
        ``per_rank``), or, as soon as any rank sends one, that rank's ``ErrorReport``
        with ``rank R: `` before its message. Waits at most ``timeout_s`` for all:
        ``PeerTimeout`` names the ranks that did not answer; ``PeerError`` for a rank
        that ended or sent garbage. A rank's ``KeepAlive`` (sent while it prepares the
        floor or its report) is no answer: it restarts that rank's wait."""
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        deadline = [time.monotonic() + timeout_s] * self.num_readers
        got: dict[int, ControlMessage] = {}
        poller = zmq.Poller()
        for sock in self.socks.ctls:
            poller.register(sock, zmq.POLLIN)
        index = {sock: rank for rank, sock in enumerate(self.socks.ctls)}
        while len(got) < self.num_readers:
            ready = dict(poller.poll(POLL_SLICE_MS))
            for sock in ready:
                rank = index[sock]
                msg = decode_control(sock.recv(zmq.NOBLOCK), f"{what} (rank {rank})")
                if isinstance(msg, ErrorReport):
                    return ErrorReport(f"rank {rank}: {msg.message}", msg.step)
                if isinstance(msg, KeepAlive):
                    deadline[rank] = time.monotonic() + timeout_s
                    continue
                got[rank] = msg
                poller.unregister(sock)  # its next message answers the next request
            if ready:
                continue
            problem = self._unanswered_problem(got)
            if problem:
                if poller.poll(POLL_SLICE_MS):  # its last message may be on its way
                    continue
                raise PeerError(one_line(noticed(problem, f"waiting for {what}")))
            now = time.monotonic()
            if any(now > deadline[r] for r in range(self.num_readers) if r not in got):
                missing = [r for r in range(self.num_readers)
                           if r not in got and now > deadline[r]]
                raise PeerTimeout(f"no {what} within {timeout_s:g} s (rank(s) "
                                  f"{', '.join(map(str, missing))} did not answer)")
        self.per_rank = [got[r] for r in range(self.num_readers)]
        return self.per_rank[0]

    def _unanswered_problem(self, got: dict) -> Optional[str]:
        """The first problem of a rank that has not answered (``rank R: ...``)."""
        if self.rank_problem is None:
            return self.peer_problem()
        for rank in range(self.num_readers):
            problem = None if rank in got else self.rank_problem(rank)
            if problem:
                return f"rank {rank}: {problem}"
        return None


# ======================================================================================
# A rank's end


def connect_rank_data(socks: RunnerSockets, s2r_endpoint: str, r2s_endpoint: str) -> None:
    """Connect a rank's ``s2r`` SUB (subscribed to everything) and ``r2s`` PUSH to the
    scheduler's XPUB and PULL (``transport.EndpointError``, one line)."""
    ctx = socks.ctl.context
    try:
        socks.s2r = open_socket(ctx, zmq.SUB, s2r_endpoint, bind=False,
                                connect_timeout_s=socks.connect_timeout_s,
                                options=socks.options)
        socks.s2r.setsockopt(zmq.SUBSCRIBE, b"")
        socks.r2s = open_socket(ctx, zmq.PUSH, r2s_endpoint, bind=False,
                                connect_timeout_s=socks.connect_timeout_s,
                                options=socks.options)
    except BaseException:
        for sock in (socks.s2r, socks.r2s):
            if sock is not None:
                sock.close(linger=0)
        socks.s2r = socks.r2s = None
        raise


class _RankReport:
    """Mixin of a rank's channel: notes the ``perf_counter_ns`` before its first data
    frame's receive and keeps every step's encoded ``ModelRunnerOutput`` (a reference,
    as the loop keeps it for the floor); the loop adds ``report_columns`` to its
    ``RunnerReport``: ``ORIGIN_COLUMN`` (that time less the rank's first
    ``runner_t0_ns``: its loop's origin on the machine's monotonic clock) and
    ``OUTPUT_DIGEST_COLUMN`` (digested then, outside every timed region)."""

    _first_ns: Optional[int] = None
    _outputs: Optional[list] = None

    def reply(self, frame: bytes, seq: int, label: str = REPLY) -> None:
        if label == REPLY:
            if self._outputs is None:
                self._outputs = []
            self._outputs.append(frame)
        super().reply(frame, seq, label)

    def recv(self, seq: int, label: str = REQUEST, perf=time.perf_counter_ns) -> bytes:
        if self._first_ns is not None:
            return super().recv(seq, label)
        t = perf()
        frame = super().recv(seq, label)
        if frame:
            self._first_ns = t
        return frame

    def report_columns(self, columns: dict, beat: Callable[[], None] = no_beat) -> dict:
        """The columns this rank adds to its ``RunnerReport``'s ``columns`` (which hold
        ``runner_t0_ns``, ns): ``ORIGIN_COLUMN`` and ``OUTPUT_DIGEST_COLUMN``; ``{}``
        when it received no data frame or ``columns`` has no ``runner_t0_ns``. The
        digest of every kept output takes about 3 us each (seconds after a long run):
        ``beat``, the report's keep-alive (``Heartbeat.beat`` of the scheduler's wait
        for the report, made on ``Stop``), is called after each, so the scheduler hears
        from this rank a quarter of its peer timeout after the report's last
        ``KeepAlive``, not a quarter after the digest began."""
        t0 = columns.get("runner_t0_ns")
        if not t0 or self._first_ns is None:
            return {}
        digests = []
        for frame in self._outputs or []:
            digests.append(frame_digest(frame))
            beat()
        return {ORIGIN_COLUMN: [self._first_ns - t0[0]], OUTPUT_DIGEST_COLUMN: digests}


class TpRunnerChannel(_RankReport, RunnerChannel):
    """A rank's end over ZeroMQ (SUB ``s2r``): ``RunnerChannel`` that replies only
    from rank 0 and reports its clock origin and output digests (``_RankReport``)."""


class TpRingRunnerChannel(_RankReport, RingRunnerChannel):
    """A rank's end on the ring (reader index = rank): ``RingRunnerChannel`` that
    replies only from rank 0 and reports its clock origin and output digests
    (``_RankReport``)."""


def rank_channel(socks: RunnerSockets, ring: Optional[RingReader], rank: int, timeout_s: float,
                 peer_problem: Callable[[], Optional[str]],
                 first_timeout_s: Optional[float] = None,
                 ring_timeout_s: Optional[float] = None) -> RunnerChannel:
    """The channel of rank ``rank`` (``ring``: its reader, or ``None`` for SUB);
    ``first_timeout_s``: its wait for step 0 (``RunnerChannel``'s); ``ring_timeout_s``:
    on the ring, its wait for each later frame (``RingRunnerChannel.recv_timeout_s``)."""
    if ring is not None:
        return TpRingRunnerChannel(socks, ring, timeout_s, peer_problem, replies=rank == 0,
                                   first_timeout_s=first_timeout_s,
                                   recv_timeout_s=ring_timeout_s)
    return TpRunnerChannel(socks, timeout_s, peer_problem, rank=rank, replies=rank == 0,
                           first_timeout_s=first_timeout_s)
