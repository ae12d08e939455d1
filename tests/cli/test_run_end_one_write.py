"""A run prints its end text (tables, notes, ``results: DIR``) in one write, so a reader
that reads once and leaves (``bench.py ... | head -1``) gets all of it and the run exits
0, buffered or with ``PYTHONUNBUFFERED=1`` (docs/usage.md, "Exit codes"). It was several
writes (``print(tables)``, ``print("\\nresults: DIR")``), and a reader gone between them
made the run exit 141: with ``PYTHONUNBUFFERED=1`` now and then (1 run in 6 seen), buffered
hardly ever (the buffer joined them; 0 in 6). Whether it happens here is a race, so the
one write itself is checked call by call in test_end_text_write_calls.py; this test runs
the real pipe once each way, that the text reaches a single read whole."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

ARGS = ("--scenario", "decode-steady", "--num-running", "2", "--steps", "3",
        "--warmup-steps", "0", "--codecs", "msgpack", "--policies", "send",
        "--no-single-process", "--no-floor", "--quiet")

HEAD = (b"decode-steady  [num_running=2]  device=cpu  model=null (no model computed: the "
        b"step is the harness's own)\n"
        b"policy  codec    transport  steps  out tok/s  floor tok/s  x floor  s2r B/step  "
        b"r2s B/step  tok B/step  prompt B/step  build us  encode us  decode us  "
        b"mean step us\n")


def _tail(run: Path) -> re.Pattern:
    """The text's last lines: its warnings' count (1 or 2, as the run went), then
    ``results: DIR``."""
    return re.compile(rb"\n[12] warnings? recorded in " + re.escape(bytes(run)) +
                      rb"/summary.json \(not shown: --quiet\)\n\nresults: " +
                      re.escape(bytes(run)) + rb"\n\Z")


def test_a_reader_that_reads_once_gets_the_whole_end_and_the_run_exits_0(tmp_path):
    codes = []
    for i in range(2):  # buffered, then with PYTHONUNBUFFERED=1
        run = tmp_path / f"r{i}"
        env = dict(os.environ)
        if i % 2:
            env["PYTHONUNBUFFERED"] = "1"
        else:
            env.pop("PYTHONUNBUFFERED", None)
        proc = subprocess.Popen([sys.executable, "bench.py", *ARGS, "--output", str(run)],
                                cwd=REPO, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=env)
        data = os.read(proc.stdout.fileno(), 1 << 20)  # one read, as head's, then gone
        proc.stdout.close()
        codes.append(proc.wait(timeout=120))
        assert data.startswith(HEAD), data
        assert _tail(run).search(data), data
        assert data.count(b"\nresults: ") == 1
    assert codes == [0, 0]
