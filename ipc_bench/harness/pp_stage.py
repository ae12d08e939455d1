"""One pipeline stage's process loop (``--pp N``; ``runner_loop.runner_main`` hands over
here once the handshake's ``RunnerConfig`` has ``pp_size`` set).

Each step, in the order of the scheduler's broadcast (``wire.tp``'s SUB end):
decode the ``SchedulerOutput``; ``update_states``; under ``direct`` on a non-last
stage, receive the last stage's sampled ids of earlier steps until every scheduled
row holds the tokens it reads (``engine.pipeline.PipelineStage.needs_ids``);
``prepare_inputs``; the stages after the first receive their hidden states from the
stage before (``wire.pp.StageLink``: step 0's within the start-up allowance, the later
ones within the peer timeout); the stage's share
of the step (``PipelineStage.forward``: the null model's hash, the fixed-step model's
wait, the torch model's layers); a non-last stage hands its hidden states to ``isend``
and goes on to its next micro-batch; the last stage samples, writes its samples into its buffer, under ``direct`` sends them to
the other stages, and replies to the scheduler. Every stage digests the ids it fed
(``oracle.RunnerInputLog``): the input oracle checks every stage.

Columns: the runner's (``spec.RUNNER_COLUMNS``: idle is the wait for the broadcast,
``runner_forward_ns`` the hidden-state receive, compute and send or sample) plus
``wire.pp.PP_COLUMNS``. On ``Stop`` a non-last stage under ``direct`` first receives
the ids still on their way, and every stage waits for its sends, so the group ends
with nothing in flight.
"""

from __future__ import annotations

import sys
import time
import traceback
from typing import Callable, Optional

from ipc_bench.engine.model_runner import RunnerError
from ipc_bench.engine.pipeline import PipelineStage
from ipc_bench.engine.scheduler import ProtocolError, SchedulerError
from ipc_bench.harness.recording import GcCounter
from ipc_bench.harness.runner_loop import (EXIT_OK, EXIT_SCHEDULER_GONE, EXIT_STEP_FAILED,
                                           RunnerLoop, _no_record, peer_line,
                                           runner_main, say)
from ipc_bench.wire.codecs import DecodeError, messages_of
from ipc_bench.wire.control import Stop
from ipc_bench.wire.handshake import RunnerConfig, first_step_wait_s
from ipc_bench.wire.pp import StageLink, StageLinkError
from ipc_bench.wire.tp import TpRunnerChannel
from ipc_bench.wire.transport import PeerError, RunnerSockets


def make_stage(config: RunnerConfig,
               peer_problem: Optional[Callable[[], Optional[str]]] = None) -> PipelineStage:
    """The stage of ``config`` with its ``link`` to the other stages (joins the gloo
    group: returns once every stage has joined, or raises once the start-up allowance,
    ``startup_timeout_s``, ran out: the stages' rendezvous is a one-time cost, as the
    handshake is, and a stage may reach it seconds after the others on a loaded
    machine). Step 0's receives from the other stages wait
    ``handshake.first_step_wait_s``, the later ones and every send ``peer_timeout_s``
    (``wire.pp``'s docstring: how gloo's one group timeout is kept to the rendezvous).
    ``peer_problem``: the check of the control connection that a
    stage started by hand makes while it joins the scheduler's store
    (``wire.pp.StageLink``: ``transport.PeerError`` once the scheduler went away)."""
    stage = PipelineStage(config.scheduler, config.model, config.pp_size, config.pp_rank,
                          config.pp_direct, messages_of(config.codec))
    device = stage.model.torch_device.type if stage.torch else "cpu"
    stage.link = StageLink(config.pp_store, config.pp_rank, config.pp_size,
                           config.peer_timeout_s, device, first_step_wait_s(config),
                           peer_problem=peer_problem,
                           startup_timeout_s=config.startup_timeout_s)
    return stage


class StageLoop(RunnerLoop):
    """``RunnerLoop`` of one stage (module docstring)."""

    def __init__(self, config: RunnerConfig, channel, stage: PipelineStage):
        super().__init__(config, channel, stage.runner)
        self.stage = stage
        self.link: StageLink = stage.link
        self.columns.update(self.link.columns)

    def _act(self, msg, bare: bool = False) -> bool:
        if isinstance(msg, Stop):
            self.drain()
        return super()._act(msg, bare)

    def drain(self) -> None:
        """Receive the direct ids still to come, then wait for every send."""
        stage, link = self.stage, self.link
        while stage.awaiting:
            seq, n = stage.expected_ids()
            stage.apply_ids(link.recv_ids(n, seq))
        link.finish()

    def take_ids(self, so) -> None:
        """Receive the last stage's ids, oldest step first, until ``so`` can run."""
        stage, link = self.stage, self.link
        while stage.needs_ids(so):
            seq, n = stage.expected_ids()
            stage.apply_ids(link.recv_ids(n, seq))

    def _record(self, t1, t2, t3, t4, t5, t6, t7, t8, t9, gcs, gc_ns) -> None:
        """One step's columns: decode, update (with the direct ids' wait), prepare,
        forward (hidden states in, compute, hidden states out or sampling), write-back
        (with the direct send), build, encode, send; its collections and their time."""
        st, cols = self.stepper, self.columns
        st._rec_update(t3 - t2)
        st._rec_prepare(t4 - t3)
        st._rec_forward(t5 - t4)
        st._rec_writeback(t6 - t5)
        st._rec_build(t7 - t6)
        st._rec_forward_start(t4 - st.t_origin)
        cols["runner_decode_ns"].append(t2 - t1)
        cols["runner_encode_ns"].append(t8 - t7)
        cols["runner_send_ns"].append(t9 - t8)
        cols["runner_gc_collections"].append(gcs)
        cols["runner_gc_ns"].append(gc_ns)

    def run(self) -> None:
        """The measured loop (module docstring), every part timed into ``columns``."""
        recv, reply = self.channel.recv, self.channel.reply
        decode, encode = self.decode, self.encode
        stage, link = self.stage, self.link
        runner = stage.runner
        first, last, direct = stage.first, stage.last, stage.direct
        perf = time.perf_counter_ns
        gc_counter = GcCounter()
        cols = self.columns
        rec_idle, rec_t0 = cols["runner_idle_ns"].append, cols["runner_t0_ns"].append
        keep_reply = self.out_frames.append
        record_inputs = self.input_log.record if self.config.check_inputs else _no_record
        rows = runner.input_batch.req_id_to_index
        release, window = link.release_hidden, stage.pp_size
        t_origin = perf()
        try:
            while True:
                t0 = perf()
                frame = recv(self.seq)
                t1 = perf()
                if not frame:
                    if self._control():
                        return
                    continue
                rec_t0(t0 - t_origin)
                rec_idle(t1 - t0)
                gc0, gc_ns0 = gc_counter.count, gc_counter.ns
                so = decode(frame)
                t2 = perf()
                stage.update(so)
                if direct and not last:
                    self.take_ids(so)
                t3 = perf()
                inputs = runner.prepare_inputs(so)
                t4 = perf()
                hidden = None if first else link.recv_hidden(
                    *stage.hidden_spec(len(inputs.input_ids)), self.seq)
                forward = stage.forward(hidden, inputs)
                if not last:
                    link.send_hidden(forward, self.seq)
                    t5 = t6 = t7 = perf()
                    out_frame = b""
                else:
                    sampled = forward
                    t5 = perf()
                    valid = runner.write_back(inputs, sampled)
                    if direct:
                        link.send_ids(stage.ids_in_schedule_order(so, valid), self.seq)
                    t6 = perf()
                    out = runner.build_output(inputs, valid)
                    t7 = perf()
                    out_frame = encode(out)
                t8 = perf()
                if last:
                    reply(out_frame, self.seq)
                t9 = perf()
                self._record(t1, t2, t3, t4, t5, t6, t7, t8, t9, gc_counter.count - gc0,
                             gc_counter.ns - gc_ns0)
                keep_reply(out_frame)
                record_inputs(self.seq, so.num_scheduled_tokens, rows, inputs)
                if not last:  # outside the step's times: sends the next stage has
                    release(self.seq - window)
                self.seq += 1
        finally:
            gc_counter.close()


def serve_stage(config: RunnerConfig, socks: RunnerSockets, stage: PipelineStage,
                peer_problem: Callable[[], Optional[str]]) -> int:
    """Run stage ``config.pp_rank`` until ``Stop``; returns the exit code (as
    ``runner_loop._serve``: a failed step, a receive between stages that failed or
    timed out included, is reported to the scheduler first)."""
    channel = TpRunnerChannel(socks, config.peer_timeout_s, peer_problem, rank=config.pp_rank,
                              replies=stage.last, first_timeout_s=first_step_wait_s(config))
    loop = StageLoop(config, channel, stage)
    try:
        loop.run()
        return EXIT_OK
    except PeerError as exc:
        say(peer_line(exc, loop.seq))
        return EXIT_SCHEDULER_GONE
    except StageLinkError as exc:
        loop.report_error(str(exc))
        return EXIT_STEP_FAILED
    except (RunnerError, ProtocolError, DecodeError, SchedulerError) as exc:
        loop.report_error(f"{type(exc).__name__}: {exc}")
        return EXIT_STEP_FAILED
    except Exception as exc:  # a bug: report, then fail
        traceback.print_exc(file=sys.stderr)
        loop.report_error(f"{type(exc).__name__} while handling {loop.handling}: {exc}")
        return EXIT_STEP_FAILED
    finally:
        stage.link.close()


#: How the scheduler starts a stage (its control endpoint is appended).
STAGE_COMMAND = (sys.executable, "-m", "ipc_bench.harness.pp_stage")


def main(argv=None) -> int:
    """``python -m ipc_bench.harness.pp_stage CTL_ENDPOINT``: one stage's process."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m ipc_bench.harness.pp_stage CTL_ENDPOINT", file=sys.stderr)
        return 2
    return runner_main(argv[0], make_runner=make_stage, serve=serve_stage)


if __name__ == "__main__":
    sys.exit(main())
