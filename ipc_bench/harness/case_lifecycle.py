"""The lifecycle every case with runner processes shares: ``CaseLifecycle``.

A two-process case (``supervisor._TwoProcessCase``), a ``--tp`` case
(``tp_case._TpCase``) and a ``--pp`` case (``pp_case._PpCase``, built on the ``--tp``
one) go through the same steps, written here once: make the case's private socket
folder (``transport.EndpointDir``), a ``zmq.Context`` and the scheduler's sockets;
under ``shm*`` a ``shm_ring.RingWriter`` with one reader per runner; start the runner
process(es) (``CaseLifecycle._spawn``: SIGINT / SIGTERM deferred while the handle is
taken), wait for runners started by hand (``wire.remote``), handshake; run the
exchange (the phases, with the step flusher); and, whatever ends the case (a clean
stop, a runner that dies or never connects, a ring that cannot be created, Ctrl-C or
SIGTERM), shut down with signals deferred: close the ring (unlinking its shared memory
if a reader never attached), the sockets and then the context (never blocks), reap
every runner (SIGKILL unless the case ended cleanly or the runner reported an error),
read their heap reports and remove the socket folder. A ``CaseError`` records its step
as the case's ``failed_step``.

Each case kind supplies only what differs: which sockets (``_bind``), how many ring
readers (``ring_readers``), the start-up and handshake (``_start``), the exchange
(``_exchange``), the error lines for a ``PeerTimeout`` / ``PeerError`` that escapes
them (``_timed_out``, ``_peer_failed``), what else to close first (``_close_extras``)
and how each process's heap report is named (``_proc_label``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, NoReturn, Optional

import zmq

from ipc_bench.errors import zmq_context
from ipc_bench.harness.recording import StepFlusher
from ipc_bench.harness.scheduler_loop import ChannelExchange
from ipc_bench.harness.signals import deferred
from ipc_bench.harness.spec import CaseError, CaseResult, CaseSpec
from ipc_bench.wire.handshake import RunnerConfig
from ipc_bench.wire.remote import RemoteRunners
from ipc_bench.wire.shm_ring import RING_TRANSPORTS, RingWriter
from ipc_bench.wire.transport import EndpointDir, PeerError, PeerTimeout, destroy_context


class CaseLifecycle:
    """The scheduler's side of a case with runner processes: ``run`` sets up, starts,
    exchanges and shuts down (module docstring); subclasses fill in the hooks.

    State: ``spec``, ``result`` (filled in place), ``remote`` (runners started by
    hand, or ``None``), ``ring`` (the ``RingWriter`` under ``shm*``), ``exchange``
    (the ``ChannelExchange``, once the start-up made it) and ``procs`` (the runner
    processes, or their ``supervisor.RemotePeer``, in rank order)."""

    #: How long a runner may take to exit after its report before it is killed.
    clean_grace_s = 2.0

    def __init__(self, spec: CaseSpec, result: CaseResult,
                 remote: Optional[RemoteRunners] = None):
        self.spec, self.result, self.remote = spec, result, remote
        self.ring: Optional[RingWriter] = None
        self.exchange: Optional[ChannelExchange] = None
        self.procs: list = []

    # -- the hooks -----------------------------------------------------------------------

    @property
    def ring_readers(self) -> int:
        """How many runners read the ring under ``shm*``."""
        raise NotImplementedError

    def _bind(self, ctx: zmq.Context, endpoint_dir: EndpointDir) -> Any:
        """The scheduler's bound sockets (closed by the shutdown)."""
        raise NotImplementedError

    def _start(self, socks: Any, folder: str) -> None:
        """Start the runner(s) (``_spawn``; ``folder``: the socket folder, for their
        stderr files), wait for those started by hand, handshake; sets ``exchange``."""
        raise NotImplementedError

    def _exchange(self, on_step, flusher: StepFlusher) -> None:
        """Everything after the handshake (the phases, the reports)."""
        raise NotImplementedError

    def _timed_out(self, exc: PeerTimeout) -> NoReturn:
        """Raise the case's ``CaseError`` for a ``PeerTimeout`` that escaped ``_start``
        or ``_exchange``."""
        raise NotImplementedError

    def _peer_failed(self, exc: PeerError) -> NoReturn:
        """Raise the case's ``CaseError`` for a ``PeerError`` that escaped ``_start``
        or ``_exchange``."""
        raise NotImplementedError

    def _close_extras(self) -> None:
        """What the shutdown stops before the ring and the sockets (nothing here)."""

    def _proc_label(self, index: int) -> str:
        """The key of ``procs[index]``'s heap report in ``result.heap_reports``."""
        raise NotImplementedError

    # -- the lifecycle -------------------------------------------------------------------

    def run(self, on_step, flusher: StepFlusher) -> CaseResult:
        """Run the case; returns ``result``. Raises ``CaseError`` (its step recorded
        as ``result.failed_step``), ``transport.EndpointError`` when the socket folder,
        a socket or the ring cannot be set up, ``signals.Interrupted`` on Ctrl-C or
        SIGTERM; the shutdown runs on every path."""
        spec, result = self.spec, self.result
        endpoint_dir: Optional[EndpointDir] = None
        ctx: Optional[zmq.Context] = None
        socks = None
        clean = False
        try:
            with deferred():  # a signal while the folder is made must not lose its name
                endpoint_dir = EndpointDir()
            ctx = zmq_context()  # under ulimit -v: our line, not libzmq's abort
            socks = self._bind(ctx, endpoint_dir)
            if spec.transport in RING_TRANSPORTS:
                self.ring = RingWriter(self.ring_readers, wait=RING_TRANSPORTS[spec.transport],
                                       folder=endpoint_dir.path, ctx=ctx,
                                       timeout_s=spec.peer_timeout_s)
            self._start(socks, endpoint_dir.path)
            self._exchange(on_step, flusher)
            clean = True
            return result
        except PeerTimeout as exc:
            self._timed_out(exc)
        except PeerError as exc:
            self._peer_failed(exc)
        except CaseError as exc:
            if result.failed_step is None:
                result.failed_step = exc.step
            raise
        finally:
            with deferred():
                try:
                    self._shut_down(socks, ctx, clean)
                finally:
                    if endpoint_dir is not None:
                        endpoint_dir.cleanup()

    def _spawn(self, start: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Start one runner, ``start(*args, **kwargs)``, with SIGINT / SIGTERM deferred
        until its handle is in ``procs`` (the shutdown reaps it whatever arrives);
        returns it."""
        with deferred():  # the handle must be kept, whatever signal arrives
            self.procs.append(start(*args, **kwargs))
        return self.procs[-1]

    def _record_cpus(self, pids: dict[str, int], replies: Optional[dict[str, Any]] = None
                     ) -> None:
        """With ``spec.cpu_affinity``, or a runner started by hand that names its CPU
        set in its ``Ready`` (``replies``: process name -> ``Ready``; the set under
        ``wire.remote.CPUS_KEY``, read by that runner on its host): record in
        ``result.cpus_allowed`` the CPUs the kernel lets this process (``scheduler``)
        and each of ``pids`` (process name -> pid) run on, read after the handshake
        (``affinity.cpus_allowed``), then the sets those runners named."""
        from ipc_bench.wire.remote import CPUS_KEY

        named = {name: str(ready.model_info[CPUS_KEY]) for name, ready in
                 (replies or {}).items() if CPUS_KEY in ready.model_info}
        if not (self.spec.cpu_affinity or named):
            return
        from ipc_bench.harness.affinity import cpus_allowed

        for name, pid in {"scheduler": 0, **pids}.items():
            self.result.cpus_allowed[name] = cpus_allowed(pid) or "unknown"
        self.result.cpus_allowed.update(named)

    def _await_remote(self, count: int) -> None:
        """Runners started by hand: wait up to ``startup_timeout_s`` for the
        connection of each of the first ``count`` ranks (``PeerTimeout`` otherwise);
        the seconds waited are added to ``result.runner_wait_s``."""
        t0 = time.monotonic()
        try:
            for rank in range(count):
                self.remote.wait_connected(rank, self.spec.startup_timeout_s)
        finally:
            self.result.runner_wait_s += time.monotonic() - t0

    def _runner_config(self, s2r_endpoint: str, r2s_endpoint: str,
                       **fields: Any) -> RunnerConfig:
        """The ``RunnerConfig`` of the case's spec for a runner reading ``s2r_endpoint``
        and answering on ``r2s_endpoint`` (and the ring, if any); ``fields`` add to or
        override it. Validated."""
        spec = self.spec
        config = RunnerConfig(**{
            "scheduler": spec.scheduler, "model": spec.model, "policy": spec.policy,
            "codec": spec.codec, "warmup_steps": spec.warmup_steps,
            "peer_timeout_s": spec.peer_timeout_s, "startup_timeout_s": spec.startup_timeout_s,
            "s2r_endpoint": s2r_endpoint,
            "r2s_endpoint": r2s_endpoint, "record_steps": not spec.stream,
            "allow_pickle_over_tcp": spec.allow_pickle_over_tcp,
            "bare_loop": spec.instrumentation == "totals",
            "check_inputs": spec.input_oracle_interval > 0,
            "s2r_ring": self.ring.handle if self.ring is not None else None,
            **spec.runner_need, **fields})
        config.validate()
        return config

    def _shut_down(self, socks: Any, ctx: Optional[zmq.Context], clean: bool) -> None:
        """Stop the extras (``_close_extras``), close the ring (unlinking its shared
        memory if a reader never attached), the sockets and the context (never blocks:
        linger 0, every socket closed first), then reap every runner (``_reap``). Each
        step runs even if one before it raised (a frontend that failed to close must
        not leave the ring's segment or a runner behind); the first such error is
        raised at the end. Then their heap reports, where they wrote one."""
        steps = (self._close_extras,
                 lambda: self.ring is not None and self.ring.close(),
                 lambda: socks is not None and socks.close(),
                 lambda: ctx is not None and destroy_context(ctx),
                 lambda: self._reap(clean))
        first: Optional[Exception] = None
        for step in steps:
            try:
                step()
            except Exception as exc:  # the rest still runs
                first = first or exc
        self._read_heap_reports()
        if first is not None:
            raise first

    def _reap(self, clean: bool) -> None:
        """Reap every runner: after a clean stop each exits by itself
        (``clean_grace_s``); after an error report it is on its way out; otherwise
        (dead, hung or interrupted) it is killed."""
        if clean:
            grace_s, kill = self.clean_grace_s, False
        elif self.exchange is not None and self.exchange.runner_exiting:
            grace_s, kill = 1.0, False
        else:
            grace_s, kill = 5.0, True
        for proc in self.procs:
            try:
                proc.reap(grace_s=grace_s, kill=kill)
            except ProcessLookupError:
                pass

    def _read_heap_reports(self) -> None:
        """Each runner's heap report into ``result.heap_reports``, where it wrote one."""
        for index, proc in enumerate(self.procs):
            try:
                self.result.heap_reports[self._proc_label(index)] = Path(
                    proc.heap_report_path).read_text()
            except OSError:  # not tracing, or the runner never got to write it
                pass
