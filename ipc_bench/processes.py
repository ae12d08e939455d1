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


def run_case(spec: CaseSpec, on_step: Optional[Callable[[int], None]] = None) -> CaseResult:
    """Run one case end to end; returns its ``CaseResult``.

    Raises ``CaseError`` (one line) if the runner dies, stops answering, reports an
    error or sends an undecodable frame, and ``SchedulerError`` on a scheduling limit.
    The runner process is reaped in every case.
    """
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

        frames, counted_seqs = _scheduler_loop(spec, socks, peer_problem, read_runner_error,
                                               result, on_step)
        if spec.floor and counted_seqs:
            result.floor_step_ns = _floor(spec, socks, peer_problem, read_runner_error,
                                          frames, counted_seqs)
        socks.s2r.send(_EMPTY)
        send_control(socks.ctl, Stop())
        report = recv_control(socks.ctl, spec.peer_timeout_s, peer_problem, "runner report")
        if isinstance(report, ErrorReport):
            raise CaseError(f"runner failed at step {report.step}: {report.message}")
        if not isinstance(report, RunnerReport):
            raise CaseError(f"expected a runner report, got {type(report).__name__}")
        result.runner_columns = report.columns
        result.s2r_frames = frames
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


def _scheduler_loop(spec, socks, peer_problem, read_runner_error, result, on_step):
    """The measured loop. Returns (recorded s2r frames of counted steps, their seqs)."""
    sched = Scheduler(spec.scheduler, spec.policy)
    workload = spec.make_workload()
    encode = scheduler_output_codec(spec.codec).encode
    out_codec = model_runner_output_codec(spec.codec)
    decode = out_codec.decode
    send = socks.s2r.send
    r2s = socks.r2s
    timeout_s = spec.peer_timeout_s
    perf = time.perf_counter_ns
    cpu = time.thread_time_ns
    gc_counter = _GcCounter()
    rows = result.sched_rows
    record = rows.append
    frames: list[bytes] = []
    counted_seqs: list[int] = []
    decode_only = spec.count == "decode_only"
    warmup_steps = spec.warmup_steps
    max_steps = spec.max_steps
    seq = 0
    total_out = 0
    t_wall = time.perf_counter()
    try:
        while max_steps is None or sched.step < max_steps:
            for r in workload.arrivals(sched.step):
                sched.add_request(r.req_id, r.index, r.prompt_token_ids, r.max_tokens)
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
            frame = encode(so)
            t3 = perf()
            send(frame)
            t4 = perf()
            reply = recv_frame(r2s, timeout_s, peer_problem, f"ModelRunnerOutput for step {seq}")
            t5 = perf()
            if not reply:
                raise CaseError(read_runner_error())
            try:
                out = decode(reply)
            except DecodeError as exc:
                raise CaseError(f"step {seq}: undecodable ModelRunnerOutput: {exc}") from None
            t6 = perf()
            finished = sched.update_from_output(plan, out)
            t7 = perf()
            c1 = cpu()
            warm = seq < warmup_steps
            counted = not warm and (plan.is_decode_only if decode_only else True)
            out_tokens = sched.num_output_tokens - total_out
            total_out = sched.num_output_tokens
            record((seq, plan.step, int(warm), int(counted), len(plan.num_scheduled_tokens),
                    len(plan.new_reqs), plan.total_num_scheduled_tokens, out_tokens,
                    len(finished), t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5,
                    t7 - t6, t7 - t0, c1 - c0, len(frame), len(reply),
                    gc_counter.count - gc0))
            if counted:
                frames.append(frame)
                counted_seqs.append(seq)
            if finished:
                workload.on_finished(len(finished), plan.step)
            seq += 1
            if on_step is not None:
                on_step(seq)
    finally:
        gc_counter.close()
        gc.unfreeze()
        result.wall_s = time.perf_counter() - t_wall
        result.num_rejected = sched.num_rejected
        result.token_digest = token_digest(sched.requests.values())
        result.requests = [
            dict(index=r.index, req_id=r.req_id, num_prompt_tokens=r.num_prompt_tokens,
                 num_output_tokens=len(r.all_token_ids) - r.num_prompt_tokens,
                 max_tokens=r.max_tokens, arrival_step=r.arrival_step,
                 first_scheduled_step=r.first_scheduled_step,
                 first_token_step=r.first_token_step, finish_step=r.finish_step,
                 finish_reason=r.finish_reason or "")
            for r in sorted(sched.requests.values(), key=lambda r: r.index)]
        result.prompt_lens = {r.req_id: r.num_prompt_tokens for r in sched.requests.values()}
    return frames, counted_seqs


def _floor(spec, socks, peer_problem, read_runner_error, frames, seqs) -> list[int]:
    """Exchange the recorded frames again, bare. Returns per-step ns."""
    sched_codec = scheduler_output_codec(spec.codec)
    msgs = [sched_codec.decode(f) for f in frames]  # objects, so encode is re-timed
    decode = model_runner_output_codec(spec.codec).decode
    encode = sched_codec.encode
    send = socks.s2r.send
    r2s = socks.r2s
    send(_EMPTY)
    send_control(socks.ctl, BeginFloor(steps=seqs))
    perf = time.perf_counter_ns
    out = []
    gc.collect()
    gc.freeze()
    try:
        t_prev = perf()
        for i, so in enumerate(msgs):
            send(encode(so))
            reply = recv_frame(r2s, spec.peer_timeout_s, peer_problem, f"floor reply {i}")
            if not reply:
                raise CaseError(read_runner_error())
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
        socks.close()
        ctx.term()


class _RunnerLoop:
    """The runner's receive -> execute -> reply loop, with per-step timing."""

    def __init__(self, config: RunnerConfig, socks: RunnerSockets, runner: ModelRunner,
                 peer_problem) -> None:
        self.config = config
        self.socks = socks
        self.runner = runner
        self.peer_problem = peer_problem
        self.seq = 0
        self.columns: dict[str, list[int]] = {name: [] for name in RUNNER_COLUMNS}
        self.out_frames: list[bytes] = []

    def run(self) -> None:
        cfg = self.config
        in_codec = scheduler_output_codec(cfg.codec)
        decode = in_codec.decode
        encode = model_runner_output_codec(cfg.codec).encode
        s2r, r2s, ctl = self.socks.s2r, self.socks.r2s, self.socks.ctl
        send = r2s.send
        runner = self.runner
        perf = time.perf_counter_ns
        gc_counter = _GcCounter()
        cols = [self.columns[name].append for name in RUNNER_COLUMNS]
        (rec_idle, rec_decode, rec_update, rec_prepare, rec_forward, rec_writeback,
         rec_build, rec_encode, rec_send, rec_gc) = cols
        warmup = cfg.warmup_steps
        out_frames = self.out_frames
        idle_timeout = cfg.peer_timeout_s
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
            rec_idle(t1 - t0)
            if self.seq == warmup:
                gc.collect()
                gc.freeze()
                t1 = perf()
            gc0 = gc_counter.count
            so = decode(frame)
            t2 = perf()
            runner.update_states(so)
            t3 = perf()
            inputs = runner.prepare_inputs(so)
            t4 = perf()
            sampled = runner.sample(inputs)
            t5 = perf()
            valid = runner.write_back(inputs, sampled)
            t6 = perf()
            out = runner.build_output(inputs, valid)
            t7 = perf()
            reply = encode(out)
            t8 = perf()
            send(reply)
            t9 = perf()
            rec_decode(t2 - t1)
            rec_update(t3 - t2)
            rec_prepare(t4 - t3)
            rec_forward(t5 - t4)
            rec_writeback(t6 - t5)
            rec_build(t7 - t6)
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
