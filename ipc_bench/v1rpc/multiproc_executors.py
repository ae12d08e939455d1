"""The RPC envelope of vLLM's multiprocess executor (mirrors
``vllm/v1/executor/multiproc_executor.py`` at 7f280d69c; module name as long as
``vllm.v1.executor.multiproc_executor``, 35 characters).

``MultiprocExecutor.execute_model`` calls ``collective_rpc("execute_model",
args=(scheduler_output,), unique_reply_rank=self.output_rank, ...)``, which enqueues
``(send_method, args, kwargs, unique_reply_rank)`` = ``("execute_model",
(scheduler_output,), {}, output_rank)`` (``kwargs = kwargs or {}``; ``output_rank`` is
``world_size - tensor_parallel_size``: 0 without pipeline parallelism). The worker's
``worker_busy_loop`` unpacks it, calls the method and, on the output rank, enqueues
``(WorkerProc.ResponseStatus.SUCCESS, output)``. ``ResponseStatus`` is an ``Enum``
nested in ``WorkerProc``: it pickles as the global ``WorkerProc.ResponseStatus`` and
its value.
"""

from __future__ import annotations

from enum import Enum, auto

#: ``send_method`` of the per-step RPC.
EXECUTE_MODEL = "execute_model"
#: ``unique_reply_rank``: the rank that answers (``world_size - tensor_parallel_size``).
OUTPUT_RANK = 0
#: First item of the 3-tuple ``(tag, packed SchedulerOutput, output_rank)`` that vLLM PR
#: #54406 (open, 2026-08-30) enqueues instead of the RPC 4-tuple for ``execute_model``
#: (its ``EXECUTE_MODEL_FAST_PATH_TAG``; the ``packed`` codec of ``ipc_bench.wire.codecs``).
EXECUTE_MODEL_FAST_PATH_TAG = "__vllm_execute_model_fast_path_v1__"


class WorkerProc:
    """Namespace of the nested ``ResponseStatus`` (vLLM's ``WorkerProc`` runs a worker;
    only its reply status travels)."""

    class ResponseStatus(Enum):
        SUCCESS = auto()
        FAILURE = auto()
