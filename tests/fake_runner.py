"""The real runner with one injected fault, for the reliability tests.

``python fake_runner.py CTL_ENDPOINT``; ``FAKE_RUNNER_MODE`` picks the fault and
``FAKE_RUNNER_STEP`` the step (default 3) it happens at:

- ``wrong-version``: answers the handshake with ``Ready`` of protocol version 99;
- ``silent``: connects and never answers the handshake;
- ``exit``: writes a line to stderr and exits with code 7 at the step;
- ``hang``: stops answering at the step (sleeps);
- ``garbage``: replies with bytes that are no ModelRunnerOutput at the step;
- ``missing-row``: replies with a valid ModelRunnerOutput that lacks every request;
- ``bad-type``: replies with a ModelRunnerOutput whose token ids are strings (pickle
  codec only: msgpack could not carry it);
- ``exit-on-check``: exits with code 7 when the scheduler first asks for its input
  digests (``CheckInputs``), between two steps;
- ``exit-in-floor``: writes a line to stderr and exits with code 7 once it has read
  the floor's frame of that number (0: the floor's first), before it answers it;
- ``slow-floor``: decoding each recorded reply for the floor takes ``FAKE_RUNNER_DELAY_S``
  more (default 0.04 s), as decoding a very long run's replies does;
- ``slow-report``: digesting each output for a ``--tp`` rank's report takes
  ``FAKE_RUNNER_DELAY_S`` more, and the model's columns (the report's last piece
  before the digest) ``FAKE_RUNNER_COLUMNS_DELAY_S`` more (default 0);
- ``slow-heap-report``: the runner's heap report (``IPC_BENCH_HEAP_REPORT`` set), one
  call, takes ``FAKE_RUNNER_DELAY_S`` more;
- ``slow-warmup-collect``: the runner's collection at the end of warm-up
  (``EndWarmup``) takes ``FAKE_RUNNER_DELAY_S`` more.
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ipc_bench.wire import control  # noqa: E402

from ipc_bench.harness import runner_loop  # noqa: E402
from fault_helpers import SlowDecode  # noqa: E402  (this folder: sys.path[0])

MODE = os.environ["FAKE_RUNNER_MODE"]
STEP = int(os.environ.get("FAKE_RUNNER_STEP", "3"))
DELAY_S = float(os.environ.get("FAKE_RUNNER_DELAY_S", "0.04"))


def _slow_down_the_preparations() -> None:
    """``slow-floor``, ``slow-report``, ``slow-heap-report`` and
    ``slow-warmup-collect``: the runner's work before ``FloorReady``, its report or
    ``WarmupEnded``, made slow (per step, or in one call)."""
    if MODE == "slow-floor":
        from ipc_bench.harness import floor

        real_codec = floor.model_runner_output_codec
        floor.model_runner_output_codec = lambda name: SlowDecode(real_codec(name),
                                                                  DELAY_S)
    if MODE == "slow-report":
        from ipc_bench.wire import tp

        real_digest = tp.frame_digest

        def frame_digest(frame):
            time.sleep(DELAY_S)
            return real_digest(frame)

        tp.frame_digest = frame_digest
        columns_delay_s = float(os.environ.get("FAKE_RUNNER_COLUMNS_DELAY_S", "0"))
        real_columns = runner_loop.model_step_columns

        def model_step_columns(model):
            time.sleep(columns_delay_s)
            return real_columns(model)

        runner_loop.model_step_columns = model_step_columns
    if MODE == "slow-warmup-collect":
        import gc

        class SlowCollect:  # the gc module as runner_loop sees it, collect slower
            def __getattr__(self, name):
                return getattr(gc, name)

            def collect(self, *args):
                time.sleep(DELAY_S)
                return gc.collect(*args)

        runner_loop.gc = SlowCollect()
    if MODE == "slow-heap-report":
        real_report = runner_loop.HeapReport.report

        def report(self, title):
            time.sleep(DELAY_S)
            return real_report(self, title)

        runner_loop.HeapReport.report = report


def main() -> int:
    if MODE == "silent":
        import zmq

        sock = zmq.Context().socket(zmq.PAIR)
        sock.connect(sys.argv[1])
        time.sleep(600)
        return 0
    if MODE == "wrong-version":
        runner_loop.Ready = lambda version, pid, *rest: control.Ready(99, pid, *rest)
    calls = {"n": 0}
    execute = runner_loop.TimedModelRunner.execute

    def faulty_execute(self, so, *a, **kw):
        n = calls["n"]
        calls["n"] += 1
        out = execute(self, so, *a, **kw)
        if n != STEP:
            return out
        if MODE == "exit":
            print(f"fake runner: exiting at step {n}", file=sys.stderr, flush=True)
            os._exit(7)
        if MODE == "hang":
            time.sleep(600)
        build = self.runner.messages.model_runner_output  # the codec's message class
        if MODE == "missing-row":
            return build([], {}, [])
        if MODE == "bad-type":
            return build(out.req_ids, out.req_id_to_index,
                         [[str(t) for t in ids] for ids in out.sampled_token_ids])
        return out

    runner_loop.TimedModelRunner.execute = faulty_execute
    if MODE == "exit-on-check":
        def take(self):
            print("fake runner: exiting on CheckInputs", file=sys.stderr, flush=True)
            os._exit(7)

        runner_loop.RunnerInputLog.take = take
    if MODE == "garbage":
        real = runner_loop.session_codecs

        def session_codecs(name, side, *args):
            encode, decode = real(name, side, *args)
            count = {"n": 0}

            def bad_encode(msg):
                count["n"] += 1
                return b"\xc1 not a ModelRunnerOutput" if count["n"] == STEP + 1 else encode(msg)

            return bad_encode, decode

        runner_loop.session_codecs = session_codecs
    if MODE == "exit-in-floor":
        real_answer = runner_loop.answer_floor

        def answer_floor(channel, *args, **kwargs):
            recv = channel.recv

            def recv_then_exit(i, *a, **kw):
                frame = recv(i, *a, **kw)
                if i == STEP:
                    print(f"fake runner: exiting at floor frame {i}", file=sys.stderr,
                          flush=True)
                    os._exit(7)
                return frame

            channel.recv = recv_then_exit
            return real_answer(channel, *args, **kwargs)

        runner_loop.answer_floor = answer_floor
    _slow_down_the_preparations()
    return runner_loop.runner_main(sys.argv[1])


if __name__ == "__main__":
    sys.exit(main())
