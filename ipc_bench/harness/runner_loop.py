"""The runner process (``python -m ipc_bench.harness CTL_ENDPOINT`` runs ``runner_main``).

``runner_main`` answers the scheduler's handshake (protocol version and
``wire.handshake.RunnerConfig``), builds the ``engine.model_runner.ModelRunner``, then
serves steps through a ``wire.channel.RunnerChannel`` until ``Stop``:

- ``RunnerLoop.run``: receive -> decode -> execute (``TimedModelRunner``: update
  states, prepare inputs, forward + sample, write back, build output) -> encode ->
  reply, with each part timed per step into the columns of the ``RunnerReport``
  (``spec.RUNNER_COLUMNS``) and each reply kept for the floor; after the reply, the
  step's input digest goes into the input oracle's log (``oracle.RunnerInputLog``),
  which the scheduler reads with ``CheckInputs`` between steps;
- ``RunnerLoop.run_bare``: the same steps with nothing timed, kept or digested
  (``RunnerConfig.bare_loop``, the instrumentation-overhead twin).

Both share their control handling (``KeepAlive``, ``Stop``, the floor, and
``EndWarmup``: the runner collects and freezes its heap when the scheduler ends
warm-up, between two steps, and answers ``WarmupEnded`` with how long that took) and
error reporting; their hot bodies stay apart, since a branch per step to skip the
timing would itself be measured.

Faults: the runner exits when the scheduler dies (``PR_SET_PDEATHSIG`` and, as a
fallback that also covers a parent that died before ``prctl`` ran, a check every
100 ms of its waits that its parent is still the scheduler, whose pid comes in
``IPC_BENCH_SCHEDULER_PID``). It ignores SIGINT and SIGHUP: a Ctrl-C or a hung-up
terminal reaches the whole process group, and the scheduler decides how the run ends
and kills the runner. A step that fails sends an empty frame on r2s and an
``ErrorReport`` naming the step.
"""

from __future__ import annotations

import collections
import gc
import os
import sys
import time
import traceback
from array import array
from typing import Any, Callable, Optional

from ipc_bench.engine.config import (DEFAULT_VLLM_LAYOUT, ConfigError, ModelConfig,
                                     ModelMemoryError, SchedulerConfig, SteadyShape,
                                     check_model_memory)
from ipc_bench.harness.affinity import pin_from_env
from ipc_bench.engine.messages import ModelRunnerOutput, SchedulerOutput
from ipc_bench.engine.model_runner import ModelRunner, RunnerError
from ipc_bench.engine.models import model_info, model_step_columns
from ipc_bench.engine.scheduler import ProtocolError, SchedulerError
from ipc_bench.errors import fd_shortage_text, one_line, out_of_fds, zmq_context
from ipc_bench.harness.floor import answer_floor
from ipc_bench.harness.memory import HEAP_REPORT_OUT_ENV, HeapReport
from ipc_bench.harness.oracle import RunnerInputLog
from ipc_bench.harness.recording import GcCounter
from ipc_bench.harness.signals import child_of_scheduler
from ipc_bench.harness.spec import RUNNER_COLUMNS
from ipc_bench.wire.channel import RingRunnerChannel, RunnerChannel
from ipc_bench.wire.codecs import DecodeError, messages_of, session_codecs, session_end
from ipc_bench.wire.control import (
    PROTOCOL_VERSION,
    BeginFloor,
    CheckInputs,
    EndWarmup,
    ErrorReport,
    Handshake,
    Heartbeat,
    KeepAlive,
    Ready,
    RecheckInputs,
    RunnerReport,
    Stop,
    WarmupEnded,
    beating,
    recv_control,
    send_control,
)
from ipc_bench.wire.handshake import RunnerConfig, decode_runner_config, first_step_wait_s
from ipc_bench.wire.shm_ring import RingReader
from ipc_bench.wire.tp import connect_rank_data, rank_channel
from ipc_bench.wire.transport import (EndpointError, PeerError, PeerTimeout, RunnerSockets,
                                      destroy_context)

#: How long the runner waits for the handshake (imports and model load come after).
STARTUP_TIMEOUT_S = 120.0
#: How long the exiting runner keeps trying to deliver its last messages (a RunnerReport
#: of a long run is megabytes; with ZMQ_LINGER 0 the context would discard it unsent).
RUNNER_CLOSE_LINGER_MS = 5000
#: Timeout of the messages of a runner on its way out (error reports).
_REPORT_TIMEOUT_S = 5.0
#: Exit codes of ``runner_main``.
EXIT_OK, EXIT_USAGE, EXIT_HANDSHAKE, EXIT_STEP_FAILED, EXIT_SCHEDULER_GONE = 0, 2, 3, 4, 5
#: What starts each line the runner writes to stderr (``say``): the process that speaks.
#: ``runner`` for a runner the scheduler spawned (its stderr goes to a file in the
#: case's socket folder, and the scheduler's own lines quote its last line); a runner
#: started by hand (``bench.py runner``) speaks as that command (``speak_as``).
_speaker = "runner"


def speak_as(name: str) -> str:
    """Start every later stderr line of this runner process with ``name: ``; returns
    the name it replaces (to restore it)."""
    global _speaker
    before, _speaker = _speaker, name
    return before


def say(line: str) -> None:
    """Write ``line`` to stderr after the runner's name (``speak_as``)."""
    print(f"{_speaker}: {line}", file=sys.stderr)


def scheduler_gone(line: str) -> int:
    """Say ``line`` (``say``: the runner's name, no ``error:``, as every line of a
    scheduler that went away: ``bench.py runner: the scheduler at tcp://... closed the
    connection, noticed while ...``) and return ``EXIT_SCHEDULER_GONE`` (5)."""
    say(line)
    return EXIT_SCHEDULER_GONE


def _column(record: bool):
    """A per-step column: an ``array('q')`` (8 bytes a step, where a list held an
    8-byte pointer and, for most values, a 32-byte int object), or (``record`` false) a
    one-slot deque whose ``append`` costs the same C call but keeps nothing (long
    streamed runs)."""
    return array("q") if record else collections.deque(maxlen=1)


def _no_record(seq: int, num_scheduled_tokens: dict, rows: dict, inputs: Any) -> None:
    """``RunnerInputLog.record`` of a runner whose input oracle is off: nothing."""


class TimedModelRunner:
    """A ``ModelRunner`` whose phases are timed per step into ``columns``
    (``runner_update_ns`` .. ``runner_build_ns``, ns); shared by the runner process and
    the single-process baseline. ``last_inputs``: the last step's ``StepInputs`` (for
    the input oracle, read after the step). ``runner_forward_start_ns``: when each
    step's forward (``ModelRunner.sample``) began, ns since this object was built, so
    that the gap between one step's model execution and the next one's is
    ``forward_start[n + 1] - forward_start[n] - forward[n]``."""

    PHASES = ("runner_update_ns", "runner_prepare_ns", "runner_forward_ns",
              "runner_writeback_ns", "runner_build_ns")

    def __init__(self, runner: ModelRunner, record: bool = True):
        self.runner = runner
        self.columns: dict[str, Any] = {name: _column(record)
                                        for name in self.PHASES + ("runner_forward_start_ns",)}
        (self._rec_update, self._rec_prepare, self._rec_forward, self._rec_writeback,
         self._rec_build, self._rec_forward_start) = [
            self.columns[name].append for name in self.PHASES + ("runner_forward_start_ns",)]
        self.last_inputs = None
        self.t_origin = time.perf_counter_ns()

    def execute(self, so: SchedulerOutput, perf=time.perf_counter_ns) -> ModelRunnerOutput:
        runner = self.runner
        t0 = perf()
        runner.update_states(so)
        t1 = perf()
        inputs = runner.prepare_inputs(so)
        t2 = perf()
        sampled = runner.sample(inputs)
        t3 = perf()
        valid = runner.write_back(inputs, sampled)
        t4 = perf()
        out = runner.build_output(inputs, valid)
        t5 = perf()
        self.last_inputs = inputs
        self._rec_update(t1 - t0)
        self._rec_prepare(t2 - t1)
        self._rec_forward(t3 - t2)
        self._rec_writeback(t4 - t3)
        self._rec_build(t5 - t4)
        self._rec_forward_start(t2 - self.t_origin)
        return out

    def launch(self, so: SchedulerOutput, perf=time.perf_counter_ns):
        """The device-input path's first half (``ModelRunner.launch``): update states,
        prepare inputs, launch the forward (whose placeholder inputs are filled on the
        device) and the non-blocking copy of its ids. ``runner_forward_ns`` is then the
        time to launch it: the whole forward on CPU, where ops run as they are called;
        on CUDA the host's launch time (the device's time is ``gpu_busy_ns``)."""
        runner = self.runner
        t0 = perf()
        runner.update_states(so)
        t1 = perf()
        inputs = runner.prepare_inputs(so)
        t2 = perf()
        step = runner.launch_prepared(so, inputs)
        t3 = perf()
        self._rec_update(t1 - t0)
        self._rec_prepare(t2 - t1)
        self._rec_forward(t3 - t2)
        self._rec_forward_start(t2 - self.t_origin)
        return step

    def finish(self, step, perf=time.perf_counter_ns) -> ModelRunnerOutput:
        """The second half (``ModelRunner.finish``), timed as ``runner_writeback_ns``
        (it includes the wait for the copy's event) and ``runner_build_ns`` 0 (the
        output is built in the same call)."""
        t0 = perf()
        out = self.runner.finish(step)
        t1 = perf()
        self.last_inputs = step.inputs
        self._rec_writeback(t1 - t0)
        self._rec_build(0)
        return out


class RunnerLoop:
    """One runner's receive -> execute -> reply loop over ``channel``.

    ``config``: the handshake's ``RunnerConfig`` (codec, warm-up, whether to record);
    ``seq``: the step being served (error reports name it).
    """

    def __init__(self, config: RunnerConfig, channel: RunnerChannel, runner: ModelRunner):
        self.config = config
        self.channel = channel
        self.record = config.record_steps
        self.stepper = TimedModelRunner(runner, self.record)
        self.seq = 0
        #: the message being handled, for an error report (``_control`` sets it)
        self.handling = "SchedulerOutput"
        self.columns: dict[str, Any] = {name: _column(self.record) for name in RUNNER_COLUMNS}
        self.columns.update(self.stepper.columns)
        self.out_frames = [] if self.record else collections.deque(maxlen=1)
        self.input_log = RunnerInputLog()
        self.encode, self.decode = session_codecs(config.codec, "runner", config.scheduler,
                                                  config.policy)
        self.end = session_end(self.encode)  # a stateful codec's runner end, or None
        self.heap = HeapReport.from_env()
        if self.heap is not None:
            self.heap.start()

    def _end_warmup(self) -> int:
        """Collect and freeze the heap (as the scheduler does) when the scheduler ends
        warm-up (``EndWarmup``, between the frames of steps ``pause_seq - 1`` and
        ``pause_seq``, ``scheduler_loop.warmup_pause_seq``: ``warmup_steps - 1`` with
        2 or more warm-up steps; in the scheduler's pause, outside every step); the heap
        report's ``warm`` mark. Returns how long the collection and freeze took (ns)."""
        t0 = time.perf_counter_ns()
        gc.collect()
        gc.freeze()
        collect_ns = time.perf_counter_ns() - t0
        if self.heap is not None:
            self.heap.mark("warm")
        return collect_ns

    def _write_heap_report(self) -> None:
        """With ``IPC_BENCH_HEAP_REPORT`` set: the heap report (``end`` mark now), to
        the file the scheduler named in ``IPC_BENCH_HEAP_REPORT_OUT`` (it adds the text
        to the run folder)."""
        path = os.environ.get(HEAP_REPORT_OUT_ENV)
        if self.heap is None or not path:
            return
        self.heap.mark("end")
        with open(path, "w") as f:
            f.write(self.heap.report(f"runner (pid {os.getpid()})"))

    def _control(self, bare: bool = False) -> bool:
        """After the scheduler's empty frame: read and act on its control message.
        Returns True on ``Stop`` (the report is sent); ``PeerError`` for ``Goodbye``
        (``RunnerChannel.recv_control``: the scheduler's run ended after its marker);
        ``ProtocolError`` for a message this loop cannot act on. ``handling`` names the
        message while it is acted on (an error report says ``while handling
        BeginFloor``), and ``SchedulerOutput`` again after."""
        msg = self.channel.recv_control(f"control message before step {self.seq}")
        self.handling = type(msg).__name__
        done = self._act(msg, bare)
        self.handling = "SchedulerOutput"
        return done

    def _act(self, msg, bare: bool = False) -> bool:
        """Act on control message ``msg`` (``_control``'s part after the read)."""
        if isinstance(msg, KeepAlive):
            return False
        if isinstance(msg, EndWarmup):
            self.channel.send_control(WarmupEnded(self._end_warmup()))
            return False
        if isinstance(msg, Stop):
            # The scheduler waits for the report under its peer timeout, and each piece
            # grows with the step count: KeepAlive between them when one is due.
            beat = Heartbeat(lambda: self.channel.send_control(KeepAlive()),
                             self.config.peer_timeout_s).beat
            with beating(beat):  # a collection, then one call over the whole heap
                self._write_heap_report()
            columns = {}
            if self.record and not bare:
                for k, v in self.columns.items():
                    columns[k] = list(v) if not isinstance(v, array) else v.tolist()
                    if isinstance(v, array):  # the case is over: the packed copy goes
                        del v[:]
                    beat()
                # the model's own columns (CUDA events, ...)
                columns.update(model_step_columns(self.stepper.runner.model))
                beat()
                columns.update(getattr(self.end, "columns", {}))  # replicated: the replica
                rank = getattr(self.channel, "report_columns", None)  # --tp, --pp: digests
                if rank is not None:  # under the same quarter as the pieces above
                    columns.update(rank(columns, beat))
            elif not bare:
                columns = {k: [] for k in self.columns}
            self.channel.send_control(RunnerReport(columns=columns))
            return True
        if isinstance(msg, CheckInputs) and not bare:
            self.channel.send_control(self.input_log.take())
            return False
        if isinstance(msg, RecheckInputs) and not bare:
            self.channel.send_control(self.input_log.step_ids(msg.seq))
            return False
        if isinstance(msg, BeginFloor) and not bare:
            if not self.record:
                raise ProtocolError("floor requested but this runner keeps no replies "
                                    "(record_steps is off)")
            layout = self.config.scheduler.vllm_layout  # passed where not the default
            answer_floor(self.channel, self.config.codec, self.out_frames, msg.steps,
                         self.config.peer_timeout_s, msg.chunk_steps,
                         **({} if layout == DEFAULT_VLLM_LAYOUT else {"layout": layout}))
            return False
        raise ProtocolError(f"unexpected control message {type(msg).__name__}"
                            + (" (this runner records nothing: no floor)" if bare else ""))

    def run(self) -> None:
        """The measured loop: every part of every step timed into ``columns``."""
        recv, reply = self.channel.recv, self.channel.reply
        decode, encode, execute = self.decode, self.encode, self.stepper.execute
        perf = time.perf_counter_ns
        gc_counter = GcCounter()
        cols = self.columns
        rec_idle, rec_decode, rec_encode, rec_send, rec_gc, rec_gc_ns, rec_t0 = (
            cols[name].append for name in ("runner_idle_ns", "runner_decode_ns",
                                           "runner_encode_ns", "runner_send_ns",
                                           "runner_gc_collections", "runner_gc_ns",
                                           "runner_t0_ns"))
        keep_reply = self.out_frames.append
        record_inputs = self.input_log.record if self.config.check_inputs else _no_record
        stepper = self.stepper
        rows = self.stepper.runner.input_batch.req_id_to_index  # one dict, kept up to date
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
                out = execute(so)
                t7 = perf()
                frame = encode(out)
                t8 = perf()
                reply(frame, self.seq)
                t9 = perf()
                rec_decode(t2 - t1)
                rec_encode(t8 - t7)
                rec_send(t9 - t8)
                rec_gc(gc_counter.count - gc0)
                rec_gc_ns(gc_counter.ns - gc_ns0)
                keep_reply(frame)
                record_inputs(self.seq, so.num_scheduled_tokens, rows, stepper.last_inputs)
                self.seq += 1
        finally:
            gc_counter.close()

    def _completer(self, gc_counter: GcCounter) -> Callable[[tuple, int], None]:
        """``complete(pending, ahead)`` of ``run_pipelined``: finish a launched step
        (``TimedModelRunner.finish``), encode and send its reply, record its columns and
        its input digest (the ids the device fed, read back once its copy completed).
        ``pending``: ``(seq, SchedulerOutput, LaunchedStep, (gc count, gc ns) at
        launch)``;
        ``ahead``: 1 if its successor was launched first."""
        cols = self.columns
        rec_encode, rec_send, rec_gc, rec_gc_ns = (cols[name].append for name in (
            "runner_encode_ns", "runner_send_ns", "runner_gc_collections", "runner_gc_ns"))
        rec_lookahead = cols.setdefault("runner_lookahead", _column(self.record)).append
        finish, encode, reply = self.stepper.finish, self.encode, self.channel.reply
        keep_reply = self.out_frames.append
        record_inputs = self.input_log.record if self.config.check_inputs else _no_record
        perf = time.perf_counter_ns

        def complete(pending: tuple, ahead: int) -> None:
            seq, so, step, gc0 = pending
            next_seq, self.seq = self.seq, seq  # an error names this step
            rec_lookahead(ahead)
            out = finish(step)
            t7 = perf()
            frame = encode(out)
            t8 = perf()
            reply(frame, seq)
            t9 = perf()
            rec_encode(t8 - t7)
            rec_send(t9 - t8)
            rec_gc(gc_counter.count - gc0[0])
            rec_gc_ns(gc_counter.ns - gc0[1])
            keep_reply(frame)
            record_inputs(seq, so.num_scheduled_tokens, step.rows, step.inputs)
            self.seq = next_seq

        return complete

    def run_pipelined(self) -> None:
        """``run`` on the device-input path (``RunnerConfig.device_inputs``), as vLLM's
        worker with async scheduling (PR #23569: ``execute_model`` returns an
        ``AsyncModelRunnerOutput``; the worker goes on to the next step while the
        output's copy completes): after launching step n it reads step n + 1's frame
        if one is already queued (``channel.poll``) and launches step n + 1 before it
        finishes step n (``_completer``). With no frame queued, or a control frame, it
        finishes step n first, so it never holds a reply back for a frame that will not
        come. One step is pending at most. Columns as ``run``'s, in step order
        (``runner_idle_ns`` of a looked-ahead step is the poll's), plus
        ``runner_lookahead``: 1 for a step whose successor was launched first, else 0."""
        recv, poll = self.channel.recv, self.channel.poll
        decode, launch = self.decode, self.stepper.launch
        perf = time.perf_counter_ns
        gc_counter = GcCounter()
        complete = self._completer(gc_counter)
        rec_idle, rec_decode, rec_t0 = (self.columns[name].append for name in (
            "runner_idle_ns", "runner_decode_ns", "runner_t0_ns"))
        pending = None  # (seq, so, LaunchedStep, (gc count, gc ns) at launch)
        t_origin = perf()
        try:
            while True:
                t0 = perf()
                if pending is None:
                    frame = recv(self.seq)
                else:
                    frame = poll()
                    if frame is None:  # nothing queued: finish step n, then wait
                        complete(pending, 0)
                        pending = None
                        continue
                t1 = perf()
                if not frame:
                    if pending is not None:
                        complete(pending, 0)
                        pending = None
                    if self._control():
                        return
                    continue
                rec_t0(t0 - t_origin)
                rec_idle(t1 - t0)
                gc0 = gc_counter.count, gc_counter.ns
                so = decode(frame)
                t2 = perf()
                rec_decode(t2 - t1)
                launched = (self.seq, so, launch(so), gc0)
                self.seq += 1
                if pending is not None:
                    complete(pending, 1)
                pending = launched
        finally:
            gc_counter.close()

    def run_bare(self) -> None:
        """``run`` with nothing timed or kept per step (instrumentation off)."""
        recv, reply = self.channel.recv, self.channel.reply
        decode, encode = self.decode, self.encode
        execute = self.stepper.runner.execute_model
        while True:
            frame = recv(self.seq)
            if not frame:
                if self._control(bare=True):
                    return
                continue
            reply(encode(execute(decode(frame))), self.seq)
            self.seq += 1

    def report_error(self, message: str) -> None:
        """Tell the scheduler that step ``seq`` failed: an empty frame on r2s (it is
        waiting there), then the ``ErrorReport`` on the control socket."""
        message = one_line(message)
        say(f"step {self.seq}: {message}")
        try:
            self.channel.send_marker(_REPORT_TIMEOUT_S)
            self.channel.send_control(ErrorReport(message, self.seq), _REPORT_TIMEOUT_S)
        except PeerError as exc:  # nobody to tell: the exit code and stderr remain
            say(f"could not report the error: {exc}")


# ======================================================================================
# The process


def _model_runner(config: RunnerConfig) -> ModelRunner:
    return ModelRunner(config.scheduler, config.model, config.policy, messages_of(config.codec),
                       device_inputs=config.device_inputs,
                       async_scheduling=config.async_scheduling)


def _accept_handshake(socks: RunnerSockets, peer_problem: Callable[[], Optional[str]],
                      make_runner: Callable[[RunnerConfig], Any] = _model_runner
                      ) -> tuple[RunnerConfig, ModelRunner, Optional[RingReader]] | int:
    """Receive the handshake and ``accept_handshake`` it."""
    try:
        hs = recv_control(socks.ctl, STARTUP_TIMEOUT_S, peer_problem, "handshake")
    except PeerError as exc:
        say(str(exc))
        return EXIT_HANDSHAKE
    return accept_handshake(socks, hs, peer_problem, make_runner=make_runner)


def memory_refusal(exc: ModelMemoryError, config: RunnerConfig) -> ModelMemoryError:
    """The refusal of a model whose weights + KV cache do not fit this runner's device
    (``exc``, from building it), with what the scheduler knows of the run's workload
    (``config.blocks_needed``, ``needed_by``, ``need_words``, ``running_sized``,
    ``steady_shape``): ``workload_memory_refusal`` of ``config``'s limits and model."""
    return workload_memory_refusal(exc, config.scheduler, config.model,
                                   blocks_needed=config.blocks_needed,
                                   needed_by=config.needed_by, need_words=config.need_words,
                                   running_sized=config.running_sized,
                                   steady_shape=config.steady_shape)


def workload_memory_refusal(exc: ModelMemoryError, scheduler: SchedulerConfig,
                            model: ModelConfig, blocks_needed: Optional[int] = None,
                            needed_by: Optional[str] = None, need_words: Optional[str] = None,
                            running_sized: bool = False,
                            steady_shape: Optional[SteadyShape] = None) -> ModelMemoryError:
    """``exc`` (a model of ``model`` under ``scheduler`` that did not fit, refused as it
    was built: a runner's, or the single-process case's in the scheduler process) with
    what the scheduler knows of the run's workload (``RunnerConfig``'s and
    ``CaseSpec.runner_need``'s fields of these names): ``check_model_memory`` again,
    with the device and memory measured there (``exc.device``, ``device_memory_bytes``,
    ``device_label``), so that its advice names the least ``--num-blocks`` as the
    scheduler's check before the run does (``give --num-blocks from 261 (...) to 57,038,
    ...``), and where no ``--num-blocks`` fits, the most ``--num-running`` that runs with
    the blocks that fit given, found as the scheduler's check finds it (``steady_shape``:
    ``scenario.steady_shape_fits``). ``exc`` itself where the scheduler knows nothing of
    it, or where the check passes now. Raises nothing."""
    if blocks_needed is None and not running_sized:
        return exc
    from ipc_bench.harness.scenario import steady_running_for_blocks, steady_shape_fits

    sized = None
    if running_sized:
        block_size = scheduler.block_size
        sized = lambda num_blocks: steady_running_for_blocks(num_blocks, block_size)  # noqa: E731
    try:
        check_model_memory(scheduler, model, exc.device, exc.device_memory_bytes,
                           exc.device_label, running_for_blocks=sized,
                           blocks_needed=blocks_needed, needed_by=needed_by,
                           need_words=need_words,
                           running_with_blocks=(steady_shape_fits(steady_shape)
                                                if steady_shape is not None else None))
    except ModelMemoryError as again:
        return again
    return exc


#: How long a runner whose data sockets could not connect looks for its scheduler's
#: end (``_gone_meanwhile``) before it refuses the handshake as its own failure (s).
GONE_CHECK_S = 1.0


def _gone_meanwhile(peer_problem: Callable[[], Optional[str]]) -> Optional[str]:
    """``peer_problem``'s line where the scheduler went away within ``GONE_CHECK_S``
    (checked every 10 ms), else ``None``. A data port refused or closed during the
    connect, after the scheduler bound it and sent the ``Handshake``, is most often the
    scheduler ending (killed or interrupted as the runner connected): its control
    connection's end comes within milliseconds, and the runner then exits 5 as for a
    scheduler gone, where it said it refused the handshake (exit 3) and named a port."""
    deadline = time.monotonic() + GONE_CHECK_S
    while True:
        problem = peer_problem()
        if problem is not None or time.monotonic() >= deadline:
            return problem
        time.sleep(0.01)


def accept_handshake(socks: RunnerSockets, hs: Any, peer_problem: Callable[[], Optional[str]],
                     adapt: Optional[Callable[[RunnerConfig], RunnerConfig]] = None,
                     ready_info: Optional[dict[str, Any]] = None,
                     make_runner: Callable[[RunnerConfig], Any] = _model_runner
                     ) -> tuple[RunnerConfig, ModelRunner, Optional[RingReader]] | int:
    """Check the handshake ``hs``, connect the data sockets (and attach the
    shared-memory ring, ``--transport shm``), build the model runner and answer
    ``Ready``. ``adapt``: applied to the decoded config first (a runner started by
    hand checks and rewrites it: ``harness.remote_runner``; ``ConfigError`` refuses it).
    ``ready_info``: added to ``Ready.model_info`` (such a runner's clock id).
    ``make_runner``: builds the runner from the config (a pipeline stage's:
    ``harness.pp_stage``).
    Returns ``(config, runner, ring or None)``, or the exit code after telling the
    scheduler why not (``ErrorReport``; the reason also goes to stderr), or
    ``EXIT_SCHEDULER_GONE`` after its line on stderr when ``make_runner`` raised
    ``PeerError`` (the scheduler went away meanwhile: nobody to tell)."""

    def refuse(message: str) -> int:
        say(f"refusing the handshake: {one_line(message)}")
        send_control(socks.ctl, ErrorReport(message), _REPORT_TIMEOUT_S, peer_problem)
        return EXIT_HANDSHAKE

    if not isinstance(hs, Handshake):
        return refuse(f"expected a handshake, got {type(hs).__name__}")
    if hs.protocol_version != PROTOCOL_VERSION:
        return refuse(f"protocol version mismatch: scheduler speaks {hs.protocol_version}, "
                      f"runner speaks {PROTOCOL_VERSION}")
    ring = None
    try:
        config = decode_runner_config(hs.config)
        if adapt is not None:
            config = adapt(config)
        if config.tp_size is None and config.pp_size is None:
            socks.connect_data(config.s2r_endpoint, config.r2s_endpoint)
        else:  # one rank of --tp N: the broadcast's SUB end (wire.tp)
            connect_rank_data(socks, config.s2r_endpoint, config.r2s_endpoint)
        if config.s2r_ring is not None:
            ring = RingReader(config.s2r_ring, config.tp_rank,
                              timeout_s=ring_wait_s(config), peer_problem=peer_problem,
                              ctx=socks.ctl.context)
        runner = make_runner(config)
    except PeerError as exc:  # the scheduler went away while the runner was being built
        _close(ring)           # (a pipeline stage joining the scheduler's store)
        return scheduler_gone(str(exc))
    except ModelMemoryError as exc:  # weights + KV cache too large for the device
        _close(ring)
        return refuse(str(memory_refusal(exc, config)))
    except (ConfigError, EndpointError) as exc:  # a bad config, a data socket
        _close(ring)
        gone = _gone_meanwhile(peer_problem) if isinstance(exc, EndpointError) else None
        if gone is not None:  # its data ports went with it: not this runner's refusal
            return scheduler_gone(f"{gone}, noticed while connecting to its data ports")
        return refuse(str(exc))
    except Exception as exc:  # a model or ring that cannot be set up: say so, do not hang
        _close(ring)
        if out_of_fds(exc):  # the limit, not the model
            return refuse(f"runner could not start: {fd_shortage_text(exc)}")
        return refuse(f"runner could not start: {type(exc).__name__}: {exc}")
    send_control(socks.ctl, Ready(PROTOCOL_VERSION, os.getpid(), runner.model.device,
                                  dict(model_info(runner.model), **(ready_info or {}))),
                 config.peer_timeout_s, peer_problem)
    return config, runner, ring


#: How many peer timeouts a ``--tp`` rank waits on the ring for the next
#: SchedulerOutput. When one rank stops reading, the ring fills and the scheduler waits
#: one peer timeout for that rank before it names it; the other ranks wait for the
#: scheduler meanwhile, and with the same timeout one of them could give up first and
#: be blamed (seen on a loaded 2-core machine). Twice the timeout leaves the scheduler
#: the first word; a rank whose scheduler is gone still exits, after two timeouts.
TP_RING_WAIT_TIMEOUTS = 2


def ring_wait_s(config: RunnerConfig) -> float:
    """Seconds the runner waits on the ring for a message after step 0's
    ``SchedulerOutput`` (``wire.channel.RingRunnerChannel.recv_timeout_s``, and the
    reader's own default): ``peer_timeout_s``, times ``TP_RING_WAIT_TIMEOUTS`` for a
    rank of ``--tp N``."""
    factor = TP_RING_WAIT_TIMEOUTS if config.tp_size is not None else 1
    return config.peer_timeout_s * factor


def _close(ring: Optional[RingReader]) -> None:
    """Unmap the ring, if any (the scheduler owns and unlinks it)."""
    if ring is not None:
        ring.close()


def _serve(loop: RunnerLoop) -> int:
    """Run ``loop`` until ``Stop``; returns the exit code. A failed step is reported
    to the scheduler (``RunnerLoop.report_error``) before the runner exits."""
    try:
        if loop.config.bare_loop:
            loop.run_bare()
        elif loop.config.device_inputs:
            loop.run_pipelined()
        else:
            loop.run()
    except PeerError as exc:
        return scheduler_gone(peer_line(exc, loop.seq))
    except (RunnerError, ProtocolError, DecodeError, SchedulerError) as exc:
        loop.report_error(f"{type(exc).__name__}: {exc}")
        return EXIT_STEP_FAILED
    except Exception as exc:  # a bug or a message the checks missed: report, then fail
        if out_of_fds(exc):  # the limit, not a bug: no traceback
            loop.report_error(fd_shortage_text(exc))
            return EXIT_STEP_FAILED
        traceback.print_exc(file=sys.stderr)
        loop.report_error(f"{type(exc).__name__} while handling {loop.handling}: {exc}")
        return EXIT_STEP_FAILED
    return EXIT_OK


def peer_line(exc: PeerError, seq: int) -> str:
    """The line a runner leaves on when its scheduler went away or fell silent while
    it served step ``seq``: ``exc``'s, and for a timeout (``PeerTimeout``) the option
    that sets it: ``--startup-timeout`` at step 0 (the wait for the first step),
    ``--peer-timeout`` after (``no SchedulerOutput for step 7 within 10 s (raise
    --peer-timeout)``)."""
    if not isinstance(exc, PeerTimeout):
        return str(exc)
    return f"{exc} (raise {'--startup-timeout' if seq == 0 else '--peer-timeout'})"


def serve_case(socks: RunnerSockets,
               accepted: tuple[RunnerConfig, ModelRunner, Optional[RingReader]],
               peer_problem: Callable[[], Optional[str]]) -> int:
    """Serve the case whose handshake was accepted (``accept_handshake``'s tuple) until
    ``Stop``; returns the exit code (``_serve``)."""
    config, runner, ring = accepted
    first_s = first_step_wait_s(config)
    if config.tp_size is not None:
        channel = rank_channel(socks, ring, config.tp_rank, config.peer_timeout_s,
                               peer_problem, first_timeout_s=first_s,
                               ring_timeout_s=ring_wait_s(config))
    elif ring is not None:
        channel = RingRunnerChannel(socks, ring, config.peer_timeout_s, peer_problem,
                                    first_timeout_s=first_s)
    else:
        channel = RunnerChannel(socks, config.peer_timeout_s, peer_problem,
                                first_timeout_s=first_s)
    return _serve(RunnerLoop(config, channel, runner))


def runner_main(ctl_endpoint: str, make_runner: Callable[[RunnerConfig], Any] = _model_runner,
                serve: Optional[Callable[..., int]] = None) -> int:
    """Entry point of the runner process; returns its exit code.

    Pins itself first to the CPU set in ``affinity.CPU_AFFINITY_ENV`` when the
    scheduler set it (``--cpu-affinity``). Exit codes: 0 after sending its report; 2
    that set cannot be applied, or ``ctl_endpoint`` cannot be connected
    to (``transport.EndpointError``, one line on stderr, within
    ``transport.CONNECT_TIMEOUT_S``); 3 handshake refused or never came; 4 a step
    failed (an ``ErrorReport`` naming the step went to the scheduler first); 5 the
    scheduler went away or stopped sending.
    """
    peer_problem = child_of_scheduler()  # the scheduler decides and kills us
    if peer_problem():
        say(f"{peer_problem()} at start-up")
        return EXIT_SCHEDULER_GONE
    pin_problem = pin_from_env()  # --cpu-affinity: before any work of this process
    if pin_problem:
        say(pin_problem)
        return EXIT_USAGE
    ctx = zmq_context()  # under ulimit -v: our line, not libzmq's abort
    socks: Optional[RunnerSockets] = None
    ring: Optional[RingReader] = None
    try:
        try:
            socks = RunnerSockets(ctx, ctl_endpoint)
        except EndpointError as exc:
            say(str(exc))
            return EXIT_USAGE
        accepted = _accept_handshake(socks, peer_problem, make_runner)
        if isinstance(accepted, int):
            return accepted
        config, runner, ring = accepted
        if serve is not None:  # another loop over the same sockets (harness.pp_stage)
            return serve(config, socks, runner, peer_problem)
        return serve_case(socks, accepted, peer_problem)
    finally:
        _close(ring)
        if socks is not None:
            socks.close(linger_ms=RUNNER_CLOSE_LINGER_MS)
        destroy_context(ctx)  # waits RUNNER_CLOSE_LINGER_MS at most, for the report

