"""The two process loops: the scheduler side (this process) and the runner (a child).

``run_case(spec)`` starts a runner process, performs the start-up handshake (protocol
version + ``RunnerConfig``), runs the scheduler loop over the case's workload, then
the floor (the same recorded frames exchanged bare: same codec, same sockets, no
scheduling, no metrics), collects the runner's per-step report and reaps the child
whatever happens. The runner is ``python -m ipc_bench.runner CTL_ENDPOINT``.

Per step the scheduler times: schedule, build, encode, send, wait, decode, update;
the runner: idle (waiting), decode, update_states, prepare, forward+sample,
write-back, build, encode, send. Measurement data never rides on the data sockets.
After ``warmup_steps`` exchanges both processes collect and freeze the heap
(``gc.freeze()``, as vLLM's ``freeze_gc_heap``).
"""

from __future__ import annotations

import ctypes
import gc
import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import zmq

from ipc_bench.case import RUNNER_COLUMNS, CaseResult, CaseSpec
from ipc_bench.codec import DecodeError, model_runner_output_codec, scheduler_output_codec
from ipc_bench.config import ConfigError, RunnerConfig, decode_runner_config, encode_config
from ipc_bench.messages import (
    PROTOCOL_VERSION,
    ModelRunnerOutput,
    SchedulerOutput,
    BeginFloor,
    ErrorReport,
    Handshake,
    Ready,
    RunnerReport,
    Stop,
)
from ipc_bench.model_runner import ModelRunner, RunnerError
from ipc_bench.scheduler import ProtocolError, Scheduler, SchedulerError
from ipc_bench.transport import (
    EndpointDir,
    PeerError,
    RunnerSockets,
    SchedulerSockets,
    recv_control,
    recv_frame,
    send_control,
)

STARTUP_TIMEOUT_S = 60.0
#: How long the exiting runner keeps trying to deliver its last messages (a RunnerReport
#: of a long run is megabytes; with ZMQ_LINGER 0 the context would discard it unsent).
RUNNER_CLOSE_LINGER_MS = 5000
_EMPTY = b""


class CaseError(RuntimeError):
    """A case failed; the message is one line saying which process and why."""


class _GcCounter:
    """Counts garbage collections of this process (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.count = 0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self.count += 1

    def close(self) -> None:
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)


def token_digest(requests) -> str:
    """sha256 over each request's output token ids, in workload index order.

    Each request contributes its index, its output count and its ids (int64 LE), so
    a token moved between requests changes the digest.
    """
    h = hashlib.sha256()
    for req in sorted(requests, key=lambda r: r.index):
        out = req.output_token_ids
        h.update(np.array([req.index, len(out)], dtype="<i8").tobytes())
        h.update(np.asarray(out, dtype="<i8").tobytes())
    return h.hexdigest()


def _describe_exit(proc: subprocess.Popen) -> Optional[str]:
    code = proc.poll()
    if code is None:
        return None
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"runner process {proc.pid} was killed by {name}"
    return f"runner process {proc.pid} exited with code {code}"


def _spawn_runner(ctl_endpoint: str, stderr_path: str) -> subprocess.Popen:
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = package_root + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    with open(stderr_path, "wb") as err:
        return subprocess.Popen([sys.executable, "-m", "ipc_bench.runner", ctl_endpoint],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err, env=env, close_fds=True)


def _last_line(path: str) -> str:
    try:
        lines = [ln for ln in Path(path).read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1].strip() if lines else ""


def reap(proc: Optional[subprocess.Popen], grace_s: float = 2.0) -> None:
    """Make sure ``proc`` is gone: wait ``grace_s``, then SIGKILL and wait."""
    if proc is None:
        return
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# ======================================================================================
# Scheduler side


def run_case(spec: CaseSpec,
             on_step: Optional[Callable[[int, int, int], None]] = None) -> CaseResult:
    """Run one case end to end; returns its ``CaseResult``.

    ``spec.transport == "inproc"`` runs the single-process baseline (scheduler and
    runner objects in this process, no serialization, as vLLM's uni executor);
    otherwise a runner process is started and reaped in every case.
    ``on_step(seq, num_output_tokens, num_finished)`` is called after each step,
    outside its timed region, with the steps done, the tokens sampled and the
    requests finished so far (progress display: ``ipc_bench.progress``).

    Raises ``CaseError`` (one line) if the runner dies, stops answering, reports an
    error or sends an undecodable frame, and ``SchedulerError`` on a scheduling limit.
    """
    if spec.transport == "inproc":
        return _run_case_inproc(spec, on_step)
    result = CaseResult(spec=spec)
    endpoint_dir = EndpointDir()
    ctx = zmq.Context()
    socks = SchedulerSockets(ctx, spec.transport, endpoint_dir)
    proc: Optional[subprocess.Popen] = None
    stderr_path = os.path.join(endpoint_dir.path, "runner.stderr")
    try:
        proc = _spawn_runner(socks.endpoints.ctl, stderr_path)

        def peer_problem() -> Optional[str]:
            problem = _describe_exit(proc)
            if problem:
                last = _last_line(stderr_path)
                return f"{problem}: {last}" if last else problem
            return None

        config = RunnerConfig(
            scheduler=spec.scheduler, model=spec.model, policy=spec.policy, codec=spec.codec,
            warmup_steps=spec.warmup_steps, peer_timeout_s=spec.peer_timeout_s,
            s2r_endpoint=socks.endpoints.s2r, r2s_endpoint=socks.endpoints.r2s)
        config.validate()
        send_control(socks.ctl, Handshake(PROTOCOL_VERSION, encode_config(config)))
        reply = recv_control(socks.ctl, STARTUP_TIMEOUT_S, peer_problem, "runner handshake")
        if isinstance(reply, ErrorReport):
            raise CaseError(f"runner refused the handshake: {reply.message}")
        if not isinstance(reply, Ready) or reply.protocol_version != PROTOCOL_VERSION:
            raise CaseError(f"unexpected handshake reply from runner: {reply!r}")
        result.runner_device = reply.device

        def read_runner_error() -> str:
            try:
                msg = recv_control(socks.ctl, 5.0, peer_problem, "runner error report")
            except PeerError as exc:
                return str(exc)
            if isinstance(msg, ErrorReport):
                return f"runner failed at step {msg.step}: {msg.message}"
            return f"unexpected control message from runner: {type(msg).__name__}"

        link = _ProcessLink(spec, socks, peer_problem, read_runner_error)
        counted_seqs = _scheduler_loop(spec, link, result, on_step)
        result.counted_seqs = counted_seqs
        if spec.floor and counted_seqs:
            result.s2r_marker_frames += 1
            result.floor_step_ns = _floor(spec, link, result.s2r_frames, counted_seqs)
        result.s2r_marker_frames += 1
        socks.s2r.send(_EMPTY)
        send_control(socks.ctl, Stop())
        report = recv_control(socks.ctl, spec.peer_timeout_s, peer_problem, "runner report")
        if isinstance(report, ErrorReport):
            raise CaseError(f"runner failed at step {report.step}: {report.message}")
        if not isinstance(report, RunnerReport):
            raise CaseError(f"expected a runner report, got {type(report).__name__}")
        result.runner_columns = report.columns
        return result
    except PeerError as exc:
        raise CaseError(str(exc)) from None
    finally:
        socks.close()
        ctx.term()
        if proc is not None:
            if proc.poll() is None:
                reap(proc, grace_s=2.0)
        endpoint_dir.cleanup()


def _run_case_inproc(spec: CaseSpec, on_step) -> CaseResult:
    """Single-process baseline: the same scheduler loop calling the runner directly."""
    result = CaseResult(spec=spec)
    runner = ModelRunner(spec.scheduler, spec.model, spec.policy)
    result.runner_device = f"{runner.model.device} (in-process)"
    stepper = TimedRunner(runner)
    link = _InProcessLink(stepper)
    _scheduler_loop(spec, link, result, on_step)
    zero = [0] * len(stepper.columns["runner_update_ns"])
    result.runner_columns = dict(stepper.columns, runner_idle_ns=zero, runner_decode_ns=zero,
                                 runner_encode_ns=zero, runner_send_ns=zero,
                                 runner_gc_collections=zero, runner_t0_ns=zero)
    return result


class _ProcessLink:
    """Scheduler side of the two-process exchange: encode, send, wait, decode."""

    def __init__(self, spec: CaseSpec, socks: SchedulerSockets, peer_problem, read_runner_error):
        self.encode = scheduler_output_codec(spec.codec).encode
        self.decode = model_runner_output_codec(spec.codec).decode
        self.send = socks.s2r.send
        self.r2s = socks.r2s
        self.timeout_s = spec.peer_timeout_s
        self.peer_problem = peer_problem
        self.read_runner_error = read_runner_error
        self.socks = socks
        self.last_reply = b""  # the last ModelRunnerOutput frame (kept for counted steps)

    def exchange(self, so: SchedulerOutput, seq: int, perf=time.perf_counter_ns):
        """-> (ModelRunnerOutput, s2r frame, r2s bytes, t_encoded, t_sent, t_received, t_decoded)."""
        frame = self.encode(so)
        t3 = perf()
        self.send(frame)
        t4 = perf()
        reply = recv_frame(self.r2s, self.timeout_s, self.peer_problem,
                           f"ModelRunnerOutput for step {seq}")
        t5 = perf()
        self.last_reply = reply
        if not reply:
            raise CaseError(self.read_runner_error())
        try:
            out = self.decode(reply)
        except DecodeError as exc:
            raise CaseError(f"step {seq}: undecodable ModelRunnerOutput: {exc}") from None
        return out, frame, len(reply), t3, t4, t5, perf()

    def check_peer(self) -> None:
        problem = self.peer_problem()
        if problem:
            raise CaseError(problem)


class _InProcessLink:
    """Single-process exchange: the runner executes the SchedulerOutput object itself."""

    last_reply = b""

    def __init__(self, stepper: "TimedRunner"):
        self.stepper = stepper

    def exchange(self, so: SchedulerOutput, seq: int, perf=time.perf_counter_ns):
        t = perf()
        out = self.stepper.execute(so)
        return out, b"", 0, t, t, perf(), perf()

    def check_peer(self) -> None:
        pass


def _scheduler_loop(spec: CaseSpec, link, result: CaseResult, on_step) -> list[int]:
    """The measured loop; fills ``result``. Returns the seqs of the counted steps.

    Logical clock (``spec.timed`` false): arrivals by step number, idle steps skipped.
    Timed clock: a request arrives when ``elapsed * speedup >= arrival_s``; while
    nothing runs the loop sleeps until the next arrival (checking the peer).
    """
    sched = Scheduler(spec.scheduler, spec.policy)
    timed = spec.trace_speedup is not None
    if timed:
        sched.record_token_steps = True
    workload = spec.make_workload()
    exchange = link.exchange
    perf = time.perf_counter_ns
    cpu = time.thread_time_ns
    gc_counter = _GcCounter()
    record = result.sched_rows.append
    frames = result.s2r_frames
    r2s_frames = result.r2s_frames
    counted_seqs: list[int] = []
    decode_only = spec.count == "decode_only"
    warmup_steps = spec.warmup_steps
    max_steps = spec.max_steps
    speedup = spec.trace_speedup or 1.0
    arrival_s: dict[int, float] = {}
    seq = 0
    total_out = 0
    num_done = 0
    t_start = perf()
    try:
        while max_steps is None or sched.step < max_steps:
            if timed:
                now_s = (perf() - t_start) / 1e9 * speedup
                for r in workload.arrivals_until(now_s):
                    sched.add_request(r.req_id, r.index, r.prompt_token_ids, r.max_tokens)
                    arrival_s[r.index] = r.arrival_s
                if not sched.has_unfinished_requests():
                    nxt = workload.next_arrival_s()
                    if nxt is None:
                        break
                    link.check_peer()
                    time.sleep(min(0.05, max(0.0, (nxt - now_s) / speedup)))
                    continue
            else:
                for r in workload.arrivals(sched.step):
                    sched.add_request(r.req_id, r.index, r.prompt_token_ids, r.max_tokens)
                    arrival_s[r.index] = r.arrival_s
                if not sched.has_unfinished_requests():
                    nxt = workload.next_arrival_step()
                    if nxt is None:
                        break
                    sched.step = max(nxt, sched.step + 1)  # logical clock skips idle steps
                    continue
            if seq == warmup_steps:
                gc.collect()
                gc.freeze()
            gc0 = gc_counter.count
            c0 = cpu()
            t0 = perf()
            plan = sched.schedule()
            t1 = perf()
            so = sched.build_scheduler_output(plan)
            t2 = perf()
            out, frame, r2s_bytes, t3, t4, t5, t6 = exchange(so, seq)
            finished = sched.update_from_output(plan, out)
            t7 = perf()
            c1 = cpu()
            warm = seq < warmup_steps
            counted = not warm and (plan.is_decode_only if decode_only else True)
            out_tokens = sched.num_output_tokens - total_out
            total_out = sched.num_output_tokens
            record((seq, plan.step, int(warm), int(counted), len(plan.num_scheduled_tokens),
                    len(plan.new_reqs), plan.total_num_scheduled_tokens, out_tokens,
                    len(finished), len(plan.preempted), plan.num_resumed, t1 - t0, t2 - t1,
                    t3 - t2, t4 - t3, t5 - t4, t6 - t5, t7 - t6, t7 - t0, c1 - c0, len(frame),
                    r2s_bytes, gc_counter.count - gc0, t7 - t_start))
            if counted and frame:
                frames.append(frame)
                r2s_frames.append(link.last_reply)
                counted_seqs.append(seq)
            if finished:
                num_done += len(finished)
                workload.on_finished(len(finished), plan.step)
            seq += 1
            if on_step is not None:
                on_step(seq, total_out, num_done)
    finally:
        gc_counter.close()
        gc.unfreeze()
        result.wall_s = (perf() - t_start) / 1e9
        result.num_rejected = sched.num_rejected
        result.token_digest = token_digest(sched.requests.values())
        result.requests = _request_records(sched, result.sched_rows, arrival_s,
                                           speedup if timed else None)
        result.prompt_lens = {r.req_id: r.num_prompt_tokens for r in sched.requests.values()}
    return counted_seqs


def _request_records(sched: Scheduler, rows: list[tuple], arrival_s: dict[int, float],
                     speedup: Optional[float]) -> list[dict]:
    """Per-request records; with a timed clock also latencies in seconds of wall time.

    TTFT is measured from the request's intended arrival (trace time / speedup), so
    queueing counts; E2E likewise; TPOT = (E2E - TTFT) / (output_len - 1), left empty
    for one-token requests; ``itl_s`` lists the gaps between consecutive tokens.
    """
    t_end_s = [row[-1] / 1e9 for row in rows]  # end of each step (seq), since case start
    seq_of_step = {row[1]: row[0] for row in rows}
    out = []
    for r in sorted(sched.requests.values(), key=lambda r: r.index):
        rec = dict(index=r.index, req_id=r.req_id, num_prompt_tokens=r.num_prompt_tokens,
                   num_output_tokens=len(r.all_token_ids) - r.num_prompt_tokens,
                   max_tokens=r.max_tokens, arrival_step=r.arrival_step,
                   first_scheduled_step=r.first_scheduled_step,
                   first_token_step=r.first_token_step, finish_step=r.finish_step,
                   finish_reason=r.finish_reason or "", preemptions=r.num_preemptions)
        if speedup is not None:
            arrive = arrival_s.get(r.index, 0.0) / speedup
            times = [t_end_s[seq_of_step[s]] for s in r.token_steps if s in seq_of_step]
            rec["arrival_s"] = arrive
            rec["ttft_s"] = times[0] - arrive if times else None
            rec["e2e_s"] = times[-1] - arrive if times else None
            rec["tpot_s"] = ((times[-1] - times[0]) / (len(times) - 1)
                             if len(times) > 1 else None)
            rec["itl_s"] = [b - a for a, b in zip(times, times[1:])]
        out.append(rec)
    return out


def _floor(spec: CaseSpec, link: _ProcessLink, frames: list[bytes], seqs: list[int]) -> list[int]:
    """Exchange the recorded frames again, bare. Returns per-step ns."""
    sched_codec = scheduler_output_codec(spec.codec)
    msgs = [sched_codec.decode(f) for f in frames]  # objects, so encode is re-timed
    decode = link.decode
    encode = link.encode
    send = link.send
    r2s = link.r2s
    send(_EMPTY)
    send_control(link.socks.ctl, BeginFloor(steps=seqs))
    perf = time.perf_counter_ns
    out = []
    gc.collect()
    gc.freeze()
    try:
        t_prev = perf()
        for i, so in enumerate(msgs):
            send(encode(so))
            reply = recv_frame(r2s, spec.peer_timeout_s, link.peer_problem, f"floor reply {i}")
            if not reply:
                raise CaseError(link.read_runner_error())
            decode(reply)
            t = perf()
            out.append(t - t_prev)
            t_prev = t
    finally:
        gc.unfreeze()
    return out


# ======================================================================================
# Runner side


def _set_parent_death_signal() -> None:
    """Linux: SIGKILL this process when its parent dies (PR_SET_PDEATHSIG)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def runner_main(ctl_endpoint: str) -> int:
    """Entry point of the runner process; returns its exit code."""
    _set_parent_death_signal()
    parent = os.getppid()

    def peer_problem() -> Optional[str]:
        if os.getppid() != parent:
            return "scheduler process is gone"
        return None

    ctx = zmq.Context()
    socks = RunnerSockets(ctx, ctl_endpoint)
    step = -1
    try:
        try:
            hs = recv_control(socks.ctl, STARTUP_TIMEOUT_S, peer_problem, "handshake")
        except PeerError as exc:
            print(f"runner: {exc}", file=sys.stderr)
            return 3
        if not isinstance(hs, Handshake):
            send_control(socks.ctl, ErrorReport(f"expected a handshake, got {type(hs).__name__}"))
            return 3
        if hs.protocol_version != PROTOCOL_VERSION:
            send_control(socks.ctl, ErrorReport(
                f"protocol version mismatch: scheduler speaks {hs.protocol_version}, "
                f"runner speaks {PROTOCOL_VERSION}"))
            return 3
        try:
            config = decode_runner_config(hs.config)
        except ConfigError as exc:
            send_control(socks.ctl, ErrorReport(str(exc)))
            return 3
        socks.connect_data(config.s2r_endpoint, config.r2s_endpoint)
        try:
            runner = ModelRunner(config.scheduler, config.model, config.policy)
        except ConfigError as exc:  # e.g. a torch KV cache too large for the device
            send_control(socks.ctl, ErrorReport(str(exc)))
            return 3
        send_control(socks.ctl, Ready(PROTOCOL_VERSION, os.getpid(), runner.model.device))
        loop = _RunnerLoop(config, socks, runner, peer_problem)
        try:
            loop.run()
        except (RunnerError, ProtocolError, DecodeError, SchedulerError) as exc:
            step = loop.seq
            socks.r2s.send(_EMPTY)
            send_control(socks.ctl, ErrorReport(f"{type(exc).__name__}: {exc}", step))
            return 4
        except PeerError as exc:
            print(f"runner: {exc}", file=sys.stderr)
            return 5
        return 0
    except KeyboardInterrupt:
        return 130
    finally:
        socks.close(linger_ms=RUNNER_CLOSE_LINGER_MS)
        ctx.term()


class TimedRunner:
    """A ``ModelRunner`` whose phases are timed per step into ``columns``
    (``runner_update_ns`` .. ``runner_build_ns``); shared by both executors."""

    PHASES = ("runner_update_ns", "runner_prepare_ns", "runner_forward_ns",
              "runner_writeback_ns", "runner_build_ns")

    def __init__(self, runner: ModelRunner):
        self.runner = runner
        self.columns: dict[str, list[int]] = {name: [] for name in self.PHASES}
        (self._rec_update, self._rec_prepare, self._rec_forward, self._rec_writeback,
         self._rec_build) = [self.columns[name].append for name in self.PHASES]

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
        self._rec_update(t1 - t0)
        self._rec_prepare(t2 - t1)
        self._rec_forward(t3 - t2)
        self._rec_writeback(t4 - t3)
        self._rec_build(t5 - t4)
        return out


class _RunnerLoop:
    """The runner's receive -> execute -> reply loop, with per-step timing."""

    def __init__(self, config: RunnerConfig, socks: RunnerSockets, runner: ModelRunner,
                 peer_problem) -> None:
        self.config = config
        self.socks = socks
        self.stepper = TimedRunner(runner)
        self.peer_problem = peer_problem
        self.seq = 0
        self.columns: dict[str, list[int]] = {name: [] for name in RUNNER_COLUMNS}
        self.columns.update(self.stepper.columns)
        self.out_frames: list[bytes] = []

    def run(self) -> None:
        cfg = self.config
        decode = scheduler_output_codec(cfg.codec).decode
        encode = model_runner_output_codec(cfg.codec).encode
        s2r, r2s, ctl = self.socks.s2r, self.socks.r2s, self.socks.ctl
        send = r2s.send
        execute = self.stepper.execute
        perf = time.perf_counter_ns
        gc_counter = _GcCounter()
        cols = self.columns
        rec_idle, rec_decode, rec_encode, rec_send, rec_gc, rec_t0 = (
            cols[name].append for name in ("runner_idle_ns", "runner_decode_ns",
                                           "runner_encode_ns", "runner_send_ns",
                                           "runner_gc_collections", "runner_t0_ns"))
        warmup = cfg.warmup_steps
        out_frames = self.out_frames
        idle_timeout = cfg.peer_timeout_s
        t_origin = perf()
        while True:
            t0 = perf()
            frame = recv_frame(s2r, idle_timeout, self.peer_problem,
                               f"SchedulerOutput for step {self.seq}")
            t1 = perf()
            if not frame:
                msg = recv_control(ctl, idle_timeout, self.peer_problem, "control message")
                if isinstance(msg, BeginFloor):
                    self._floor(msg.steps, decode, encode)
                    continue
                if isinstance(msg, Stop):
                    gc_counter.close()
                    send_control(ctl, RunnerReport(columns=self.columns))
                    return
                raise ProtocolError(f"unexpected control message {type(msg).__name__}")
            rec_t0(t0 - t_origin)
            rec_idle(t1 - t0)
            if self.seq == warmup:
                gc.collect()
                gc.freeze()
                t1 = perf()
            gc0 = gc_counter.count
            so = decode(frame)
            t2 = perf()
            out = execute(so)
            t7 = perf()
            reply = encode(out)
            t8 = perf()
            send(reply)
            t9 = perf()
            rec_decode(t2 - t1)
            rec_encode(t8 - t7)
            rec_send(t9 - t8)
            rec_gc(gc_counter.count - gc0)
            out_frames.append(reply)
            self.seq += 1

    def _floor(self, seqs: list[int], decode, encode) -> None:
        """Answer each floor frame with the recorded reply of the same step."""
        reply_codec = model_runner_output_codec(self.config.codec)
        outs = [reply_codec.decode(self.out_frames[s]) for s in seqs]
        s2r, send = self.socks.s2r, self.socks.r2s.send
        for i, out in enumerate(outs):
            frame = recv_frame(s2r, self.config.peer_timeout_s, self.peer_problem,
                               f"floor frame {i}")
            decode(frame)
            send(encode(out))
