"""``--transport shm`` and ``shm-block``: the scheduler -> runner frames through the
shared-memory ring (``wire.shm_ring``; the runner spins or blocks on it), replies and
control messages over ipc sockets.

Checked: a known frame arrives byte for byte through the ring channels, and the reply
and the markers come back; a case runs end to end with the token digest, schedule
digest and per-step payload bytes of the same case over ipc; the wire columns count
the ring's chunk head; a killed runner is reported as over ipc; no process, folder or
shared-memory segment is left, and a SIGKILLed ``bench.py`` leaves no segment.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import zmq

from test_e2e import Spy, assert_clean, steady_spec
from ipc_bench.analysis.summary import summarize_case
from ipc_bench.harness import case_lifecycle
from ipc_bench.harness.spec import SCHED_COLUMNS, CaseError
from ipc_bench.harness.supervisor import run_case
from ipc_bench.wire.channel import (ChannelError, RingRunnerChannel, RingSchedulerChannel)
from ipc_bench.wire.codecs import scheduler_output_codec
from ipc_bench.wire.leftovers import KEEP_ENV
from ipc_bench.wire.shm_ring import (SHM_PREFIX, RingReader, RingTimeout, RingWriter,
                                     ring_message_bytes)
from ipc_bench.wire.transport import (EndpointDir, RunnerSockets, SchedulerSockets,
                                      destroy_context, zmtp_frame_bytes)

pytestmark = pytest.mark.timeout(120)


class RingSpy:
    """Records the name of every ring segment ``run_case`` creates in this process
    (``names``), so a test checks its own segments: other runs on the machine create
    and remove theirs in ``/dev/shm`` meanwhile."""

    def __init__(self, mp: pytest.MonkeyPatch):
        self.names: list[str] = []
        spy = self

        class RecordingRing(RingWriter):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                spy.names.append(self.handle.shm_name)

        mp.setattr(case_lifecycle, "RingWriter", RecordingRing)

    def left(self) -> list[str]:
        """The recorded segments still in ``/dev/shm``."""
        return segments_left(self.names)


def segments_left(names) -> list[str]:
    """Those of the ring segments ``names`` still in ``/dev/shm``."""
    return [n for n in names if os.path.exists(f"/dev/shm/{n}")]


def mapped_segments(pid: int) -> set[str]:
    """The ring segments process ``pid`` has mapped, from ``/proc/PID/maps`` (unlinked
    ones included: their path there ends in `` (deleted)``)."""
    found = set()
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            path = line.split(maxsplit=5)[5:]
            if path and path[0].startswith("/dev/shm/" + SHM_PREFIX):
                found.add(path[0].rstrip("\n").removesuffix(" (deleted)")[len("/dev/shm/"):])
    return found


def test_a_known_frame_crosses_the_ring_channels_byte_for_byte():
    from ipc_bench.engine.messages import CachedRequestData, SchedulerOutput

    so = SchedulerOutput(scheduled_new_reqs=[], scheduled_cached_reqs=CachedRequestData(
        req_ids=["cmpl-0"], resumed_from_preemption=[False], new_token_ids=[[42]],
        new_block_ids=[([3],)], num_computed_tokens=[7]), num_scheduled_tokens={"cmpl-0": 1},
        total_num_scheduled_tokens=1, scheduled_spec_decode_tokens={},
        scheduled_encoder_inputs={}, num_common_prefix_blocks=[0], finished_req_ids={"cmpl-9"},
        free_encoder_input_ids=[], structured_output_request_ids={})
    frame = scheduler_output_codec("msgpack").encode(so)
    endpoint_dir, ctx, ring = EndpointDir(), zmq.Context(), None
    try:
        socks = SchedulerSockets(ctx, "shm", endpoint_dir)
        ring = RingWriter(1, folder=endpoint_dir.path, ctx=ctx, timeout_s=2.0)
        runner_socks = RunnerSockets(ctx, socks.endpoints.ctl)
        runner_socks.connect_data(socks.endpoints.s2r, socks.endpoints.r2s)
        reader = RingReader(ring.handle, 0, ctx=ctx, timeout_s=2.0)
        sched = RingSchedulerChannel(socks, ring, 2.0, lambda: None)
        runner = RingRunnerChannel(runner_socks, reader, 2.0, lambda: None)
        sched.send(frame, 0)
        with pytest.raises(ChannelError, match=r"^SchedulerOutput for step 1: 1 frames "
                                               r"already in flight \(window 1\)$"):
            sched.send(frame, 1)
        got = runner.recv(0)
        assert type(got) is bytes and got == frame
        assert scheduler_output_codec("msgpack").decode(got) == so
        runner.reply(b"\x93reply", 0)
        assert sched.recv(0) == b"\x93reply"
        sched.send_marker()
        assert runner.recv(1) == b""
        assert ring.sent == 2 and ring.overflowed == 0 and reader.received == 2
        impatient = RingRunnerChannel(runner_socks, reader, 0.2, lambda: None)
        with pytest.raises(RingTimeout, match=r"^no SchedulerOutput for step 7 within 0.2 s "
                                              r"\(reader 0 waited for the written flag of "
                                              r"chunk 2\)$"):
            impatient.recv(7)
        reader.close()
        runner_socks.close()
        socks.close()
    finally:
        if ring is not None:  # unlinks the segment, whatever failed above
            ring.close()
        destroy_context(ctx)
        endpoint_dir.cleanup()
    assert not os.path.exists(endpoint_dir.path)


def test_ring_wire_bytes_are_head_and_payload_or_overflow():
    assert ring_message_bytes(0) == 5
    assert ring_message_bytes(1000) == 1005
    assert ring_message_bytes(59, chunk_bytes=64) == 64
    assert ring_message_bytes(60, chunk_bytes=64) == 5 + 7 + zmtp_frame_bytes(60) == 74


@pytest.fixture(scope="module")
def pair():
    """The same case over ipc, shm and shm-block (send, msgpack; cached, pickle)."""
    with pytest.MonkeyPatch.context() as mp:
        rings = RingSpy(mp)
        out = {(t, p, c): run_case(steady_spec(p, c, transport=t))
               for t in ("ipc", "shm", "shm-block")
               for p, c in (("send", "msgpack"), ("cached", "pickle"))}
    assert len(rings.names) == 4 and rings.left() == []
    return out


@pytest.mark.parametrize("transport", ["shm", "shm-block"])
@pytest.mark.parametrize("policy,codec", [("send", "msgpack"), ("cached", "pickle")])
def test_shm_case_matches_the_ipc_case(pair, policy, codec, transport):
    ipc, shm = pair["ipc", policy, codec], pair[transport, policy, codec]
    assert shm.token_digest == ipc.token_digest is not None
    assert shm.schedule_digest == ipc.schedule_digest
    payload = SCHED_COLUMNS.index("s2r_payload_bytes")
    assert [r[payload] for r in shm.sched_rows] == [r[payload] for r in ipc.sched_rows]
    assert shm.s2r_frames == ipc.s2r_frames
    assert shm.floor_step_ns and len(shm.floor_step_ns) == len(ipc.floor_step_ns)


def test_shm_summary_counts_the_chunk_head(pair):
    ipc = summarize_case(pair["ipc", "send", "msgpack"])
    shm = summarize_case(pair["shm", "send", "msgpack"])
    assert shm["transport"] == "shm" and ipc["transport"] == "ipc"
    assert (shm["sched_to_runner_payload_bytes_per_step"]
            == ipc["sched_to_runner_payload_bytes_per_step"])
    assert shm["sched_to_runner_wire_bytes_per_step"] == pytest.approx(
        shm["sched_to_runner_payload_bytes_per_step"] + 5)
    assert shm["runner_to_sched_wire_bytes_per_step"] == ipc["runner_to_sched_wire_bytes_per_step"]


@pytest.mark.parametrize("transport", ["shm", "shm-block"])
def test_shm_case_leaves_nothing_behind(monkeypatch, transport):
    spy, rings = Spy(monkeypatch), RingSpy(monkeypatch)
    result = run_case(steady_spec("send", "msgpack", transport=transport, max_steps=20))
    assert result.token_digest
    assert spy.procs[0].returncode == 0
    assert_clean(spy)
    assert len(rings.names) == 1 and rings.left() == []


def test_killed_runner_over_shm_is_reported_and_cleaned_up(monkeypatch):
    spy, rings = Spy(monkeypatch), RingSpy(monkeypatch)

    def kill_at_step(seq, num_output_tokens, num_finished):
        if seq == 10:
            os.kill(spy.procs[0].pid, signal.SIGKILL)

    with pytest.raises(CaseError) as info:
        run_case(steady_spec("cached", "pickle", transport="shm"), on_step=kill_at_step)
    assert str(info.value) == (f"runner process {spy.procs[0].pid} was killed by SIGKILL, "
                               f"noticed while waiting for ModelRunnerOutput for step 10")
    assert spy.procs[0].returncode == -signal.SIGKILL
    assert_clean(spy)
    assert len(rings.names) == 1 and rings.left() == []


def test_a_sigkilled_bench_leaves_no_segment(tmp_path, killed_bench_tmpdir):
    """The ring's name is gone once the runner is ready, so a SIGKILL of ``bench.py`` in
    the middle of a case leaves no segment; its socket folder stays, under TMPDIR, until
    the next run there removes it and says so."""
    from test_e2e import _cmdlines

    out = tmp_path / "out"
    tmp = killed_bench_tmpdir  # short: the ring's socket path fits
    repo = Path(__file__).resolve().parents[2]
    bench = subprocess.Popen(
        [sys.executable, "bench.py", "--scenario", "decode-steady", "--num-running", "16",
         "--steps", "100000", "--policies", "send", "--codecs", "msgpack",
         "--transport", "shm", "--no-single-process", "--output", str(out), "--quiet"],
        cwd=repo, env=dict(os.environ, TMPDIR=str(tmp)),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (out / "steps.partial.csv").exists():
            assert bench.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        mine = mapped_segments(bench.pid)  # this bench.py's ring, by the name it mapped
        assert len(mine) == 1 and segments_left(mine) == []
    finally:
        bench.kill()
        bench.wait(10)
    deadline = time.monotonic() + 10  # the runner follows (PR_SET_PDEATHSIG)
    while any(str(tmp) in cmd for cmd in _cmdlines().values()):
        assert time.monotonic() < deadline, "the runner outlived bench.py"
        time.sleep(0.05)
    assert segments_left(mine) == []
    (left,) = [name for name in os.listdir(tmp) if name.startswith("ipc-bench-")]
    assert re.fullmatch(rf"ipc-bench-{bench.pid}-\w{{8}}", left)
    env = {k: v for k, v in os.environ.items() if k != KEEP_ENV}
    again = subprocess.run(
        [sys.executable, "bench.py", "--scenario", "decode-steady", "--num-running", "1",
         "--steps", "5", "--policies", "send", "--codecs", "msgpack", "--transport", "shm",
         "--no-single-process", "--no-floor", "--output", str(tmp_path / "again")],
        cwd=repo, env=dict(env, TMPDIR=str(tmp)), capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    lines = again.stderr.splitlines()
    assert lines[0].startswith("ipc-bench: decode-steady, 1 case -> ")
    assert lines[1] == (f"note: removed 1 socket folder left by a process that no longer "
                        f"runs (pid {bench.pid})")
    assert sum("note: removed" in line for line in lines) == 1
    assert [name for name in os.listdir(tmp) if name.startswith("ipc-bench-")] == []


def test_a_ring_socket_path_too_long_is_refused_before_anything_starts(tmp_path):
    """A TMPDIR short enough for the ipc sockets but not for the ring's overflow socket
    (one folder deeper): exit 2, one line naming it, no results folder."""
    tmp = tmp_path / ("d" * (75 - len(str(tmp_path)) - 1))
    tmp.mkdir()
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "bench.py", "--scenario", "decode-steady", "--num-running", "4",
         "--steps", "20", "--transport", "shm", "--output", str(out), "--quiet"],
        cwd=Path(__file__).resolve().parents[2], env=dict(os.environ, TMPDIR=str(tmp)),
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    pid = re.search(r"/ipc-bench-(\d+)-", proc.stderr).group(1)  # bench.py's
    assert re.fullmatch(rf"bench\.py: error: cannot bind ipc://{re.escape(str(tmp))}/"
                        rf"ipc-bench-{pid}-\w{{8}}/ring-\w{{8}}/overflow: the socket path is "
                        rf"{118 + len(pid)} bytes, the limit is 107 \(set TMPDIR to a shorter "
                        r"folder\)\n", proc.stderr), proc.stderr
    assert not out.exists() and os.listdir(tmp) == []


SHM_ONE_CORE = ("--transport shm with a spinning reader on 1 core(s): 2 processes share "
                "them; those timings are not comparable")


def test_a_spinning_reader_without_a_core_of_its_own_is_warned_about():
    from ipc_bench.analysis.summary import noise_warnings

    base = dict(num_steps=1000, transport="shm", shm_cores=1)
    assert noise_warnings(dict(base, shm_oversubscribed=True)) == [SHM_ONE_CORE]
    assert noise_warnings(dict(base, shm_cores=2, shm_oversubscribed=False)) == []


def test_a_shm_run_on_one_core_prints_and_keeps_the_warning(tmp_path):
    import json

    from fault_helpers import bench

    def one_core() -> None:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

    run = tmp_path / "run"
    proc = bench(["--scenario", "decode-steady", "--transport", "shm", "--num-running", "4",
                  "--steps", "100", "--warmup-steps", "5", "--policies", "send", "--codecs",
                  "msgpack", "--no-floor", "--no-single-process", "--output", str(run)],
                 preexec_fn=one_core)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert f"  warning: {SHM_ONE_CORE}" in out.splitlines() + err.splitlines()
    (case,) = json.loads((run / "summary.json").read_text())["cases"]
    assert (case["shm_cores"], case["shm_oversubscribed"]) == (1, True)
    assert case["warnings"][0] == SHM_ONE_CORE  # then any the machine's noise adds


def test_a_shutdown_step_that_raises_leaves_no_segment_or_runner(monkeypatch):
    """The shutdown's first step (stopping the extras: the RSS sampler, the frontend)
    raising still lets the ring close, the sockets close and the runner be reaped;
    its error is raised after them."""
    from ipc_bench.harness import supervisor

    spy, rings = Spy(monkeypatch), RingSpy(monkeypatch)

    def close_extras(self):
        raise RuntimeError("the frontend would not close (injected)")

    monkeypatch.setattr(supervisor._TwoProcessCase, "_close_extras", close_extras)
    spec = steady_spec("send", "msgpack", transport="shm", max_steps=30)
    with pytest.raises(RuntimeError, match=r"^the frontend would not close \(injected\)$"):
        run_case(spec)
    assert rings.names and rings.left() == []
    assert_clean(spy)
