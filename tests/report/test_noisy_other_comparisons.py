"""A significant tok/s verdict over cases whose step times carry "the machine may be
noisy" warnings got a caveat in cached against send's finding alone; another recorded
comparison's (``cached+async`` against ``cached``, an A/A pair's) carried only the rough
one. Every comparison's finding gets both the one way (``findings._caveated``), the
noisy one where its tok/s verdict calls the difference significant, each over its own
cases (``findings.comparison_pairs``); an ``overhead`` run's compares loop time alone."""

from __future__ import annotations

import pandas as pd
import pytest

from ipc_bench.report import findings
from test_findings_summary import _results
from test_noisy_steps_verdict_cell import NOISY

HOLM = dict(significant=True, p_value=0.001, p_adjusted=0.007, adjustment="holm",
            verdict="significant")
NOT = dict(significant=False, p_value=0.3, p_adjusted=1.0, adjustment="holm",
           verdict="not significant")
CAVEAT = (" 1 of its 6 cases' step times are noisy, as its warning says (Measurement "
          "warnings): the machine's noise can make a tok/s change significant on its own.")


def _metric(ratio: float, low: float, high: float, verdict: dict) -> dict:
    return dict(method="t", ratio_geomean=ratio, ratio_median=ratio, ratio_ci_low=low,
                ratio_ci_high=high, n_pairs=3, **verdict)


def _with_async(noisy: tuple[str, int] | None, of: str = "cached",
                arm: str = "cached+async"):
    """``_results()`` with an ``arm`` beside ``of`` in each repetition (cached+async
    beside cached; send' beside send), the case ``noisy`` (arm, repetition) warned of
    noisy step times."""
    res = _results()
    extra = res.cases[res.cases["policy"] == of].copy()
    extra["arm"] = arm
    extra["case_id"] = [f"{c}{arm}" for c in extra["case_id"]]
    cases = pd.concat([res.cases, extra], ignore_index=True)
    cases["warnings"] = [[NOISY] if (a, r) == noisy else []
                         for a, r in zip(cases["arm"], cases["repetition"])]
    res.cases = cases
    return res


def _comparison(tput: dict, step: dict, treatment: str = "cached+async") -> dict:
    return dict(workload="num_running=4", codec="msgpack", transport="ipc", model="null",
                baseline="cached", treatment=treatment, n_pairs=3,
                metrics=dict(output_tokens_per_s=tput, step_ns_mean=step))


def _line(res, c: dict, monkeypatch) -> str:
    monkeypatch.setattr(findings, "other_comparisons", lambda results: [c])
    (line,) = [f for f in findings.findings(res) if f" against {c['baseline']} " in f]
    return line


HEAD = ("At 4 running requests (msgpack), cached+async against cached over 3 paired "
        "repetitions: output tokens/s +10.0 % [+5.0, +15.0] % (significant after Holm (p "
        "0.001, adjusted 0.007)); mean step ")


def test_a_significant_tok_s_verdict_over_noisy_cases_says_so(monkeypatch):
    c = _comparison(_metric(1.1, 1.05, 1.15, HOLM), _metric(0.99, 0.95, 1.03, NOT))
    line = _line(_with_async(("cached+async", 1)), c, monkeypatch)
    assert line.startswith(HEAD) and line.endswith(")." + CAVEAT), line
    # a noisy case outside the comparison's arms (send's) is not its case
    assert _line(_with_async(("send", 1)), c, monkeypatch).endswith(").")


def test_a_significant_step_alone_or_no_noisy_case_adds_nothing(monkeypatch):
    step_only = _comparison(_metric(1.02, 0.97, 1.07, NOT), _metric(0.9, 0.85, 0.95, HOLM))
    assert "step times are noisy" not in _line(_with_async(("cached", 0)), step_only,
                                                monkeypatch)
    both = _comparison(_metric(1.1, 1.05, 1.15, HOLM), _metric(0.99, 0.95, 1.03, NOT))
    assert _line(_with_async(None), both, monkeypatch).endswith(").")


@pytest.mark.parametrize("metrics,out", [
    (dict(output_tokens_per_s=_metric(1.1, 1.05, 1.15, HOLM)), True),
    (dict(output_tokens_per_s=_metric(1.02, 0.97, 1.07, NOT)), False),
    # a summary written before Holm's p-values: its verdict as recorded
    (dict(output_tokens_per_s=dict(significant=True, verdict="significant: cached+async "
                                   "10.0 % higher than cached")), True),
    (dict(loop_step_ns_mean=_metric(1.1, 1.05, 1.15, HOLM)), False),
    ({}, False)])
def test_which_verdicts_call_tok_s_significant(metrics, out):
    assert findings._comparison_tput_significant(dict(metrics=metrics)) is out


def test_both_caveats_the_one_way():
    rough = ["only 1 counted step (< 100): figures are rough", NOISY]
    pairs = [({"num_steps": 1, "warnings": rough}, {"num_steps": 200, "warnings": []})]
    text = "x (significant after Holm (p 0.001, adjusted 0.007))."
    assert findings._caveated(text, pairs, True) == (
        text + " 1 of its 2 cases' figures are rough: only 1 counted step (< 100), as its "
        "warning says. 1 of its 2 cases' step times are noisy, as its warning says "
        "(Measurement warnings): the machine's noise can make a tok/s change significant "
        "on its own.")
    assert findings._caveated(text, pairs, False) == (
        text + " 1 of its 2 cases' figures are rough: only 1 counted step (< 100), as its "
        "warning says.")


def test_an_aa_pairs_significant_tok_s_over_noisy_cases_says_so(monkeypatch):
    c = dict(_comparison(_metric(1.1, 1.05, 1.15, HOLM), _metric(0.99, 0.95, 1.03, NOT),
                         treatment="send'"), baseline="send")
    assert _line(_with_async(("send", 2), "send", "send'"), c, monkeypatch) == (
        "At 4 running requests (msgpack), the A/A pair send' against send (one policy run "
        "twice) over 3 paired repetitions shows a significant difference in 1 of its 2 "
        "compared metrics: out tok/s (significant after Holm (p 0.001, adjusted 0.007)). "
        "The machine's noise alone produces verdicts here: read this run's verdicts with "
        "care. A/A shares, by the computation of send's against cached's: the "
        "SchedulerOutput path, send against send', is within noise of that of send': +0.00 "
        "µs per step, +0.00 % of the step of send' (send - send': [+0.00, +0.00] %, 95 % "
        "Student-t "
        "interval). This is " + findings.AA_SHARE_HOLDS_0 + "." + CAVEAT)
