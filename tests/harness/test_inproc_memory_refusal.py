"""The single-process case builds its model in the scheduler process, with no handshake:
a model that does not fit its device as it is built there (a GPU whose free memory
shrank after the run's probe) is refused with the advice a runner process gives, the
least --num-blocks the run's workload needs beside the most that fit
(``runner_loop.workload_memory_refusal`` of the case's ``runner_need``), where it said
"lower --num-blocks (at most 57,038)", a cache too small for the batch asked."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ipc_bench.engine.config import ModelConfig, ModelMemoryError
from ipc_bench.harness.scenario import ScenarioOptions, steady_blocks_needed, steady_case
from ipc_bench.harness.spec import INPROC, NO_CODEC, CaseSpec
from ipc_bench.harness.supervisor import run_case

NEEDS = ("llama-3.1-8b needs 15.0 GiB of weights + 128.5 GiB of KV cache (num_blocks 65,792 "
         "x block_size 16), 143.5 GiB in all, on an emulated NVIDIA H200; it has 140.4 GiB, "
         "of which the model may take 90 % (126.4 GiB): ")


def _inproc(**need) -> CaseSpec:
    # 256 running: the default cache of 65,792 blocks, more than fit beside the weights
    case = steady_case(ScenarioOptions(), "decode-steady", {"num_running": 256}, "cached",
                       "msgpack", 0, model=ModelConfig(name="emulated", preset="llama-3.1-8b"),
                       steps=5, warmup=1)
    spec = replace(case, codec=NO_CODEC, transport=INPROC, floor=False, no_floor=False)
    spec.runner_need = {key: steady_blocks_needed(spec) if value == "need" else value
                        for key, value in need.items()}
    return spec


def test_the_single_process_case_names_the_least_blocks():
    with pytest.raises(ModelMemoryError) as exc:
        run_case(_inproc(blocks_needed="need", needed_by=None, need_words=None,
                         running_sized=True))
    assert str(exc.value) == NEEDS + (
        "give --num-blocks from 4,608 (the most this case's requests hold in its steps) to "
        "57,038, or --num-running 221 or fewer (it sizes the KV cache here), or a smaller "
        "--model-preset")


def test_without_the_workload_it_says_what_the_model_said():
    with pytest.raises(ModelMemoryError) as exc:
        run_case(_inproc())
    assert str(exc.value) == NEEDS + (
        "lower --num-blocks (at most 57,038) or use a smaller --model-preset")
