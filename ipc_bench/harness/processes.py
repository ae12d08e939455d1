"""The two process loops: the scheduler side (this process) and the runner (a child).

``run_case(spec)`` starts a runner process, performs the start-up handshake (protocol
version + ``RunnerConfig``), runs the scheduler loop over the case's workload, then
the floor (the same recorded frames exchanged bare: same codec, same sockets, no
scheduling, no metrics), collects the runner's per-step report and reaps the child
whatever happens. The runner is ``python -m ipc_bench.harness.runner_process CTL_ENDPOINT``.

Per step the scheduler times: schedule, build, encode, send, wait, decode, update;
the runner: idle (waiting), decode, update_states, prepare, forward+sample,
write-back, build, encode, send. Measurement data never rides on the data sockets.
After ``warmup_steps`` exchanges both processes collect and freeze the heap
(``gc.freeze()``, as vLLM's ``freeze_gc_heap``).

Faults (each ends the case with ``CaseError``, one line naming the process, how it
failed and the step; the partial ``CaseResult`` stays in the caller's hands):

- the runner exits or is killed: noticed within ``transport.POLL_SLICE_MS`` (100 ms)
  of any wait, reported with its exit code or signal and the last line it wrote to
  stderr;
- the runner stops answering: after ``CaseSpec.peer_timeout_s`` (default 10 s; the
  handshake and the first step get ``startup_timeout_s``, default 120 s, since they
  pay for imports, model load and, on CUDA, context creation and kernel loading on
  the first forward), reported with its process state, then killed;
- the runner reports an error (``ErrorReport``: a frame it could not decode, a
  message inconsistent with its state, any exception while handling a step), or
  sends a frame the scheduler cannot decode or that contradicts the schedule
  (``ProtocolError``).

The runner in turn exits when the scheduler dies: ``PR_SET_PDEATHSIG`` (SIGKILL)
and, as a fallback that also covers a parent that died before ``prctl`` ran, a check
every 100 ms of its waits that its parent is still the scheduler (pid passed in
``IPC_BENCH_SCHEDULER_PID``). It ignores SIGINT: a Ctrl-C reaches the whole
process group, and the scheduler decides how the run ends and kills the runner.
While a timed replay has nothing to run the scheduler sends ``KeepAlive`` so the
runner's own timeout only fires on a scheduler that really hangs.
"""

from __future__ import annotations

import collections
import ctypes
import gc
import hashlib
import os
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Optional, Protocol

import numpy as np
import zmq

from ipc_bench.harness.spec import RUNNER_COLUMNS, CaseResult, CaseSpec
from ipc_bench.wire.codecs import (
    DecodeError,
    model_runner_output_codec,
    scheduler_output_codec,
)
from ipc_bench.errors import one_line
from ipc_bench.engine.config import ConfigError
from ipc_bench.wire.handshake import (
    RunnerConfig,
    check_pickle_transport,
    decode_runner_config,
    encode_config,
)
from ipc_bench.engine.messages import ModelRunnerOutput, SchedulerOutput
from ipc_bench.wire.control import (
    PROTOCOL_VERSION,
    BeginFloor,
    FloorReady,
    ErrorReport,
    Handshake,
    KeepAlive,
    Ready,
    RunnerReport,
    Stop,
)
from ipc_bench.engine.model_runner import ModelRunner, RunnerError
from ipc_bench.engine.scheduler import ProtocolError, RequestStatus, Scheduler, SchedulerError
from ipc_bench.harness.signals import deferred
from ipc_bench.wire.transport import (
    EndpointDir,
    PeerError,
    PeerTimeout,
    RunnerSockets,
    SchedulerSockets,
    recv_frame,
    send_frame,
)
from ipc_bench.wire.control import recv_control, send_control

#: Default of ``CaseSpec.startup_timeout_s``: handshake and first step.
STARTUP_TIMEOUT_S = 120.0
#: Default of ``CaseSpec.peer_timeout_s``: any later wait for the peer.
PEER_TIMEOUT_S = 10.0
#: How often ``StepFlusher`` writes the running case's rows, in seconds.
FLUSH_INTERVAL_S = 1.0
#: Environment variable carrying the scheduler's pid to the runner.
SCHEDULER_PID_ENV = "IPC_BENCH_SCHEDULER_PID"
#: How long the exiting runner keeps trying to deliver its last messages (a RunnerReport
#: of a long run is megabytes; with ZMQ_LINGER 0 the context would discard it unsent).
RUNNER_CLOSE_LINGER_MS = 5000
_EMPTY = b""
_NOBLOCK = zmq.NOBLOCK


class CaseError(RuntimeError):
    """A case failed; the message is one line saying which process, how, and the step.

    ``step``: the exchange (``seq``) the case failed at, when known.
    """

    def __init__(self, message: str, step: Optional[int] = None):
        super().__init__(one_line(message))
        self.step = step


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


def _digest_bytes(index: int, out: list[int]) -> bytes:
    return (np.array([index, len(out)], dtype="<i8").tobytes()
            + np.asarray(out, dtype="<i8").tobytes())


def token_digest(requests) -> str:
    """sha256 over each request's output token ids, in workload index order.

    Each request contributes its index, its output count and its ids (int64 LE), so
    a token moved between requests changes the digest.
    """
    h = hashlib.sha256()
    for req in sorted(requests, key=lambda r: r.index):
        h.update(_digest_bytes(req.index, req.output_token_ids))
    return h.hexdigest()


class InOrderDigest:
    """``token_digest`` computed as requests finish, in any order: each request's bytes
    wait until every lower index is in, then go into the hash. Requests finish about
    in arrival order, so little waits. ``hexdigest()`` equals ``token_digest`` of the
    same requests."""

    def __init__(self) -> None:
        self._h = hashlib.sha256()
        self._next = 0
        self._waiting: dict[int, bytes] = {}

    def add(self, index: int, out: list[int]) -> None:
        self._waiting[index] = _digest_bytes(index, out)
        while self._next in self._waiting:
            self._h.update(self._waiting.pop(self._next))
            self._next += 1

    def hexdigest(self) -> str:
        h = self._h.copy()
        for index in sorted(self._waiting):  # gaps: indexes that never arrived
            h.update(self._waiting[index])
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


def _process_state(pid: int) -> str:
    """``State:`` of ``/proc/<pid>/status``, e.g. ``S (sleeping)``, or ``unknown``."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("State:"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def _runner_command(ctl_endpoint: str) -> list[str]:
    """The runner's command line (tests substitute a fake runner here)."""
    return [sys.executable, "-m", "ipc_bench.harness.runner_process", ctl_endpoint]


def _spawn_runner(ctl_endpoint: str, stderr_path: str) -> subprocess.Popen:
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = package_root + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    env[SCHEDULER_PID_ENV] = str(os.getpid())
    fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with open(fd, "wb") as err:
        return subprocess.Popen(_runner_command(ctl_endpoint),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err, env=env, close_fds=True)


def _last_line(path: str) -> str:
    try:
        lines = [ln for ln in Path(path).read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1].strip() if lines else ""


def reap(proc: Optional[subprocess.Popen], grace_s: float = 2.0) -> None:
    """Make sure ``proc`` is gone: wait ``grace_s``, then SIGKILL and wait (5 s at
    most: a process stuck in the kernel cannot be waited for forever)."""
    if proc is None:
        return
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        try:
            proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            pass


class CaseSink(Protocol):
    """Where a case's records go while it runs (``results.RunWriter`` implements it)."""

    def partial_steps(self, spec: CaseSpec, rows: list[tuple]) -> None:
        """Scheduler rows of the running case so far (a copy, replaced when it ends)."""

    def stream_steps(self, spec: CaseSpec, rows: list[tuple]) -> None:
        """Final scheduler rows of a streamed case (no runner columns)."""

    def stream_requests(self, spec: CaseSpec, records: list[dict]) -> None:
        """Final per-request records of a streamed case."""

    def stream_rss(self, spec: CaseSpec, samples: list[tuple]) -> None:
        """Memory samples in ``memory.SAMPLE_COLUMNS`` order."""


class StepFlusher:
    """Writes the running case's records every ``interval_s``, between steps.

    The scheduler loop calls ``due(t_ns)`` after each step, outside every timed
    segment (one comparison), and ``flush`` when it is due. Plain cases: the rows so
    far are appended to the sink's partial copy and stay in memory (the runner's
    columns arrive at the end and complete them). Streamed cases
    (``CaseSpec.stream``): rows and the records of finished requests go to their
    final files and leave memory, the token digest is kept in order as requests
    finish (``InOrderDigest``) and ``recording.StreamStats`` keeps the sums the summary
    needs. A flush of N rows costs about 2 us per row on this machine's CPU, spent
    between two steps: the runner's idle time of the next step includes it.

    If this process is killed with SIGKILL, at most the last ``interval_s`` of rows
    is lost; every other way out (exception, SIGINT, SIGTERM) writes all of them.
    """

    def __init__(self, spec: CaseSpec, sink: Optional[CaseSink],
                 interval_s: float = FLUSH_INTERVAL_S, rss_source=None):
        from ipc_bench.harness.recording import StreamStats

        self.spec = spec
        self.sink = sink
        self.stream = spec.stream
        self.interval_ns = int(interval_s * 1e9)
        self.next_ns = 0
        self.n_partial = 0
        self.rss_source = rss_source  # callable -> list of samples so far
        self.n_rss = 0
        self.stats = StreamStats() if self.stream else None
        self.digest = InOrderDigest() if self.stream else None
        self.t_end_by_step: dict[int, float] = {}

    def start(self, t_ns: int) -> None:
        self.next_ns = t_ns + self.interval_ns

    def flush(self, sched: Scheduler, result: CaseResult, arrival_s: dict[int, float],
              speedup: Optional[float], final: bool = False) -> None:
        """Write what is new; ``final``: also every request still live (end of case)."""
        with deferred():
            if self.stream:
                self._flush_stream(sched, result, arrival_s, speedup, final)
            elif self.sink is not None and not final:
                rows = result.sched_rows
                if len(rows) > self.n_partial:
                    self.sink.partial_steps(self.spec, rows[self.n_partial:])
                    self.n_partial = len(rows)
            self.next_ns = time.perf_counter_ns() + self.interval_ns

    def _flush_stream(self, sched, result, arrival_s, speedup, final) -> None:
        rows = result.sched_rows
        chunk = rows[:]
        del rows[:]  # the same list: the loop appends through a bound method
        if chunk:
            self.stats.add_rows(chunk)
            self.t_end_by_step.update((row[1], row[-1] / 1e9) for row in chunk)
            if self.sink is not None:
                self.sink.stream_steps(self.spec, chunk)
        done = [r for r in sched.requests.values()
                if final or r.status in (RequestStatus.FINISHED, RequestStatus.REJECTED)]
        done.sort(key=lambda r: r.index)
        records = [_request_record(r, self.t_end_by_step, arrival_s, speedup) for r in done]
        for r, rec in zip(done, records):
            self.digest.add(r.index, r.output_token_ids)
            self.stats.add_request(rec)
            del sched.requests[r.req_id]
            arrival_s.pop(r.index, None)
        if records and self.sink is not None:
            self.sink.stream_requests(self.spec, records)
        if self.rss_source is not None and self.sink is not None:
            samples = self.rss_source()
            if len(samples) > self.n_rss:
                self.sink.stream_rss(self.spec, samples[self.n_rss:])
                self.n_rss = len(samples)
        # Step end times are needed until every live request has its record.
        live_first = min((r.arrival_step for r in sched.requests.values()), default=None)
        if live_first is None:
            self.t_end_by_step.clear()
        elif chunk:
            for step in [s for s in self.t_end_by_step if s < live_first]:
                del self.t_end_by_step[step]


# ======================================================================================
# Scheduler side


def run_case(spec: CaseSpec,
             on_step: Optional[Callable[[int, int, int], None]] = None, *,
             result: Optional[CaseResult] = None, sink: Optional[CaseSink] = None,
             flush_interval_s: Optional[float] = None) -> CaseResult:
    """Run one case end to end; returns its ``CaseResult``.

    ``spec.transport == "inproc"`` runs the single-process baseline (scheduler and
    runner objects in this process, no serialization, as vLLM's uni executor);
    otherwise a runner process is started and reaped in every case (killed at once
    when the case fails or is interrupted). ``on_step(seq, num_output_tokens,
    num_finished)`` is called after each step, outside its timed region, with the
    steps done, the tokens sampled and the requests finished so far (progress
    display: ``ipc_bench.harness.progress``). ``result``: filled in place, so the caller
    keeps what was measured when this raises. ``sink``: receives the records while
    the case runs (``StepFlusher``, every ``flush_interval_s``, default
    ``FLUSH_INTERVAL_S``).

    Raises ``CaseError`` (one line) if the runner dies, stops answering, reports an
    error or sends an undecodable or inconsistent frame; ``SchedulerError`` on a
    scheduling limit; ``ConfigError`` for a configuration the runner must refuse
    (pickle over TCP without ``allow_pickle_over_tcp``).
    """
    result = result if result is not None else CaseResult(spec=spec)
    if flush_interval_s is None:
        flush_interval_s = FLUSH_INTERVAL_S
    if spec.transport == "inproc":
        return _run_case_inproc(spec, on_step, result, sink, flush_interval_s)
    if spec.stream and spec.floor:
        raise ConfigError("a streamed case keeps no frames for the floor: set floor=False")
    check_pickle_transport(spec.codec, f"{spec.transport}://", spec.allow_pickle_over_tcp)
    endpoint_dir = EndpointDir()
    stderr_path = os.path.join(endpoint_dir.path, "runner.stderr")
    ctx = zmq.Context()
    socks: Optional[SchedulerSockets] = None
    proc: Optional[subprocess.Popen] = None
    sampler = None
    clean = False
    exiting = []  # set when the runner reported an error: it exits by itself
    try:
        socks = SchedulerSockets(ctx, spec.transport, endpoint_dir, host=spec.host)
        config = RunnerConfig(
            scheduler=spec.scheduler, model=spec.model, policy=spec.policy, codec=spec.codec,
            warmup_steps=spec.warmup_steps, peer_timeout_s=spec.peer_timeout_s,
            s2r_endpoint=socks.endpoints.s2r, r2s_endpoint=socks.endpoints.r2s,
            record_steps=not spec.stream, allow_pickle_over_tcp=spec.allow_pickle_over_tcp,
            bare_loop=spec.instrumentation == "totals")
        config.validate()
        with deferred():  # the handle must be kept, whatever signal arrives
            proc = _spawn_runner(socks.endpoints.ctl, stderr_path)

        def peer_problem() -> Optional[str]:
            problem = _describe_exit(proc)
            if problem:
                last = _last_line(stderr_path)
                return f"{problem} ({last})" if last else problem
            return None

        send_control(socks.ctl, Handshake(PROTOCOL_VERSION, encode_config(config)),
                     spec.startup_timeout_s, peer_problem)
        reply = recv_control(socks.ctl, spec.startup_timeout_s, peer_problem,
                             "handshake reply from the runner")
        if isinstance(reply, ErrorReport):
            exiting.append(True)
            raise CaseError(f"runner refused the handshake: {reply.message}")
        if not isinstance(reply, Ready):
            raise CaseError(f"unexpected handshake reply from runner: {type(reply).__name__}")
        if reply.protocol_version != PROTOCOL_VERSION:
            raise CaseError(f"protocol version mismatch: runner speaks {reply.protocol_version}, "
                            f"scheduler speaks {PROTOCOL_VERSION}")
        result.runner_device = reply.device
        result.runner_pid = proc.pid

        def read_runner_error(seq: int) -> CaseError:
            try:
                msg = recv_control(socks.ctl, 5.0, peer_problem, "error report from the runner")
            except PeerError as exc:
                return CaseError(str(exc), seq)
            if isinstance(msg, ErrorReport):
                exiting.append(True)
                return CaseError(f"runner failed at step {msg.step}: {msg.message}", msg.step)
            return CaseError(f"unexpected control message from runner at step {seq}: "
                             f"{type(msg).__name__}", seq)

        rss_source = None
        if spec.sample_rss_s:
            from ipc_bench.harness.memory import RssSampler

            sampler = RssSampler([os.getpid(), proc.pid], spec.sample_rss_s).start()
            rss_source = lambda: sampler.samples  # noqa: E731
        link = _ProcessLink(spec, socks, peer_problem, read_runner_error, result)
        flusher = StepFlusher(spec, sink, flush_interval_s, rss_source)
        try:
            if spec.instrumentation == "totals":
                counted_seqs = _scheduler_loop_bare(spec, link, result)
            else:
                counted_seqs = _scheduler_loop(spec, link, result, on_step, flusher)
            result.counted_seqs = counted_seqs
            if spec.floor and counted_seqs:
                result.s2r_marker_frames += 1
                result.floor_step_ns = _floor(spec, link, result.s2r_frames, counted_seqs)
            result.s2r_marker_frames += 1
            send_frame(socks.s2r, _EMPTY, spec.peer_timeout_s, peer_problem, "the stop marker")
            send_control(socks.ctl, Stop(), spec.peer_timeout_s, peer_problem)
            report = recv_control(socks.ctl, spec.peer_timeout_s, peer_problem,
                                  "report from the runner")
        except PeerTimeout as exc:
            raise CaseError(f"runner process {proc.pid} stopped answering: {exc} "
                            f"(state {_process_state(proc.pid)}; killed)", link.seq) from None
        except PeerError as exc:
            raise CaseError(str(exc), link.seq) from None
        if isinstance(report, ErrorReport):
            exiting.append(True)
            raise CaseError(f"runner failed at step {report.step}: {report.message}",
                            report.step)
        if not isinstance(report, RunnerReport):
            raise CaseError(f"expected a runner report, got {type(report).__name__}")
        result.runner_columns = report.columns
        clean = True
        return result
    except PeerTimeout as exc:
        where = f"runner process {proc.pid}" if proc is not None else "runner"
        raise CaseError(f"{where} stopped answering: {exc}") from None
    except PeerError as exc:
        raise CaseError(str(exc)) from None
    except CaseError as exc:
        if result.failed_step is None:
            result.failed_step = exc.step
        raise
    finally:
        with deferred():
            if sampler is not None:
                sampler.stop()
                result.rss_samples = list(sampler.samples)
            if socks is not None:
                socks.close()
            ctx.term()
            if proc is not None:
                if clean:
                    reap(proc, grace_s=2.0)
                elif exiting:  # it reported its error and is on its way out
                    reap(proc, grace_s=1.0)
                else:
                    proc.kill()  # dead, hung or interrupted: nothing left to wait for
                    reap(proc, grace_s=5.0)
            endpoint_dir.cleanup()


def _run_case_inproc(spec: CaseSpec, on_step, result: CaseResult, sink,
                     flush_interval_s: float) -> CaseResult:
    """Single-process baseline: the same scheduler loop calling the runner directly."""
    runner = ModelRunner(spec.scheduler, spec.model, spec.policy)
    result.runner_device = f"{runner.model.device} (in-process)"
    stepper = TimedRunner(runner)
    link = _InProcessLink(stepper)
    _scheduler_loop(spec, link, result, on_step, StepFlusher(spec, sink, flush_interval_s))
    zero = [0] * len(stepper.columns["runner_update_ns"])
    result.runner_columns = dict(stepper.columns, runner_idle_ns=zero, runner_decode_ns=zero,
                                 runner_encode_ns=zero, runner_send_ns=zero,
                                 runner_gc_collections=zero, runner_t0_ns=zero)
    return result


class _ProcessLink:
    """Scheduler side of the two-process exchange: encode, send, wait, decode."""

    def __init__(self, spec: CaseSpec, socks: SchedulerSockets, peer_problem,
                 read_runner_error, result: CaseResult):
        self.encode = scheduler_output_codec(spec.codec).encode
        self.decode = model_runner_output_codec(spec.codec).decode
        self.send = socks.s2r.send
        self.s2r = socks.s2r
        self.r2s = socks.r2s
        self.timeout_s = spec.peer_timeout_s
        self.first_timeout_s = max(spec.startup_timeout_s, spec.peer_timeout_s)
        self.keepalive_ns = int(spec.peer_timeout_s / 4 * 1e9)
        self.last_keepalive_ns = 0
        self.peer_problem = peer_problem
        self.read_runner_error = read_runner_error
        self.socks = socks
        self.result = result
        self.seq = 0  # the step being exchanged (for error messages)
        self.last_reply = b""  # the last ModelRunnerOutput frame (kept for counted steps)

    def exchange(self, so: SchedulerOutput, seq: int, perf=time.perf_counter_ns):
        """-> (ModelRunnerOutput, s2r frame, r2s bytes, t_encoded, t_sent, t_received, t_decoded)."""
        frame = self.encode(so)
        t3 = perf()
        try:
            self.send(frame, _NOBLOCK)
        except zmq.Again:  # the runner is not taking frames: wait, bounded, or fail
            self.seq = seq
            send_frame(self.s2r, frame, self.timeout_s, self.peer_problem,
                       f"SchedulerOutput for step {seq}")
        t4 = perf()
        self.seq = seq
        reply = recv_frame(self.r2s, self.timeout_s if seq else self.first_timeout_s,
                           self.peer_problem, f"ModelRunnerOutput for step {seq}")
        t5 = perf()
        self.last_reply = reply
        if not reply:
            raise self.read_runner_error(seq)
        try:
            out = self.decode(reply)
        except DecodeError as exc:
            raise CaseError(f"step {seq}: undecodable ModelRunnerOutput from the runner "
                            f"({len(reply)} bytes): {exc}", seq) from None
        return out, frame, len(reply), t3, t4, t5, perf()

    def exchange_bare(self, so: SchedulerOutput, seq: int) -> ModelRunnerOutput:
        """``exchange`` without timestamps or kept frames (instrumentation off)."""
        frame = self.encode(so)
        try:
            self.send(frame, _NOBLOCK)
        except zmq.Again:
            self.seq = seq
            send_frame(self.s2r, frame, self.timeout_s, self.peer_problem,
                       f"SchedulerOutput for step {seq}")
        self.seq = seq
        reply = recv_frame(self.r2s, self.timeout_s if seq else self.first_timeout_s,
                           self.peer_problem, f"ModelRunnerOutput for step {seq}")
        if not reply:
            raise self.read_runner_error(seq)
        try:
            return self.decode(reply)
        except DecodeError as exc:
            raise CaseError(f"step {seq}: undecodable ModelRunnerOutput from the runner "
                            f"({len(reply)} bytes): {exc}", seq) from None

    def check_peer(self) -> None:
        problem = self.peer_problem()
        if problem:
            raise CaseError(f"{problem} while the scheduler was idle", self.seq)

    def send_marker(self, msg) -> None:
        """An empty frame on s2r (read the control socket), then ``msg`` there."""
        send_frame(self.s2r, _EMPTY, self.timeout_s, self.peer_problem, "a phase marker")
        send_control(self.socks.ctl, msg, self.timeout_s, self.peer_problem)

    def idle(self, sleep_s: float, idle_ns: int) -> None:
        """Nothing to run (timed replay): check the runner, keep it waiting
        (``KeepAlive`` once the idle time passes a quarter of its timeout), sleep."""
        self.check_peer()
        now = time.perf_counter_ns()
        if idle_ns > self.keepalive_ns and now - self.last_keepalive_ns > self.keepalive_ns:
            self.send_marker(KeepAlive())
            self.result.s2r_marker_frames += 1
            self.last_keepalive_ns = now
        time.sleep(sleep_s)


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

    def idle(self, sleep_s: float, idle_ns: int) -> None:
        time.sleep(sleep_s)


_DRAINED, _IDLE, _READY = 0, 1, 2


def _loop_totals(steps: int, loop_ns: int, output_tokens: int) -> dict[str, int]:
    """Whole-loop figures after warm-up, the same for both instrumentation modes."""
    return dict(loop_steps=steps, loop_ns=loop_ns, loop_output_tokens=output_tokens)


def _admit_logical(sched: Scheduler, workload, arrival_s: dict[int, float]) -> int:
    """Logical clock, between steps: hand the current step's arrivals to the scheduler
    (noting each one's trace time in ``arrival_s``). Returns ``_READY`` (run a step),
    ``_IDLE`` (nothing to run: the clock jumped to the next arrival's step) or
    ``_DRAINED`` (no request left, none to come)."""
    for r in workload.arrivals(sched.step):
        sched.add_request(r.req_id, r.index, r.prompt_token_ids, r.max_tokens)
        arrival_s[r.index] = r.arrival_s
    if sched.has_unfinished_requests():
        return _READY
    nxt = workload.next_arrival_step()
    if nxt is None:
        return _DRAINED
    sched.step = max(nxt, sched.step + 1)  # idle steps are skipped
    return _IDLE


def _scheduler_loop(spec: CaseSpec, link, result: CaseResult, on_step,
                    flusher: Optional[StepFlusher] = None) -> list[int]:
    """The measured loop; fills ``result``. Returns the seqs of the counted steps.

    Logical clock (``spec.timed`` false): arrivals by step number, idle steps skipped.
    Timed clock: a request arrives when ``elapsed * speedup >= arrival_s``; while
    nothing runs the loop sleeps until the next arrival (checking the peer).
    A ``ProtocolError`` from applying the runner's output becomes ``CaseError``.
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
    keep_frames = not spec.stream
    decode_only = spec.count == "decode_only"
    warmup_steps = spec.warmup_steps
    max_steps = spec.max_steps
    speedup = spec.trace_speedup or 1.0
    arrival_s: dict[int, float] = {}
    seq = 0
    total_out = 0
    num_done = 0
    t_start = perf()
    t7 = t_start
    t_warm = out_warm = None
    if flusher is not None:
        flusher.start(t_start)
    next_flush = flusher.next_ns if flusher is not None else None
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
                    link.idle(min(0.05, max(0.0, (nxt - now_s) / speedup)), perf() - t7)
                    continue
            else:
                state = _admit_logical(sched, workload, arrival_s)
                if state != _READY:
                    if state == _DRAINED:
                        break
                    continue
            if seq == warmup_steps:
                gc.collect()
                gc.freeze()
                t_warm = perf()
                out_warm = sched.num_output_tokens
            gc0 = gc_counter.count
            c0 = cpu()
            t0 = perf()
            plan = sched.schedule()
            t1 = perf()
            so = sched.build_scheduler_output(plan)
            t2 = perf()
            out, frame, r2s_bytes, t3, t4, t5, t6 = exchange(so, seq)
            try:
                finished = sched.update_from_output(plan, out)
            except ProtocolError as exc:
                raise CaseError(f"step {seq}: ModelRunnerOutput contradicts the schedule: "
                                f"{exc}", seq) from None
            except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
                # a decoded message of the right class with fields of the wrong type
                # (pickle does not check them)
                raise CaseError(f"step {seq}: malformed ModelRunnerOutput: "
                                f"{type(exc).__name__}: {exc}", seq) from None
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
            if counted and frame and keep_frames:
                frames.append(frame)
                r2s_frames.append(link.last_reply)
                counted_seqs.append(seq)
            if finished:
                num_done += len(finished)
                workload.on_finished(len(finished), plan.step)
            seq += 1
            if on_step is not None:
                on_step(seq, total_out, num_done)
            if next_flush is not None and t7 >= next_flush:
                flusher.flush(sched, result, arrival_s, speedup if timed else None)
                next_flush = flusher.next_ns
    finally:
        t_end = perf()
        gc_counter.close()
        gc.unfreeze()
        if t_warm is not None:
            result.loop_totals = _loop_totals(seq - warmup_steps, t_end - t_warm,
                                              sched.num_output_tokens - out_warm)
        result.wall_s = (t_end - t_start) / 1e9
        result.num_rejected = sched.num_rejected
        if flusher is not None and flusher.stream:
            flusher.flush(sched, result, arrival_s, speedup if timed else None, final=True)
            result.token_digest = flusher.digest.hexdigest()
            result.stream_stats = flusher.stats
        else:
            result.token_digest = token_digest(sched.requests.values())
            t_end = {row[1]: row[-1] / 1e9 for row in result.sched_rows}
            result.requests = [_request_record(r, t_end, arrival_s, speedup if timed else None)
                               for r in sorted(sched.requests.values(), key=lambda r: r.index)]
        result.prompt_lens = {r.req_id: r.num_prompt_tokens for r in sched.requests.values()}
    return counted_seqs


def _scheduler_loop_bare(spec: CaseSpec, link, result: CaseResult) -> list[int]:
    """The loop of ``_scheduler_loop`` with nothing recorded per step (logical clock).

    Measures only the total time from the end of warm-up (after the heap is frozen,
    as in the instrumented loop) to the end of the last step, and the steps and
    tokens in it: ``result.loop_totals``. Its ratio to the instrumented loop's totals
    is what the per-step recording costs. Returns no counted steps (no floor).
    """
    if spec.trace_speedup is not None:
        raise ConfigError("instrumentation 'totals' needs the logical clock")
    sched = Scheduler(spec.scheduler, spec.policy)
    workload = spec.make_workload()
    exchange = link.exchange_bare
    warmup_steps = spec.warmup_steps
    max_steps = spec.max_steps
    perf = time.perf_counter_ns
    seq = 0
    t_warm = out_warm = None
    t_start = perf()
    try:
        while max_steps is None or sched.step < max_steps:
            state = _admit_logical(sched, workload, {})
            if state != _READY:
                if state == _DRAINED:
                    break
                continue
            if seq == warmup_steps:
                gc.collect()
                gc.freeze()
                t_warm = perf()
                out_warm = sched.num_output_tokens
            plan = sched.schedule()
            out = exchange(sched.build_scheduler_output(plan), seq)
            try:
                finished = sched.update_from_output(plan, out)
            except ProtocolError as exc:
                raise CaseError(f"step {seq}: ModelRunnerOutput contradicts the schedule: "
                                f"{exc}", seq) from None
            if finished:
                workload.on_finished(len(finished), plan.step)
            seq += 1
    finally:
        t_end = perf()
        gc.unfreeze()
        if t_warm is not None:
            result.loop_totals = _loop_totals(seq - warmup_steps, t_end - t_warm,
                                              sched.num_output_tokens - out_warm)
        result.wall_s = (t_end - t_start) / 1e9
        result.num_rejected = sched.num_rejected
        result.token_digest = token_digest(sched.requests.values())
        result.prompt_lens = {r.req_id: r.num_prompt_tokens for r in sched.requests.values()}
    return []


def _request_record(r, t_end_by_step: dict[int, float], arrival_s: dict[int, float],
                    speedup: Optional[float]) -> dict[str, Any]:
    """One request's record; with a timed clock also latencies in seconds of wall time.

    ``t_end_by_step``: end of each scheduler step (by ``step``), seconds since the
    case's start. TTFT is measured from the request's intended arrival (trace time /
    speedup), so queueing counts; E2E likewise; TPOT = (E2E - TTFT) / (output_len - 1),
    left empty for one-token requests; ``itl_s`` lists the gaps between tokens.
    """
    rec = dict(index=r.index, req_id=r.req_id, num_prompt_tokens=r.num_prompt_tokens,
               num_output_tokens=len(r.all_token_ids) - r.num_prompt_tokens,
               max_tokens=r.max_tokens, arrival_step=r.arrival_step,
               first_scheduled_step=r.first_scheduled_step,
               first_token_step=r.first_token_step, finish_step=r.finish_step,
               finish_reason=r.finish_reason or "", preemptions=r.num_preemptions)
    if speedup is not None:
        arrive = arrival_s.get(r.index, 0.0) / speedup
        times = [t_end_by_step[s] for s in r.token_steps if s in t_end_by_step]
        rec["arrival_s"] = arrive
        rec["ttft_s"] = times[0] - arrive if times else None
        rec["e2e_s"] = times[-1] - arrive if times else None
        rec["tpot_s"] = ((times[-1] - times[0]) / (len(times) - 1)
                         if len(times) > 1 else None)
        rec["itl_s"] = [b - a for a, b in zip(times, times[1:])]
    return rec


def _floor(spec: CaseSpec, link: _ProcessLink, frames: list[bytes], seqs: list[int]) -> list[int]:
    """Exchange the recorded frames again, bare. Returns per-step ns."""
    sched_codec = scheduler_output_codec(spec.codec)
    msgs = [sched_codec.decode(f) for f in frames]  # objects, so encode is re-timed
    decode = link.decode
    encode = link.encode
    r2s = link.r2s
    link.send_marker(BeginFloor(steps=seqs))
    ready = recv_control(link.socks.ctl, spec.peer_timeout_s, link.peer_problem,
                         "floor-ready message from the runner")
    if isinstance(ready, ErrorReport):
        raise CaseError(f"runner failed before the floor: {ready.message}")
    if not isinstance(ready, FloorReady):
        raise CaseError(f"expected FloorReady from the runner, got {type(ready).__name__}")
    perf = time.perf_counter_ns
    out = []
    gc.collect()
    gc.freeze()
    try:
        t_prev = perf()
        for i, so in enumerate(msgs):
            send_frame(link.s2r, encode(so), spec.peer_timeout_s, link.peer_problem,
                       f"floor frame {i}")
            reply = recv_frame(r2s, spec.peer_timeout_s, link.peer_problem, f"floor reply {i}")
            if not reply:
                raise link.read_runner_error(i)
            try:
                decode(reply)
            except DecodeError as exc:
                raise CaseError(f"floor step {i}: undecodable ModelRunnerOutput from the "
                                f"runner: {exc}") from None
            t = perf()
            out.append(t - t_prev)
            t_prev = t
    finally:
        gc.unfreeze()
    return out


# ======================================================================================
# Runner side


def _set_parent_death_signal() -> bool:
    """Linux: SIGKILL this process when its parent dies (PR_SET_PDEATHSIG).

    Returns whether ``prctl`` succeeded. The signal fires when the *thread* that
    forked this process exits; the scheduler starts runners from its main thread.
    """
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        return libc.prctl(1, signal.SIGKILL, 0, 0, 0) == 0  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        return False


def _expected_parent() -> int:
    """The scheduler's pid: ``IPC_BENCH_SCHEDULER_PID`` if set (so a parent that died
    before this process could look is still noticed), else the current parent."""
    value = os.environ.get(SCHEDULER_PID_ENV, "")
    return int(value) if value.isdigit() else os.getppid()


def runner_main(ctl_endpoint: str) -> int:
    """Entry point of the runner process; returns its exit code.

    Exit codes: 0 after sending its report; 3 handshake refused or never came; 4 a
    step failed (an ``ErrorReport`` naming the step went to the scheduler first);
    5 the scheduler went away or stopped sending.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the scheduler decides and kills us
    _set_parent_death_signal()
    parent = _expected_parent()

    def peer_problem() -> Optional[str]:
        if os.getppid() != parent:
            return f"scheduler process {parent} is gone"
        return None

    if peer_problem():
        print(f"runner: {peer_problem()} at start-up", file=sys.stderr)
        return 5
    ctx = zmq.Context()
    socks = RunnerSockets(ctx, ctl_endpoint)
    try:
        try:
            hs = recv_control(socks.ctl, STARTUP_TIMEOUT_S, peer_problem, "handshake")
        except PeerError as exc:
            print(f"runner: {exc}", file=sys.stderr)
            return 3
        if not isinstance(hs, Handshake):
            send_control(socks.ctl, ErrorReport(f"expected a handshake, got {type(hs).__name__}"),
                         5.0, peer_problem)
            return 3
        if hs.protocol_version != PROTOCOL_VERSION:
            send_control(socks.ctl, ErrorReport(
                f"protocol version mismatch: scheduler speaks {hs.protocol_version}, "
                f"runner speaks {PROTOCOL_VERSION}"), 5.0, peer_problem)
            return 3
        try:
            config = decode_runner_config(hs.config)
        except ConfigError as exc:
            send_control(socks.ctl, ErrorReport(str(exc)), 5.0, peer_problem)
            return 3
        try:
            socks.connect_data(config.s2r_endpoint, config.r2s_endpoint)
            runner = ModelRunner(config.scheduler, config.model, config.policy)
        except ConfigError as exc:  # e.g. a torch KV cache too large for the device
            send_control(socks.ctl, ErrorReport(str(exc)), 5.0, peer_problem)
            return 3
        except Exception as exc:  # a model that cannot be built: say so, do not hang
            send_control(socks.ctl, ErrorReport(
                f"runner could not start: {type(exc).__name__}: {exc}"), 5.0, peer_problem)
            return 3
        send_control(socks.ctl, Ready(PROTOCOL_VERSION, os.getpid(), runner.model.device),
                     config.peer_timeout_s, peer_problem)
        loop = _RunnerLoop(config, socks, runner, peer_problem)
        try:
            if config.bare_loop:
                loop.run_bare()
            else:
                loop.run()
        except PeerError as exc:
            print(f"runner: {exc}", file=sys.stderr)
            return 5
        except (RunnerError, ProtocolError, DecodeError, SchedulerError) as exc:
            _report_step_error(socks, loop, f"{type(exc).__name__}: {exc}")
            return 4
        except Exception as exc:  # a bug or a message the checks missed: report, then fail
            traceback.print_exc(file=sys.stderr)
            _report_step_error(socks, loop, f"{type(exc).__name__} while handling "
                                            f"SchedulerOutput: {exc}")
            return 4
        return 0
    finally:
        socks.close(linger_ms=RUNNER_CLOSE_LINGER_MS)
        ctx.term()


def _report_step_error(socks: RunnerSockets, loop: "_RunnerLoop", message: str) -> None:
    """Tell the scheduler: an empty frame on r2s (it is waiting there), then the
    ``ErrorReport`` on the control socket."""
    message = one_line(message)
    print(f"runner: step {loop.seq}: {message}", file=sys.stderr)
    try:
        send_frame(socks.r2s, _EMPTY, 5.0, loop.peer_problem, "an error marker")
        send_control(socks.ctl, ErrorReport(message, loop.seq), 5.0, loop.peer_problem)
    except PeerError as exc:  # nobody to tell: the exit code and stderr remain
        print(f"runner: could not report the error: {exc}", file=sys.stderr)


def _column(record: bool):
    """A per-step column: a list, or (``record`` false) a one-slot deque whose
    ``append`` costs the same C call but keeps nothing (long streamed runs)."""
    return [] if record else collections.deque(maxlen=1)


class TimedRunner:
    """A ``ModelRunner`` whose phases are timed per step into ``columns``
    (``runner_update_ns`` .. ``runner_build_ns``); shared by both executors."""

    PHASES = ("runner_update_ns", "runner_prepare_ns", "runner_forward_ns",
              "runner_writeback_ns", "runner_build_ns")

    def __init__(self, runner: ModelRunner, record: bool = True):
        self.runner = runner
        self.columns: dict[str, Any] = {name: _column(record) for name in self.PHASES}
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
        record = config.record_steps
        self.stepper = TimedRunner(runner, record)
        self.peer_problem = peer_problem
        self.seq = 0
        self.columns: dict[str, Any] = {name: _column(record) for name in RUNNER_COLUMNS}
        self.columns.update(self.stepper.columns)
        self.out_frames = _column(record)

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
                if isinstance(msg, KeepAlive):
                    continue
                if isinstance(msg, Stop):
                    gc_counter.close()
                    send_control(ctl, RunnerReport(columns={
                        k: list(v) if self.config.record_steps else []
                        for k, v in self.columns.items()}), idle_timeout, self.peer_problem)
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
            try:
                send(reply, _NOBLOCK)
            except zmq.Again:  # the scheduler is not taking frames: wait, bounded, or fail
                send_frame(r2s, reply, idle_timeout, self.peer_problem,
                           f"ModelRunnerOutput for step {self.seq}")
            t9 = perf()
            rec_decode(t2 - t1)
            rec_encode(t8 - t7)
            rec_send(t9 - t8)
            rec_gc(gc_counter.count - gc0)
            out_frames.append(reply)
            self.seq += 1

    def run_bare(self) -> None:
        """``run`` with nothing timed or kept per step (instrumentation off)."""
        cfg = self.config
        decode = scheduler_output_codec(cfg.codec).decode
        encode = model_runner_output_codec(cfg.codec).encode
        s2r, r2s, ctl = self.socks.s2r, self.socks.r2s, self.socks.ctl
        execute = self.stepper.runner.execute_model
        timeout = cfg.peer_timeout_s
        while True:
            frame = recv_frame(s2r, timeout, self.peer_problem,
                               f"SchedulerOutput for step {self.seq}")
            if not frame:
                msg = recv_control(ctl, timeout, self.peer_problem, "control message")
                if isinstance(msg, KeepAlive):
                    continue
                if isinstance(msg, Stop):
                    send_control(ctl, RunnerReport(columns={}), timeout, self.peer_problem)
                    return
                raise ProtocolError(f"unexpected control message {type(msg).__name__} "
                                    "(this runner records nothing: no floor)")
            if self.seq == cfg.warmup_steps:
                gc.collect()
                gc.freeze()
            reply = encode(execute(decode(frame)))
            try:
                r2s.send(reply, _NOBLOCK)
            except zmq.Again:
                send_frame(r2s, reply, timeout, self.peer_problem,
                           f"ModelRunnerOutput for step {self.seq}")
            self.seq += 1

    def _floor(self, seqs: list[int], decode, encode) -> None:
        """Answer each floor frame with the recorded reply of the same step."""
        if not self.config.record_steps:
            raise ProtocolError("floor requested but this runner keeps no replies "
                                "(record_steps is off)")
        if any(not 0 <= s < len(self.out_frames) for s in seqs):
            raise ProtocolError(f"floor steps outside the {len(self.out_frames)} steps run")
        reply_codec = model_runner_output_codec(self.config.codec)
        outs = [reply_codec.decode(self.out_frames[s]) for s in seqs]
        send_control(self.socks.ctl, FloorReady(), self.config.peer_timeout_s,
                     self.peer_problem)
        s2r, r2s = self.socks.s2r, self.socks.r2s
        for i, out in enumerate(outs):
            frame = recv_frame(s2r, self.config.peer_timeout_s, self.peer_problem,
                               f"floor frame {i}")
            if not frame:
                raise ProtocolError(f"empty frame in the middle of the floor (frame {i})")
            decode(frame)
            send_frame(r2s, encode(out), self.config.peer_timeout_s, self.peer_problem,
                       f"floor reply {i}")
