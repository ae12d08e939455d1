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
