"""``remote_launch.Launcher``'s end reaps every process it started, whatever happens.

It signalled each process alone, so what one had spawned (a scheduler's runners) was
left running, holding its pipes; and a process that could not be reaped ended the
reaping loop, leaving the later ones running and replacing the test's own error with
``TimeoutExpired``. Now each process is started in a process group of its own, which
is signalled; every process is reaped; one that cannot be is named after the others,
in an ``AssertionError`` of its own or, where the block raised, in a note on its
exception, which goes on.

- A process's child, which ignores SIGTERM, is gone (or a zombie) once the block ends.
- The first process's reap failing: the second is still reaped, and the block's own
  exception is the one raised, with the note naming the first.
- A block that raised nothing: the same failure is an ``AssertionError`` naming it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import remote_launch
from fault_helpers import wait_for
from remote_launch import Launcher

# Python that starts a child ignoring SIGTERM, writes the child's pid to FILE, and sleeps.
_PARENT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
open(sys.argv[1] + ".tmp", "w").write(str(child.pid))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(600)
"""


def _gone(pid: int) -> bool:
    """``pid`` has ended: no such process, or a zombie awaiting its reaper."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def test_a_process_s_children_go_with_it(tmp_path):
    pid_file = tmp_path / "child.pid"
    with Launcher() as launch:
        parent = launch.start(["-c", _PARENT, str(pid_file)], stdin=subprocess.DEVNULL)
        child = int(wait_for(lambda: pid_file.exists() and pid_file.read_text(),
                             what="the child's pid", proc=parent))
    assert parent.returncode == -15  # SIGTERM
    # the group's SIGTERM reached the child too; it ends on its own time (a CI run at a
    # load of 4 found it still running as the block ended): bounded, not a sleep
    wait_for(lambda: _gone(child), 30.0, "the child's end after its group's SIGTERM")


def _failing_first_reap(monkeypatch):
    real, reaped = remote_launch._reap, []

    def reap(proc, timeout_s):
        if not reaped:
            reaped.append(proc)
            real(proc, timeout_s)  # reaped all the same, so that the test leaves nothing
            raise subprocess.TimeoutExpired(proc.args, 30.0)
        reaped.append(proc)
        real(proc, timeout_s)

    monkeypatch.setattr(remote_launch, "_reap", reap)
    return reaped


def _sleeper(launch: Launcher) -> subprocess.Popen:
    return launch.start(["-c", "import time; time.sleep(600)"], stdin=subprocess.DEVNULL)


def test_one_reap_failing_leaves_the_others_reaped_and_the_test_s_error_raised(monkeypatch):
    reaped = _failing_first_reap(monkeypatch)
    with pytest.raises(ValueError, match="the test's own failure") as err:
        with Launcher() as launch:
            first, second = _sleeper(launch), _sleeper(launch)
            raise ValueError("the test's own failure")
    assert reaped == [first, second]
    assert second.returncode == -15
    assert err.value.__notes__ == [
        f"processes not reaped: {first.args[:4]} (pid {first.pid}): "
        f"TimeoutExpired({first.args!r}, 30.0)"]


def test_a_reap_failing_after_a_passing_block_is_an_assertion_error(monkeypatch):
    _failing_first_reap(monkeypatch)
    with pytest.raises(AssertionError) as err:
        with Launcher() as launch:
            first = _sleeper(launch)
    assert str(err.value) == (f"processes not reaped: {first.args[:4]} (pid {first.pid}): "
                              f"TimeoutExpired({first.args!r}, 30.0)")
    assert sys.executable in first.args
