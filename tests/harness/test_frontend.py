"""The frontend hop (``--frontend``): exact bytes of known ``EngineCoreOutputs``, equal
token streams at the frontend and the scheduler under both policies (two processes,
the single process, async scheduling), the frontend oracle failing a case when the
frontend drops or doubles an id, and the frontend process reaped when it is killed,
when the runner dies, and on Ctrl-C of ``bench.py``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import msgspec
import pytest

from fault_helpers import (alive, bench, children, ctrl_c_reaps_every_child, steady_case,
                           wait_dead, wait_for)
from ipc_bench.engine.outputs import (EngineCoreOutput, EngineCoreOutputs, FinishReason,
                                      SchedulerStats, request_streams, stream_digest,
                                      streams_digest)
from ipc_bench.harness import supervisor
from ipc_bench.harness.frontend_loop import FAULT_ENV, FrontendState, StreamError
from ipc_bench.harness.spec import SCHED_COLUMNS, CaseError
from ipc_bench.harness.supervisor import run_case
from ipc_bench.wire.frontend import KEEPALIVE, OutputsEncoder


def _known(stats=None) -> EngineCoreOutputs:
    return EngineCoreOutputs(outputs=[
        EngineCoreOutput("cmpl-0", [5, 70000]),
        EngineCoreOutput("cmpl-1", [300], finish_reason=FinishReason.LENGTH)],
        scheduler_stats=stats, timestamp=1.5)


def test_exact_bytes_of_a_known_message():
    frame = bytes(OutputsEncoder().encode(_known()))
    # omit_defaults leaves nothing out of an array_like Struct (msgspec issue #720):
    # an array of all 8 fields (engine_index 0, outputs, nil stats, float64 timestamp,
    # 4 nils), each output an array of all 10 (id, ids, 3 nils, finish_reason: nil or
    # 1 = length, 3 nils, num_cached_tokens 0).
    assert frame == (b"\x98\x00\x92"
                     b"\x9a\xa6cmpl-0\x92\x05\xce\x00\x01\x11\x70" + b"\xc0" * 7 + b"\x00"
                     b"\x9a\xa6cmpl-1\x91\xcd\x01\x2c\xc0\xc0\xc0\x01\xc0\xc0\xc0\x00"
                     b"\xc0\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00" + b"\xc0" * 4)
    assert len(frame) == 60
    # vLLM's SchedulerStats is a dataclass: a map with its field names, 135 bytes here
    # (fixmap 5; keys 17 + 17 + 16 + 19 + 20; values 1 + 1 + 9 + 33 (the prefix-cache
    # map of 4) + 1), in place of the 1-byte nil.
    stats = SchedulerStats(num_running_reqs=2, gpu_cache_usage=0.25)
    assert len(msgspec.msgpack.encode(stats)) == 135
    assert len(OutputsEncoder().encode(_known(stats))) == 60 - 1 + 135
    decoded = msgspec.msgpack.decode(frame, type=EngineCoreOutputs)
    assert decoded.outputs[1].finish_reason is FinishReason.LENGTH
    assert decoded.timestamp == 1.5


def test_the_reused_buffer_holds_exactly_the_last_message():
    enc = OutputsEncoder()
    long = EngineCoreOutputs(outputs=[EngineCoreOutput(f"r{i}", [i]) for i in range(500)],
                             timestamp=1.0)
    assert len(enc.encode(long)) > 4096
    assert bytes(enc.encode(_known())) == msgspec.msgpack.encode(_known())


def test_frontend_state_appends_streams_and_refuses_ids_after_the_finish():
    state = FrontendState()
    state.receive(msgspec.msgpack.encode(_known()))
    state.receive(msgspec.msgpack.encode(EngineCoreOutputs(
        outputs=[EngineCoreOutput("cmpl-0", [7])], timestamp=2.0)))
    report = state.report()
    assert report.streams == {"cmpl-0": (3, stream_digest([5, 70000, 7])),
                              "cmpl-1": (1, stream_digest([300]))}
    assert report.num_finished == 1 and len(report.decode_ns) == 2
    assert report.payload_bytes == [60, len(msgspec.msgpack.encode(EngineCoreOutputs(
        outputs=[EngineCoreOutput("cmpl-0", [7])], timestamp=2.0)))]
    with pytest.raises(StreamError, match="request cmpl-1 got token ids after it finished"):
        state.receive(msgspec.msgpack.encode(EngineCoreOutputs(
            outputs=[EngineCoreOutput("cmpl-1", [1])], timestamp=3.0)))


@pytest.mark.parametrize("kind,expected", [("drop", [70000]), ("dup", [5, 70000, 5])])
def test_the_fault_hook_drops_or_doubles_an_id(kind, expected):
    state = FrontendState(f"{kind}:0")
    state.receive(msgspec.msgpack.encode(_known()))
    assert state.streams["cmpl-0"].output_token_ids == expected


def _case(policy: str, codec: str = "msgpack", **kw):
    return steady_case(4, policy=policy, codec=codec, max_steps=80, frontend=True, **kw)


@pytest.mark.parametrize("codec,transport", [("msgpack", "ipc"), ("pickle", "ipc"),
                                             ("none", "inproc")])
def test_frontend_streams_equal_the_schedulers_under_both_policies(codec, transport):
    results = {p: run_case(_case(p, codec, transport=transport)) for p in ("send", "cached")}
    for r in results.values():
        # The case passed, so the frontend's streams equalled these (FrontendHop.finish);
        # they hold every id the scheduler applied.
        streams = r.frontend_expected_streams
        out_col = SCHED_COLUMNS.index("num_output_tokens")
        assert sum(n for n, _ in streams.values()) == sum(row[out_col] for row in r.sched_rows)
        sent = [b for b in r.frontend_columns["frontend_payload_bytes"] if b]
        assert len(r.frontend_decode_ns) == len(sent) > 0
        assert r.frontend_pid is not None and not alive(r.frontend_pid)
    # Same schedule, same tokens: the frontend saw the same streams under both policies.
    assert results["send"].frontend_token_digest == results["cached"].frontend_token_digest \
        == streams_digest(results["send"].frontend_expected_streams) != ""
    assert results["send"].frontend_expected_streams == results["cached"].frontend_expected_streams
    assert results["send"].frontend_columns["frontend_payload_bytes"] == \
        results["cached"].frontend_columns["frontend_payload_bytes"]


def test_frontend_streams_with_async_scheduling_and_tcp():
    for r in (run_case(_case("cached", async_scheduling=True)),
              run_case(_case("send", transport="tcp"))):
        streams = r.frontend_expected_streams
        out_col = SCHED_COLUMNS.index("num_output_tokens")
        assert sum(n for n, _ in streams.values()) == sum(row[out_col] for row in r.sched_rows)
        assert len(r.frontend_decode_ns) == sum(
            1 for b in r.frontend_columns["frontend_payload_bytes"] if b) > 0


def test_request_streams_leave_out_requests_without_output():
    class Req:
        def __init__(self, rid, out):
            self.req_id, self.output_token_ids = rid, out
    assert request_streams([Req("a", []), Req("b", [1, 2])]) == {"b": (2, stream_digest([1, 2]))}


@pytest.mark.parametrize("fault", ["drop:20", "dup:20"])
def test_a_frontend_that_drops_or_doubles_an_id_fails_the_case(monkeypatch, fault):
    monkeypatch.setenv(FAULT_ENV, fault)
    with pytest.raises(CaseError) as err:
        run_case(_case("cached"))
    msg = str(err.value)
    assert msg.startswith("frontend oracle: the token stream of request cmpl-"), msg
    n_front, n_sched = (int(x) for x in
                        msg.split("(")[1].split(" ids at the frontend, ")[0:1]
                        + [msg.split(" ids at the frontend, ")[1].split(" at")[0]])
    assert n_front == n_sched + (1 if fault.startswith("dup") else -1)


class _Spy:
    def __init__(self, mp):
        self.frontends = []
        self.runners = []
        spy = self

        class Recording(supervisor.RunnerProcess):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                (spy.frontends if self.role == "frontend" else spy.runners).append(self.proc)

        mp.setattr(supervisor, "RunnerProcess", Recording)


@pytest.mark.parametrize("transport", ["ipc", "inproc"])
def test_a_killed_frontend_fails_the_case_and_everything_is_reaped(monkeypatch, transport):
    spy = _Spy(monkeypatch)

    def on_step(seq, *_):
        if seq == 30:
            os.kill(spy.frontends[0].pid, signal.SIGKILL)
            spy.frontends[0].wait()

    codec = "none" if transport == "inproc" else "msgpack"
    with pytest.raises(CaseError) as err:
        run_case(steady_case(4, codec=codec, transport=transport, frontend=True),
                 on_step=on_step)
    pid = spy.frontends[0].pid
    # Noticed after the step's send, or by the send itself when the socket has no peer.
    assert str(err.value) in (f"frontend process {pid} was killed by SIGKILL, noticed "
                              "after the EngineCoreOutputs of step 30",
                              f"frontend process {pid} was killed by SIGKILL, noticed while "
                              "sending the EngineCoreOutputs of step 30 to the frontend")
    assert spy.frontends[0].returncode == -signal.SIGKILL
    for p in spy.runners:
        assert p.returncode is not None
    assert children(os.getpid()) == []


def test_a_frontend_stopped_at_start_up_is_named_with_its_state_and_the_option(monkeypatch):
    """SIGSTOP before its ready message: the runner's start-up line, saying it was
    stopped rather than slow (was "frontend: no the frontend's ready message within
    2 s", with no state or option, then "...; raise --startup-timeout (now 2 s)",
    which cannot help a stopped process). 5 s: the runner, not stopped, must have
    started within it, which a loaded 2-core machine can take seconds over."""
    spy = _Spy(monkeypatch)
    real_init = supervisor.RunnerProcess.__init__

    def stop_it(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        if self.role == "frontend":
            os.kill(self.pid, signal.SIGSTOP)

    monkeypatch.setattr(supervisor.RunnerProcess, "__init__", stop_it)
    with pytest.raises(CaseError) as err:
        run_case(steady_case(4, codec="none", transport="inproc", frontend=True,
                             startup_timeout_s=5.0))
    pid = spy.frontends[0].pid
    assert str(err.value) == (
        f"frontend process {pid} was still starting when the start-up timeout ran out: "
        "no ready message from the frontend within 5 s (state T (stopped); killed); "
        "it was stopped (SIGSTOP or a debugger), not slow")
    assert spy.frontends[0].returncode == -signal.SIGKILL
    assert children(os.getpid()) == []


@pytest.mark.parametrize("transport", ["ipc", "inproc"])
def test_a_frontend_killed_at_start_up_is_named_once(monkeypatch, transport):
    """SIGKILL before its ready message: the line names its process as a later
    failure's does (was "frontend: frontend process P was killed ..."), and no step
    is charged (``failed_step`` null)."""
    spy = _Spy(monkeypatch)
    real_init = supervisor.RunnerProcess.__init__

    def kill_it(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        if self.role == "frontend":
            os.kill(self.pid, signal.SIGKILL)

    monkeypatch.setattr(supervisor.RunnerProcess, "__init__", kill_it)
    codec = "none" if transport == "inproc" else "msgpack"
    with pytest.raises(CaseError) as err:
        run_case(steady_case(4, codec=codec, transport=transport, frontend=True))
    pid = spy.frontends[0].pid
    assert str(err.value) == (f"frontend process {pid} was killed by SIGKILL, noticed "
                              "while waiting for ready message from the frontend")
    assert err.value.step is None
    assert spy.frontends[0].returncode == -signal.SIGKILL
    assert children(os.getpid()) == []


def test_a_frontend_stopped_mid_run_is_named_with_its_state(monkeypatch):
    """SIGSTOP at step 30: the send that it never takes ends the case after
    --peer-timeout with the runner's "stopped answering" line (was the send's timeout
    alone, no process or state). 3 s: with 1 s, a loaded machine's stall of the healthy
    processes before step 30 would end the case there, naming no stopped frontend."""
    spy = _Spy(monkeypatch)

    def on_step(seq, *_):
        if seq == 30:
            os.kill(spy.frontends[0].pid, signal.SIGSTOP)

    with pytest.raises(CaseError) as err:
        run_case(steady_case(4, frontend=True, peer_timeout_s=3.0), on_step=on_step)
    pid = spy.frontends[0].pid
    step = err.value.step
    assert step > 30
    assert str(err.value) == (
        f"frontend process {pid} stopped answering: could not send the EngineCoreOutputs "
        f"of step {step} to the frontend within 3 s (state T (stopped); killed)")
    assert spy.frontends[0].returncode == -signal.SIGKILL
    assert children(os.getpid()) == []


def test_a_dead_runner_kills_the_frontend(monkeypatch):
    spy = _Spy(monkeypatch)

    def on_step(seq, *_):
        if seq == 30:
            os.kill(spy.runners[0].pid, signal.SIGKILL)

    with pytest.raises(CaseError, match=r"runner process \d+ was killed by SIGKILL"):
        run_case(steady_case(4, frontend=True), on_step=on_step)
    assert spy.frontends[0].returncode == -signal.SIGKILL  # killed by the shutdown
    assert children(os.getpid()) == []


def test_ctrl_c_reaps_the_frontend(tmp_path, bench_tmpdir):
    ctrl_c_reaps_every_child(tmp_path, bench_tmpdir,
                             ["--scenario", "decode-steady", "--frontend",
                              "--num-running", "16", "--steps", "100000",
                              "--policies", "send", "--codecs", "msgpack"],
                             2, "the runner and the frontend")


def test_a_killed_scheduler_takes_the_frontend_with_it(tmp_path, killed_bench_tmpdir):
    env = dict(os.environ, TMPDIR=str(killed_bench_tmpdir))
    proc = bench(["--scenario", "decode-steady", "--frontend", "--num-running", "4",
                  "--steps", "300000", "--policies", "send", "--codecs", "msgpack",
                  "--output", str(tmp_path / "run")], env=env)
    kids = wait_for(lambda: len(children(proc.pid)) == 2 and children(proc.pid),
                    what="the runner and the frontend", proc=proc)
    proc.kill()
    proc.communicate(timeout=30)
    for pid in kids:
        wait_dead(pid, timeout_s=10)


@pytest.mark.parametrize("argv,message", [
    ([], "the following arguments are required: OUT_ENDPOINT, BACK_ENDPOINT, TIMEOUT_S, "
         "STARTUP_TIMEOUT_S"),
    (["ipc:///nope/a", "ipc:///nope/b", "0", "1"],
     "argument TIMEOUT_S: not a positive number of seconds: '0'"),
    (["udp://x", "ipc:///nope/b", "1", "1"], None),
])
def test_the_frontend_process_refuses_bad_arguments_in_one_line(argv, message):
    out = subprocess.run([sys.executable, "-m", "ipc_bench.harness.frontend_loop", *argv],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr
    assert lines[0].startswith("python -m ipc_bench.harness.frontend_loop: error: ")
    if message:
        assert lines[0].endswith(message), lines[0]


def test_the_byte_model_gives_every_engine_core_outputs_size_exactly():
    import random

    from ipc_bench.analysis.bytemodel import engine_outputs_bytes

    rng = random.Random(0)
    enc = OutputsEncoder()
    for _ in range(300):
        n = rng.choice([0, 1, 2, 15, 16, 17, 300])
        ids = [f"cmpl-{rng.getrandbits(128):032x}-0"[:rng.choice([5, 31, 32, 41, 300])]
               for _ in range(n)]
        toks = [[rng.choice([0, 127, 128, 255, 256, 65535, 65536, 128255])
                 for _ in range(rng.choice([0, 1, 1, 1, 3, 20]))] for _ in range(n)]
        outs = [EngineCoreOutput(r, t, finish_reason=rng.choice([None, FinishReason.LENGTH]))
                for r, t in zip(ids, toks)]
        stats = rng.choice([None, (rng.choice([0, 200, 70000]), rng.choice([0, 5, 300]))])
        msg = EngineCoreOutputs(outputs=outs, scheduler_stats=None if stats is None else
                                SchedulerStats(num_running_reqs=stats[0],
                                               num_waiting_reqs=stats[1],
                                               gpu_cache_usage=rng.random()))
        assert len(enc.encode(msg)) == engine_outputs_bytes(ids, toks, stats)


def test_a_frontend_run_reports_the_control_plane_and_keeps_the_raw_samples(tmp_path, capsys):
    import json

    import pandas as pd

    from ipc_bench import cli

    run_dir = tmp_path / "run"
    code = cli.main(["--scenario", "decode-steady", "--frontend", "--num-running", "4",
                     "--steps", "60", "--warmup-steps", "10", "--codecs", "msgpack",
                     "--no-floor", "--output", str(run_dir)])
    out = capsys.readouterr().out
    assert code == 0
    assert "frontend hop (EngineCoreOutputs, msgpack) beside the scheduler <-> runner hop" in out
    cases = {(c["policy"], c["codec"]): c
             for c in json.loads((run_dir / "summary.json").read_text())["cases"]}
    for c in cases.values():
        assert c["control_plane_bytes_per_step"] == pytest.approx(
            c["sched_to_runner_payload_bytes_per_step"]
            + c["runner_to_sched_payload_bytes_per_step"] + c["frontend_bytes_per_step"])
        assert c["frontend_token_digest"] == cases[("send", "msgpack")]["frontend_token_digest"]
    send, cached = cases[("send", "msgpack")], cases[("cached", "msgpack")]
    assert send["frontend_bytes_per_step"] == cached["frontend_bytes_per_step"] > 0
    saving = send["control_plane_bytes_per_step"] - cached["control_plane_bytes_per_step"]
    assert saving > 0 and saving == pytest.approx(
        send["sched_to_runner_payload_bytes_per_step"]
        - cached["sched_to_runner_payload_bytes_per_step"])
    for c in (send, cached):
        assert c["send_saving_share_of_control_plane"] == pytest.approx(
            saving / send["control_plane_bytes_per_step"])
    assert cases[("send", "none")]["send_saving_share_of_control_plane"] == 0.0
    # codec time of the three messages; the single process serializes the frontend's alone
    for c in cases.values():
        hop = 0.0 if c["codec"] == "none" else (c["encode_ns_per_step"]
                                                + c["decode_ns_per_step"])
        assert c["control_plane_codec_ns_per_step"] == pytest.approx(
            hop + c["frontend_encode_ns_per_step"] + c["frontend_decode_ns_per_step"])
    assert cases[("send", "none")]["encode_ns_per_step"] > 0  # clock reads, not counted
    fe = pd.read_csv(run_dir / "frontend.csv")
    steps = pd.read_csv(run_dir / "steps.csv")
    assert len(fe) == len(steps)
    sent = fe[fe.frontend_payload_bytes > 0]
    assert sent.frontend_decode_ns.notna().all() and len(sent) > 0


def test_send_saving_is_paired_only_over_the_same_batches():
    from ipc_bench.analysis.frontend import pair_send_savings

    def case(policy, s2r, digest):
        return dict(scenario="s", workload="w", codec="msgpack", transport="ipc",
                    repetition=0, policy=policy, arm=policy, schedule_digest=digest,
                    sched_to_runner_payload_bytes_per_step=s2r,
                    control_plane_bytes_per_step=s2r + 300.0)

    same = [case("send", 120.0, "a"), case("cached", 100.0, "a")]
    pair_send_savings(same)
    assert [c["send_saving_share_of_control_plane"] for c in same] == [20 / 420] * 2
    assert [c["send_saving_bytes_per_step"] for c in same] == [20.0] * 2
    other = [case("send", 120.0, "a"), case("cached", 100.0, "b")]  # a timed replay
    pair_send_savings(other)
    assert not any("send_saving_share_of_control_plane" in c for c in other)


def _fronted(codec: str):
    """A case result of 3 steps whose frontend hop sent 100, 0 and 200 bytes (encode
    10, 0, 30 ns; decode 4 and 8 ns of the two it sent)."""
    from types import SimpleNamespace

    cols = dict(frontend_payload_bytes=[100, 0, 200], frontend_build_ns=[1, 0, 3],
                frontend_encode_ns=[10, 0, 30], frontend_send_ns=[5, 0, 7])
    return SimpleNamespace(frontend_columns=cols, sched_rows=[(0,), (1,), (2,)],
                           frontend_decode_ns=[4, 8], frontend_token_digest="d",
                           spec=SimpleNamespace(codec=codec))


@pytest.mark.parametrize("codec, out, hop_ns, cell", [
    ("msgpack", dict(encode_ns_per_step=600.0, decode_ns_per_step=300.0), 900.0, "0.92"),
    ("msgpack", {}, None, "-"),  # the runner's report did not come back
    ("none", {}, 0.0, "0.02"),  # the single process: the frontend hop's alone
])
def test_control_plane_codec_time_is_absent_without_the_runners_side(codec, out, hop_ns,
                                                                      cell):
    """Frontend encode (10 + 0 + 30) / 3 and decode (4 + 0 + 8) / 3 ns per step, plus
    both sides of the scheduler <-> runner messages; without the runner's report
    (no ``encode_ns_per_step``) their codec time is unknown, not 0: the field is left
    out and its cell in the frontend table (``codec us all``) reads ``-``."""
    import numpy as np

    from ipc_bench.analysis.frontend import frontend_figures
    from ipc_bench.report.tables import frontend_lines

    fig = frontend_figures(_fronted(codec), np.arange(3), dict(out))
    assert (fig["frontend_encode_ns_per_step"], fig["frontend_decode_ns_per_step"]) == (
        40 / 3, 4.0)
    assert fig.get("control_plane_codec_ns_per_step", "absent") == (
        "absent" if hop_ns is None else hop_ns + 40 / 3 + 4.0)
    lines = frontend_lines([dict(fig, scenario="s", workload="w", policy="send",
                                 codec=codec, transport="ipc")])
    header, row = lines[1].split("  "), lines[-1].split()
    assert [h.strip() for h in header if h.strip()][-3:] == [
        "codec us all", "send - cached B", "send - cached % send control"]
    assert row[-3:] == [cell, "-", "-"]


@pytest.mark.parametrize("policy", ["send", "cached"])
def test_frontend_streams_with_drafts_through_finishes(policy):
    """With drafts a request's last step may accept ids past its stop; the scheduler
    keeps them up to the stop, and so must EngineCoreOutputs (vLLM cuts the new ids at
    the stop): outputs of 16-200 tokens over 300 steps at K = 4, P = 1 finish requests
    mid-draft."""
    import msgspec

    case = steady_case(4, policy=policy, max_steps=300, frontend=True)
    case.scheduler = msgspec.structs.replace(case.scheduler, num_spec_tokens=4)
    case.model = msgspec.structs.replace(case.model, spec_acceptance=1.0)
    r = run_case(case)
    finished = [q for q in r.requests if q["finish_reason"] == "length"]
    assert finished  # the case passed its frontend oracle with requests that finished
    streams = r.frontend_expected_streams
    assert all(streams[q["req_id"]][0] == q["num_output_tokens"] for q in finished)


@pytest.mark.parametrize("first,line", [
    ([KEEPALIVE], "frontend: no EngineCoreOutputs within 1.5 s (raise --startup-timeout)"),
    ([KEEPALIVE, "data", KEEPALIVE],
     "frontend: no EngineCoreOutputs within 0.3 s (raise --peer-timeout)"),
], ids=["keepalive-before-the-first-step", "after-the-first-step"])
def test_the_frontend_waits_the_startup_timeout_until_its_first_outputs(first, line, capsys):
    """A keep-alive (a timed replay idle before its first arrival) does not end the
    start-up allowance; the first EngineCoreOutputs does. The line names the option."""
    import time

    import zmq

    from ipc_bench.harness.frontend_loop import EXIT_SCHEDULER_GONE, serve
    from ipc_bench.wire.transport import POLL_SLICE_MS

    ctx = zmq.Context()
    push, pull, back = ctx.socket(zmq.PUSH), ctx.socket(zmq.PULL), ctx.socket(zmq.PUSH)
    try:
        for sock in (pull, back):  # the slices open_socket gives its sockets
            sock.setsockopt(zmq.RCVTIMEO, POLL_SLICE_MS)
            sock.setsockopt(zmq.SNDTIMEO, POLL_SLICE_MS)
        pull.bind("inproc://out")
        push.connect("inproc://out")
        back.bind("inproc://back")
        for frame in first:
            push.send(msgspec.msgpack.encode(_known()) if frame == "data" else frame)
        t0 = time.monotonic()
        code = serve(pull, back, FrontendState(), 0.3, 1.5, lambda: None)
        elapsed = time.monotonic() - t0
    finally:
        for sock in (push, pull, back):
            sock.close(linger=0)
        ctx.term()
    assert (code, capsys.readouterr().err.splitlines()) == (EXIT_SCHEDULER_GONE, [line])
    assert elapsed > (1.4 if first == [KEEPALIVE] else 0.25)
