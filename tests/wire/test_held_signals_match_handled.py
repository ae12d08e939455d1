"""``wire.control._HELD_SIGNALS``, blocked while a control thread starts, is a spelt-out
copy of ``harness.signals.HANDLED`` (``wire`` sits below ``harness`` and cannot import
it): a signal added to one and not the other would raise inside ``threading``'s lock
handling, or be held for nothing."""

from __future__ import annotations

import signal

from ipc_bench.harness import signals
from ipc_bench.wire import control


def test_held_signals_are_the_handled_ones():
    assert control._HELD_SIGNALS == signals.HANDLED
    assert [signal.Signals(s).name for s in control._HELD_SIGNALS] == [
        "SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGVTALRM",
        "SIGPROF", "SIGXCPU"]
