"""Wire messages between the scheduler and the model runner.

Data only: each class mirrors, field by field and in order, the vLLM V1 dataclass of
the same name at commit 7f280d69c (PR #20291, "Cache sampled token ids in model
runner"; ``vllm/v1/core/sched/output.py`` and ``vllm/v1/outputs.py``).

Left out, because text generation never fills them: multimodal inputs
(``mm_inputs``, ``mm_hashes``, ``mm_positions``), ``pooling_params``,
``lora_request``, ``pooler_output`` and the KV-connector fields beyond their ``None``
defaults. ``SamplingParams`` keeps only the fields a greedy or seeded sampler reads.

The Structs use ``array_like=True, omit_defaults=True, gc=False``, the options of
vLLM's msgspec messages (``vllm/v1/engine/__init__.py``): MessagePack then writes
each Struct as an array of all its field values, without field names (with
``array_like`` msgspec writes default values too; ``omit_defaults`` only matters for
the map form). The
pickle codec pickles the same objects (a Struct pickles as its class and a tuple of
its field values; vLLM's dataclasses pickle as their class and a field-name dict, a
few dozen bytes more per object, the same per-request growth).

Control messages (handshake, phase changes, reports, errors) travel on their own
socket as a tagged union, so the measured data sockets carry nothing but
``SchedulerOutput`` and ``ModelRunnerOutput`` frames.
"""

from __future__ import annotations

from typing import Any, Optional, Union

import msgspec

#: Bumped whenever a field of a wire or control message changes.
#: 2: ``KeepAlive`` control message.
PROTOCOL_VERSION = 3

_WIRE = dict(array_like=True, omit_defaults=True, gc=False)


class SamplingParams(msgspec.Struct, **_WIRE):
    """Per-request sampling settings (subset of vLLM ``SamplingParams``).

    ``temperature == 0.0`` is greedy. ``max_tokens`` is the output length limit in
    tokens; ``seed`` seeds a per-request generator when sampling is random.
    """

    max_tokens: int
    temperature: float = 0.0
    seed: Optional[int] = None
    ignore_eos: bool = True


class NewRequestData(msgspec.Struct, **_WIRE):
    """A request scheduled for the first time (vLLM 7f280d69c ``NewRequestData``).

    ``prompt_token_ids``: ``[num_prompt_tokens]`` token ids. ``block_ids``: one list of
    KV-cache block ids per KV-cache group (one group here). ``num_computed_tokens``:
    tokens already computed before this step (0 unless prefix-cached).
    """

    req_id: str
    prompt_token_ids: list[int]
    sampling_params: SamplingParams
    block_ids: tuple[list[int], ...]
    num_computed_tokens: int


class CachedRequestData(msgspec.Struct, **_WIRE):
    """Per-step diff of the requests already on the runner (vLLM 7f280d69c).

    Parallel lists over ``len(req_ids)`` requests, except ``new_token_ids``: under
    the ``cached`` policy it is an empty list (the runner writes its own sampled ids),
    as vLLM sends it without pipeline parallelism after #20291. Under ``send`` it holds,
    per request, ``all_token_ids[num_computed_tokens : num_computed_tokens +
    num_scheduled_tokens]`` (the last sampled token while decoding, the next prompt
    chunk during chunked prefill, the first chunk of prompt + outputs for a request
    resumed after preemption). A resumed request has ``resumed_from_preemption`` set,
    ``num_computed_tokens`` 0 and all of its block ids in ``new_block_ids`` (they
    replace the old ones); resumed requests follow the running ones.
    """

    req_ids: list[str]
    resumed_from_preemption: list[bool]
    new_token_ids: list[list[int]]
    new_block_ids: list[tuple[list[int], ...]]
    num_computed_tokens: list[int]


class SchedulerOutput(msgspec.Struct, **_WIRE):
    """One scheduler step (vLLM 7f280d69c ``SchedulerOutput``); scheduler -> runner.

    ``num_scheduled_tokens`` maps ``req_id`` to the tokens scheduled this step;
    ``finished_req_ids`` are requests finished since the previous step, which the
    runner drops from its state. Fields after ``finished_req_ids`` exist for layout
    fidelity and keep their empty defaults in text generation.
    """

    scheduled_new_reqs: list[NewRequestData]
    scheduled_cached_reqs: CachedRequestData
    num_scheduled_tokens: dict[str, int]
    total_num_scheduled_tokens: int
    scheduled_spec_decode_tokens: dict[str, list[int]]
    scheduled_encoder_inputs: dict[str, list[int]]
    num_common_prefix_blocks: list[int]
    finished_req_ids: set[str]
    free_encoder_input_ids: list[tuple[str, int]]
    structured_output_request_ids: dict[str, int]
    grammar_bitmask: Optional[bytes] = None
    kv_connector_metadata: Optional[bytes] = None


class ModelRunnerOutput(msgspec.Struct, **_WIRE):
    """One runner step (vLLM 7f280d69c ``ModelRunnerOutput``); runner -> scheduler.

    ``req_ids``: the persistent batch's requests in row order; ``req_id_to_index``
    their rows; ``sampled_token_ids``: ``[num_reqs][0 or 1]`` ids sampled this step
    (empty for a request still in chunked prefill, whose sample is discarded).
    """

    req_ids: list[str]
    req_id_to_index: dict[str, int]
    sampled_token_ids: list[list[int]]
    spec_token_ids: Optional[list[list[int]]] = None
    logprobs: Optional[list[list[float]]] = None
    prompt_logprobs_dict: dict[str, list[float]] = {}
    pooler_output: list[Any] = []
    finished_sending: Optional[set[str]] = None
    finished_recving: Optional[set[str]] = None


# --------------------------------------------------------------------------------------
# Control messages: their own socket, tagged union, never counted as measured traffic.

_CTL = dict(tag_field="kind", forbid_unknown_fields=True)


class Handshake(msgspec.Struct, tag="handshake", **_CTL):
    """Scheduler -> runner, first message: protocol version and the runner's config.

    ``config`` is an encoded ``ipc_bench.engine.config.RunnerConfig`` (msgpack bytes) so
    that this module stays free of config types.
    """

    protocol_version: int
    config: bytes


class Ready(msgspec.Struct, tag="ready", **_CTL):
    """Runner -> scheduler: handshake accepted; ``device`` is where the model runs."""

    protocol_version: int
    pid: int
    device: str


class BeginFloor(msgspec.Struct, tag="begin_floor", **_CTL):
    """Scheduler -> runner: replay the recorded outputs of ``steps`` (the floor case)."""

    steps: list[int]


class FloorReady(msgspec.Struct, tag="floor_ready", **_CTL):
    """Runner -> scheduler: the floor's replies are decoded and ready; the scheduler
    starts the floor's clock only after this, so no floor step pays for it."""


class Stop(msgspec.Struct, tag="stop", **_CTL):
    """Scheduler -> runner: send your report and exit."""


class KeepAlive(msgspec.Struct, tag="keepalive", **_CTL):
    """Scheduler -> runner while no step is due (timed replay between arrivals): the
    scheduler is alive, so the runner keeps waiting instead of timing out."""


class RunnerReport(msgspec.Struct, tag="runner_report", **_CTL):
    """Runner -> scheduler at the end: per-step runner timings, column-major.

    ``columns`` maps a column name (``ipc_bench.analysis.summary.RUNNER_COLUMNS``) to one
    int per step the runner executed, in step order.
    """

    columns: dict[str, list[int]]
    floor_step_ns: list[int] = []


class ErrorReport(msgspec.Struct, tag="error", **_CTL):
    """Either side: a fatal error, one line, and the step where it happened."""

    message: str
    step: int = -1


ControlMessage = Union[Handshake, Ready, BeginFloor, FloorReady, Stop, KeepAlive, RunnerReport,
                       ErrorReport]
