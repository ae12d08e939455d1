"""Processes and messages for the shared-memory ring's tests (``tests/wire/test_shm_ring.py``).

Run as a script (``start``), this file is a reader process of its own.

Message ``i`` of a seeded stream (``StreamMessages``) is ``size`` bytes: an 8-byte
sequence number and a 4-byte CRC-32 of the rest, then bytes cut from a seeded random
pool, the whole cut to ``size`` (so messages of 0 to 11 bytes carry a prefix of the
header). Every fifth message is a list of up to three frames. Sizes run from 0 to
twice the chunk size, so that some messages overflow the chunk.
"""

from __future__ import annotations

import json
import random
import struct
import subprocess
import sys
import time
import zlib
from typing import Optional, Union

import msgspec

from ipc_bench.wire.shm_ring import RingHandle, RingReader

_SEQ_CRC = struct.Struct("<QI")


class StreamMessages:
    """The seeded message stream: ``next()`` returns message 0, 1, ... as the ring
    carries it (``bytes`` or ``list[bytes]``); writer and readers build the same stream
    from the same ``seed`` and ``chunk_bytes``."""

    def __init__(self, seed: int, chunk_bytes: int):
        self.rng = random.Random(seed)
        self.pool = random.Random(seed + 1).randbytes(4 * chunk_bytes)
        self.chunk_bytes = chunk_bytes
        self.i = 0

    def _size(self) -> int:
        u = self.rng.random()
        if u < 0.3:
            return self.rng.randrange(0, 64)
        if u < 0.9:
            return self.rng.randrange(0, self.chunk_bytes)
        return self.rng.randrange(self.chunk_bytes - 32, 2 * self.chunk_bytes)

    def next(self) -> Union[bytes, list[bytes]]:
        size = self._size()
        start = self.rng.randrange(0, len(self.pool) - size)
        rest = self.pool[start:start + max(0, size - _SEQ_CRC.size)]
        data = (_SEQ_CRC.pack(self.i, zlib.crc32(rest)) + rest)[:size]
        self.i += 1
        if self.i % 5:
            return data
        cuts = sorted(self.rng.randrange(0, size + 1) for _ in range(self.rng.randrange(0, 3)))
        return [data[a:b] for a, b in zip([0, *cuts], [*cuts, size])]


def check_message(got, expected, seq: int) -> Optional[str]:
    """Why ``got`` is not message ``seq`` (its frames, header and checksum), or ``None``."""
    if type(got) is not type(expected):
        return f"message {seq}: {type(got).__name__} arrived, {type(expected).__name__} sent"
    if isinstance(got, list) and list(map(len, got)) != list(map(len, expected)):
        return f"message {seq}: frames of {list(map(len, got))} B, sent {list(map(len, expected))}"
    data = b"".join(got) if isinstance(got, list) else got
    want = b"".join(expected) if isinstance(expected, list) else expected
    if len(data) >= _SEQ_CRC.size:
        number, crc = _SEQ_CRC.unpack_from(data)
        if number != seq:
            return f"message {seq}: carries sequence number {number}"
        if zlib.crc32(data[_SEQ_CRC.size:]) != crc:
            return f"message {seq}: checksum mismatch ({len(data)} B)"
    if data != want:
        return f"message {seq}: {len(data)} B differ from the {len(want)} B sent"
    return None


def stream_reader(handle: RingHandle, rank: int, count: int, seed: int,
                  timeout_s: float = 30.0) -> tuple[int, int, Optional[str]]:
    """Reader ``rank``: receive ``count`` messages of the seeded stream and check each.
    Returns ``(rank, messages received and correct, first problem or None)``."""
    expected = StreamMessages(seed, handle.chunk_bytes)
    received, problem = 0, None
    try:
        with RingReader(handle, rank, timeout_s=timeout_s, spin_s=1.0,
                        idle_sleep_s=0.001) as reader:
            for seq in range(count):
                problem = check_message(reader.recv(what=f"message {seq}"),
                                        expected.next(), seq)
                if problem:
                    break
                received += 1
    except Exception as exc:  # reported to the test, which fails on it
        problem = f"{type(exc).__name__}: {exc}"
    return rank, received, problem


def start(mode: str, handle: RingHandle, *args) -> subprocess.Popen:
    """This file as a reader process (``main``), its stdout piped back as text. A plain
    subprocess, not ``multiprocessing``, which would leave a resource tracker child
    behind in the test process."""
    return subprocess.Popen([sys.executable, __file__, mode,
                             msgspec.json.encode(handle).decode(), *map(str, args)],
                            stdout=subprocess.PIPE, text=True)


def main(mode: str, handle_json: str, rank: str, *args: str) -> None:
    """``stream COUNT SEED``: ``stream_reader``, its result printed as JSON;
    ``idle COUNT``: read COUNT messages, print ``ready``, sleep until killed;
    ``attach``: read one message and exit."""
    handle = msgspec.json.decode(handle_json, type=RingHandle)
    if mode == "stream":
        print(json.dumps(stream_reader(handle, int(rank), int(args[0]), int(args[1]))))
        return
    reader = RingReader(handle, int(rank), timeout_s=30.0)
    for _ in range(int(args[0]) if mode == "idle" else 1):
        reader.recv()
    if mode == "idle":
        print("ready", flush=True)
        time.sleep(600)
    reader.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
