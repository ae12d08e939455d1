"""Pipeline stages started by hand (``--scenario pp --pp N --remote-runners``).

As in ``test_remote``, "another host" is emulated: each stage runner is started by the
test as its own process on 127.0.0.1 and reaches the scheduler only through the address
and port it is given. The stages' gloo group meets through the scheduler's TCPStore
(``wire.pp.StoreServer``); the checks here read the listening sockets with ``ss``.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from fault_helpers import REPO, free_base_port
from remote_launch import Launcher

from ipc_bench.errors import STEP_NUMBERING
from ipc_bench.wire.pp import (StageLink, StageLinkError, StoreServer, gloo_interface,
                               local_address_towards)
from ipc_bench.wire.transport import EndpointError

PP = ["--scenario", "pp", "--pp", "2", "--transport", "tcp", "--num-running", "8",
      "--steps", "20", "--warmup-steps", "5", "--codecs", "msgpack", "--quiet"]

#: The scheduler's warning that the case's processes outnumber the machine's cores
#: (``--pp 2 on 2 core(s): ...``), printed before its 'waiting ... for N runner(s)' line.
WARNING = ("bench.py: warning:",)

needs_ss = pytest.mark.skipif(shutil.which("ss") is None, reason="no `ss` (iproute2)")


def listening(port: int = 0, pids: tuple[int, ...] = ()) -> list[str]:
    """``ADDR:PORT`` of every TCP listener on ``port`` or of the processes ``pids``."""
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True,
                         check=True).stdout
    found = []
    for line in out.splitlines():
        local = line.split()[3]
        if (port and local.rsplit(":", 1)[1] == str(port)) or \
                any(f"pid={pid}," in line for pid in pids):
            found.append(local)
    return found


@needs_ss
def test_the_store_listens_on_the_given_address_only_and_frees_its_port():
    port = free_base_port(1)
    server = StoreServer("127.0.0.1", port, 5.0)
    try:
        assert listening(port) == [f"127.0.0.1:{port}"]  # not *:PORT, as a plain TCPStore
    finally:
        server.close()
    assert listening(port) == []
    StoreServer("127.0.0.1", port, 5.0).close()  # the next case binds it again


def test_a_taken_store_port_is_one_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(EndpointError) as err:
            StoreServer("127.0.0.1", port, 5.0)
    assert str(err.value) == (f"cannot bind tcp://127.0.0.1:{port} (the pipeline stages' "
                              f"store): Address already in use")


def test_gloo_is_bound_to_the_interface_of_the_address_towards_the_scheduler():
    assert local_address_towards("127.0.0.1") == "127.0.0.1"
    assert gloo_interface("127.0.0.1") == "lo"
    inet6 = Path("/proc/net/if_inet6")
    if inet6.exists() and "0" * 31 + "1" in inet6.read_text():  # ::1 is configured
        assert gloo_interface("::1") == "lo"
    with pytest.raises(StageLinkError) as err:
        gloo_interface("192.0.2.77")  # TEST-NET-1: held by no interface here
    assert str(err.value) == ("no network interface holds 192.0.2.77, this stage's address "
                              "towards the scheduler: gloo cannot be bound to it")


def test_a_stage_whose_store_does_not_answer_fails_in_one_line():
    port = free_base_port(1)
    with pytest.raises(StageLinkError) as err:
        StageLink(f"tcp://127.0.0.1:{port}", 0, 2, 1.0)
    line = str(err.value)
    assert line.startswith(f"stage 0: cannot join the stages' store at tcp://127.0.0.1:{port} "
                           f"within 1 s: "), line
    assert "\n" not in line


_STAGE = textwrap.dedent("""
    import sys, numpy as np
    from ipc_bench.wire.pp import StageLink
    rank = int(sys.argv[2])
    link = StageLink(sys.argv[1], rank, 2, 20.0)
    print("joined", flush=True)
    sys.stdin.readline()
    if rank == 0:
        link.send_hidden(np.arange(6, dtype=np.int16).reshape(2, 3), 0)
        link.finish()
    else:
        print(link.recv_hidden((2, 3), np.int16, 0).tolist(), flush=True)
    link.close()
""")


@needs_ss
def test_two_stages_meet_through_the_store_and_gloo_listens_on_their_address_only():
    port = free_base_port(1)
    server = StoreServer("127.0.0.1", port, 20.0)
    stages = [subprocess.Popen([sys.executable, "-c", _STAGE, server.endpoint, str(r)],
                               cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True) for r in range(2)]
    try:
        assert [s.stdout.readline() for s in stages] == ["joined\n", "joined\n"]
        gloo = listening(pids=tuple(s.pid for s in stages))
        assert len(gloo) == 2 and all(a.startswith("127.0.0.1:") for a in gloo), gloo
        for s in stages:
            s.stdin.write("go\n")
            s.stdin.flush()
        outs = [s.communicate(timeout=60) for s in stages]
    finally:
        for s in stages:
            if s.poll() is None:
                s.kill()
                s.communicate()
        server.close()
    assert [s.returncode for s in stages] == [0, 0], [o[1] for o in outs]
    assert outs[1][0] == "[[0, 1, 2], [3, 4, 5]]\n"


@needs_ss
def test_two_stages_started_by_hand_run_send_and_direct_to_one_token_stream(tmp_path):
    port = free_base_port(5)
    with Launcher() as launch:
        sched = launch.scheduler(PP + ["--remote-runners", "--port", str(port)],
                                 tmp_path / "r", skip=WARNING)
        assert sched.first_line == (
            f"bench.py: waiting up to 120 s for 2 runner(s) started by hand; on each runner's "
            f"host run: python bench.py runner --connect tcp://127.0.0.1:{port}; python "
            f"bench.py runner --connect tcp://127.0.0.1:{port + 1}\n")
        stages = [launch.runner(port + r) for r in range(2)]
        seen: set[str] = set()  # listeners on the store port (BASE + R + 2), polled
        done = threading.Event()

        def watch() -> None:
            while not done.wait(0.2):
                seen.update(listening(port + 4))

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            errs = [s.communicate(timeout=120)[1] for s in stages]
            out, err = sched.communicate(timeout=60)
        finally:
            done.set()
            watcher.join(10)
    assert seen == {f"127.0.0.1:{port + 4}"}  # the store, on the given address only
    assert sched.returncode == 0, err
    assert [s.returncode for s in stages] == [0, 0], errs
    assert [e.splitlines()[-1] for e in errs] == [
        "bench.py runner: the run is complete (2 case(s) served)"] * 2
    assert "device=cpu (remote runners)" in out
    assert "token streams of send and direct: B=8 N=2: one token stream" in out
    cases = json.loads((tmp_path / "r" / "summary.json").read_text())["cases"]
    assert sorted(c["arm"] or c["policy"] for c in cases) == ["direct", "send"]
    assert [c["pp"] for c in cases] == [2, 2]
    digests = {c["token_digest"] for c in cases}
    assert len(digests) == 1 and len(next(iter(digests))) == 64
    assert listening(port + 4) == []  # the store port (BASE + R + 2) is free again


def test_a_stage_that_never_connects_is_named_and_the_other_is_told(tmp_path):
    port = free_base_port(5)
    with Launcher() as launch:
        sched = launch.scheduler(PP + ["--policies", "send", "--remote-runners", "--port",
                                       str(port), "--startup-timeout", "2"], tmp_path / "r",
                                 skip=WARNING)
        stage0 = launch.runner(port)
        _, err = sched.communicate(timeout=60)
        _, stage0_err = stage0.communicate(timeout=30)
    assert sched.returncode == 1
    assert [ln for ln in err.splitlines() if ln.startswith("bench.py: error:")] == [
        f"bench.py: error: num_running=8,pp=2/send/msgpack#0: no remote runner connected to "
        f"tcp://127.0.0.1:{port + 1} (stage 1) within 2 s; start it on its host with: python "
        f"bench.py runner --connect tcp://127.0.0.1:{port + 1}; run folder (nothing "
        f"measured): {tmp_path / 'r'}"]
    assert stage0.returncode == 1  # the Goodbye said the run failed
    assert stage0_err.splitlines()[-1].startswith("bench.py runner: the run failed: ")


#: Run in the last stage's runner: it dies (SIGKILL) before it reads step 8's hidden states.
_DIES_AT_STEP_8 = textwrap.dedent("""
    import os, signal
    import ipc_bench.wire.pp as pp
    _recv = pp.StageLink.recv_hidden
    def recv_hidden(self, shape, dtype, seq, *args, **kwargs):
        if seq == 8:
            os.kill(os.getpid(), signal.SIGKILL)
        return _recv(self, shape, dtype, seq, *args, **kwargs)
    pp.StageLink.recv_hidden = recv_hidden
""")


def test_a_stage_runner_that_dies_fails_the_case_in_one_line(tmp_path):
    port = free_base_port(5)
    with Launcher() as launch:
        sched = launch.scheduler(PP + ["--policies", "send", "--remote-runners", "--port",
                                       str(port), "--peer-timeout", "5"], tmp_path / "r",
                                 skip=WARNING)
        stages = [launch.runner(port), launch.runner(port + 1, python_code=_DIES_AT_STEP_8)]
        _, err = sched.communicate(timeout=60)
        results = [s.communicate(timeout=30) for s in stages]
    assert sched.returncode == 1, err
    assert stages[1].returncode == -9
    errors = [ln for ln in err.splitlines() if ln.startswith("bench.py: error:")]
    assert len(errors) == 1, err
    case = "bench\\.py: error: num_running=8,pp=2/send/msgpack#0: "
    partial = f"; partial results: {re.escape(str(tmp_path / 'r'))}"
    print(f"stage 0's runner: exit {stages[0].returncode}: {results[0][1].splitlines()[-1]}")
    # The first of two true reports reaches the scheduler first. Mostly its control
    # connection to stage 1 closing (step 7's reply may still be on its way then), and
    # stage 0 exits when the scheduler goes away; else stage 0's report that its hidden
    # states could no longer be sent to stage 1, in gloo's words less gloo's advice to
    # its own users, led by stage 1's closed connection (as a killed spawned stage is).
    gone = (rf"stage 1: remote runner 1 \(control port tcp://127\.0\.0\.1:{port + 1}\) "
            rf"disconnected \(its process ended or its host closed the connection\)")
    if re.fullmatch(
            rf"{case}{gone}, noticed while waiting for ModelRunnerOutput for step [78] from "
            rf"stage 1{partial}", errors[0]):
        assert stages[0].returncode == 5, results[0][1]  # the scheduler went away
    else:
        assert re.fullmatch(
            rf"{case}{gone}; stage 0 then lost its link: runner failed at step [89] "
            rf"\({re.escape(STEP_NUMBERING)}\): stage 0: hidden states of step [89] to "
            rf"stage 1: [^;]+{partial}", errors[0]), errors
        assert "GLHF" not in errors[0] and "This is typically" not in errors[0], errors
        assert stages[0].returncode == 4, results[0][1]  # its step failed


def test_a_gloo_error_is_one_line_without_gloos_advice():
    """gloo's text for a stage that died, as a killed stage 0 gave it, reaches the case's
    error line as its first sentence alone."""
    from ipc_bench.wire.pp import _gloo_line

    exc = RuntimeError("[../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection "
                       "closed by peer [127.0.0.1]:31662. This is typically caused by a "
                       "remote worker crashing. Check the logs of the remote worker before "
                       "reporting an error. GLHF! \U0001f3d6\ufe0f")
    assert _gloo_line(exc) == "Connection closed by peer [127.0.0.1]:31662"
    timeout = RuntimeError("[/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81]"
                           " Timed out waiting 10000ms for recv operation to complete")
    assert _gloo_line(timeout) == "Timed out waiting 10000ms for recv operation to complete"
