"""The scheduler side of an async-scheduling case: two steps in flight.

With ``--pp N`` (``CaseSpec.pp``) the same loop keeps N micro-batches in flight
(vLLM's batch queue, ``max_concurrent_batches = pp``) with an
``engine.pipeline.PipelineScheduler``.

As vLLM's ``EngineCore.step_with_batch_queue`` with a batch queue of two (#19970,
d4d309409): schedule step n+1 and send it, then wait for step n's
``ModelRunnerOutput`` and apply it; at the start, steps 0 and 1 are both sent before
the first wait. The scheduler is an ``engine.scheduler.AsyncScheduler`` (output
placeholders: ``num_computed_tokens`` advances when a step is scheduled, the sampled
id is written when its output arrives). The runner is unchanged: it serves frames in
order, and under ``cached`` step n+1's input ids are the ones it wrote itself at step
n, so the next frame waits in its socket while it computes (process pipelining).
With draft tokens the runner also keeps its drafts and corrects step n+1's optimistic
``num_computed_tokens`` by step n's rejected drafts (vLLM #24799: ``ModelRunner``,
``async_scheduling``).

Records. One row per step (``spec.SCHED_COLUMNS``), written when its output is
applied: its own schedule, build, encode and send times and ``num_waiting`` (measured
when it was scheduled, one iteration earlier), then its wait, decode and update. ``step_ns`` is the
iteration that applied it: from the end of the previous row's between-step work to
the end of this update, so it holds the scheduling of the next step and the sum of
``step_ns`` is the loop's busy wall time, as under sync scheduling; ``sched_cpu_ns``
and ``gc_collections`` and ``gc_ns`` cover the same span.

Loop totals (``CaseResult.loop_totals``, ``_LoopRun.start_totals``). They start once
the last warm-up step's output is applied, at the start of the first counted row's
``step_ns`` (with no warm-up step: before step 0 is scheduled), not when step
``warmup_steps`` is sent: then the last warm-up step (under ``--pp N``, up to N - 1
of them) is still in flight and its tokens, applied later, would be counted against
steps that exclude it. So ``loop_output_tokens`` is the sum of ``num_output_tokens``
over the rows of ``seq >= warmup_steps`` and ``loop_ns`` spans their outputs: from
the output before the first (the last warm-up step's) to the last, one interval per
counted step, as the sum of their ``step_ns`` (plus any flush or timed idle between
rows). The schedule of the counted steps sent while warm-up steps were in flight
(one, or N - 1 under ``--pp N``) lies before the window, as in ``step_ns``.

Input oracle. ``InputOracle.expect_planned`` after each update (positions from the
plan); every ``spec.input_oracle_interval`` steps the request for the runner's
digests goes out right after a step's frame (``ChannelExchange.request_input_digests``:
the runner answers once that step is done, before it reads the next frame) and is
read after that step's update (``InputOracle.check_requested``), so the check never
drains the pipeline; the last check runs once nothing is in flight.
"""

from __future__ import annotations

import collections
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Callable, Optional

from ipc_bench.engine.scheduler import SchedulerError
from ipc_bench.harness.oracle import InputOracle, RunnerInputLog, ScheduleDigest
from ipc_bench.harness.recording import GcCounter, StepFlusher
from ipc_bench.harness.scheduler_loop import (_DRAINED, _IDLE, _READY, _LoopRun,
                                              _admit_logical, _admit_timed, end_beat,
                                              raise_output_error, wait_for_arrival)
from ipc_bench.harness.spec import CaseError, CaseResult, CaseSpec
from ipc_bench.wire.control import InputDigests, StepInputIds, no_beat

#: Steps in flight at most (vLLM ``max_concurrent_batches`` with async scheduling).
MAX_IN_FLIGHT = 2


class ThreadedInProcessExchange:
    """The single-process baseline under async scheduling: the runner
    (``runner_loop.TimedModelRunner``) executes each step in one worker thread, in
    order, so the scheduler thread schedules step n+1 while step n runs (the threads
    share the GIL: they overlap only while the runner waits outside Python, e.g. the
    fixed-step model's sleep). No serialization. The worker digests each step's inputs
    right after it (``oracle.RunnerInputLog``, under a lock), before it runs the next.

    ``recv_step`` waits at most ``timeout_s`` for a step (``CaseError`` after that;
    the thread cannot be stopped, ``close`` abandons it). Exceptions raised by the
    runner pass through as they are, as in the synchronous single-process case.
    """

    last_reply = b""

    def __init__(self, stepper, timeout_s: float, check_inputs: bool = True):
        self.stepper = stepper
        self.timeout_s = timeout_s
        self.check_inputs = check_inputs
        self.input_log = RunnerInputLog()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="ipc-bench-runner")
        self._futures: collections.deque = collections.deque()

    def _execute(self, so, seq: int):
        """On the worker thread: step ``seq``, then its input digest."""
        out = self.stepper.execute(so)
        if self.check_inputs:
            with self._lock:
                self.input_log.record(seq, so.num_scheduled_tokens,
                                      self.stepper.runner.input_batch.req_id_to_index,
                                      self.stepper.last_inputs)
        return out

    def send_step(self, so, seq: int, perf=time.perf_counter_ns):
        """Queue step ``seq`` on the runner thread. -> (b"", t_before, t_queued): the
        queueing counts as the send, nothing as the encode."""
        t = perf()
        self._futures.append(self._pool.submit(self._execute, so, seq))
        return b"", t, perf()

    def recv_step(self, seq: int, perf=time.perf_counter_ns):
        """Step ``seq``'s ModelRunnerOutput (the oldest queued). -> (output, 0, t, t)."""
        future = self._futures.popleft()
        try:
            out = future.result(timeout=self.timeout_s)
        except FutureTimeout:
            raise CaseError(f"the runner thread did not finish step {seq} within "
                            f"{self.timeout_s:g} s", seq) from None
        t = perf()
        return out, 0, t, t

    def request_input_digests(self) -> None:
        """Nothing to send: the log is in this process."""

    def requested_input_digests(self, seq: Optional[int]) -> InputDigests:
        """The runner's digests of the steps up to ``seq`` (later ones, which the
        runner thread may already have run, stay for the next check)."""
        with self._lock:
            return self.input_log.take(through=seq)

    def runner_input_digests(self, next_seq: Optional[int] = None) -> InputDigests:
        """Every digest since the last check (the final check: nothing in flight)."""
        with self._lock:
            return self.input_log.take()

    def runner_step_ids(self, seq: int) -> StepInputIds:
        """What the runner fed at step ``seq`` (the oracle's re-check)."""
        with self._lock:
            return self.input_log.step_ids(seq)

    def check_peer(self) -> None:
        """No peer process to check."""

    def idle(self, sleep_s: float, idle_ns: int) -> None:
        """Nothing to run (timed replay): sleep ``sleep_s``."""
        time.sleep(sleep_s)

    def close(self) -> None:
        """Stop the worker: wait for it after a clean run (nothing is queued then),
        abandon it otherwise."""
        self._pool.shutdown(wait=not self._futures, cancel_futures=True)


class _NoOracle:
    """The input oracle of a case with ``input_oracle_interval`` 0: nothing."""

    interval = 0
    pending: list = []

    def expect_planned(self, seq, plan, so=None) -> None:
        pass

    def check_requested(self) -> None:
        pass

    def check(self) -> None:
        pass


class _Admission:
    """Hands arrivals to the scheduler before each schedule, on the case's clock.
    ``ready()`` -> ``_READY``, ``_DRAINED`` (none left, none to come) or ``_IDLE``
    (nothing to run: on the logical clock the clock jumped to the next arrival; on
    the timed clock ``wait_s`` is the time until the next arrival)."""

    def __init__(self, run: _LoopRun, timed: bool, speedup: float):
        self.run = run
        self.timed = timed
        self.speedup = speedup
        self.wait_s = 0.0

    def ready(self) -> int:
        run = self.run
        if not self.timed:
            return _admit_logical(run.sched, run.workload, run.arrival_s)
        now_s = (time.perf_counter_ns() - run.t_start) / 1e9 * self.speedup
        nxt = _admit_timed(run.sched, run.workload, run.arrival_s, now_s)
        if nxt is None:
            return _READY
        if nxt == float("inf"):
            return _DRAINED
        self.wait_s = (nxt - now_s) / self.speedup
        return _IDLE


def run_async_scheduler_loop(spec: CaseSpec, link, result: CaseResult,
                             on_step: Optional[Callable[[int, int, int], None]] = None,
                             flusher: Optional[StepFlusher] = None,
                             frontend=None) -> list[int]:
    """``run_scheduler_loop`` with async scheduling (module docstring) over ``link``
    (a ``ChannelExchange`` whose channel's window is at least 2, or an exchange with
    the same ``send_step`` / ``recv_step`` / ``request_input_digests`` /
    ``requested_input_digests`` methods). Returns the counted seqs; fills ``result``
    in place (``frontend``: as in ``run_scheduler_loop``, each step's outputs once
    applied). Raises ``CaseError`` for a rejected ModelRunnerOutput or a failed input
    check, ``SchedulerError`` when nothing can be scheduled while nothing is in flight.
    Kept in one piece: it is the measured hot loop (a call per part would be timed)."""
    run = _LoopRun(spec, result)
    sched, workload, arrival_s = run.sched, run.workload, run.arrival_s
    oracle = (InputOracle(sched.requests, link, spec.input_oracle_interval)
              if spec.input_oracle_interval else _NoOracle())
    interval = spec.input_oracle_interval
    schedule = ScheduleDigest()
    timed = spec.trace_speedup is not None
    speedup = spec.trace_speedup or 1.0
    if timed:
        sched.record_token_steps = True
    admission = _Admission(run, timed, speedup)
    send_step, recv_step = link.send_step, link.recv_step
    perf, cpu = time.perf_counter_ns, time.thread_time_ns
    gc_counter = GcCounter()
    record = result.sched_rows.record  # packed int64 (spec.StepRows)
    release = None
    if flusher is not None and flusher.stream:
        record, release = flusher.record, flusher.release_finished
    counted_seqs: list[int] = []
    keep_frames = not spec.stream
    decode_only = spec.count == "decode_only"
    warmup_steps, max_steps = run.warmup_steps, run.max_steps
    # Counted steps are known when they are scheduled: none is scheduled past the limit.
    budget = spec.counted_steps
    num_counted = 0
    in_flight: collections.deque = collections.deque()
    depth = spec.pp or MAX_IN_FLIGHT  # --pp: one micro-batch per stage in flight
    seq_next = 0      # the next step to send
    checks: collections.deque = collections.deque()  # steps whose digests were asked for
    total_out = num_done = 0
    t_start = run.t_start
    if flusher is not None:
        flusher.start(t_start)
    next_flush = flusher.next_ns if flusher is not None else None
    t_row, c_row, gc_row, gc_ns_row = perf(), cpu(), gc_counter.count, gc_counter.ns
    beat = no_beat  # until the loop has ended well: no KeepAlive to a failed runner
    try:
        while True:
            state = None
            if len(in_flight) < depth and (max_steps is None or sched.step < max_steps) \
                    and (budget is None or num_counted < budget):
                state = admission.ready()
                if state == _READY:
                    if seq_next == run.pause_seq and not run.paused:
                        p0, c0, g0, gn0 = perf(), cpu(), gc_counter.count, gc_counter.ns
                        # --pp: the first stages have waited since the last frame
                        run.end_warmup(end_beat(link, frontend, fresh=not spec.pp), link)
                        t_start = run.t_start  # a timed replay's clock stopped meanwhile
                        # the pause is in no row (the next one to end began before it)
                        t_row += perf() - p0
                        c_row += cpu() - c0
                        gc_row += gc_counter.count - g0
                        gc_ns_row += gc_counter.ns - gn0
                    if not warmup_steps and run.t_warm is None:  # else: after the
                        run.start_totals()  # last warm-up step's update (below)
                    t0 = perf()
                    plan = sched.schedule()
                    t1 = perf()
                    if plan is not None:
                        so = sched.build_scheduler_output(plan)
                        t2 = perf()
                        frame, t3, t4 = send_step(so, seq_next)
                        in_flight.append((seq_next, plan, so, frame,
                                          t1 - t0, t2 - t1, t3 - t2, t4 - t3,
                                          len(sched.waiting)))
                        if seq_next >= warmup_steps and (plan.is_decode_only
                                                         or not decode_only):
                            num_counted += 1
                        if interval and (seq_next + 1) % interval == 0:
                            link.request_input_digests()
                            checks.append(seq_next)
                        seq_next += 1
                        if len(in_flight) < depth:
                            continue  # keep two (pp) steps in flight before waiting
                    elif not in_flight:
                        raise SchedulerError(f"step {sched.step}: nothing could be "
                                             "scheduled and no step is in flight")
            if not in_flight:
                if state == _DRAINED or state is None:
                    break  # drained, or max_steps or the counted steps reached
                if timed:  # nothing has arrived yet: wait for it, checking the runner
                    wait_for_arrival(link, frontend, result, admission.wait_s, t_row)
                    t_row, c_row = perf(), cpu()
                continue
            (seq, plan, so, frame, sched_ns, build_ns, encode_ns, send_ns,
             num_waiting) = in_flight.popleft()
            t5a = perf()
            out, r2s_bytes, t5, t6 = recv_step(seq)
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
                    len(finished), len(plan.preempted), plan.num_resumed, num_waiting,
                    sched_ns, build_ns,
                    encode_ns, send_ns, t5 - t5a, t6 - t5, t7 - t6, t7 - t_row, c1 - c_row,
                    len(frame), r2s_bytes, gc_counter.count - gc_row,
                    gc_counter.ns - gc_ns_row, t7 - t_start))
            if counted and frame and keep_frames:  # (no frame in the single process)
                result.s2r_frames.append(frame)
                result.r2s_frames.append(link.last_reply)
                counted_seqs.append(seq)
            schedule.add(plan)
            oracle.expect_planned(seq, plan, so)
            if checks and checks[0] == seq:
                checks.popleft()
                oracle.check_requested()
            if finished:
                num_done += len(finished)
                workload.on_finished(len(finished), plan.step)
                if release is not None:
                    release(sched, finished)
            if on_step is not None:
                on_step(seq + 1, total_out, num_done)
            if next_flush is not None and t7 >= next_flush:
                flusher.flush(sched, result, arrival_s, speedup if timed else None)
                next_flush = flusher.next_ns
            if seq + 1 == warmup_steps:  # its output applied: the loop totals start
                run.start_totals()
                t_row, c_row = run.t_warm, cpu()
            else:
                t_row, c_row = perf(), cpu()
            gc_row, gc_ns_row = gc_counter.count, gc_counter.ns
        oracle.check()
        beat = end_beat(link, frontend, fresh=not spec.pp)
    finally:
        gc_counter.close()
        result.schedule_digest = schedule.hexdigest()
        run.finish(seq_next, speedup if timed else None, flusher, beat=beat)
    return counted_seqs
