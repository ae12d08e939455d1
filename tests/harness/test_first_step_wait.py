"""The first step is held to the start-up timeout on every side that waits for it.

README: "The handshake and the first step get ``--startup-timeout``". The scheduler
admits, schedules and encodes the first batch while its runner (each ``--tp`` rank,
each ``--pp`` stage) and its frontend wait for it; with a large batch that takes longer
than the peer timeout. Here the scheduler's first ``schedule`` call is made 1.5 s slow
against a 0.5 s peer timeout: the case must complete, whatever reads the broadcast.
"""

from __future__ import annotations

import time

import pytest

from fault_helpers import steady_case
from ipc_bench.engine.scheduler import Scheduler
from ipc_bench.harness.spec import CaseError
from ipc_bench.harness.supervisor import run_case

STEPS = 12
PEER_TIMEOUT_S = 0.5
FIRST_DELAY_S = 1.5


def _slow_first_schedule(monkeypatch, delay_s: float = FIRST_DELAY_S) -> None:
    """Make the scheduler's first ``schedule`` call (step 0's) take ``delay_s`` longer."""
    schedule = Scheduler.schedule
    calls = []

    def slow(self, *args, **kw):
        if not calls:
            time.sleep(delay_s)
        calls.append(1)
        return schedule(self, *args, **kw)

    monkeypatch.setattr(Scheduler, "schedule", slow)


@pytest.mark.parametrize("case", [{}, {"transport": "shm"}, {"transport": "shm-block"},
                                  {"tp": 2}, {"tp": 2, "transport": "shm"}, {"pp": 2},
                                  {"frontend": True}],
                         ids=["ipc", "shm", "shm-block", "tp2", "tp2-shm", "pp2", "frontend"])
def test_a_slow_first_step_waits_for_the_startup_timeout_not_the_peer_timeout(
        monkeypatch, case):
    _slow_first_schedule(monkeypatch)
    spec = steady_case(8, max_steps=STEPS, peer_timeout_s=PEER_TIMEOUT_S,
                       startup_timeout_s=60.0, **case)
    result = run_case(spec)
    assert len(result.sched_rows) == STEPS


def test_a_first_step_past_the_startup_timeout_names_the_option_to_raise(monkeypatch):
    _slow_first_schedule(monkeypatch, delay_s=3.0)
    spec = steady_case(8, max_steps=STEPS, peer_timeout_s=PEER_TIMEOUT_S,
                       startup_timeout_s=1.0)
    with pytest.raises(CaseError) as err:
        run_case(spec)
    message = str(err.value)
    prefix, _, pid_and_rest = message.partition("runner process ")
    pid, _, rest = pid_and_rest.partition(" ")
    assert (prefix, pid.isdigit(), rest) == ("", True, (
        "exited with code 5 (runner: no SchedulerOutput for step 0 within 1 s (raise "
        "--startup-timeout)) while sending SchedulerOutput for step 0"))
