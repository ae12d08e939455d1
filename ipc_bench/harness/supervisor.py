"""One case end to end: ``run_case(spec)``.

Two processes (``spec.transport`` ``ipc``, ``tcp``, or ``shm`` / ``shm-block``: the
scheduler -> runner frames through a shared-memory ring, ``wire.shm_ring``, whose reader
spins or blocks): this process binds the sockets,
starts the runner (``python -m ipc_bench.harness CTL_ENDPOINT``), performs
the start-up handshake (protocol version + ``RunnerConfig``), runs the scheduler loop
over the case's workload, then the floor (``harness.floor``), stops the runner,
collects its per-step report and reaps it whatever happens. ``inproc``: the
single-process baseline, scheduler and runner objects in this process, no
serialization (as vLLM's uni executor).

Faults (each ends the case with ``CaseError``, one line naming the process, how it
failed and the step; the partial ``CaseResult`` stays in the caller's hands):

- the runner exits or is killed: noticed within ``transport.POLL_SLICE_MS`` (100 ms)
  of any wait, reported with its exit code or signal and the last line it wrote to
  stderr;
- the runner stops answering: after ``CaseSpec.peer_timeout_s`` (default 10 s; the
  handshake and the first step get ``startup_timeout_s``, default 120 s, since they
  pay for imports, model load, flex_attention compiles and, on CUDA, context creation
  and kernel loading on the first forward), reported with its process state, then
  killed; a start-up that runs out of time is reported as still starting, with what
  the start-up does and ``--startup-timeout``;
- the runner reports an error (``ErrorReport``: a frame it could not decode, a
  message inconsistent with its state, any exception while handling a step), or
  sends a frame the scheduler cannot decode or that contradicts the schedule.

A socket folder or socket that cannot be set up raises ``transport.EndpointError``
instead; whatever fails, the shutdown closes every socket before the context and
cannot block, unlinks the ring's shared memory, removes the socket folder and reaps
the runner.

While a timed replay has nothing to run the scheduler sends ``KeepAlive``, so the
runner's own timeout only fires on a scheduler that really hangs; so does each end while
it prepares what follows the loop and the other waits (``wire.control.Heartbeat``: the
scheduler's records and the floor's frames, the runner's floor replies and its report;
``harness.floor``).

With ``run_case(remote=)`` (``--remote-runners``) the runner was started by hand,
perhaps on another host (``wire.remote``, ``harness.remote_runner``): nothing is spawned
(``RemotePeer`` stands in for ``RunnerProcess``), the data sockets are bound at the run's
fixed ports, and the runner's closed connection takes the place of its exit.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Callable, NoReturn, Optional, Sequence

import zmq

from ipc_bench.engine.config import CACHED, DEFAULT_VLLM_LAYOUT, ConfigError, ModelMemoryError
from ipc_bench.engine.model_runner import ModelRunner
from ipc_bench.engine.models import model_info, model_step_columns, release_model
from ipc_bench.errors import fd_shortage_text, out_of_fds
from ipc_bench.harness.async_loop import (MAX_IN_FLIGHT, ThreadedInProcessExchange,
                                          run_async_scheduler_loop)
from ipc_bench.harness.affinity import (CPU_AFFINITY_ENV, cores_in_use, cpus_allowed,
                                       format_cpus)
from ipc_bench.harness.case_lifecycle import CaseLifecycle
from ipc_bench.harness.floor import replay_floor
from ipc_bench.harness.frontend_hop import FrontendHop
from ipc_bench.harness.memory import HEAP_REPORT_OUT_ENV
from ipc_bench.harness.recording import CaseSink, StepFlusher
from ipc_bench.harness.runner_loop import TimedModelRunner, workload_memory_refusal
from ipc_bench.harness.scheduler_loop import (
    ChannelExchange,
    InProcessExchange,
    run_bare_scheduler_loop,
    run_scheduler_loop,
    runner_failure,
)
from ipc_bench.harness.signals import SCHEDULER_PID_ENV, Interrupted
from ipc_bench.harness.spec import (INPROC, STOPPED_NOT_SLOW, CaseError, CaseResult,
                                    CaseSpec)
from ipc_bench.wire.channel import RingSchedulerChannel, SchedulerChannel
from ipc_bench.wire.codecs import messages_of
from ipc_bench.wire.control import (
    PROTOCOL_VERSION,
    ErrorReport,
    Handshake,
    Ready,
    RunnerReport,
    Stop,
    beating,
)
from ipc_bench.wire.handshake import check_pickle_transport, encode_config
from ipc_bench.wire.remote import RemoteRunners, RemoteSchedulerSockets
from ipc_bench.wire.transport import EndpointDir, PeerError, PeerTimeout, SchedulerSockets

#: The runner's command line, its control endpoint appended (``run_case(runner_command=)``).
RUNNER_COMMAND = (sys.executable, "-m", "ipc_bench.harness")
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])



def uses_device_inputs(spec: CaseSpec) -> bool:
    """Whether the case's runner process takes the device-input path of async
    scheduling (``RunnerConfig.device_inputs``): async scheduling with the torch model
    (the models without a device have no device tensor to feed from) and no draft
    tokens. With drafts the torch model's runner takes the host path, as the null
    model's: it finishes step n (verification, drafter, ids written into its host
    token buffer) before it prepares step n + 1 (vLLM #24799's device-side drafts are
    not built; ``summary.async_scheduling_mode`` names it)."""
    return bool(spec.async_scheduling and spec.model.name == "torch"
                and not spec.scheduler.num_spec_tokens)

class RunnerProcess:
    """The runner child process (or, ``role="frontend"``, the frontend's: ``args`` then
    holds its arguments): started with its stderr in a private file, asked how it
    ended, reaped.

    ``cpus``: the CPU set it pins itself to at start-up (``--cpu-affinity``; ``None``:
    it keeps the set it inherits). ``CaseError`` when it cannot be started
    (``errors.fd_limit_text``'s line where this process is out of file descriptors).
    ``problem()``: ``None`` while it runs, else one line (exit code or signal, and the
    last line it wrote to stderr).
    ``state()``: its ``/proc`` state (``S (sleeping)``, ``T (stopped)``..., or
    ``unknown``).
    """

    def __init__(self, ctl_endpoint: str | Sequence[str], stderr_path: str,
                 command: Sequence[str] = RUNNER_COMMAND, role: str = "runner",
                 cpus: Optional[frozenset[int]] = None):
        env = dict(os.environ)
        # no empty entry (the working folder), which a process started in a folder
        # since deleted cannot make absolute: Python would not start
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
        env.setdefault("OMP_NUM_THREADS", "1")
        env[SCHEDULER_PID_ENV] = str(os.getpid())
        env.pop(CPU_AFFINITY_ENV, None)
        if cpus:  # it pins itself at start-up (affinity.pin_from_env)
            env[CPU_AFFINITY_ENV] = format_cpus(cpus)
        self.stderr_path = stderr_path
        # Where the runner writes its heap report when IPC_BENCH_HEAP_REPORT is set.
        self.role = role
        self.heap_report_path = os.path.join(os.path.dirname(stderr_path), f"{role}.heap.txt")
        args = [ctl_endpoint] if isinstance(ctl_endpoint, str) else list(ctl_endpoint)
        env[HEAP_REPORT_OUT_ENV] = self.heap_report_path
        fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with open(fd, "wb") as err:
            try:
                self.proc = subprocess.Popen([*command, *args],
                                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                             stderr=err, env=env, close_fds=True)
            except OSError as exc:  # not an error of the results folder: say what failed
                if out_of_fds(exc):  # the limit, named (exit 2: errors.names_fd_limit)
                    raise CaseError(f"{fd_shortage_text(exc)} (cannot start the {role} "
                                    "process)") from None
                raise CaseError(f"cannot start the {role} process {command[0]}: "
                                f"{exc.strerror or exc}") from None
        self.pid = self.proc.pid
        self.name = f"{role} process {self.pid}"

    def hang_note(self, state: Optional[str] = None) -> str:
        """What the case's error line adds for a runner that stopped answering: its
        state (``state``, else read now) and that it is killed."""
        return f"(state {state or self.state()}; killed)"

    def still_starting(self, exc: Exception, startup_timeout_s: float, work: str = "",
                       slow: bool = False) -> str:
        """The case's line for a start-up that ran out of time (``startup_timeout_s``,
        seconds): the process was still starting, its state, and then either that it
        was stopped (state ``T``/``t``: more time would not help) or what its
        start-up does (``work``; "which can take minutes" when ``slow``) and the
        option that allows it more time: ``frontend process P was still starting when
        the start-up timeout ran out: no ready message from the frontend within 5 s
        (state S (sleeping); killed); raise --startup-timeout (now 5 s)``, ``... (state
        T (stopped); killed); it was stopped (SIGSTOP or a debugger), not slow``."""
        state = self.state()
        head = (f"{self.name} was still starting when the start-up timeout ran out: {exc} "
                f"{self.hang_note(state)}; ")
        if state[:1] in ("T", "t"):
            return head + STOPPED_NOT_SLOW
        does = ""
        if work:
            does = f"its start-up {work}{', which can take minutes' if slow else ''}: "
        return head + f"{does}raise --startup-timeout (now {startup_timeout_s:g} s)"

    def exit_description(self) -> Optional[str]:
        """How the process ended (``None`` while it runs)."""
        code = self.proc.poll()
        if code is None:
            return None
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"{self.role} process {self.pid} was killed by {name}"
        return f"{self.role} process {self.pid} exited with code {code}"

    def problem(self) -> Optional[str]:
        problem = self.exit_description()
        if problem:
            last = _last_line(self.stderr_path)
            return f"{problem} ({last})" if last else problem
        return None

    def state(self) -> str:
        """``State:`` of ``/proc/<pid>/status``, e.g. ``S (sleeping)``, or ``unknown``."""
        try:
            with open(f"/proc/{self.pid}/status") as f:
                for line in f:
                    if line.startswith("State:"):
                        return line.split(":", 1)[1].strip()
        except OSError:
            pass
        return "unknown"

    def reap(self, grace_s: float = 2.0, kill: bool = False) -> None:
        """Make sure the process is gone: (``kill``: SIGKILL first) wait ``grace_s``,
        then SIGKILL and wait (5 s at most: a process stuck in the kernel cannot be
        waited for forever)."""
        if kill:
            self.proc.kill()
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            try:
                self.proc.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                pass


class RemotePeer:
    """A runner started by hand on another host (``wire.remote``), rank ``rank`` of
    ``remote``, in ``RunnerProcess``'s place: ``problem()`` is its connection's
    (``RemoteRunners.problem``); there is no process here to inspect or reap."""

    pid = None
    heap_report_path = ""  # no report file here: reading it fails (OSError), as intended

    def __init__(self, remote: RemoteRunners, rank: int = 0):
        self.remote, self.rank = remote, rank
        self.name = remote.name(rank)

    def problem(self) -> Optional[str]:
        return self.remote.problem(self.rank)

    def hang_note(self, state: Optional[str] = None) -> str:
        return "(on another host: not killed from here)"

    def state(self) -> str:
        return "remote"

    def reap(self, grace_s: float = 2.0, kill: bool = False) -> None:
        """Nothing to reap: the runner serves the next case or exits on ``Goodbye``."""


def remote_peer_factory(remote: RemoteRunners) -> Callable[..., RemotePeer]:
    """``RunnerProcess``' signature for ``tp_case``: the peer of the rank whose control
    endpoint is given (nothing is started)."""

    def peer(ctl_endpoint: str, stderr_path: str, command=None) -> RemotePeer:
        return RemotePeer(remote, remote.rank_of(ctl_endpoint))
    return peer


def _last_line(path: str) -> str:
    try:
        lines = [ln for ln in Path(path).read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1].strip() if lines else ""


def run_case(spec: CaseSpec,
             on_step: Optional[Callable[[int, int, int], None]] = None, *,
             result: Optional[CaseResult] = None, sink: Optional[CaseSink] = None,
             flush_interval_s: Optional[float] = None,
             runner_command: Sequence[str] = RUNNER_COMMAND,
             sockets: Callable[..., SchedulerSockets] = SchedulerSockets,
             remote: Optional[RemoteRunners] = None) -> CaseResult:
    """Run one case end to end; returns its ``CaseResult``.

    ``on_step(seq, num_output_tokens, num_finished)`` is called after each step,
    outside its timed region (progress display: ``harness.progress``). ``result``:
    filled in place, so the caller keeps what was measured when this raises. ``sink``:
    receives the records while the case runs (``recording.StepFlusher``, every
    ``flush_interval_s``, default ``recording.FLUSH_INTERVAL_S``).
    ``runner_command``: how to start the runner (its control endpoint is appended; a
    wrapper such as ``taskset`` or a profiler may go in front). ``sockets``: builds the
    scheduler's bound sockets (``transport.SchedulerSockets``' signature).

    Raises ``CaseError`` (one line) if the runner dies, stops answering, reports an
    error or sends an undecodable or inconsistent frame; ``SchedulerError`` on a
    scheduling limit; ``ConfigError`` for a configuration the runner must refuse
    (pickle over TCP without ``allow_pickle_over_tcp``, a streamed case with a floor,
    async scheduling under ``send`` or with the bare loop of ``instrumentation ==
    "totals"``, a ``frontend`` with ``tp`` ranks or ``pp`` stages, an ``inproc`` case
    with ``tp`` or ``pp`` set: it has no runner to split). With
    ``spec.async_scheduling`` the scheduler keeps two steps in flight
    (``async_loop.run_async_scheduler_loop``; in the single process the runner runs in a
    worker thread);
    ``transport.EndpointError`` (one line naming the endpoint) when the socket folder
    or a socket cannot be set up: nothing is left open, no runner started.
    ``remote``: the runners were started by hand (``--remote-runners``,
    ``wire.remote``): nothing is spawned; the case binds its data sockets at the run's
    fixed ports, waits up to ``startup_timeout_s`` for rank 0's (or every rank's)
    connection, and a runner whose connection closes fails the case naming it
    (``ConfigError`` for a transport other than tcp).
    """
    result = result if result is not None else CaseResult(spec=spec)
    if spec.async_scheduling and spec.policy != CACHED:
        raise ConfigError(f"async scheduling needs the cached policy, not {spec.policy}")
    if spec.transport == INPROC:
        _check_inproc(spec)
        return _run_case_inproc(spec, on_step, result, sink, flush_interval_s)
    if spec.stream and spec.floor:
        raise ConfigError("a streamed case keeps no frames for the floor: set floor=False")
    if spec.instrumentation == "totals" and spec.trace_speedup is not None:
        raise ConfigError("instrumentation 'totals' needs the logical clock")
    if spec.async_scheduling and spec.instrumentation == "totals":
        raise ConfigError("instrumentation 'totals' has no async-scheduling loop")
    check_pickle_transport(spec.codec, f"{spec.transport}://", spec.allow_pickle_over_tcp)
    if spec.tp is not None and spec.async_scheduling:
        raise ConfigError("--tp ranks run synchronously only: no async scheduling")
    if spec.frontend and spec.tp is not None:
        raise ConfigError(f"tp={spec.tp} runner ranks run no frontend (their supervisor "
                          "starts none): set frontend=False")
    if spec.frontend and spec.pp is not None:
        raise ConfigError(f"pp={spec.pp} pipeline stages run no frontend (their supervisor "
                          "starts none): set frontend=False")
    if remote is not None and spec.transport != "tcp":
        raise ConfigError(f"runners on other hosts need --transport tcp, not {spec.transport} "
                          f"(the shared-memory ring and ipc sockets are local only)")
    if spec.pp is not None:  # N pipeline stages (harness.pp_case)
        from ipc_bench.harness.pp_case import run_pp_case

        return run_pp_case(spec, on_step, result=result,
                           flusher=StepFlusher(spec, sink, flush_interval_s),
                           process=RunnerProcess if remote is None
                           else remote_peer_factory(remote),
                           phases=run_phases, remote=remote)
    if spec.tp is not None:  # N runner ranks on one broadcast
        from ipc_bench.harness.tp_case import run_tp_case

        return run_tp_case(spec, on_step, result=result, runner_command=runner_command,
                           flusher=StepFlusher(spec, sink, flush_interval_s),
                           process=RunnerProcess if remote is None
                           else remote_peer_factory(remote),
                           phases=run_phases, remote=remote)
    if remote is not None:
        sockets = partial(_remote_sockets, remote)
    return _TwoProcessCase(spec, result, runner_command, sockets, remote).run(
        on_step, StepFlusher(spec, sink, flush_interval_s))


def _remote_sockets(remote: RemoteRunners, ctx: zmq.Context, transport: str,
                    endpoint_dir, host: str) -> RemoteSchedulerSockets:
    """``SchedulerSockets``' signature for a remote runner (``run_case(remote=)``)."""
    return RemoteSchedulerSockets(ctx, remote)


def start_frontend(spec: CaseSpec, result: CaseResult,
                   command: Sequence[str] = RUNNER_COMMAND[:1]) -> Optional[FrontendHop]:
    """``spec.frontend``: the case's frontend process, started and ready (closed
    again if it is not); else ``None``. ``command``: the interpreter (with any
    wrapper in front) that runs its module."""
    if not spec.frontend:
        return None
    hop = FrontendHop(spec, result, RunnerProcess, tuple(command))
    try:
        hop.wait_ready()
    except BaseException:
        hop.close()
        raise
    return hop


def runner_cores(spec: CaseSpec) -> int:
    """The CPUs a case's scheduler, its runner (none in the single process) and a
    ``--frontend`` process share (``analysis.cores``: ``runner_cores``), a count
    (``affinity.cores_in_use``), a frontend's own ``--cpu-affinity`` set among them."""
    sets = spec.cpu_affinity
    if sets and spec.frontend and spec.frontend_cpus:
        sets = (*sets, spec.frontend_cpus)
    return cores_in_use(sets)


def _check_inproc(spec: CaseSpec) -> None:
    """Refuse (``ConfigError``, one line) an ``inproc`` case with ``tp`` ranks or ``pp``
    stages: the single process has no runner to split, and would run with them
    ignored."""
    if spec.tp is not None:
        raise ConfigError(f"an inproc case has no runner: tp={spec.tp} has no ranks to "
                          "run; set tp=None")
    if spec.pp is not None:
        raise ConfigError(f"an inproc case has no runner: pp={spec.pp} has no stages to "
                          "run; set pp=None")


def _run_case_inproc(spec: CaseSpec, on_step, result: CaseResult, sink,
                     flush_interval_s: Optional[float]) -> CaseResult:
    """Single-process baseline: the same scheduler loop calling the runner directly
    (async scheduling: the async loop, the runner in a worker thread). A model that
    does not fit its device as it is built (``ModelMemoryError``: a GPU's free memory,
    measured now) is refused with the advice a runner process gives
    (``runner_loop.workload_memory_refusal`` of ``spec.runner_need``)."""
    try:
        runner = ModelRunner(spec.scheduler, spec.model, spec.policy, messages_of(spec.codec),
                             async_scheduling=spec.async_scheduling)
    except ModelMemoryError as exc:
        raise workload_memory_refusal(exc, spec.scheduler, spec.model,
                                      **spec.runner_need) from None
    try:
        return _inproc_phases(spec, runner, on_step, result, sink, flush_interval_s)
    finally:  # the next case's runner process checks the GPU's free memory
        release_model(runner)


def _inproc_phases(spec: CaseSpec, runner: ModelRunner, on_step, result: CaseResult, sink,
                   flush_interval_s: Optional[float]) -> CaseResult:
    """``_run_case_inproc`` with its ``runner`` built."""
    result.runner_device = f"{runner.model.device} (in-process)"
    result.model_info = model_info(runner.model)
    if spec.frontend:  # what the process and its frontend share (analysis.cores: N = 1)
        result.model_info["runner_cores"] = runner_cores(spec)
    if spec.cpu_affinity:  # --cpu-affinity: the scheduler's set, the runner's too here
        result.cpus_allowed["scheduler"] = cpus_allowed(0) or "unknown"
    stepper = TimedModelRunner(runner)
    flusher = StepFlusher(spec, sink, flush_interval_s)
    frontend = start_frontend(spec, result)
    try:
        if spec.async_scheduling:
            link = ThreadedInProcessExchange(stepper, max(spec.startup_timeout_s,
                                                          spec.peer_timeout_s),
                                             spec.input_oracle_interval > 0)
            try:
                run_async_scheduler_loop(spec, link, result, on_step, flusher, frontend)
            finally:
                link.close()
        else:
            run_scheduler_loop(spec, InProcessExchange(stepper), result, on_step, flusher,
                               frontend)
        if frontend is not None:
            frontend.finish()
    finally:
        if frontend is not None:
            frontend.close()
    zero = [0] * len(stepper.columns["runner_update_ns"])
    result.runner_columns = dict(stepper.columns, runner_idle_ns=zero, runner_decode_ns=zero,
                                 runner_encode_ns=zero, runner_send_ns=zero,
                                 runner_gc_collections=zero, runner_gc_ns=zero,
                                 runner_t0_ns=zero,
                                 **model_step_columns(runner.model))
    return result


def run_phases(spec: CaseSpec, exchange: ChannelExchange, result: CaseResult,
               on_step=None, flusher: Optional[StepFlusher] = None, frontend=None) -> None:
    """Everything after the handshake, through ``exchange.channel``: the scheduler loop
    (measured, or bare for ``instrumentation == "totals"``), the frontend's report
    (``frontend``: a ``FrontendHop``, checked by ``FrontendHop.finish``, with
    ``KeepAlive`` to the runner meanwhile: ``wire.control.beating``), the floor,
    then ``Stop`` and the runner's ``RunnerReport`` (its columns go to
    ``result.runner_columns``).
    Raises ``CaseError`` when the runner reports an error or answers out of turn;
    ``PeerError`` / ``PeerTimeout`` from the channel pass through; an ``Interrupted``
    that lands in the floor sets ``result.floor_interrupted`` on its way (one that
    lands after it, while the runner is stopped and its report awaited, sets
    ``result.report_interrupted``), and a ``CaseError`` / ``PeerError`` /
    ``PeerTimeout`` raised in the floor sets ``result.floor_failed`` (its message) on
    its way, and one raised after it, while the runner's report is awaited (or the
    runner's ``ErrorReport`` in its place), ``result.report_failed``."""
    channel = exchange.channel
    if spec.instrumentation == "totals":
        counted_seqs = run_bare_scheduler_loop(spec, exchange, result)
    elif spec.async_scheduling or spec.pp is not None:
        counted_seqs = run_async_scheduler_loop(spec, exchange, result, on_step, flusher,
                                                frontend)
    else:
        counted_seqs = run_scheduler_loop(spec, exchange, result, on_step, flusher, frontend)
    if frontend is not None:  # its report grows with the case; the runner waits
        with beating(exchange.heartbeat(fresh=False).beat):
            frontend.finish()
    result.counted_seqs = counted_seqs
    if spec.floor and counted_seqs:
        try:
            layout = spec.scheduler.vllm_layout  # passed only where not the default
            result.floor_step_ns = replay_floor(
                exchange, spec.codec, result.s2r_frames, counted_seqs,
                getattr(on_step, "floor", None),
                **({} if layout == DEFAULT_VLLM_LAYOUT else {"layout": layout}))
        except Interrupted:  # every counted step is measured: kept, without the floor
            result.floor_interrupted = True
            raise
        except (CaseError, PeerError, PeerTimeout) as exc:  # the same: kept, without it
            result.floor_failed = str(exc)
            raise
    try:
        result.s2r_marker_frames += 1
        channel.send_marker("the stop marker")
        channel.send_control(Stop())
        report = channel.recv_control("report from the runner")
    except Interrupted:  # every counted step (and the floor) is measured: kept
        result.report_interrupted = True
        raise
    except (CaseError, PeerError, PeerTimeout) as exc:  # the same: kept, no columns
        result.report_failed = str(exc)
        raise
    if isinstance(report, ErrorReport):
        exchange.runner_exiting = True
        exc = runner_failure(report)
        result.report_failed = str(exc)
        raise exc
    if not isinstance(report, RunnerReport):
        result.report_failed = f"expected a runner report, got {type(report).__name__}"
        raise CaseError(result.report_failed)
    result.runner_columns = report.columns


class _TwoProcessCase(CaseLifecycle):
    """The scheduler's side of a two-process case (``case_lifecycle.CaseLifecycle``):
    its sockets, one runner, its handshake, the phases with the frontend and the RSS
    sampler."""

    ring_readers = 1

    def __init__(self, spec: CaseSpec, result: CaseResult, runner_command: Sequence[str],
                 sockets: Callable[..., SchedulerSockets],
                 remote: Optional[RemoteRunners] = None):
        super().__init__(spec, result, remote)
        self.runner_command = runner_command
        self.make_sockets = sockets
        self.sampler = None
        self.frontend: Optional[FrontendHop] = None

    @property
    def runner(self) -> Optional[RunnerProcess | RemotePeer]:
        """The runner, once started (or its ``RemotePeer``)."""
        return self.procs[0] if self.procs else None

    def _bind(self, ctx: zmq.Context, endpoint_dir: EndpointDir) -> SchedulerSockets:
        return self.make_sockets(ctx, self.spec.transport, endpoint_dir, host=self.spec.host)

    def _exchange(self, on_step, flusher: StepFlusher) -> None:
        """The frontend and the RSS sampler, then the phases; a ``PeerTimeout`` /
        ``PeerError`` in them fails the case at the exchange's step."""
        spec, result, exchange = self.spec, self.result, self.exchange
        self.frontend = start_frontend(spec, result)
        if spec.sample_rss_s:
            from ipc_bench.harness.memory import RssSampler

            pids = [os.getpid()] + ([self.runner.pid] if self.runner.pid else [])
            self.sampler = RssSampler(pids,
                                      spec.sample_rss_s).start()
            flusher.rss_source = self.sampler.samples_since
        try:
            run_phases(spec, exchange, result, on_step, flusher, self.frontend)
        except PeerTimeout as exc:
            if exchange.seq == 0 and self.remote is None:  # still the start-up's allowance
                raise CaseError(self._still_starting(exc), 0) from None
            raise CaseError(f"{self.runner.name} stopped answering: {exc} "
                            f"{self.runner.hang_note()}", exchange.seq) from None
        except PeerError as exc:
            reported = exchange.queued_runner_error()
            if reported is not None:
                raise reported from None
            raise CaseError(str(exc), exchange.seq) from None

    def _timed_out(self, exc: PeerTimeout) -> NoReturn:
        if self.remote is not None and not (self.remote.connected[0]
                                            or self.remote.gone[0]):
            raise CaseError(str(exc)) from None  # it never connected: the line says so
        where = self.runner.name if self.runner else "runner"
        raise CaseError(f"{where} stopped answering: {exc}") from None

    def _peer_failed(self, exc: PeerError) -> NoReturn:
        raise CaseError(str(exc)) from None

    def _start(self, socks: SchedulerSockets, folder: str) -> None:
        """Spawn the runner and complete the handshake (``startup_timeout_s``)."""
        spec = self.spec
        config = self._runner_config(
            socks.endpoints.s2r, socks.endpoints.r2s,
            device_inputs=uses_device_inputs(spec), async_scheduling=spec.async_scheduling)
        if self.remote is not None:  # started by hand: wait for its connection
            self.procs.append(RemotePeer(self.remote))
            self._await_remote(1)
        else:
            self._spawn(RunnerProcess, socks.endpoints.ctl,
                        os.path.join(folder, "runner.stderr"), self.runner_command,
                        cpus=spec.cpu_affinity[1] if spec.cpu_affinity else None)
        window = MAX_IN_FLIGHT if spec.async_scheduling else 1
        if self.ring is not None:
            channel = RingSchedulerChannel(socks, self.ring, spec.peer_timeout_s,
                                           self.runner.problem, window=window)
        else:
            channel = SchedulerChannel(socks, spec.peer_timeout_s, self.runner.problem,
                                       window=window)
        self.exchange = ChannelExchange(spec, channel, self.result)
        try:
            channel.send_control(Handshake(PROTOCOL_VERSION, encode_config(config)),
                                 spec.startup_timeout_s)
            reply = channel.recv_control("handshake reply from the runner",
                                         spec.startup_timeout_s)
        except PeerTimeout as exc:
            if self.remote is not None:  # _timed_out names a runner that never came
                raise
            raise CaseError(self._still_starting(exc)) from None
        if isinstance(reply, ErrorReport):
            self.exchange.runner_exiting = True
            raise CaseError(f"runner refused the handshake: {reply.message}")
        if not isinstance(reply, Ready):
            raise CaseError(f"unexpected handshake reply from runner: {type(reply).__name__}")
        if reply.protocol_version != PROTOCOL_VERSION:
            raise CaseError(f"protocol version mismatch: runner speaks {reply.protocol_version}, "
                            f"scheduler speaks {PROTOCOL_VERSION}")
        if self.ring is not None:  # the runner has mapped it: its name can go
            self.ring.wait_for_readers()
        self.result.runner_device = reply.device + (" (remote runner)" if self.remote else "")
        self.result.model_info = dict(reply.model_info)
        if self.ring is not None and not self.remote:  # what the spinning reader shares
            self.result.model_info["shm_cores"] = cores_in_use(spec.cpu_affinity)
        if not self.remote:  # what the scheduler, its runner and a frontend share
            self.result.model_info["runner_cores"] = runner_cores(spec)
        self.result.runner_pid = self.runner.pid
        if self.remote is None:  # the runner pinned itself before it answered
            self._record_cpus({"runner": self.runner.pid})
        else:  # one started by hand names its set when it was given one
            self._record_cpus({}, {"runner": reply})

    def _still_starting(self, exc: PeerTimeout) -> str:
        """The line for a start-up timeout (the handshake or the first step): the runner
        was still starting, with what its start-up does (minutes for the torch model
        only) and the option that allows it more time, or that it was stopped,
        rather than "stopped answering"."""
        model = self.spec.model
        if model.name != "torch":  # seconds at most: no "which can take minutes"
            return self.runner.still_starting(exc, self.spec.startup_timeout_s,
                                              f"imports and builds the {model.name} model")
        work = "imports torch, builds the model"
        compiles = "compiles flex_attention once per decode batch bucket"
        if model.attention == "flex":
            work += " and " + compiles
        elif model.attention == "auto":
            work += " and, on CUDA (where auto is flex), " + compiles
        if model.cuda_graphs:
            work += "; captures a CUDA graph per bucket"
        return self.runner.still_starting(exc, self.spec.startup_timeout_s, work, slow=True)

    def _close_extras(self) -> None:
        """Stop the RSS sampler (its samples into the result) and close the frontend."""
        if self.sampler is not None:
            self.sampler.stop()
            self.result.rss_samples = list(self.sampler.samples)
        if self.frontend is not None:
            self.frontend.close()

    def _proc_label(self, index: int) -> str:
        return "runner"
