"""vLLM's scheduler -> worker dataclasses at commit 1d37eb37 (``--vllm-layout 1d37eb37``).

Mirrors ``vllm/v1/core/sched/output.py`` as read at commit 1d37eb37, whose
``scheduler.py`` was read at the same commit: a fork's commit (comments in another
language added), not one of vLLM's main branch, whose fields for this hop are
consistent with main's between PR #35219 (``new_block_ids_to_zero``, present) and
PR #32374 (``num_spec_tokens_to_schedule``, absent), as inferred from those fields;
``output.py`` in English at a9b16940 and 00e8f1fd has the same ``NewRequestData``
and ``CachedRequestData`` field for field (docs/comparisons.md, "Since 7f280d69c").
The classes live in a module whose dotted name is as long as
``vllm.v1.core.sched.output`` (25 characters), so that a pickle of these classes is
byte for byte as long as vLLM's for the same values. Plain ``@dataclass``es with
vLLM's field names, order and defaults (``sched_out`` holds the 7f280d69c ones);
fields whose types are vLLM classes or tensors are ``Any`` here, filled as vLLM's
``Scheduler`` (V1 model runner, no multimodal inputs, LoRA, pooling, prompt
embeddings, structured output or connectors) fills them.

What changed since 7f280d69c, on this hop:

- ``NewRequestData``: ``mm_features`` (one list) in place of ``mm_inputs``,
  ``mm_hashes`` and ``mm_positions``; ``prompt_embeds`` and ``prefill_token_ids``
  (V2 model runner only) after ``lora_request``, both ``None`` here.
- ``CachedRequestData``: ``resumed_req_ids`` (a set) in place of
  ``resumed_from_preemption``; ``all_token_ids``, a copy of the whole token history
  of every request not scheduled in the previous step (``Scheduler.
  _make_cached_request_data``: ``if not scheduled_in_prev_step: all_token_ids[req_id] =
  req.all_token_ids.copy()``); ``new_block_ids`` entries ``None`` where a request got
  no new block (``get_block_ids(allow_none=True)``); ``num_output_tokens``, one int per
  request (``req.num_output_tokens + req.num_output_placeholders``).
  ``new_token_ids`` is filled only ``if self.use_pp and not
  self.scheduler_config.async_scheduling``.
- ``SchedulerOutput``: ``structured_output_request_ids`` and ``grammar_bitmask`` left
  (a ``GrammarOutput`` of the second per-step RPC, ``sample_tokens``, not modelled);
  ``free_encoder_mm_hashes`` in place of ``free_encoder_input_ids``; new defaulted
  fields after it, of which the scheduler sets ``preempted_req_ids`` (the requests
  preempted this step, a set) and ``new_block_ids_to_zero`` (``None`` unless
  ``kv_cache_config.needs_kv_cache_zeroing``; ``None`` here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ipc_bench.v1rpc.samp import SamplingParams


@dataclass
class NewRequestData:
    """A request scheduled for the first time (vLLM 1d37eb37 ``NewRequestData``).

    ``mm_features``: the request's multimodal features (an empty list for text);
    ``block_ids``: one list of KV block ids per KV-cache group.
    """

    req_id: str
    prompt_token_ids: Optional[list[int]]
    mm_features: list[Any]
    sampling_params: Optional[SamplingParams]
    pooling_params: Optional[Any]
    block_ids: tuple[list[int], ...]
    num_computed_tokens: int
    lora_request: Optional[Any]
    prompt_embeds: Optional[Any] = None
    prefill_token_ids: Optional[list[int]] = None


@dataclass
class CachedRequestData:
    """Per-step diff of the requests already on the workers (vLLM 1d37eb37).

    Parallel lists over ``len(req_ids)`` requests, except ``new_token_ids`` (empty
    unless filled: the ``send`` policy here) and ``all_token_ids`` (only requests not
    scheduled in the previous step); ``new_block_ids`` entries are ``([ids...],)`` or
    ``None``.
    """

    req_ids: list[str]
    resumed_req_ids: set[str]
    new_token_ids: list[list[int]]
    all_token_ids: dict[str, list[int]]
    new_block_ids: list[Optional[tuple[list[int], ...]]]
    num_computed_tokens: list[int]
    num_output_tokens: list[int]


@dataclass
class SchedulerOutput:
    """One scheduler step (vLLM 1d37eb37 ``SchedulerOutput``); scheduler -> workers."""

    scheduled_new_reqs: list[NewRequestData]
    scheduled_cached_reqs: CachedRequestData
    num_scheduled_tokens: dict[str, int]
    total_num_scheduled_tokens: int
    scheduled_spec_decode_tokens: dict[str, list[int]]
    scheduled_encoder_inputs: dict[str, list[int]]
    num_common_prefix_blocks: list[int]
    finished_req_ids: set[str]
    free_encoder_mm_hashes: list[str]
    preempted_req_ids: Optional[set[str]] = None
    has_structured_output_requests: bool = False
    pending_structured_output_tokens: bool = False
    num_invalid_spec_tokens: Optional[dict[str, int]] = None
    kv_connector_metadata: Optional[Any] = None
    ec_connector_metadata: Optional[Any] = None
    new_block_ids_to_zero: Optional[list[int]] = None
