"""``scripts/gpu_check.py``'s stage limits under ``--budget-s``: on the CPU the fixed
limits (stage 0's, the smoke and async stages') stretch in proportion to a budget above
the default, and a smaller budget keeps them; on CUDA they stay the GPU's sizing (the
smoke stage at most 90 s, as the check promises)."""

from __future__ import annotations

from script_module import load_script

gpu_check = load_script("gpu_check")


def test_a_larger_budget_stretches_the_fixed_limits_in_proportion():
    assert gpu_check.limit_scale(gpu_check.BUDGET_S, False) == 1.0
    assert gpu_check.limit_scale(100.0, False) == 1.0  # a smaller budget keeps them
    assert gpu_check.limit_scale(600.0, False) == 2.0
    # device_check.sh passes the device's time left as the budget: on CUDA the smoke
    # stage stays at most SMOKE_LIMIT_S, stage 0 at most DECODE_STEP_LIMIT_S
    assert gpu_check.limit_scale(530.0, True) == 1.0


def test_a_stages_limit_is_its_own_times_the_scale_at_most_its_share():
    smoke = gpu_check.Stage("smoke", [], limit_s=90.0, weight=0.0)
    later = [gpu_check.Stage("b", [], weight=1.0)]
    assert gpu_check.stage_limit_s(smoke, later, 400.0) == 90.0
    assert gpu_check.stage_limit_s(smoke, later, 400.0, 2.0) == 180.0
    assert gpu_check.stage_limit_s(smoke, later, 150.0, 2.0) == 150.0  # what is left
    async_stage = gpu_check.Stage("async", [], limit_s=75.0, weight=1.0)
    assert gpu_check.stage_limit_s(async_stage, [], 400.0, 2.0) == 150.0
    assert gpu_check.stage_limit_s(async_stage, later, 200.0, 2.0) == 100.0  # its share
    unlimited = gpu_check.Stage("c", [], weight=3.0)
    assert gpu_check.stage_limit_s(unlimited, later, 400.0, 2.0) == 300.0


def test_the_help_says_a_larger_budget_stretches_the_limits():
    text = " ".join(gpu_check.build_parser().format_help().split())
    assert ("time budget of the whole check in seconds (default 300); on the CPU a "
            "larger one stretches the stages' own limits in proportion") in text
