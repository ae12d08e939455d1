"""A steady case's steps in all (``harness.steady_steps``): the simulation of its
schedule gives the step at which a real scheduler and runner count their last
pure-decode step; the cap on the steps in all (``scenario.steady_case_max_steps``) is
sized from it, with drafts when ``--num-spec-tokens`` gives some; a batch too large to
count its steps is refused up front (``scenario.check_steady_steps``; its line through
``bench.py`` is in ``tests/cli/test_bad_input.py``)."""

from __future__ import annotations

import collections
import functools
import json
from dataclasses import replace

import pytest

from ipc_bench.cli import main
from ipc_bench.cli.run import with_spec_decoding
from ipc_bench.engine.config import ConfigError, ModelConfig, SchedulerConfig
from ipc_bench.engine.messages import SchedulerOutput
from ipc_bench.engine.model_runner import ModelRunner
from ipc_bench.engine.pipeline import PipelineScheduler
from ipc_bench.engine.scheduler import AsyncScheduler, Scheduler
from ipc_bench.engine.workloads import SteadyDecodeWorkload
from ipc_bench.harness.scenario import (ScenarioOptions, check_steady_steps,
                                        steady_case_max_steps,
                                        steady_case_sim, steady_cases, steady_max_steps)
from ipc_bench.harness.steady_steps import simulate_steady_steps
from ipc_bench.wire.codecs import make_codec


def real_windowed_steps_in_all(b: int, budget: int, warmup: int, steps: int, *,
                               pp: int = 0, num_spec_tokens: int = 0,
                               model: ModelConfig = ModelConfig()) -> int:
    """As ``real_steps_in_all`` with steps in flight, as ``async_loop`` runs them:
    ``pp`` stages' micro-batches (``PipelineScheduler``, ``pp`` in flight, send), else
    async scheduling (``AsyncScheduler``, two in flight, cached; ``num_spec_tokens``
    drafts at ``model``'s acceptance), each ``SchedulerOutput`` through the msgpack codec
    (the runner of a case holds its own copy: an in-place update of the scheduler's
    lists, placeholders replaced by the sampled ids, would otherwise reach it). A counted
    step is known when it is
    scheduled, so the steps in all end with the last counted one sent."""
    return _windowed_steps_in_all(b, budget, warmup, steps, pp, num_spec_tokens, model)


@functools.cache  # deterministic: a reference that two tests compare with is run once
def _windowed_steps_in_all(b: int, budget: int, warmup: int, steps: int, pp: int,
                           num_spec_tokens: int, model: ModelConfig) -> int:
    """``real_windowed_steps_in_all``, its arguments all given (one cache entry each)."""
    cfg = SchedulerConfig(max_num_seqs=b, max_num_batched_tokens=budget, max_model_len=4096,
                          num_blocks=(b + 1) * 256, num_spec_tokens=num_spec_tokens)
    policy = "send" if pp else "cached"
    sched = PipelineScheduler(cfg, policy, pp=pp) if pp else AsyncScheduler(cfg, policy)
    # as the case's runner (supervisor: RunnerConfig.async_scheduling): under async
    # scheduling it keeps its own drafts, where the scheduler sends placeholders
    runner = ModelRunner(cfg, model, policy, async_scheduling=not pp)
    depth = pp or 2
    codec = make_codec("msgpack", SchedulerOutput)
    workload = SteadyDecodeWorkload(b, seed=0, vocab_size=ModelConfig().vocab_size)
    in_flight: collections.deque = collections.deque()
    seq = counted = 0
    while True:
        if len(in_flight) < depth:
            for r in workload.arrivals(sched.step):
                sched.add_request(r.req_id, r.index, r.prompt_token_ids, r.max_tokens)
            plan = sched.schedule()
            if plan is not None:  # through the codec: the runner keeps no shared list
                so = codec.decode(codec.encode(sched.build_scheduler_output(plan)))
                in_flight.append((plan, runner.execute_model(so)))
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
    assert main(["--scenario", "decode-steady", "--num-running", "128",
                 "--max-num-batched-tokens", "144", "--steps", "400", "--warmup-steps", "5",
                 "--codecs", "msgpack", "--policies", "cached", "--no-single-process",
                 "--no-floor", "--output", str(run), "--quiet"]) == 0
    (case,) = json.loads((run / "summary.json").read_text())["cases"]
    assert (case["num_steps"], case["num_total_steps"], case["max_steps"]) == (400, 947, 1199)


# pp: micro-batches of B / N requests, each decoding every N steps, see fewer finishes a
# step than one stage (2551 steps for 256 at budget 300); B = 5 at pp 4 fills 3 lanes (2,
# 2, 1 requests: the fourth step finds nothing to schedule); async: a replacement is
# admitted a step later (2552)
@pytest.mark.parametrize("b,budget,warmup,steps,pp,async_scheduling,steps_in_all,lanes", [
    (64, 300, 5, 600, 2, False, 633, 2), (64, 300, 5, 600, 4, False, 633, 4),
    (64, 8192, 10, 2000, 2, False, 2027, 2), (64, 8192, 10, 2000, 4, False, 2010, 4),
    (256, 300, 10, 1000, 2, False, 1162, 2), (256, 300, 10, 1000, 4, False, 1138, 4),
    (128, 144, 5, 400, 4, False, 544, 4), (16, 64, 5, 20, 4, False, 61, 4),
    (5, 8192, 2, 700, 4, False, 703, 3),
    (64, 8192, 10, 2000, 0, True, 2087, 1), (256, 300, 10, 1000, 0, True, 2552, 1),
    (128, 144, 5, 400, 0, True, 946, 1), (8, 64, 3, 900, 0, True, 924, 1)])
def test_the_simulation_takes_the_steps_of_pp_and_async_schedulers(
        b, budget, warmup, steps, pp, async_scheduling, steps_in_all, lanes):
    sim = simulate_steady_steps(b, seed=0, max_num_batched_tokens=budget,
                                max_model_len=4096, warmup_steps=warmup,
                                counted_steps=steps, patience=10 * steps, pp=pp or 1,
                                async_scheduling=async_scheduling)
    assert (sim.steps_in_all, sim.counted, sim.complete, sim.lanes) == (
        steps_in_all, steps, True, lanes)
    assert real_windowed_steps_in_all(b, budget, warmup, steps, pp=pp) == steps_in_all


# 64 requests, budget 300 (first prompts in 34 steps), 600 counted after 5 warm-up: the
# single-stage synchronous schedule counts its last step at 638; the pp and async cases
# run by bench.py take the same steps in all (num_total_steps) as these, the async case
# with one draft too (666: this reference took 645 while its runner, built without
# async scheduling, wrote the placeholder drafts and rejected every one, so requests
# finished later, first at step 315): within its cap (drafts are an estimate)
@pytest.mark.parametrize("pp,async_scheduling,num_spec_tokens,steps_in_all,max_steps", [
    (2, False, 0, 633, 654), (4, False, 0, 633, 657), (0, True, 0, 638, 662),
    (0, True, 1, 666, 715)])
def test_pp_and_async_cases_count_every_step_within_their_cap(
        pp, async_scheduling, num_spec_tokens, steps_in_all, max_steps):
    """The cap of a ``--pp N`` or ``--async-scheduling`` case (with and without drafts)
    is sized from its own simulation and holds every step the real schedulers take,
    run as ``async_loop`` runs them (was the single-stage synchronous simulation's,
    with the prefill and mixed steps counted N times under ``--pp``: 704 at N = 2, 788
    at N = 4)."""
    case = replace(_case(64, 600, 5, max_num_batched_tokens=300),
                   async_scheduling=async_scheduling)
    if num_spec_tokens:
        (case,) = with_spec_decoding([case], [num_spec_tokens], None)
    if pp:
        case = replace(case, labels={**case.labels, "pp": pp})
    sim = steady_case_sim(case)
    assert steady_case_max_steps(case) == max_steps
    assert real_windowed_steps_in_all(64, 300, 5, 600, pp=pp, num_spec_tokens=num_spec_tokens,
                                      model=case.model) == steps_in_all
    if not num_spec_tokens:  # exact; with drafts an estimate
        assert sim.steps_in_all == steps_in_all
        prefill = sim.first_prefill_steps
        assert max_steps == steady_max_steps(600, 5, prefill,
                                             max(0, steps_in_all - prefill - 600))


def test_an_async_case_with_drafts_takes_the_reference_steps_in_both_processes(tmp_path):
    """``--async-scheduling --num-spec-tokens 1`` through ``bench.py``: the two-process
    case and the single-process one schedule the same steps (one schedule digest, which
    the token oracle relies on) as the in-process reference, 666 in all (the reference
    took 645 while its runner lacked the case's async scheduling)."""
    run = tmp_path / "run"
    assert main(["--scenario", "decode-steady", "--num-running", "64",
                 "--max-num-batched-tokens", "300", "--steps", "600", "--warmup-steps", "5",
                 "--codecs", "msgpack", "--policies", "cached", "--async-scheduling",
                 "--num-spec-tokens", "1", "--no-floor", "--output", str(run),
                 "--quiet"]) == 0
    cases = json.loads((run / "summary.json").read_text())["cases"]
    assert [(c["transport"], c["num_steps"], c["num_total_steps"]) for c in cases] == [
        ("ipc", 600, 666), ("inproc", 600, 666)]
    assert cases[0]["schedule_digest"] == cases[1]["schedule_digest"]
    assert cases[0]["token_digest"] == cases[1]["token_digest"]
    assert cases[0]["spec_acceptance"] == ModelConfig().spec_acceptance  # the reference's
    assert real_windowed_steps_in_all(64, 300, 5, 600, num_spec_tokens=1) == 666


def test_a_pp_case_is_judged_by_its_own_micro_batches():
    """4,096 requests, 1,000 counted: one stage sees about 3.2 finishes a step and is
    refused (about 12,000 steps in all past a cap of 10,101); at --pp 2 and 4 each step
    decodes a micro-batch of B / N and sees N times fewer, and the case counts its steps
    in 1,195 and 1,100 steps in all (was refused too: it was judged by the one-stage
    simulation)."""
    case = _case(4096, 1000, 100)
    with pytest.raises(ConfigError, match=r"^--num-running 4096: about 3\.2 requests "
                                          r"finish a step .* more than the cap of 10,101 "):
        check_steady_steps(case)
    for pp, steps_in_all, max_steps in [(2, 1195, 1310), (4, 1100, 1120)]:
        staged = replace(case, labels={**case.labels, "pp": pp})
        check_steady_steps(staged)
        assert (steady_case_sim(staged).steps_in_all, steady_case_max_steps(staged)) == (
            steps_in_all, max_steps)
