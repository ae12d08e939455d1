"""The shared-memory broadcast ring (``ipc_bench.wire.shm_ring``): exact bytes, the
overflow threshold, bad input, timeouts, clean-up, and a stress test of seeded random
messages (sequence number and checksum checked by every reader) with the writer and
the readers in separate processes, for one and two readers and both waits.

Each stream case sends 100,000 messages; the four take 2 to 5 s each on the 2-core
development machine under load (load average 3.5).
"""

from __future__ import annotations

import array
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time

import msgspec
import pytest

from ring_helpers import StreamMessages, check_message, start
from ipc_bench.wire.shm_ring import (SHM_PREFIX, RingClosed, RingHandle, RingReader,
                                     RingTimeout, RingWriter, check_shape)
from ipc_bench.wire.transport import EndpointError, PeerError

pytestmark = pytest.mark.timeout(120)

STREAM = 100_000


def segment_exists(name: str) -> bool:
    return os.path.exists(f"/dev/shm/{name}")


def remove_ring(handle: RingHandle) -> None:
    """Remove the segment and the folder a writer process left (killed, not closed)."""
    if segment_exists(handle.shm_name):
        os.unlink(f"/dev/shm/{handle.shm_name}")
    shutil.rmtree(handle.folder, ignore_errors=True)


def ring(n_readers: int = 1, **kw) -> tuple[RingWriter, list[RingReader]]:
    """A writer and its ``n_readers`` readers in this process; when a reader cannot be
    made, the writer and the readers made are closed before the error propagates."""
    kw.setdefault("timeout_s", 2.0)
    writer, readers = RingWriter(n_readers, **kw), []
    try:
        for r in range(n_readers):
            readers.append(RingReader(writer.handle, r, timeout_s=kw["timeout_s"]))
    except BaseException:
        close_all(writer, readers)
        raise
    return writer, readers


def close_all(writer: RingWriter, readers: list[RingReader]) -> None:
    for reader in readers:
        reader.close()
    writer.close()


@pytest.mark.parametrize("wait", ["spin", "block"])
def test_known_messages_arrive_byte_for_byte(wait):
    writer, readers = ring(2, n_chunks=3, chunk_bytes=64, wait=wait)
    inline_max = 64 - 5
    messages = [
        b"", b"\x00", b"SchedulerOutput", bytearray(b"\xff" * 10),
        memoryview(array.array("i", [1, -1, 7])),  # 12 bytes, format "i"
        b"x" * inline_max,  # fills the chunk exactly
        b"y" * (inline_max + 1),  # one byte too many: overflow
        [b"a", b"", b"bc"], [], [b"z" * 100, b"w"],  # frames; the last overflows
        b"q" * 5000,
    ]
    expected = [b"", b"\x00", b"SchedulerOutput", b"\xff" * 10,
                array.array("i", [1, -1, 7]).tobytes(), b"x" * inline_max,
                b"y" * (inline_max + 1), [b"a", b"", b"bc"], [], [b"z" * 100, b"w"],
                b"q" * 5000]
    try:
        for message, want in zip(messages, expected):
            writer.send(message)
            for reader in readers:
                got = reader.recv()
                assert type(got) is type(want) and got == want
        assert writer.sent == 11 and writer.overflowed == 3
        assert [r.received for r in readers] == [11, 11]
    finally:
        close_all(writer, readers)


def test_a_list_of_frames_fills_a_chunk_to_the_byte():
    writer, (reader,) = ring(1, n_chunks=2, chunk_bytes=64)
    try:
        fits = [b"a" * 20, b"b" * 31]  # 5 + 2 x 4 + 51 = 64
        writer.send(fits)
        assert writer.overflowed == 0 and reader.recv() == fits
        writer.send([b"a" * 20, b"b" * 32])
        assert writer.overflowed == 1 and reader.recv() == [b"a" * 20, b"b" * 32]
    finally:
        close_all(writer, [reader])


def test_bad_input_is_one_line():
    with pytest.raises(ValueError, match=r"^n_readers must be an integer >= 1, got 0$"):
        check_shape(0, 2, 64, "spin")
    with pytest.raises(ValueError, match=r"^chunk_bytes must be an integer >= 64, got 63$"):
        RingWriter(1, chunk_bytes=63)
    with pytest.raises(ValueError, match=r"^wait must be one of spin, block, got 'busy'$"):
        RingWriter(1, wait="busy")
    with pytest.raises(ValueError, match=r"^timeout_s must be > 0, got 0$"):
        RingWriter(1, timeout_s=0)
    writer, (reader,) = ring(1, n_chunks=2, chunk_bytes=64)
    try:
        with pytest.raises(TypeError, match=r"^a ring message is bytes or a list of bytes "
                                            r"frames, got str$"):
            writer.send("text")
        with pytest.raises(TypeError, match=r"^frame 1 of the message is int, not bytes$"):
            writer.send([b"a", 1])
        with pytest.raises(ValueError, match=r"^rank must be 0 to 0, got 1$"):
            RingReader(writer.handle, 1)
        assert writer.sent == 0
    finally:
        close_all(writer, [reader])
    with pytest.raises(RingClosed, match=f"^shared-memory ring {writer.handle.shm_name} does "
                                         f"not exist"):
        RingReader(writer.handle, 0)


def test_a_handle_of_another_shape_is_refused():
    with RingWriter(1, n_chunks=2, chunk_bytes=64) as writer:
        wrong = RingHandle(**{**{f: getattr(writer.handle, f)
                                 for f in writer.handle.__struct_fields__}, "n_chunks": 3})
        with pytest.raises(ValueError, match=r"is not the ring its handle describes"):
            RingReader(wrong, 0)


@pytest.mark.parametrize("wait", ["spin", "block"])
def test_every_wait_times_out_naming_what_it_waited_for(wait):
    writer, (r0, r1) = ring(2, n_chunks=2, chunk_bytes=64, wait=wait)
    try:
        for _ in range(2):
            writer.send(b"m")
            r0.recv()
        t0 = time.monotonic()
        with pytest.raises(RingTimeout, match=r"^could not send SchedulerOutput for step 3 "
                                              r"within 0.2 s \(the writer waited for reader\(s\) "
                                              r"1 to read chunk 0\)$"):
            writer.send(b"m", timeout_s=0.2, what="SchedulerOutput for step 3")
        with pytest.raises(RingTimeout, match=r"^no SchedulerOutput for step 3 within 0.2 s "
                                              r"\(reader 0 waited for the written flag of "
                                              r"chunk 0\)$"):
            r0.recv(timeout_s=0.2, what="SchedulerOutput for step 3")
        # the given 0.2 s each, not the default 10 s: room for a loaded machine's stalls
        assert time.monotonic() - t0 < 8.0
    finally:
        close_all(writer, [r0, r1])


def test_a_reported_peer_problem_ends_the_wait():
    writer, (reader,) = ring(1, n_chunks=2, chunk_bytes=64, timeout_s=30)
    reader.peer_problem = lambda: "scheduler process 7 was killed by SIGKILL"
    try:
        t0 = time.monotonic()
        with pytest.raises(PeerError, match=r"^scheduler process 7 was killed by SIGKILL, "
                                            r"noticed while waiting for SchedulerOutput for step 1$"):
            reader.recv(what="SchedulerOutput for step 1")
        assert time.monotonic() - t0 < 10.0  # not the 30 s timeout
    finally:
        close_all(writer, [reader])


@pytest.mark.parametrize("wait", ["spin", "block"])
def test_a_closed_ring_is_read_to_its_end(wait):
    writer, (reader,) = ring(1, n_chunks=4, chunk_bytes=64, wait=wait, timeout_s=30)
    try:
        writer.send(b"last")
        writer.close()
        assert reader.recv() == b"last"
        t0 = time.monotonic()
        with pytest.raises(RingClosed, match=r"^the writer closed the shared-memory ring "
                                             r"\(reader 0 waited for the written flag of "
                                             r"chunk 1\)$"):
            reader.recv()
        assert time.monotonic() - t0 < 10.0  # not the 30 s timeout
    finally:
        close_all(writer, [reader])


def test_close_unlinks_the_segment_and_the_folder():
    writer, readers = ring(2, n_chunks=2, chunk_bytes=64, wait="block")
    name, folder = writer.handle.shm_name, writer.folder
    try:
        assert name.startswith(SHM_PREFIX) and segment_exists(name)
        assert sorted(os.listdir(folder)) == [name, "overflow", "reader0.fifo", "reader1.fifo",
                                              "writer.fifo"]  # the segment named, for a sweep
        assert os.stat(folder).st_mode & 0o777 == 0o700
        assert os.stat(f"/dev/shm/{name}").st_mode & 0o777 == 0o600
    finally:
        close_all(writer, readers)
    assert not segment_exists(name) and not os.path.exists(folder)
    writer.close()  # idempotent
    readers[0].close()
    with pytest.raises(RingClosed, match=r"^send on a closed shared-memory ring$"):
        writer.send(b"late")
    with pytest.raises(RingClosed, match=r"^recv on a closed shared-memory ring reader$"):
        readers[0].recv()


def test_a_ring_whose_reader_cannot_attach_closes_its_writer(monkeypatch, ring_segments):
    """``ring`` closes the writer (and the readers made) when a reader fails: a failed
    test leaves no segment (a leak fails the test: ``conftest.ring_segments``)."""
    made, real_reader = [], RingReader

    class Writer(RingWriter):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    def refuse_rank_1(handle, rank, **kwargs):
        if rank == 1:
            raise EndpointError("cannot connect reader 1")
        made.append(real_reader(handle, rank, **kwargs))
        return made[-1]

    module = sys.modules[__name__]
    monkeypatch.setattr(module, "RingWriter", Writer)
    monkeypatch.setattr(module, "RingReader", refuse_rank_1)
    try:
        with pytest.raises(EndpointError, match=r"^cannot connect reader 1$"):
            ring(2, n_chunks=2, chunk_bytes=64)
        ((folder, name),) = ring_segments.created
        assert not segment_exists(name) and not os.path.exists(folder)
        assert made[1].shm is None  # the reader made was closed (unmapped)
    finally:
        for end in made:  # what ring left open, closed here so that nothing hangs
            end.close()


def test_the_suite_fails_a_test_that_leaves_a_ring_and_removes_it(ring_segments):
    """``conftest.ring_segments``: the segment and folder of a writer this process made
    and never closed are named and removed; a segment another process made is not this
    test's; a reader's mapping is no creation."""
    foreign = f"/dev/shm/{SHM_PREFIX}{secrets.token_hex(8)}"
    os.close(os.open(foreign, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600))
    writer = RingWriter(2, n_chunks=2, chunk_bytes=64)
    name, folder = writer.handle.shm_name, writer.folder
    try:
        RingReader(writer.handle, 0).close()
        assert ring_segments.created == [(folder, name)]
        assert ring_segments.left() == [f"/dev/shm/{name}", folder]
        with pytest.raises(pytest.fail.Exception, match=(
                rf"^the test left what its shared-memory ring writers made \(removed now\): "
                rf"/dev/shm/{name}, {re.escape(folder)}$")):
            ring_segments.check()
        assert not segment_exists(name) and not os.path.exists(folder)
        assert ring_segments.created == [] and os.path.exists(foreign)
    finally:
        writer.close()
        os.unlink(foreign)


def test_a_reader_that_exits_leaves_the_segment_to_the_writer():
    with RingWriter(1, n_chunks=2, chunk_bytes=64, timeout_s=10) as writer:
        proc = start("attach", writer.handle, 0)
        writer.send(b"one")
        assert proc.wait(20) == 0
        assert segment_exists(writer.handle.shm_name)  # no resource tracker unlinked it
        writer.send(b"two")
    assert not segment_exists(writer.handle.shm_name)


def test_a_killed_reader_fails_the_writer_within_its_timeout_and_close_cleans_up():
    writer = RingWriter(2, n_chunks=2, chunk_bytes=64, timeout_s=1.0)
    name, folder = writer.handle.shm_name, writer.folder
    procs = []
    try:
        procs.extend(start("idle", writer.handle, r, 2 * (1 - r)) for r in range(2))
        writer.send(b"a")
        writer.send(b"b")
        assert [p.stdout.readline() for p in procs] == ["ready\n", "ready\n"]
        os.kill(procs[1].pid, signal.SIGKILL)
        procs[1].wait(10)
        t0 = time.monotonic()
        with pytest.raises(RingTimeout, match=r"the writer waited for reader\(s\) 1 to read "
                                              r"chunk 0"):
            writer.send(b"c")
        assert time.monotonic() - t0 < 8.0  # its 1 s, not the default 10 s
    finally:
        writer.close()
        for proc in procs:
            proc.kill()
            proc.wait(10)
    assert not segment_exists(name) and not os.path.exists(folder)


def test_the_name_goes_once_every_reader_attached_and_a_killed_writer_leaves_nothing():
    """A writer process unlinks the segment's name once its reader subscribed; the
    reader still reads through its mapping; killing the writer leaves no segment (its
    folder of FIFOs and socket file stays; under the harness it lies in the run's socket
    folder)."""
    code = ("import sys, time, msgspec\n"
            "from ipc_bench.wire.shm_ring import RingWriter\n"
            "w = RingWriter(1, n_chunks=2, chunk_bytes=256, timeout_s=20)\n"
            "print(msgspec.json.encode(w.handle).decode(), flush=True)\n"
            "w.wait_for_readers()\n"
            "w.send(b'after unlink')\n"
            "print(w.unlinked, flush=True); time.sleep(600)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    handle = None
    try:
        handle = msgspec.json.decode(proc.stdout.readline(), type=RingHandle)
        assert segment_exists(handle.shm_name)
        with RingReader(handle, 0, timeout_s=20) as reader:
            assert proc.stdout.readline().strip() == "True"
            assert not segment_exists(handle.shm_name)
            assert reader.recv() == b"after unlink"
            proc.kill()
            proc.wait(10)
            with pytest.raises(RingTimeout):
                reader.recv(timeout_s=0.2)
    finally:
        proc.kill()
        proc.wait(10)
        if handle is not None:  # what the killed writer left, noted, then removed
            segment_left, folder_left = segment_exists(handle.shm_name), os.path.isdir(
                handle.folder)
            remove_ring(handle)
    assert not segment_left
    assert folder_left  # the folder stays, as documented


def test_the_stream_checker_catches_a_wrong_message():
    stream = StreamMessages(7, 256)
    messages = [stream.next() for _ in range(20)]
    seq, good = next((i, m) for i, m in enumerate(messages)
                     if isinstance(m, bytes) and len(m) > 12)
    assert check_message(good, good, seq) is None
    flipped = good[:-1] + bytes([good[-1] ^ 1])
    assert check_message(flipped, good, seq) == f"message {seq}: checksum mismatch ({len(good)} B)"
    assert check_message(good, good, seq + 1) == f"message {seq + 1}: carries sequence number {seq}"
    assert check_message([good], good, seq) == f"message {seq}: list arrived, bytes sent"
    assert any(isinstance(m, list) for m in messages)


def run_stream(count: int, n_readers: int, wait: str, seed: int = 20261130,
               chunk_bytes: int = 4096, n_chunks: int = 8) -> RingWriter:
    """Stream ``count`` seeded messages through a ring to ``n_readers`` reader
    processes; every reader checks every message. Returns the closed writer."""
    procs = []

    def problem():
        gone = [p for p in procs if p.poll() is not None]
        return f"reader process {gone[0].pid} exited ({gone[0].returncode})" if gone else None

    writer = RingWriter(n_readers, n_chunks=n_chunks, chunk_bytes=chunk_bytes, wait=wait,
                        timeout_s=30.0, peer_problem=problem, spin_s=1.0, idle_sleep_s=0.001)
    name = writer.handle.shm_name
    try:
        procs.extend(start("stream", writer.handle, r, count, seed) for r in range(n_readers))
        stream = StreamMessages(seed, chunk_bytes)
        try:
            for seq in range(count):
                writer.send(stream.next(), what=f"message {seq}")
        except PeerError as exc:  # a reader stopped: show what it found
            found = [p.communicate(timeout=10)[0] for p in procs]
            raise AssertionError(f"{exc}; readers: {found}") from None
        outcomes = sorted(tuple(json.loads(p.communicate(timeout=60)[0])) for p in procs)
    finally:
        writer.close()
        for proc in procs:
            proc.kill()
            proc.wait(10)
    assert outcomes == [(r, count, None) for r in range(n_readers)]
    assert not segment_exists(name)
    return writer


@pytest.mark.slow  # a stress run: 4 x 100,000 messages
@pytest.mark.parametrize("wait", ["spin", "block"])
@pytest.mark.parametrize("n_readers", [1, 2])
def test_stream_of_100k_random_messages_every_one_checked(n_readers, wait):
    writer = run_stream(STREAM, n_readers, wait)
    assert writer.sent == STREAM
    # About 10 % of the sizes lie in [chunk - 32, 2 x chunk): most of those overflow.
    assert 0.05 * STREAM < writer.overflowed < 0.15 * STREAM
