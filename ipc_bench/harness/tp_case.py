"""One ``--tp N`` case: one scheduler, N runner ranks receiving every ``SchedulerOutput``.

``run_tp_case(spec)`` is ``supervisor.run_case`` for ``spec.tp`` set: it binds the
broadcast's sockets (``wire.tp.TpSchedulerSockets``) and, under ``shm*``, a ring with N
readers; starts N runner processes (``python -m ipc_bench.harness CTL_ENDPOINT``,
rank ``r`` on its own control socket, told its rank in ``RunnerConfig.tp_rank``);
handshakes with each; waits until every rank reads the broadcast (ring attachments or
XPUB subscriptions); then runs the same phases as the single runner
(``supervisor.run_phases``: scheduler loop, floor, stop and reports) through a
``wire.tp.TpSchedulerChannel``.

Each rank keeps its own persistent batch and token buffer and computes the same step;
rank 0 replies. With speculative decoding (``SchedulerConfig.num_spec_tokens`` K > 0)
every rank, as every TP worker of vLLM V1 (7f280d69c ``GPUModelRunner.execute_model``),
writes the broadcast's ``scheduled_spec_decode_tokens`` into its own rows, runs the
rejection sampler and the drafter itself, and writes its accepted drafts + bonus token
into its own buffer; rank 0's ``ModelRunnerOutput`` (its ``spec_token_ids`` included)
is the one the scheduler applies. A rank that drops accepted drafts (vLLM #20530's
kind) fails its input oracle (``rank R: input oracle: ...``); one that proposes other
drafts fails the output oracle below. With a stateful codec (``--codecs slots``, ``replicated``) each rank
also keeps its own end of the codec session (``codecs.session_codecs``: its slot
table, or its replica scheduler, which checks the schedule digest every step) and
decodes the same broadcast frame; a rank whose table or replica drifts fails the case
through its input oracle or its replica's digest check (``runner failed at step S (steps.csv
seq: ...): rank R: DecodeError: ...``). The input oracle checks every rank's digests (``TpExchange`` hands
``harness.oracle.InputOracle`` one answer per rank; a drifting rank fails the case with
``rank R: input oracle: ...``); at the end every rank's per-step digests of the
``ModelRunnerOutput`` it encoded must equal rank 0's (``check_rank_outputs``: under
``send`` a rank's own samples never reach its token buffer, so only this sees a rank
that samples other tokens). Each rank's ``RunnerReport`` columns land in
``CaseResult.tp_rank_columns`` (rank 0's also in ``runner_columns``), the scheduler's
send times in ``tp_sent_ns``; ``analysis.tp`` turns them into the per-step figures.

Faults as the single runner's (``supervisor`` docstring), each naming the rank: a
rank that exits or is killed (``rank R: runner process P was killed by SIGKILL ...``,
noticed within ``wire.tp.LIVENESS_INTERVAL_NS`` while frames flow, or in any wait),
one that stops answering, one that reports an error. Whatever ends the case, the
shutdown closes the ring (unlinking its shared memory if a rank never attached), the
sockets and the context, removes the socket folder and reaps every rank (SIGKILL
unless the case ended cleanly), deferring Ctrl-C until that is done.
"""

from __future__ import annotations

import os
from typing import Any, Callable, NoReturn, Optional, Sequence

import zmq

from ipc_bench.engine.config import ConfigError
from ipc_bench.harness.affinity import cores_in_use
from ipc_bench.harness.case_lifecycle import CaseLifecycle
from ipc_bench.harness.recording import StepFlusher
from ipc_bench.harness.scheduler_loop import ChannelExchange
from ipc_bench.harness.spec import CaseError, CaseResult, CaseSpec
from ipc_bench.wire.control import (PROTOCOL_VERSION, ErrorReport, Handshake, InputDigests,
                                    Ready, StepInputIds, encode_control)
from ipc_bench.wire.handshake import RunnerConfig, encode_config
from ipc_bench.wire.remote import CLOCK_KEY, RemoteRunners, clock_id
from ipc_bench.wire.tp import (ORIGIN_COLUMN, OUTPUT_DIGEST_COLUMN, TpSchedulerChannel,
                               TpSchedulerSockets, check_tp)
from ipc_bench.wire.transport import PeerError, PeerTimeout, send_frame


#: Models every rank runs whole (no weights to shard or replicate).
TP_MODELS = ("null", "fixed-step")


class TpExchange(ChannelExchange):
    """``ChannelExchange`` whose input-oracle answers come from every rank: lists
    indexed by rank (``oracle.InputOracle`` checks each)."""

    def runner_input_digests(self, next_seq: Optional[int] = None) -> list[InputDigests]:
        super().runner_input_digests(next_seq)
        return list(self.channel.per_rank)

    def runner_step_ids(self, seq: int) -> list[StepInputIds]:
        super().runner_step_ids(seq)
        return list(self.channel.per_rank)


class _Ranks:
    """The N rank processes (``supervisor.RunnerProcess`` each, stderr in its own
    folder ``rank<R>``; ``procs``: the case's list, in rank order): ``problem()`` names
    the first rank that ended."""

    def __init__(self, procs: list) -> None:
        self.procs = procs

    def problem(self) -> Optional[str]:
        for rank, proc in enumerate(self.procs):
            found = proc.problem()
            if found:
                return f"rank {rank}: {found}"
        return None

    def rank_problem(self, rank: int) -> Optional[str]:
        """Rank ``rank``'s process alone: ``None`` while it runs, else how it ended."""
        return self.procs[rank].problem()

    def states(self) -> str:
        return ", ".join(f"rank {r} {p.state()}" for r, p in enumerate(self.procs))


def run_tp_case(spec: CaseSpec, on_step=None, *, result: CaseResult,
                flusher: StepFlusher, runner_command: Sequence[str],
                process: Callable[..., Any], phases: Callable[..., None],
                remote: Optional[RemoteRunners] = None) -> CaseResult:
    """Run ``spec`` with ``spec.tp`` ranks; fills and returns ``result``. ``process``
    starts one rank (``supervisor.RunnerProcess``'s signature), ``phases`` runs
    everything after the handshakes (``supervisor.run_phases``'). Raises
    ``CaseError`` (one line naming the rank) for a rank that dies, hangs, reports an
    error or drifts from the scheduler's token ids, ``ValueError`` for a ``spec.tp``
    outside ``wire.tp.TP_SIZES``, ``ConfigError`` for a model other than ``TP_MODELS``
    (the torch model is refused, not replicated), and ``transport.EndpointError`` when the sockets or
    the ring cannot be set up (nothing left open, no process started). ``remote``: the
    ranks were started by hand on other hosts (``wire.remote``; ``process`` then returns
    their ``supervisor.RemotePeer``): the broadcast goes over tcp XPUB/SUB at the run's
    fixed ports, each rank's connection is awaited up to ``startup_timeout_s``."""
    check_tp(spec.tp)
    if spec.model.name not in TP_MODELS:
        raise ConfigError(f"--tp runs the {' and '.join(TP_MODELS)} models; the "
                          f"{spec.model.name} model is not replicated across ranks")
    return _TpCase(spec, result, runner_command, process, phases, remote).run(on_step, flusher)


class _TpCase(CaseLifecycle):
    """The scheduler's side of a ``--tp`` case (``case_lifecycle.CaseLifecycle``): the
    broadcast's sockets, N ranks, their handshakes, the phases, every rank's report."""

    def __init__(self, spec: CaseSpec, result: CaseResult, runner_command: Sequence[str],
                 process: Callable[..., Any], phases: Callable[..., None],
                 remote: Optional[RemoteRunners] = None):
        super().__init__(spec, result, remote)
        self.runner_command, self.process, self.phases = runner_command, process, phases
        self.ranks = _Ranks(self.procs)
        self.exchange: Optional[TpExchange] = None
        #: Whether the start-up and handshakes are over (``_exchange`` began): before,
        #: no step was sent, and a failure is charged to none (``_failed``).
        self.exchanging = False

    @property
    def ring_readers(self) -> int:
        return self.spec.tp

    def _bind(self, ctx: zmq.Context, endpoint_dir) -> TpSchedulerSockets:
        spec = self.spec
        return TpSchedulerSockets(ctx, spec.transport, endpoint_dir, spec.tp, spec.host,
                                  remote=self.remote)

    def _exchange(self, on_step, flusher: StepFlusher) -> None:
        self.exchanging = True
        try:
            self.phases(self.spec, self.exchange, self.result, on_step, flusher)
        except PeerTimeout:
            raise
        except PeerError:  # a rank that reported its failure, then exited: its report
            reported = self.exchange.queued_runner_error()
            if reported is None:
                raise
            raise reported from None
        self._collect_reports()

    def _timed_out(self, exc: PeerTimeout) -> NoReturn:
        tp = self.spec.tp
        if self.remote is not None and not all(
                c or g for c, g in zip(self.remote.connected[:tp], self.remote.gone[:tp])):
            raise self._failed(str(exc))  # a rank never connected: the line says so
        kill = "" if self.remote is not None else "; killed"
        raise self._failed(f"a rank stopped answering: {exc} ({self.ranks.states()}{kill})")

    def _peer_failed(self, exc: PeerError) -> NoReturn:
        raise self._failed(str(exc))

    def _proc_label(self, index: int) -> str:
        return f"rank {index}"

    def _failed(self, message: str) -> CaseError:
        """``CaseError(message)`` charged to the step being exchanged (``exchange.seq``,
        0 while step 0 is), recorded as ``failed_step``; to none (``failed_step`` null,
        as a two-process case's) when the case failed in its start-up or handshakes,
        where the exchange's ``seq`` is already 0 but no step was sent."""
        seq = self.exchange.seq if self.exchange is not None and self.exchanging else None
        if self.result.failed_step is None:
            self.result.failed_step = seq
        return CaseError(message, seq)

    def _start(self, socks: TpSchedulerSockets, folder: str) -> None:
        """Spawn every rank, then handshake with each (``startup_timeout_s``) and wait
        until each reads the broadcast."""
        spec = self.spec
        channel = TpSchedulerChannel(socks, self.ring, spec.peer_timeout_s, self.ranks.problem,
                                     rank_problem=self.ranks.rank_problem)
        self.exchange = TpExchange(spec, channel, self.result)
        for rank in range(spec.tp):
            os.mkdir(os.path.join(folder, f"rank{rank}"), 0o700)
            cpus = ({"cpus": spec.cpu_affinity[1 + rank]}  # not with ranks started by hand
                    if len(spec.cpu_affinity or ()) > 1 + rank else {})
            self._spawn(self.process, socks.endpoints["ctls"][rank],
                        os.path.join(folder, f"rank{rank}", "runner.stderr"), self.runner_command,
                        **cpus)
        if self.remote is not None:  # started by hand: wait for each rank's connection
            self._await_remote(spec.tp)
        replies = self._handshake(channel, socks)
        if self.ring is not None:  # every rank has mapped it: its name can go
            self.ring.wait_for_readers()
        else:
            socks.wait_for_subscribers(spec.startup_timeout_s, self.ranks.problem)
        self.result.runner_device = replies[0].device + (" (remote runners)" if self.remote
                                                         else "")
        one_clock = self._one_clock(replies)
        # The N + 2 cores rule (analysis.cores) counts readers on this machine: ranks
        # started by hand on other machines leave it no cores to count.
        self.result.model_info = dict(replies[0].model_info, tp=spec.tp,
                                      tp_cores=cores_in_use(spec.cpu_affinity) if one_clock
                                      else None, tp_one_clock=one_clock)
        self.result.runner_pid = self.ranks.procs[0].pid
        if self.remote is None:
            self._record_cpus({self._proc_label(i): p.pid
                               for i, p in enumerate(self.ranks.procs)})
        else:  # ranks started by hand name their sets when they were given one
            self._record_cpus({}, {self._proc_label(i): r for i, r in enumerate(replies)})

    def _one_clock(self, replies: list[Ready]) -> bool:
        """Whether every rank reads this machine's monotonic clock, so that its times
        can be put on the scheduler's (spawned ranks do; ranks started by hand say
        which machine's clock they read: ``wire.remote.clock_id``)."""
        if self.remote is None:
            return True
        mine = clock_id()
        return bool(mine) and all(r.model_info.get(CLOCK_KEY) == mine for r in replies)

    def _config(self, socks: TpSchedulerSockets, rank: int) -> RunnerConfig:
        return self._runner_config(socks.endpoints["s2r"], socks.endpoints["r2s"],
                                   tp_size=self.spec.tp, tp_rank=rank)

    def _handshake(self, channel: TpSchedulerChannel, socks: TpSchedulerSockets) -> list[Ready]:
        """Each rank gets its own ``RunnerConfig`` on its control socket; every
        ``Ready`` is checked (``CaseError`` naming the rank otherwise)."""
        spec = self.spec
        for rank, sock in enumerate(socks.ctls):
            send_frame(sock, encode_control(Handshake(PROTOCOL_VERSION, encode_config(
                self._config(socks, rank)))), spec.startup_timeout_s, self.ranks.problem,
                f"handshake to rank {rank}")
        reply = channel.recv_control("handshake replies", spec.startup_timeout_s)
        if isinstance(reply, ErrorReport):
            self.exchange.runner_exiting = True
            raise CaseError(f"a rank refused the handshake: {reply.message}")
        for rank, ready in enumerate(channel.per_rank):
            if not isinstance(ready, Ready):
                raise CaseError(f"rank {rank}: unexpected handshake reply "
                                f"{type(ready).__name__}")
            if ready.protocol_version != PROTOCOL_VERSION:
                raise CaseError(f"rank {rank}: protocol version mismatch: it speaks "
                                f"{ready.protocol_version}, the scheduler {PROTOCOL_VERSION}")
        return list(channel.per_rank)

    def _collect_reports(self) -> None:
        """Every rank's report columns into ``tp_rank_columns``; the send times; then
        the output oracle (``check_rank_outputs``)."""
        reports = self.exchange.channel.per_rank
        self.result.tp_rank_columns = [dict(r.columns) for r in reports]
        self.result.runner_columns = {k: v for k, v in reports[0].columns.items()
                                      if k not in (ORIGIN_COLUMN, OUTPUT_DIGEST_COLUMN)}
        self.result.tp_sent_ns = list(self.exchange.channel.sent_ns)
        check_rank_outputs(self.result.tp_rank_columns,
                           drafts=self.spec.scheduler.num_spec_tokens > 0)


def check_rank_outputs(rank_columns: list[dict[str, list[int]]], drafts: bool = False) -> None:
    """Every rank's ``ModelRunnerOutput`` digests (``wire.tp.OUTPUT_DIGEST_COLUMN``, one
    per step) must equal rank 0's, whose frames the scheduler received: ``CaseError``
    naming the first rank and step that differ (``rank R: step S: its
    ModelRunnerOutput differs from rank 0's ...``; with ``drafts``, speculative
    decoding, the line also names other drafts: ``spec_token_ids`` is in the digest).
    Ranks that report no digests (a streamed case keeps no frames) are not compared."""
    ref = rank_columns[0].get(OUTPUT_DIGEST_COLUMN) if rank_columns else None
    if not ref:
        return
    for rank, cols in enumerate(rank_columns[1:], start=1):
        mine = cols.get(OUTPUT_DIGEST_COLUMN)
        if not mine:
            continue
        if len(mine) != len(ref):
            raise CaseError(f"rank {rank}: encoded {len(mine)} ModelRunnerOutputs, rank 0 "
                            f"{len(ref)}")
        for seq, (a, b) in enumerate(zip(ref, mine)):
            if a != b:
                raise CaseError(f"rank {rank}: step {seq}: its ModelRunnerOutput differs "
                                f"from rank 0's (the one the scheduler received): it sampled "
                                f"other tokens" + (" or proposed other drafts" if drafts
                                                   else ""), seq)
