"""A run's terminal tables on a stdout whose encoding is ASCII (``PYTHONIOENCODING=ascii``):
the mark ``°`` (a timing measured on 2 cores, none spare) was written as its escape
``\\xb0``, four characters where the table was padded for one, so every cell after it
stood 3 columns right of its header. It is written as ``^``
(``console.ASCII_STAND_INS``), in the cells and in the note under the table alike."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ipc_bench.cli.console import GuardedStream, stand_ins

REPO = Path(__file__).resolve().parents[2]


def _two_cores():
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:2])


def _spans(dashes: str) -> list[tuple[int, int]]:
    return [m.span() for m in re.finditer(r"-+", dashes)]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores")
def test_ascii_stdout_keeps_the_tables_aligned(tmp_path):
    env = dict(os.environ, PYTHONIOENCODING="ascii")
    proc = subprocess.run(
        [sys.executable, "bench.py", "--scenario", "decode-steady", "--num-running", "4",
         "--steps", "20", "--warmup-steps", "2", "--codecs", "msgpack",
         "--no-single-process", "--no-floor", "--output", str(tmp_path / "run")],
        cwd=REPO, env=env, capture_output=True, timeout=120, preexec_fn=_two_cores)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode("ascii")  # every byte ASCII
    assert "\\x" not in out
    lines = out.splitlines()
    tables = [i for i, line in enumerate(lines) if line.lstrip().startswith("policy ")]
    assert len(tables) == 2  # the case table, the runner-gap table
    for top in tables:
        header, dashes = lines[top], lines[top + 1]
        spans = _spans(dashes)
        assert all(header[a:b].strip() for a, b in spans)
        rows = lines[top + 2:top + 4]
        for row in rows:
            # every cell within its header's dashes, a space (or the line's end) either side
            cells = [row[a:b].strip() for a, b in spans]
            assert cells == row.split(), (header, row)
            assert len(row) == len(dashes)
        transport = [header[a:b].strip() for a, b in spans].index("transport")
        assert [row.split()[transport] for row in rows] == ["ipc^", "ipc^"]
        assert lines[top + 4].lstrip().startswith("^ 2 cores: the scheduler and its runner "
                                                  "had a core each")
    # the exact columns of the case table's transport and steps cells
    header, row = lines[tables[0]], lines[tables[0] + 2]
    assert (row.index("ipc^"), row.index("20") + 2) == (
        header.index("transport"), header.index("steps") + len("steps"))


def test_stand_ins_only_where_the_encoding_lacks_them():
    assert stand_ins("utf-8") == {}
    assert stand_ins("latin-1") == {}  # ° and µ are in Latin-1
    assert stand_ins("ascii") == {ord("°"): "^", ord("µ"): "u"}


class _Ascii:
    encoding, errors = "ascii", "strict"

    def __init__(self):
        self.text = ""

    def fileno(self):
        raise OSError("no descriptor")

    def write(self, text):
        text.encode(self.encoding)
        self.text += text
        return len(text)


def test_guarded_ascii_stream_writes_stand_ins_then_escapes():
    stream = _Ascii()
    GuardedStream(stream, 1).write("ipc°  12 µs ±3\n")
    assert stream.text == "ipc^  12 us \\xb13\n"
