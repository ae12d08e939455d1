"""Serializers for the measured messages: one module owns every choice.

- ``msgpack``: msgspec MessagePack with typed decoders built once and reused, as
  vLLM's ``vllm/v1/serial_utils.py`` does for the frontend <-> EngineCore hop.
- ``pickle``: ``pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)``, what vLLM's
  multiprocess executor does to ``SchedulerOutput`` before ``MessageQueue`` ships it
  (``vllm/distributed/device_communicators/shm_broadcast.py``). Pickle runs code on
  load: only use it between processes you started yourself.

A ``Codec`` encodes to ``bytes`` and decodes ``bytes``-like frames into the expected
type, raising ``DecodeError`` (one line) for anything else. ``msgpack`` checks every
field's type on decode, so a truncated, corrupted or wrong-type frame never comes
back as a wrong value. ``pickle`` checks only the top-level class (checking every
field would cost more than the decode, and vLLM's ``pickle.loads`` checks nothing):
a corrupted pickle can decode to a message whose fields have wrong types, which the
receiving loop then rejects with an error naming the step; it can also ask for
unbounded memory before failing (a fuzzed frame took 23 GB here). That, and code
execution on load, is why pickle is refused on TCP unless ``--allow-pickle-over-tcp``.
"""

from __future__ import annotations

import pickle
from typing import Any, Generic, TypeVar

import msgspec

from ipc_bench.engine.messages import ModelRunnerOutput, SchedulerOutput
from ipc_bench.errors import one_line

T = TypeVar("T")


class DecodeError(ValueError):
    """A frame could not be decoded into the expected message type (one line)."""


class Codec(Generic[T]):
    """Encoder/decoder pair for one message type. ``name`` is the codec's CLI name."""

    name: str

    def __init__(self, msg_type: type[T]):
        self.msg_type = msg_type

    def encode(self, msg: T) -> bytes:  # pragma: no cover - interface
        raise NotImplementedError

    def decode(self, frame: Any) -> T:  # pragma: no cover - interface
        raise NotImplementedError


class MsgpackCodec(Codec[T]):
    """msgspec MessagePack; the decoder validates the frame against ``msg_type``."""

    name = "msgpack"

    def __init__(self, msg_type: type[T]):
        super().__init__(msg_type)
        self._encoder = msgspec.msgpack.Encoder()
        self._decoder = msgspec.msgpack.Decoder(msg_type)
        self.encode = self._encoder.encode  # bound C method: no Python frame per call

    def decode(self, frame: Any) -> T:
        try:
            return self._decoder.decode(frame)
        except msgspec.DecodeError as exc:
            raise DecodeError(one_line(f"{self.msg_type.__name__}: {exc}")) from None


class PickleCodec(Codec[T]):
    """pickle at ``HIGHEST_PROTOCOL`` (5 on Python >= 3.8), as vLLM's executor."""

    name = "pickle"

    def __init__(self, msg_type: type[T]):
        super().__init__(msg_type)
        self._protocol = pickle.HIGHEST_PROTOCOL

    def encode(self, msg: T) -> bytes:
        return pickle.dumps(msg, protocol=self._protocol)

    def decode(self, frame: Any) -> T:
        try:
            msg = pickle.loads(frame)
        except Exception as exc:  # pickle raises many types on corrupt input
            raise DecodeError(one_line(
                f"{self.msg_type.__name__}: {type(exc).__name__}: {exc}")) from None
        if type(msg) is not self.msg_type:
            raise DecodeError(
                f"{self.msg_type.__name__}: expected {self.msg_type.__name__}, got {type(msg).__name__}")
        return msg


#: The codecs registry: ``--codecs`` name -> class, in the order runs and tables use.
CODEC_CLASSES: dict[str, type[Codec]] = {"msgpack": MsgpackCodec, "pickle": PickleCodec}
CODECS: tuple[str, ...] = tuple(CODEC_CLASSES)


def make_codec(name: str, msg_type: type[T]) -> Codec[T]:
    """Codec ``name`` (``msgpack`` or ``pickle``) for ``msg_type``; ``KeyError`` if unknown."""
    return CODEC_CLASSES[name](msg_type)


def scheduler_output_codec(name: str) -> Codec[SchedulerOutput]:
    """The codec for the scheduler -> runner direction."""
    return make_codec(name, SchedulerOutput)


def model_runner_output_codec(name: str) -> Codec[ModelRunnerOutput]:
    """The codec for the runner -> scheduler direction."""
    return make_codec(name, ModelRunnerOutput)
