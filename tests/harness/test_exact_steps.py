"""``--steps N`` runs exactly N counted pure-decode steps in every scheduler loop (the
measured loop, the bare loop of the overhead scenario, the async loop); the cap on the
steps in all (``scenario.steady_max_steps``) warns when it cuts a case short."""

from __future__ import annotations

import json

import pytest

from analysis_run import bench_in_process
from ipc_bench.analysis.summary import no_step_counted, noise_warnings
from ipc_bench.harness.scenario import ScenarioOptions, steady_cases, steady_max_steps

SMALL = ["--num-running", "16", "--codecs", "msgpack", "--no-floor", "--warmup-steps", "5"]


def _cases(tmp_path, *args: str) -> list[dict]:
    run = tmp_path / "run"
    proc = bench_in_process([*args, *SMALL, "--output", str(run)])  # cli.main, in process
    assert proc.returncode == 0, proc.stderr
    return json.loads((run / "summary.json").read_text())["cases"]


@pytest.mark.parametrize("steps", ["1", "7"])
def test_steady_cases_count_exactly_the_steps_asked_for(tmp_path, steps):
    cases = _cases(tmp_path, "--scenario", "decode-steady", "--steps", steps,
                   "--no-single-process")
    assert [c["num_steps"] for c in cases] == [int(steps)] * 2
    assert [c["counted_steps_asked"] for c in cases] == [int(steps)] * 2


def test_async_and_single_process_cases_count_exactly_the_steps_asked_for(tmp_path):
    cases = _cases(tmp_path, "--scenario", "decode-steady", "--steps", "13",
                   "--async-scheduling")
    assert len(cases) == 4  # cached and cached+async, over ipc and in one process
    assert [c["num_steps"] for c in cases] == [13] * 4


def test_the_bare_loop_runs_the_same_steps_as_the_measured_one(tmp_path):
    cases = _cases(tmp_path, "--scenario", "overhead", "--steps", "11", "--repeat", "2",
                   "--policies", "send")
    assert sorted((c["arm"], c["loop_steps"]) for c in cases) == [
        ("steps", 11), ("steps", 11), ("totals", 11), ("totals", 11)]
    assert all(c["warnings"] == [] or "asked for" not in c["warnings"][0] for c in cases)


def test_the_cap_on_the_steps_in_all_leaves_room_and_warns_when_reached():
    (case,) = steady_cases(ScenarioOptions(steps=50, warmup_steps=5, codecs=["msgpack"],
                                           policies=["send"], floor=False), "decode-steady",
                           [256])
    # 256 prompts of 32-256 tokens take 5 steps at 8,192 tokens a step, and no request
    # finishes before step 511: no mixed step past the warm-up
    assert (case.counted_steps, case.max_steps) == (50, steady_max_steps(50, 5, 5, 0)) \
        == (50, 5 + 50 + 2 * 10)
    summary = dict(num_steps=40, counted_steps_asked=50, max_steps=99, complete=True)
    assert noise_warnings(summary) == [
        "only 40 counted steps (< 100): step-time noise not measured (under 150: 3 "
        "blocks of 50) and figures are rough",
        "40 of the 50 counted steps asked for (--steps): the case stopped at its limit of "
        "99 steps in all, the others mixed steps (the first prompts prefilling, "
        "replacements prefilling, preemptions); raise --max-num-batched-tokens (the "
        "prompts prefill in fewer steps) or --warmup-steps (each warm-up step raises the "
        "limit by one), or lower --num-running (B requests see about B / 1,280 finishes a "
        "step, and the step after one prefills its replacement)"]
    assert noise_warnings(dict(summary, num_steps=50)) == [
        "only 50 counted steps (< 100): step-time noise not measured (under 150: 3 "
        "blocks of 50) and figures are rough"]


def test_pp_cases_count_exactly_the_steps_asked_for(tmp_path):
    cases = _cases(tmp_path, "--scenario", "pp", "--pp", "2", "--steps", "20",
                   "--policies", "send")
    assert [(c["num_steps"], c["counted_steps_asked"]) for c in cases] == [(20, 20)]


def test_the_cap_counts_the_first_prefill_so_a_small_budget_counts_every_step(tmp_path):
    # 16 prompts (2,458 tokens) at 64 tokens a step, less one per decoding request:
    # 44 steps, then 20 counted
    opts = ScenarioOptions(steps=20, warmup_steps=5, codecs=["msgpack"], policies=["cached"],
                           floor=False, scheduler_overrides={"max_num_batched_tokens": 64})
    (case,) = steady_cases(opts, "decode-steady", [16])
    assert case.max_steps == steady_max_steps(20, 5, 44, 0) == 44 + 20 + 2 * 10
    cases = _cases(tmp_path, "--scenario", "decode-steady", "--steps", "20",
                   "--max-num-batched-tokens", "64", "--policies", "cached",
                   "--no-single-process")
    assert [(c["num_steps"], c["num_total_steps"], c["max_steps"]) for c in cases] == [
        (20, 64, 84)]


def test_a_case_stopped_at_its_cap_before_counting_says_what_to_raise():
    summary = dict(case_id="c0", complete=True, num_steps=0, num_total_steps=371,
                   num_warmup_steps=5, max_steps=371)
    assert no_step_counted([summary]) == [
        "c0 counted no step: 371 steps, 5 in the warm-up, none of the rest of the kind "
        "this scenario counts; its per-step figures are absent: the case stopped at its "
        "limit of 371 steps in all, the others mixed steps (the first prompts prefilling, "
        "replacements prefilling, preemptions); raise --max-num-batched-tokens (the "
        "prompts prefill in fewer steps) or --warmup-steps (each warm-up step raises the "
        "limit by one), or lower --num-running (B requests see about B / 1,280 finishes a "
        "step, and the step after one prefills its replacement)"]


def test_a_short_output_workload_sizes_its_own_cap_and_advice():
    """A steady case whose workload has outputs of 16 to 64 tokens (mean 40) gets its cap
    from a simulation of those lengths, not of the default 512 to 2,048 (mean 1,280):
    built with ``output_len_range`` or with its ``make_workload`` swapped in afterwards
    (the CLI sets the cap again from what ``make_workload`` returns), and its advice
    names B / 40."""
    import dataclasses

    from ipc_bench.cli.run import _with_steady_caps
    from ipc_bench.engine.config import ConfigError
    from ipc_bench.engine.workloads import SteadyDecodeWorkload
    from ipc_bench.harness.scenario import check_steady_steps

    opts = ScenarioOptions(steps=300, codecs=["msgpack"], policies=["cached"], floor=False,
                           single_process=False)
    (default,) = steady_cases(opts, "decode-mix", [8])
    (short,) = steady_cases(opts, "decode-mix", [8], output_len_range=(16, 64))
    assert (default.max_steps, default.output_len_mean) == (420, 1280.0)
    assert (short.max_steps, short.output_len_mean) == (548, 40.0)
    # 100 warm-up steps, 300 counted, 64 mixed: 100 + 300 + 2 * (64 + 10)
    assert short.max_steps == steady_max_steps(300, 100, 1, 64)
    swapped = dataclasses.replace(default, make_workload=lambda: SteadyDecodeWorkload(
        8, seed=0, vocab_size=128256, output_len_range=(16, 64)))
    assert swapped.max_steps == 420  # still the default workload's until set again
    (swapped,) = _with_steady_caps("decode-mix", None, [swapped])
    assert (swapped.max_steps, swapped.output_len_mean) == (548, 40.0)
    summary = dict(num_steps=214, counted_steps_asked=300, max_steps=548, complete=True,
                   output_len_mean=40.0)
    assert noise_warnings(summary)[-1] == (
        "214 of the 300 counted steps asked for (--steps): the case stopped at its limit "
        "of 548 steps in all, the others mixed steps (the first prompts prefilling, "
        "replacements prefilling, preemptions); raise --max-num-batched-tokens (the "
        "prompts prefill in fewer steps) or --warmup-steps (each warm-up step raises the "
        "limit by one), or lower --num-running (B requests see about B / 40 finishes a "
        "step, and the step after one prefills its replacement)")
    (large,) = steady_cases(opts, "decode-mix", [128], output_len_range=(16, 64))
    with pytest.raises(ConfigError) as info:
        check_steady_steps(large)
    assert str(info.value) == (
        "--num-running 128: about 3.2 requests finish a step (outputs average 40 tokens) "
        "and the step after each prefills its replacement, so about 3.9 % of steps are "
        "pure decode: 300 counted steps would need about 7,800 steps in all, more than the "
        "cap of 3,100 (the warm-up or the first prompts' prefill, whichever ends later: "
        "100 steps, then 10 steps per counted step); lower --num-running to 64 or less "
        "(about 1,500 steps in all at 64), or give --steps 1 or fewer")


def test_a_long_prompt_workload_is_checked_against_max_model_len():
    """A steady workload whose prompts reach ``max_model_len`` is refused by its own
    longest prompt, not the default workload's 256: built with ``prompt_len_range``
    (the scenario's default ``max_model_len`` named) or with its ``make_workload``
    swapped in afterwards (the CLI checks again); prompts shorter than the default's
    pass under a ``max_model_len`` the default's would fail."""
    import dataclasses

    from ipc_bench.cli.run import _with_steady_caps
    from ipc_bench.engine.config import ConfigError
    from ipc_bench.engine.workloads import SteadyDecodeWorkload

    opts = ScenarioOptions(steps=100, codecs=["msgpack"], policies=["cached"], floor=False,
                           single_process=False)
    with pytest.raises(ConfigError) as info:
        steady_cases(opts, "decode-long", [8], prompt_len_range=(32, 5000))
    assert str(info.value) == (
        "max_model_len 4096 must exceed the workload's longest prompt (5,000 tokens); "
        "max_model_len 4096 is the scenario's default (--max-model-len sets it)")
    (default,) = steady_cases(opts, "decode-long", [8])
    swapped = dataclasses.replace(default, make_workload=lambda: SteadyDecodeWorkload(
        8, seed=0, vocab_size=128256, prompt_len_range=(32, 4096)))
    with pytest.raises(ConfigError) as info:
        _with_steady_caps("decode-long", None, [swapped])
    assert str(info.value) == (f"case {default.case_id}: max_model_len 4096 must exceed "
                               "the workload's longest prompt (4,096 tokens)")
    short_opts = dataclasses.replace(opts, scheduler_overrides={"max_model_len": 200})
    (short,) = steady_cases(short_opts, "decode-long", [8], prompt_len_range=(16, 64),
                            output_len_range=(16, 64))
    assert short.scheduler.max_model_len == 200
