"""A summary row's tok/s verdict that calls the change significant while the pair's
cases carry warnings that their step times are noisy (``summary.step_spread_warnings``:
"the machine may be noisy") says so in its cell, and the pair's finding line with it:
on a shared machine two runs of one command a minute apart gave +21.8 % inconclusive
and -10.4 % [-15.2, -5.3] % `significant after Holm`, the cell bare while 31 of the
run's 60 cases carried those warnings (pairing by repetition does not cancel a load
that comes and goes). One qualifier a cell: where the slow steps' (``SLOW_STEPS_CELL``)
or the rough one already applies, it alone."""

from __future__ import annotations

import pytest

from ipc_bench.report import findings
from test_findings_summary import _results
from test_slow_steps_verdict_cell import _slow_send

NOISY = ("the standard deviation of 50-step mean step times is 13.8 % of their mean "
         "(> 10 %): the machine may be noisy")
SKEWED = ("the mean step is 1.59x the median (451.4 against 284.4 µs, > 1.5x): long "
          "steps spread through the case raise its mean and lower its tok/s: the machine "
          "may be noisy")
FLOOR = ("the standard deviation of 50-step mean floor step times is 52.1 % of their "
         "mean (> 10 %): the machine may be noisy, and the floor tok/s and x floor with it")
STALL = ("counted step 141 (steps.csv seq) took 4.1 ms, 106x the median step, 25 % of the "
         "counted steps' time: a stall (the process did not run: stopped, preempted on a "
         "busy machine or paused with its VM), which the mean step, out tok/s and the "
         "comparisons hold; out tok/s without it: 98,143")
#: the run's recorded comparison of the pair's tokens/s: significant after Holm
HOLM = {"adjustment": "holm", "p_value": 0.005, "p_adjusted": 0.032, "significant": True,
        "verdict": "significant"}
KEY = ("num_running=4", "msgpack", "ipc", "null")
LINE_END = ("(over 3 repetitions, significant after Holm (p 0.005, adjusted 0.032); "
            "geometric means 56,533 → 69,046 tok/s).")


def _with_warnings(res, marks: dict[tuple[str, int], list]):
    """``res`` with the ``warnings`` of the cases (policy, repetition) in ``marks``, the
    others none."""
    cases = res.cases
    cases["warnings"] = [marks.get((p, r), []) for p, r in
                         zip(cases["policy"], cases["repetition"])]
    return res


@pytest.fixture
def holm(monkeypatch):
    """The run's comparison calls the tokens/s change significant after Holm."""
    monkeypatch.setattr(findings, "recorded_metrics",
                        lambda results: {KEY: {"output_tokens_per_s": dict(HOLM)}})


def _pair_line(items) -> str:
    (line,) = [f for f in items if "output tokens/s changes by" in f]
    return line


def test_a_significant_verdict_over_noisy_steps_says_so_in_its_cell_and_line(holm):
    items = findings.findings(_with_warnings(
        _results(), {("send", 1): [NOISY], ("cached", 2): [NOISY, SKEWED]}))
    (row,) = items.summary[1]
    assert row[3:5] == ["+22.1 % [+15.3, +29.4] %",
                        "significant after Holm (2 of its 6 cases' step times noisy: "
                        "Measurement warnings)"]
    assert _pair_line(items).endswith(
        f"{LINE_END} 2 of its 6 cases' step times are noisy, as their warnings say "
        "(Measurement warnings): the machine's noise can make a tok/s change significant "
        "on its own.")
    # the last finding counts the same cases
    assert items[-1].startswith("2 of 6 cases carry measurement warnings on their steps")


def test_one_noisy_case_and_all_of_them(holm):
    items = findings.findings(_with_warnings(_results(), {("cached", 0): [SKEWED]}))
    assert items.summary[1][0][4] == ("significant after Holm (1 of its 6 cases' step "
                                      "times noisy: Measurement warnings)")
    assert _pair_line(items).endswith(
        f"{LINE_END} 1 of its 6 cases' step times are noisy, as its warning says "
        "(Measurement warnings): the machine's noise can make a tok/s change significant "
        "on its own.")
    every = {(p, r): [NOISY] for p in ("send", "cached") for r in range(3)}
    items = findings.findings(_with_warnings(_results(), every))
    assert items.summary[1][0][4] == ("significant after Holm (all 6 of its cases' step "
                                      "times noisy: Measurement warnings)")
    assert _pair_line(items).endswith(
        f"{LINE_END} Its cases' step times are noisy, as their warnings say (Measurement "
        "warnings): the machine's noise can make a tok/s change significant on its own.")


def test_other_warnings_or_a_verdict_not_significant_add_nothing(holm):
    # a noisy floor and a stall are not the step times' noise warnings
    items = findings.findings(_with_warnings(
        _results(), {("send", 0): [FLOOR], ("cached", 1): [STALL]}))
    assert items.summary[1][0][4] == "significant after Holm"
    assert _pair_line(items).endswith(LINE_END)


def test_the_unadjusted_verdict_is_qualified_and_one_not_significant_is_not():
    items = findings.findings(_with_warnings(_results(), {("send", 1): [NOISY]}))
    assert items.summary[1][0][4] == ("significant (unadjusted test) (1 of its 6 cases' "
                                      "step times noisy: Measurement warnings)")
    # tok/s all over the place: inconclusive, nothing added to cell or line
    res = _slow_send((458_200.0, 460_000.0, 455_000.0), (39_250.0, 69_000.0, 120_000.0))
    items = findings.findings(_with_warnings(res, {("send", 1): [NOISY]}))
    # no noise or slow-step qualifier; the interval is too wide for the path share
    assert items.summary[1][0][4] == (
        "inconclusive (interval beyond 1.1x either way); the tok/s interval spans a "
        "factor of 3.99 either way of its centre, more than the 1.16 % change (cached "
        "faster) the SchedulerOutput path share implies: this run cannot tell a change "
        "of that size from none in tokens/s")
    assert "step times are noisy" not in _pair_line(items)


def test_one_qualifier_where_the_slow_steps_one_applies():
    res = _slow_send((458_200.0, 460_000.0, 455_000.0), (39_250.0, 39_100.0, 39_500.0))
    items = findings.findings(_with_warnings(res, {("send", 1): [SKEWED]}))
    assert items.summary[1][0][4] == ("significant (unadjusted test) (of mean steps, which "
                                      "a few slow steps move: the note under the table)")
    # the line has no slow-steps words: it gets the caveat
    assert _pair_line(items).endswith(
        " 1 of its 6 cases' step times are noisy, as its warning says (Measurement "
        "warnings): the machine's noise can make a tok/s change significant on its own.")


def test_one_qualifier_where_the_rough_one_applies(holm):
    res = _with_warnings(_results(), {
        ("send", 0): ["only 50 counted steps (< 100): step-time noise not measured (under "
                      "150: 3 blocks of 50) and figures are rough"],
        ("cached", 1): [NOISY]})
    res.cases.loc[(res.cases["policy"] == "send") & (res.cases["repetition"] == 0),
                  "num_steps"] = 50
    items = findings.findings(res)
    assert items.summary[1][0][4] == "significant after Holm (rough: only 50 counted steps)"
    # the line says both, each of its own cases
    assert _pair_line(items).endswith(
        f"{LINE_END} 1 of its 6 cases' figures are rough: only 50 counted steps (< 100), "
        "as its warning says. 1 of its 6 cases' step times are noisy, as its warning says "
        "(Measurement warnings): the machine's noise can make a tok/s change significant "
        "on its own.")


def test_the_caveat_reads_the_lines_the_report_adds_and_skips_a_replays_block_cv():
    pairs = [({"case_id": "a", "warnings": []}, {"case_id": "b", "warnings": float("nan")})]
    added = {"b": ["across the 3 repetitions of its arm, its 50-step block means vary by a "
                   "median 46.2 % (`step_ns_rep_block_cv`, > 10 %): the machine may be "
                   "noisy; this repetition stands out: its blocks sit a median 52.0 % "
                   "from the others'"]}
    assert findings._noisy_caveat("significant after Holm", pairs, cell=True,
                                  added=added) == (
        "significant after Holm (1 of its 2 cases' step times noisy: Measurement "
        "warnings)")
    assert findings._noisy_caveat("significant after Holm", pairs, cell=True) == \
        "significant after Holm"
    # a trace replay's recorded block CV moves with its batches: not counted
    replay = [({"trace": "azure-conv:300", "warnings": [NOISY]},
               {"trace": "azure-conv:300", "warnings": []})]
    assert findings._noisy_caveat("significant after Holm", replay) == \
        "significant after Holm"
    # nothing significant: as it is
    assert findings._noisy_caveat("not significant after Holm", pairs, added=added) == \
        "not significant after Holm"
