"""An in-memory channel with one writer and N readers, for running the real loops in
threads: the shape of a tensor-parallel broadcast (every rank receives every frame,
one rank replies) with a window of frames in flight.

``StubBroadcast(num_readers, reply_rank, window)`` holds the queues;
``scheduler_end()`` and ``runner_end(rank)`` give objects with the methods of
``ipc_bench.wire.channel.SchedulerChannel`` and ``RunnerChannel``. Control messages
go through ``wire.control``'s encoder and decoder as on the real socket. Every frame a
rank passes to ``reply`` is kept in ``replies_of[rank]``, also for ranks that do not
reply, so a test can compare what each rank computed.
"""

from __future__ import annotations

import queue
import threading
from typing import Optional

from ipc_bench.wire.channel import REPLY, REQUEST, ChannelError
from ipc_bench.wire.control import ControlMessage, KeepAlive, decode_control, encode_control
from ipc_bench.wire.transport import PeerTimeout


class StubBroadcast:
    def __init__(self, num_readers: int = 2, reply_rank: int = 0, window: int = 1,
                 timeout_s: float = 30.0):
        self.num_readers = num_readers
        self.reply_rank = reply_rank
        self.window = window
        self.timeout_s = timeout_s
        self.data = [queue.Queue() for _ in range(num_readers)]
        self.ctl = [queue.Queue() for _ in range(num_readers)]
        self.replies: queue.Queue = queue.Queue()
        self.ctl_replies: queue.Queue = queue.Queue()
        self.replies_of: list[list[bytes]] = [[] for _ in range(num_readers)]
        self.errors: list[str] = []  # a reader thread that failed says so here
        self.lock = threading.Lock()

    def scheduler_end(self) -> "StubSchedulerEnd":
        return StubSchedulerEnd(self)

    def runner_end(self, rank: int) -> "StubRunnerEnd":
        return StubRunnerEnd(self, rank)


def _get(q: queue.Queue, timeout_s: float, what: str):
    try:
        return q.get(timeout=timeout_s)
    except queue.Empty:
        raise PeerTimeout(f"no {what} within {timeout_s:g} s") from None


class StubSchedulerEnd:
    def __init__(self, bus: StubBroadcast):
        self.bus = bus
        self.num_readers = bus.num_readers
        self.reply_rank = bus.reply_rank
        self.window = bus.window
        self.timeout_s = bus.timeout_s
        self.in_flight = 0

    def peer_problem(self) -> Optional[str]:
        return "; ".join(self.bus.errors) or None

    def send(self, frame: bytes, seq: int, label: str = REQUEST) -> None:
        if self.in_flight >= self.window:
            raise ChannelError(f"{label} {seq}: {self.in_flight} frames already in flight "
                               f"(window {self.window})")
        for q in self.bus.data:
            q.put(frame)
        self.in_flight += 1

    def recv(self, seq: int, timeout_s: Optional[float] = None, label: str = REPLY) -> bytes:
        frame = _get(self.bus.replies, timeout_s or self.timeout_s, f"{label} {seq}")
        self.in_flight -= 1
        return frame

    def send_marker(self, what: str = "a phase marker") -> None:
        for q in self.bus.data:
            q.put(b"")

    def send_control(self, msg: ControlMessage, timeout_s: Optional[float] = None) -> None:
        for q in self.bus.ctl:
            q.put(encode_control(msg))

    def recv_control(self, what: str, timeout_s: Optional[float] = None) -> ControlMessage:
        while True:  # as SchedulerChannel's: the runner's KeepAlive is no answer
            msg = decode_control(_get(self.bus.ctl_replies, timeout_s or self.timeout_s,
                                      what), what)
            if not isinstance(msg, KeepAlive):
                return msg


class StubRunnerEnd:
    def __init__(self, bus: StubBroadcast, rank: int):
        self.bus = bus
        self.rank = rank
        self.replies = rank == bus.reply_rank
        self.timeout_s = bus.timeout_s

    def peer_problem(self) -> Optional[str]:
        return None

    def recv(self, seq: int, label: str = REQUEST) -> bytes:
        return _get(self.bus.data[self.rank], self.timeout_s, f"{label} {seq}")

    def reply(self, frame: bytes, seq: int, label: str = REPLY) -> None:
        self.bus.replies_of[self.rank].append(frame)
        if self.replies:
            self.bus.replies.put(frame)

    def send_marker(self, timeout_s: float, what: str = "an error marker") -> None:
        if self.replies:
            self.bus.replies.put(b"")

    def send_control(self, msg: ControlMessage, timeout_s: Optional[float] = None) -> None:
        if self.replies:
            self.bus.ctl_replies.put(encode_control(msg))

    def recv_control(self, what: str = "control message",
                     timeout_s: Optional[float] = None) -> ControlMessage:
        return decode_control(_get(self.bus.ctl[self.rank], self.timeout_s, what), what)
