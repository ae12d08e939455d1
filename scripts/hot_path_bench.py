#!/usr/bin/env python3
"""pyperf benchmarks of the per-step hot path outside the loops: encode and decode of a
pure-decode ``SchedulerOutput`` and ``ModelRunnerOutput``, and one round trip through
the channel (scheduler send -> runner recv -> runner reply -> scheduler recv over
``ipc://``, both ends in this process), at 1 and 256 running requests, ``send`` policy.

    python scripts/hot_path_bench.py -o hot.json            # pyperf options apply
    python -m pyperf compare_to old.json hot.json --table   # two versions side by side

The messages come from the engine itself: a steady-decode workload stepped 60 times in
one process, the last step's messages kept.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyperf  # noqa: E402
import zmq  # noqa: E402

from ipc_bench.engine.config import ModelConfig, SchedulerConfig  # noqa: E402
from ipc_bench.engine.model_runner import ModelRunner  # noqa: E402
from ipc_bench.engine.scheduler import Scheduler  # noqa: E402
from ipc_bench.engine.workloads import SteadyDecodeWorkload  # noqa: E402
from ipc_bench.wire.channel import RunnerChannel, SchedulerChannel  # noqa: E402
from ipc_bench.wire.codecs import (CODECS, model_runner_output_codec,  # noqa: E402
                                   scheduler_output_codec)
from ipc_bench.wire.transport import EndpointDir, RunnerSockets, SchedulerSockets  # noqa: E402

BATCH_SIZES = (1, 256)
STEPS = 60


def decode_messages(num_running: int):
    """(SchedulerOutput, ModelRunnerOutput) of the last of ``STEPS`` steady-decode steps."""
    cfg = SchedulerConfig(max_num_seqs=num_running, max_model_len=2048, num_blocks=65536)
    sched = Scheduler(cfg, "send")
    runner = ModelRunner(cfg, ModelConfig(), "send")
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


def round_trip(frame: bytes, reply: bytes):
    """A pyperf time function: ``loops`` round trips of ``frame`` / ``reply``."""
    def run(loops: int) -> float:
        d = EndpointDir()
        ctx = zmq.Context()
        ss = SchedulerSockets(ctx, "ipc", d)
        rs = RunnerSockets(ctx, ss.endpoints.ctl)
        rs.connect_data(ss.endpoints.s2r, ss.endpoints.r2s)
        sched = SchedulerChannel(ss, 10.0, lambda: None)
        runner = RunnerChannel(rs, 10.0, lambda: None)
        try:
            for seq in range(10):  # connect and warm up
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
            ss.close()
            rs.close()
            ctx.term()
            d.cleanup()
    return run


def main() -> None:
    bench = pyperf.Runner()
    for b in BATCH_SIZES:
        so, out = decode_messages(b)
        for codec in CODECS:
            s_codec, r_codec = scheduler_output_codec(codec), model_runner_output_codec(codec)
            frame, reply = s_codec.encode(so), r_codec.encode(out)
            bench.bench_func(f"encode SchedulerOutput {codec} B={b}", s_codec.encode, so)
            bench.bench_func(f"decode SchedulerOutput {codec} B={b}", s_codec.decode, frame)
            bench.bench_func(f"encode ModelRunnerOutput {codec} B={b}", r_codec.encode, out)
            bench.bench_func(f"decode ModelRunnerOutput {codec} B={b}", r_codec.decode, reply)
        frame = scheduler_output_codec("msgpack").encode(so)
        reply = model_runner_output_codec("msgpack").encode(out)
        bench.bench_time_func(f"channel round trip msgpack B={b}", round_trip(frame, reply))


if __name__ == "__main__":
    main()
