"""Fixtures shared by the harness tests."""

from __future__ import annotations

import signal

import pytest

from ipc_bench.harness import signals


@pytest.fixture
def installed():
    """The harness's signal handlers installed in this process, the signals let
    through, for the test; the earlier handlers are put back after it."""
    old = signals.install()
    signals.unblock()
    try:
        yield
    finally:
        signals.restore(old)
        for s, h in old.items():  # restore() leaves them ignored after a signal
            signal.signal(s, h)
