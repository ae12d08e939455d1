"""A shared-memory broadcast ring: one writer, N readers, modelled on vLLM's ``MessageQueue``.

Mirrors ``ShmRingBuffer`` and ``MessageQueue`` of
``vllm/distributed/device_communicators/shm_broadcast.py``: a fixed number of chunks
of fixed size in one POSIX shared-memory segment (``multiprocessing.shared_memory``),
per chunk one *written* flag and one *read* flag per reader; the writer reuses a
chunk only once every reader has read it, a reader waits for the written flag; a
message larger than a chunk goes over a ZeroMQ XPUB -> SUB socket (the overflow
path, as vLLM's), and its chunk carries only a marker saying "read the next
overflow message". Nothing is ever truncated.

Segment layout (all integers little-endian)::

    0      header (64 B): b"IPCRING1", u32 readers, u32 chunks, u32 chunk bytes,
           u8 closed (the writer closed the ring), u8 writer waiting (block mode)
    64     flags: per chunk, 1 + N bytes: written flag, then reader 0 .. N-1's read flag
    D      data: chunk 0 .. chunk C-1, ``chunk_bytes`` each (D: the flags' end,
           rounded up to 64)

A chunk holds a 5-byte head (u8 kind, u32 count) and then:

- kind 0, one frame: ``count`` payload bytes;
- kind 1, a list of frames: ``count`` u32 frame lengths, then the frames;
- kind 2, overflow: nothing; ``count`` is the overflow message's number, and the
  next message on the overflow socket is ``[u32 number, u8 0 or 1, frame, ...]``
  (0: one frame, 1: a list).

A message is ``bytes`` (any bytes-like object) or a list / tuple of them, as the
channels send frames; ``recv`` returns what was sent: ``bytes`` or ``list[bytes]``.

Flag protocol (as vLLM's): the writer waits until the chunk is free (written flag 0,
or every read flag 1), sets written to 0, writes the payload, clears the read flags,
sets written to 1. A reader waits until its read flag is 0 and the written flag 1,
copies the payload out, then sets its read flag to 1.

Memory ordering. A store to the shared buffer from Python is a plain byte or
``memcpy`` store: nothing orders it for another process on a weakly ordered CPU (Arm,
POWER), where the flag could become visible before the payload, and a reader's
payload loads could be satisfied before its flag load. vLLM hit this and added
``memory_fence()``, the acquire and release of a ``threading.Lock`` (pthread mutex /
``sem_t`` or ``PyMutex``: a locked compare-and-exchange, sequentially consistent).
The same fence is used here, at each point where order matters:

- writer: wait free -> *fence* (the readers' last payload loads happen before the
  overwrite) -> payload -> *fence* -> read flags 0, written 1 -> *fence* (flags
  visible before the notification below, and before the writer-waiting check);
- reader: read flag, *fence*, written flag (a cleared read flag implies the writer's
  reset of written is visible) -> *fence* -> payload copied out -> *fence* -> read
  flag 1 -> *fence* -> writer-waiting flag.

On x86-64 (total store order) the hardware keeps these orders anyway and the fences
cost about 0.1 us each. ``tests/wire/test_shm_ring.py`` streams 100,000 messages of
random sizes, each carrying its sequence number and checksum, across the overflow
threshold, to one and two reader processes with both waits; it fails at once if the
flags are published before the payload is written. It has only run on x86-64, where
it checks the protocol; the fences are what stands for weakly ordered CPUs.

Waiting (``wait``, a constructor choice; both sides of a ring use the same):

- ``spin``: as vLLM's readers, poll the flag with ``os.sched_yield()`` between polls
  for ``spin_s`` seconds of one wait, then ``time.sleep(idle_sleep_s)`` between polls
  (vLLM's ``SpinTimer`` drops to 0.1 s sleeps after 10 s idle).
- ``block``: sleep in ``poll(2)`` on a named pipe (FIFO) in the ring's private 0700
  folder: one per reader, written by the writer after each message, and one for the
  writer, written by a reader after it frees a chunk while the writer waits for one
  (the writer-waiting flag, set and checked with a fence on both sides, so no wake-up
  is lost). A FIFO is a kernel pipe any process can open by path, wait on with a
  timeout and wake with one ``write``; it needs no descriptor passing (``eventfd``),
  no raw ``futex`` syscall numbers through ``ctypes`` and no multiprocessing-only
  named semaphore, and a ZeroMQ notification would put a ZeroMQ message, the cost
  being compared, back into every step. Both ends open it read-write and
  non-blocking (Linux: never blocks, never ``ENXIO``), so a full pipe only means a
  wake-up is already pending.

A reader that found an overflow marker waits for the overflow message in ZeroMQ's
own poll, whatever the strategy (vLLM's readers block in ``recv`` there).

Every wait has a timeout: ``RingTimeout`` (a ``transport.PeerTimeout``) names what was
waited for, the chunk and, for the writer, the readers that had not read it. An
optional ``peer_problem()`` (as the channels') is checked every
``transport.POLL_SLICE_MS`` of a wait: ``transport.PeerError`` when it reports one.
A reader that finds the ring closed with nothing left to read raises ``RingClosed``.

Clean-up: the writer unlinks the segment's name as soon as every reader has
attached (``wait_for_readers``: a reader maps the segment before it subscribes to the
overflow socket), so from then on no process's death, a SIGKILL of the writer
included, can leave it in ``/dev/shm``: the memory goes with the last mapping. On
``close()`` the writer unlinks it if it has not yet, closes its socket and removes
its folder, whatever the readers did (a killed reader included); readers only unmap.
Neither end registers the segment with ``multiprocessing``'s resource tracker (the
tracker is an extra child process, and a reader's would unlink the segment when that
reader exits, CPython issue 82300). What a SIGKILL of the writer before its readers
attached leaves: the segment ``/dev/shm/ipc-bench-ring-*`` and the ring's folder
(``ring-XXXXXXXX``), which names the segment by an empty file of the segment's name,
made before the segment is; in a case's socket folder, the next run there unlinks
such a segment with the folder (``leftovers.sweep``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import select
import shutil
import struct
import sys
import tempfile
import threading
import time
from typing import TYPE_CHECKING, Callable, Optional, Sequence, Union

import msgspec
import zmq

from ipc_bench.errors import one_line, zmq_context
from ipc_bench.wire.leftovers import RING_FOLDER_PREFIX, SEGMENT_PREFIX
from ipc_bench.wire.transport import (POLL_SLICE_MS, EndpointDir, EndpointError, PeerError,
                                      PeerTimeout, noticed, open_socket, zmtp_frame_bytes)

if TYPE_CHECKING:  # imported where a segment is made or mapped (_segment): multiprocessing
    from multiprocessing import shared_memory  # costs 10 ms in every process that has none

#: Waiting strategies (constructor argument ``wait``).
WAITS = ("spin", "block")
#: The harness's ``--transport`` values that send SchedulerOutput frames through a ring,
#: and the ring's waiting strategy for each.
RING_TRANSPORTS = {"shm": "spin", "shm-block": "block"}
#: Defaults: vLLM's 10 chunks; 1 MiB each covers a SchedulerOutput of thousands of
#: requests (vLLM uses 10-24 MiB for multimodal inputs).
DEFAULT_CHUNKS = 10
DEFAULT_CHUNK_BYTES = 1 << 20
#: Shared-memory names begin with this (``/dev/shm/ipc-bench-ring-...``).
SHM_PREFIX = SEGMENT_PREFIX

_MAGIC = b"IPCRING1"
_HEADER = struct.Struct("<8sIII")
_CLOSED = 20
_WRITER_WAITING = 21
_FLAGS = 64
_HEAD = struct.Struct("<BI")
_OVERFLOW_HEAD = struct.Struct("<IB")
_ONE, _LIST, _OVERFLOW = 0, 1, 2
_MAX_CHUNK_BYTES = 1 << 31

Message = Union[bytes, bytearray, memoryview, Sequence[Union[bytes, bytearray, memoryview]]]

_fence_lock = threading.Lock()


def memory_fence() -> None:
    """A memory barrier for the shared segment, as vLLM's ``memory_fence``
    (``shm_broadcast.py``): the acquire and release of a ``threading.Lock`` are atomic
    read-modify-writes (glibc's ``sem_t`` on CPython before 3.13, ``PyMutex`` after):
    on x86-64 ``lock``-prefixed instructions, full barriers; on AArch64 acquire and
    release operations, which order the loads and stores around them. About 0.1 us."""
    _fence_lock.acquire()
    _fence_lock.release()


class RingTimeout(PeerTimeout):
    """A wait of the ring ran past its timeout; the message (one line) names what was
    awaited, the chunk and, for the writer, the readers it waited for."""


class RingClosed(PeerError):
    """The writer closed the ring and nothing is left to read."""


class RingHandle(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What a reader needs to attach (``RingWriter.handle``; msgspec-encodable).

    ``shm_name``: the segment's name; ``n_readers``, ``n_chunks``, ``chunk_bytes``
    (bytes per chunk, head included): its shape; ``overflow_endpoint``: the writer's
    ``ipc://`` XPUB socket; ``folder``: the ring's private folder (FIFOs); ``wait``:
    ``spin`` or ``block``.
    """

    shm_name: str
    n_readers: int
    n_chunks: int
    chunk_bytes: int
    overflow_endpoint: str
    folder: str
    wait: str


def ring_message_bytes(payload_bytes: int, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> int:
    """Bytes a one-frame message of ``payload_bytes`` moves through a ring of
    ``chunk_bytes`` chunks: its chunk's 5-byte head and the payload, written to shared
    memory; or, when that exceeds a chunk, the head (the overflow marker) plus the
    overflow message's ZMTP stream bytes (its 5-byte head frame and the payload frame,
    ``transport.zmtp_frame_bytes``)."""
    if _HEAD.size + payload_bytes <= chunk_bytes:
        return _HEAD.size + payload_bytes
    return _HEAD.size + zmtp_frame_bytes(_OVERFLOW_HEAD.size) + zmtp_frame_bytes(payload_bytes)


def check_shape(n_readers: int, n_chunks: int, chunk_bytes: int, wait: str) -> None:
    """``ValueError`` (one line) unless ``n_readers`` >= 1, ``n_chunks`` >= 1,
    64 <= ``chunk_bytes`` <= 2 GiB and ``wait`` is one of ``WAITS``."""
    for name, value, low in (("n_readers", n_readers, 1), ("n_chunks", n_chunks, 1),
                             ("chunk_bytes", chunk_bytes, 64)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if chunk_bytes > _MAX_CHUNK_BYTES:
        raise ValueError(f"chunk_bytes must be at most {_MAX_CHUNK_BYTES}, got {chunk_bytes}")
    if wait not in WAITS:
        raise ValueError(f"wait must be one of {', '.join(WAITS)}, got {wait!r}")


def _data_offset(n_readers: int, n_chunks: int) -> int:
    return -(-(_FLAGS + n_chunks * (1 + n_readers)) // 64) * 64


def _fifo_path(folder: str, rank: Optional[int]) -> str:
    return os.path.join(folder, "writer.fifo" if rank is None else f"reader{rank}.fifo")


def _open_fifo(path: str) -> int:
    return os.open(path, os.O_RDWR | os.O_NONBLOCK)


def _notify(fd: int) -> None:
    try:
        os.write(fd, b"\0")
    except BlockingIOError:
        pass  # the pipe is full: a wake-up is already pending


def _named(what: str, seq: Optional[int]) -> str:
    """``what``, or ``f"{what} {seq}"`` (formatted only when a wait or error needs it)."""
    return what if seq is None else f"{what} {seq}"


def _frames_of(message: Message) -> tuple[int, list]:
    """(kind, frames) of a message: ``_ONE`` for a bytes-like object, ``_LIST`` for a
    list or tuple of them; ``TypeError`` (one line) for anything else."""
    if isinstance(message, (bytes, bytearray, memoryview)):
        return _ONE, [message]
    if isinstance(message, (list, tuple)):
        for i, frame in enumerate(message):
            if not isinstance(frame, (bytes, bytearray, memoryview)):
                raise TypeError(f"frame {i} of the message is {type(frame).__name__}, "
                                f"not bytes")
        return _LIST, list(message)
    raise TypeError(f"a ring message is bytes or a list of bytes frames, "
                    f"got {type(message).__name__}")


class _Waiter:
    """The bounded wait both ends share: poll ``ready()`` until true, sleeping by the
    ring's strategy, checking the deadline and ``peer_problem()``."""

    def __init__(self, wait: str, fifo_fd: Optional[int], spin_s: float,
                 idle_sleep_s: float, peer_problem: Optional[Callable[[], Optional[str]]]):
        self.wait = wait
        self.fifo_fd = fifo_fd
        self.spin_s = spin_s
        self.idle_sleep_s = idle_sleep_s
        self.peer_problem = peer_problem
        self._poller = None
        if fifo_fd is not None:
            self._poller = select.poll()
            self._poller.register(fifo_fd, select.POLLIN)

    def until(self, ready: Callable[[], bool], timeout_s: float,
              describe: Callable[[], str], what: str, sending: bool = False,
              closed: Callable[[], bool] = lambda: False) -> None:
        """Return once ``ready()``. ``RingTimeout`` after ``timeout_s`` seconds: "no
        WHAT within N s (DESCRIBE)", or "could not send WHAT ..." when ``sending``;
        ``PeerError`` when ``peer_problem()`` reports; ``RingClosed`` when ``closed()``
        and still not ready. ``describe()`` says who waited for which flag."""
        start = time.monotonic()
        next_check = start + POLL_SLICE_MS / 1000
        while not ready():
            now = time.monotonic()
            if closed():
                if ready():
                    return
                raise RingClosed(one_line(f"the writer closed the shared-memory ring "
                                          f"({describe()})"))
            if now >= next_check:
                next_check = now + POLL_SLICE_MS / 1000
                problem = self.peer_problem() if self.peer_problem else None
                if problem and not ready():  # what the peer did before it went counts
                    verb = "sending" if sending else "waiting for"
                    raise PeerError(one_line(noticed(problem, f"{verb} {what}")))
            if now - start > timeout_s:
                failed = f"could not send {what}" if sending else f"no {what}"
                raise RingTimeout(one_line(f"{failed} within {timeout_s:g} s "
                                           f"({describe()})"))
            if self.wait == "block":
                left_ms = min(POLL_SLICE_MS, max(1, int((start + timeout_s - now) * 1000) + 1))
                if self._poller.poll(left_ms):
                    self._drain()
            elif now - start < self.spin_s:
                os.sched_yield()
            else:
                time.sleep(self.idle_sleep_s)

    def socket(self, sock: zmq.Socket, timeout_s: float, describe: Callable[[], str],
               what: str) -> None:
        """Wait in ZeroMQ's own poll (whatever the strategy) until ``sock`` has a
        message; the same errors as ``until``."""
        start = time.monotonic()
        while not sock.poll(POLL_SLICE_MS, zmq.POLLIN):
            problem = self.peer_problem() if self.peer_problem else None
            if problem:
                raise PeerError(one_line(noticed(problem, f"waiting for {what}")))
            if time.monotonic() - start > timeout_s:
                raise RingTimeout(one_line(f"no {what} within {timeout_s:g} s "
                                           f"({describe()})"))

    def _drain(self) -> None:
        try:
            while os.read(self.fifo_fd, 4096):
                pass
        except BlockingIOError:
            pass


class _RingEnd:
    """What both ends hold: the mapped segment and its views."""

    shm: Optional[shared_memory.SharedMemory] = None
    _buf: Optional[memoryview] = None
    _fifo_fds: list
    _waiter: _Waiter

    @property
    def peer_problem(self) -> Optional[Callable[[], Optional[str]]]:
        """``None`` or a function checked every ``transport.POLL_SLICE_MS`` of a wait:
        ``None`` while the peer is alive, else one line saying how it ended."""
        return self._waiter.peer_problem

    @peer_problem.setter
    def peer_problem(self, check: Optional[Callable[[], Optional[str]]]) -> None:
        self._waiter.peer_problem = check

    def _map(self, shm: shared_memory.SharedMemory, n_readers: int, n_chunks: int,
             chunk_bytes: int) -> None:
        self.shm = shm
        self.n_readers = n_readers
        self.n_chunks = n_chunks
        self.chunk_bytes = chunk_bytes
        self._stride = 1 + n_readers
        self._data = _data_offset(n_readers, n_chunks)
        self._buf = shm.buf
        self._index = 0

    def _flag_base(self, index: int) -> int:
        return _FLAGS + index * self._stride

    def _chunk(self, index: int) -> int:
        return self._data + index * self.chunk_bytes

    def _unmap(self) -> None:
        for fd in self._fifo_fds:
            os.close(fd)
        self._fifo_fds = []
        if self._buf is not None:
            self._buf.release()
            self._buf = None
        if self.shm is not None:
            self.shm.close()


@contextlib.contextmanager
def _untracked():
    """``multiprocessing.resource_tracker`` left out of what the block does (Python
    before 3.13, whose ``SharedMemory`` has no ``track=False``)."""
    from multiprocessing import resource_tracker

    register, unregister = resource_tracker.register, resource_tracker.unregister
    resource_tracker.register = resource_tracker.unregister = lambda name, rtype: None
    try:
        yield
    finally:
        resource_tracker.register, resource_tracker.unregister = register, unregister


def _segment(name: str, create: bool = False, size: int = 0) -> shared_memory.SharedMemory:
    """Create or map a segment without the resource tracker."""
    from multiprocessing import shared_memory

    if sys.version_info >= (3, 13):
        return shared_memory.SharedMemory(name, create=create, size=size, track=False)
    with _untracked():
        return shared_memory.SharedMemory(name, create=create, size=size)


def _record_segment(folder: str, name: str) -> None:
    """Name the segment ``name`` in the ring's ``folder`` by an empty file of that name,
    before the segment is made: a later run that finds the folder left by a process that
    no longer runs unlinks the segment too (``leftovers.sweep``)."""
    os.close(os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def _unlink(shm: shared_memory.SharedMemory) -> None:
    """Remove the segment's name (mappings stay valid); gone already is fine."""
    try:
        with _untracked():
            shm.unlink()
    except FileNotFoundError:
        pass


class RingWriter(_RingEnd):
    """The writer's end: creates the segment, the FIFOs (``block``) and the overflow
    XPUB socket; ``handle`` tells readers how to attach (``RingReader``).

    ``n_readers`` >= 1; ``n_chunks`` chunks of ``chunk_bytes`` bytes (a message of more
    than ``chunk_bytes`` - 5 bytes, less for a list of frames, overflows); ``wait``:
    ``spin`` or ``block`` (module docstring); ``timeout_s``: the longest wait for a
    free chunk or for the readers' subscriptions (seconds); ``peer_problem``: as the
    channels'. ``folder``: where the ring's private 0700 folder is made (default:
    the system's temporary folder); ``ctx``: the ZeroMQ context (default: its own).
    ``spin_s`` / ``idle_sleep_s``: the spin strategy's busy period and its sleep after
    it (vLLM: 10 s, then 0.1 s). Raises ``ValueError`` for a bad shape,
    ``transport.EndpointError`` (one line) when the folder, the segment, a FIFO or the
    overflow socket cannot be made (nothing is left behind).
    """

    def __init__(self, n_readers: int = 1, *, n_chunks: int = DEFAULT_CHUNKS,
                 chunk_bytes: int = DEFAULT_CHUNK_BYTES, wait: str = "spin",
                 timeout_s: float = 10.0,
                 peer_problem: Optional[Callable[[], Optional[str]]] = None,
                 folder: Optional[str] = None, ctx: Optional[zmq.Context] = None,
                 spin_s: float = 10.0, idle_sleep_s: float = 0.1):
        check_shape(n_readers, n_chunks, chunk_bytes, wait)
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
        self.wait, self.timeout_s = wait, timeout_s
        self._fifo_fds, self._pub, self._closed = [], None, False
        self._own_ctx = ctx is None
        self.ctx = zmq_context() if ctx is None else ctx
        self.folder: Optional[str] = None
        self.sent = self.overflowed = self._overflow_seq = self._subscribers = 0
        self.unlinked = False
        try:
            try:
                self.folder = tempfile.mkdtemp(prefix=RING_FOLDER_PREFIX, dir=folder)  # 0700
                size = _data_offset(n_readers, n_chunks) + n_chunks * chunk_bytes
                name = SHM_PREFIX + secrets.token_hex(8)
                _record_segment(self.folder, name)
                shm = _segment(name, create=True, size=size)
                self._map(shm, n_readers, n_chunks, chunk_bytes)
                self._open_notifications()
            except OSError as exc:
                where = self.folder or folder or tempfile.gettempdir()
                raise EndpointError(f"cannot create a shared-memory ring in {where}: "
                                    f"{exc.strerror or exc}") from None
            self._buf[:_data_offset(n_readers, n_chunks)] = bytes(self._data)
            _HEADER.pack_into(self._buf, 0, _MAGIC, n_readers, n_chunks, chunk_bytes)
            endpoint = f"ipc://{self.folder}/overflow"
            self._pub = open_socket(self.ctx, zmq.XPUB, endpoint, bind=True)
            self._pub.setsockopt(zmq.SNDHWM, 0)  # never drop: the ring bounds the queue
            self._pub.setsockopt(zmq.XPUB_VERBOSE, 1)  # one subscription message per reader
        except BaseException:
            self.close()
            raise
        self._reader_fds = self._fifo_fds[1:] if wait == "block" else []
        self._waiter = _Waiter(wait, self._fifo_fds[0] if wait == "block" else None,
                               spin_s, idle_sleep_s, peer_problem)
        memory_fence()
        self.handle = RingHandle(shm.name.lstrip("/"), n_readers, n_chunks, chunk_bytes,
                                 endpoint, self.folder, wait)

    def _open_notifications(self) -> None:
        if self.wait != "block":
            return
        for rank in [None, *range(self.n_readers)]:
            path = _fifo_path(self.folder, rank)
            os.mkfifo(path, 0o600)
            self._fifo_fds.append(_open_fifo(path))

    def wait_for_readers(self, timeout_s: Optional[float] = None) -> None:
        """Wait until every reader has subscribed to the overflow socket (at most
        ``timeout_s``, default the ring's), then unlink the segment's name: every
        reader has mapped it. An overflow message sent before would be lost to a late
        reader, so ``send`` calls this before its first overflow. ``RingTimeout``
        names how many subscribed."""
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout_s
        while self._subscribers < self.n_readers:
            if self._pub.poll(POLL_SLICE_MS, zmq.POLLIN):
                self._subscribers += self._pub.recv()[:1] == b"\x01"
                continue
            problem = self.peer_problem() if self.peer_problem else None
            if problem:
                raise PeerError(one_line(noticed(problem,
                                                 "waiting for overflow subscriptions")))
            if time.monotonic() > deadline:
                raise RingTimeout(f"no overflow subscriptions within {timeout_s:g} s "
                                  f"({self._subscribers} of {self.n_readers} reader(s) "
                                  f"subscribed)")
        if not self.unlinked:
            _unlink(self.shm)
            self.unlinked = True

    def _unread(self, base: int) -> list[int]:
        buf = self._buf
        return [r for r in range(self.n_readers) if buf[base + 1 + r] == 0]

    def _wait_free(self, index: int, base: int, timeout_s: float, what: str,
                   seq: Optional[int]) -> None:
        """Wait until chunk ``index`` is free (never written, or read by every reader)."""
        buf, ones, end = self._buf, b"\x01" * self.n_readers, base + 1 + self.n_readers

        def free() -> bool:
            return buf[base] == 0 or buf[base + 1:end] == ones

        if free():
            return
        block = self.wait == "block"
        if block:
            buf[_WRITER_WAITING] = 1
            memory_fence()
        try:
            self._waiter.until(free, timeout_s, lambda: (
                f"the writer waited for reader(s) {', '.join(map(str, self._unread(base)))} "
                f"to read chunk {index}"), _named(what, seq), sending=True)
        finally:
            if block:
                buf[_WRITER_WAITING] = 0

    def send(self, message: Message, timeout_s: Optional[float] = None,
             what: str = "message", seq: Optional[int] = None) -> None:
        """Broadcast ``message`` (bytes, or a list / tuple of bytes frames) to every
        reader, in the next chunk or, when larger than a chunk, over the overflow socket.
        Waits at most ``timeout_s`` (default the ring's) for the chunk to be free:
        ``RingTimeout`` ("could not send WHAT [SEQ] within N s (the writer waited for
        reader(s) R to read chunk C)"), ``PeerError`` when ``peer_problem()`` reports,
        ``RingClosed`` after ``close()``; errors name the message ``what`` (and ``seq``,
        appended when given, formatted only then);
        ``TypeError`` for anything but bytes frames."""
        if self._closed:
            raise RingClosed("send on a closed shared-memory ring")
        kind, frames = _frames_of(message)
        frames = [f.cast("B") if isinstance(f, memoryview) and f.format != "B" else f
                  for f in frames]
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        index, buf = self._index, self._buf
        base, start = self._flag_base(index), self._chunk(index)
        head = _HEAD.size + (4 * len(frames) if kind == _LIST else 0)
        inline = head + sum(map(len, frames)) <= self.chunk_bytes
        if not inline and self._subscribers < self.n_readers:
            self.wait_for_readers(timeout_s)
        self._wait_free(index, base, timeout_s, what, seq)
        memory_fence()
        buf[base] = 0
        if inline:
            self._write_chunk(start, kind, frames)
        else:
            self._overflow_seq = (self._overflow_seq + 1) & 0xFFFFFFFF
            self._pub.send_multipart([_OVERFLOW_HEAD.pack(self._overflow_seq, kind), *frames])
            _HEAD.pack_into(buf, start, _OVERFLOW, self._overflow_seq)
            self.overflowed += 1
        memory_fence()
        buf[base + 1:base + 1 + self.n_readers] = bytes(self.n_readers)
        buf[base] = 1
        memory_fence()
        self._index = (index + 1) % self.n_chunks
        self.sent += 1
        for fd in self._reader_fds:
            _notify(fd)

    def _write_chunk(self, start: int, kind: int, frames: list) -> None:
        buf = self._buf
        if kind == _ONE:
            frame = frames[0]
            _HEAD.pack_into(buf, start, _ONE, len(frame))
            pos = start + _HEAD.size
            buf[pos:pos + len(frame)] = frame
            return
        _HEAD.pack_into(buf, start, _LIST, len(frames))
        pos = start + _HEAD.size
        struct.pack_into(f"<{len(frames)}I", buf, pos, *map(len, frames))
        pos += 4 * len(frames)
        for frame in frames:
            buf[pos:pos + len(frame)] = frame
            pos += len(frame)

    def close(self) -> None:
        """Mark the ring closed (waiting readers raise ``RingClosed`` once they have
        read what was written), unlink the segment, close the socket and remove the
        folder. Idempotent; never waits for a reader."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._buf is not None:
                self._buf[_CLOSED] = 1
                memory_fence()
                for fd in self._fifo_fds[1:]:
                    _notify(fd)
        finally:
            shm = self.shm
            try:
                self._unmap()
            finally:
                if shm is not None and not self.unlinked:
                    _unlink(shm)
                    self.unlinked = True
                if self._pub is not None:
                    self._pub.close(linger=0)
                if self._own_ctx:
                    self.ctx.destroy(linger=0)
                if self.folder is not None:
                    shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> "RingWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def check_ring() -> None:
    """Make a small ring where a case would (in a fresh ``transport.EndpointDir``) and
    close it again: ``transport.EndpointError`` (one line) where a case's ring could
    not be set up (its socket path too long for a long ``TMPDIR``, no shared memory),
    in milliseconds and before any process starts."""
    endpoint_dir = EndpointDir()
    try:
        RingWriter(1, n_chunks=1, chunk_bytes=64, folder=endpoint_dir.path).close()
    finally:
        endpoint_dir.cleanup()


class RingReader(_RingEnd):
    """Reader ``rank`` (0 .. ``handle.n_readers`` - 1) of the ring ``handle``: maps the
    segment, connects to the overflow socket (within ``connect_timeout_s``) and
    subscribes.

    ``timeout_s``: the longest wait for a message (seconds); ``peer_problem``,
    ``ctx``, ``spin_s``, ``idle_sleep_s`` as ``RingWriter``'s. Raises ``ValueError``
    for a bad rank or a handle that does not describe the segment, ``RingClosed`` when
    the segment no longer exists, ``transport.EndpointError`` when the socket cannot
    be connected.
    """

    def __init__(self, handle: RingHandle, rank: int, *, timeout_s: float = 10.0,
                 peer_problem: Optional[Callable[[], Optional[str]]] = None,
                 ctx: Optional[zmq.Context] = None, spin_s: float = 10.0,
                 idle_sleep_s: float = 0.1, connect_timeout_s: float = 10.0):
        check_shape(handle.n_readers, handle.n_chunks, handle.chunk_bytes, handle.wait)
        if not (isinstance(rank, int) and 0 <= rank < handle.n_readers):
            raise ValueError(f"rank must be 0 to {handle.n_readers - 1}, got {rank!r}")
        self.rank, self.wait, self.timeout_s = rank, handle.wait, timeout_s
        self._fifo_fds, self._sub = [], None
        self._own_ctx = ctx is None
        self.ctx = zmq_context() if ctx is None else ctx
        self.received = 0
        try:
            try:
                shm = _segment(handle.shm_name)
            except FileNotFoundError:
                raise RingClosed(f"shared-memory ring {handle.shm_name} does not exist "
                                 f"(its writer closed it)") from None
            self._map(shm, handle.n_readers, handle.n_chunks, handle.chunk_bytes)
            self._check_header(handle)
            if self.wait == "block":
                self._fifo_fds = [_open_fifo(_fifo_path(handle.folder, rank)),
                                  _open_fifo(_fifo_path(handle.folder, None))]
            self._sub = open_socket(self.ctx, zmq.SUB, handle.overflow_endpoint, bind=False,
                                    connect_timeout_s=connect_timeout_s)
            self._sub.setsockopt(zmq.SUBSCRIBE, b"")
        except BaseException:
            self.close()
            raise
        self._writer_fd = self._fifo_fds[1] if self.wait == "block" else None
        self._waiter = _Waiter(self.wait, self._fifo_fds[0] if self._fifo_fds else None,
                               spin_s, idle_sleep_s, peer_problem)
        self._closed_flag = lambda: self._buf[_CLOSED] == 1


    def _check_header(self, handle: RingHandle) -> None:
        magic, n_readers, n_chunks, chunk_bytes = _HEADER.unpack_from(self._buf, 0)
        found = (magic, n_readers, n_chunks, chunk_bytes)
        wanted = (_MAGIC, handle.n_readers, handle.n_chunks, handle.chunk_bytes)
        if found != wanted:
            raise ValueError(one_line(f"shared-memory segment {handle.shm_name} is not the ring "
                                      f"its handle describes: header {found}, expected "
                                      f"{wanted}"))

    def recv(self, timeout_s: Optional[float] = None,
             what: str = "message", seq: Optional[int] = None) -> Union[bytes, list[bytes]]:
        """The next message, as sent (``bytes`` or ``list[bytes]``), waiting at most
        ``timeout_s`` (default the reader's): ``RingTimeout`` ("no WHAT [SEQ] within N s
        (reader R waited for the written flag of chunk C)"), ``RingClosed`` when the
        writer closed the ring and nothing is left or this reader was closed,
        ``PeerError`` when
        ``peer_problem()`` reports or a chunk or overflow message is malformed. Errors
        name the message ``what`` (and ``seq``, appended when given)."""
        index, buf = self._index, self._buf
        if buf is None:
            raise RingClosed("recv on a closed shared-memory ring reader")
        base = self._flag_base(index)
        flag = base + 1 + self.rank

        def written() -> bool:
            if buf[flag]:
                return False
            memory_fence()
            return buf[base] == 1

        if not written():
            self._waiter.until(
                written, self.timeout_s if timeout_s is None else timeout_s,
                lambda: f"reader {self.rank} waited for the written flag of chunk {index}",
                _named(what, seq), closed=self._closed_flag)
        memory_fence()
        message, overflow = self._read_chunk(self._chunk(index), what, seq)
        memory_fence()
        buf[flag] = 1
        memory_fence()
        if self._writer_fd is not None and buf[_WRITER_WAITING]:
            _notify(self._writer_fd)
        self._index = (index + 1) % self.n_chunks
        self.received += 1
        if overflow is not None:
            message = self._recv_overflow(overflow, timeout_s, _named(what, seq))
        return message

    def _read_chunk(self, start: int, what: str, seq: Optional[int]):
        """(message, None) for an inline chunk, (None, number) for an overflow marker."""
        buf = self._buf
        kind, count = _HEAD.unpack_from(buf, start)
        pos = start + _HEAD.size
        limit = start + self.chunk_bytes
        if kind == _ONE and pos + count <= limit:
            return bytes(buf[pos:pos + count]), None
        if kind == _OVERFLOW:
            return None, count
        if kind == _LIST and pos + 4 * count <= limit:
            lengths = struct.unpack_from(f"<{count}I", buf, pos)
            pos += 4 * count
            if pos + sum(lengths) <= limit:
                frames = []
                for n in lengths:
                    frames.append(bytes(buf[pos:pos + n]))
                    pos += n
                return frames, None
        raise PeerError(f"malformed shared-memory chunk (kind {kind}, count {count}) "
                        f"where {_named(what, seq)} was expected")

    def _recv_overflow(self, number: int, timeout_s: Optional[float], what: str):
        """Overflow message ``number`` from the socket (bounded like ``recv``)."""
        sub = self._sub
        if not sub.poll(0, zmq.POLLIN):
            self._waiter.socket(sub, self.timeout_s if timeout_s is None else timeout_s,
                                lambda: f"reader {self.rank} waited for overflow message "
                                        f"{number} on the socket", what)
        parts = sub.recv_multipart(zmq.NOBLOCK)
        if len(parts) < 2 or len(parts[0]) != _OVERFLOW_HEAD.size:
            raise PeerError(f"malformed overflow message where {what} was expected")
        got, kind = _OVERFLOW_HEAD.unpack(parts[0])
        if got != number or kind not in (_ONE, _LIST) or (kind == _ONE and len(parts) != 2):
            raise PeerError(f"overflow message {got} (kind {kind}) arrived where number "
                            f"{number} was expected ({what})")
        return parts[1] if kind == _ONE else parts[1:]

    def close(self) -> None:
        """Unmap the segment and close the socket; the writer owns (and unlinks) the
        segment. Idempotent."""
        try:
            self._unmap()
            self.shm = None
        finally:
            if self._sub is not None:
                self._sub.close(linger=0)
                self._sub = None
            if self._own_ctx:
                self.ctx.destroy(linger=0)

    def __enter__(self) -> "RingReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
