"""A stdout stand-in for the tests of what reaches stdout in one write call
(``console.one_write``): each call's text is kept apart, so a test counts the calls
without racing a pipe's reader."""

from __future__ import annotations


class WriteCalls:
    """A stdout that keeps each write call's text apart in ``writes``; a flush is noted
    there as ``"<flush>"`` where ``flushes`` is true, else not counted."""

    encoding = "utf-8"

    def __init__(self, flushes: bool = False) -> None:
        self.writes: list[str] = []
        self.flushes = flushes

    def write(self, text: str) -> int:
        self.writes.append(text)
        return len(text)

    def flush(self) -> None:
        if self.flushes:
            self.writes.append("<flush>")

    def isatty(self) -> bool:
        return False
