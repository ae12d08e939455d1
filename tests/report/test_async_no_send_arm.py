"""An ``--async-scheduling`` run's findings say why it has no send arm, in the words
of the command line's refusal of ``--async-scheduling --policies send`` (one text,
``engine.config.ASYNC_CACHED_ONLY``); a run with a send arm has no such line."""

from __future__ import annotations

import pandas as pd
import pytest

from ipc_bench.analysis.results import Results
from ipc_bench.cli.options import UsageError
from ipc_bench.report import findings
from test_metrics import _summary

NO_SEND_ARM = ("No send arm: --async-scheduling runs the cached policy only (under send "
               "the ids sampled at step n are unknown when step n+1 is scheduled).")


def _results(arms: tuple[tuple[str, str, bool], ...]) -> Results:
    """One run of two repetitions of each (policy, arm, async) in ``arms``."""
    rows = []
    for rep in range(2):
        for policy, arm, is_async in arms:
            s = _summary(policy, rep, 60_000.0 + 1_000 * rep, 250_000.0)
            s.update(arm=arm, async_scheduling=is_async, run_id="run",
                     case_id=f"num_running=4/{arm}/msgpack#{rep}")
            rows.append(s)
    empty = pd.DataFrame(columns=["run_id", "case_id"])
    return Results(cases=pd.DataFrame(rows), steps=empty, requests=empty, floor=empty,
                   itl=empty, metadata={"run": {"cases": [{"labels": {"num_running": 4}}]}},
                   status={"run": "complete"}, problems={"run": []}, paths={"run": "run"})


def test_an_async_run_says_why_it_has_no_send_arm():
    lines = findings.findings(_results((("cached", "cached", False),
                                        ("cached", "cached+async", True))))
    assert lines[0] == NO_SEND_ARM
    assert lines.count(NO_SEND_ARM) == 1


def test_a_run_with_a_send_arm_or_no_async_case_has_no_such_line():
    for arms in ((("send", "send", False), ("cached", "cached", False)),
                 (("cached", "cached", False),)):
        assert NO_SEND_ARM not in findings.findings(_results(arms))


def test_the_findings_line_and_the_refusal_are_one_text():
    from ipc_bench.cli.options import build_parser
    from ipc_bench.cli.run import _scenario_options

    args = build_parser().parse_args(["--scenario", "decode-steady", "--async-scheduling",
                                      "--policies", "send,cached"])
    with pytest.raises(UsageError) as refused:
        _scenario_options(args)
    assert str(refused.value) == NO_SEND_ARM[len("No send arm: "):-1] + ": use --policies cached"
