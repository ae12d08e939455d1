"""The frontend process (``--frontend``): ``python -m ipc_bench.harness.frontend_loop
OUT_ENDPOINT BACK_ENDPOINT TIMEOUT_S STARTUP_TIMEOUT_S``.

vLLM V1's frontend (``AsyncLLM``'s output handler) receives the engine core's
``EngineCoreOutputs`` every step and detokenizes them; this one detokenizes nothing. It
decodes each frame with a typed decoder (``wire.frontend.outputs_decoder``), appends
each request's new token ids to that request's stream, checks that no request gets ids
after its ``finish_reason`` came, and times each decode. On the empty frame it sends
its ``FrontendReport`` (each message's bytes and decode ns, each request's stream
digest) and exits 0; the scheduler compares the streams with its own
(``harness.frontend_hop``).

Faults: as the runner, it ignores SIGINT and SIGHUP and leaves when the scheduler dies
(``signals.child_of_scheduler``); every receive waits at most ``TIMEOUT_S`` (until
the first ``EngineCoreOutputs``, which follows the runner's first step,
``STARTUP_TIMEOUT_S``), checking the
scheduler every ``transport.POLL_SLICE_MS``. A frame it cannot decode or that breaks a
stream's rules sends ``FrontendError`` and exits 4; the scheduler gone or silent: exit
5; bad arguments or endpoints, or a CPU set it cannot pin itself to: one line on
stderr, exit 2.

CPUs: with ``--cpu-affinity``'s extra last set the scheduler puts it in
``affinity.CPU_AFFINITY_ENV``, and the frontend pins itself to it first thing
(``affinity.pin_from_env``); without it the frontend runs on the set it inherits.

``IPC_BENCH_FRONTEND_FAULT`` (tests only): ``drop:N`` drops the first token id of the
``N``-th message (from 0), ``dup:N`` doubles it, so the frontend oracle can be seen to
fail a case.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Optional

import msgspec
import zmq

from ipc_bench.engine.outputs import request_streams
from ipc_bench.errors import one_line, zmq_context
from ipc_bench.harness.affinity import pin_from_env
from ipc_bench.harness.signals import child_of_scheduler
from ipc_bench.wire.frontend import (KEEPALIVE, STOP, FrontendError, FrontendReady,
                                     FrontendReport, encode_control, outputs_decoder)
from ipc_bench.wire.transport import (EndpointError, PeerError, PeerTimeout, check_endpoint,
                                      destroy_context, open_socket, recv_frame, send_frame)

PROG = "python -m ipc_bench.harness.frontend_loop"
FAULT_ENV = "IPC_BENCH_FRONTEND_FAULT"
EXIT_OK, EXIT_USAGE, EXIT_BAD_FRAME, EXIT_SCHEDULER_GONE = 0, 2, 4, 5
_CLOSE_LINGER_MS = 5000


class _Stream:
    """One request as the frontend sees it (``output_token_ids`` as the scheduler's
    ``Request``, for ``request_streams``)."""

    __slots__ = ("req_id", "output_token_ids", "finished")

    def __init__(self, req_id: str):
        self.req_id = req_id
        self.output_token_ids: list[int] = []
        self.finished = False


class StreamError(ValueError):
    pass


class FrontendState:
    """Decoding and checking, without sockets (tests drive it by hand)."""

    def __init__(self, fault: str = ""):
        self.decode = outputs_decoder().decode
        self.streams: dict[str, _Stream] = {}
        self.payload_bytes: list[int] = []
        self.decode_ns: list[int] = []
        self.num_finished = 0
        kind, _, at = fault.partition(":")
        self.fault = (kind, int(at)) if kind in ("drop", "dup") and at.isdigit() else None

    def receive(self, frame: bytes, perf=time.perf_counter_ns) -> None:
        """Decode one ``EngineCoreOutputs`` frame and append its ids (``StreamError``,
        ``msgspec.DecodeError``)."""
        t0 = perf()
        msg = self.decode(frame)
        t1 = perf()
        n = len(self.payload_bytes)
        self.payload_bytes.append(len(frame))
        self.decode_ns.append(t1 - t0)
        streams = self.streams
        for i, out in enumerate(msg.outputs):
            ids = out.new_token_ids
            if self.fault is not None and self.fault[1] == n and i == 0:
                ids = ids[1:] if self.fault[0] == "drop" else ids + ids[:1]
            stream = streams.get(out.request_id)
            if stream is None:
                stream = streams[out.request_id] = _Stream(out.request_id)
            elif stream.finished:
                raise StreamError(f"request {out.request_id} got token ids after it finished")
            stream.output_token_ids.extend(ids)
            if out.finish_reason is not None:
                stream.finished = True
                self.num_finished += 1

    def report(self) -> FrontendReport:
        return FrontendReport(self.payload_bytes, self.decode_ns,
                              request_streams(self.streams.values()), self.num_finished)


def serve(pull: zmq.Socket, push: zmq.Socket, state: FrontendState, timeout_s: float,
          startup_timeout_s: float, peer_problem) -> int:
    """Receive until the empty frame, then report; returns the exit code. Each wait
    lasts ``timeout_s`` at most, until the first ``EngineCoreOutputs`` (which follows
    the runner's first step) ``startup_timeout_s``: a keep-alive sent while the
    scheduler waits for the first arrival of a timed replay does not end that allowance.
    A timeout's line names the option to raise."""
    wait_s, option = startup_timeout_s, "--startup-timeout"
    while True:
        try:
            frame = recv_frame(pull, wait_s, peer_problem, "EngineCoreOutputs")
        except PeerTimeout as exc:
            print(one_line(f"frontend: {exc} (raise {option})"), file=sys.stderr)
            return EXIT_SCHEDULER_GONE
        except PeerError as exc:
            print(one_line(f"frontend: {exc}"), file=sys.stderr)
            return EXIT_SCHEDULER_GONE
        if frame == STOP:
            reply, code = encode_control(state.report()), EXIT_OK
            break
        if frame == KEEPALIVE:
            continue
        wait_s, option = timeout_s, "--peer-timeout"
        try:
            state.receive(frame)
        except (msgspec.DecodeError, msgspec.ValidationError, StreamError) as exc:
            n = len(state.payload_bytes)
            message = one_line(f"message {n}: {type(exc).__name__}: {exc}")
            print(f"frontend: {message}", file=sys.stderr)
            reply, code = encode_control(FrontendError(message, n)), EXIT_BAD_FRAME
            break
    try:
        send_frame(push, reply, timeout_s, peer_problem, "the frontend's report")
    except PeerError as exc:
        print(one_line(f"frontend: {exc}"), file=sys.stderr)
        return EXIT_SCHEDULER_GONE
    return code


def frontend_main(out_endpoint: str, back_endpoint: str, timeout_s: float,
                  startup_timeout_s: float) -> int:
    """Entry point of the frontend process; returns its exit code (module docstring)."""
    peer_problem = child_of_scheduler()
    if peer_problem():
        print(f"frontend: {peer_problem()} at start-up", file=sys.stderr)
        return EXIT_SCHEDULER_GONE
    pin_problem = pin_from_env("frontend")  # --cpu-affinity's last set, when given
    if pin_problem:
        print(f"frontend: {pin_problem}", file=sys.stderr)
        return EXIT_USAGE
    ctx = zmq_context()  # under ulimit -v: our line, not libzmq's abort
    socks: list[zmq.Socket] = []
    try:
        try:
            socks.append(open_socket(ctx, zmq.PULL, out_endpoint, bind=False))
            socks.append(open_socket(ctx, zmq.PUSH, back_endpoint, bind=False))
        except EndpointError as exc:
            print(one_line(f"frontend: {exc}"), file=sys.stderr)
            return EXIT_USAGE
        pull, push = socks
        try:
            send_frame(push, encode_control(FrontendReady(os.getpid())), startup_timeout_s,
                       peer_problem, "the frontend's ready message")
        except PeerError as exc:
            print(one_line(f"frontend: {exc}"), file=sys.stderr)
            return EXIT_SCHEDULER_GONE
        state = FrontendState(os.environ.get(FAULT_ENV, ""))
        return serve(pull, push, state, timeout_s, startup_timeout_s, peer_problem)
    finally:
        for sock in socks:
            sock.close(linger=_CLOSE_LINGER_MS)
        destroy_context(ctx)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2
        print(one_line(f"{PROG}: error: {message}"), file=sys.stderr)
        sys.exit(EXIT_USAGE)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"not a positive number of seconds: {text!r}")
    return value


def _endpoint(text: str) -> str:
    try:
        return check_endpoint(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def main(argv: Optional[list[str]] = None) -> int:
    parser = _Parser(prog=PROG, description="The frontend process of ipc-bench "
                     "(bench.py starts it for each case run with --frontend).")
    parser.add_argument("out_endpoint", type=_endpoint, metavar="OUT_ENDPOINT")
    parser.add_argument("back_endpoint", type=_endpoint, metavar="BACK_ENDPOINT")
    parser.add_argument("timeout_s", type=_seconds, metavar="TIMEOUT_S")
    parser.add_argument("startup_timeout_s", type=_seconds, metavar="STARTUP_TIMEOUT_S")
    args = parser.parse_args(argv)
    return frontend_main(args.out_endpoint, args.back_endpoint, args.timeout_s,
                         args.startup_timeout_s)


if __name__ == "__main__":
    sys.exit(main())
