"""A steady case's steps in all (``harness.steady_steps``): the simulation of its
schedule gives the step at which a real scheduler and runner count their last
pure-decode step; the cap on the steps in all (``scenario.steady_case_max_steps``) is
sized from it, with drafts when ``--num-spec-tokens`` gives some; a batch too large to
count its steps is refused up front (``scenario.check_steady_steps``; its line through
``bench.py`` is in ``tests/cli/test_bad_input.py``)."""

from __future__ import annotations

import collections
import json
import subprocess
import sys
from dataclasses import replace

import pytest

from fault_helpers import REPO
from ipc_bench.cli.run import with_spec_decoding
from ipc_bench.engine.config import ModelConfig, SchedulerConfig
from ipc_bench.engine.model_runner import ModelRunner
from ipc_bench.engine.pipeline import PipelineScheduler
from ipc_bench.engine.scheduler import AsyncScheduler, Scheduler
from ipc_bench.engine.workloads import SteadyDecodeWorkload
from ipc_bench.harness.scenario import (ScenarioOptions, steady_case_max_steps,
                                        steady_case_sim, steady_cases, steady_max_steps)
from ipc_bench.harness.steady_steps import simulate_steady_steps


def real_windowed_steps_in_all(b: int, budget: int, warmup: int, steps: int, *,
                               pp: int = 0, num_spec_tokens: int = 0) -> int:
    """As ``real_steps_in_all`` with steps in flight, as ``async_loop`` runs them:
    ``pp`` stages' micro-batches (``PipelineScheduler``, ``pp`` in flight, send), else
    async scheduling (``AsyncScheduler``, two in flight, cached; ``num_spec_tokens``
    drafts at the null model's acceptance). A counted step is known when it is
    scheduled, so the steps in all end with the last counted one sent."""
    cfg = SchedulerConfig(max_num_seqs=b, max_num_batched_tokens=budget, max_model_len=4096,
                          num_blocks=(b + 1) * 256, num_spec_tokens=num_spec_tokens)
    policy = "send" if pp else "cached"
    sched = PipelineScheduler(cfg, policy, pp=pp) if pp else AsyncScheduler(cfg, policy)
    runner, depth = ModelRunner(cfg, ModelConfig(), policy), pp or 2
    workload = SteadyDecodeWorkload(b, seed=0, vocab_size=ModelConfig().vocab_size)
    in_flight: collections.deque = collections.deque()
    seq = counted = 0
    while True:
        if len(in_flight) < depth:
            for r in workload.arrivals(sched.step):
                sched.add_request(r.req_id, r.index, r.prompt_token_ids, r.max_tokens)
            plan = sched.schedule()
            if plan is not None:
                out = runner.execute_model(sched.build_scheduler_output(plan))
                in_flight.append((plan, out))
                if seq >= warmup and plan.is_decode_only:
                    counted += 1
                    if counted == steps:
                        return seq + 1
                seq += 1
                if len(in_flight) < depth:
                    continue
        plan, out = in_flight.popleft()
        finished = sched.update_from_output(plan, out)
        if finished:
            workload.on_finished(len(finished), plan.step)


def real_steps_in_all(b: int, budget: int, warmup: int, steps: int) -> int:
    """The steps a real scheduler and null-model runner take, in one process, until
    ``steps`` pure-decode steps past ``warmup`` are counted (as the scheduler loop)."""
    cfg = SchedulerConfig(max_num_seqs=b, max_num_batched_tokens=budget,
                          max_model_len=4096, num_blocks=(b + 1) * 256)
    sched, runner = Scheduler(cfg, "cached"), ModelRunner(cfg, ModelConfig(), "cached")
    workload = SteadyDecodeWorkload(b, seed=0, vocab_size=ModelConfig().vocab_size)
    counted = 0
    while True:
        for r in workload.arrivals(sched.step):
            sched.add_request(r.req_id, r.index, r.prompt_token_ids, r.max_tokens)
        plan = sched.schedule()
        finished = sched.update_from_output(
            plan, runner.execute_model(sched.build_scheduler_output(plan)))
        if finished:
            workload.on_finished(len(finished), plan.step)
        if plan.step >= warmup and plan.is_decode_only:
            counted += 1
            if counted == steps:
                return plan.step + 1


# budget 300 for 256 requests: a replacement's prompt takes several steps (its last
# token alone counts as a decode, as SchedulePlan.is_decode_only says)
@pytest.mark.parametrize("b,budget,warmup,steps,steps_in_all", [
    (4, 8192, 5, 30, 35), (16, 64, 5, 20, 64), (64, 8192, 10, 2000, 2087),
    (256, 300, 10, 1000, 2551)])
def test_the_simulation_takes_the_steps_a_real_scheduler_takes(b, budget, warmup, steps,
                                                               steps_in_all):
    sim = simulate_steady_steps(b, seed=0, max_num_batched_tokens=budget,
                                max_model_len=4096, warmup_steps=warmup,
                                counted_steps=steps, patience=10 * steps)
    assert (sim.steps_in_all, sim.counted, sim.complete) == (steps_in_all, steps, True)
    assert real_steps_in_all(b, budget, warmup, steps) == steps_in_all


def _case(b: int, steps: int, warmup: int, **overrides):
    opts = ScenarioOptions(steps=steps, warmup_steps=warmup, codecs=["msgpack"],
                           policies=["cached"], floor=False, scheduler_overrides=overrides)
    (case,) = steady_cases(opts, "decode-steady", [b])
    return case


def test_the_cap_is_sized_from_the_simulated_mixed_steps():
    # 128 requests at 144 tokens a step: first prompts computed in 315 steps, 400
    # counted by step 947, 232 mixed past both: 315 + 400 + 2 * (232 + 10)
    case = _case(128, 400, 5, max_num_batched_tokens=144)
    sim = steady_case_sim(case)
    assert (sim.first_prefill_steps, sim.steps_in_all) == (315, 947)
    assert case.max_steps == steady_max_steps(400, 5, 315, 232) == 1199
    # 256 requests, 50 counted after 5 warm-up: none finishes, 5 prefill steps
    assert _case(256, 50, 5).max_steps == 5 + 50 + 2 * 10
    # --pp N counts the prefill and the mixed steps N times
    assert steady_max_steps(400, 5, 315, 232, pp=2) == 630 + 400 + 2 * (464 + 10)


def test_the_cap_is_computed_with_the_drafts():
    case = _case(1024, 1000, 100)
    (spec,) = with_spec_decoding([case], [3], None)
    # 3 drafts at 0.7: 2.53 tokens a decode, 4 of budget: more finishes, fewer pure steps
    assert (case.max_steps, spec.max_steps) == (2384, 13048)
    assert spec.max_steps == steady_max_steps(
        1000, 100, steady_case_sim(spec).first_prefill_steps,
        steady_case_sim(spec).steps_in_all - 100 - 1000)


def test_a_batch_the_old_cap_cut_short_counts_every_step(tmp_path):
    # the cap was warm-up + prefill + steps + 2 * (steps * B // 1000 + 10) = 842 steps,
    # and this case counts its 400th pure-decode step at step 946
    run = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "bench.py", "--scenario", "decode-steady", "--num-running", "128",
         "--max-num-batched-tokens", "144", "--steps", "400", "--warmup-steps", "5",
         "--codecs", "msgpack", "--policies", "cached", "--no-single-process",
         "--no-floor", "--output", str(run), "--quiet"],
        cwd=REPO, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    (case,) = json.loads((run / "summary.json").read_text())["cases"]
    assert (case["num_steps"], case["num_total_steps"], case["max_steps"]) == (400, 947, 1199)


# 64 requests, budget 300 (first prompts in 34 steps), 600 counted after 5 warm-up: the
# single-stage synchronous schedule counts its last step at 638 (the simulation's figure)
@pytest.mark.parametrize("pp,num_spec_tokens,steps_in_all,max_steps", [
    (2, 0, 633, 704), (4, 0, 633, 788), (0, 0, 638, 662), (0, 1, 645, 717)])
def test_pp_and_async_cases_count_every_step_within_their_cap(pp, num_spec_tokens,
                                                              steps_in_all, max_steps):
    """``--pp N`` and ``--async-scheduling`` (with and without drafts): the cap, sized
    from the single-stage synchronous simulation, holds every step the case takes
    (``pp``: micro-batches of B / N requests see fewer finishes a step, so fewer mixed
    steps than one stage; async: a replacement admitted one step later at most, and
    with drafts, placeholders for a step in flight). The steps in all are those of the
    real schedulers, run as ``async_loop`` runs them, and match ``bench.py``'s
    ``num_total_steps`` for these cases."""
    case = _case(64, 600, 5, max_num_batched_tokens=300)
    assert steady_case_sim(case).steps_in_all == 638
    if num_spec_tokens:
        (case,) = with_spec_decoding([case], [num_spec_tokens], None)
    if pp:
        case = replace(case, labels={**case.labels, "pp": pp})
    assert steady_case_max_steps(case) == max_steps
    assert real_windowed_steps_in_all(64, 300, 5, 600, pp=pp,
                                      num_spec_tokens=num_spec_tokens) == steps_in_all
