"""A steady batch's KV cache: the most slots one request holds in a case
(``scenario.steady_context_max``) is what the scheduler allocates, not a looser bound;
a cache of exactly B requests' worth runs all B at every counted step; a batch that
ran short is warned about (``analysis.summary.running_shortfall_warning``).

The refusal line of a cache that is too small, through ``bench.py``'s main, is in
``tests/cli/test_bad_input.py``.
"""

from __future__ import annotations

import json

import msgspec
import pytest

from ipc_bench import cli
from ipc_bench.analysis.summary import (attach_token_bytes, noise_warnings,
                                        running_shortfall_warning, summarize_case)
from ipc_bench.engine.config import (MAX_NUM_BLOCKS, MAX_NUM_SPEC_TOKENS, ConfigError, ModelConfig,
                                     SchedulerConfig)
from ipc_bench.engine.model_runner import ModelRunner
from ipc_bench.engine.scheduler import Scheduler
from ipc_bench.engine.workloads import SteadyDecodeWorkload
from ipc_bench.harness.scenario import (OUTPUT_LEN_MAX, PROMPT_LEN_MAX, ScenarioOptions,
                                        check_steady_cache, steady_case, steady_context_max,
                                        steady_num_blocks)
from ipc_bench.harness.spec import CaseSpec
from ipc_bench.harness.supervisor import run_case


def most_slots(cfg: SchedulerConfig, max_steps: int) -> int:
    """KV blocks (of one token: slots) the steady workload's longest request holds at
    most over ``max_steps`` steps of a real scheduler and runner, every draft accepted."""
    sched = Scheduler(cfg, "cached")
    runner = ModelRunner(cfg, ModelConfig(spec_acceptance=1.0), "cached")
    sched.add_request("r0", 0, list(range(1, PROMPT_LEN_MAX + 1)), OUTPUT_LEN_MAX)
    most = 0
    for _ in range(max_steps):
        if not sched.has_unfinished_requests():
            break
        plan = sched.schedule()
        out = runner.execute_model(sched.build_scheduler_output(plan))
        most = max(most, sum(len(r.block_ids) for r in sched.running))
        sched.update_from_output(plan, out)
    return most


@pytest.mark.parametrize("limits,max_steps,slots", [
    ({}, 100, 256 + 99),  # cut by the case's length
    ({}, 3000, 256 + 2048 - 1),  # the last sampled token is never fed back
    ({"max_model_len": 1000}, 3000, 999),
    ({"num_spec_tokens": 2}, 100, 256 + 99 * 3),  # 3 tokens a step, every draft accepted
    ({"num_spec_tokens": 2}, 3000, 256 + 2048 - 1 + 2),  # drafts past the last token
    ({"num_spec_tokens": 2, "num_lookahead_tokens": 2}, 100, 256 + 99 * 3 + 2),
    ({"num_spec_tokens": 2, "num_lookahead_tokens": 2}, 3000, 256 + 2048 - 1 + 2 + 2),
    ({"num_spec_tokens": 3, "max_model_len": 1000}, 3000, 999),
    ({"num_spec_tokens": 3, "num_lookahead_tokens": 1, "max_model_len": 1000}, 3000, 1000),
])
def test_the_bound_is_the_most_the_scheduler_allocates(limits, max_steps, slots):
    cfg = SchedulerConfig(max_num_seqs=1, max_num_batched_tokens=8192, block_size=1,
                          num_blocks=8192, **limits)
    assert steady_context_max(cfg, max_steps) == slots
    assert most_slots(cfg, max_steps) == slots


def steady(b: int, num_blocks: int, max_steps: int = 45, **limits) -> CaseSpec:
    return CaseSpec(scenario="t", labels={"num_running": b}, policy="cached", codec="msgpack",
                    scheduler=SchedulerConfig(max_num_seqs=b, num_blocks=num_blocks, **limits),
                    model=ModelConfig(), make_workload=lambda: None, max_steps=max_steps)


def test_the_check_refuses_one_block_short_and_names_what_fits():
    # 45 steps: 256 + 44 = 300 tokens each, 19 blocks of 16; 4 requests: 76
    check_steady_cache(steady(4, 76))
    with pytest.raises(ConfigError) as info:
        check_steady_cache(steady(4, 75))
    assert str(info.value) == (
        "--num-running 4 needs 76 KV blocks (4 requests x 19 blocks of 16 tokens: each "
        "reaches up to 300 tokens in up to 45 steps, warm-up included) and the cache has 75: "
        "a steady batch holds every request at once, and one that must preempt runs fewer "
        "requests than asked; give --num-blocks 76 or more, or --num-running 3 or fewer")
    # a cache --num-running sized: lowering it would shrink the cache too
    with pytest.raises(ConfigError, match=r"; give --num-blocks 76 or more$"):
        check_steady_cache(steady(4, 75), num_blocks_given=False)
    # other cases (no batch label, or no step limit) are not steady batches
    check_steady_cache(CaseSpec(scenario="t", labels={"trace": "x"}, policy="cached",
                                codec="msgpack", scheduler=SchedulerConfig(num_blocks=1),
                                model=ModelConfig(), make_workload=lambda: None,
                                max_steps=45))
    check_steady_cache(steady(4, 1, max_steps=None))


@pytest.mark.parametrize("block_size,num_blocks", [
    (16, 17 * 256), (4, 17 * 1024), (3, 17 * 1366), (1, 17 * 4096), (4096, 17)])
def test_the_default_cache_holds_the_batch_at_any_block_size(block_size, num_blocks):
    # without --num-blocks: 4,096 tokens per request + 4,096, in whole blocks; it holds
    # the longest context any case reaches (the most drafts and lookahead slots, and a
    # horizon past the longest output)
    opts = ScenarioOptions(scheduler_overrides={"block_size": block_size})
    case = steady_case(opts, "t", {"num_running": 16}, "cached", "msgpack", 0,
                       model=ModelConfig(), steps=100_000, warmup=100)
    assert case.scheduler.num_blocks == num_blocks
    case.scheduler = msgspec.structs.replace(case.scheduler,
                                             num_spec_tokens=MAX_NUM_SPEC_TOKENS,
                                             num_lookahead_tokens=MAX_NUM_SPEC_TOKENS)
    check_steady_cache(case, num_blocks_given=False)


def test_the_default_cache_is_capped_at_the_num_blocks_bound():
    # 1,024 running at block size 1 would default to 1,025 x 4,096 blocks, past what
    # --num-blocks accepts; the default stops at that bound, a case that fits under it
    # runs, and one that does not is refused with advice that does not name a
    # --num-blocks past the bound
    opts = ScenarioOptions(scheduler_overrides={"block_size": 1})
    assert steady_num_blocks(1023, 1) == 1024 * 4096 == MAX_NUM_BLOCKS
    short = steady_case(opts, "t", {"num_running": 1024}, "cached", "msgpack", 0,
                        model=ModelConfig(), steps=20, warmup=5)
    assert short.scheduler.num_blocks == MAX_NUM_BLOCKS
    check_steady_cache(short, num_blocks_given=False)
    long = steady_case(opts, "t", {"num_running": 2048}, "cached", "msgpack", 0,
                       model=ModelConfig(), steps=3000, warmup=100)
    with pytest.raises(ConfigError) as info:
        check_steady_cache(long, num_blocks_given=False)
    assert str(info.value).endswith(
        "and the cache has 4,194,304: a steady batch holds every request at once, and one "
        "that must preempt runs fewer requests than asked; --num-blocks is at most "
        "4,194,304: give --block-size 2 or more (2,359,296 blocks at 2), or --num-running "
        "1821 or fewer, or --steps 621 or fewer")


@pytest.mark.parametrize("block_size,num_running", [(4, 16), (1, 2)])
def test_the_default_cache_runs_at_small_block_sizes(block_size, num_running, tmp_path,
                                                     capsys):
    run = tmp_path / "run"
    code = cli.main(["--scenario", "decode-steady", "--num-running", str(num_running),
                     "--block-size", str(block_size), "--steps", "50", "--warmup-steps",
                     "5", "--codecs", "msgpack", "--policies", "cached",
                     "--no-single-process", "--no-floor", "--output", str(run), "--quiet"])
    err = capsys.readouterr().err
    assert code == 0, err
    (case,) = json.loads((run / "summary.json").read_text())["cases"]
    assert (case["num_running_mean"], case["num_preemptions"], case["num_steps"]) == (
        float(num_running), 0, 50)


def test_a_cache_that_exactly_fits_runs_the_whole_batch(tmp_path, capsys):
    # 5 warm-up steps + 30 counted: max_steps 55 (steady_max_steps: 5 + 30 + 2 * 10, no
    # mixed step), 256 + 54 = 310 tokens each, 20 blocks of 16; 4 requests: 80. None finishes,
    # so the case stops after exactly 30 counted steps, each decoding all 4 requests
    run = tmp_path / "run"
    code = cli.main(["--scenario", "decode-steady", "--num-running", "4", "--steps", "30",
                     "--warmup-steps", "5", "--num-blocks", "80", "--codecs", "msgpack",
                     "--policies", "cached", "--no-single-process", "--no-floor",
                     "--output", str(run), "--quiet"])
    err = capsys.readouterr().err
    assert code == 0, err
    (case,) = json.loads((run / "summary.json").read_text())["cases"]
    assert (case["num_running"], case["num_running_mean"], case["num_preemptions"],
            case["num_steps"]) == (4, 4.0, 0, 30)
    assert running_shortfall_warning(case) is None
    assert "requests ran per counted step" not in err


def test_the_shortfall_warning():
    assert running_shortfall_warning(dict(num_running=256, num_running_mean=15.8,
                                          num_preemptions=1234)) == (
        "15.8 requests ran per counted step on average, 93.8 % fewer than --num-running "
        "256 (1,234 preemptions): these figures are not those of a batch of 256")
    # more than 5 % below warns, whatever the cause; 5 % or less does not
    assert running_shortfall_warning(dict(num_running=100, num_running_mean=94.9)) == (
        "94.9 requests ran per counted step on average, 5.1 % fewer than --num-running 100: "
        "these figures are not those of a batch of 100")
    assert running_shortfall_warning(dict(num_running=100, num_running_mean=95.0)) is None
    # --pp N: each step is one of N micro-batches of B / N
    assert running_shortfall_warning(dict(num_running=256, num_running_mean=64.0,
                                          pp=4)) is None
    assert running_shortfall_warning(dict(num_running=256, num_running_mean=60.0, pp=4)) == (
        "60.0 requests ran per counted step on average, 6.2 % fewer than the 64 per "
        "micro-batch of --num-running 256 with --pp 4: these figures are not those of a "
        "batch of 256")
    # no batch asked for, or no counted step: nothing to compare
    assert running_shortfall_warning(dict(trace="conv:40", num_running_mean=3.0)) is None
    assert running_shortfall_warning(dict(num_running=4)) is None
    # it is one of the case's warnings
    assert noise_warnings(dict(num_running=100, num_running_mean=50.0, num_steps=200)) == [
        "50.0 requests ran per counted step on average, 50.0 % fewer than --num-running "
        "100: these figures are not those of a batch of 100"]


def test_a_case_that_preempts_is_warned_about():
    # 4 requests of 8-40 prompt tokens in 16 blocks of 16 (not through the CLI, which
    # refuses this cache): requests are preempted and fewer decode per counted step
    spec = CaseSpec(
        scenario="t", labels={"num_running": 4}, policy="cached", codec="msgpack",
        scheduler=SchedulerConfig(max_num_seqs=4, max_model_len=512, num_blocks=16),
        model=ModelConfig(),
        make_workload=lambda: SteadyDecodeWorkload(4, seed=0, vocab_size=128_256,
                                                   prompt_len_range=(8, 40),
                                                   output_len_range=(200, 300)),
        warmup_steps=5, max_steps=200, count="decode_only", floor=False)
    result = run_case(spec)
    attach_token_bytes(result)
    summary = summarize_case(result)
    # the logical clock makes the schedule, and so these figures, the same on any machine
    assert (summary["num_steps"], summary["num_running_mean"], summary["num_preemptions"]) \
        == (195, 367 / 195, 3)
    assert noise_warnings(summary)[0] == (
        "1.9 requests ran per counted step on average, 52.9 % fewer than --num-running 4 "
        "(3 preemptions): these figures are not those of a batch of 4")
