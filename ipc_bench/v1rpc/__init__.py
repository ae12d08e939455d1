"""vLLM's execute_model RPC messages as its multiprocess executor pickles them.

vLLM 7f280d69c (PR #20291) ships each step to its workers as a pickle, at
``pickle.HIGHEST_PROTOCOL``, of the RPC tuple ``("execute_model", (scheduler_output,),
{}, output_rank)`` built by ``MultiprocExecutor.collective_rpc``
(``vllm/v1/executor/multiproc_executor.py``) and written by ``MessageQueue.enqueue``
(``vllm/distributed/device_communicators/shm_broadcast.py``); the worker answers with
``(WorkerProc.ResponseStatus.SUCCESS, model_runner_output)``. The objects inside are
plain ``@dataclass``es, which pickle as their class (module and qualified name
strings) and a dict of field names to values, and one msgspec Struct
(``SamplingParams``), which pickles as its class and a tuple of all its field values.

This package holds classes of the same names, with the same fields in the same order,
in modules whose dotted names are exactly as long as vLLM's, so that a pickle of them
is byte for byte as long as vLLM's for the same values (class paths are written out
once per pickle, then referenced):

=======================================  ========================================  ===
vLLM module                               module here                               len
=======================================  ========================================  ===
``vllm.v1.outputs``                       ``ipc_bench.v1rpc`` (this package)         15
``vllm.sampling_params``                  ``ipc_bench.v1rpc.samp``                   20
``vllm.v1.core.sched.output``             ``ipc_bench.v1rpc.sched_out``              25
``vllm.v1.executor.multiproc_executor``   ``ipc_bench.v1rpc.multiproc_executors``    35
=======================================  ========================================  ===

No ``vllm`` module is imported or registered, so a real vLLM installed beside the
harness is untouched. Data only: these modules import nothing from ``ipc_bench``
(``tests/test_layout.py`` places them below every layer, as ``ipc_bench.errors``).
The pickle codec (``ipc_bench.wire.codecs``) carries these classes; the msgpack codec
carries the msgspec Structs of ``ipc_bench.engine.messages``.

This module itself mirrors ``vllm/v1/outputs.py``: ``ModelRunnerOutput``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional


@dataclass
class ModelRunnerOutput:
    """One runner step, runner -> scheduler (vLLM 7f280d69c ``vllm.v1.outputs``).

    ``req_ids``: the persistent batch's ``[num_reqs]`` requests in row order;
    ``req_id_to_index``: their rows; ``sampled_token_ids``: ``[num_reqs][0 or 1]`` ids
    sampled this step. The GPU runner of 7f280d69c fills the rest, without speculative
    decoding, logprobs, pooling or a KV connector, as ``spec_token_ids=None``,
    ``logprobs=None``, ``prompt_logprobs_dict={}``, ``pooler_output=[]``,
    ``finished_sending=finished_recving=None`` and ``num_nans_in_logits={}``
    (``num_nans_in_logits`` came with vLLM PR #18777, June 2025; the msgpack Struct of
    ``ipc_bench.engine.messages`` leaves it out).
    """

    req_ids: list[str]
    req_id_to_index: dict[str, int]
    sampled_token_ids: list[list[int]]
    spec_token_ids: Optional[list[list[int]]]
    logprobs: Optional[Any]
    prompt_logprobs_dict: dict[str, Optional[Any]]
    pooler_output: list[Optional[Any]]
    finished_sending: Optional[set[str]] = None
    finished_recving: Optional[set[str]] = None
    num_nans_in_logits: Optional[dict[str, int]] = None
