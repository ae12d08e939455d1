"""The start-up handshake's payload: ``RunnerConfig``, and the pickle-over-TCP rule.

The scheduler sends ``control.Handshake(PROTOCOL_VERSION, encode_config(config))``;
the runner decodes it with ``decode_runner_config`` (which validates it) and answers
``Ready`` or an ``ErrorReport``.
"""

from __future__ import annotations

from typing import Optional

import msgspec

from ipc_bench.engine.config import (POLICIES, ConfigError, ModelConfig,
                                     SchedulerConfig, SteadyShape)
from ipc_bench.errors import one_line
from ipc_bench.wire.codecs import CODECS, PICKLED_CODECS
from ipc_bench.wire.shm_ring import RingHandle


class RunnerConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Everything the runner process needs, sent in the start-up ``Handshake``.

    ``policy``: ``send`` or ``cached`` (see ``ipc_bench.engine.model_runner``). ``codec``:
    ``msgpack`` or ``pickle``. ``warmup_steps``: steps before the heap is frozen.
    ``peer_timeout_s``: how long the runner waits for the scheduler before it gives up
    (the scheduler sends ``KeepAlive`` while idle, so this bounds a hung scheduler).
    ``startup_timeout_s``: how long the runner waits for the first step's
    ``SchedulerOutput`` (``first_step_wait_s``: the larger of the two; the scheduler may
    take long to admit, schedule and encode a large first batch).
    ``record_steps``: keep per-step timings for the ``RunnerReport`` and the replies for
    the floor (off for long streamed runs, whose memory must stay flat).
    ``check_inputs``: keep each step's input digest for the input oracle's checks (off
    when the case runs with ``input_oracle_interval`` 0: nothing is digested).
    ``allow_pickle_over_tcp``: the runner refuses to unpickle frames from a ``tcp://``
    endpoint unless this is set (``--allow-pickle-over-tcp``): pickle runs code on load.
    ``s2r_ring``: with ``--transport shm``, the shared-memory ring the runner reads its
    frames from (reader 0) instead of ``s2r_endpoint``; ``None`` otherwise.
    ``tp_size``: with ``--tp N``, the number of ranks (``wire.tp``: the runner is rank
    ``tp_rank``, reads the broadcast as ring reader ``tp_rank`` or through a SUB
    socket, and replies only as rank 0); ``None`` for the single runner of the other
    scenarios. ``pp_size``: with ``--pp N``, the number of pipeline stages (the runner is
    stage ``pp_rank``: it reads the broadcast through a SUB socket as a ``--tp`` rank
    does, passes hidden states over ``torch.distributed`` rendezvousing at the file
    ``pp_store``, and replies only as the last stage; ``pp_direct``: the last stage
    sends its sampled ids to the other stages, ``engine.pipeline``).
    ``device_inputs``: the torch model's runner under async scheduling without draft
    tokens takes the device-input path (``ModelRunner(device_inputs=True)``, ``RunnerLoop.run_pipelined``):
    step n + 1's placeholder input ids come from step n's sampled ids on the device.
    ``async_scheduling``: the scheduler keeps two steps in flight; with draft tokens the
    runner keeps its drafts and corrects the optimistic ``num_computed_tokens``
    (``ModelRunner(async_scheduling=True)``, vLLM #24799).
    ``blocks_needed``, ``needed_by``, ``need_words``: what the scheduler knows of the
    run's workload for a refusal of a model whose weights + KV cache do not fit the
    runner's device (``config.check_model_memory``'s arguments of those names: the
    least ``--num-blocks`` the run's cases need, the case that holds it, what it is),
    and ``running_sized``: the case's ``--num-running`` sizes its KV cache (the advice
    names it); ``steady_shape``: the steady case that needs the most blocks, as the
    search for the most ``--num-running`` that runs with the blocks that fit reads it
    (``engine.config.SteadyShape``: the runner's advice names the figure the scheduler's
    check names at the same blocks; ``None`` where that case is not steady); the runner
    checks with them (``harness.runner_loop.memory_refusal``).
    """

    scheduler: SchedulerConfig
    model: ModelConfig
    policy: str
    codec: str
    warmup_steps: int
    peer_timeout_s: float
    s2r_endpoint: str
    r2s_endpoint: str
    startup_timeout_s: float = 120.0
    record_steps: bool = True
    bare_loop: bool = False  # instrumentation "totals": no per-step timing at all
    allow_pickle_over_tcp: bool = False
    check_inputs: bool = True
    s2r_ring: Optional[RingHandle] = None
    tp_size: Optional[int] = None
    tp_rank: int = 0
    pp_size: Optional[int] = None
    pp_rank: int = 0
    pp_direct: bool = False
    pp_store: Optional[str] = None
    device_inputs: bool = False
    async_scheduling: bool = False
    blocks_needed: Optional[int] = None
    needed_by: Optional[str] = None
    need_words: Optional[str] = None
    running_sized: bool = False
    steady_shape: Optional[SteadyShape] = None

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
        if not self.startup_timeout_s > 0:
            raise ConfigError(f"startup_timeout_s must be > 0, got {self.startup_timeout_s}")
        check_pickle_transport(self.codec, self.s2r_endpoint, self.allow_pickle_over_tcp)
        if self.tp_size is not None and not 0 <= self.tp_rank < self.tp_size:
            raise ConfigError(f"tp_rank {self.tp_rank} is not a rank of tp_size {self.tp_size}")
        if self.pp_size is not None and not 0 <= self.pp_rank < self.pp_size:
            raise ConfigError(f"pp_rank {self.pp_rank} is not a stage of pp_size {self.pp_size}")


def first_step_wait_s(config: RunnerConfig) -> float:
    """Seconds a runner waits for the first step's ``SchedulerOutput``: the larger of
    ``startup_timeout_s`` and ``peer_timeout_s``, as the scheduler's wait for its reply
    (``harness.scheduler_loop.ChannelExchange.first_timeout_s``)."""
    return max(config.startup_timeout_s, config.peer_timeout_s)


def check_pickle_transport(codec: str, endpoint: str, allow_pickle_over_tcp: bool) -> None:
    """Refuse ``pickle`` (and ``packed``, a pickle too: ``PICKLED_CODECS``) on a
    ``tcp://`` endpoint unless explicitly allowed.

    Unpickling runs code named by the data, and any local user (or, with ``--host``,
    any host) can connect to a TCP port; ``ipc://`` sockets live in a private 0700
    directory. Raises ``ConfigError`` (one line).
    """
    if codec in PICKLED_CODECS and endpoint.startswith("tcp://") and not allow_pickle_over_tcp:
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
        raise ConfigError(one_line(f"bad runner config in handshake: {exc}")) from None
    config.validate()
    return config
