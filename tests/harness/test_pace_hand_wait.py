"""The run's time left (``RunPace``) leaves out the wait for runners started by hand.

With ``--remote-runners`` the first case that needs a runner waits for a person to
start it (``CaseResult.runner_wait_s``, which the heartbeat reads through its
``waited``). That wait is no part of what each case costs: the pace the cases after it
are timed by (the time a case spent outside its steps) is learnt without it, from the
finished case and, before any case finished, from the current case's start-up.
The clock is the test's (``progress.time.monotonic`` replaced), moved by hand.
"""

from __future__ import annotations

import io
import types

import pytest

from ipc_bench.harness import progress
from ipc_bench.harness.progress import case_progress

#: The person starting the runner, in the first case: seconds.
WAIT_S = 30.0


class _Clock:
    """``time.monotonic`` for the progress module, moved by hand."""

    def __init__(self, monkeypatch):
        self.now = 1000.0
        monkeypatch.setattr(progress.time, "monotonic", lambda: self.now)


def _steps(beat, clock, first, last, per_s):
    """Steps ``first`` to ``last`` through ``beat``, ``per_s`` a second of the clock."""
    t0 = clock.now
    for seq in range(first, last + 1):
        clock.now = t0 + (seq - first + 1) / per_s
        beat(seq, 4 * seq, 0)


def _specs():
    """Three cases of one workload and transport, 100 steps each, no floor."""
    return [types.SimpleNamespace(case_id=case_id, warmup_steps=0, counted_steps=100,
                                  floor=False, transport="tcp", max_steps=None)
            for case_id in ("n=4/send/msgpack#0", "n=4/cached/msgpack#0",
                            "n=4/send/msgpack#1")]


def _beat(spec, pace, index, waited):
    beat = case_progress(spec, f"[{index + 1}/3] {spec.case_id}", stream=io.StringIO(),
                         bar=False, run=pace, index=index, waited=waited)
    beat.interval_s = 0.0  # a look at every step
    return beat


def test_the_run_left_leaves_out_the_wait_for_runners_started_by_hand(monkeypatch):
    clock = _Clock(monkeypatch)
    specs = _specs()
    pace = progress.RunPace(specs)
    waited = [0.0]  # CaseResult.runner_wait_s, as the case's lifecycle adds to it
    beat = _beat(specs[0], pace, 0, lambda: waited[0])
    clock.now += WAIT_S  # the person starting the runner
    waited[0] = WAIT_S
    clock.now += 2  # the case's own start-up: the handshake
    _steps(beat, clock, 1, 50, per_s=10)  # 0.1 s a step
    # Left: 50 steps of this case (5 s), then two cases each at its start-up (2.1 s to
    # its first step, the wait left out) and 100 steps (10 s): 5 + 2 x 12.1 = 29.2 s,
    # where counting the wait as start-up gave 5 + 2 x 42.1 = 89.2 s.
    left = pace.left_s(beat)
    assert (left.seconds, left.untimed, left.unpriced) == (pytest.approx(29.2), 0, False)
    _steps(beat, clock, 51, 100, per_s=10)
    clock.now += 1  # teardown
    beat.close()
    # 30 s waited + 2 s start-up + 10 s of steps + 1 s teardown: 3 s its own, not 33 s
    assert pace.other_s == [pytest.approx(3.0)]
    assert pace.paces["n=4/send/msgpack"].other_s == pytest.approx(3.0)
    beat = _beat(specs[1], pace, 1, lambda: 0.0)  # the runner is connected: no wait
    clock.now += 2
    _steps(beat, clock, 1, 50, per_s=10)
    # Left: 50 steps (5 s), then the last case at the first's pace: 3 s + 10 s.
    assert pace.left_s(beat).seconds == pytest.approx(18.0)


def test_a_case_without_a_wait_is_timed_as_before(monkeypatch):
    clock = _Clock(monkeypatch)
    specs = _specs()
    pace = progress.RunPace(specs)
    beat = _beat(specs[0], pace, 0, None)  # a spawned runner's case: no ``waited``
    clock.now += 2
    _steps(beat, clock, 1, 100, per_s=10)
    clock.now += 1
    beat.close()
    assert pace.other_s == [pytest.approx(3.0)]
