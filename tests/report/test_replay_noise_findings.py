"""The report does not count a trace replay's block-CV warnings (recorded by runs before
``analysis.replay_noise``) as noise: neither in the line counting measurement warnings
nor in the floor finding's noisy floors; a steady case's count as before."""

from __future__ import annotations

import pandas as pd

from ipc_bench.report import findings

STEP = ("the standard deviation of 50-step mean step times is 29.0 % of their mean (> 10 %): "
        "the machine may be noisy")
FLOOR = ("the standard deviation of 50-step mean floor step times is 15.5 % of their mean "
         "(> 10 %): the machine may be noisy, and the floor tok/s and x floor with it")
ROUGH = "only 60 counted steps (< 100): figures are rough"


def _cases(traces: list) -> pd.DataFrame:
    """Four cases: ``a`` and ``b`` with both block-CV warnings, ``c`` with those and a
    rough-figures one, ``d`` with the floor's alone; ``traces`` their ``trace`` labels."""
    return pd.DataFrame({"case_id": ["a#0", "b#0", "c#0", "d#0"], "trace": traces,
                         "num_steps": [500, 500, 60, 500],
                         "warnings": [[STEP, FLOOR], [STEP, FLOOR], [STEP, FLOOR, ROUGH],
                                      [FLOOR]]})


def test_a_replays_block_cv_warnings_are_not_counted():
    replay = _cases(["azure-conv:300"] * 4)
    assert findings._noise_findings(replay) == [
        "1 of 4 cases carries measurement warnings on its steps: its times, and the "
        "intervals and verdicts drawn from them, are less certain than the figures alone "
        "say (all listed under Measurement warnings); bytes are exact whatever the load."]
    assert findings._noise_findings(replay.iloc[[0, 1, 3]]) == []


def test_a_steady_case_counts_as_before():
    steady = _cases([None] * 4)
    assert findings._noise_findings(steady) == [
        "3 of 4 cases carry measurement warnings on their steps: their times, and the "
        "intervals and verdicts drawn from them, are less certain than the figures alone "
        "say; 1 more case has a noisy floor alone: its x floor and floor tok/s are less "
        "certain, its times not (all listed under Measurement warnings); bytes are exact "
        "whatever the load."]
    assert findings._noise_findings(steady.drop(columns="trace")) == \
        findings._noise_findings(steady)
    # one replay among them: its lines alone are left out
    assert findings._noise_findings(_cases([None, "azure-conv:300", None, None]))[0] \
        .startswith("2 of 4 cases carry measurement warnings on their steps")


def test_a_replays_floor_is_not_called_noisy_for_its_spread():
    cv = [0.155, 0.2, 0.05, 0.3]
    steady = pd.DataFrame({"floor_step_ns_block_cv": cv})
    assert findings._noisy_floors(steady) == (
        " (3 of them with a noisy floor, whose 50-step block means vary over 10 % of "
        "their mean, as their warnings say, and their `x floor` with it)")
    replay = steady.assign(trace=["azure-conv:300"] * 4)
    assert findings._noisy_floors(replay) == ""
    mixed = steady.assign(trace=["azure-conv:300", None, None, "azure-conv:300"])
    assert findings._noisy_floors(mixed) == (
        " (1 of them with a noisy floor, whose 50-step block means vary over 10 % of "
        "their mean, as its warning says, and its `x floor` with it)")


def _run(cases: pd.DataFrame):
    from types import SimpleNamespace

    out = SimpleNamespace(cases=cases)
    out.finished = lambda: out
    return out


def test_the_measurement_warnings_say_what_a_replays_recorded_lines_are():
    from ipc_bench.report import blocks

    replay = _cases(["azure-conv:300"] * 4)
    got = blocks._warning_blocks(_run(replay), 2)
    assert got[-1] == ("p", "The block-CV lines of the trace replay cases above (50-step "
                            "mean step times, or floor step times, over 10 %) measure the "
                            "trace as well as the machine: a replay's batches change from "
                            "step to step by design, and its block means with them. The run "
                            "recorded them before replays were left out of that warning; "
                            "they are not counted as noise, and the findings give each "
                            "replay workload's noise measured across its repetitions.")
    assert got[2] == ("ul", [f"`a#0`: {STEP}", f"`a#0`: {FLOOR}", f"`b#0`: {STEP}",
                             f"`b#0`: {FLOOR}", f"`c#0`: {STEP}", f"`c#0`: {FLOOR}",
                             f"`c#0`: {ROUGH}", f"`d#0`: {FLOOR}"])
    # a steady run's warnings as before, without the note
    assert len(blocks._warning_blocks(_run(_cases([None] * 4)), 2)) == 3
    assert len(blocks._warning_blocks(_run(_cases([None] * 4).drop(columns="trace")),
                                      2)) == 3


def test_a_run_of_replays_counts_no_noisy_steps_in_the_machine_load():
    from ipc_bench.report import blocks

    cases = pd.DataFrame({"machine_busy_pct": [90.0, 80.0], "step_ns_block_cv": [0.3, 0.2],
                          "trace": ["azure-conv:300"] * 2})
    load = blocks.machine_load(cases, {"load_avg": [1.5], "cpu_count": 2})
    assert (load["noisy"], load["timed"], load["replays"]) == (0, 0, 2)
    assert blocks.machine_load_line("r", load) == (
        "`r`: the machine 85.0 % busy (mean `machine_busy_pct` over 2 cases); 1-minute load "
        "average 1.5 on 2 CPUs at its start; step-time noise not read from "
        "`step_ns_block_cv` (trace replays, whose block means move with the trace's "
        "batches: its findings give the noise measured across repetitions)")
    steady = blocks.machine_load(cases.drop(columns="trace"), {"cpu_count": 2})
    assert (steady["noisy"], steady["timed"], steady["replays"]) == (2, 2, 0)
    assert blocks.machine_load_line("r", steady).endswith(
        "noisy step times (`step_ns_block_cv` over 10 %) in 2 of 2 cases")
