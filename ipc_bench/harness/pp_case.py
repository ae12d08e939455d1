"""One ``--pp N`` case: one scheduler, N pipeline stages (``engine.pipeline``).

``run_pp_case(spec)`` is ``supervisor.run_case`` for ``spec.pp`` set, built on the
``--tp`` case (``harness.tp_case``): the scheduler binds the broadcast's sockets
(``wire.tp.TpSchedulerSockets``: XPUB ``s2r``, PULL ``r2s``, one control socket per
stage), starts N stage processes (``python -m ipc_bench.harness.pp_stage
CTL_ENDPOINT``), handshakes with each (its ``RunnerConfig`` names its stage, the policy
and the rendezvous file of the stages' gloo group, in the case's private socket
folder; the stages' rendezvous, before each answers ``Ready``, has the start-up
allowance, as the handshake has: ``wire.pp``), waits until every stage has subscribed, then runs the phases with a channel
whose window is N: the scheduler's loop is the async loop with N steps in flight
(``async_loop``, vLLM's batch queue) over an ``engine.pipeline.PipelineScheduler``.
Every stage reads every ``SchedulerOutput``; the last stage replies.

Oracles: the input oracle checks every stage's fed ids (``stage R: input oracle:
step S: ...``); the token oracle compares the cases' token digests as for any case
(``analysis.summary.check_digests``: send and direct at equal N schedule the same
batches; the null and fixed-step models' tokens do not depend on the schedule at all). There is no
floor (``CaseSpec.floor`` is ignored: the bare exchange it replays is the scheduler's
hop alone, which the stages' hops would leave out).

Stages started by hand (``--remote-runners``, ``harness.remote_runner``): as ``--tp``
ranks started by hand (nothing spawned, the broadcast over tcp at the run's fixed
ports), and the gloo group meets through a ``TCPStore`` this case hosts on ``--host``
at the run's store port (``wire.pp.StoreServer``), stopped when the case ends. Each is
watched through its control connection (``wire.remote.RemoteRunners.problem``): one
whose connection closes (its process died) is named as a killed spawned stage is.

Faults as the ``--tp`` case's, naming the stage: a stage that exits or is killed (or,
started by hand, whose control connection closes), one
that stops answering (the scheduler's ``peer_timeout_s``; a stage waiting on another
for hidden states or ids gives up after the same timeout, its line followed by the
state of the stage waited on (``_waited_on_state``), or at step 0 after the
start-up allowance, which the scheduler's wait for step 0's reply exceeds by one peer
timeout: ``PpExchange``), one that reports an error (a lost token:
``engine.pipeline.PipelineStage.needs_ids``). Whatever
ends the case, Ctrl-C included, every stage is reaped and the socket folder (with the
rendezvous file) removed.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import replace
from typing import Any, Callable, Optional

import zmq

from ipc_bench.engine.config import CACHED, SEND, ConfigError
from ipc_bench.engine.pipeline import check_pp, check_pp_model
from ipc_bench.harness.recording import StepFlusher
from ipc_bench.harness.signals import deferred
from ipc_bench.harness.spec import STOPPED_NOT_SLOW, CaseError, CaseResult, CaseSpec
from ipc_bench.harness.tp_case import TpExchange, _TpCase
from ipc_bench.wire.control import ErrorReport, decode_control
from ipc_bench.wire.handshake import RunnerConfig
from ipc_bench.wire.pp import STORE_FILE, StoreServer
from ipc_bench.wire.remote import RemoteRunners
from ipc_bench.wire.tp import ORIGIN_COLUMN, OUTPUT_DIGEST_COLUMN, TpSchedulerChannel
from ipc_bench.wire.transport import PeerError, PeerTimeout, split_tcp_endpoint

_RANK = re.compile(r"\brank (\d+)\b")
#: The stage a case's line comes from (its report, or the wait that saw it end).
_REPORTER = re.compile(r"\brank (\d+): ")
#: A stage's report that it gave up waiting on another (``wire.pp``'s line).
_WAITED_ON = re.compile(r"from stage (\d+) within \S+ s \(raise --(?:peer|startup)-timeout\)")
#: That report's advice, dropped when the stage waited on was stopped.
_ADVICE = re.compile(r" \(raise --(?:peer|startup)-timeout\)")
#: The shortest wait, past the scheduler's own, for a stage's report once the wait for
#: a later step's reply ran out (``report_grace_s``): what a report that was sent as the
#: scheduler gave up may take to arrive on a loaded machine (generous: nothing else
#: happens meanwhile, and a case that fails only fails that much later).
MIN_REPORT_GRACE_S = 1.0


def report_grace_s(peer_timeout_s: float) -> float:
    """Seconds the scheduler waits for a stage's own report once its wait of
    ``peer_timeout_s`` for a reply ran out (``PpExchange.recv_step``): one more peer
    timeout (the stage's own wait started about when the scheduler's did), at least
    ``MIN_REPORT_GRACE_S``."""
    return max(peer_timeout_s, MIN_REPORT_GRACE_S)


#: How long a stage's report of a lost link waits for the death of the stage that
#: broke it to be seen (the link closes as the process ends, before it can be reaped).
DEAD_STAGE_WAIT_S = 0.2
#: The same for stages started by hand, whose death is seen as their control
#: connection's close (``wire.remote``): that FIN crosses the network, and the
#: scheduler's I/O thread must take it, while the report that the link broke may come
#: first; a failed case waits that much longer at most, and only where no stage's
#: connection closed.
REMOTE_DEAD_STAGE_WAIT_S = 1.0
#: The most control messages read from a stage started by hand whose connection closed,
#: looking for the error report it sent before it went (``_PpCase._reported``).
_QUEUED_MAX = 64


class PpExchange(TpExchange):
    """``TpExchange`` whose answers to digest requests sent ahead (the async loop's
    ``request_input_digests``) are also one per stage, and whose wait for step 0's reply
    is one ``peer_timeout_s`` longer than the stages' start-up allowance: a stage that
    waited that long for step 0's hidden states (or ids) from the stage before says so
    first, naming the stage and the option (``no hidden states of step 0 from stage 0
    within 120 s (raise --startup-timeout)``); with the same allowance the scheduler
    could time out first, naming only the last stage."""

    def __init__(self, spec: CaseSpec, channel, result: CaseResult):
        super().__init__(spec, channel, result)
        self.first_timeout_s += spec.peer_timeout_s
        self.pp = spec.pp
        #: Whether stage R is stopped (state ``T``/``t``); set by the case.
        self.stage_stopped: Callable[[int], bool] = lambda rank: False

    def recv_step(self, seq: int, perf=time.perf_counter_ns):
        """``ChannelExchange.recv_step``; when the wait for a later step's reply runs
        out (``peer_timeout_s``) with more than one stage, a stage's own report is
        waited for ``report_grace_s`` more before the scheduler's line stands. A stage
        waiting on the stage before it for that step's hidden states began its own
        wait of ``peer_timeout_s`` about when the scheduler began its, so the two run
        out together; the stage's report names the stage that held it up (and its
        state: ``_PpCase._waited_on_state``) where the scheduler's line can name only
        the last stage. A reply that comes within the grace does not save the step:
        the scheduler's own wait ran out, so its line is raised. No grace when the
        last stage itself is stopped: no stage waits on it for a step's hidden states,
        and the scheduler's line names it stopped (a stage waiting for its next
        ``SchedulerOutput`` meanwhile would give up on the scheduler and end)."""
        try:
            return super().recv_step(seq, perf)
        except PeerTimeout as exc:
            if self.pp < 2 or not seq or self.stage_stopped(self.pp - 1):
                raise
            report = self._stage_report(seq, report_grace_s(self.peer_timeout_s))
            if report is None:
                raise exc from None
            raise report from None

    def _stage_report(self, seq: int, grace_s: float) -> Optional[CaseError]:
        """A stage's error report that arrives within ``grace_s`` seconds (as a
        ``CaseError``), else ``None`` (nothing came, a late reply came, or a stage
        ended without one)."""
        try:
            reply = self.channel.recv(seq, grace_s)
        except PeerError:
            return None
        if reply:
            return None
        return self.read_runner_error(seq)

    def requested_input_digests(self, seq):
        super().requested_input_digests(seq)
        return list(self.channel.per_rank)


def check_pp_spec(spec: CaseSpec, remote: bool = False) -> None:
    """``ValueError`` / ``ConfigError`` (one line) for a ``--pp`` case that cannot run
    (``remote``: stages started by hand, which read the broadcast over tcp)."""
    check_pp(spec.pp)
    check_pp_model(spec.model)
    transport = "tcp" if remote else "ipc"
    if spec.transport != transport:
        raise ConfigError(f"--pp stages {'started by hand ' if remote else ''}read the "
                          f"scheduler's broadcast over {transport}, not {spec.transport}")
    if spec.async_scheduling or spec.instrumentation != "steps" or spec.stream:
        raise ConfigError("--pp runs its own batch queue with every step recorded: no "
                          "--async-scheduling, bare loops or streamed records")
    if spec.pp_direct and spec.policy != CACHED:
        raise ConfigError("the direct path sends no ids in the SchedulerOutput: its "
                          "scheduler policy is cached")
    if not spec.pp_direct and spec.policy != SEND and spec.pp > 1:
        raise ConfigError(f"--pp {spec.pp} with the {spec.policy} policy: the first stage "
                          "never sees the sampler, so its ids must be sent (send) or come "
                          "from the last stage (direct); vLLM #20291 keeps sending under PP")


def run_pp_case(spec: CaseSpec, on_step=None, *, result: CaseResult, flusher: StepFlusher,
                process: Callable[..., Any], phases: Callable[..., None],
                remote: Optional[RemoteRunners] = None) -> CaseResult:
    """Run ``spec`` with ``spec.pp`` stages; fills and returns ``result``. Raises as
    ``tp_case.run_tp_case`` does, naming the stage; ``ConfigError`` /
    ``ValueError`` from ``check_pp_spec``. ``remote``: the stages were started by hand
    (``harness.remote_runner``; ``process`` returns their ``supervisor.RemotePeer``):
    the broadcast goes over tcp at the run's fixed ports and the stages' group meets
    through a ``wire.pp.StoreServer`` at the run's store port, hosted for this case
    (``transport.EndpointError`` when it cannot be bound)."""
    check_pp_spec(spec, remote is not None)
    if remote is not None and remote.ports.store is None:
        raise ConfigError("the remote runners' ports hold no store port for --pp stages")
    from ipc_bench.harness.pp_stage import STAGE_COMMAND

    spec = replace(spec, floor=False, no_floor=False)  # none, --no-floor or not
    result.spec = spec
    try:
        return _PpCase(spec, result, STAGE_COMMAND, process, phases, remote).run(on_step,
                                                                                 flusher)
    except CaseError as exc:  # "rank R" of the broadcast machinery is stage R here
        message = _RANK.sub(r"stage \1", str(exc)).replace("a rank ", "a stage ").replace(
            "rank(s) ", "stage(s) ")
        raise CaseError(message, exc.step) from None


class _PpCase(_TpCase):
    """``tp_case._TpCase`` with N stages: window N, stage configs, no output oracle."""

    #: A stage leaves its gloo group and unloads torch after its report: on a loaded
    #: machine that can take longer than a rank's 2 s.
    clean_grace_s = 10.0

    def __init__(self, spec: CaseSpec, result: CaseResult, runner_command, process, phases,
                 remote: Optional[RemoteRunners] = None):
        # the broadcast machinery sizes itself by spec.tp; the phases get the pp spec
        super().__init__(replace(spec, tp=spec.pp), result, runner_command, process,
                         lambda _spec, *args: phases(spec, *args), remote)
        self.pp_spec = spec
        self.store_server: Optional[StoreServer] = None
        #: Stages started by hand whose control socket held an error report once their
        #: connection closed (``_reported``), by rank.
        self._queued_report: dict[int, bool] = {}

    def _start(self, socks, folder: str) -> None:
        if self.remote is None:
            self.store = os.path.join(folder, STORE_FILE)
        else:  # stages on other hosts: a tcp store on --host, at the run's store port
            host, port = split_tcp_endpoint(self.remote.store_endpoint())
            self.store_server = StoreServer(host, port, self.spec.startup_timeout_s,
                                            hold=deferred)
            self.store = self.store_server.endpoint
        super()._start(socks, folder)
        channel = TpSchedulerChannel(socks, None, self.spec.peer_timeout_s, self.ranks.problem,
                                     window=self.spec.pp, rank_problem=self.ranks.rank_problem)
        channel.per_rank = self.exchange.channel.per_rank
        channel.reply_rank = self.spec.pp - 1  # the last stage replies
        self.exchange = PpExchange(self.pp_spec, channel, self.result)
        self.exchange.stage_stopped = lambda rank: self.procs[rank].state()[:1] in ("T", "t")
        self.result.model_info = dict(self.result.model_info, pp=self.spec.pp,
                                      pp_direct=self.spec.pp_direct)
        self.result.model_info.pop("tp", None)

    def _exchange(self, on_step, flusher: StepFlusher) -> None:
        """``_TpCase._exchange``; a failure a stage reports after another stage was
        killed (its hidden states' link broke) names the killed stage first
        (``_dead_first``)."""
        try:
            super()._exchange(on_step, flusher)
        except CaseError as exc:
            raise self._dead_first(exc) from None

    def _dead_first(self, exc: CaseError) -> CaseError:
        """``exc``, a stage's failure (``rank R: ...``), led by the stage killed by a
        signal before it, when there is one (waiting ``DEAD_STAGE_WAIT_S`` at most for
        it to be seen): ``rank 0: runner process P was killed by SIGKILL; rank 1 then
        lost its link: runner failed at step N (...): rank 1: hidden states of step N
        from rank 0: ...`` (``run_pp_case`` makes each ``rank`` a ``stage``). A stage
        started by hand is seen dead when its control connection closes (waiting
        ``REMOTE_DEAD_STAGE_WAIT_S`` at most): ``rank 0: remote runner 0 (control port
        tcp://...) disconnected (its process ended or its host closed the connection);
        rank 1 then lost its link: ...``. A stage that exits by itself (after its own
        error report) is not such a cause. A stage's report that it gave up waiting on
        another gets that stage's state instead (``_waited_on_state``; a stage started
        by hand has none to read here: the report stands)."""
        message = str(exc)
        reporter = _REPORTER.search(message)
        if reporter is None:
            return exc
        waited = _WAITED_ON.search(message)
        if waited is not None and self.remote is not None:
            return exc
        if waited is not None and int(waited.group(1)) < len(self.procs):
            return self._waited_on_state(exc, int(waited.group(1)))
        rank = int(reporter.group(1))
        dead = self._remote_dead if self.remote is not None else self._killed
        wait_s = REMOTE_DEAD_STAGE_WAIT_S if self.remote is not None else DEAD_STAGE_WAIT_S
        deadline = time.monotonic() + wait_s
        while True:
            for other, proc in enumerate(self.procs):
                ended = dead(other, proc, message) if other != rank else None
                if ended:
                    return CaseError(f"rank {other}: {ended}; rank {rank} then lost its "
                                     f"link: {message}", exc.step)
            if time.monotonic() >= deadline:
                return exc
            time.sleep(0.02)

    @staticmethod
    def _killed(rank: int, proc, message: str) -> Optional[str]:
        """How spawned stage ``proc`` ended, where a signal killed it and ``message``
        does not name it already; else ``None``."""
        ended = proc.exit_description()
        if ended and " was killed by " in ended and f" {proc.pid} " not in message:
            return ended
        return None

    def _remote_dead(self, rank: int, proc, message: str) -> Optional[str]:
        """The line of stage ``rank`` started by hand (``supervisor.RemotePeer``) whose
        control connection closed without an error report before it (its process died,
        or its host closed the connection), where ``message`` does not name it
        already; else ``None``."""
        problem = proc.problem()
        if not problem or proc.name in message or self._reported(rank):
            return None
        return problem

    def _reported(self, rank: int) -> bool:
        """Whether stage ``rank``'s control socket held an ``ErrorReport`` it sent
        before its connection closed (read once, without waiting, the answer kept; the
        case has failed, so what else is queued there is dropped)."""
        if rank not in self._queued_report:
            self._queued_report[rank] = False
            sock = self.exchange.channel.socks.ctls[rank]
            for _ in range(_QUEUED_MAX):
                try:
                    frame = sock.recv(zmq.NOBLOCK)
                except zmq.ZMQError:
                    break
                try:
                    if isinstance(decode_control(frame), ErrorReport):
                        self._queued_report[rank] = True
                        break
                except PeerError:
                    continue
        return self._queued_report[rank]

    def _waited_on_state(self, exc: CaseError, rank: int) -> CaseError:
        """``exc``, a stage's report that it gave up waiting on stage ``rank``, with
        that stage's process and state (read before any stage is reaped). A stage that
        was merely slow keeps the report's advice: ``... within 2 s (raise
        --peer-timeout); rank 0 (runner process P): state R (running)``; a stopped one
        (state ``T``/``t``) is why, and more time would not help, so the advice goes, as
        ``supervisor.RunnerProcess.still_starting`` words it: ``... within 2 s; rank 0
        (runner process P): state T (stopped); it was stopped (SIGSTOP or a debugger),
        not slow``."""
        proc = self.procs[rank]
        state = proc.state()
        message = str(exc)
        if state[:1] in ("T", "t"):
            message = _ADVICE.sub("", message, count=1)
            return CaseError(f"{message}; rank {rank} ({proc.name}): state {state}; "
                             f"{STOPPED_NOT_SLOW}", exc.step)
        return CaseError(f"{message}; rank {rank} ({proc.name}): state {state}", exc.step)

    def _shut_down(self, socks, ctx, clean: bool) -> None:
        """``_TpCase._shut_down``, then the store (if this case hosts one) is stopped."""
        try:
            super()._shut_down(socks, ctx, clean)
        finally:
            if self.store_server is not None:
                self.store_server.close()

    def _config(self, socks, rank: int) -> RunnerConfig:
        spec = self.spec
        return self._runner_config(
            socks.endpoints["s2r"], socks.endpoints["r2s"], record_steps=True,
            bare_loop=False, s2r_ring=None,  # stages record every step and read no ring
            pp_size=spec.pp, pp_rank=rank, pp_direct=spec.pp_direct, pp_store=self.store)

    def _collect_reports(self) -> None:
        reports = self.exchange.channel.per_rank
        self.result.tp_rank_columns = [dict(r.columns) for r in reports]
        self.result.runner_columns = {k: v for k, v in reports[-1].columns.items()
                                      if k not in (ORIGIN_COLUMN, OUTPUT_DIGEST_COLUMN)}
        self.result.tp_sent_ns = list(self.exchange.channel.sent_ns)
