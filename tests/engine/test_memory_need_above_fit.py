"""A torch or emulated model whose workload needs more KV blocks than fit beside its
weights on the device (the least --num-blocks the case needs is above the most that
fit) was advised ``lower --num-blocks (at most M)``, though a cache that size rejects
the longest request replayed or cannot hold the running batch. The refusal now says that
no --num-blocks fits this workload on this device, with both figures, and names what
would: fewer --num-running (a steady case), a trace of shorter requests or a lower
--max-model-len (a trace replay), a smaller --model-preset; one line, exit 2. A
runner that checks again with its own memory says the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis_run import bench_in_process
from ipc_bench.engine.config import (ModelConfig, ModelMemoryError, SchedulerConfig,
                                     check_model_memory)
from ipc_bench.harness.runner_loop import memory_refusal
from ipc_bench.wire.handshake import RunnerConfig

EMULATED = ["--scenario", "decode-steady", "--model", "emulated", "--model-preset",
            "llama-3.1-8b", "--num-running", "1024"]
H200 = ("of which the model may take 90 % (126.4 GiB): no --num-blocks fits this workload on "
        "this device: it needs 147,456 blocks (the most this case's requests hold in its "
        "steps), and at most 57,038 fit beside the weights: ")


def test_a_steady_case_whose_num_running_sizes_the_cache(tmp_path):
    done = bench_in_process([*EMULATED, "--output", tmp_path / "run"])
    assert (done.returncode, done.stdout, done.stderr) == (2, "", (
        "bench.py: error: llama-3.1-8b needs 15.0 GiB of weights + 512.5 GiB of KV cache "
        "(num_blocks 262,400 x block_size 16), 527.5 GiB in all, on an emulated NVIDIA H200; "
        f"it has 140.4 GiB, {H200}lower --num-running (at most 221 where it sizes the KV "
        "cache; at most 487 with --num-blocks 57,038 given) or use a smaller "
        "--model-preset\n"))
    assert not (tmp_path / "run").exists()


def test_a_steady_case_with_num_blocks_given(tmp_path):
    done = bench_in_process([*EMULATED, "--num-blocks", "300000", "--output", tmp_path / "run"])
    assert (done.returncode, done.stdout, done.stderr) == (2, "", (
        "bench.py: error: llama-3.1-8b needs 15.0 GiB of weights + 585.9 GiB of KV cache "
        "(num_blocks 300,000 x block_size 16), 600.9 GiB in all, on an emulated NVIDIA H200; "
        f"it has 140.4 GiB, {H200}lower --num-running (at most 487 with --num-blocks 57,038 "
        "given) or use a smaller --model-preset\n"))


def _trace(path: Path) -> Path:
    """Two requests: 100 + 30 tokens, and 60,000 + 40,000 (6,250 blocks of 16 at its
    last step)."""
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                    "2023-11-16 18:15:46.6805900,100,30\n"
                    "2023-11-16 18:15:47.6805900,60000,40000\n")
    return path


REPLAY = ("no --num-blocks fits this workload on this device: it needs 6,250 blocks (the "
          "blocks the longest request replayed holds at its last step; a smaller cache "
          "rejects it on arrival or cannot hold it), and at most 1,429 fit beside the "
          "weights: replay a trace of shorter requests, or give --max-model-len 22,864 or "
          "lower (longer prompts are rejected, outputs cut there), with --num-blocks at most "
          "1,429; or use a smaller --model-preset")


@pytest.mark.parametrize("blocks, kv, total", [([], "128.0", "132.6"),
                                               (["--num-blocks", "2000"], "2.0", "6.6")])
def test_a_replay_whose_longest_request_does_not_fit(blocks, kv, total, tmp_path):
    done = bench_in_process(["--scenario", "azure-conv", "--trace", _trace(tmp_path / "t.csv"),
                             "--model", "torch", "--device", "cpu", "--model-preset",
                             "llama-3.2-1b", "--max-model-len", "131072", *blocks,
                             "--warmup-steps", "0", "--output", tmp_path / "run"])
    num_blocks = "2,000" if blocks else "131,072"
    assert (done.returncode, done.stdout, done.stderr) == (2, "", (
        f"bench.py: error: llama-3.2-1b needs 4.6 GiB of weights + {kv} GiB of KV cache "
        f"(num_blocks {num_blocks} x block_size 16), {total} GiB in all, on cpu; the CPU "
        f"limit is 6.0 GiB: {REPLAY}\n"))
    assert not (tmp_path / "run").exists()


def test_the_advice_it_names_fits(tmp_path):
    """--max-model-len 22,864 with --num-blocks 1,429: the model fits, and the replay
    needs no more (its longest request is then rejected); 1,430 blocks do not fit."""
    from ipc_bench.engine.traces import load_azure_trace
    from ipc_bench.harness.trace_checks import replay_blocks_needed

    model = ModelConfig(name="torch", preset="llama-3.2-1b", device="cpu")
    cfg = SchedulerConfig(max_num_batched_tokens=2048, max_model_len=22_864, num_blocks=1_429)
    check_model_memory(cfg, model, "cpu")
    assert replay_blocks_needed(load_azure_trace(_trace(tmp_path / "t.csv")), cfg) == 9
    with pytest.raises(ModelMemoryError):
        check_model_memory(SchedulerConfig(max_model_len=22_864, num_blocks=1_430), model,
                           "cpu")


def test_a_runner_that_checks_again_says_the_same():
    config = RunnerConfig(scheduler=SchedulerConfig(num_blocks=16_640),
                          model=ModelConfig(name="torch", preset="llama-3.1-8b"),
                          policy="send", codec="msgpack", warmup_steps=0, peer_timeout_s=10.0,
                          s2r_endpoint="ipc:///x/s2r", r2s_endpoint="ipc:///x/r2s",
                          blocks_needed=20_000, needed_by="--num-running 1024",
                          running_sized=True)
    with pytest.raises(ModelMemoryError) as exc:
        check_model_memory(config.scheduler, config.model, "cuda", 40 * 10**9)
    assert str(memory_refusal(exc.value, config)) == (
        "llama-3.1-8b needs 15.0 GiB of weights + 32.5 GiB of KV cache (num_blocks 16,640 x "
        "block_size 16), 47.5 GiB in all, on cuda; it has 37.3 GiB free, of which the model "
        "may take 90 % (33.5 GiB): no --num-blocks fits this workload on this device: it "
        "needs 20,000 blocks (the most --num-running 1024's requests hold in its steps, the "
        "largest need of the run), and at most 9,507 fit beside the weights: lower "
        "--num-running (at most 36: it sizes the KV cache here) or use a smaller "
        "--model-preset")
