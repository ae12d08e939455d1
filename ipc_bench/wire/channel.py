"""The channel between the scheduler and its runner(s): one object per side.

Every wait of either loop goes through a channel, so the socket, its timeout, the
peer's liveness check and the name of what is awaited are written once, here:

- ``SchedulerChannel``: the scheduler's end. ``send`` writes one ``SchedulerOutput``
  frame to every reader (``num_readers``); ``recv`` returns the ``ModelRunnerOutput``
  frame of the reader that replies (``reply_rank``); at most ``window`` frames may be
  sent and not yet answered. ``send_marker`` writes the empty frame that tells every
  reader to read the control socket; ``send_control`` / ``recv_control`` carry
  ``ipc_bench.wire.control`` messages.
- ``RunnerChannel``: one reader's end: ``recv`` the next frame, ``reply`` to it
  (a reader that is not the reply rank computes the step and sends nothing back).

Over ZeroMQ (``transport.SchedulerSockets`` / ``RunnerSockets``) there is one reader,
which replies, and a window of 1: the scheduler waits for each reply before it sends
the next frame. The attributes are there so that the loops are written against a
channel that may fan out to N ranks or keep two steps in flight, and the tests run the
loops through such a channel (``tests/stub_channel.py``: one writer, two readers,
a window of two).

With ``--transport shm`` or ``shm-block`` the scheduler -> runner frames (and the empty
markers) go through a shared-memory ring instead (``shm_ring``; ``RingSchedulerChannel``
/ ``RingRunnerChannel``): one writer, one reader, the replies and the control messages
still over ZeroMQ.

Errors: ``transport.PeerError`` (the peer died; one line naming it and what was
awaited), ``transport.PeerTimeout`` (no answer within the timeout), ``ChannelError``
(this side broke the window).

The data-socket calls below try the socket once without waiting (a frame to send is
taken, a reply already queued is read) and only then enter the bounded, peer-checked
wait of ``transport.wait_send`` / ``wait_recv``: the try is the hot path of every
step, so it is written inline rather than through one more call.
"""

from __future__ import annotations

from typing import Callable, Optional

import zmq

from ipc_bench.wire.control import (ControlMessage, Goodbye, KeepAlive, decode_control,
                                    encode_control)
from ipc_bench.wire.shm_ring import RingReader, RingWriter
from ipc_bench.wire.transport import (
    PeerError,
    RunnerSockets,
    SchedulerSockets,
    noticed,
    recv_frame,
    send_frame,
    wait_recv,
    wait_send,
)

_EMPTY = b""
_NOBLOCK = zmq.NOBLOCK
_Again = zmq.Again

#: How the waits name the frames they wait for: ``f"{label} {seq}"``.
REQUEST = "SchedulerOutput for step"
REPLY = "ModelRunnerOutput for step"
FLOOR_REQUEST = "floor frame"
FLOOR_REPLY = "floor reply"


class ChannelError(RuntimeError):
    """The channel was used against its contract (e.g. more frames in flight than its
    window); the message is one line."""


class _ControlEnd:
    """The control socket of either end (``socks.ctl``), with the end's timeout and
    peer check."""

    socks: SchedulerSockets | RunnerSockets
    timeout_s: float
    peer_problem: Callable[[], Optional[str]]

    def send_control(self, msg: ControlMessage, timeout_s: Optional[float] = None) -> None:
        """One control message to the other end (every runner, from the scheduler)."""
        send_frame(self.socks.ctl, encode_control(msg),
                   self.timeout_s if timeout_s is None else timeout_s, self.peer_problem,
                   type(msg).__name__)

    def recv_control(self, what: str = "control message",
                     timeout_s: Optional[float] = None) -> ControlMessage:
        """One control message from the other end (the reply rank, at the scheduler);
        ``PeerError`` for garbage."""
        frame = recv_frame(self.socks.ctl, self.timeout_s if timeout_s is None else timeout_s,
                           self.peer_problem, what)
        return decode_control(frame, what)


class SchedulerChannel(_ControlEnd):
    """The scheduler's end over ZeroMQ: PUSH ``s2r``, PULL ``r2s``, PAIR ``ctl``.

    ``timeout_s``: longest wait for the peer to take or answer one frame (seconds).
    ``peer_problem()``: ``None`` while the runner is alive, else one line saying how it
    ended (checked every ``transport.POLL_SLICE_MS`` of a wait). ``window``: frames that
    may be sent before their replies are received (1: strictly alternating).
    """

    num_readers = 1
    reply_rank = 0

    def __init__(self, socks: SchedulerSockets, timeout_s: float,
                 peer_problem: Callable[[], Optional[str]], window: int = 1):
        if window < 1:
            raise ValueError(f"window must be at least 1, got {window}")
        self.socks = socks
        self.timeout_s = timeout_s
        self.peer_problem = peer_problem
        self.window = window
        self.in_flight = 0
        self._s2r = socks.s2r
        self._r2s = socks.r2s
        self._push = socks.s2r.send
        self._pull = socks.r2s.recv

    def send(self, frame: bytes, seq: int, label: str = REQUEST) -> None:
        """Write ``frame`` (step ``seq``) to every reader; bounded wait if the peer is
        not taking frames. ``ChannelError`` past the window."""
        if self.in_flight >= self.window:
            raise ChannelError(f"{label} {seq}: {self.in_flight} frames already in flight "
                               f"(window {self.window})")
        try:
            self._push(frame, _NOBLOCK)
        except _Again:
            wait_send(self._s2r, frame, self.timeout_s, self.peer_problem, f"{label} {seq}")
        self.in_flight += 1

    def recv(self, seq: int, timeout_s: Optional[float] = None, label: str = REPLY) -> bytes:
        """The reply rank's next frame (the reply to step ``seq``), waiting at most
        ``timeout_s`` (default ``self.timeout_s``). An empty frame means: read the
        control socket (the runner reported an error)."""
        try:
            frame = self._pull()  # waits at most one slice (RCVTIMEO)
        except _Again:
            frame = wait_recv(self._r2s, self.timeout_s if timeout_s is None else timeout_s,
                              self.peer_problem, f"{label} {seq}")
        self.in_flight -= 1
        return frame

    def send_marker(self, what: str = "a phase marker") -> None:
        """The empty frame on ``s2r``: every reader turns to the control socket."""
        send_frame(self._s2r, _EMPTY, self.timeout_s, self.peer_problem, what)

    def recv_control(self, what: str = "control message",
                     timeout_s: Optional[float] = None) -> ControlMessage:
        """The runner's next control message other than ``KeepAlive`` (which it sends
        while it prepares the floor or its report: each one restarts the wait);
        ``PeerError`` for garbage."""
        while True:
            msg = super().recv_control(what, timeout_s)
            if not isinstance(msg, KeepAlive):
                return msg


class RunnerChannel(_ControlEnd):
    """One runner's end over ZeroMQ: PULL ``s2r``, PUSH ``r2s``, PAIR ``ctl``.

    ``rank``: this reader's index; ``replies``: whether it answers (the reply rank).
    ``timeout_s`` and ``peer_problem`` as for ``SchedulerChannel`` (the peer here is
    the scheduler). ``first_timeout_s``: the wait for step 0's ``SchedulerOutput``
    (default ``timeout_s``; the runner passes the start-up allowance,
    ``handshake.first_step_wait_s``), since the scheduler admits, schedules and encodes
    the first batch meanwhile.
    """

    def __init__(self, socks: RunnerSockets, timeout_s: float,
                 peer_problem: Callable[[], Optional[str]], rank: int = 0,
                 replies: bool = True, first_timeout_s: Optional[float] = None):
        self.socks = socks
        self.timeout_s = timeout_s
        self.first_timeout_s = timeout_s if first_timeout_s is None else first_timeout_s
        self.peer_problem = peer_problem
        self.rank = rank
        self.replies = replies
        self._s2r = socks.s2r
        self._r2s = socks.r2s
        self._pull = socks.s2r.recv
        self._push = socks.r2s.send

    def recv_control(self, what: str = "control message",
                     timeout_s: Optional[float] = None) -> ControlMessage:
        """The scheduler's next control message; ``PeerError`` for garbage, and for a
        ``Goodbye`` (``the scheduler ended the run (REASON), noticed while waiting for
        WHAT``): a scheduler whose run ends in the middle of a case, between a marker
        and the message the marker announced (an interrupt there), says ``Goodbye``
        where that message was due. The runner leaves as when its scheduler goes away."""
        msg = super().recv_control(what, timeout_s)
        if isinstance(msg, Goodbye):
            raise PeerError(noticed(f"the scheduler ended the run "
                                    f"({msg.reason or 'the run is complete'})",
                                    f"waiting for {what}"))
        return msg

    def recv(self, seq: int, label: str = REQUEST) -> bytes:
        """The next frame from the scheduler (empty: read the control socket)."""
        try:
            return self._pull()  # waits at most one slice (RCVTIMEO)
        except _Again:
            return wait_recv(self._s2r, self.wait_s(seq, label), self.peer_problem,
                             f"{label} {seq}")

    def wait_s(self, seq: int, label: str = REQUEST) -> float:
        """Seconds ``recv`` waits for frame ``seq`` of kind ``label``:
        ``first_timeout_s`` for step 0's ``SchedulerOutput``, else ``timeout_s``."""
        return self.first_timeout_s if seq == 0 and label == REQUEST else self.timeout_s

    def poll(self) -> Optional[bytes]:
        """The next frame if one is queued now, else ``None`` (never waits): the
        device-input runner loop reads step n + 1's frame, when it is already there,
        before it finishes step n (``RunnerLoop.run_pipelined``)."""
        try:
            return self._pull(_NOBLOCK)
        except _Again:
            return None

    def reply(self, frame: bytes, seq: int, label: str = REPLY) -> None:
        """Answer step ``seq`` (nothing is sent unless this rank replies)."""
        if not self.replies:
            return
        try:
            self._push(frame, _NOBLOCK)
        except _Again:
            wait_send(self._r2s, frame, self.timeout_s, self.peer_problem, f"{label} {seq}")

    def send_marker(self, timeout_s: float, what: str = "an error marker") -> None:
        """The empty frame on ``r2s``: the scheduler turns to the control socket."""
        send_frame(self._r2s, _EMPTY, timeout_s, self.peer_problem, what)


class RingSchedulerChannel(SchedulerChannel):
    """The scheduler's end with its frames in a shared-memory ring: ``send`` and
    ``send_marker`` write to ``ring`` (a ``shm_ring.RingWriter`` with one reader),
    waiting at most ``timeout_s`` for a free chunk; ``recv`` and the control socket are
    ``SchedulerChannel``'s (``socks.r2s``, ``socks.ctl``). ``ring.peer_problem`` is set
    to ``peer_problem``. Errors as ``SchedulerChannel``'s (``shm_ring.RingTimeout`` is a
    ``transport.PeerTimeout``)."""

    def __init__(self, socks: SchedulerSockets, ring: RingWriter, timeout_s: float,
                 peer_problem: Callable[[], Optional[str]], window: int = 1):
        super().__init__(socks, timeout_s, peer_problem, window)
        if ring.n_readers != self.num_readers:
            raise ValueError(f"the ring has {ring.n_readers} readers, the channel "
                             f"{self.num_readers}")
        ring.peer_problem = peer_problem
        self.ring = ring
        self._ring_send = ring.send

    def send(self, frame: bytes, seq: int, label: str = REQUEST) -> None:
        """Write ``frame`` (step ``seq``) to the ring; ``ChannelError`` past the window."""
        if self.in_flight >= self.window:
            raise ChannelError(f"{label} {seq}: {self.in_flight} frames already in flight "
                               f"(window {self.window})")
        self._ring_send(frame, self.timeout_s, label, seq)
        self.in_flight += 1

    def send_marker(self, what: str = "a phase marker") -> None:
        """The empty frame, through the ring: the reader turns to the control socket."""
        self._ring_send(_EMPTY, self.timeout_s, what)


class RingRunnerChannel(RunnerChannel):
    """One runner's end reading the scheduler's frames from a shared-memory ring
    (``ring``: a ``shm_ring.RingReader``, whose rank is this channel's); replies and
    control messages as ``RunnerChannel``'s. ``ring.peer_problem`` is set to
    ``peer_problem``. ``recv_timeout_s``: the wait for each frame after step 0's
    ``SchedulerOutput`` (seconds; default ``timeout_s``, which still bounds the
    replies and control messages; a ``--tp`` rank passes
    ``harness.runner_loop.ring_wait_s``)."""

    def __init__(self, socks: RunnerSockets, ring: RingReader, timeout_s: float,
                 peer_problem: Callable[[], Optional[str]], replies: bool = True,
                 first_timeout_s: Optional[float] = None,
                 recv_timeout_s: Optional[float] = None):
        super().__init__(socks, timeout_s, peer_problem, rank=ring.rank, replies=replies,
                         first_timeout_s=first_timeout_s)
        ring.peer_problem = peer_problem
        self.ring = ring
        self.recv_timeout_s = timeout_s if recv_timeout_s is None else recv_timeout_s
        self._ring_recv = ring.recv

    def recv(self, seq: int, label: str = REQUEST) -> bytes:
        """The next frame from the scheduler's ring (empty: read the control socket),
        waiting ``wait_s(seq, label)`` at most."""
        return self._ring_recv(self.recv_timeout_s if seq else self.wait_s(seq, label),
                               label, seq)

    def wait_s(self, seq: int, label: str = REQUEST) -> float:
        """``first_timeout_s`` for step 0's ``SchedulerOutput``, else
        ``recv_timeout_s``."""
        return self.first_timeout_s if seq == 0 and label == REQUEST else self.recv_timeout_s

    def poll(self) -> Optional[bytes]:
        """Always ``None``: the ring has no non-blocking read here, so the device-input
        loop finishes each step before it reads the next frame (no lookahead)."""
        return None
