"""The ``note:`` line a run prints among its first lines when it runs at a lowered CPU
priority (``environment.nice_note``), which the suite's own processes do when it is
started under ``nice``: a run the tests start, in process or as a child, inherits the
niceness of the test's process. ``without_nice_note`` takes exactly that line out of a
run's stderr lines, so tests that compare a run's first lines hold at any niceness;
``tests/cli/test_nice_note_line.py`` checks that a niced run prints it as written here."""

from __future__ import annotations

import os
from typing import Optional


def nice_note_line(nice: int) -> str:
    """The whole line a run at nice ``nice`` (above 0) prints, as ``cli/execute.py``
    prints ``environment.nice_note``."""
    return (f"note: this run runs at nice {nice} (a lowered CPU priority): on a busy "
            "machine its processes wait for the others, and its times and tokens/s hold "
            "those waits; bytes are exact whatever the priority")


def own_niceness() -> int:
    """This process's nice value, which the runs it starts inherit."""
    return os.getpriority(os.PRIO_PROCESS, 0)


def without_nice_note(lines: list[str], nice: Optional[int] = None) -> list[str]:
    """``lines`` of a run's stderr less its one note line for nice ``nice`` (default:
    this process's, ``own_niceness``), matched whole; unchanged at nice 0 or below,
    where a run prints no such line. A second copy of the line fails the caller."""
    nice = own_niceness() if nice is None else nice
    if nice <= 0:
        return list(lines)
    note = nice_note_line(nice)
    assert lines.count(note) <= 1, lines
    return [line for line in lines if line != note]
