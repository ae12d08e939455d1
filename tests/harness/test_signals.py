"""``ipc_bench.harness.signals`` in this process: a signal that lands where an exception
would be dropped (a gc callback, a ``__del__``) is not lost, and one that arrives while
the signals are blocked acts when they are let through."""

from __future__ import annotations

import gc
import signal

import pytest

from ipc_bench.harness import signals
from ipc_bench.harness.recording import GcCounter


@pytest.fixture
def installed():
    old = signals.install()
    signals.unblock()
    try:
        yield
    finally:
        signals.restore(old)
        for s, h in old.items():  # restore() leaves them ignored after a signal
            signal.signal(s, h)


@signals.unraisable
def _signal_in_gc_callback(phase: str, info: dict) -> None:
    if phase == "start":
        signal.raise_signal(signal.SIGINT)  # handled before raise_signal returns


def test_a_signal_in_a_gc_callback_is_raised_at_the_next_deferred_block(installed, capsys):
    gc.callbacks.append(_signal_in_gc_callback)
    try:
        gc.collect()  # the handler ran inside the callback and raised nothing there
    finally:
        gc.callbacks.remove(_signal_in_gc_callback)
    assert capsys.readouterr().err == ""  # no "Exception ignored in ..."
    with pytest.raises(signals.Interrupted) as err:
        with signals.deferred():
            pass
    assert err.value.code == 130


def test_gc_counter_callback_is_marked_unraisable():
    assert GcCounter._on_gc.__code__ in signals._UNRAISABLE


def test_a_signal_in_a_del_is_not_dropped(installed, capsys):
    class Finalized:
        def __del__(self):
            signal.raise_signal(signal.SIGTERM)

    obj = Finalized()
    del obj
    assert capsys.readouterr().err == ""  # no "Exception ignored in ..."
    with pytest.raises(signals.Interrupted) as err:
        with signals.deferred():
            pass
    assert err.value.code == 143


def test_a_signal_while_blocked_acts_when_unblocked():
    old = signals.install()  # blocks them
    try:
        signal.raise_signal(signal.SIGHUP)  # pending
        with pytest.raises(signals.Interrupted) as err:
            signals.unblock()
        assert err.value.code == 129
    finally:
        signals.restore(old)
        for s, h in old.items():
            signal.signal(s, h)
