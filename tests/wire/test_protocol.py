"""Protocol safety: the handshake, undecodable and inconsistent messages in both
directions, and property-based tests of every decoder.

- A hand-driven scheduler (the test binds the sockets and speaks the protocol by hand)
  against a real ``python -m ipc_bench.harness``;
- a real scheduler (``run_case``) against a fake runner with one injected fault
  (``tests/fake_runner.py``);
- ``ModelRunner`` and ``Scheduler`` fed structurally valid but inconsistent messages;
- hypothesis: random, truncated and mutated frames to each decoder; each either
  decodes to a valid message or raises the harness's own error (``DecodeError``,
  ``PeerError``, ``ConfigError``). Pickle is fuzzed in a child process with an address
  space limit: a corrupted pickle can ask for unbounded memory.
"""

from __future__ import annotations

import os
import pickle
import re
import resource
import subprocess
import sys
import textwrap
import time

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fault_helpers import FAKE_RUNNER, REPO, alive, steady_case, wait_dead
from ipc_bench.harness.spec import CaseResult
from ipc_bench.wire.codecs import DecodeError, MsgpackCodec, messages_of, scheduler_output_codec
from ipc_bench.engine.config import ConfigError, ModelConfig, SchedulerConfig
from ipc_bench.wire.handshake import RunnerConfig, decode_runner_config, encode_config
from ipc_bench.engine.messages import (
    CachedRequestData,
    ModelRunnerOutput,
    NewRequestData,
    SamplingParams,
    SchedulerOutput,
)
from ipc_bench.wire.control import (
    PROTOCOL_VERSION,
    BeginFloor,
    ErrorReport,
    Handshake,
    KeepAlive,
    Ready,
    RunnerReport,
    Stop,
)
from ipc_bench.engine.model_runner import ModelRunner
from ipc_bench.harness.spec import CaseError
from ipc_bench.harness.supervisor import RunnerProcess, run_case
from ipc_bench.engine.scheduler import ProtocolError, Scheduler
from ipc_bench.wire.transport import (
    EndpointDir,
    PeerError,
    SchedulerSockets,
    recv_frame,
    send_frame,
)
from ipc_bench.wire.control import decode_control, recv_control, send_control

import zmq

SCHED = SchedulerConfig(max_num_seqs=4, max_model_len=64, block_size=16, num_blocks=32)


def _messages(policy: str = "send", steps: int = 6, codec: str = "msgpack"):
    """Real (SchedulerOutput, ModelRunnerOutput) pairs of a short run, as ``codec``'s
    message classes."""
    sched = Scheduler(SCHED, policy, messages_of(codec))
    for i in range(3):
        sched.add_request(f"r{i}", i, list(range(100 + i, 120 + 3 * i)), 5)
    runner = ModelRunner(SCHED, ModelConfig(), policy, messages_of(codec))
    pairs = []
    for _ in range(steps):
        plan = sched.schedule()
        so = sched.build_scheduler_output(plan)
        out = runner.execute_model(so)
        sched.update_from_output(plan, out)
        pairs.append((so, out))
    return pairs


# ======================================================================================
# A hand-driven scheduler against the real runner


class HandScheduler:
    """Binds the three sockets and starts ``python -m ipc_bench.harness`` on them."""

    def __init__(self, transport: str = "ipc"):
        self.dir = EndpointDir()
        self.ctx = zmq.Context()
        self.socks = SchedulerSockets(self.ctx, transport, self.dir)
        self.stderr = os.path.join(self.dir.path, "runner.stderr")
        self.runner = RunnerProcess(self.socks.endpoints.ctl, self.stderr)
        self.proc = self.runner.proc

    def problem(self):
        return self.runner.exit_description()

    def config(self, **kw) -> RunnerConfig:
        args = dict(scheduler=SCHED, model=ModelConfig(), policy="send", codec="msgpack",
                    warmup_steps=0, peer_timeout_s=10.0, s2r_endpoint=self.socks.endpoints.s2r,
                    r2s_endpoint=self.socks.endpoints.r2s)
        args.update(kw)
        return RunnerConfig(**args)

    def handshake(self, version: int = PROTOCOL_VERSION, config: bytes | None = None):
        cfg = encode_config(self.config()) if config is None else config
        send_control(self.socks.ctl, Handshake(version, cfg), 30.0, self.problem)
        return recv_control(self.socks.ctl, 60.0, self.problem, "handshake reply")

    def send_data(self, frame: bytes) -> None:
        send_frame(self.socks.s2r, frame, 10.0, self.problem, "frame")

    def recv_error(self) -> ErrorReport:
        """The runner's error: an empty frame on r2s, then the report on ctl."""
        assert recv_frame(self.socks.r2s, 30.0, self.problem, "marker") == b""
        return recv_control(self.socks.ctl, 30.0, self.problem, "error report")

    def exit_code(self) -> int:
        return self.proc.wait(timeout=30)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)
        self.socks.close()
        self.ctx.term()
        self.dir.cleanup()


@pytest.fixture
def hand():
    h = HandScheduler()
    yield h
    h.close()


def test_runner_refuses_another_protocol_version(hand):
    assert hand.handshake(version=99) == ErrorReport(
        f"protocol version mismatch: scheduler speaks 99, runner speaks {PROTOCOL_VERSION}")
    assert hand.exit_code() == 3


@pytest.mark.parametrize("kind", ["garbage", "invalid", "unknown-field"])
def test_runner_refuses_a_bad_config(hand, kind):
    if kind == "garbage":
        data = b"\x93\x01\x02"
    elif kind == "invalid":
        data = encode_config(hand.config(scheduler=SchedulerConfig(max_num_seqs=0)))
    else:
        data = msgspec.msgpack.encode({**msgspec.to_builtins(hand.config()), "evil": 1})
    with pytest.raises(ConfigError) as expected:
        decode_runner_config(data)
    assert hand.handshake(config=data) == ErrorReport(str(expected.value))
    assert hand.exit_code() == 3


def test_runner_refuses_pickle_over_tcp_unless_allowed():
    h = HandScheduler(transport="tcp")
    try:
        cfg = h.config(codec="pickle")
        assert h.handshake(config=msgspec.msgpack.encode(msgspec.to_builtins(cfg))) == \
            ErrorReport("refusing to decode pickle from a TCP peer (pickle runs code on load and "
                        "any local user can connect to a TCP port); use --codecs msgpack, "
                        "--transport ipc, or pass --allow-pickle-over-tcp if every host that "
                        "can reach the port is trusted")
        assert h.exit_code() == 3
    finally:
        h.close()
    h = HandScheduler(transport="tcp")
    try:
        reply = h.handshake(config=encode_config(h.config(codec="pickle",
                                                          allow_pickle_over_tcp=True)))
        assert isinstance(reply, Ready)
    finally:
        h.close()


def test_runner_refuses_garbage_instead_of_a_handshake(hand):
    garbage = b"\xde\xad\xbe\xef"
    with pytest.raises(PeerError) as expected:
        decode_control(garbage, "handshake")
    send_frame(hand.socks.ctl, garbage, 10.0, hand.problem, "garbage")
    assert hand.exit_code() == 3
    with open(hand.stderr) as f:
        assert f.read().strip().splitlines()[-1] == f"runner: {expected.value}"


def test_runner_refuses_another_control_message_first(hand):
    send_control(hand.socks.ctl, Stop(), 10.0, hand.problem)
    assert recv_control(hand.socks.ctl, 30.0, hand.problem, "reply") == \
        ErrorReport("expected a handshake, got Stop")
    assert hand.exit_code() == 3


def test_runner_answers_ready_then_keepalive_then_stop(hand):
    ready = hand.handshake()
    assert ready == Ready(PROTOCOL_VERSION, hand.proc.pid, "cpu")
    for msg in (KeepAlive(), Stop()):
        hand.send_data(b"")
        send_control(hand.socks.ctl, msg, 10.0, hand.problem)
    report = recv_control(hand.socks.ctl, 30.0, hand.problem, "report")
    assert isinstance(report, RunnerReport) and set(report.columns["runner_idle_ns"]) == set()
    assert hand.exit_code() == 0


def _first_so() -> SchedulerOutput:
    return _messages(steps=1)[0][0]


@pytest.mark.parametrize("kind", ["truncated", "wrong-type", "random", "pickle-wrong-class"])
def test_runner_reports_an_undecodable_scheduler_output_with_its_step(hand, kind):
    codec_name = "pickle" if kind.startswith("pickle") else "msgpack"
    if codec_name == "pickle":
        assert hand.handshake(config=encode_config(hand.config(codec="pickle"))).pid
    else:
        assert hand.handshake().pid
    so = _first_so()
    good = MsgpackCodec(SchedulerOutput).encode(so)
    frame = {"truncated": good[: len(good) // 2],
             "wrong-type": MsgpackCodec(ModelRunnerOutput).encode(
                 ModelRunnerOutput(req_ids=[], req_id_to_index={}, sampled_token_ids=[])),
             "random": bytes(range(7, 250, 3)),
             "pickle-wrong-class": pickle.dumps(Stop(), protocol=5)}[kind]
    decoder = scheduler_output_codec(codec_name)
    with pytest.raises(DecodeError) as expected:
        decoder.decode(frame)
    hand.send_data(frame)
    assert hand.recv_error() == ErrorReport(f"DecodeError: {expected.value}", 0)
    assert hand.exit_code() == 4


def test_runner_reports_an_inconsistent_scheduler_output_with_its_step(hand):
    assert hand.handshake().pid
    pairs = _messages(steps=2)
    codec = MsgpackCodec(SchedulerOutput)
    hand.send_data(codec.encode(pairs[0][0]))
    assert recv_frame(hand.socks.r2s, 30.0, hand.problem, "reply")
    cached = pairs[1][0].scheduled_cached_reqs
    bad = msgspec.structs.replace(pairs[1][0], scheduled_cached_reqs=msgspec.structs.replace(
        cached, req_ids=["ghost"] + cached.req_ids[1:]))
    hand.send_data(codec.encode(bad))
    assert hand.recv_error() == ErrorReport(
        "ProtocolError: cached request ghost is unknown to the runner", 1)
    assert hand.exit_code() == 4


def test_runner_reports_any_other_exception_while_handling_a_step(hand):
    assert hand.handshake().pid
    so = _first_so()
    (rid, n), *rest = so.num_scheduled_tokens.items()
    counts = {rid: -n, **dict(rest)}  # negative count, sums kept consistent
    bad = msgspec.structs.replace(so, num_scheduled_tokens=counts,
                                  total_num_scheduled_tokens=sum(counts.values()))
    hand.send_data(MsgpackCodec(SchedulerOutput).encode(bad))
    err = hand.recv_error()
    assert err.step == 0
    assert err.message.startswith("ValueError while handling SchedulerOutput: "), err.message
    assert hand.exit_code() == 4


def _last_stderr_line(hand) -> str:
    with open(hand.stderr) as f:
        return f.read().strip().splitlines()[-1]


def test_runner_waits_the_startup_timeout_for_step_0_and_says_which_option_to_raise(hand):
    """Step 0 comes after 1 s, past the 0.3 s peer timeout: the runner still serves it
    (the first step is held to the start-up timeout), then gives up on step 1 after
    the peer timeout."""
    config = hand.config(peer_timeout_s=0.3, startup_timeout_s=20.0)
    assert hand.handshake(config=encode_config(config)).pid
    time.sleep(1.0)
    hand.send_data(MsgpackCodec(SchedulerOutput).encode(_first_so()))
    assert recv_frame(hand.socks.r2s, 30.0, hand.problem, "reply")
    assert hand.exit_code() == 5
    assert _last_stderr_line(hand) == (
        "runner: no SchedulerOutput for step 1 within 0.3 s (raise --peer-timeout)")


def test_runner_gives_up_on_step_0_after_the_startup_timeout(hand):
    config = hand.config(peer_timeout_s=0.3, startup_timeout_s=1.5)
    assert hand.handshake(config=encode_config(config)).pid
    t0 = time.monotonic()
    assert hand.exit_code() == 5
    assert time.monotonic() - t0 > 1.4
    assert _last_stderr_line(hand) == (
        "runner: no SchedulerOutput for step 0 within 1.5 s (raise --startup-timeout)")


def test_runner_reports_an_unexpected_control_message(hand):
    assert hand.handshake().pid
    hand.send_data(b"")
    send_control(hand.socks.ctl, Ready(1, 1, "x"), 10.0, hand.problem)
    assert hand.recv_error() == ErrorReport("ProtocolError: unexpected control message Ready", 0)
    assert hand.exit_code() == 4


def test_runner_refuses_a_floor_outside_the_steps_it_ran(hand):
    assert hand.handshake().pid
    hand.send_data(b"")
    send_control(hand.socks.ctl, BeginFloor(steps=[5]), 10.0, hand.problem)
    assert hand.recv_error() == ErrorReport(
        "ProtocolError: floor steps outside the 0 steps run", 0)
    assert hand.exit_code() == 4


# ======================================================================================
# The real scheduler against a fake runner


def _fake(monkeypatch, mode: str, step: int = 3) -> list[str]:
    """The fake runner's command (``run_case(runner_command=)``), faulting as ``mode``."""
    monkeypatch.setenv("FAKE_RUNNER_MODE", mode)
    monkeypatch.setenv("FAKE_RUNNER_STEP", str(step))
    return [sys.executable, str(FAKE_RUNNER)]


def test_scheduler_refuses_a_runner_of_another_protocol_version(monkeypatch):
    fake = _fake(monkeypatch, "wrong-version")
    result = CaseResult(spec=steady_case())
    with pytest.raises(CaseError) as err:
        run_case(result.spec, result=result, runner_command=fake)
    assert str(err.value) == (f"protocol version mismatch: runner speaks 99, scheduler speaks "
                              f"{PROTOCOL_VERSION}")
    assert result.sched_rows == []


def test_scheduler_reports_an_undecodable_reply_with_its_step(monkeypatch):
    fake = _fake(monkeypatch, "garbage", step=3)
    result = CaseResult(spec=steady_case())
    frame = b"\xc1 not a ModelRunnerOutput"
    with pytest.raises(DecodeError) as expected:
        MsgpackCodec(ModelRunnerOutput).decode(frame)
    with pytest.raises(CaseError) as err:
        run_case(result.spec, result=result, runner_command=fake)
    assert str(err.value) == (f"step 3: undecodable ModelRunnerOutput from the runner "
                              f"({len(frame)} bytes): {expected.value}")
    assert result.failed_step == 3 and len(result.sched_rows) == 3
    wait_dead(result.runner_pid)


def test_scheduler_reports_a_reply_that_contradicts_the_schedule(monkeypatch):
    fake = _fake(monkeypatch, "missing-row", step=3)
    result = CaseResult(spec=steady_case())
    with pytest.raises(CaseError) as err:
        run_case(result.spec, result=result, runner_command=fake)
    assert re.fullmatch(r"step 3: ModelRunnerOutput contradicts the schedule: step 3: "
                        r"ModelRunnerOutput has no row for cmpl-[0-9a-f]{32}-0", str(err.value)), \
        str(err.value)
    assert not alive(result.runner_pid)


def test_pickled_reply_with_wrong_field_types_ends_the_run_naming_the_step(monkeypatch):
    # pickle checks the class only: string token ids get through the codec; under send
    # the runner gets them back the next step and fails to write them to its buffer.
    fake = _fake(monkeypatch, "bad-type", step=3)
    result = CaseResult(spec=steady_case(codec="pickle", policy="send"))
    with pytest.raises(CaseError) as err:
        run_case(result.spec, result=result, runner_command=fake)
    assert re.fullmatch(r"runner failed at step 4 \(steps\.csv seq: warm-up and uncounted steps "
                        r"included\): TypeError while handling SchedulerOutput: .+",
                        str(err.value)), str(err.value)


# ======================================================================================
# Structurally valid, semantically wrong messages: ProtocolError, never a silent result


def _runner_after_first_step(policy="send"):
    pairs = _messages(policy, steps=2)
    runner = ModelRunner(SCHED, ModelConfig(), policy)
    runner.execute_model(pairs[0][0])
    return runner, pairs


def _replace_cached(so, **kw):
    return msgspec.structs.replace(so, scheduled_cached_reqs=msgspec.structs.replace(
        so.scheduled_cached_reqs, **kw))


def _new_req(**kw):
    args = dict(req_id="n1", prompt_token_ids=[1, 2, 3], sampling_params=SamplingParams(5),
                block_ids=([0],), num_computed_tokens=0)
    args.update(kw)
    return NewRequestData(**args)


SEMANTIC = {
    "unknown cached request": (
        lambda so: _replace_cached(so, req_ids=["ghost"] + so.scheduled_cached_reqs.req_ids[1:]),
        "cached request ghost is unknown to the runner"),
    "negative num_computed_tokens": (
        lambda so: _replace_cached(so, num_computed_tokens=[-3] * len(
            so.scheduled_cached_reqs.req_ids)),
        "cached request r0: num_computed_tokens -3 outside [0, max_model_len 64]"),
    "num_computed_tokens past max_model_len": (
        lambda so: _replace_cached(so, num_computed_tokens=[65] * len(
            so.scheduled_cached_reqs.req_ids)),
        "cached request r0: num_computed_tokens 65 outside [0, max_model_len 64]"),
    "block id out of range": (
        lambda so: _replace_cached(so, new_block_ids=[([32],)] * len(
            so.scheduled_cached_reqs.req_ids)),
        "request r0: block ids [32] outside [0, num_blocks 32) or more than 4 per request"),
    "negative block id": (
        lambda so: _replace_cached(so, new_block_ids=[([-1],)] * len(
            so.scheduled_cached_reqs.req_ids)),
        "request r0: block ids [-1] outside [0, num_blocks 32) or more than 4 per request"),
    "new_token_ids of the wrong length": (
        lambda so: _replace_cached(so, new_token_ids=[]),
        "new_token_ids has 0 entries for 3 cached requests under the send policy"),
    "new request already on the runner": (
        lambda so: msgspec.structs.replace(so, scheduled_new_reqs=[_new_req(req_id="r0")]),
        "new request r0 is already on the runner"),
    "prompt longer than max_model_len": (
        lambda so: msgspec.structs.replace(so, scheduled_new_reqs=[
            _new_req(prompt_token_ids=list(range(65)))]),
        "new request n1: prompt of 65 tokens outside [1, max_model_len 64]"),
    "empty prompt": (
        lambda so: msgspec.structs.replace(so, scheduled_new_reqs=[_new_req(prompt_token_ids=[])]),
        "new request n1: prompt of 0 tokens outside [1, max_model_len 64]"),
    "two KV-cache groups": (
        lambda so: msgspec.structs.replace(so, scheduled_new_reqs=[_new_req(block_ids=([0], [1]))]),
        "new request n1: 2 KV-cache groups, this runner has 1"),
    "too many blocks": (
        lambda so: msgspec.structs.replace(so, scheduled_new_reqs=[
            _new_req(block_ids=([0, 1, 2, 3, 4],))]),
        "request n1: block ids [0, 1, 2, 3, 4] outside [0, num_blocks 32) or more than 4 per "
        "request"),
    "new num_computed_tokens past its prompt": (
        lambda so: msgspec.structs.replace(so, scheduled_new_reqs=[_new_req(num_computed_tokens=3)]),
        "new request n1: num_computed_tokens 3 outside [0, 3)"),
    "scheduled request not in the batch": (
        lambda so: msgspec.structs.replace(so, num_scheduled_tokens={
            **so.num_scheduled_tokens, "ghost": 1}),
        "num_scheduled_tokens names 4 requests, the batch holds 3 (not in the batch: ghost)"),
    "total does not match": (
        lambda so: msgspec.structs.replace(so, total_num_scheduled_tokens=999),
        "num_scheduled_tokens sum to 3, total_num_scheduled_tokens says 999"),
    "scheduled past max_model_len": (
        lambda so: msgspec.structs.replace(
            so, num_scheduled_tokens={k: 60 for k in so.num_scheduled_tokens},
            total_num_scheduled_tokens=180),
        "num_scheduled_tokens runs past max_model_len 64: last position 83"),
}


@pytest.mark.parametrize("kind", list(SEMANTIC))
def test_runner_rejects_a_semantically_wrong_scheduler_output(kind):
    runner, pairs = _runner_after_first_step()
    mutate, message = SEMANTIC[kind]
    bad = MsgpackCodec(SchedulerOutput).decode(MsgpackCodec(SchedulerOutput).encode(
        mutate(pairs[1][0])))  # decodes fine: structurally valid
    with pytest.raises(ProtocolError) as err:
        runner.execute_model(bad)
    assert str(err.value) == message


@pytest.mark.parametrize("kind,mutate,message", [
    ("negative row", lambda o: msgspec.structs.replace(
        o, req_id_to_index={k: -1 for k in o.req_id_to_index}),
     "step 1: ModelRunnerOutput has no row for r0"),
    ("row past the end", lambda o: msgspec.structs.replace(
        o, req_id_to_index={k: 7 for k in o.req_id_to_index}),
     "step 1: ModelRunnerOutput has no row for r0"),
    ("two tokens", lambda o: msgspec.structs.replace(
        o, sampled_token_ids=[[1, 2]] * len(o.sampled_token_ids)),
     "step 1: 2 tokens sampled for r0, expected 1"),
])
def test_scheduler_rejects_a_semantically_wrong_runner_output(kind, mutate, message):
    sched = Scheduler(SCHED, "send")
    for i in range(3):
        sched.add_request(f"r{i}", i, list(range(100 + i, 120 + 3 * i)), 5)
    runner = ModelRunner(SCHED, ModelConfig(), "send")
    plan = sched.schedule()
    sched.update_from_output(plan, runner.execute_model(sched.build_scheduler_output(plan)))
    plan = sched.schedule()
    out = runner.execute_model(sched.build_scheduler_output(plan))
    with pytest.raises(ProtocolError) as err:
        sched.update_from_output(plan, mutate(out))
    assert str(err.value) == message


# ======================================================================================
# Property-based: every decoder, random / truncated / mutated frames

_PAIRS = _messages("send") + _messages("cached")
_FRAMES = {
    SchedulerOutput: [MsgpackCodec(SchedulerOutput).encode(so) for so, _ in _PAIRS],
    ModelRunnerOutput: [MsgpackCodec(ModelRunnerOutput).encode(o) for _, o in _PAIRS],
}
_CTL_ENCODER = msgspec.msgpack.Encoder()
_CTL_FRAMES = [_CTL_ENCODER.encode(m) for m in (
    Handshake(PROTOCOL_VERSION, b"cfg"), Ready(PROTOCOL_VERSION, 123, "cpu"),
    BeginFloor(steps=[1, 2, 3]), Stop(), KeepAlive(),
    RunnerReport(columns={"a": [1, 2]}), ErrorReport("boom", 3))]
_CONFIG_FRAMES = [encode_config(RunnerConfig(
    scheduler=SCHED, model=ModelConfig(), policy="send", codec="msgpack", warmup_steps=0,
    peer_timeout_s=1.0, s2r_endpoint="ipc:///x/s2r", r2s_endpoint="ipc:///x/r2s"))]


@st.composite
def _frames(draw, valid: list[bytes]):
    """Random bytes, or a valid frame truncated, or mutated (flips, inserts, deletes)."""
    kind = draw(st.sampled_from(["random", "truncated", "mutated", "valid"]))
    if kind == "random":
        return draw(st.binary(max_size=300))
    frame = bytearray(draw(st.sampled_from(valid)))
    if kind == "valid":
        return bytes(frame)
    if kind == "truncated":
        return bytes(frame[:draw(st.integers(0, len(frame) - 1))])
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "set", "insert", "delete"]))
        i = draw(st.integers(0, max(0, len(frame) - 1)))
        if op == "flip" and frame:
            frame[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "set" and frame:
            frame[i] = draw(st.integers(0, 255))
        elif op == "insert":
            frame[i:i] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete" and frame:
            del frame[i:i + draw(st.integers(1, 8))]
    return bytes(frame)


_FUZZ = settings(max_examples=400, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow])


def _valid(msg, msg_type) -> None:
    """A decoded message must survive a typed round trip (every field well typed)."""
    assert type(msg) is msg_type
    msgspec.msgpack.decode(msgspec.msgpack.encode(msg), type=msg_type)


@pytest.mark.parametrize("msg_type", [SchedulerOutput, ModelRunnerOutput],
                         ids=lambda t: t.__name__)
def test_msgpack_decoders_return_a_valid_message_or_decode_error(msg_type):
    codec = MsgpackCodec(msg_type)

    @_FUZZ
    @given(_frames(_FRAMES[msg_type]))
    def check(frame):
        try:
            msg = codec.decode(frame)
        except DecodeError as exc:
            assert "\n" not in str(exc)
            return
        _valid(msg, msg_type)

    check()


def test_control_decoder_returns_a_control_message_or_peer_error():
    types = (Handshake, Ready, BeginFloor, Stop, KeepAlive, RunnerReport, ErrorReport)

    @_FUZZ
    @given(_frames(_CTL_FRAMES))
    def check(frame):
        try:
            msg = decode_control(frame)
        except PeerError as exc:
            assert "\n" not in str(exc)
            return
        _valid(msg, type(msg))
        assert isinstance(msg, types)

    check()


def test_runner_config_decoder_returns_a_valid_config_or_config_error():
    @_FUZZ
    @given(_frames(_CONFIG_FRAMES))
    def check(frame):
        try:
            cfg = decode_runner_config(frame)
        except ConfigError as exc:
            assert "\n" not in str(exc)
            return
        _valid(cfg, RunnerConfig)
        cfg.validate()

    check()


_PICKLE_FUZZ = textwrap.dedent("""
    import sys
    sys.path[:0] = ["tests", "tests/wire"]
    from hypothesis import HealthCheck, given, settings
    from ipc_bench.wire.codecs import (DecodeError, model_runner_output_codec,
                                       scheduler_output_codec)
    import test_protocol as t
    outcomes = {}
    pairs = t._messages("send", codec="pickle") + t._messages("cached", codec="pickle")
    for make, idx in ((scheduler_output_codec, 0), (model_runner_output_codec, 1)):
        codec = make("pickle")
        msg_type = codec.msg_type
        valid = [codec.encode(pair[idx]) for pair in pairs]
        @settings(max_examples=int(sys.argv[1]), deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow])
        @given(t._frames(valid))
        def check(frame):
            try:
                msg = codec.decode(frame)
            except DecodeError:
                outcomes["error"] = outcomes.get("error", 0) + 1
                return
            assert type(msg) is msg_type, type(msg)
            outcomes["decoded"] = outcomes.get("decoded", 0) + 1
        check()
    print(outcomes)
""")


def test_pickle_decoders_return_the_message_class_or_decode_error():
    def limit():  # a fuzzed pickle can ask for any amount of memory: cap it
        resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))

    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", _PICKLE_FUZZ, "400"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300, preexec_fn=limit)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "'error'" in proc.stdout and "'decoded'" in proc.stdout
