"""A finding's encode, decode and build clauses say what their figures are: where the run's
recorded comparison finds no significant difference after Holm's correction while the
pair table's (unadjusted) interval excludes 0 %, the clause claims no saving or cost
and says so, in the tokens/s clause's words; a difference with no interval (one
repetition, or fewer pairs than the method's interval needs) says that it has none."""

from __future__ import annotations

import pandas as pd

from ipc_bench.analysis import stats
from ipc_bench.report import findings
from test_metrics import _summary


def _where(workload: str) -> str:
    return "At 4 running requests"


def _results(rows: list[dict], ci_method: str = "t"):
    res = type("R", (), {})()
    res.cases = pd.DataFrame([dict(r, run_id="run") for r in rows])
    res.labels, res.metadata = ["num_running"], {"run": {"ci_method": ci_method}}
    return res


def _three_pairs() -> list[dict]:
    """Three repetitions: cached's encode 4 % to 17 % above send's in each (p 0.019
    before Holm's adjustment over the 7 timed metrics, 0.132 after), build, tokens/s
    and steps alike in both arms up to noise, decode (``_summary``'s) the same."""
    encode = {"send": [8000.0, 8400.0, 7600.0], "cached": [8800.0, 9500.0, 8200.0]}
    rows = []
    for rep, tps in enumerate(((100_000.0, 101_000.0), (90_000.0, 89_000.0),
                               (110_000.0, 111_000.0))):
        sign = -1 if rep == 1 else 1
        for policy, tok in zip(("send", "cached"), tps):
            off = sign if policy == "cached" else 0
            s = _summary(policy, rep, tok, 250_000.0 + rep * 1000 + 500 * off)
            s["encode_ns_per_step"] = encode[policy][rep]
            s["build_ns_per_step"] = 3000.0 + rep * 100 + 50 * off
            rows.append(s)
    return rows


def test_a_time_difference_not_significant_after_holm_claims_no_saving_or_cost():
    rows = _three_pairs()
    (c,) = stats.compare_cases(rows)
    m = c["metrics"]["encode_ns_per_step"]
    # the record the finding reads: unadjusted interval above 1, adjusted p above 0.05
    assert (round(m["p_value"], 3), round(m["p_adjusted"], 3), m["significant"]) == (
        0.019, 0.132, False)
    assert m["ratio_ci_low"] > 1
    res = _results(rows)
    tables = findings._pair_tables(res)
    (key,) = tables["tput"]
    recorded = {k: dict(v, family_size=len(c["family"])) for k, v in c["metrics"].items()}
    assert findings._saving_clauses(tables, key, (), recorded)[1] == (
        "changes encode time per step of the SchedulerOutput and the ModelRunnerOutput by "
        "+10.3 % [+4.0, +17.0] % (send - cached: -0.83 µs; inconclusive: not significant "
        "after Holm (p 0.019, adjusted 0.132))")
    # without the run's recorded comparison (a report of several runs): the pair
    # table's interval alone, which the clause uses and docs/models-and-gpu.md names
    assert findings._saving_clauses(tables, key)[1] == (
        "spends 0.83 µs more per step than send encoding the SchedulerOutput and the "
        "ModelRunnerOutput (+10.3 % [+4.0, +17.0] %)")
    # the whole finding: the tokens/s verdict from the same record
    text = findings._pair_finding(res.cases, tables, key, _where, False,
                                  recorded={key: recorded})
    assert ("; inconclusive: not significant after Holm (p 0.019, adjusted 0.132)), "
            "decodes them") in text
    # the family the correction is over, and that the interval is unadjusted: once, in
    # the legend under the findings
    assert ("by Holm's correction over the 7 timed metrics its comparison tests together"
            in findings.findings_legend([text], "t", {key: recorded}))


def test_a_time_difference_significant_after_holm_stays_a_saving_or_cost():
    rows = _three_pairs()
    (c,) = stats.compare_cases(rows)
    m = dict(c["metrics"]["encode_ns_per_step"], significant=True, p_adjusted=0.04,
             family_size=7)
    res = _results(rows)
    tables = findings._pair_tables(res)
    (key,) = tables["tput"]
    assert findings._saving_clauses(tables, key, (), {"encode_ns_per_step": m})[1] == (
        "spends 0.83 µs more per step than send encoding the SchedulerOutput and the "
        "ModelRunnerOutput (+10.3 % [+4.0, +17.0] %; significant after Holm (p 0.019, "
        "adjusted 0.040))")
    # without the run's verdict (a report of several runs) the clause claims no Holm
    assert findings._saving_clauses(tables, key)[1] == (
        "spends 0.83 µs more per step than send encoding the SchedulerOutput and the "
        "ModelRunnerOutput (+10.3 % [+4.0, +17.0] %)")
    assert findings._short_holm(dict(p_value=0.0004, p_adjusted=0.004), "significant") == (
        "significant after Holm (p <0.001, adjusted 0.004)")


def test_too_few_pairs_for_the_methods_interval_say_so():
    rows = _three_pairs()
    res = _results(rows, ci_method="sign")
    tables = findings._pair_tables(res)
    (key,) = tables["tput"]
    assert findings._saving_clauses(tables, key)[1:] == [
        "spends 0.80 µs more per step than send encoding the SchedulerOutput and the "
        "ModelRunnerOutput (3 repetitions, no interval: a sign-test interval needs >= 6 "
        "pairs)",
        "decodes them in the same time per step as send (0.00 µs difference; 3 "
        "repetitions, no interval: a sign-test interval needs >= 6 pairs)",
        "spends 0.05 µs more per step than send building the SchedulerOutput and the "
        "ModelRunnerOutput (3 repetitions, no interval: a sign-test interval needs >= 6 "
        "pairs)"]
    text = findings._pair_finding(res.cases, tables, key, _where, False)
    assert "output tokens/s changes by +0.9 % (over 3 repetitions, no " \
        "interval: a sign-test interval needs >= 6 pairs; geometric means " \
        "99,666 → 99,926 tok/s)." in text


def test_one_repetitions_time_clause_says_it_has_no_interval():
    rows = [r for r in _three_pairs() if r["repetition"] == 0]
    res = _results(rows)
    tables = findings._pair_tables(res)
    (key,) = tables["tput"]
    assert findings._saving_clauses(tables, key)[1:] == [
        "spends 0.80 µs more per step than send encoding the SchedulerOutput and the "
        "ModelRunnerOutput (one repetition, no interval)",
        "decodes them in the same time per step as send (0.00 µs difference; one "
        "repetition, no interval)",
        "spends 0.05 µs more per step than send building the SchedulerOutput and the "
        "ModelRunnerOutput (one repetition, no interval)"]


def test_one_repetitions_zero_difference_reads_as_no_difference():
    """A difference that prints as 0.00 µs is no saving and no cost (it read ``saves 0.00
    µs per step encoding ...``, or ``spends 0.00 µs more`` a few ns the other way), as
    equal bytes read ``sends as many bytes per step``."""
    for cached_encode in (8000.0, 8004.0, 7996.0):  # ns; send's: 8,000
        rows = [r for r in _three_pairs() if r["repetition"] == 0]
        next(r for r in rows if r["policy"] == "cached")["encode_ns_per_step"] = cached_encode
        tables = findings._pair_tables(_results(rows))
        (key,) = tables["tput"]
        assert findings._saving_clauses(tables, key)[1] == (
            "encodes the SchedulerOutput and the ModelRunnerOutput in the same time per "
            "step as send (0.00 µs difference; one repetition, no interval)"), cached_encode
    rows = [r for r in _three_pairs() if r["repetition"] == 0]
    next(r for r in rows if r["policy"] == "cached")["encode_ns_per_step"] = 8006.0
    tables = findings._pair_tables(_results(rows))
    assert findings._saving_clauses(tables, next(iter(tables["tput"])))[1] == (
        "spends 0.01 µs more per step than send encoding the SchedulerOutput and the "
        "ModelRunnerOutput (one repetition, no interval)")
