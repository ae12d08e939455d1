"""A runner that refuses a model whose weights + KV cache do not fit its device (a GPU's
free memory, a runner on another host: only the runner knows its memory) names the
least --num-blocks the run's workload needs beside the most that fits, as the
scheduler's own check does (``check_model_memory``'s ``blocks_needed``): the scheduler
sends what it knows of the workload in the handshake (``RunnerConfig.blocks_needed``,
``need_words``...), and the runner checks again with the memory it measured
(``runner_loop.memory_refusal``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from remote_launch import refused_by_hand
from ipc_bench.cli.run import REPLAY_NEED_WORDS
from ipc_bench.engine.config import ModelConfig, ModelMemoryError, SchedulerConfig, \
    check_model_memory
from ipc_bench.harness.runner_loop import memory_refusal
from ipc_bench.wire.handshake import RunnerConfig

#: Llama 3.1 8B in bf16 on a GPU with 40 GB free (faked: ``check_model_memory``'s
#: ``device_memory_bytes``, as ``torch.cuda.mem_get_info`` would give the runner)
NEEDS = ("llama-3.1-8b needs 15.0 GiB of weights + 32.5 GiB of KV cache (num_blocks "
         "16,640 x block_size 16), 47.5 GiB in all, on cuda; it has 37.3 GiB free, of which "
         "the model may take 90 % (33.5 GiB): ")


def _config(**need) -> RunnerConfig:
    return RunnerConfig(scheduler=SchedulerConfig(num_blocks=16_640),
                        model=ModelConfig(name="torch", preset="llama-3.1-8b"),
                        policy="send", codec="msgpack", warmup_steps=0, peer_timeout_s=10.0,
                        s2r_endpoint="ipc:///x/s2r", r2s_endpoint="ipc:///x/r2s", **need)


def _refused(config: RunnerConfig) -> ModelMemoryError:
    with pytest.raises(ModelMemoryError) as exc:
        check_model_memory(config.scheduler, config.model, "cuda", 40 * 10**9)
    return exc.value


def test_the_runner_on_a_gpu_names_the_schedulers_least_blocks():
    replay = _config(blocks_needed=261, need_words=REPLAY_NEED_WORDS)
    assert str(memory_refusal(_refused(replay), replay)) == NEEDS + (
        "give --num-blocks from 261 (the blocks the longest request replayed holds at its "
        "last step; a smaller cache rejects it on arrival or cannot hold it) to 9,507, or a "
        "smaller --model-preset")
    steady = _config(blocks_needed=1_280, needed_by="--num-running 64", running_sized=True)
    assert str(memory_refusal(_refused(steady), steady)) == NEEDS + (
        "give --num-blocks from 1,280 (the most --num-running 64's requests hold in its "
        "steps, the largest need of the run) to 9,507, or --num-running 36 or fewer (it "
        "sizes the KV cache here), or a smaller --model-preset")
    bare = _config()  # a scheduler that sent no need: the runner's own words
    assert str(memory_refusal(_refused(bare), bare)) == NEEDS + (
        "lower --num-blocks (at most 9,507) or use a smaller --model-preset")
    # a need larger than what fits: no --num-blocks serves it
    large = _config(blocks_needed=9_508, need_words=REPLAY_NEED_WORDS)
    assert str(memory_refusal(_refused(large), large)) == NEEDS + (
        "no --num-blocks fits this workload on this device: it needs 9,508 blocks (the "
        "blocks the longest request replayed holds at its last step; a smaller cache "
        "rejects it on arrival or cannot hold it), and at most 9,507 fit beside the "
        "weights: replay a trace of shorter requests, with --num-blocks at most 9,507; or "
        "use a smaller --model-preset")


def _trace(path: Path) -> Path:
    """Three requests, the longest holding 261 blocks of 16 at its last step
    (``tests/cli/test_replay_memory_advice.py``)."""
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                    "2023-11-16 18:15:46.6805900,100,30\n"
                    "2023-11-16 18:15:47.6805900,4094,82\n"
                    "2023-11-16 18:15:48.6805900,500,1000\n")
    return path


def test_a_runner_started_by_hand_names_the_least_blocks(tmp_path):
    """A trace replay whose torch model's cache is too large for the CPU, on a runner
    started by hand (the scheduler does not check a model it does not run): one line,
    the scheduler's advice, from the runner's figures."""
    refusal = ("tiny needs 0.1 GiB of weights + 30.5 GiB of KV cache (num_blocks 4,000,000 "
               "x block_size 16), 30.6 GiB in all, on cpu; the CPU limit is 6.0 GiB: give "
               "--num-blocks from 261 (the blocks the longest request replayed holds at its "
               "last step; a smaller cache rejects it on arrival or cannot hold it) to "
               "778,379, or a smaller --model-preset")
    both = refused_by_hand(
        ["--scenario", "azure-conv", "--trace", str(_trace(tmp_path / "t.csv")),
         "--warmup-steps", "0", "--model", "torch", "--model-preset", "tiny", "--num-blocks",
         "4000000", "--policies", "send", "--codecs", "msgpack", "--no-single-process",
         "--no-floor", "--quiet"], tmp_path / "run", "trace=azure-conv:3/send/msgpack#0",
        refusal)
    assert "Traceback" not in both
