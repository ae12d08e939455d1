"""The wait for a runner started by hand is said on the lines that count it.

With ``--remote-runners`` the scheduler waits for a runner started by hand in the first
case that needs it; that wait is part of the case's "for the whole case" and of the
run's "N cases run in" figures, so both lines say how much of them it was: the first
case's ``(X s for the whole case, Y s of it waiting for runners started by hand)``, the
run's ``ipc-bench: 2 cases run in X s, Y s of it waiting for runners started by hand``;
the second case, whose runner was already connected, prints as a spawned runner's.
"""

from __future__ import annotations

import json
import re
import time

from fault_helpers import free_base_port
from remote_launch import START_S, Launcher

CASE = ["--scenario", "decode-steady", "--transport", "tcp", "--num-running", "4",
        "--steps", "40", "--policies", "send,cached", "--codecs", "msgpack",
        "--no-single-process"]
FIRST, SECOND = "num_running=4/send/msgpack#0", "num_running=4/cached/msgpack#0"
#: The least wait the lines must show: the test holds the runner back longer (below).
DELAY_S = 2.0
#: What the test sleeps on top of ``DELAY_S`` once the first case is running: the
#: case's own set-up before its wait begins (milliseconds) and the lines' rounding to
#: 0.1 s cannot bring a wait that long under ``DELAY_S``.
MARGIN_S = 0.5
WAITED = "of it waiting for runners started by hand"


def _wait_for_running_case(summary_path, sched, case_id: str) -> None:
    """Return once ``summary.json`` names ``case_id`` as the running case (written as
    the case begins, before it waits for its runner)."""
    deadline = time.monotonic() + START_S
    while True:
        try:
            if json.loads(summary_path.read_text()).get("running_case") == case_id:
                return
        except (OSError, ValueError):  # not written yet
            pass
        assert sched.poll() is None, sched.communicate(timeout=30)[1]
        assert time.monotonic() < deadline, f"{case_id} did not begin within {START_S:g} s"
        time.sleep(0.05)


def test_the_wait_for_a_runner_started_by_hand_is_said_on_the_case_and_run_lines(tmp_path):
    port = free_base_port(3)
    run = tmp_path / "run"
    with Launcher() as launch:
        sched = launch.scheduler([*CASE, "--remote-runners", "--port", str(port)], run)
        assert sched.first_line.startswith("bench.py: waiting up to "), sched.first_line
        runner = launch.runner(port, held=True)  # imported, held before it connects
        _wait_for_running_case(run / "summary.json", sched, FIRST)
        time.sleep(DELAY_S + MARGIN_S)  # the person starting it
        launch.release(runner)
        (rc, _, runner_err), (sched_rc, _, err) = launch.finish(runner, sched)
    assert (sched_rc, rc) == (0, 0), (err, runner_err)
    lines = [line for line in err.splitlines()
             if line.startswith(("[", "ipc-bench: 2 cases run in "))]
    assert len(lines) == 3, err
    first = re.fullmatch(
        rf"\[1/2\] {re.escape(FIRST)}: 40 steps, [\d,]+ tok/s "
        rf"\((\d+\.\d) s for the whole case, (\d+\.\d) s {WAITED}\)", lines[0])
    assert first, lines
    whole, waited = (float(g) for g in first.groups())
    assert DELAY_S <= waited <= whole, lines[0]
    # the runner was connected when the second case began: its line is a spawned one's
    assert re.fullmatch(rf"\[2/2\] {re.escape(SECOND)}: 40 steps, [\d,]+ tok/s "
                        r"\(\d+\.\d s for the whole case\)", lines[1]), lines
    total = re.fullmatch(rf"ipc-bench: 2 cases run in (\d+\.\d) s, (\d+\.\d) s {WAITED}",
                         lines[2])
    assert total, lines
    run_s, run_waited = (float(g) for g in total.groups())
    assert waited <= run_waited <= run_s, lines
