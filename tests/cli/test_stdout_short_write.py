"""A guarded stdout writes to its descriptor until every byte is taken
(``GuardedStream._write_through``): a pipe whose reader leaves during a write takes part
of it without an error, which Python's buffered stream took as written, so ``| head -1``
on an end text of over 64 KiB exited 0 with the rest lost; it now exits 141."""

from __future__ import annotations

import fcntl
import io
import os
import subprocess
import sys
import threading

from ipc_bench.cli import console
from ipc_bench.cli.console import GuardedStream

#: A command that prints a line and 200 KB more in one write, as a run's end text
#: (``one_write``) longer than a pipe holds, then exits as a run does.
END_TEXT = """
import sys
from ipc_bench.cli.console import Console, one_write
c = Console.install()
with one_write():
    print("first line")
    print("x" * 200_000)
sys.exit(c.restore(0, "bench.py"))
"""


def test_a_reader_that_leaves_during_a_long_write_is_a_broken_pipe():
    proc = subprocess.Popen([sys.executable, "-c", END_TEXT], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout.readline() == b"first line\n"
    proc.stdout.close()  # the reader leaves, 200 KB unread: more than the pipe holds
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (141, b"")


def _pipe_stream() -> tuple[int, GuardedStream]:
    r, w = os.pipe()
    return r, GuardedStream(os.fdopen(w, "w", encoding="utf-8"), w)


def _read_all(r: int, into: list) -> None:
    with os.fdopen(r, "rb") as f:
        into.append(f.read())


def test_every_byte_is_written_whatever_each_write_takes(monkeypatch):
    r, out = _pipe_stream()
    real, calls = os.write, []

    def short_write(fd: int, data) -> int:  # a descriptor that takes 1,000 B a write
        calls.append(len(data))
        return real(fd, bytes(data[:1000]))

    monkeypatch.setattr(console.os, "write", short_write)
    got: list = []
    reader = threading.Thread(target=_read_all, args=(r, got))
    reader.start()
    out.write("µ" * 5_000 + "\n")  # 10,001 B in UTF-8
    out.write("end\n")
    monkeypatch.undo()
    out.stream.close()
    reader.join(timeout=30)
    assert got == [("µ" * 5_000 + "\nend\n").encode()]
    assert calls[:3] == [10_001, 9_001, 8_001] and len(calls) == 12
    assert out.error is None


def test_a_non_blocking_descriptor_is_waited_on_when_full():
    r, out = _pipe_stream()
    flags = fcntl.fcntl(out.fd, fcntl.F_GETFL)
    fcntl.fcntl(out.fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    got: list = []
    reader = threading.Thread(target=_read_all, args=(r, got))
    reader.start()
    text = "y" * 300_000 + "\n"  # more than the pipe holds: a write finds it full
    assert out.write(text) == len(text)
    out.stream.close()
    reader.join(timeout=30)
    assert got == [text.encode()] and out.error is None


def test_a_capture_without_a_descriptor_gets_the_text_from_its_stream():
    capture = io.StringIO()
    out = GuardedStream(capture, 1)
    assert out.write("line\n") == 5
    assert capture.getvalue() == "line\n"
