"""Configuration Structs: scheduler limits, model, transport and one benchmark case.

Names follow vLLM's engine arguments (``max_num_seqs``, ``max_num_batched_tokens``,
``max_model_len``, ``block_size``, ``num_blocks``). Every config validates itself with
``validate()``, which raises ``ConfigError`` with one line naming the setting.
"""

from __future__ import annotations

from typing import Literal, Optional

import msgspec

Policy = Literal["send", "cached"]
Codec = Literal["msgpack", "pickle"]
ModelName = Literal["null"]

POLICIES: tuple[str, ...] = ("send", "cached")
CODECS: tuple[str, ...] = ("msgpack", "pickle")
MODELS: tuple[str, ...] = ("null",)

#: Llama 3's vocabulary: ids up to 128,255 take 5 msgpack bytes above 65,535.
DEFAULT_VOCAB_SIZE = 128_256


class ConfigError(ValueError):
    """A setting is out of range or inconsistent; the message is one line."""


class SchedulerConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Scheduler limits (vLLM ``SchedulerConfig`` / ``CacheConfig`` names).

    ``max_num_batched_tokens``: token budget of one step. ``max_model_len``: prompt +
    output tokens of one request. ``block_size``: tokens per KV-cache block;
    ``num_blocks``: blocks in the cache (accounting only for the null model).
    Chunked prefill is always on, as in vLLM V1.
    """

    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    max_model_len: int = 4096
    block_size: int = 16
    num_blocks: int = 65536

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first setting that is out of range."""
        for name in ("max_num_seqs", "max_num_batched_tokens", "max_model_len",
                     "block_size", "num_blocks"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.max_model_len < 2:
            raise ConfigError(f"max_model_len must be at least 2, got {self.max_model_len}")
        if self.max_model_len < self.block_size:
            raise ConfigError(
                f"max_model_len ({self.max_model_len}) is smaller than one block "
                f"(block_size {self.block_size})")
        if self.max_num_seqs > 65536:
            raise ConfigError(f"max_num_seqs must be at most 65536, got {self.max_num_seqs}")
        if self.max_num_seqs * self.max_model_len > 2**31:
            raise ConfigError(
                f"max_num_seqs x max_model_len ({self.max_num_seqs * self.max_model_len}) "
                "exceeds the runner's 2**31-token buffer")

    @property
    def max_blocks_per_req(self) -> int:
        """Blocks one request may hold: ``ceil(max_model_len / block_size)``."""
        return -(-self.max_model_len // self.block_size)


class ModelConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The runner's model. ``null``: no compute, each token a hash of the runner's
    own buffer row (``ipc_bench.model.NullModel``). ``hash_window``: how many of the
    last tokens the hash reads. ``vocab_size``: sampled ids lie in ``[0, vocab_size)``.
    """

    name: str = "null"
    vocab_size: int = DEFAULT_VOCAB_SIZE
    hash_window: int = 4
    seed: int = 0

    def validate(self) -> None:
        if self.name not in MODELS:
            raise ConfigError(f"unknown model {self.name!r}; choose from {', '.join(MODELS)}")
        if not 2 <= self.vocab_size <= 2**31 - 1:
            raise ConfigError(f"vocab_size must be in [2, 2**31-1], got {self.vocab_size}")
        if not 1 <= self.hash_window <= 64:
            raise ConfigError(f"hash_window must be in [1, 64], got {self.hash_window}")


class RunnerConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Everything the runner process needs, sent in the start-up ``Handshake``.

    ``policy``: ``send`` or ``cached`` (see ``ipc_bench.model_runner``). ``codec``:
    ``msgpack`` or ``pickle``. ``warmup_steps``: steps before the heap is frozen.
    ``peer_timeout_s``: how long the runner waits for the scheduler before it gives up
    (the scheduler sends ``KeepAlive`` while idle, so this bounds a hung scheduler).
    ``record_steps``: keep per-step timings for the ``RunnerReport`` and the replies for
    the floor (off for long streamed runs, whose memory must stay flat).
    ``allow_pickle_over_tcp``: the runner refuses to unpickle frames from a ``tcp://``
    endpoint unless this is set (``--allow-pickle-over-tcp``): pickle runs code on load.
    """

    scheduler: SchedulerConfig
    model: ModelConfig
    policy: str
    codec: str
    warmup_steps: int
    peer_timeout_s: float
    s2r_endpoint: str
    r2s_endpoint: str
    record_outputs: bool = True
    record_steps: bool = True
    allow_pickle_over_tcp: bool = False

    def validate(self) -> None:
        self.scheduler.validate()
        self.model.validate()
        if self.policy not in POLICIES:
            raise ConfigError(f"unknown policy {self.policy!r}; choose from {', '.join(POLICIES)}")
        if self.codec not in CODECS:
            raise ConfigError(f"unknown codec {self.codec!r}; choose from {', '.join(CODECS)}")
        if self.warmup_steps < 0:
            raise ConfigError(f"warmup_steps must be >= 0, got {self.warmup_steps}")
        if not self.peer_timeout_s > 0:
            raise ConfigError(f"peer_timeout_s must be > 0, got {self.peer_timeout_s}")
        check_pickle_transport(self.codec, self.s2r_endpoint, self.allow_pickle_over_tcp)


def check_pickle_transport(codec: str, endpoint: str, allow_pickle_over_tcp: bool) -> None:
    """Refuse ``pickle`` on a ``tcp://`` endpoint unless explicitly allowed.

    Unpickling runs code named by the data, and any local user (or, with ``--host``,
    any host) can connect to a TCP port; ``ipc://`` sockets live in a private 0700
    directory. Raises ``ConfigError`` (one line).
    """
    if codec == "pickle" and endpoint.startswith("tcp://") and not allow_pickle_over_tcp:
        raise ConfigError(
            "refusing to decode pickle from a TCP peer (pickle runs code on load and any "
            "local user can connect to a TCP port); use --codecs msgpack, --transport ipc, "
            "or pass --allow-pickle-over-tcp if every host that can reach the port is trusted")


def encode_config(config: msgspec.Struct) -> bytes:
    """Config Struct -> msgpack bytes (for ``Handshake.config`` and result files)."""
    return msgspec.msgpack.encode(config)


def decode_runner_config(data: bytes) -> RunnerConfig:
    """Inverse of ``encode_config`` for a ``RunnerConfig``; raises ``ConfigError``."""
    try:
        config = msgspec.msgpack.decode(data, type=RunnerConfig)
    except msgspec.DecodeError as exc:
        from ipc_bench.codec import one_line

        raise ConfigError(one_line(f"bad runner config in handshake: {exc}")) from None
    config.validate()
    return config
