"""The scheduler side of one case: admission, the measured loop and its bare twin.

One step: ``Scheduler.schedule`` -> ``build_scheduler_output`` -> the exchange (encode,
send, wait, decode; or, in the single-process baseline, the runner called directly)
-> ``Scheduler.update_from_output``. The measured loop (``run_scheduler_loop``) times
each part and records one row per step (``spec.SCHED_COLUMNS``); between steps,
outside every timed region, it also feeds the input oracle and the schedule digest
(``harness.oracle``). The bare loop (``run_bare_scheduler_loop``,
``CaseSpec.instrumentation == "totals"``) runs the same steps with nothing recorded or
checked per step, so the ratio of their totals is what the recording and the checks
cost. Both share their start (``_LoopRun``: scheduler, workload, warm-up)
and their end (``_LoopRun.finish``: loop totals, digest, request records); their hot
bodies stay apart, since a branch per step to skip the timing would itself be
measured.

Clocks: logical (arrivals by step number, idle steps skipped: both policies schedule
the same batches) or timed (a request arrives when ``elapsed * speedup >=
arrival_s``; while nothing runs the loop sleeps until the next arrival, checking the
peer and sending ``KeepAlive``).

One step before warm-up ends (after step ``warmup_steps - 2``, before step
``warmup_steps - 1``: ``warmup_pause_seq``) the heap is collected and frozen
(``gc.freeze()``, as vLLM's ``freeze_gc_heap``; ``KeepAlive`` to the runner and the
frontend while it takes long, ``wire.control.beating``) and unfrozen when the loop
ends. The pause leaves both processes idle for tens of ms, and the first step after
it runs on cold caches (a median 2.0x the median step when it was the first counted
one: docs/metrics.md, "The replay clock"), so the last warm-up step absorbs that; the loop totals start after it, just
before step ``warmup_steps``. With one warm-up step there is no step before it to
pause after: the pause comes before step 1 (the first counted step), as with no
warm-up (before step 0). The runner process
(every ``--tp`` rank, every ``--pp`` stage) collects and freezes its own heap at the
same time: the scheduler sends it ``EndWarmup`` first and, once its own collection is
done, waits for each runner's ``WarmupEnded`` (its collection's length,
``CaseResult.runner_warmup_collect_ns``). That pause, from the ``EndWarmup`` to the
last ``WarmupEnded``, is the harness's, not the replay's: it lies between two steps,
its length is ``CaseResult.warmup_pause_ns``, and a timed replay's clock (the replay
clock: arrivals, ``t_end_ns``, so the latencies, and ``wall_s``) stops while it lasts,
so no arrival piles up behind it and no request in flight is charged for it. (With
async scheduling the steps in flight at the pause are warm-up steps; the runner
finishes them before it reads ``EndWarmup``, during the pause.)
"""

from __future__ import annotations

import collections
import gc
import time
from typing import Any, Callable, Optional

from ipc_bench.engine.messages import ModelRunnerOutput, SchedulerOutput
from ipc_bench.engine.outputs import request_streams
from ipc_bench.engine.scheduler import AsyncScheduler, ProtocolError, Scheduler
from ipc_bench.errors import runner_failed_text
from ipc_bench.harness.memory import HeapReport, freeze_heap, thaw_heap
from ipc_bench.harness.oracle import InputOracle, RunnerInputLog, ScheduleDigest
from ipc_bench.harness.recording import GcCounter, StepFlusher, record_requests
from ipc_bench.harness.spec import CaseError, CaseResult, CaseSpec
from ipc_bench.wire.channel import SchedulerChannel
from ipc_bench.wire.codecs import DecodeError, messages_of, session_codecs, session_end
from ipc_bench.wire.decode_error import undecodable_text
from ipc_bench.wire.control import (CheckInputs, EndWarmup, ErrorReport, Heartbeat,
                                    InputDigests, KeepAlive, RecheckInputs, StepInputIds,
                                    WarmupEnded, beating, no_beat)
from ipc_bench.wire.transport import POLL_SLICE_MS, PeerError, noticed


def runner_failure(report: ErrorReport) -> CaseError:
    """The runner's ``ErrorReport`` as the case's error: ``runner failed at step N
    (steps.csv seq: warm-up and uncounted steps included): MESSAGE``
    (``errors.runner_failed_text``: N numbered as the interrupt line numbers its step,
    ``errors.STEP_NUMBERING``), at ``report.step``."""
    return CaseError(runner_failed_text(report.step, report.message), report.step)


def _r2s_endpoint(channel: Any) -> Optional[str]:
    """The ``ModelRunnerOutput`` endpoint of ``channel``'s sockets (``socks.endpoints``:
    an ``Endpoints`` or the tp sockets' dict), ``None`` where it has none."""
    endpoints = getattr(getattr(channel, "socks", None), "endpoints", None)
    found = endpoints.get("r2s") if isinstance(endpoints, dict) else getattr(
        endpoints, "r2s", None)
    return found if isinstance(found, str) else None


def reply_origin(endpoint: Optional[str]) -> Optional[str]:
    """Where a ``ModelRunnerOutput`` frame read at ``endpoint`` came from, in words,
    or ``None`` when only the runner can have sent it (ipc, in the run's own socket
    folder; the ring). A tcp port takes any peer that completes a ZeroMQ handshake
    (``--remote-runners``' ports, on any address the host has; a spawned runner's on
    127.0.0.1), and the PULL socket fair-queues their frames with the runner's, so a
    frame there cannot be told to be the runner's: ``on the tcp port 5602: from the
    runner or another peer``."""
    if not endpoint or not endpoint.startswith("tcp://"):
        return None
    return f"on the tcp port {endpoint.rsplit(':', 1)[1]}: from the runner or another peer"


# ======================================================================================
# Exchanges: how one SchedulerOutput reaches the runner and its output comes back


class ChannelExchange:
    """The two-process exchange: encode, send, wait, decode, through a
    ``SchedulerChannel`` (or any object with its methods). ``runner_exiting``: the
    runner reported an error and is on its way out."""

    def __init__(self, spec: CaseSpec, channel: SchedulerChannel, result: CaseResult):
        self.encode, self.decode = session_codecs(spec.codec, "scheduler",
                                                  layout=spec.scheduler.vllm_layout)
        self.end = session_end(self.encode)  # a stateful codec's scheduler end, or None
        self.channel = channel
        self.first_timeout_s = max(spec.startup_timeout_s, spec.peer_timeout_s)
        self.peer_timeout_s = spec.peer_timeout_s
        self.keepalive_ns = int(spec.peer_timeout_s / 4 * 1e9)
        self.last_keepalive_ns = 0
        # When the runner last heard from the scheduler, as far as the phases after a
        # loop know (``heartbeat``): perf_counter_ns, 0 until known.
        self.last_heard_ns = 0
        self.result = result
        self.runner_exiting = False
        # The step being exchanged, or, once its reply is in, the next one: the step a
        # failure is charged to (``CaseResult.failed_step``: steps 0 .. seq - 1 are done).
        self.seq = 0
        self.last_reply = b""  # the last ModelRunnerOutput frame (kept for counted steps)
        self.digest_requests = 0  # request_input_digests not yet read (async scheduling)
        # Answers to those requests read early, while the scheduler waited for
        # WarmupEnded: (message, the channel's per_rank then, or None), oldest first.
        self.early_replies: collections.deque = collections.deque()
        self.reply_origin = reply_origin(_r2s_endpoint(channel))

    def attach(self, sched: Scheduler) -> None:
        """Give the case's scheduler to a codec end that reads it (``replicated``: its
        arrivals)."""
        attach = getattr(self.end, "attach", None)
        if attach is not None:
            attach(sched)

    def exchange(self, so: SchedulerOutput, seq: int, perf=time.perf_counter_ns):
        """-> (ModelRunnerOutput, s2r frame, r2s bytes, t_encoded, t_sent, t_received,
        t_decoded)."""
        frame = self.encode(so)
        t3 = perf()
        self.seq = seq
        self.channel.send(frame, seq)
        t4 = perf()
        reply = self.channel.recv(seq, None if seq else self.first_timeout_s)
        t5 = perf()
        self.seq = seq + 1
        self.last_reply = reply
        return self._decode(reply, seq), frame, len(reply), t3, t4, t5, perf()

    def exchange_bare(self, so: SchedulerOutput, seq: int) -> ModelRunnerOutput:
        """``exchange`` without timestamps or kept frames (instrumentation off)."""
        self.seq = seq
        self.channel.send(self.encode(so), seq)
        reply = self.channel.recv(seq, None if seq else self.first_timeout_s)
        self.seq = seq + 1
        return self._decode(reply, seq)

    def send_step(self, so: SchedulerOutput, seq: int, perf=time.perf_counter_ns):
        """The first half of ``exchange`` (async scheduling): encode and send step
        ``seq``. -> (frame, t_encoded, t_sent)."""
        frame = self.encode(so)
        t3 = perf()
        self.seq = seq
        self.channel.send(frame, seq)
        return frame, t3, perf()

    def recv_step(self, seq: int, perf=time.perf_counter_ns):
        """The second half: wait for step ``seq``'s reply (the oldest in flight) and
        decode it. -> (ModelRunnerOutput, r2s bytes, t_received, t_decoded)."""
        self.seq = seq
        reply = self.channel.recv(seq, None if seq else self.first_timeout_s)
        t5 = perf()
        self.last_reply = reply
        return self._decode(reply, seq), len(reply), t5, perf()

    def request_input_digests(self) -> None:
        """Ask for the runner's input digests without waiting (async scheduling: sent
        right after a step's frame, so the runner answers once that step is done and
        before it reads the next one); ``requested_input_digests`` reads the answer."""
        self.send_marker(CheckInputs())
        self.digest_requests += 1

    def requested_input_digests(self, seq: Optional[int]) -> InputDigests:
        """The answer to ``request_input_digests`` (``seq``: the last step it covers)."""
        self.digest_requests -= 1
        return self._control_reply(InputDigests, f"input digests from the runner through "
                                                 f"step {seq}")

    def _decode(self, reply: bytes, seq: int) -> ModelRunnerOutput:
        if not reply:
            raise self.read_runner_error(seq)
        try:
            return self.decode(reply)
        except DecodeError as exc:
            raise CaseError(f"step {seq}: {undecodable_text(len(reply), self.reply_origin)}"
                            f": {exc}", seq) from None

    def read_runner_error(self, seq: int) -> CaseError:
        """The runner sent an empty frame where a reply was due: its ``ErrorReport``
        from the control socket, as a ``CaseError``."""
        try:
            msg = self.channel.recv_control("error report from the runner", 5.0)
        except PeerError as exc:
            return CaseError(str(exc), seq)
        if isinstance(msg, ErrorReport):
            self.runner_exiting = True
            return runner_failure(msg)
        return CaseError(f"unexpected control message from runner at step {seq}: "
                         f"{type(msg).__name__}", seq)

    def queued_runner_error(self, max_messages: int = 64) -> Optional[CaseError]:
        """After a ``PeerError`` (the runner has gone): the ``ErrorReport`` it sent
        before it went, as a ``CaseError`` (``runner_failure``), else
        ``None``. Reads what is queued on the control socket (other messages are
        dropped: the case has failed), one ``transport.POLL_SLICE_MS`` slice each, at
        most ``max_messages``. With two steps in flight the runner's failure can reach
        the scheduler as its exit, while it sends the next step, before its report."""
        for _ in range(max_messages):
            try:
                msg = self.channel.recv_control("error report from the runner",
                                                POLL_SLICE_MS / 1000)
            except PeerError:
                return None
            if isinstance(msg, ErrorReport):
                self.runner_exiting = True
                return runner_failure(msg)
        return None

    def runner_input_digests(self, next_seq: Optional[int] = None) -> InputDigests:
        """The input oracle's check: the runner's input digests since the last one
        (``CheckInputs`` -> ``InputDigests``, between steps; ``next_seq``: the step the
        case would run next, named if the runner fails meanwhile)."""
        self.send_marker(CheckInputs())
        before = "" if next_seq is None else f" before step {next_seq}"
        return self._control_reply(InputDigests, f"input digests from the runner{before}")

    def runner_step_ids(self, seq: int) -> StepInputIds:
        """The input oracle's re-check: what the runner fed at step ``seq`` (answers
        to digest requests still unread are read and dropped first: the case fails)."""
        while self.digest_requests > 0:
            self.requested_input_digests(None)
        self.send_marker(RecheckInputs(seq))
        return self._control_reply(StepInputIds, f"input ids of step {seq} from the runner")

    def end_runner_warmup(self) -> None:
        """Tell the runner (every rank, every stage) that warm-up ends: ``EndWarmup``
        after a marker, sent before step ``warmup_pause_seq``'s frame. It collects and
        freezes its heap and answers ``WarmupEnded`` (``runner_warmup_ended``)."""
        self.send_marker(EndWarmup())

    def runner_warmup_ended(self) -> list[int]:
        """Wait for the answer to ``end_runner_warmup``: each runner's collection
        length (ns; one per rank or stage, in rank order). Answers to digest requests
        sent before it (async scheduling) that arrive first are kept for
        ``requested_input_digests``. ``CaseError`` for the runner's ``ErrorReport`` or
        any other message; ``PeerTimeout`` (``no WarmupEnded (the runner's heap
        collection at the end of warm-up) within N s``) after ``peer_timeout_s``
        (the start-up's allowance before step 0)."""
        what = "WarmupEnded (the runner's heap collection at the end of warm-up)"
        timeout_s = self.first_timeout_s if self.seq == 0 else self.peer_timeout_s
        while True:
            msg = self.channel.recv_control(what, timeout_s)
            per_rank = getattr(self.channel, "per_rank", None)
            if isinstance(msg, WarmupEnded):
                return [m.collect_ns for m in (per_rank or [msg])]
            if isinstance(msg, InputDigests) and self.digest_requests > len(self.early_replies):
                self.early_replies.append((msg, None if per_rank is None else list(per_rank)))
                continue
            if isinstance(msg, ErrorReport):
                self.runner_exiting = True
                raise runner_failure(msg)
            raise CaseError(f"expected WarmupEnded from the runner, got "
                            f"{type(msg).__name__}", self.seq)

    def _control_reply(self, kind: type, what: str):
        """The runner's next control message, which must be a ``kind`` (one read
        early, ``runner_warmup_ended``, first); ``CaseError`` for its ``ErrorReport``
        or anything else."""
        if self.early_replies:
            msg, per_rank = self.early_replies.popleft()
            if per_rank is not None:
                self.channel.per_rank = per_rank
        else:
            msg = self.channel.recv_control(what)
        if isinstance(msg, kind):
            return msg
        if isinstance(msg, ErrorReport):
            self.runner_exiting = True
            raise runner_failure(msg)
        raise CaseError(f"expected {kind.__name__} from the runner, got "
                        f"{type(msg).__name__}", self.seq)

    def check_peer(self) -> None:
        problem = self.channel.peer_problem()
        if problem:
            raise CaseError(noticed(problem, "the scheduler was idle"), self.seq)

    def send_marker(self, msg) -> None:
        """An empty frame on s2r (read the control socket), then ``msg`` there."""
        self.channel.send_marker()
        self.channel.send_control(msg)
        self.result.s2r_marker_frames += 1
        self.last_heard_ns = time.perf_counter_ns()

    def heartbeat(self, fresh: bool = True) -> Heartbeat:
        """A ``Heartbeat`` that sends ``KeepAlive`` markers to the runner (waiting for
        the next frame under its peer timeout) while the scheduler prepares a phase.
        ``fresh``: the runner has just heard from the scheduler (a step's exchange has
        just ended), so the first ``KeepAlive`` is due a quarter of the timeout from
        now; else (a later phase, or ``--pp`` stages, which wait for the next frame
        from the end of their share of the last one, before the last stage replies) a
        quarter from the last marker sent, the last data frame sent (a channel that
        notes them: ``sent_ns``) or the last fresh ``Heartbeat`` made, whichever came
        later, so that a phase's wait does not start a new quarter."""
        now = time.perf_counter_ns()
        if fresh:
            self.last_heard_ns = now
        else:
            sent_ns = getattr(self.channel, "sent_ns", None)
            if sent_ns:
                self.last_heard_ns = max(self.last_heard_ns, sent_ns[-1])
            if not self.last_heard_ns:
                self.last_heard_ns = now
        return Heartbeat(lambda: self.send_marker(KeepAlive()), self.peer_timeout_s,
                         clock=time.perf_counter_ns, last_ns=self.last_heard_ns)

    def idle(self, sleep_s: float, idle_ns: int) -> None:
        """Nothing to run (timed replay): check the runner, keep it waiting
        (``KeepAlive`` once the idle time passes a quarter of its timeout), sleep."""
        self.check_peer()
        now = time.perf_counter_ns()
        if idle_ns > self.keepalive_ns and now - self.last_keepalive_ns > self.keepalive_ns:
            self.send_marker(KeepAlive())
            self.last_keepalive_ns = now
        time.sleep(sleep_s)


class InProcessExchange:
    """Single-process exchange: the runner executes the SchedulerOutput object itself
    (``stepper.execute``: a ``runner_loop.TimedModelRunner``), no serialization. The
    runner's input-oracle log (``input_log``) lives here, in the same process."""

    last_reply = b""

    def __init__(self, stepper):
        self.stepper = stepper
        self.input_log = RunnerInputLog()

    def record_runner_inputs(self, seq: int, so: SchedulerOutput) -> None:
        """The runner's half of the input oracle for step ``seq`` (after the step)."""
        self.input_log.record(seq, so.num_scheduled_tokens,
                              self.stepper.runner.input_batch.req_id_to_index,
                              self.stepper.last_inputs)

    def runner_input_digests(self, next_seq: Optional[int] = None) -> InputDigests:
        return self.input_log.take()

    def runner_step_ids(self, seq: int) -> StepInputIds:
        return self.input_log.step_ids(seq)

    def exchange(self, so: SchedulerOutput, seq: int, perf=time.perf_counter_ns):
        t = perf()
        out = self.stepper.execute(so)
        return out, b"", 0, t, t, perf(), perf()

    def check_peer(self) -> None:
        pass

    def idle(self, sleep_s: float, idle_ns: int) -> None:
        time.sleep(sleep_s)


def wait_for_arrival(link, frontend, result: CaseResult, wait_s: float,
                     last_step_end_ns: int) -> None:
    """A timed replay with nothing to schedule: wait up to 50 ms for the next arrival,
    ``wait_s`` (s, real time) away, through ``link.idle`` (which checks the runner and
    keeps it waiting; ``last_step_end_ns``: the end of the last step, ``perf_counter_ns``),
    keeping the frontend waiting too, and add the time spent to ``result.idle_ns``
    (the engine's idle time, which ``analysis.pace.replay_pace`` reads)."""
    t0 = time.perf_counter_ns()
    link.idle(min(0.05, max(0.0, wait_s)), t0 - last_step_end_ns)
    if frontend is not None:
        frontend.keepalive()
    result.idle_ns += time.perf_counter_ns() - t0


def raise_output_error(exc: Exception, seq: int) -> None:
    """Raise the ``CaseError`` for a ModelRunnerOutput that ``update_from_output``
    rejected: one that contradicts the schedule (``ProtocolError``) or a decoded message
    of the right class with fields of the wrong type (pickle does not check them).
    Returns for any other exception (a bug: the caller re-raises it as it is)."""
    if isinstance(exc, ProtocolError):
        raise CaseError(f"step {seq}: ModelRunnerOutput contradicts the schedule: {exc}",
                        seq) from None
    if isinstance(exc, (TypeError, ValueError, KeyError, IndexError, AttributeError)):
        raise CaseError(f"step {seq}: malformed ModelRunnerOutput: "
                        f"{type(exc).__name__}: {exc}", seq) from None


# ======================================================================================
# Admission

_DRAINED, _IDLE, _READY = 0, 1, 2


def _admit_logical(sched: Scheduler, workload, arrival_s: dict[int, float]) -> int:
    """Logical clock, between steps: hand the current step's arrivals to the scheduler
    (noting each one's trace time in ``arrival_s``). Returns ``_READY`` (run a step),
    ``_IDLE`` (nothing to run: the clock jumped to the next arrival's step) or
    ``_DRAINED`` (no request left, none to come)."""
    for r in workload.arrivals(sched.step):
        sched.add_request(r.req_id, r.index, r.prompt_token_ids, r.max_tokens,
                          r.unbuilt_prompt_len)
        arrival_s[r.index] = r.arrival_s
    if sched.has_unfinished_requests():
        return _READY
    nxt = workload.next_arrival_step()
    if nxt is None:
        return _DRAINED
    sched.step = max(nxt, sched.step + 1)  # idle steps are skipped
    return _IDLE


def _admit_timed(sched: Scheduler, workload, arrival_s: dict[int, float], now_s: float
                 ) -> Optional[float]:
    """Timed clock: hand over the requests that have arrived by trace time ``now_s``.
    Returns ``None`` when a step can run, else the trace time of the next arrival
    (``inf`` when none is left: the case is over)."""
    for r in workload.arrivals_until(now_s):
        sched.add_request(r.req_id, r.index, r.prompt_token_ids, r.max_tokens,
                          r.unbuilt_prompt_len)
        arrival_s[r.index] = r.arrival_s
    if sched.has_unfinished_requests():
        return None
    nxt = workload.next_arrival_s()
    return float("inf") if nxt is None else nxt


# ======================================================================================
# The loops


class _LoopRun:
    """What both loops share: the scheduler and workload of the case, the heap frozen
    after warm-up, and what is filled into the result however the loop ends."""

    def __init__(self, spec: CaseSpec, result: CaseResult, link: Any = None):
        self.spec = spec
        self.result = result
        self.heap = HeapReport.from_env()  # traced from here: the scheduler's state too
        if self.heap is not None:
            self.heap.start()
        if spec.pp is not None:  # a batch queue of pp micro-batches
            from ipc_bench.engine.pipeline import PipelineScheduler

            self.sched = PipelineScheduler(spec.scheduler, spec.policy,
                                           messages_of(spec.codec), spec.pp)
        else:
            cls = AsyncScheduler if spec.async_scheduling else Scheduler
            self.sched = cls(spec.scheduler, spec.policy, messages_of(spec.codec))
        attach = getattr(link, "attach", None)  # ChannelExchange: a codec end may read it
        if attach is not None:
            attach(self.sched)
        self.workload = spec.make_workload()
        self.workload.never_fits = self.sched.never_fits  # such prompts are never built
        self.workload.warm()  # its first build's one-time costs: before the clock below
        self.warmup_steps = spec.warmup_steps
        self.pause_seq = warmup_pause_seq(spec.warmup_steps)
        self.max_steps = spec.max_steps
        self.arrival_s: dict[int, float] = {}
        self.paused = False  # the end-of-warm-up pause has been taken (``end_warmup``)
        self.froze_heap = False  # its freeze is this case's to undo (``freeze_heap``)
        self.t_warm: Optional[int] = None
        self.out_warm = 0
        # The case's clock: perf_counter_ns at its start. A timed replay's (the replay
        # clock) moves on by the end of warm-up's pause, so that pause is in no time
        # taken from it (``end_warmup``).
        self.t_start = time.perf_counter_ns()
        self.replay_clock = spec.trace_speedup is not None

    def end_warmup(self, beat: Callable[[], None] = no_beat, runners: Any = None) -> None:
        """The end-of-warm-up pause, before step ``pause_seq``
        (``warmup_pause_seq``): collect and freeze the heap (and take the heap
        report's ``warm`` mark: its growth to ``end`` includes the warm-up steps from
        ``pause_seq`` on); the loop totals start later (``start_totals``: before step
        ``warmup_steps``, the same point when ``warmup_steps`` < 2; with steps in
        flight, once step ``warmup_steps - 1``'s output is applied). ``runners``: the exchange with the runner
        processes (``ChannelExchange``), told first to collect theirs
        (``end_runner_warmup``) and waited for after the scheduler's own collection
        (``runner_warmup_ended``; their lengths go to
        ``result.runner_warmup_collect_ns``); an exchange without these methods (the
        single process) has no runner heap of its own. ``beat``: the keep-alive of the
        runner and the frontend, which wait for the next step meanwhile (``end_beat``;
        each of these is one call over the whole heap: ``wire.control.beating``). The
        pause's length, from before ``EndWarmup`` to the last ``WarmupEnded``, goes to
        ``result.warmup_pause_ns``; a timed replay's ``t_start`` moves on by it (the
        replay clock stops: read ``t_start`` again after this call)."""
        self.paused = True
        t_pause = time.perf_counter_ns()
        tell = getattr(runners, "end_runner_warmup", None)
        if tell is not None:
            tell()
        with beating(beat):
            gc.collect()
            self.froze_heap = freeze_heap()
            if self.heap is not None:
                self.heap.mark("warm")
        if tell is not None:  # after the keep-alive's thread: it sends on these sockets
            self.result.runner_warmup_collect_ns = runners.runner_warmup_ended()
        t_end = time.perf_counter_ns()
        self.result.warmup_pause_ns = t_end - t_pause
        if self.replay_clock:
            self.t_start += t_end - t_pause

    def start_totals(self) -> None:
        """Start the loop totals (``finish``) here: ``t_warm`` (perf_counter_ns) and the
        output tokens applied so far, ``out_warm``. The synchronous loops call it just
        before step ``warmup_steps`` (after the pause), every earlier step applied; the
        loop with steps in flight (``async_loop``) once the last warm-up step's output
        is applied (before step 0 without warm-up), so that ``loop_output_tokens`` is
        the tokens of the counted steps alone, as their rows' ``num_output_tokens``."""
        self.t_warm = time.perf_counter_ns()
        self.out_warm = self.sched.num_output_tokens

    def finish(self, seq: int, speedup: Optional[float] = None,
               flusher: Optional[StepFlusher] = None, records: bool = True,
               beat: Callable[[], None] = no_beat) -> None:
        """Unfreeze the heap and fill in the loop totals (``loop_steps``, ``loop_ns``,
        ``loop_output_tokens`` after warm-up), wall time (``wall_s``, s; a timed
        replay's on the replay clock: the end of warm-up's pause left out), rejections,
        the token digest
        and (``records``) the request records. ``beat``: called between these pieces
        (``Heartbeat.beat``: the runner waits for the floor's marker meanwhile)."""
        t_end = time.perf_counter_ns()
        thaw_heap(self.froze_heap)
        self.froze_heap = False
        result, sched = self.result, self.sched
        if self.t_warm is not None:
            result.loop_totals = dict(loop_steps=seq - self.warmup_steps,
                                      loop_ns=t_end - self.t_warm,
                                      loop_output_tokens=sched.num_output_tokens - self.out_warm)
        result.wall_s = (t_end - self.t_start) / 1e9
        result.num_rejected = sched.num_rejected
        try:
            record_requests(result, sched, self.arrival_s, speedup, flusher, records, beat)
            if self.spec.frontend:
                result.frontend_expected_streams = request_streams(sched.requests.values())
                beat()
        finally:
            if self.heap is not None:  # after the last records left: what stays is kept
                with beating(beat):  # a collection, then one call over the whole heap
                    self.heap.mark("end")
                    result.heap_reports["scheduler"] = self.heap.report(
                        f"scheduler {self.spec.case_id}")


def end_beat(link, frontend=None, fresh: bool = True) -> Callable[[], None]:
    """The keep-alive for the work after a loop that ended well, while the others wait
    under their timeouts: ``link``'s ``Heartbeat.beat`` (a ``ChannelExchange``: the
    runner waits for its next frame; ``fresh`` as ``ChannelExchange.heartbeat``'s) and
    ``frontend.keepalive`` (a ``FrontendHop``: the frontend waits for its stop),
    whichever there are; else ``no_beat``."""
    heartbeat = getattr(link, "heartbeat", None)
    beats = [] if heartbeat is None else [heartbeat(fresh).beat]
    if frontend is not None:
        beats.append(frontend.keepalive)
    if not beats:
        return no_beat
    if len(beats) == 1:
        return beats[0]

    def beat() -> None:
        for b in beats:
            b()
    return beat


def warmup_pause_seq(warmup_steps: int) -> int:
    """The step before which the end-of-warm-up pause comes (``_LoopRun.end_warmup``):
    ``warmup_steps - 1`` (so that the first step after the pause, which runs on cold
    caches, is a warm-up step) when there are at least 2 warm-up steps, else
    ``warmup_steps`` (0: before the first step; 1: before step 1, the first counted
    step, there being no earlier step to pause after)."""
    return warmup_steps - 1 if warmup_steps >= 2 else warmup_steps


def _no_expect(seq: int, plan: Any, so: Any) -> None:
    """``InputOracle.expect`` of a case with the input oracle off: nothing."""


def _no_check() -> None:
    """``InputOracle.check`` of a case with the input oracle off: nothing."""


def run_scheduler_loop(spec: CaseSpec, link, result: CaseResult,
                       on_step: Optional[Callable[[int, int, int], None]] = None,
                       flusher: Optional[StepFlusher] = None, frontend=None) -> list[int]:
    """The measured loop over ``link`` (``ChannelExchange`` or ``InProcessExchange``);
    fills ``result`` in place (rows, frames of counted steps, totals, requests).
    ``frontend``: a ``frontend_hop.FrontendHop`` that gets each step's outputs after
    the step's timed region (and keep-alives while a timed replay idles).
    Returns the seqs of the counted steps. ``on_step(seq, output_tokens, finished)``
    after each step, outside its timed region. A rejected ModelRunnerOutput becomes
    ``CaseError`` (``raise_output_error``), as does a step whose fed token ids the
    input oracle rejects (``oracle.InputOracle``: checked every
    ``spec.input_oracle_interval`` steps and after the last one; never when that is 0).
    ``result.schedule_digest`` is set however the loop ends."""
    run = _LoopRun(spec, result, link)
    sched, workload, arrival_s = run.sched, run.workload, run.arrival_s
    if spec.input_oracle_interval:
        oracle = InputOracle(sched.requests, link, spec.input_oracle_interval)
        expect_inputs, check_inputs = oracle.expect, oracle.check
    else:
        expect_inputs, check_inputs = _no_expect, _no_check
    schedule = ScheduleDigest()
    add_schedule = schedule.add
    timed = spec.trace_speedup is not None
    if timed:
        sched.record_token_steps = True
    exchange = link.exchange
    perf = time.perf_counter_ns
    cpu = time.thread_time_ns
    gc_counter = GcCounter()
    record = result.sched_rows.record  # packed int64 (spec.StepRows)
    release = None
    if flusher is not None and flusher.stream:  # rows packed, finished requests dropped
        record, release = flusher.record, flusher.release_finished
    frames = result.s2r_frames
    r2s_frames = result.r2s_frames
    counted_seqs: list[int] = []
    keep_frames = not spec.stream
    decode_only = spec.count == "decode_only"
    warmup_steps, pause_seq = run.warmup_steps, run.pause_seq
    max_steps = run.max_steps
    budget = spec.counted_steps  # stop after this many counted steps (None: no limit)
    num_counted = 0
    speedup = spec.trace_speedup or 1.0
    seq = 0
    total_out = 0
    num_done = 0
    t_start = run.t_start
    t7 = t_start
    if flusher is not None:
        flusher.start(t_start)
    next_flush = flusher.next_ns if flusher is not None else None
    beat = no_beat  # until the loop has ended well: no KeepAlive to a failed runner
    try:
        while max_steps is None or sched.step < max_steps:
            if timed:
                now_s = (perf() - t_start) / 1e9 * speedup
                nxt = _admit_timed(sched, workload, arrival_s, now_s)
                if nxt is not None:
                    if nxt == float("inf"):
                        break
                    wait_for_arrival(link, frontend, result, (nxt - now_s) / speedup, t7)
                    continue
            else:
                state = _admit_logical(sched, workload, arrival_s)
                if state != _READY:
                    if state == _DRAINED:
                        break
                    continue
            if seq == pause_seq:
                run.end_warmup(end_beat(link, frontend), link)
                t_start = run.t_start  # a timed replay's clock stopped meanwhile
            if seq == warmup_steps:
                run.start_totals()
            gc0, gc_ns0 = gc_counter.count, gc_counter.ns
            c0 = cpu()
            t0 = perf()
            plan = sched.schedule()
            t1 = perf()
            so = sched.build_scheduler_output(plan)
            t2 = perf()
            out, frame, r2s_bytes, t3, t4, t5, t6 = exchange(so, seq)
            try:
                finished = sched.update_from_output(plan, out)
            except Exception as exc:
                raise_output_error(exc, seq)
                raise
            t7 = perf()
            c1 = cpu()
            if frontend is not None:  # after the step: vLLM's output thread sends it
                frontend.step(seq, sched, plan, out, finished)
            warm = seq < warmup_steps
            counted = not warm and (plan.is_decode_only if decode_only else True)
            out_tokens = sched.num_output_tokens - total_out
            total_out = sched.num_output_tokens
            record((seq, plan.step, int(warm), int(counted), len(plan.num_scheduled_tokens),
                    len(plan.new_reqs), plan.total_num_scheduled_tokens, out_tokens,
                    len(finished), len(plan.preempted), plan.num_resumed,
                    len(sched.waiting), t1 - t0, t2 - t1,
                    t3 - t2, t4 - t3, t5 - t4, t6 - t5, t7 - t6, t7 - t0, c1 - c0, len(frame),
                    r2s_bytes, gc_counter.count - gc0, gc_counter.ns - gc_ns0,
                    t7 - t_start))
            if counted and frame and keep_frames:
                frames.append(frame)
                r2s_frames.append(link.last_reply)
                counted_seqs.append(seq)
            add_schedule(plan)
            expect_inputs(seq, plan, so)
            if finished:
                num_done += len(finished)
                workload.on_finished(len(finished), plan.step)
                if release is not None:
                    release(sched, finished)
            seq += 1
            if on_step is not None:
                on_step(seq, total_out, num_done)
            if next_flush is not None and t7 >= next_flush:
                flusher.flush(sched, result, arrival_s, speedup if timed else None)
                next_flush = flusher.next_ns
            if counted and budget is not None:
                num_counted += 1
                if num_counted == budget:
                    break
        check_inputs()
        beat = end_beat(link, frontend)
    finally:
        gc_counter.close()
        result.schedule_digest = schedule.hexdigest()
        run.finish(seq, speedup if timed else None, flusher, beat=beat)
    return counted_seqs


def run_bare_scheduler_loop(spec: CaseSpec, link: ChannelExchange,
                            result: CaseResult) -> list[int]:
    """``run_scheduler_loop`` with nothing recorded per step (logical clock only).

    Measures only the total time from the end of warm-up (just before step
    ``warmup_steps``, the heap frozen before the step before it, as in the measured
    loop) to the end of the last step, and the steps and tokens
    in it: ``result.loop_totals``. Returns no counted steps (no floor).
    """
    run = _LoopRun(spec, result, link)
    sched, workload = run.sched, run.workload
    exchange = link.exchange_bare
    warmup_steps = run.warmup_steps
    max_steps = run.max_steps
    # The same counted-steps limit as the measured loop, so both run the same steps.
    budget = spec.counted_steps
    decode_only = spec.count == "decode_only"
    num_counted = 0
    seq = 0
    beat = no_beat  # until the loop has ended well
    try:
        while max_steps is None or sched.step < max_steps:
            state = _admit_logical(sched, workload, run.arrival_s)
            if state != _READY:
                if state == _DRAINED:
                    break
                continue
            if seq == run.pause_seq:
                run.end_warmup(end_beat(link), link)
            if seq == warmup_steps:
                run.start_totals()
            plan = sched.schedule()
            out = exchange(sched.build_scheduler_output(plan), seq)
            try:
                finished = sched.update_from_output(plan, out)
            except Exception as exc:
                raise_output_error(exc, seq)
                raise
            if finished:
                workload.on_finished(len(finished), plan.step)
            seq += 1
            if budget is not None and seq > warmup_steps and (
                    plan.is_decode_only or not decode_only):
                num_counted += 1
                if num_counted == budget:
                    break
        beat = end_beat(link)  # the runner waits for the stop marker meanwhile
    finally:
        run.finish(seq, records=False, beat=beat)
    return []
