"""Pipeline stages started by hand (``--scenario pp --pp 2 --remote-runners``) whose
scheduler is ended (SIGTERM) during the stages' handshake, while they join its store:
each stage notices its control connection close and exits at once (5), in one line,
with none of c10d's C++ stacks. They used to wait for the store's connect (10 s, then
c10d's own retry: 18 to 20 s), print two C++ stacks each (5.8 KB) and blame the store
(``refusing the handshake: runner could not start: StageLinkError: stage 0: cannot join
the stages' store at tcp://...: The client socket has timed out ...``, exit 3).

"Another host" is emulated as in ``test_remote``: each stage runner is its own process
on 127.0.0.1. The moment is made certain: stage 0 says (on stdout) when it has joined
the store, and waits there for stage 1; stage 1 says when it is about to join and
waits for a file before it does. The test ends the scheduler while both wait, checks
stage 0's exit, then lets stage 1 go on to a store that is gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap
import time

from fault_helpers import free_base_port
from remote_launch import Launcher, read_line

PP = ["--scenario", "pp", "--pp", "2", "--transport", "tcp", "--num-running", "8",
      "--steps", "20", "--warmup-steps", "5", "--codecs", "msgpack", "--quiet",
      "--policies", "send", "--peer-timeout", "10", "--startup-timeout", "30"]
#: What stage 0 writes to stdout once its client of the scheduler's store is built.
JOINED = "stage 0 joined the store"
#: What stage 1 writes to stdout before it joins the store; it then waits for the file.
PAUSED = "stage 1 paused before the store"
#: Run in stage 0: says when its store client is built (then waits for stage 1 there).
_SAYS_JOINED = textwrap.dedent(f"""
    import sys
    import torch.distributed as dist
    _TCPStore = dist.TCPStore
    def TCPStore(*args, **kwargs):
        store = _TCPStore(*args, **kwargs)
        sys.stdout.write({JOINED + chr(10)!r}); sys.stdout.flush()
        return store
    dist.TCPStore = TCPStore
""")
#: Longest time from the scheduler's SIGTERM (stage 0), or from stage 1's release, to
#: the stage's exit (on the 2-core development machine: 0.5 to 0.7 s for stage 0, the
#: scheduler's own exit included, 0.05 s for stage 1; they took 18 to 21 s). Half the
#: 30 s start-up timeout a stage that missed the scheduler's end would wait out: stage
#: 0 notices when the scheduler's process has ended, and at a load of 16 to 19 that
#: process's interpreter shutdown alone took up to 8 s with a second such test beside it.
PROMPT_S = 15.0


def _pauses_until(go: str) -> str:
    """Run in stage 1: before it joins the store, say so and wait for the file ``go``."""
    return textwrap.dedent(f"""
        import os, sys, time
        import ipc_bench.wire.pp as pp
        _init = pp.StageLink.__init__
        def __init__(self, *args, **kwargs):
            sys.stdout.write({PAUSED + chr(10)!r}); sys.stdout.flush()
            deadline = time.monotonic() + 60
            while not os.path.exists({go!r}) and time.monotonic() < deadline:
                time.sleep(0.02)
            _init(self, *args, **kwargs)
        pp.StageLink.__init__ = __init__
    """)


def _stderr_lines(err: str) -> list[str]:
    return err.splitlines()


def test_stages_whose_scheduler_ends_during_their_handshake_exit_at_once_in_one_line(
        tmp_path):
    port = free_base_port(5)  # 2 control ports, the data ports, the stages' store
    store = f"tcp://127.0.0.1:{port + 4}"
    go = tmp_path / "go"
    with Launcher() as launch:
        sched = launch.scheduler(PP + ["--remote-runners", "--port", str(port)],
                                 tmp_path / "r", skip=("bench.py: warning:",))  # its cores
        stages = [launch.runner(port, python_code=_SAYS_JOINED),
                  launch.runner(port + 1, python_code=_pauses_until(str(go)))]
        # bounded: each stage gives up its join after the start-up timeout (the store's
        # join and the wait there for the other stages have --startup-timeout, 30 s, under
        # the 40 s each exit is waited for below), and exits
        assert read_line(stages[1], "stdout line of stage 1", stream="stdout") == \
            PAUSED + "\n"
        assert read_line(stages[0], "stdout line of stage 0", stream="stdout") == \
            JOINED + "\n"
        os.kill(sched.pid, signal.SIGTERM)
        ended = time.monotonic()
        sched.communicate(timeout=30)
        out0, err0 = stages[0].communicate(timeout=40)
        took0 = time.monotonic() - ended
        go.touch()
        released = time.monotonic()
        out1, err1 = stages[1].communicate(timeout=40)
        took1 = time.monotonic() - released
    assert sched.returncode == 128 + signal.SIGTERM
    gone = "bench.py runner: the scheduler at tcp://127.0.0.1:{} closed the connection"
    connected = ("bench.py runner: connected to tcp://127.0.0.1:{}; serving cases until "
                 "the scheduler's run ends")
    assert (stages[0].returncode, out0) == (5, ""), err0
    assert _stderr_lines(err0) == [
        connected.format(port),
        f"{gone.format(port)}, noticed while waiting for the other stages at the stages' "
        f"store {store}"], err0
    assert (stages[1].returncode, out1) == (5, ""), err1
    assert _stderr_lines(err1) == [
        connected.format(port + 1),
        f"{gone.format(port + 1)}, noticed while joining the stages' store at {store}"], err1
    for err in (err0, err1):
        assert "Exception raised from" not in err and "[c10d]" not in err
    assert took0 < PROMPT_S, took0
    assert took1 < PROMPT_S, took1


def test_a_stage_whose_scheduler_is_gone_before_its_store_join_is_one_line_at_once():
    """``StageLink`` itself: a control connection already closed ends the join before
    torch's import, naming what it was doing (``transport.PeerError``)."""
    import pytest

    from ipc_bench.wire.pp import StageLink
    from ipc_bench.wire.transport import PeerError

    port = free_base_port(1)
    started = time.monotonic()
    with pytest.raises(PeerError) as err:
        StageLink(f"tcp://127.0.0.1:{port}", 1, 2, 10.0,
                  peer_problem=lambda: "the scheduler at tcp://127.0.0.1:5601 closed the "
                                       "connection")
    assert str(err.value) == (f"the scheduler at tcp://127.0.0.1:5601 closed the connection, "
                              f"noticed while joining the stages' store at "
                              f"tcp://127.0.0.1:{port}")
    assert time.monotonic() - started < 1.0


def test_c10d_records_and_their_stacks_are_dropped_and_other_lines_kept():
    from ipc_bench.wire.pp import drop_c10d_records

    text = ("before\n"
            "[E1206 14:21:31.999602869 socket.cpp:1028] [c10d] The client socket has timed "
            "out after 10000ms while trying to connect to (127.0.0.1, 58900).\n"
            "[W1206 14:21:31.999893383 TCPStore.cpp:340] [c10d] TCP client failed to "
            "connect/validate to host 127.0.0.1:58900 - retrying (try=0, timeout=10000ms, "
            "delay=8573ms): The client socket has timed out\n"
            "Exception raised from throwTimeoutError at /__w/pytorch/pytorch/torch/csrc/"
            "distributed/c10d/socket.cpp:1030 (most recent call first):\n"
            "frame #0: c10::Error::Error(c10::SourceLocation) + 0x9d (0x7f7a in libc10.so)\n"
            "<omitting python frames>\n"
            "frame #33: __libc_start_main + 0x85 (0x7f7a49245305 in libc.so.6)\n"
            "\n"
            "a warning of python\n"
            "\n"
            "after\n")
    assert drop_c10d_records(text) == "before\na warning of python\n\nafter\n"


def test_a_failed_join_leaves_no_c10d_record_on_stderr(tmp_path):
    """A stage whose store never answers fails in one line on stderr, without c10d's
    records (the connect is a plain socket's: torch's client is built only once the
    store answers)."""
    import sys

    from fault_helpers import REPO

    port = free_base_port(1)
    code = textwrap.dedent(f"""
        from ipc_bench.wire.pp import StageLink, StageLinkError
        try:
            StageLink("tcp://127.0.0.1:{port}", 0, 2, 1.0)
        except StageLinkError as exc:
            print(exc)
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert done.stdout == (f"stage 0: cannot join the stages' store at "
                           f"tcp://127.0.0.1:{port} within 1 s: Connection refused\n")
    assert done.stderr == ""
