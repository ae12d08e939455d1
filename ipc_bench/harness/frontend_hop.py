"""The scheduler's side of the engine core -> frontend hop (``CaseSpec.frontend``).

``FrontendHop`` binds the hop's sockets (``wire.frontend.FrontendSockets``: ``ipc://``
in a socket folder of its own, or ``tcp://`` on the case's host for ``--transport
tcp``), starts the frontend process (``harness.frontend_loop``) as the supervisor
starts the runner (the same ``RunnerProcess``, passed in: stderr in a private file,
exit described in one line, reaped; pinned to ``CaseSpec.frontend_cpus`` when set),
and waits for its ``FrontendReady`` (``startup_timeout_s``), after which the CPUs it
may run on join the case's ``cpus_allowed`` when the others' are recorded
(``--cpu-affinity``). The scheduler's loops then call ``step`` after each
``update_from_output``, outside the step's timed region (vLLM sends from the engine
core's output thread, off its busy loop): build the ``EngineCoreOutputs``, encode it
into the reused buffer, send it; each part is timed into ``columns``, one value per
step (0 bytes where no request sampled: nothing is sent, as in vLLM). ``finish``
sends the empty frame, reads the ``FrontendReport`` and fails the case (``CaseError``)
when the frontend failed, received other messages than were sent, or its token
stream of any request differs from the scheduler's (the *frontend oracle*: a dropped or
doubled id fails the case, naming the request). ``close`` closes the sockets and reaps
the process (killed unless it finished cleanly), whatever happened.

Every wait is bounded: the ready message and the report by the case's timeouts, a
send that the frontend does not take by ``peer_timeout_s``; the frontend's exit is
noticed at the next step. A wait that runs out fails the case with the runner's lines
(``RunnerProcess.still_starting`` for the ready message; ``frontend process P stopped
answering: ... (state T (stopped); killed)`` otherwise)."""

from __future__ import annotations

import os
import time
from typing import Optional

import msgspec
import zmq

from ipc_bench.engine.outputs import build_engine_core_outputs, streams_digest
from ipc_bench.errors import zmq_context
from ipc_bench.harness.signals import deferred
from ipc_bench.harness.spec import CaseError, CaseResult, CaseSpec
from ipc_bench.wire.frontend import (KEEPALIVE, STOP, FrontendError, FrontendReady,
                                     FrontendReport, FrontendSockets, OutputsEncoder,
                                     decode_control)
from ipc_bench.wire.transport import (EndpointDir, PeerError, PeerTimeout, destroy_context,
                                      recv_frame, wait_send)

FRONTEND_COMMAND = ("-m", "ipc_bench.harness.frontend_loop")
#: Per-step columns of the hop on the scheduler's side (``CaseResult.frontend_columns``).
FRONTEND_COLUMNS = ("frontend_build_ns", "frontend_encode_ns", "frontend_send_ns",
                    "frontend_payload_bytes")


class FrontendHop:
    """One case's frontend: sockets, process, per-step sends (module docstring).
    ``process``: the supervisor's ``RunnerProcess`` class; ``command``: the
    interpreter's command line before the module's arguments."""

    def __init__(self, spec: CaseSpec, result: CaseResult, process, command: tuple):
        self.spec = spec
        self.result = result
        self.timeout_s = spec.peer_timeout_s
        self.columns: dict[str, list[int]] = {k: [] for k in FRONTEND_COLUMNS}
        result.frontend_columns = self.columns
        self.encoder = OutputsEncoder()
        self.last_send = time.monotonic()
        self.clean = False
        self.proc = None
        self.socks: Optional[FrontendSockets] = None
        self.dir: Optional[EndpointDir] = None
        self.ctx: Optional[zmq.Context] = None
        try:
            with deferred():  # a signal while the folder is made must not lose its name
                self.dir = EndpointDir()
            self.ctx = zmq_context()  # under ulimit -v: our line, not libzmq's abort
            self.socks = FrontendSockets(self.ctx, "tcp" if spec.transport == "tcp" else "ipc",
                                         self.dir, spec.host)
            args = (self.socks.out_endpoint, self.socks.back_endpoint,
                    f"{spec.peer_timeout_s:g}", f"{max(spec.startup_timeout_s, spec.peer_timeout_s):g}")
            with deferred():  # the handle must be kept, whatever signal arrives
                self.proc = process(args, os.path.join(self.dir.path, "frontend.stderr"),
                                    (*command, *FRONTEND_COMMAND), role="frontend",
                                    cpus=spec.frontend_cpus)
        except BaseException:
            self.close()
            raise

    def problem(self) -> Optional[str]:
        return self.proc.problem()

    def wait_ready(self) -> None:
        """The frontend's ``FrontendReady`` (``startup_timeout_s``), else ``CaseError``
        (out of time: ``RunnerProcess.still_starting``'s line, the state and the
        option; its process gone: the line naming it, ``frontend process P was killed
        by SIGKILL, noticed while waiting for ready message from the frontend``, as a
        later failure's; a malformed message: ``frontend: malformed ...``)."""
        try:
            frame = recv_frame(self.socks.back, self.spec.startup_timeout_s, self.problem,
                               "ready message from the frontend")
        except PeerTimeout as exc:  # the runner's line for a start-up out of time
            raise CaseError(self.proc.still_starting(exc, self.spec.startup_timeout_s)
                            ) from None
        except PeerError as exc:  # its process named: frontend process P was killed ...
            raise CaseError(str(exc)) from None
        try:
            msg = decode_control(frame)
        except PeerError as exc:
            raise CaseError(f"frontend: {exc}") from None
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise CaseError(f"frontend sent an undecodable ready message: {exc}") from None
        if not isinstance(msg, FrontendReady):
            raise CaseError(f"expected the frontend's ready message, got {type(msg).__name__}")
        self.result.frontend_pid = self.proc.pid
        if self.result.cpus_allowed:  # the case's processes are recorded: this one too
            from ipc_bench.harness.affinity import cpus_allowed

            self.result.cpus_allowed["frontend"] = cpus_allowed(self.proc.pid) or "unknown"

    def step(self, seq: int, sched, plan, output, finished: list,
             perf=time.perf_counter_ns) -> None:
        """Build, encode and send step ``seq``'s ``EngineCoreOutputs`` (after
        ``sched.update_from_output(plan, output)`` returned ``finished``)."""
        cols = self.columns
        t0 = perf()
        msg = build_engine_core_outputs(sched, plan, output, finished)
        t1 = perf()
        if msg is None:  # nothing sampled (partial prefills): vLLM sends nothing
            t2 = t3 = t1
            nbytes = 0
            self.keepalive()  # a long run of such steps must not time the frontend out
        else:
            buf = self.encoder.encode(msg)
            t2 = perf()
            self._send(buf, seq)
            t3 = perf()
            nbytes = len(buf)
        cols["frontend_build_ns"].append(t1 - t0)
        cols["frontend_encode_ns"].append(t2 - t1)
        cols["frontend_send_ns"].append(t3 - t2)
        cols["frontend_payload_bytes"].append(nbytes)
        if self.proc.proc.poll() is not None:
            raise CaseError(f"{self.problem()}, noticed after the EngineCoreOutputs of step "
                            f"{seq}", seq)

    def _send(self, frame, seq: int, what: str = "") -> None:
        """Send one frame to the frontend: step ``seq``'s EngineCoreOutputs, or (``seq``
        -1) the control frame ``what`` names; ``CaseError`` naming the frame when the
        frontend dies or stops reading (the runner's lines' form: ``frontend process P
        was killed by SIGKILL, noticed while sending the EngineCoreOutputs of step 30 to
        the frontend``)."""
        self.last_send = time.monotonic()
        try:
            self.socks.out.send(frame, zmq.NOBLOCK, copy=True)
        except zmq.Again:
            what = what or f"the EngineCoreOutputs of step {seq}"
            try:
                wait_send(self.socks.out, bytes(frame), self.timeout_s, self.problem,
                          f"{what} to the frontend")
            except PeerTimeout as exc:
                raise self._stopped_answering(exc, seq) from None
            except PeerError as exc:
                raise CaseError(str(exc), seq if seq >= 0 else None) from None

    def _stopped_answering(self, exc: PeerTimeout, seq: int = -1) -> CaseError:
        """The runner's line for a peer that stopped answering, naming the frontend's
        process and its state (``close`` kills it): ``frontend process P stopped
        answering: could not send the EngineCoreOutputs of step 30 to the frontend
        within 1 s (state T (stopped); killed)``."""
        return CaseError(f"{self.proc.name} stopped answering: {exc} {self.proc.hang_note()}",
                         seq if seq >= 0 else None)

    def keepalive(self) -> None:
        """While nothing runs (timed replay): a ``KEEPALIVE`` frame once a quarter of
        the frontend's timeout has passed since the last frame."""
        if time.monotonic() - self.last_send > self.timeout_s / 4:
            self._send(KEEPALIVE, -1, "a keep-alive")

    def finish(self) -> None:
        """Stop the frontend, read its report and check it (``CaseError``)."""
        self._send(STOP, -1, "the stop message")
        try:
            frame = recv_frame(self.socks.back, self.timeout_s, self.problem,
                               "report from the frontend")
        except PeerTimeout as exc:
            raise self._stopped_answering(exc) from None
        except PeerError as exc:  # its process named: frontend process P was killed ...
            raise CaseError(str(exc)) from None
        try:
            report = decode_control(frame)
        except PeerError as exc:
            raise CaseError(f"frontend: {exc}") from None
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise CaseError(f"frontend sent an undecodable report: {exc}") from None
        if isinstance(report, FrontendError):
            raise CaseError(f"frontend failed at {report.message}")
        if not isinstance(report, FrontendReport):
            raise CaseError(f"expected the frontend's report, got {type(report).__name__}")
        self.clean = True
        self.result.frontend_decode_ns = report.decode_ns
        self.result.frontend_token_digest = streams_digest(
            {k: tuple(v) for k, v in report.streams.items()})
        check_report(report, self.columns["frontend_payload_bytes"],
                     self.result.frontend_expected_streams)

    def close(self) -> None:
        """Close the sockets and the context (never blocks), reap the process (after a
        clean finish it exits by itself; otherwise it is killed), remove the folder."""
        with deferred():
            try:
                if self.socks is not None:
                    self.socks.close()
                if self.ctx is not None:
                    destroy_context(self.ctx)
                if self.proc is not None:
                    self.proc.reap(grace_s=2.0, kill=not self.clean)
            finally:
                if self.dir is not None:
                    self.dir.cleanup()


def check_report(report: FrontendReport, sent_bytes: list[int],
                 expected: dict[str, tuple[int, str]]) -> None:
    """The frontend oracle: the frontend received exactly the messages sent (count
    and sizes) and each request's token stream equals the scheduler's (``CaseError``
    naming the first request that differs)."""
    sent = [n for n in sent_bytes if n]
    if report.payload_bytes != sent:
        raise CaseError(f"frontend received {len(report.payload_bytes)} EngineCoreOutputs "
                        f"messages ({sum(report.payload_bytes):,} B), the scheduler sent "
                        f"{len(sent)} ({sum(sent):,} B)")
    got = {k: tuple(v) for k, v in report.streams.items()}
    if got == expected:
        return
    for req_id in sorted(set(got) | set(expected)):
        g, e = got.get(req_id, (0, "")), expected.get(req_id, (0, ""))
        if g != e:
            raise CaseError(f"frontend oracle: the token stream of request {req_id} "
                            f"differs from the scheduler's ({g[0]} ids at the frontend, "
                            f"{e[0]} at the scheduler; digests {g[1] or '-'} and "
                            f"{e[1] or '-'})")
