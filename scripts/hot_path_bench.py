#!/usr/bin/env python3
"""pyperf benchmarks of the per-step hot path outside the loops: encode and decode of a
pure-decode ``SchedulerOutput`` and ``ModelRunnerOutput``, and one round trip through
the channel (scheduler send -> runner recv -> runner reply -> scheduler recv, both ends
in this process over ``inproc://``), at 1 and 256 running requests, ``send`` policy.

    python scripts/hot_path_bench.py -o hot.json            # pyperf options apply
    python scripts/hot_path_bench.py --only "round trip"    # a subset, by name
    python -m pyperf compare_to old.json hot.json --table   # two versions side by side

The messages come from the engine itself: a steady-decode workload stepped 60 times in
one process, the last step's messages kept, built as each codec's messages (the msgspec
Structs for msgpack, vLLM's dataclasses for pickle: ``ipc_bench.wire.codecs``).
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyperf  # noqa: E402
import zmq  # noqa: E402

from ipc_bench.engine.config import ModelConfig, SchedulerConfig  # noqa: E402
from ipc_bench.engine.model_runner import ModelRunner  # noqa: E402
from ipc_bench.engine.scheduler import Scheduler  # noqa: E402
from ipc_bench.engine.workloads import SteadyDecodeWorkload  # noqa: E402
from ipc_bench.wire.channel import RunnerChannel, SchedulerChannel  # noqa: E402
from ipc_bench.wire.codecs import (CODECS, messages_of,  # noqa: E402
                                   model_runner_output_codec, scheduler_output_codec)
from ipc_bench.wire.transport import POLL_SLICE_MS  # noqa: E402

BATCH_SIZES = (1, 256)
STEPS = 60


def decode_messages(num_running: int, codec: str = "msgpack"):
    """(SchedulerOutput, ModelRunnerOutput) of the last of ``STEPS`` steady-decode steps,
    as ``codec``'s message classes."""
    cfg = SchedulerConfig(max_num_seqs=num_running, max_model_len=2048, num_blocks=65536)
    sched = Scheduler(cfg, "send", messages_of(codec))
    runner = ModelRunner(cfg, ModelConfig(), "send", messages_of(codec))
    workload = SteadyDecodeWorkload(num_running, seed=0, vocab_size=128_256,
                                    prompt_len_range=(100, 300),
                                    output_len_range=(1000, 1500))
    for _ in range(STEPS):
        for r in workload.arrivals(sched.step):
            sched.add_request(r.req_id, r.index, r.prompt_token_ids, r.max_tokens)
        plan = sched.schedule()
        so = sched.build_scheduler_output(plan)
        out = runner.execute_model(so)
        sched.update_from_output(plan, out)
    return so, out


class _InprocSockets:
    """The three sockets of each side over ``inproc://`` (no I/O thread, so the round
    trip measures the channel's own calls rather than the wake-up of another thread),
    configured as ``transport`` configures its sockets."""

    def __init__(self, ctx: zmq.Context):
        self.scheduler = types.SimpleNamespace()
        self.runner = types.SimpleNamespace()
        for name, bind_type, connect_type, bound, connected in (
                ("s2r", zmq.PUSH, zmq.PULL, self.scheduler, self.runner),
                ("r2s", zmq.PULL, zmq.PUSH, self.scheduler, self.runner),
                ("ctl", zmq.PAIR, zmq.PAIR, self.scheduler, self.runner)):
            a, b = ctx.socket(bind_type), ctx.socket(connect_type)
            for sock in (a, b):
                sock.setsockopt(zmq.LINGER, 0)
                sock.setsockopt(zmq.RCVTIMEO, POLL_SLICE_MS)
                sock.setsockopt(zmq.SNDTIMEO, POLL_SLICE_MS)
            a.bind(f"inproc://{name}")
            b.connect(f"inproc://{name}")
            setattr(bound, name, a)
            setattr(connected, name, b)

    def close(self) -> None:
        for side in (self.scheduler, self.runner):
            for sock in vars(side).values():
                sock.close(linger=0)


def round_trip(frame: bytes, reply: bytes):
    """A pyperf time function: ``loops`` round trips of ``frame`` / ``reply``, each
    as the loops make it (scheduler send, runner recv, runner reply, scheduler recv)."""
    def run(loops: int) -> float:
        ctx = zmq.Context()
        socks = _InprocSockets(ctx)
        sched = SchedulerChannel(socks.scheduler, 10.0, lambda: None)
        runner = RunnerChannel(socks.runner, 10.0, lambda: None)
        try:
            for seq in range(10):  # warm up
                sched.send(frame, seq)
                runner.recv(seq)
                runner.reply(reply, seq)
                sched.recv(seq)
            t0 = pyperf.perf_counter()
            for seq in range(loops):
                sched.send(frame, seq)
                runner.recv(seq)
                runner.reply(reply, seq)
                sched.recv(seq)
            return pyperf.perf_counter() - t0
        finally:
            socks.close()
            ctx.term()
    return run


def main() -> None:
    bench = pyperf.Runner(add_cmdline_args=lambda cmd, args: cmd.extend(["--only", args.only]))
    bench.argparser.add_argument("--only", default="", metavar="TEXT",
                                 help="run only the benchmarks whose name contains TEXT")
    only = bench.parse_args().only
    for b in BATCH_SIZES:
        for codec in CODECS:
            so, out = decode_messages(b, codec)
            s_codec, r_codec = scheduler_output_codec(codec), model_runner_output_codec(codec)
            frame, reply = s_codec.encode(so), r_codec.encode(out)
            for name, fn, arg in (
                    (f"encode SchedulerOutput {codec} B={b}", s_codec.encode, so),
                    (f"decode SchedulerOutput {codec} B={b}", s_codec.decode, frame),
                    (f"encode ModelRunnerOutput {codec} B={b}", r_codec.encode, out),
                    (f"decode ModelRunnerOutput {codec} B={b}", r_codec.decode, reply)):
                if only in name:
                    bench.bench_func(name, fn, arg)
        name = f"channel round trip msgpack B={b}"
        if only in name:
            so, out = decode_messages(b, "msgpack")
            frame = scheduler_output_codec("msgpack").encode(so)
            reply = model_runner_output_codec("msgpack").encode(out)
            bench.bench_time_func(name, round_trip(frame, reply))

if __name__ == "__main__":
    main()
