"""``--steps N`` runs exactly N counted pure-decode steps in every scheduler loop (the
measured loop, the bare loop of the overhead scenario, the async loop); the cap on the
steps in all (``scenario.steady_max_steps``) warns when it cuts a case short."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from fault_helpers import REPO
from ipc_bench.analysis.summary import no_step_counted, noise_warnings
from ipc_bench.harness.scenario import ScenarioOptions, steady_cases, steady_max_steps

SMALL = ["--num-running", "16", "--codecs", "msgpack", "--no-floor", "--warmup-steps", "5"]


def _cases(tmp_path, *args: str) -> list[dict]:
    run = tmp_path / "run"
    proc = subprocess.run([sys.executable, "bench.py", *args, *SMALL, "--output", str(run)],
                          cwd=REPO, capture_output=True, text=True, timeout=240)
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
        "only 40 counted steps (< 100): figures are rough",
        "40 of the 50 counted steps asked for (--steps): the case stopped at its limit of "
        "99 steps in all, the others mixed steps (the first prompts prefilling, "
        "replacements prefilling, preemptions); raise --max-num-batched-tokens (the "
        "prompts prefill in fewer steps) or --warmup-steps (each warm-up step raises the "
        "limit by one), or lower --num-running (B requests see about B / 1,280 finishes a "
        "step, and the step after one prefills its replacement)"]
    assert noise_warnings(dict(summary, num_steps=50)) == [
        "only 50 counted steps (< 100): figures are rough"]


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
