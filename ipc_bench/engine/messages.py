"""Wire messages between the scheduler and the model runner.

Data only: each class mirrors, field by field and in order, the vLLM V1 dataclass of
the same name at commit 7f280d69c (PR #20291, "Cache sampled token ids in model
runner"; ``vllm/v1/core/sched/output.py`` and ``vllm/v1/outputs.py``).

Left out, because text generation never fills them: multimodal inputs
(``mm_inputs``, ``mm_hashes``, ``mm_positions``), ``pooling_params``,
``lora_request``, ``pooler_output`` and the KV-connector fields beyond their ``None``
defaults; ``num_nans_in_logits`` (vLLM PR #18777). ``SamplingParams`` keeps only the
fields a greedy or seeded sampler reads (15 B for a greedy request, where msgspec writes
a vLLM-shaped one in 83 B: docs/comparisons.md, "Where the harness differs from vLLM").

The Structs use ``array_like=True, omit_defaults=True, gc=False``, the options of
vLLM's msgspec messages (``vllm/v1/engine/__init__.py``): MessagePack then writes
each Struct as an array of all its field values, without field names (with
``array_like`` msgspec writes default values too; ``omit_defaults`` only matters for
the map form).

These Structs are the msgpack codec's messages. The pickle codec carries what vLLM's
multiprocess executor pickles instead: the plain dataclasses of ``ipc_bench.v1rpc``
(vLLM's field names and order, and class paths as long as vLLM's), inside the
``execute_model`` RPC tuple. ``MessageSet`` says which classes a codec carries and how
the engine builds them: ``STRUCTS`` (this module) and ``VLLM_DATACLASSES``; the
scheduler and the runner build the messages of their codec directly, as vLLM builds its
dataclasses, so no conversion happens between build and encode.

The harness's own control messages (handshake, phase changes, reports, errors) are
``ipc_bench.wire.control``'s.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import msgspec

from ipc_bench import v1rpc
from ipc_bench.engine.config import DEFAULT_VLLM_LAYOUT, LAYOUT_1D37EB37, LAYOUT_7F280D69C
from ipc_bench.v1rpc import later_out, samp, sched_out

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
    runner drops from its state. ``scheduled_spec_decode_tokens`` maps a decoding
    request's id to the draft ids scheduled for it this step (speculative decoding:
    ``[num_spec]`` ids, the last ``num_spec`` of its ``num_scheduled_tokens``; only
    requests with drafts appear; ``{}`` without speculative decoding). Fields after
    ``finished_req_ids`` exist for layout fidelity and keep their empty defaults in text
    generation.
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


class LaterCachedRequestData(msgspec.Struct, **_WIRE):
    """``CachedRequestData`` in the 1d37eb37 layout (``--vllm-layout 1d37eb37``;
    ``ipc_bench.v1rpc.later_out``, vLLM's field order and types).

    Parallel lists over ``len(req_ids)`` requests, except ``new_token_ids`` (filled
    under ``send`` only, as ``CachedRequestData``'s) and ``all_token_ids``: the whole
    token history (prompt + outputs) of each request not scheduled in the previous step
    (resumed from preemption, or left out of the last batch), in ``req_ids`` order.
    ``resumed_req_ids``: the requests resumed from preemption (their ``new_block_ids``
    replace the old ones); ``new_block_ids`` entries are ``None`` where a request got no
    new block; ``num_output_tokens``: each request's output tokens so far.
    """

    req_ids: list[str]
    resumed_req_ids: set[str]
    new_token_ids: list[list[int]]
    all_token_ids: dict[str, list[int]]
    new_block_ids: list[Optional[tuple[list[int], ...]]]
    num_computed_tokens: list[int]
    num_output_tokens: list[int]


class LaterSchedulerOutput(msgspec.Struct, **_WIRE):
    """``SchedulerOutput`` in the 1d37eb37 layout (vLLM's field order; no
    ``structured_output_request_ids`` or ``grammar_bitmask``, which moved to the second
    per-step RPC, not modelled). ``preempted_req_ids``: the requests preempted while
    scheduling this step. Fields after it keep their defaults in text generation;
    the connector metadata are ``bytes`` here (never filled)."""

    scheduled_new_reqs: list[NewRequestData]
    scheduled_cached_reqs: LaterCachedRequestData
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
    kv_connector_metadata: Optional[bytes] = None
    ec_connector_metadata: Optional[bytes] = None
    new_block_ids_to_zero: Optional[list[int]] = None


class ModelRunnerOutput(msgspec.Struct, **_WIRE):
    """One runner step (vLLM 7f280d69c ``ModelRunnerOutput``); runner -> scheduler.

    ``req_ids``: the persistent batch's requests in row order; ``req_id_to_index``
    their rows; ``sampled_token_ids``: ``[num_reqs][0 or 1]`` ids sampled this step
    (empty for a request still in chunked prefill, whose sample is discarded); with
    speculative decoding ``[num_reqs][0 .. num_spec + 1]``: the accepted draft ids and
    the target's next token. ``spec_token_ids``: ``None`` without speculative decoding,
    else ``[num_reqs][0 or num_spec_tokens]`` draft ids proposed for the next step
    (vLLM V1: the drafter runs in the runner, the scheduler schedules them next step).
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


# ======================================================================================
# Message sets: the classes a codec carries and how the engine builds them


class MessageSet:
    """The message classes one codec carries, and the three messages the engine builds
    through them (each needs fields the other set lacks).

    ``SchedulerOutput`` and ``CachedRequestData`` take the same keyword arguments in
    both sets (the scheduler builds them by keyword); ``sampling_params(max_tokens)``,
    ``new_request_data(...)`` and ``model_runner_output(...)`` fill the rest as the
    set's source does; ``replace(msg, **changes)`` copies a message with fields changed.
    """

    name: str
    #: the layout of ``SchedulerOutput`` (``config.VLLM_LAYOUTS``)
    layout: str = LAYOUT_7F280D69C
    SamplingParams: type
    NewRequestData: type
    CachedRequestData: type
    SchedulerOutput: type
    ModelRunnerOutput: type

    def sampling_params(self, max_tokens: int):  # pragma: no cover - interface
        raise NotImplementedError

    def new_request_data(self, req_id: str, prompt_token_ids: list[int], sampling_params,
                         block_ids: tuple[list[int], ...]):  # pragma: no cover - interface
        raise NotImplementedError

    def model_runner_output(self, req_ids: list[str], req_id_to_index: dict[str, int],
                            sampled_token_ids: list[list[int]],
                            spec_token_ids: Optional[list[list[int]]] = None
                            ):  # pragma: no cover
        raise NotImplementedError

    def replace(self, msg, **changes):  # pragma: no cover - interface
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<MessageSet {self.name}>"


class _Structs(MessageSet):
    """The msgspec Structs of this module (the msgpack codec's messages)."""

    name = "structs"
    SamplingParams = SamplingParams
    NewRequestData = NewRequestData
    CachedRequestData = CachedRequestData
    SchedulerOutput = SchedulerOutput
    ModelRunnerOutput = ModelRunnerOutput

    def sampling_params(self, max_tokens):
        return SamplingParams(max_tokens=max_tokens)

    def new_request_data(self, req_id, prompt_token_ids, sampling_params, block_ids):
        return NewRequestData(req_id, prompt_token_ids, sampling_params, block_ids, 0)

    def model_runner_output(self, req_ids, req_id_to_index, sampled_token_ids,
                            spec_token_ids=None):
        return ModelRunnerOutput(req_ids, req_id_to_index, sampled_token_ids, spec_token_ids)

    def replace(self, msg, **changes):
        return msgspec.structs.replace(msg, **changes)


class _VllmDataclasses(MessageSet):
    """The dataclasses of ``ipc_bench.v1rpc`` (the pickle codec's messages), filled as
    vLLM 7f280d69c fills them for text generation: ``NewRequestData.from_request``
    (three empty multimodal lists, no pooling params, no LoRA), the GPU runner's
    ``ModelRunnerOutput(..., spec_token_ids=None, logprobs=None,
    prompt_logprobs_dict={}, pooler_output=[], finished_sending=None,
    finished_recving=None, num_nans_in_logits={})`` and a greedy ``SamplingParams``
    (``ipc_bench.v1rpc.samp.SamplingParams.greedy``)."""

    name = "vllm-dataclasses"
    SamplingParams = samp.SamplingParams
    NewRequestData = sched_out.NewRequestData
    CachedRequestData = sched_out.CachedRequestData
    SchedulerOutput = sched_out.SchedulerOutput
    ModelRunnerOutput = v1rpc.ModelRunnerOutput

    def sampling_params(self, max_tokens):
        return samp.SamplingParams.greedy(max_tokens)

    def new_request_data(self, req_id, prompt_token_ids, sampling_params, block_ids):
        return sched_out.NewRequestData(
            req_id=req_id, prompt_token_ids=prompt_token_ids, mm_inputs=[], mm_hashes=[],
            mm_positions=[], sampling_params=sampling_params, pooling_params=None,
            block_ids=block_ids, num_computed_tokens=0, lora_request=None)

    def model_runner_output(self, req_ids, req_id_to_index, sampled_token_ids,
                            spec_token_ids=None):
        return v1rpc.ModelRunnerOutput(
            req_ids=req_ids, req_id_to_index=req_id_to_index,
            sampled_token_ids=sampled_token_ids, spec_token_ids=spec_token_ids, logprobs=None,
            prompt_logprobs_dict={}, pooler_output=[], finished_sending=None,
            finished_recving=None, num_nans_in_logits={})

    def replace(self, msg, **changes):
        return dataclasses.replace(msg, **changes)


class _LaterStructs(_Structs):
    """The Structs of the 1d37eb37 layout: ``LaterCachedRequestData`` and
    ``LaterSchedulerOutput``, the rest as ``STRUCTS``."""

    name = "structs-1d37eb37"
    layout = LAYOUT_1D37EB37
    CachedRequestData = LaterCachedRequestData
    SchedulerOutput = LaterSchedulerOutput


class _LaterDataclasses(_VllmDataclasses):
    """The dataclasses of ``ipc_bench.v1rpc.later_out`` (vLLM 1d37eb37), filled as
    ``NewRequestData.from_request`` fills them for text on the V1 model runner
    (``mm_features=[]``, no pooling params, LoRA or prompt embeddings,
    ``prefill_token_ids=None``); ``ModelRunnerOutput`` stays 7f280d69c's (the reply is
    not part of this layout)."""

    name = "vllm-dataclasses-1d37eb37"
    layout = LAYOUT_1D37EB37
    NewRequestData = later_out.NewRequestData
    CachedRequestData = later_out.CachedRequestData
    SchedulerOutput = later_out.SchedulerOutput

    def new_request_data(self, req_id, prompt_token_ids, sampling_params, block_ids):
        return later_out.NewRequestData(
            req_id=req_id, prompt_token_ids=prompt_token_ids, mm_features=[],
            sampling_params=sampling_params, pooling_params=None, block_ids=block_ids,
            num_computed_tokens=0, lora_request=None, prompt_embeds=None,
            prefill_token_ids=None)


#: The msgpack codec's messages (and the single-process baseline's).
STRUCTS: MessageSet = _Structs()
#: The pickle codec's messages: what vLLM's multiprocess executor pickles.
VLLM_DATACLASSES: MessageSet = _VllmDataclasses()
#: The same two in the 1d37eb37 layout (``--vllm-layout 1d37eb37``).
LATER_STRUCTS: MessageSet = _LaterStructs()
LATER_DATACLASSES: MessageSet = _LaterDataclasses()
#: Per layout, the message set that stands in for each of the 7f280d69c ones.
LAYOUT_SETS: dict[str, dict[MessageSet, MessageSet]] = {
    LAYOUT_7F280D69C: {STRUCTS: STRUCTS, VLLM_DATACLASSES: VLLM_DATACLASSES},
    LAYOUT_1D37EB37: {STRUCTS: LATER_STRUCTS, VLLM_DATACLASSES: LATER_DATACLASSES},
}
#: Each message set's 7f280d69c counterpart (``LAYOUT_SETS``' keys).
_BASE_SETS: dict[MessageSet, MessageSet] = {
    STRUCTS: STRUCTS, LATER_STRUCTS: STRUCTS,
    VLLM_DATACLASSES: VLLM_DATACLASSES, LATER_DATACLASSES: VLLM_DATACLASSES}


def in_layout(messages: MessageSet, layout: str = DEFAULT_VLLM_LAYOUT) -> MessageSet:
    """``messages`` (one of the four sets) in ``layout`` (``config.VLLM_LAYOUTS``):
    the set of the same codec whose ``SchedulerOutput`` has that layout. ``KeyError``
    for an unknown layout or set."""
    return LAYOUT_SETS[layout][_BASE_SETS[messages]]
