"""A steady batch whose requests need more KV blocks than --num-blocks can give
(``MAX_NUM_BLOCKS``, 4,194,304) is told the most --steps that fit its cache
(``check_steady_cache``, ``_steps_that_fit``: a bisection over counted steps, each one
simulation of its schedule), where it read "fewer --steps" with no figure while its
other advice names one: the named count runs under the same check, one more does not.
With --num-blocks given below the bound, the figure fits that cache, as the
--num-running one does."""

from __future__ import annotations

import pytest

from ipc_bench.engine.config import ConfigError, ModelConfig
from ipc_bench.harness.scenario import (ScenarioOptions, check_steady_cache, steady_blocks_needed,
                                        steady_case)


def _case(steps: int, num_blocks):
    overrides = {"block_size": 1, **({"num_blocks": num_blocks} if num_blocks else {})}
    return steady_case(ScenarioOptions(scheduler_overrides=overrides), "t",
                       {"num_running": 2048}, "cached", "msgpack", 0, model=ModelConfig(),
                       steps=steps, warmup=100)


@pytest.mark.parametrize("num_blocks, advice, most, need, more", [
    # 621 counted steps need the bound exactly; 622 take 11 steps more in all
    (None, "--block-size 2 or more (2,359,296 blocks at 2), or --num-running 1821 or "
           "fewer, or --steps 621 or fewer", 621, 4_194_304,
     "--num-running 2048 needs 4,216,832 KV blocks (2,048 requests x 2,059 blocks of 1 "
     "token: each reaches up to 2,059 tokens in up to 1,804 steps, warm-up included) and "
     "the cache has 4,194,304"),
    (4_000_000, "--block-size 2 or more with --num-blocks 2,359,296 or more, or "
                "--num-running 1736 or fewer, or --steps 610 or fewer", 610, 3_991_552,
     "--num-running 2048 needs 4,005,888 KV blocks (2,048 requests x 1,956 blocks of 1 "
     "token: each reaches up to 1,956 tokens in up to 1,701 steps, warm-up included) and "
     "the cache has 4,000,000"),
])
def test_the_steps_named_fit_and_one_more_does_not(num_blocks, advice, most, need, more):
    given = num_blocks is not None
    with pytest.raises(ConfigError) as info:
        check_steady_cache(_case(3000, num_blocks), num_blocks_given=given)
    assert str(info.value).endswith(
        "one that must preempt runs fewer requests than asked; --num-blocks is at most "
        "4,194,304: give " + advice)
    fits = _case(most, num_blocks)
    assert fits.scheduler.num_blocks == (num_blocks or 4_194_304)
    assert steady_blocks_needed(fits) == need
    check_steady_cache(fits, num_blocks_given=given)
    with pytest.raises(ConfigError) as info:
        check_steady_cache(_case(most + 1, num_blocks), num_blocks_given=given)
    assert str(info.value).startswith(more + ": ")
