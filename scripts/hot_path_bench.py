#!/usr/bin/env python3
"""pyperf benchmarks of the per-step hot path outside the loops: encode and decode of a
pure-decode ``SchedulerOutput`` and ``ModelRunnerOutput``, and one round trip through
the channel (scheduler send -> runner recv -> runner reply -> scheduler recv, both ends
in this process over ``inproc://``), at 1 and 256 running requests, ``send`` policy.

The input oracle and the schedule digest (``ipc_bench.harness.oracle``), at 1, 64 and
256 running requests, ``cached`` policy:

- ``oracle runner record B=N``: the runner's addition per step (its input digest, kept
  in its log; ``RunnerInputLog.record``);
- ``oracle scheduler expect B=N``: the scheduler's addition per step (the expected
  digest from ``all_token_ids``; ``InputOracle.expect`` without its periodic check);
- ``schedule digest repeat B=N`` / ``schedule digest new B=N``: ``ScheduleDigest.add``
  of a step that scheduled the same batch as the step before (most pure-decode steps)
  / another batch;
- ``oracle check round trip``: one check over the channel (``CheckInputs`` ->
  ``InputDigests`` of ``CHECK_INTERVAL_STEPS`` steps), made once per that many steps.

``scripts/oracle_cost.py`` measures whole single-process steps with all of it off and
on, side by side.

    python scripts/hot_path_bench.py -o hot.json            # pyperf options apply
    python scripts/hot_path_bench.py --only "round trip"    # a subset, by name
    python scripts/hot_path_bench.py --only "oracle,schedule"   # the oracle's figures
    python scripts/hot_path_bench.py --list                 # the benchmarks' names
    python -m pyperf compare_to old.json hot.json --table   # two versions side by side

The messages come from the engine itself: a steady-decode workload stepped 60 times in
one process, the last step's messages kept, built as each codec's messages (the msgspec
Structs for msgpack, vLLM's dataclasses for pickle and packed: ``ipc_bench.wire.codecs``).
"""

from __future__ import annotations

import signal

if __name__ == "__main__":
    # As bench.py: the signals of ipc_bench.harness.signals.HANDLED, spelt out
    # (tests/cli/test_script_first_mask.py compares), stay pending until pyperf_staged
    # has installed its handlers (ipc_bench.harness.signals), so none lands in an
    # import; a pyperf worker lets them through again before its benchmark
    # (pyperf_staged).
    signal.pthread_sigmask(signal.SIG_BLOCK, (
        signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2,
        signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF, signal.SIGXCPU))

import argparse
import contextlib
import itertools
import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyperf  # noqa: E402
import zmq  # noqa: E402

from ipc_bench.cli.console import (interruptible, one_write, pyperf_staged,  # noqa: E402
                                   script_main, written_elsewhere)
from ipc_bench.cli.options import (append_problem, list_items, new_output_problem,  # noqa: E402
                                   output_problem, pyperf_option_words)
from ipc_bench.errors import one_line  # noqa: E402
from ipc_bench.engine.config import ModelConfig, SchedulerConfig  # noqa: E402
from ipc_bench.engine.model_runner import ModelRunner  # noqa: E402
from ipc_bench.engine.scheduler import Scheduler  # noqa: E402
from ipc_bench.engine.workloads import SteadyDecodeWorkload  # noqa: E402
from ipc_bench.harness.oracle import (CHECK_INTERVAL_STEPS, InputOracle,  # noqa: E402
                                     RunnerInputLog, ScheduleDigest)
from ipc_bench.harness.runner_loop import TimedModelRunner  # noqa: E402
from ipc_bench.harness.scheduler_loop import InProcessExchange  # noqa: E402
from ipc_bench.wire.channel import RunnerChannel, SchedulerChannel  # noqa: E402
from ipc_bench.wire.control import CheckInputs, InputDigests  # noqa: E402
from ipc_bench.wire.codecs import (CODECS, STATEFUL_CODECS, messages_of,  # noqa: E402
                                   model_runner_output_codec, scheduler_output_codec)
from ipc_bench.wire.transport import POLL_SLICE_MS  # noqa: E402

BATCH_SIZES = (1, 256)
ORACLE_BATCH_SIZES = (1, 64, 256)
STEPS = 60
#: ``--help``'s description (pyperf's Runner says ``Benchmark``).
DESCRIPTION = ("Microseconds of the per-step hot path outside the loops, timed with "
               "pyperf: encoding and decoding the step's messages, a channel round trip, "
               "the input oracle and the schedule digest.")
#: The codecs timed here: those without state across steps (slots and replicated keep
#: it, so a call cannot be repeated on one message: see scripts/variant_table.py).
PLAIN_CODECS = tuple(c for c in CODECS if c not in STATEFUL_CODECS)
#: The codec benchmarks' operations, as their names start.
CODEC_OPERATIONS = ("encode SchedulerOutput", "decode SchedulerOutput",
                    "encode ModelRunnerOutput", "decode ModelRunnerOutput")
#: The oracle's per-step pieces (``oracle_benchmarks``), as their names start.
ORACLE_PIECES = ("oracle runner record", "oracle scheduler expect", "schedule digest repeat",
                 "schedule digest new")
CHECK_NAME = f"oracle check round trip ({CHECK_INTERVAL_STEPS} digests)"


def codec_names(b: int, codec: str) -> list[str]:
    """The names of ``codec``'s benchmarks at ``B = b``, in ``CODEC_OPERATIONS`` order."""
    return [f"{op} {codec} B={b}" for op in CODEC_OPERATIONS]


def channel_name(b: int) -> str:
    return f"channel round trip msgpack B={b}"


def oracle_names(b: int) -> list[str]:
    """The names of the oracle's pieces at ``B = b``, in ``ORACLE_PIECES`` order."""
    return [f"{piece} B={b}" for piece in ORACLE_PIECES]


def _print_names() -> None:
    """``--list``: the benchmark names, one a line, in one write (``one_write``)."""
    with one_write():
        print("\n".join(benchmark_names()))


def benchmark_names() -> list[str]:
    """Every benchmark's name, in the order they run."""
    names = []
    for b in BATCH_SIZES:
        for codec in PLAIN_CODECS:
            names += codec_names(b, codec)
        names.append(channel_name(b))
    for b in ORACLE_BATCH_SIZES:
        names += oracle_names(b)
    return names + [CHECK_NAME]


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


@contextlib.contextmanager
def inproc_channels():
    """A ``SchedulerChannel`` and a ``RunnerChannel`` joined over inproc:// sockets
    (10 s timeouts), closed with their context on exit."""
    ctx = zmq.Context()
    socks = _InprocSockets(ctx)
    try:
        yield (SchedulerChannel(socks.scheduler, 10.0, lambda: None),
               RunnerChannel(socks.runner, 10.0, lambda: None))
    finally:
        socks.close()
        ctx.term()


def round_trip(frame: bytes, reply: bytes):
    """A pyperf time function: ``loops`` round trips of ``frame`` / ``reply``, each
    as the loops make it (scheduler send, runner recv, runner reply, scheduler recv)."""
    def run(loops: int) -> float:
        with inproc_channels() as (sched, runner):
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
    return run


class SteadyEngine:
    """Scheduler and runner of a steady-decode workload (``B`` running, ``cached``) in
    one process, stepped as the single-process case steps them; ``oracle``: also feed
    the schedule digest and the input oracle after each step, as the loop does."""

    def __init__(self, num_running: int, oracle: bool):
        cfg = SchedulerConfig(max_num_seqs=num_running, max_model_len=4096,
                              num_blocks=num_running * 256 + 256)
        self.sched = Scheduler(cfg, "cached")
        self.stepper = TimedModelRunner(ModelRunner(cfg, ModelConfig(), "cached"))
        self.link = InProcessExchange(self.stepper)
        self.workload = SteadyDecodeWorkload(num_running, seed=0, vocab_size=128_256)
        self.oracle = InputOracle(self.sched.requests, self.link) if oracle else None
        self.schedule = ScheduleDigest()
        self.seq = 0

    def step(self):
        """One step; returns its plan and ModelRunnerOutput."""
        sched = self.sched
        for r in self.workload.arrivals(sched.step):
            sched.add_request(r.req_id, r.index, r.prompt_token_ids, r.max_tokens)
        plan = sched.schedule()
        so = sched.build_scheduler_output(plan)
        out, *_ = self.link.exchange(so, self.seq)
        finished = sched.update_from_output(plan, out)
        if self.oracle is not None:
            self.schedule.add(plan)
            self.oracle.expect(self.seq, plan, so)
        if finished:
            self.workload.on_finished(len(finished), plan.step)
        self.seq += 1
        return plan, so


def _batched(call, reset, every: int = CHECK_INTERVAL_STEPS):
    """A pyperf time function: ``call()`` ``loops`` times, ``reset()`` after every
    ``every`` calls (as the check empties the logs), all timed."""
    def run(loops: int) -> float:
        t0 = pyperf.perf_counter()
        for i in range(loops):
            call()
            if i % every == every - 1:
                reset()
        return pyperf.perf_counter() - t0
    return run


def oracle_benchmarks(b: int):
    """(name, pyperf time function) of the oracle's per-step pieces at ``B = b``."""
    engine = SteadyEngine(b, oracle=False)
    for _ in range(STEPS):
        plan, so = engine.step()
    inputs = engine.stepper.last_inputs
    rows = engine.stepper.runner.input_batch.req_id_to_index
    log = RunnerInputLog()
    expecting = InputOracle(engine.sched.requests, object(), interval=1 << 62)
    schedule = ScheduleDigest()
    seq = engine.seq - 1
    reversed_plan = types.SimpleNamespace(  # the same batch in the other order
        scheduled_reqs=plan.scheduled_reqs[::-1],
        num_scheduled_tokens=dict(reversed(plan.num_scheduled_tokens.items())),
        total_num_scheduled_tokens=plan.total_num_scheduled_tokens)
    plans = itertools.cycle([plan, reversed_plan])
    return list(zip(oracle_names(b), [
        _batched(lambda: log.record(seq, so.num_scheduled_tokens, rows, inputs), log.take),
        _batched(lambda: expecting.expect(seq, plan), expecting.pending.clear),
        _batched(lambda: schedule.add(plan), lambda: None),
        _batched(lambda: schedule.add(next(plans)), lambda: None),
    ]))


def check_round_trip():
    """A pyperf time function: ``loops`` input checks over the channel, as the loops
    make them (scheduler: marker + ``CheckInputs``; runner: read them, answer
    ``InputDigests`` of ``CHECK_INTERVAL_STEPS`` steps; scheduler: read it)."""
    digests = InputDigests(first_seq=0, digests=[2**64 - 1 - i for i in
                                                 range(CHECK_INTERVAL_STEPS)])

    def run(loops: int) -> float:
        with inproc_channels() as (sched, runner):
            t0 = pyperf.perf_counter()
            for seq in range(loops):
                sched.send_marker()
                sched.send_control(CheckInputs())
                runner.recv(seq)
                runner.recv_control()
                runner.send_control(digests)
                sched.recv_control("input digests")
            return pyperf.perf_counter() - t0
    return run


def _only(text: str) -> str:
    """``--only``: comma-separated texts, none empty (``list_items``; an empty
    ``--only`` is refused: leave it out to run every benchmark), each in the name of
    at least one benchmark (``benchmark_names``); kept as given, a worker gets it
    again."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty: give texts, or leave --only out")
    if text:
        names = benchmark_names()
        unmatched = [t for t in list_items(text, "texts") if not any(t in n for n in names)]
        if unmatched:
            shown = ", ".join(repr(t) for t in unmatched)
            raise argparse.ArgumentTypeError(
                f"{shown} {'is' if len(unmatched) == 1 else 'are'} in no benchmark's name "
                "(the names: python scripts/hot_path_bench.py --list)")
    return text


def _error(message: str):
    """Bad input: one line on stderr (``hot_path_bench.py: error: ...``), exit 2."""
    print(one_line(f"hot_path_bench.py: error: {message}"), file=sys.stderr)
    raise SystemExit(2)


def main() -> int:
    def worker_args(cmd, args):
        if args.only is not None:
            cmd.extend(["--only", args.only])

    bench = pyperf.Runner(add_cmdline_args=worker_args)
    bench.argparser.error = _error
    bench.argparser.description = DESCRIPTION
    pyperf_option_words(bench.argparser)  # -p 0, --min-time nan: the run's words
    bench.argparser.add_argument("--only", type=_only, metavar="TEXT[,TEXT...]",
                                 help="run only the benchmarks whose name contains one of "
                                      "the TEXTs (each must be in some name: see --list)")
    bench.argparser.add_argument("--list", action="store_true",
                                 help="print the benchmarks' names, one a line, and exit")
    # checked before bench.parse_args, whose own checks (-o PATH that exists) print on
    # stdout and exit 1; pyperf writes its -o/--append file only after every benchmark
    args = bench.argparser.parse_args()
    if not args.worker:
        for flag, path in (("-o", args.output), ("--append", args.append)):
            # pyperf reads an --append file that exists before it adds the results
            why = path is not None and flag == "--append" and append_problem(path)
            if why:
                _error(f"argument {flag}: {why}")
            why = path is not None and output_problem(path)  # cannot write PATH: ...
            if why:
                _error(f"argument {flag}: {why}")
            why = path is not None and flag == "-o" and new_output_problem(path)
            if why:
                _error(f"argument {flag}: {why}")
            if path is not None and not args.list:  # stdout that fails says where they are
                written_elsewhere(f"the results are in {path}")
    args = bench.parse_args()
    if args.list:
        return interruptible("hot_path_bench.py",
                             _print_names)
    texts = [""] if args.only is None else args.only.split(",")

    class Only:  # ``name in only``: one of the texts is in the name
        def __contains__(self, name: str) -> bool:
            return any(t in name for t in texts)

    return pyperf_staged("hot_path_bench.py", args, lambda: run_benchmarks(bench, Only()))


def run_benchmarks(bench: pyperf.Runner, only) -> None:
    """Each benchmark whose name is ``in only``, in ``benchmark_names`` order."""
    for b in BATCH_SIZES:
        for codec in PLAIN_CODECS:
            if not any(name in only for name in codec_names(b, codec)):
                continue
            so, out = decode_messages(b, codec)
            s_codec, r_codec = scheduler_output_codec(codec), model_runner_output_codec(codec)
            frame, reply = s_codec.encode(so), r_codec.encode(out)
            for name, fn, arg in zip(codec_names(b, codec),
                                     (s_codec.encode, s_codec.decode, r_codec.encode,
                                      r_codec.decode), (so, frame, out, reply)):
                if name in only:
                    bench.bench_func(name, fn, arg)
        name = channel_name(b)
        if name in only:
            so, out = decode_messages(b, "msgpack")
            frame = scheduler_output_codec("msgpack").encode(so)
            reply = model_runner_output_codec("msgpack").encode(out)
            bench.bench_time_func(name, round_trip(frame, reply))
    for b in ORACLE_BATCH_SIZES:
        if any(name in only for name in oracle_names(b)):
            for name, fn in oracle_benchmarks(b):
                if name in only:
                    bench.bench_time_func(name, fn)
    if CHECK_NAME in only:
        bench.bench_time_func(CHECK_NAME, check_round_trip())


if __name__ == "__main__":
    sys.exit(script_main("hot_path_bench.py", main, "pyperf's results",
                         "the -o or --append file"))
