"""``--num-running``'s one limit: every scenario that takes it is steady, and a steady
case's steps are checked by a simulation of at most ``MAX_SIMULATED_REQUESTS`` (20,000)
requests, so the option itself stops there, refused as it is parsed (one line, exit 2,
before any case is built), where it once took values up to 65,536 that the step check
refused later."""

from __future__ import annotations

import pytest

from ipc_bench import cli
from ipc_bench.cli.options import build_parser
from ipc_bench.engine.config import ConfigError
from ipc_bench.harness.scenario import (MAX_SIMULATED_REQUESTS, ScenarioOptions,
                                        check_steady_steps, discover)

WHY = "the most running requests the check of a steady case's steps simulates"

#: Every scenario that takes --num-running.
STEADY_SCENARIOS = ["decode-steady", "overhead", "pp", "step-time", "tp-broadcast"]


def test_the_steady_scenarios_are_those_that_take_num_running():
    scenarios = discover()
    assert sorted(n for n, m in scenarios.items() if "num_running" in m.OPTIONS) \
        == STEADY_SCENARIOS


@pytest.mark.parametrize("scenario", STEADY_SCENARIOS)
@pytest.mark.parametrize("given,shown", [("65536", "65,536"), ("20001", "20,001"),
                                         ("4,20001", "20,001")])
def test_more_than_the_simulation_draws_is_a_parse_error(scenario, given, shown, capsys,
                                                         monkeypatch):
    started = []
    monkeypatch.setattr("ipc_bench.cli.run._check_cases",
                        lambda *a, **k: started.append(a))
    assert cli.main(["--scenario", scenario, "--num-running", given]) == 2
    err = capsys.readouterr().err
    assert err == ("bench.py: error: argument --num-running: must be at most 20,000 "
                   f"({WHY}), got {shown}\n")
    assert started == []


def test_the_limit_is_the_simulations():
    assert MAX_SIMULATED_REQUESTS == 20_000
    parser = build_parser()
    assert parser.parse_args(["--num-running", "20000"]).num_running == [20_000]
    help_text = " ".join(parser.format_help().split())
    assert "running requests per case (steady scenarios; 1 to 20,000)" in help_text


def test_a_case_built_past_the_cli_is_still_refused_by_the_step_check():
    case = discover()["decode-steady"].cases(ScenarioOptions(
        num_running=[20_001], steps=1000, codecs=["msgpack"], policies=["send"],
        single_process=False, scheduler_overrides={"max_num_batched_tokens": 200_000,
                                                   "max_num_seqs": 20_001}))[0]
    with pytest.raises(ConfigError) as info:
        check_steady_steps(case)
    assert str(info.value) == (
        "--num-running 20001: the check of a steady case's steps simulates at most 20,000 "
        "requests, fewer than the 20,001 of its first batch, so it simulated no step and "
        "cannot tell whether 1,000 counted steps fit (10 steps per counted step at most, "
        "past the warm-up and the first prompts' prefill); lower --num-running to 20000 "
        "or less (about 1,100 steps in all at 20,000)")
