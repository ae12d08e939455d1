"""The channel object (``ipc_bench.wire.channel``) and the loops written against it.

- Over ZeroMQ: two frames in flight in order, the window enforced, waits that name
  the step they wait for.
- The real scheduler loop, floor and stop driving two real runner loops (threads)
  through a stub one-to-two channel with a window of two: every rank computes every
  step bitwise alike, one replies, and the tokens equal a two-process run's.
"""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest
import zmq

from fault_helpers import steady_case
from stub_channel import StubBroadcast
from ipc_bench.engine.model_runner import ModelRunner
from ipc_bench.harness.runner_loop import RunnerLoop
from ipc_bench.harness.scheduler_loop import ChannelExchange
from ipc_bench.harness.spec import CaseResult
from ipc_bench.harness.supervisor import run_case, run_phases
from ipc_bench.wire.channel import ChannelError, RunnerChannel, SchedulerChannel
from ipc_bench.wire.control import KeepAlive, Stop
from ipc_bench.wire.codecs import messages_of
from ipc_bench.wire.handshake import RunnerConfig
from ipc_bench.wire.transport import (EndpointDir, PeerError, PeerTimeout, RunnerSockets,
                                      SchedulerSockets)


@pytest.fixture
def zmq_pair():
    """A scheduler channel (window 2) and a runner channel connected over ipc://."""
    d = EndpointDir()
    ctx = zmq.Context()
    ss = SchedulerSockets(ctx, "ipc", d)
    rs = RunnerSockets(ctx, ss.endpoints.ctl)
    rs.connect_data(ss.endpoints.s2r, ss.endpoints.r2s)
    problem = {"text": None}
    sched = SchedulerChannel(ss, 2.0, lambda: problem["text"], window=2)
    runner = RunnerChannel(rs, 2.0, lambda: None)
    yield sched, runner, problem
    ss.close()
    rs.close()
    ctx.term()
    d.cleanup()


def test_two_frames_in_flight_arrive_and_are_answered_in_order(zmq_pair):
    sched, runner, _ = zmq_pair
    sched.send(b"step-0", 0)
    sched.send(b"step-1", 1)
    assert sched.in_flight == 2
    with pytest.raises(ChannelError, match=r"^SchedulerOutput for step 2: 2 frames already "
                                           r"in flight \(window 2\)$"):
        sched.send(b"step-2", 2)
    assert [runner.recv(0), runner.recv(1)] == [b"step-0", b"step-1"]
    runner.reply(b"out-0", 0)
    runner.reply(b"out-1", 1)
    assert [sched.recv(0), sched.recv(1)] == [b"out-0", b"out-1"]
    assert sched.in_flight == 0


def test_control_messages_and_markers_travel_apart_from_data(zmq_pair):
    sched, runner, _ = zmq_pair
    sched.send_marker()
    sched.send_control(KeepAlive())
    assert runner.recv(0) == b""
    assert runner.recv_control() == KeepAlive()
    runner.send_control(Stop())
    assert sched.recv_control("a stop") == Stop()


def test_waits_name_the_step_and_the_peer(zmq_pair):
    sched, _, problem = zmq_pair
    with pytest.raises(PeerTimeout, match=r"^no ModelRunnerOutput for step 7 within 0.3 s$"):
        sched.recv(7, timeout_s=0.3)
    problem["text"] = "runner process 12 was killed by SIGKILL"
    with pytest.raises(PeerError, match=r"^runner process 12 was killed by SIGKILL, "
                                        r"noticed while waiting for floor reply 3$"):
        sched.recv(3, label="floor reply")


def _runner_threads(bus: StubBroadcast, spec):
    """One real ``RunnerLoop`` per rank, each with its own ``ModelRunner``, in threads."""
    config = RunnerConfig(scheduler=spec.scheduler, model=spec.model, policy=spec.policy,
                          codec=spec.codec, warmup_steps=spec.warmup_steps,
                          peer_timeout_s=30.0, s2r_endpoint="stub", r2s_endpoint="stub")
    loops = [RunnerLoop(config, bus.runner_end(rank),
                        ModelRunner(spec.scheduler, spec.model, spec.policy,
                                    messages_of(spec.codec)))
             for rank in range(bus.num_readers)]

    def serve(loop):
        try:
            loop.run()
        except Exception as exc:  # surfaces as the scheduler's peer problem
            bus.errors.append(f"rank {loop.channel.rank}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=serve, args=(loop,), daemon=True) for loop in loops]
    for t in threads:
        t.start()
    return loops, threads


@pytest.mark.parametrize("policy,codec", [("send", "msgpack"), ("cached", "pickle")])
def test_loops_through_a_one_to_two_channel_with_a_window_of_two(policy, codec):
    spec = replace(steady_case(8, policy=policy, codec=codec, max_steps=120), floor=True)
    bus = StubBroadcast(num_readers=2, reply_rank=1, window=2)
    loops, threads = _runner_threads(bus, spec)
    result = CaseResult(spec=spec)
    run_phases(spec, ChannelExchange(spec, bus.scheduler_end(), result), result)
    for t in threads:
        t.join(timeout=30)
    assert bus.errors == [] and not any(t.is_alive() for t in threads)

    # Every rank computed every step and the floor alike; rank 1 replied.
    steps = len(result.sched_rows)
    assert steps == 120 and len(result.floor_step_ns) == 120 - spec.warmup_steps
    assert bus.replies_of[0] == bus.replies_of[1]
    assert len(bus.replies_of[0]) == steps + len(result.floor_step_ns)
    assert result.r2s_frames == bus.replies_of[1][spec.warmup_steps:steps]
    assert {len(v) for v in result.runner_columns.values()} == {steps}
    assert [loop.seq for loop in loops] == [steps, steps]

    # The same tokens as the same case over two processes.
    reference = run_case(replace(spec, floor=False))
    assert result.token_digest == reference.token_digest
    assert len(result.requests) == len(reference.requests) > 0
