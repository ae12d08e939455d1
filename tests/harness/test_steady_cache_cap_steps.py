"""A steady batch whose requests need more KV blocks than --num-blocks can give
(``MAX_NUM_BLOCKS``, 4,194,304) is told the most --steps that fit where one counted
step does (``check_steady_cache``, ``_steps_that_fit``), which its advice had dropped
when it came to name a --block-size and a --num-running; and where the search for the most
--num-running that runs stops past 50,000 simulated requests
(``steady_running_that_fits``' ``exact`` false), the advice says that the batch it names
runs and is not known to be the most, where it read as a bound ("--num-running 13189 or
fewer" while 13,400 run), as the memory check's advice does, where it gave a quotient's
reason ("a few more may: a request holds no more blocks in a smaller batch's steps")."""

from __future__ import annotations

import pytest

from ipc_bench.cli import main as cli_main
from ipc_bench.engine.config import ConfigError, ModelConfig
from ipc_bench.harness.scenario import (MAX_NUM_BLOCKS, ScenarioOptions, check_steady_cache,
                                        steady_blocks_needed, steady_case)

BOUND = ("a steady batch holds every request at once, and one that must preempt runs fewer "
         "requests than asked; --num-blocks is at most 4,194,304: give ")


def _case(steps: int):
    return steady_case(ScenarioOptions(scheduler_overrides={"block_size": 1}), "t",
                       {"num_running": 2048}, "cached", "msgpack", 0, model=ModelConfig(),
                       steps=steps, warmup=100)


def test_fewer_steps_are_named_where_one_counted_step_fits():
    with pytest.raises(ConfigError) as info:
        check_steady_cache(_case(3000), num_blocks_given=False)
    assert str(info.value) == (
        "--num-running 2048 needs 4,716,544 KV blocks (2,048 requests x 2,303 blocks of 1 "
        "token: each reaches up to 2,303 tokens in up to 22,716 steps, warm-up included) and "
        "the cache has 4,194,304: " + BOUND + "--block-size 2 or more (2,359,296 blocks at "
        "2), or --num-running 1821 or fewer, or --steps 621 or fewer")
    # and they do fit: one counted step needs well under the bound, and runs
    one = _case(1)
    assert one.scheduler.num_blocks == MAX_NUM_BLOCKS
    assert steady_blocks_needed(one) == 770_048
    check_steady_cache(one, num_blocks_given=False)


#: 15,000 running requests at block size 1, 5 counted steps: one counted step needs
#: more than the bound too (their prompts alone), so no --steps are named
RUN = ["--scenario", "decode-steady", "--codecs", "msgpack", "--no-single-process",
       "--no-floor", "--quiet", "--steps", "5", "--warmup-steps", "1",
       "--max-num-batched-tokens", "65536", "--num-running", "15000", "--block-size", "1"]


@pytest.mark.parametrize("blocks, cache, advice", [
    ([], "4,194,304", "--block-size 2 or more (2,385,000 blocks at 2), or --num-running "
                      "13189 or fewer"),
    (["--num-blocks", "4000000"], "4,000,000",
     "--block-size 2 or more with --num-blocks 2,385,000 or more, or --num-running 12578 or "
     "fewer"),
])
def test_a_batch_found_past_the_search_bound_is_not_named_as_the_most(blocks, cache, advice,
                                                                       tmp_path, capsys):
    assert cli_main(RUN + blocks + ["--output", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.strip() == (
        "bench.py: error: --num-running 15000 needs 4,770,000 KV blocks (15,000 requests x "
        "318 blocks of 1 token: each reaches up to 318 tokens in up to 63 steps, warm-up "
        f"included) and the cache has {cache}: " + BOUND + advice + " (a batch that runs, "
        "not known to be the most: the search for it stops past 50,000 simulated requests)")


def test_the_memory_advice_says_so_too(tmp_path, capsys):
    # llama-3.2-1b's 13,100 running at block size 1 on the emulated H200: past the
    # search's bound too, where it read "--num-running 13,015 runs, a few more may: a
    # request holds no more blocks in a smaller batch's steps", a quotient's reason
    assert cli_main(["--scenario", "decode-steady", "--model", "emulated", "--model-preset",
                     "llama-3.2-1b", "--codecs", "msgpack", "--no-single-process",
                     "--no-floor", "--quiet", "--steps", "5", "--warmup-steps", "1",
                     "--max-num-batched-tokens", "65536", "--block-size", "1",
                     "--num-blocks", "4194304", "--num-running", "13100",
                     "--output", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.strip() == (
        "bench.py: error: llama-3.2-1b needs 2.3 GiB of weights + 128.0 GiB of KV cache "
        "(num_blocks 4,194,304 x block_size 1), 130.3 GiB in all, on an emulated NVIDIA "
        "H200; it has 140.4 GiB, of which the model may take 90 % (126.4 GiB): no "
        "--num-blocks fits this workload on this device: it needs 4,100,300 blocks (the "
        "most this case's requests hold in its steps), and at most 4,065,176 fit beside the "
        "weights: lower --num-running (13,015 with --num-blocks 4,065,176 given, a batch "
        "that runs, not known to be the most: the search for it stops past 50,000 "
        "simulated requests) or use a smaller --model-preset")
