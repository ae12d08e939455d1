"""A scheduler interrupted between a marker (the empty frame that sends its runner to
the control socket) and the control message it announces says ``Goodbye`` there
instead: a runner started by hand leaves as when its scheduler goes away mid-case
(exit 5, one line), not as a failed step (exit 4).

The interrupt is placed there deterministically: the scheduler's process sends itself
SIGINT right after its first marker (Python runs the handler before the next
bytecode, so before the control message)."""

from __future__ import annotations

from fault_helpers import free_base_port
from remote_launch import Launcher, read_line

RUN = ["--scenario", "decode-steady", "--transport", "tcp", "--num-running", "4",
       "--steps", "2000", "--policies", "send", "--codecs", "msgpack", "--no-single-process",
       "--quiet", "--no-floor", "--remote-runners"]

INTERRUPT_AFTER_FIRST_MARKER = """
import os, signal, sys
from ipc_bench.wire import channel
send_marker = channel.SchedulerChannel.send_marker
def interrupted_after(self, *args, **kwargs):
    send_marker(self, *args, **kwargs)
    channel.SchedulerChannel.send_marker = send_marker
    os.kill(os.getpid(), signal.SIGINT)
channel.SchedulerChannel.send_marker = interrupted_after
from ipc_bench.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_goodbye_where_a_control_message_was_due_is_the_scheduler_going_away(tmp_path):
    port = free_base_port(3)
    with Launcher() as launch:
        sched = launch.start(["-c", INTERRUPT_AFTER_FIRST_MARKER, *RUN, "--port", str(port),
                              "--output", str(tmp_path / "r")])
        first_line = read_line(sched, "first stderr line of the scheduler")
        assert first_line.startswith("bench.py: waiting up to "), first_line
        runner = launch.runner(port)
        (sched_code, _, sched_err), (runner_code, _, runner_err) = launch.finish(sched, runner)
    assert sched_code == 130, sched_err
    assert "interrupted by SIGINT at step " in sched_err
    step = sched_err.split("interrupted by SIGINT at step ")[1].split(" ")[0]
    assert (runner_code, runner_err.splitlines()[1:]) == (5, [
        f"bench.py runner: the scheduler ended the run (the scheduler's run was "
        f"interrupted), noticed while waiting for a control message before step {step}"]), (
        sched_err, runner_err)
