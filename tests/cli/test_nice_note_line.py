"""A run started under ``nice`` prints its nice note as ``tests/run_notes.py`` writes it,
right among its first lines, and ``without_nice_note`` takes out that line and no other:
the tests that compare a run's first lines rely on both to hold at any niceness."""

from __future__ import annotations

import subprocess
import sys

from fault_helpers import REPO, without_load_note
from run_notes import nice_note_line, own_niceness, without_nice_note

#: What ``nice -n 5`` gives a child of this process (the kernel caps it at 19).
CHILD_NICE = min(19, own_niceness() + 5)


def test_a_niced_run_prints_the_note_line_exactly(tmp_path):
    run = tmp_path / "run"
    proc = subprocess.run(
        ["nice", "-n", "5", sys.executable, "bench.py", "--scenario", "decode-steady",
         "--num-running", "2", "--steps", "5", "--warmup-steps", "0", "--codecs",
         "msgpack", "--policies", "send", "--no-single-process", "--no-floor", "--output",
         str(run)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = without_load_note(proc.stderr.splitlines())
    assert lines[:2] == [f"ipc-bench: decode-steady, 1 case -> {run}",
                         nice_note_line(CHILD_NICE)], lines
    assert not any(line.startswith("note:") for line in lines[2:]), lines
    kept = without_nice_note(lines, CHILD_NICE)
    assert kept == lines[:1] + lines[2:]


def test_without_nice_note_takes_out_only_the_line_of_that_nice_value():
    lines = ["ipc-bench: decode-steady, 1 case -> run", nice_note_line(7), "note: other"]
    assert without_nice_note(lines, 7) == [lines[0], lines[2]]
    assert without_nice_note(lines, 6) == lines  # another nice value's line stays
    assert without_nice_note(lines, 0) == lines  # a run at nice 0 prints none
    assert without_nice_note([lines[0], nice_note_line(7)[:-1]], 7) == [
        lines[0], nice_note_line(7)[:-1]]  # a line that is not the whole note stays
    assert nice_note_line(12) == (
        "note: this run runs at nice 12 (a lowered CPU priority): on a busy machine its "
        "processes wait for the others, and its times and tokens/s hold those waits; "
        "bytes are exact whatever the priority")
