"""A scheduler interrupted between a marker (the empty frame that sends its runner to
the control socket) and the control message it announces says ``Goodbye`` there
instead: a runner started by hand leaves as when its scheduler goes away mid-case
(exit 5, one line), not as a failed step (exit 4), in the steps and in the floor.

The interrupt is placed there deterministically: the scheduler's process sends itself
SIGINT right after a marker (Python runs the handler before the next bytecode, so
before the control message)."""

from __future__ import annotations

import pytest

from fault_helpers import free_base_port
from remote_launch import Launcher, read_line

RUN = ["--scenario", "decode-steady", "--transport", "tcp", "--num-running", "4",
       "--policies", "send", "--codecs", "msgpack", "--no-single-process", "--quiet",
       "--remote-runners"]

#: The scheduler's code: SIGINT to itself right after its first marker (``steps``) or
#: its first marker after ``BeginFloor`` (``floor``: the floor in chunks of 16 steps,
#: a marker and ``KeepAlive`` between two chunks).
INTERRUPT_AFTER_A_MARKER = """
import os, signal, sys
from ipc_bench.harness import floor
from ipc_bench.wire import channel
from ipc_bench.wire.control import BeginFloor
floor.FLOOR_CHUNK_STEPS = 16
armed = [sys.argv.pop(1) == "steps"]
send_marker = channel.SchedulerChannel.send_marker
send_control = channel.SchedulerChannel.send_control
def marked(self, *args, **kwargs):
    send_marker(self, *args, **kwargs)
    if armed[0]:
        channel.SchedulerChannel.send_marker = send_marker
        os.kill(os.getpid(), signal.SIGINT)
def controlled(self, msg, *args, **kwargs):
    send_control(self, msg, *args, **kwargs)
    armed[0] = armed[0] or isinstance(msg, BeginFloor)
channel.SchedulerChannel.send_marker = marked
channel.SchedulerChannel.send_control = controlled
from ipc_bench.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("where, extra, waiting_for", [
    ("steps", ["--steps", "2000", "--no-floor"], "control message before step {step}"),
    ("floor", ["--steps", "400"], "KeepAlive before floor frame 16"),
], ids=["steps", "floor"])
def test_a_goodbye_where_a_control_message_was_due_is_the_scheduler_going_away(
        tmp_path, where, extra, waiting_for):
    port = free_base_port(3)
    with Launcher() as launch:
        sched = launch.start(["-c", INTERRUPT_AFTER_A_MARKER, where, *RUN, *extra,
                              "--port", str(port), "--output", str(tmp_path / "r")])
        first_line = read_line(sched, "first stderr line of the scheduler")
        assert first_line.startswith("bench.py: waiting up to "), first_line
        runner = launch.runner(port)
        (sched_code, _, sched_err), (runner_code, _, runner_err) = launch.finish(sched, runner)
    assert sched_code == 130, sched_err
    step = sched_err.split("interrupted by SIGINT ")[1].split("at step ")[-1].split(" ")[0]
    assert (runner_code, runner_err.splitlines()[1:]) == (5, [
        f"bench.py runner: the scheduler ended the run (the scheduler's run was "
        f"interrupted), noticed while waiting for {waiting_for.format(step=step)}"]), (
        sched_err, runner_err)
