"""A trace replay refused because its model's weights and KV cache do not fit names the
least --num-blocks the replay needs (``trace_checks.replay_blocks_needed``: what its
longest request holds at its last step) beside the most that fits, as a steady case's
refusal names its range."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from analysis_run import bench_in_process
from ipc_bench.engine.traces import load_azure_trace
from ipc_bench.harness.scenario import CONV_SCHEDULER
from ipc_bench.harness.trace_checks import replay_blocks_needed

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO.parent / "shared" / "traces" / "AzureLLMInferenceTrace_conv.csv"
HEAD = ("bench.py: error: llama-3.1-8b needs 15.0 GiB of weights + 256.0 GiB of KV cache "
        "(num_blocks 131,072 x block_size 16), 271.0 GiB in all, on an emulated NVIDIA "
        "H200; it has 140.4 GiB, of which the model may take 90 % (126.4 GiB): ")


def _trace(path: Path) -> Path:
    """Three requests: 100 + 30 tokens (9 blocks of 16), 4,094 + 82 (its last step
    computes 4,175 tokens: 261 blocks), 500 + 1,000 (94 blocks)."""
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                    "2023-11-16 18:15:46.6805900,100,30\n"
                    "2023-11-16 18:15:47.6805900,4094,82\n"
                    "2023-11-16 18:15:48.6805900,500,1000\n")
    return path


def _bench(*argv: str) -> subprocess.CompletedProcess:
    """``python bench.py ARGV`` as ``cli.main`` in this process
    (``analysis_run.bench_in_process``): its exit code, stdout and stderr."""
    return bench_in_process(list(argv))


def test_the_least_blocks_of_a_replay(tmp_path):
    trace = load_azure_trace(_trace(tmp_path / "t.csv"))
    assert replay_blocks_needed(trace, CONV_SCHEDULER) == 261


def test_the_refusal_names_the_range(tmp_path):
    done = _bench("--scenario", "azure-conv", "--trace", str(_trace(tmp_path / "t.csv")),
                  "--model", "emulated", "--model-preset", "llama-3.1-8b",
                  "--warmup-steps", "0", "--output", str(tmp_path / "run"))
    assert (done.returncode, done.stderr) == (2, HEAD + (
        "give --num-blocks from 261 (the blocks the longest request replayed holds at its "
        "last step; a smaller cache rejects it on arrival or cannot hold it) to 57,038, or "
        "a smaller --model-preset\n"))
    assert not (tmp_path / "run").exists()


@pytest.mark.skipif(not TRACE.is_file(), reason="no Azure conv trace beside the checkout")
def test_the_refusal_of_the_conv_trace(tmp_path):
    """The first 100 requests of the conversation trace: 261 blocks (one of 4,094
    prompt tokens and 82 output tokens), which runs; 260 is refused by the trace
    check."""
    done = _bench("--scenario", "azure-conv", "--trace", str(TRACE), "--max-requests",
                  "100", "--model", "emulated", "--model-preset", "llama-3.1-8b",
                  "--output", str(tmp_path / "run"))
    assert (done.returncode, done.stderr) == (2, HEAD + (
        "give --num-blocks from 261 (the blocks the longest request replayed holds at its "
        "last step; a smaller cache rejects it on arrival or cannot hold it) to 57,038, or "
        "a smaller --model-preset\n"))
