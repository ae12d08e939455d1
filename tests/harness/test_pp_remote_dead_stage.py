"""A pipeline stage started by hand (``--scenario pp --pp 2 --remote-runners``) that is
killed while the case runs: the case fails at once, in one line that names the dead
stage first, as a killed spawned stage is named (``tests/harness/test_pp.py``), whichever
true report reaches the scheduler first: its own notice of the stage's closed control
connection, or the other stage's report that its link to the dead one broke.

"Another host" is emulated as in ``test_remote``: each stage runner is its own process
on 127.0.0.1. The stage to kill stops in its step 8 and says so on stderr; the test
then kills it with SIGKILL, as a person or the OOM killer would.
"""

from __future__ import annotations

import os
import re
import signal
import textwrap
import time

from fault_helpers import free_base_port
from remote_launch import Launcher, read_line

from ipc_bench.errors import STEP_NUMBERING

PP = ["--scenario", "pp", "--pp", "2", "--transport", "tcp", "--num-running", "8",
      "--steps", "20", "--warmup-steps", "5", "--codecs", "msgpack", "--quiet",
      "--policies", "send", "--peer-timeout", "30"]
#: What the stage to kill writes to stderr once it has stopped in step 8.
STOPPED = "stage stopped at step 8"
#: Run in the stage to kill: at step 8 it says so and waits to be killed (stage 0 before
#: it sends that step's hidden states, once stage 1 has received every earlier step's;
#: stage 1 before it receives them).
_STOPS_AT_STEP_8 = textwrap.dedent(f"""
    import sys, time
    import ipc_bench.wire.pp as pp
    def _stop(seq):
        if seq == 8:
            sys.stderr.write({STOPPED + chr(10)!r}); sys.stderr.flush()
            time.sleep(60)
    _send, _recv = pp.StageLink.send_hidden, pp.StageLink.recv_hidden
    def send_hidden(self, hidden, seq, *args, **kwargs):
        if seq == 8:
            self.finish()
        _stop(seq)
        return _send(self, hidden, seq, *args, **kwargs)
    def recv_hidden(self, shape, dtype, seq, *args, **kwargs):
        _stop(seq)
        return _recv(self, shape, dtype, seq, *args, **kwargs)
    pp.StageLink.send_hidden, pp.StageLink.recv_hidden = send_hidden, recv_hidden
""")
#: Longest time from the kill to the scheduler's exit (the line, the results written,
#: the other stage told: about 1 s on the 2-core development machine; 10.1 s once at a
#: load of 15 beside three other tests). Half the 30 s peer timeout a scheduler that
#: missed the disconnection would wait out.
PROMPT_S = 15.0


def _kill_stage(tmp_path, dead: int):
    """Run the case with stage ``dead`` stopped at step 8 and killed there; returns the
    scheduler's error lines, the base port, the stages and the seconds from the kill
    to the scheduler's exit."""
    port = free_base_port(5)
    with Launcher() as launch:
        sched = launch.scheduler(PP + ["--remote-runners", "--port", str(port)],
                                 tmp_path / "r", skip=("bench.py: warning:",))  # its cores
        stages = [launch.runner(port + r, python_code=_STOPS_AT_STEP_8 if r == dead else None)
                  for r in range(2)]
        lines = []
        while lines[-1:] != [STOPPED + "\n"]:  # bounded: the stage's own peer timeout ends it
            line = read_line(stages[dead], "stderr line of the stage to kill")
            if not line:
                break
            lines.append(line)
        assert lines[-1:] == [STOPPED + "\n"], lines
        os.kill(stages[dead].pid, signal.SIGKILL)
        killed = time.monotonic()
        _, err = sched.communicate(timeout=30)
        took = time.monotonic() - killed
        for s in stages:
            s.communicate(timeout=30)
    assert sched.returncode == 1, err
    assert stages[dead].returncode == -signal.SIGKILL
    return [ln for ln in err.splitlines() if ln.startswith("bench.py: error:")], port, \
        stages, took


def _expected(tmp_path, port: int, dead: int, waited: str, step: str, lost: str
              ) -> tuple[str, str]:
    """The two true lines for stage ``dead`` killed in step 8 (regular expressions):
    the scheduler's own notice of its connection, while it waited for the reply of
    step ``waited``, and the other stage's report that its link to it broke in step
    ``step`` (``lost``: what it says of the link, gloo's words after it) led by the
    dead stage."""
    case = re.escape("bench.py: error: num_running=8,pp=2/send/msgpack#0: ")
    gone = re.escape(f"stage {dead}: remote runner {dead} (control port "
                     f"tcp://127.0.0.1:{port + dead}) disconnected (its process ended or "
                     f"its host closed the connection)")
    partial = re.escape(f"; partial results: {tmp_path / 'r'}")
    other = 1 - dead
    noticed = (rf"{case}{gone}, noticed while waiting for ModelRunnerOutput for step "
               rf"{waited} from stage 1{partial}")
    led = (rf"{case}{gone}; stage {other} then lost its link: runner failed at step {step} "
           rf"{re.escape(f'({STEP_NUMBERING}): stage {other}: ')}{lost}: [^;]+{partial}")
    return noticed, led


def test_a_killed_remote_first_stage_is_named_before_the_stage_that_lost_its_link(tmp_path):
    """Stage 0 killed in step 8: stage 1's wait for its hidden states breaks at once and
    it reports so, mostly before the scheduler sees stage 0's connection close; the
    line names stage 0 first (was stage 1's report alone: "runner failed at step 8
    (...): stage 1: hidden states of step 8 from stage 0: Read error ...: Connection
    reset by peer")."""
    errors, port, stages, took = _kill_stage(tmp_path, 0)
    assert len(errors) == 1, errors
    # the scheduler may still wait for step 7's reply, which stage 1 had yet to send
    noticed, led = _expected(tmp_path, port, 0, "[78]", "8",
                             "hidden states of step 8 from stage 0")
    assert re.fullmatch(led, errors[0]) or re.fullmatch(noticed, errors[0]), errors
    assert "GLHF" not in errors[0] and "This is typically" not in errors[0], errors
    assert took < PROMPT_S, took


def test_a_killed_remote_last_stage_is_named_first(tmp_path):
    """Stage 1 killed in step 8, before it receives that step's hidden states: the
    scheduler sees its connection close while it waits for the step's reply, or stage
    0's send to it fails first; either way the line names stage 1 first."""
    errors, port, stages, took = _kill_stage(tmp_path, 1)
    assert len(errors) == 1, errors
    # stage 1 replied to step 7 before it stopped, but the scheduler may see the
    # connection close before it has read that reply; stage 0 may have posted step 9's
    # hidden states (the window is 2) before its send failed
    noticed, led = _expected(tmp_path, port, 1, "[78]", "([89])",
                             r"hidden states of step \1 to stage 1")
    assert re.fullmatch(led, errors[0]) or re.fullmatch(noticed, errors[0]), errors
    assert took < PROMPT_S, took
