"""The engine core -> frontend messages (``--frontend``): ``EngineCoreOutputs``.

vLLM V1's engine core (the scheduler's process) sends, every step, the new token ids of
each request that sampled one to the frontend process (the API server's
``AsyncLLM`` / ``OutputProcessor``), which detokenizes them. That hop exists whatever
the policy of PR #20291: the ids the runner caches under ``cached`` still travel to the
frontend. These Structs mirror the layout of vLLM's ``vllm/v1/engine/__init__.py`` of
mid-2025, the months of 7f280d69c (PR #20291, 2025-07-01): ``EngineCoreOutputs`` with
``engine_index``, ``outputs``, ``scheduler_stats``, ``timestamp``, ``utility_output``,
``finished_requests``, ``wave_complete``, ``start_wave``; ``EngineCoreOutput`` with
``request_id``, ``new_token_ids``, ``new_logprobs``, ``new_prompt_logprobs_tensors``,
``pooling_output``, ``finish_reason`` (an ``IntEnum``: stop 0, length 1, abort 2),
``stop_reason``, ``events``, ``kv_transfer_params``, ``num_cached_tokens``. The field
list was read from a stored copy of that file whose ``EngineCoreOutputs`` carries the
data-parallel wave fields (``wave_complete``, ``start_wave``), i.e. the mid-2025 layout;
the file at 7f280d69c itself was not available to check line by line, and fields of
types the harness never fills (logprobs, tensors, events) are typed ``Any`` here.

Both Structs are declared as vLLM declares them (``array_like=True,
omit_defaults=True, gc=False``): encoded as MessagePack arrays of every field in
order. ``omit_defaults`` omits nothing from an ``array_like`` Struct (msgspec issue
#720; checked with msgspec 0.23 here), so each ``EngineCoreOutput`` carries its 8
unused fields (7 ``nil`` and a 0: 9 bytes with the array header) and each
``EngineCoreOutputs`` its 4 unused trailing ``nil``, as in vLLM. ``scheduler_stats`` is vLLM's ``SchedulerStats`` dataclass (encoded by
msgspec as a map with its field names, as in vLLM), attached to each step's message
when stats are logged (the OpenAI server's default). Its fields here are
``num_running_reqs``, ``num_waiting_reqs``, ``gpu_cache_usage`` (read in a stored
early-2025 copy of ``vllm/v1/metrics/stats.py``), ``prefix_cache_stats`` and
``spec_decoding_stats`` (added to vLLM during 2025; not checked at 7f280d69c, where
the set may differ by a field or a name, e.g. the later ``kv_cache_usage``), so its
135 bytes are vLLM's size of that time to within a few tens of bytes, not exactly;
no prefix cache is modelled, so its counters stay 0.
``timestamp`` is ``time.monotonic()`` when the message is built, as vLLM's
``__post_init__`` sets it.

``build_engine_core_outputs`` builds a step's message from what the scheduler applied
(``Scheduler.update_from_output``): one ``EngineCoreOutput`` per scheduled request that
sampled a token (partial prefills sample none and get none, as in vLLM, which appends an
output only ``if new_token_ids``), ``finish_reason`` length for the requests that
finished. ``request_streams`` digests each request's output stream, as both the
frontend and the scheduler compute it for the frontend oracle.
"""

from __future__ import annotations

import enum
import hashlib
import time
from dataclasses import dataclass, field
from typing import Any, Optional, Union

import msgspec
import numpy as np


class FinishReason(enum.IntEnum):
    """vLLM's ``FinishReason`` (sent as its integer)."""

    STOP = 0
    LENGTH = 1
    ABORT = 2


@dataclass
class PrefixCacheStats:
    """vLLM's ``PrefixCacheStats`` (``vllm/v1/metrics/stats.py``)."""

    reset: bool = False
    requests: int = 0
    queries: int = 0
    hits: int = 0


@dataclass
class SchedulerStats:
    """vLLM's ``SchedulerStats`` (``vllm/v1/metrics/stats.py``, mid-2025): a dataclass,
    so msgspec writes it as a map with its field names."""

    num_running_reqs: int = 0
    num_waiting_reqs: int = 0
    gpu_cache_usage: float = 0.0
    prefix_cache_stats: PrefixCacheStats = field(default_factory=PrefixCacheStats)
    spec_decoding_stats: Optional[Any] = None


class EngineCoreOutput(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
    """One request's output of one step (vLLM ``EngineCoreOutput``)."""

    request_id: str
    new_token_ids: list[int]
    new_logprobs: Optional[Any] = None
    new_prompt_logprobs_tensors: Optional[Any] = None
    pooling_output: Optional[Any] = None
    finish_reason: Optional[FinishReason] = None
    stop_reason: Union[int, str, None] = None
    events: Optional[list[Any]] = None
    kv_transfer_params: Optional[dict[str, Any]] = None
    num_cached_tokens: int = 0


class EngineCoreOutputs(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
    """One step's message to the frontend (vLLM ``EngineCoreOutputs``)."""

    engine_index: int = 0
    outputs: list[EngineCoreOutput] = []
    scheduler_stats: Optional[SchedulerStats] = None
    timestamp: float = 0.0
    utility_output: Optional[Any] = None
    finished_requests: Optional[set[str]] = None
    wave_complete: Optional[int] = None
    start_wave: Optional[int] = None

    def __post_init__(self):
        if self.timestamp == 0.0:
            self.timestamp = time.monotonic()


def build_engine_core_outputs(sched, plan, output, finished: list,
                              stats: bool = True) -> Optional[EngineCoreOutputs]:
    """The step's ``EngineCoreOutputs`` (``None`` when no request sampled a token:
    vLLM sends nothing then). ``sched``: the ``Scheduler`` after
    ``update_from_output(plan, output)`` returned ``finished``; ``stats``: attach its
    ``SchedulerStats``. Each output carries the ids the scheduler kept: with drafts, a
    request that finished keeps its sampled ids up to the one that completed it
    (``Request.num_ids_kept_at_stop``), as vLLM's output processor sends the new ids
    cut at the stop."""
    index = output.req_id_to_index
    sampled = output.sampled_token_ids
    done = {r.req_id for r in finished} if finished else ()
    outputs = []
    for req in plan.scheduled_reqs:
        ids = sampled[index[req.req_id]]
        if ids:
            if req.req_id in done:
                if len(ids) > 1:  # drafts accepted past the stop are dropped
                    ids = ids[:req.num_ids_kept_at_stop]
                outputs.append(EngineCoreOutput(req.req_id, ids,
                                                finish_reason=FinishReason.LENGTH))
            else:
                outputs.append(EngineCoreOutput(req.req_id, ids))
    if not outputs:
        return None
    if not stats:
        return EngineCoreOutputs(outputs=outputs)
    kv = sched.kv_cache
    return EngineCoreOutputs(outputs=outputs, scheduler_stats=SchedulerStats(
        num_running_reqs=len(sched.running), num_waiting_reqs=len(sched.waiting),
        gpu_cache_usage=1.0 - kv.num_free_blocks / kv.num_blocks))


def stream_digest(token_ids: list[int]) -> str:
    """sha256 (first 16 hex digits) of one request's output ids (int64 LE)."""
    return hashlib.sha256(np.asarray(token_ids, dtype="<i8").tobytes()).hexdigest()[:16]


def request_streams(requests) -> dict[str, tuple[int, str]]:
    """``request_id -> (number of output ids, stream_digest)`` of the scheduler's
    requests that produced at least one output id (what the frontend must have
    received)."""
    return {r.req_id: (len(out), stream_digest(out))
            for r in requests if (out := r.output_token_ids)}


def streams_digest(streams: dict[str, tuple[int, str]]) -> str:
    """One sha256 over ``request_streams``' entries in request-id order: the case's
    token digest as the frontend saw it (equal to the scheduler's when the frontend
    oracle passed)."""
    h = hashlib.sha256()
    for req_id in sorted(streams):
        n, digest = streams[req_id]
        h.update(f"{req_id}\0{n}\0{digest}\n".encode())
    return h.hexdigest()
