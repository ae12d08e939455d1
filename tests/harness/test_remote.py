"""Runners started by hand (``--remote-runners``, ``bench.py runner --connect``).

"Another host" is emulated: the runner is started by the test as a separate process
on 127.0.0.1, as a person would start it on another host, and talks to the scheduler
only through the address and port it is given. Everything binds 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time

import pytest

from analysis_run import bench_in_process
from fault_helpers import free_base_port
from remote_launch import Launcher, bench_run, token_digests, wait_for_steps

CASE = ["--scenario", "decode-steady", "--transport", "tcp", "--num-running", "4",
        "--steps", "40", "--policies", "send", "--codecs", "msgpack", "--no-single-process",
        "--quiet"]
CASE_ID = "num_running=4/send/msgpack#0"


def by_hand(args: list[str], port: int) -> list[str]:
    """``args`` with the options of a run whose runners are started by hand."""
    return [*args, "--remote-runners", "--port", str(port)]


def test_a_runner_started_by_hand_gives_the_spawned_runners_tokens(tmp_path):
    port = free_base_port(3)
    with Launcher() as launch:
        sched = launch.scheduler(by_hand(CASE, port), tmp_path / "remote")
        assert sched.first_line == (
            f"bench.py: waiting up to 120 s for 1 runner(s) started by hand; on each runner's "
            f"host run: python bench.py runner --connect tcp://127.0.0.1:{port}\n")
        runner = launch.runner(port)
        _, runner_err = runner.communicate(timeout=120)
        out, err = sched.communicate(timeout=60)
    assert (sched.returncode, err) == (0, ""), err
    assert runner.returncode == 0, runner_err
    assert runner_err.splitlines()[-1] == ("bench.py runner: the run is complete "
                                           "(1 case(s) served)")
    assert "device=cpu (remote runner)" in out
    # the reference run, its runner spawned: bench.py in this process (its runner a
    # process as ever); only its folder's token digest is compared
    spawned = bench_in_process([*CASE, "--output", tmp_path / "spawned"])
    assert spawned.returncode == 0, spawned.stderr
    remote, local = token_digests(tmp_path / "remote"), token_digests(tmp_path / "spawned")
    assert list(remote) == [CASE_ID] and remote == local
    # the runner named its code, this checkout's as the scheduler's: no warning
    from ipc_bench.harness.environment import code_identity

    summary = json.loads((tmp_path / "remote" / "summary.json").read_text())
    (case,) = summary["cases"]
    assert case["runner_code"] == code_identity(summary["metadata"].get("git"))
    assert not any("started by hand, ran" in w for w in case["warnings"])


def test_every_case_a_runner_serves_records_its_code(tmp_path):
    """One runner started by hand serves both cases of a run: each records its code."""
    port = free_base_port(3)
    both = ["send,cached" if a == "send" else a for a in CASE]
    with Launcher() as launch:
        sched = launch.scheduler(by_hand(both, port), tmp_path / "remote")
        runner = launch.runner(port)
        _, runner_err = runner.communicate(timeout=120)
        out, err = sched.communicate(timeout=60)
    assert (sched.returncode, runner.returncode) == (0, 0), (err, runner_err)
    from ipc_bench.harness.environment import code_identity

    summary = json.loads((tmp_path / "remote" / "summary.json").read_text())
    mine = code_identity(summary["metadata"].get("git"))
    assert [c["runner_code"] for c in summary["cases"]] == [mine, mine]


def test_a_runner_of_other_code_is_recorded_and_warned_about(tmp_path):
    """A runner started from another checkout (its code named in its ``Ready``): the
    case records that code and warns that its timings are not of the scheduler's."""
    port = free_base_port(3)
    with Launcher() as launch:
        sched = launch.scheduler(by_hand(CASE, port), tmp_path / "remote")
        runner = launch.runner(port, python_code=(
            "import ipc_bench.harness.remote_runner as r\n"
            "r.source_code = lambda: 'ecfd2610000000000000000000000000000000ff (dirty)'"))
        _, runner_err = runner.communicate(timeout=120)
        out, err = sched.communicate(timeout=60)
    assert (sched.returncode, runner.returncode) == (0, 0), (err, runner_err)
    from ipc_bench.harness.environment import code_identity

    summary = json.loads((tmp_path / "remote" / "summary.json").read_text())
    (case,) = summary["cases"]
    theirs = "ecfd2610000000000000000000000000000000ff (dirty)"
    assert case["runner_code"] == theirs
    assert (f"its runner, started by hand, ran {theirs}; this scheduler "
            f"{code_identity(summary['metadata'].get('git'))}: the runner's timings and "
            "model are of that code, the run's metadata of this one's (start it from the "
            "same checkout to compare like with like)") in case["warnings"]


def test_a_runner_of_another_protocol_version_is_refused_in_one_line(tmp_path):
    from ipc_bench.wire.control import PROTOCOL_VERSION

    port = free_base_port(3)
    with Launcher() as launch:
        sched = launch.scheduler(by_hand(CASE, port), tmp_path / "r")
        runner = launch.runner(port, python_code="import ipc_bench.wire.control as c\n"
                                                 f"c.PROTOCOL_VERSION = {PROTOCOL_VERSION - 1}")
        _, runner_err = runner.communicate(timeout=120)
        _, err = sched.communicate(timeout=60)
    line = (f"protocol version mismatch: scheduler speaks {PROTOCOL_VERSION}, runner speaks "
            f"{PROTOCOL_VERSION - 1}")
    assert sched.returncode == 1
    assert err.splitlines() == [f"bench.py: error: {CASE_ID}: runner refused the handshake: "
                                f"{line}; run folder (nothing measured): {tmp_path / 'r'}"]
    assert runner.returncode == 3
    assert runner_err.splitlines()[-1] == f"bench.py runner: refusing the handshake: {line}"


def test_a_runner_that_never_connects_fails_the_case_within_the_startup_timeout(tmp_path):
    port = free_base_port(3)
    t0 = time.monotonic()
    with Launcher() as launch:
        sched = launch.scheduler(by_hand(CASE, port) + ["--startup-timeout", "2"],
                                 tmp_path / "r")
        _, err = sched.communicate(timeout=60)
    assert time.monotonic() - t0 < 20
    assert sched.returncode == 1
    assert err.splitlines() == [
        f"bench.py: error: {CASE_ID}: no remote runner connected to tcp://127.0.0.1:{port} "
        f"(rank 0) within 2 s; start it on its host with: python bench.py runner --connect "
        f"tcp://127.0.0.1:{port}; run folder (nothing measured): {tmp_path / 'r'}"]


def test_a_runner_killed_mid_run_fails_the_case_and_the_scheduler_exits(tmp_path):
    port = free_base_port(3)
    args = [a if a != "40" else "300000" for a in CASE]  # still running when killed
    with Launcher() as launch:
        sched = launch.scheduler(by_hand(args, port), tmp_path / "r")
        runner = launch.runner(port)
        wait_for_steps(tmp_path / "r", sched, flushes=2)  # a second into its steps
        runner.send_signal(signal.SIGKILL)
        runner.communicate(timeout=30)
        t_kill = time.monotonic()
        _, err = sched.communicate(timeout=30)
        assert time.monotonic() - t_kill < 10  # noticed at once, not after a timeout
    lines = err.splitlines()
    assert sched.returncode == 1, err
    assert lines[0].startswith(f"bench.py: error: {CASE_ID}: remote runner 0 (control port "
                               f"tcp://127.0.0.1:{port}) disconnected (its process ended or "
                               f"its host closed the connection), noticed while "), lines
    assert len(lines) == 1  # no finished case: no "partial results" pointer


def test_ports_in_use_are_refused_in_one_line(tmp_path):
    port = free_base_port(3)
    holder = socket.socket()
    holder.bind(("127.0.0.1", port + 2))  # the ModelRunnerOutput port
    holder.listen()
    try:
        proc = bench_run([*by_hand(CASE, port), "--output", str(tmp_path / "r")], timeout_s=60)
    finally:
        holder.close()
    assert (proc.returncode, proc.stderr) == (
        2, f"bench.py: error: cannot bind tcp://127.0.0.1:{port + 2}: Address already in use "
           f"(another socket holds this port)\n")
    assert not (tmp_path / "r").exists()


def test_pickle_needs_the_runners_own_consent(tmp_path):
    port = free_base_port(3)
    args = [a if a != "msgpack" else "pickle" for a in CASE]
    with Launcher() as launch:
        sched = launch.scheduler(by_hand(args, port) + ["--allow-pickle-over-tcp"],
                                 tmp_path / "r")
        runner = launch.runner(port)
        _, runner_err = runner.communicate(timeout=120)
        _, err = sched.communicate(timeout=60)
    assert (sched.returncode, runner.returncode) == (1, 3)
    assert "runner refused the handshake: refusing to decode pickle from the scheduler " \
           "over tcp" in err.splitlines()[0]


#: A --tp 2 case whose ranks are started by hand (its --remote-runners options aside).
TP = ["--scenario", "tp-broadcast", "--tp", "2", "--transport", "tcp", "--num-running", "8",
      "--steps", "30", "--policies", "cached"]


@pytest.mark.parametrize("other_machine", [False, True], ids=["one-clock", "two-clocks"])
def test_tp_ranks_started_by_hand_broadcast_over_tcp(tmp_path, other_machine):
    port = free_base_port(4)
    with Launcher() as launch:
        sched = launch.scheduler(by_hand(TP, port) + ["--quiet"], tmp_path / "r")
        # rank 1 may claim another machine's clock, as a rank on another host would
        other = "import ipc_bench.wire.remote as r\nr.clock_id = lambda: 'another-boot-id'"
        runners = [launch.runner(port),
                   launch.runner(port + 1, python_code=other if other_machine else None)]
        for r in runners:
            r.communicate(timeout=120)
        out, err = sched.communicate(timeout=60)
    assert (sched.returncode, err) == (0, ""), err
    assert [r.returncode for r in runners] == [0, 0]
    assert "broadcast=tcp,num_running=8,tp=2" in out
    assert "device=cpu (remote runners)" in out
    case = json.loads((tmp_path / "r" / "summary.json").read_text())["cases"][0]
    assert case["tp"] == 2 and len(case["tp_rank_decode_ns_per_step"]) == 2
    if other_machine:  # receive-to-ready needs one clock: left out, and said why
        assert "tp_ready_ns_median" not in case
        assert case["tp_ready_note"] == ("not computed: ranks on other machines read other "
                                         "clocks than the scheduler's")
        # the N + 2 cores rule counts readers on this machine: none here
        assert "tp_cores" not in case and "tp_timings_withheld" not in case
    else:
        assert case["tp_ready_ns_median"] > 0
        assert case["tp_cores"] == len(os.sched_getaffinity(0))
        assert case["tp_timings_withheld"] == (len(os.sched_getaffinity(0)) < 4)


def test_a_tp_rank_that_never_connects_is_named_and_the_others_are_told(tmp_path):
    port = free_base_port(4)
    with Launcher() as launch:
        # rank 0 imports its modules before the scheduler starts waiting: on a slow
        # machine its start-up alone would take the 2 s allowance
        rank0 = launch.runner(port, held=True)
        sched = launch.scheduler(by_hand(TP, port) + ["--quiet", "--startup-timeout", "2"],
                                 tmp_path / "r")
        launch.release(rank0)
        _, err = sched.communicate(timeout=60)
        _, rank0_err = rank0.communicate(timeout=30)
    assert sched.returncode == 1
    assert err.splitlines()[0] == (
        f"bench.py: error: num_running=8,tp=2,broadcast=tcp/cached/msgpack#0: no remote "
        f"runner connected to tcp://127.0.0.1:{port + 1} (rank 1) within 2 s; start it on its "
        f"host with: python bench.py runner --connect tcp://127.0.0.1:{port + 1}; run folder "
        f"(nothing measured): {tmp_path / 'r'}")
    assert rank0.returncode == 1  # the Goodbye said the run failed
    assert rank0_err.splitlines()[-1].startswith("bench.py runner: the run failed: ")


def test_a_runner_whose_scheduler_is_killed_exits_at_once(tmp_path, killed_bench_tmpdir):
    port = free_base_port(3)
    args = [a if a != "40" else "300000" for a in CASE]
    with Launcher() as launch:
        # a SIGKILLed bench.py leaves its socket folder there
        sched = launch.scheduler(by_hand(args, port), tmp_path / "r",
                                 env=dict(os.environ, TMPDIR=str(killed_bench_tmpdir)),
                                 stdout=subprocess.DEVNULL)
        runner = launch.runner(port)
        wait_for_steps(tmp_path / "r", sched)
        sched.kill()
        sched.communicate(timeout=30)
        t_kill = time.monotonic()
        _, runner_err = runner.communicate(timeout=30)
        assert time.monotonic() - t_kill < 5
    assert runner.returncode == 5
    # steps.partial.csv exists from the case's start: the kill may meet the runner in
    # its step loop or reading a control message (EndWarmup, a KeepAlive) after the
    # scheduler's empty frame
    assert re.fullmatch(
        rf"bench\.py runner: the scheduler at tcp://127\.0\.0\.1:{port} closed the "
        r"connection, noticed while waiting for (SchedulerOutput for step \d+.*|control "
        r"message.*)", runner_err.splitlines()[-1])


def test_a_runner_that_stops_answering_fails_the_case_after_the_peer_timeout(tmp_path):
    port = free_base_port(3)
    args = [a if a != "40" else "300000" for a in CASE]
    with Launcher() as launch:
        sched = launch.scheduler(by_hand(args, port) + ["--peer-timeout", "2"], tmp_path / "r")
        runner = launch.runner(port)
        wait_for_steps(tmp_path / "r", sched)
        runner.send_signal(signal.SIGSTOP)
        t_stop = time.monotonic()
        try:
            _, err = sched.communicate(timeout=30)
        finally:
            runner.send_signal(signal.SIGCONT)
        assert 1.5 < time.monotonic() - t_stop < 10
        assert sched.returncode == 1
        assert re.fullmatch(
            rf"bench\.py: error: {re.escape(CASE_ID)}: remote runner 0 \(control port "
            rf"tcp://127\.0\.0\.1:{port}\) stopped answering: (no ModelRunnerOutput for step "
            # or, stopped as the scheduler asked for the input oracle's digests
            rf"\d+|no input digests from the runner before step \d+) within 2 s \(on "
            rf"another host: not killed from here\); partial results: "
            rf"{re.escape(str(tmp_path / 'r'))}", err.splitlines()[0]), err
        _, runner_err = runner.communicate(timeout=30)  # the scheduler is gone: it exits
    assert runner.returncode == 5, runner_err


def test_another_peer_coming_and_going_on_the_control_port_is_not_the_runner(tmp_path):
    port = free_base_port(3)
    # 800 steps of the fixed-step model's 5 ms (sleeps, not compute): at least 4 s, the
    # first step rows flushed about a second in, so the run goes on for seconds after the
    # stranger on any machine (20,000 steps of the default model: 6.1 -> 1.9 CPU-s)
    args = [a if a != "40" else "800" for a in CASE] + ["--model", "fixed-step",
                                                        "--step-time-ms", "5"]
    with Launcher() as launch:
        sched = launch.scheduler(by_hand(args, port) + ["--no-floor"], tmp_path / "r")
        runner = launch.runner(port)
        wait_for_steps(tmp_path / "r", sched)
        stranger = socket.create_connection(("127.0.0.1", port))  # a port scan, say
        stranger.close()
        assert sched.poll() is None  # the case still runs after the stranger left
        (runner_rc, _, _), (sched_rc, _, err) = launch.finish(runner, sched)
    assert (sched_rc, err, runner_rc) == (0, "", 0)


def _config(**kw):
    from ipc_bench.engine.config import ModelConfig, SchedulerConfig
    from ipc_bench.wire.handshake import RunnerConfig

    fields = dict(scheduler=SchedulerConfig(max_num_seqs=4, max_model_len=64, block_size=16,
                                            num_blocks=32),
                  model=ModelConfig(), policy="send", codec="msgpack", warmup_steps=0,
                  peer_timeout_s=1.0, s2r_endpoint="tcp://0.0.0.0:5601",
                  r2s_endpoint="tcp://0.0.0.0:5602")
    fields.update(kw)
    return RunnerConfig(**fields)


@pytest.mark.parametrize("host,s2r,r2s", [
    ("10.1.2.3", "tcp://10.1.2.3:5601", "tcp://10.1.2.3:5602"),
    ("fd00::1", "tcp://[fd00::1]:5601", "tcp://[fd00::1]:5602"),
])
def test_the_runner_reaches_the_data_ports_at_the_address_it_connected_to(host, s2r, r2s):
    from ipc_bench.harness.remote_runner import remote_config

    # the scheduler bound a wildcard and names it: the runner keeps only the ports
    adapted = remote_config(host, allow_pickle=False)(_config())
    assert (adapted.s2r_endpoint, adapted.r2s_endpoint) == (s2r, r2s)
    assert adapted.codec == "msgpack" and adapted.scheduler == _config().scheduler


def test_the_runner_refuses_the_ring_and_unconsented_pickle():
    from ipc_bench.engine.config import ConfigError
    from ipc_bench.harness.remote_runner import remote_config
    from ipc_bench.wire.shm_ring import RingHandle

    ring = RingHandle(shm_name="x", n_readers=1, n_chunks=2, chunk_bytes=64,
                      overflow_endpoint="ipc:///x/o", folder="/x", wait="spin")
    with pytest.raises(ConfigError, match="the shared-memory ring is local only"):
        remote_config("10.1.2.3", False)(_config(s2r_ring=ring))
    pickled = _config(codec="pickle", allow_pickle_over_tcp=True)
    with pytest.raises(ConfigError, match="start this runner with --allow-pickle-over-tcp"):
        remote_config("10.1.2.3", False)(pickled)
    assert remote_config("10.1.2.3", True)(pickled).codec == "pickle"
