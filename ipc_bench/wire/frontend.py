"""The engine core -> frontend hop on the wire (``--frontend``).

As vLLM V1's engine core output path: msgspec MessagePack (``vllm/v1/serial_utils.py``:
one ``msgpack.Encoder`` built once, ``encode_into`` a reused ``bytearray``) over a
ZeroMQ PUSH socket to the frontend's PULL socket, ``ipc://`` or ``tcp://`` on the
case's host (127.0.0.1). The frame is copied on send (``copy=True``): a zero-copy send
of the reused buffer could go out after the next step overwrote it (vLLM #50053).

Here the scheduler's process binds both of the hop's sockets, as it binds the runner's:
``out`` (PUSH: one ``EngineCoreOutputs`` frame per step that sampled a token, an empty
frame to stop, ``KEEPALIVE`` while a timed replay idles) and ``back`` (PULL: the
frontend's ``FrontendReady``, then its ``FrontendReport`` or ``FrontendError``).
"""

from __future__ import annotations

from typing import Optional, Union

import msgspec
import zmq

from ipc_bench.engine.outputs import EngineCoreOutputs
from ipc_bench.wire.transport import EndpointDir, open_socket, tcp_bind_endpoint

#: A frame the frontend ignores: the scheduler is alive but has nothing to send.
KEEPALIVE = b"\x00"
#: The empty frame: no more steps; the frontend answers with its report.
STOP = b""


class FrontendReady(msgspec.Struct, tag=True):
    pid: int


class FrontendReport(msgspec.Struct, tag=True):
    """What the frontend received: per message, its bytes and decode time (ns);
    per request, ``(number of ids, stream digest)`` (``engine.outputs.request_streams``)."""

    payload_bytes: list[int]
    decode_ns: list[int]
    streams: dict[str, tuple[int, str]]
    num_finished: int


class FrontendError(msgspec.Struct, tag=True):
    message: str
    message_index: int


FrontendMessage = Union[FrontendReady, FrontendReport, FrontendError]
_CONTROL_ENCODER = msgspec.msgpack.Encoder()
_CONTROL_DECODER = msgspec.msgpack.Decoder(FrontendMessage)


def encode_control(msg) -> bytes:
    return _CONTROL_ENCODER.encode(msg)


def decode_control(frame: bytes):
    """A frontend control message; ``msgspec.DecodeError`` / ``ValidationError``."""
    return _CONTROL_DECODER.decode(frame)


class OutputsEncoder:
    """``EngineCoreOutputs`` -> the reused buffer (vLLM's ``MsgpackEncoder``:
    ``encode_into``). ``encode(msg)`` returns the buffer, valid until the next call."""

    def __init__(self) -> None:
        self._encode_into = msgspec.msgpack.Encoder().encode_into
        self.buffer = bytearray(4096)

    def encode(self, msg: EngineCoreOutputs) -> bytearray:
        self._encode_into(msg, self.buffer)
        return self.buffer


def outputs_decoder():
    """The frontend's typed decoder: ``decode(frame) -> EngineCoreOutputs``."""
    return msgspec.msgpack.Decoder(EngineCoreOutputs)


#: The hop's sockets ``FrontendSockets`` binds (its attribute, ZeroMQ type) ...
FRONTEND_SOCKETS = (("out", zmq.PUSH), ("back", zmq.PULL))
#: ... and their ``ipc://`` socket names in its ``EndpointDir``.
FRONTEND_SOCKET_NAMES = tuple(f"frontend-{name}" for name, _ in FRONTEND_SOCKETS)


class FrontendSockets:
    """The scheduler's two bound sockets of the hop (``transport`` ``tcp``: ephemeral
    ports on ``host``; anything else: ``ipc://`` files in ``endpoint_dir``).
    ``EndpointError`` (after closing what it opened) when one cannot be bound."""

    def __init__(self, ctx: zmq.Context, transport: str, endpoint_dir: Optional[EndpointDir],
                 host: str):
        self.out: Optional[zmq.Socket] = None
        self.back: Optional[zmq.Socket] = None
        try:
            for (name, kind), file_name in zip(FRONTEND_SOCKETS, FRONTEND_SOCKET_NAMES):
                endpoint = (tcp_bind_endpoint(host) if transport == "tcp"
                            else f"ipc://{endpoint_dir.path}/{file_name}")
                setattr(self, name, open_socket(ctx, kind, endpoint, bind=True))
        except BaseException:
            self.close()
            raise
        self.out_endpoint = self.out.getsockopt_string(zmq.LAST_ENDPOINT)
        self.back_endpoint = self.back.getsockopt_string(zmq.LAST_ENDPOINT)

    def close(self) -> None:
        for sock in (self.out, self.back):
            if sock is not None:
                sock.close(linger=0)
