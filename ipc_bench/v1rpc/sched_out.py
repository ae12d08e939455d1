"""vLLM's scheduler -> worker dataclasses (mirrors ``vllm/v1/core/sched/output.py``, 7f280d69c).

Plain ``@dataclass``es with vLLM's field names, order and defaults, in a module whose
dotted name is as long as ``vllm.v1.core.sched.output`` (25 characters). Each pickles
as ``NEWOBJ`` of its class and ``BUILD`` of its ``__dict__``: every field name is
written once per pickle (a memo reference after that) followed by its value.
Fields whose types are vLLM classes are ``Any`` here; text generation fills them as
vLLM's scheduler does: empty multimodal lists, ``None`` pooling params, LoRA request,
grammar bitmask and KV-connector metadata.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ipc_bench.v1rpc.samp import SamplingParams


@dataclass
class NewRequestData:
    """A request scheduled for the first time (vLLM 7f280d69c ``NewRequestData``).

    ``prompt_token_ids``: ``[num_prompt_tokens]``; ``mm_inputs``, ``mm_hashes``,
    ``mm_positions``: the request's multimodal lists (three empty lists for text);
    ``block_ids``: one list of KV block ids per KV-cache group.
    """

    req_id: str
    prompt_token_ids: list[int]
    mm_inputs: list[Any]
    mm_hashes: list[str]
    mm_positions: list[Any]
    sampling_params: Optional[SamplingParams]
    pooling_params: Optional[Any]
    block_ids: tuple[list[int], ...]
    num_computed_tokens: int
    lora_request: Optional[Any]


@dataclass
class CachedRequestData:
    """Per-step diff of the requests already on the workers (vLLM 7f280d69c).

    Parallel lists over ``len(req_ids)`` requests; ``new_token_ids`` is empty without
    pipeline parallelism after PR #20291 (the ``cached`` policy) and holds one list per
    request before it (``send``). ``new_block_ids`` entries are ``([ids...],)`` tuples.
    """

    req_ids: list[str]
    resumed_from_preemption: list[bool]
    new_token_ids: list[list[int]]
    new_block_ids: list[tuple[list[int], ...]]
    num_computed_tokens: list[int]


@dataclass
class SchedulerOutput:
    """One scheduler step (vLLM 7f280d69c ``SchedulerOutput``); scheduler -> workers.

    ``finished_req_ids`` is a ``set``; ``grammar_bitmask`` has no default in vLLM
    (the scheduler passes ``None`` without structured output).
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
    grammar_bitmask: Optional[Any]
    kv_connector_metadata: Optional[Any] = None
