"""SIGINT / SIGTERM handling shared by the command line and the case driver.

``install()`` (called by ``bench.py``) makes SIGINT and SIGTERM raise ``Interrupted``
in the main thread, carrying the exit code the run should end with (130 / 143, i.e.
128 + the signal number, as a shell reports it). Code that must not be cut in the
middle (appending rows to a CSV file, killing and reaping the runner, rewriting
``summary.json``) runs inside ``deferred()``: a signal arriving there is remembered
and raised when the block ends, so a file is never left with half a row and a child
is never left unreaped. The deferral is done in Python, not with
``pthread_sigmask``: the handler always runs in the main thread, whichever thread the
kernel picked, so it also holds while other threads (the RSS sampler) run.

Without ``install()`` (library use, tests), ``deferred()`` is a no-op and signals keep
their default behaviour.
"""

from __future__ import annotations

import signal
from contextlib import contextmanager
from typing import Iterator, Optional

#: Signals turned into ``Interrupted``.
HANDLED = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived; ``code`` is the exit code (130 or 143).

    A ``BaseException``, like ``KeyboardInterrupt``, so ``except Exception`` blocks
    on the way up do not swallow it.
    """

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code

    @property
    def signal_name(self) -> str:
        try:
            return signal.Signals(self.code - 128).name
        except ValueError:
            return f"signal {self.code - 128}"


class _State:
    depth = 0                      # nesting of deferred() blocks
    pending: Optional[int] = None  # exit code of a signal that arrived while deferred
    first: Optional[int] = None    # exit code of the first signal of the run


def _handler(signum, frame) -> None:
    if _State.first is not None:
        return  # already shutting down: a second Ctrl-C must not cut the clean-up short
    _State.first = 128 + signum
    if _State.depth > 0:
        _State.pending = _State.first
        return
    raise Interrupted(_State.first)


def install() -> dict:
    """Route SIGINT and SIGTERM to ``Interrupted``; returns the old handlers for
    ``restore``."""
    _State.depth, _State.pending, _State.first = 0, None, None
    return {s: signal.signal(s, _handler) for s in HANDLED}


def restore(old: dict) -> None:
    """Put back the handlers ``install`` returned, unless a signal already arrived:
    then further signals stay ignored until the process exits, so repeated Ctrl-C
    during shutdown prints no traceback."""
    if _State.first is not None:
        for s in old:
            signal.signal(s, signal.SIG_IGN)
        return
    for s, h in old.items():
        signal.signal(s, h)


@contextmanager
def deferred() -> Iterator[None]:
    """Run the block to its end even if SIGINT / SIGTERM arrive; raise ``Interrupted``
    afterwards (also when the block raised: the interrupt wins)."""
    _State.depth += 1
    try:
        yield
    finally:
        _State.depth -= 1
        if _State.depth == 0 and _State.pending is not None:
            code, _State.pending = _State.pending, None
            raise Interrupted(code)
