"""A steady batch that no --num-blocks serves while --num-running sizes the KV cache:
the refusal names, beside the most running requests where --num-running sizes the
cache, the batch that runs with the blocks that fit given as --num-blocks (fit over the
blocks one request holds at its longest), where it named the first only (221 for
llama-3.1-8b on the emulated H200, while 2,000 running with --num-blocks 57,000 run)."""

from __future__ import annotations

import pytest

from ipc_bench.cli import main as cli_main
from ipc_bench.engine.config import (ModelConfig, ModelMemoryError, SchedulerConfig,
                                     check_model_memory)

HEAD = ("bench.py: error: llama-3.1-8b needs 15.0 GiB of weights + 2500.5 GiB of KV cache "
        "(num_blocks 1,280,256 x block_size 16), 2515.5 GiB in all, on an emulated NVIDIA "
        "H200; it has 140.4 GiB, of which the model may take 90 % (126.4 GiB): ")
STEADY = ["--scenario", "decode-steady", "--model", "emulated", "--model-preset",
          "llama-3.1-8b", "--steps", "5", "--warmup-steps", "1", "--codecs", "msgpack",
          "--no-single-process", "--no-floor"]


def test_the_refusal_names_the_batch_that_fits_the_blocks_given(capsys, tmp_path):
    assert cli_main(STEADY + ["--num-running", "5000", "--output", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == HEAD + (
        "no --num-blocks fits this workload on this device: it needs 135,000 blocks (the "
        "most this case's requests hold in its steps), and at most 57,038 fit beside the "
        "weights: lower --num-running (at most 221 where it sizes the KV cache; at most "
        "2,619 with --num-blocks 57,038 given) or use a smaller --model-preset")


def test_the_batch_named_runs_with_the_blocks_named(tmp_path, monkeypatch):
    # 135,000 / 5,000 = 27 blocks a request; 57,038 // 27 = 2,112. Every check that could
    # refuse it runs before the cases do (the scheduler's, with the emulated H200's
    # figures the runner checks again with): the cases it hands on are the run's
    from ipc_bench.cli import execute

    handed = []
    monkeypatch.setattr(execute, "run_cases",
                        lambda args, cases, *rest, **kw: handed.extend(cases) or 0)
    assert cli_main(STEADY + ["--num-running", "2112", "--num-blocks", "57038", "--quiet",
                              "--output", str(tmp_path / "r")]) == 0
    assert [(c.labels["num_running"], c.scheduler.num_blocks) for c in handed] == [
        (2112, 57_038)] * len(handed) and len(handed) == 2


@pytest.mark.parametrize("needed_by, words", [
    # the case that needs the most, of a run of several counts: 144 blocks a request
    ("--num-running 1024", "with --num-blocks 57,038 given, --num-running 396 runs"),
    # a count that does not divide the need: no per-request figure, nothing named
    ("--num-running 1000", None),
])
def test_the_case_that_needs_the_most_gives_the_blocks_a_request_holds(needed_by, words):
    model = ModelConfig(name="emulated", preset="llama-3.1-8b")
    with pytest.raises(ModelMemoryError) as exc:
        check_model_memory(SchedulerConfig(num_blocks=262_400), model, "h200",
                           150_754_820_096, "an emulated NVIDIA H200",
                           running_for_blocks=lambda n: n // 256 - 1,
                           blocks_needed=147_456, needed_by=needed_by)
    text = str(exc.value)
    if words is None:
        assert text.endswith("lower --num-running (at most 221: it sizes the KV cache here) "
                             "or use a smaller --model-preset")
    else:
        assert text.endswith(f"lower --num-running (at most 221 where it sizes the KV "
                             f"cache; {words}, a few more may: a request holds no more blocks in a "
                             f"smaller batch's steps) or use a smaller --model-preset")
