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

The harness's own control messages (handshake, phase changes, reports, errors) are
``ipc_bench.wire.control``'s.
"""

from __future__ import annotations

from typing import Any, Optional

import msgspec

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
