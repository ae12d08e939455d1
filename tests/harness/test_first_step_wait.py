"""The first step is held to the start-up timeout on every side that waits for it.

docs/faults.md: "The handshake and the first step get ``--startup-timeout``". The scheduler
admits, schedules and encodes the first batch while its runner (each ``--tp`` rank,
each ``--pp`` stage) and its frontend wait for it; with a large batch that takes longer
than the peer timeout. Here the scheduler's first ``schedule`` call is made 6 s slow
against a 3 s peer timeout (0.5 s was outrun by a step's wait on a loaded 2-core
machine, and 1 s by two --pp stages' collections at the end of warm-up on a throttled
one): the case must complete, whatever reads the broadcast.
"""

from __future__ import annotations

import pytest

from fault_helpers import slow_schedule, steady_case
from ipc_bench.harness.spec import CaseError, CaseResult
from ipc_bench.harness.supervisor import run_case

STEPS = 12
PEER_TIMEOUT_S = 3.0
FIRST_DELAY_S = 6.0


def _slow_first_schedule(monkeypatch, delay_s: float = FIRST_DELAY_S) -> None:
    """Make the scheduler's first ``schedule`` call (step 0's) take ``delay_s`` longer."""
    slow_schedule(monkeypatch, 0, delay_s)


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
    # 8 s: the runner's start-up (its imports, the handshake) has the same allowance,
    # and took over 1 s on a loaded 2-core machine (an interpreter's start alone up to
    # 2.5 s under nice 10); the first step 12 s late, 4 s past the runner's wait
    _slow_first_schedule(monkeypatch, delay_s=12.0)
    spec = steady_case(8, max_steps=STEPS, peer_timeout_s=PEER_TIMEOUT_S,
                       startup_timeout_s=8.0)
    with pytest.raises(CaseError) as err:
        run_case(spec)
    message = str(err.value)
    prefix, _, pid_and_rest = message.partition("runner process ")
    pid, _, rest = pid_and_rest.partition(" ")
    assert (prefix, pid.isdigit(), rest) == ("", True, (
        "exited with code 5 (runner: no SchedulerOutput for step 0 within 8 s (raise "
        "--startup-timeout)), noticed while sending SchedulerOutput for step 0"))


def test_a_runner_that_gave_up_on_a_late_step_is_named_with_when_that_was_noticed(
        monkeypatch):
    """The scheduler 1 s late with step 1 under a 0.1 s peer timeout: the runner gives
    up waiting for step 1 (exit 5, naming the option to raise) long before the scheduler
    sends it, and the line says the scheduler only noticed then (it used to read
    "... (runner: no SchedulerOutput for step 1 ...) while sending SchedulerOutput for
    step 1"). The scheduler notices on the send when ZeroMQ has seen the runner's
    socket go, else while waiting for the reply."""
    slow_schedule(monkeypatch, 1, 1.0)
    result = CaseResult(spec=steady_case(8, max_steps=STEPS, peer_timeout_s=0.1,
                                         startup_timeout_s=60.0))
    with pytest.raises(CaseError) as err:
        run_case(result.spec, result=result)
    gave_up = (f"runner process {result.runner_pid} exited with code 5 (runner: no "
               "SchedulerOutput for step 1 within 0.1 s (raise --peer-timeout)), noticed while ")
    assert str(err.value) in (gave_up + "sending SchedulerOutput for step 1",
                              gave_up + "waiting for ModelRunnerOutput for step 1")
    assert err.value.step == 1
