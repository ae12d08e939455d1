"""``bench.py microbench`` SIGKILLed at any moment leaves no process behind: its arm
processes are started SIGKILLed should it die (``microbench.killed_with_parent``, set
between fork and exec), and so are their pyperf workers. An arm set that only once its
own start was done, so a coordinator killed during that start (about the first second)
left it timing on alone, starting pyperf workers and writing ``send.json.new`` after
its coordinator was gone; a worker killed likewise during its start timed on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from microbench_runs import FRAME_RUN, REPO, copy_run, finished_run

#: pyperf options under which a benchmark, and a worker, take over a minute: a process
#: left behind is still there when looked for (20 workers, each timing one value of
#: twenty million loops over the captured messages: about 70 s on 2 idle cores, longer
#: on a loaded machine).
SLOW = ["-p", "20", "-n", "1", "-w", "0", "-l", "20000000"]
#: Seconds from seeing a process start to killing the microbench: its starter has
#: gone on (the coordinator has let the arm run its first benchmark), the process is
#: still starting (Python's and the harness's imports take longer).
STARTING_S = 0.05
#: How long the processes of a killed microbench may take to go, in seconds: each dies
#: of its parent's death in turn, and a loaded machine can take seconds to run each
#: one's exit, or to scan /proc; well under a worker's time under ``SLOW``.
GONE_WITHIN_S = 30.0


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory, "killed-children", FRAME_RUN)


def _mentioning(text: str) -> dict[int, str]:
    """The live processes whose command line holds ``text``: pid -> command line (a
    zombie's is empty, so it is not one)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found[int(entry)] = cmdline
    return found


@pytest.mark.parametrize("moment", ["--arm-json", "--worker"])
def test_no_process_outlives_a_killed_microbench(finished, tmp_path, moment):
    """SIGKILL just after an arm process (``--arm-json``), or a pyperf worker
    (``--worker``), has started (``STARTING_S``): within a few seconds no process of the
    run is left."""
    run = copy_run(finished, tmp_path)
    mark = str(run)  # every process of this microbench names its run folder
    proc = subprocess.Popen([sys.executable, "bench.py", "microbench", mark, "--output",
                             str(tmp_path / "mb"), "--codecs", "msgpack", *SLOW], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not any(moment in c for p, c in _mentioning(mark).items() if p != proc.pid):
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, f"no {moment} process within 60 s"
            time.sleep(0.002)
        time.sleep(STARTING_S)
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + GONE_WITHIN_S
        while (left := _mentioning(mark)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert left == {}
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for _ in range(3):  # an arm left behind may start a worker meanwhile
            for pid in _mentioning(mark):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
        proc.stderr.close()
