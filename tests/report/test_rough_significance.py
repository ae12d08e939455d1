"""A findings row whose verdict calls a difference significant while its cases counted
fewer steps than a case needs for figures that are not rough (``summary.MIN_STEPS``:
their warnings say ``figures are rough``, lower down) says so where it calls it
significant: the pair finding ends with a caveat, the summary table's verdict cell
carries it too; rows that call nothing significant, and cases of enough steps, keep
their words."""

from __future__ import annotations

import json

from analysis_run import run_bench
from fault_helpers import one_runner_mark
from ipc_bench import cli
from ipc_bench.analysis.summary import MIN_STEPS, ROUGH_WORDS, noise_warnings
from ipc_bench.report import findings
from ipc_bench.report.findings import SLOW_STEPS, SLOW_STEPS_CELL

ROUGH = ("only 1 counted step (< 100): step-time noise not measured (under 150: 3 blocks "
         "of 50) and figures are rough")
HOLM = ("output tokens/s changes by +2.0 % [+1.0, +3.0] % (over 3 repetitions, "
        "significant after Holm (p 0.001, adjusted 0.007)).")


def _pairs(*steps: int, rough: bool = True) -> list[tuple[dict, dict]]:
    cases = [{"num_steps": n, "warnings": [f"only {n} counted step{'s' * (n != 1)} "
                                           f"(< 100): {ROUGH_WORDS}"] if rough else []}
             for n in steps]
    return list(zip(cases[::2], cases[1::2]))


def test_the_rough_warning_is_the_one_the_caveat_reads():
    assert (MIN_STEPS, ROUGH_WORDS) == (100, "figures are rough")
    assert noise_warnings({"num_steps": 1})[0] == ROUGH


def test_a_significant_finding_over_rough_cases_says_they_are_rough():
    assert findings._rough_caveat(HOLM, _pairs(1, 1, 1, 1)) == (
        HOLM + " Its cases' figures are rough: only 1 counted step each (< 100), as their "
        "warnings say.")
    assert findings._rough_caveat(HOLM, _pairs(1, 50)) == (
        HOLM + " Its cases' figures are rough: only 1 to 50 counted steps each (< 100), as "
        "their warnings say.")
    some = _pairs(50, 200) + _pairs(300, 400, rough=False)
    some[0][1]["warnings"] = []
    assert findings._rough_caveat(HOLM, some) == (
        HOLM + " 1 of its 4 cases' figures are rough: only 50 counted steps (< 100), as its "
        "warning says.")
    unadjusted = "cached changes output tokens/s by +2.0 % [+1.0, +3.0] % (over 3 " \
                 "repetitions, significant (unadjusted test))."
    assert findings._rough_caveat(unadjusted, _pairs(1, 1)).endswith(
        " Its cases' figures are rough: only 1 counted step each (< 100), as their "
        "warnings say.")
    assert findings._rough_caveat("significant after Holm", _pairs(1, 1), cell=True) == (
        "significant after Holm (rough: only 1 counted step each)")


def test_no_caveat_without_a_significant_verdict_or_a_rough_case():
    for text in ("x (not significant after Holm (p 0.040, adjusted 0.282)).",
                 "x (inconclusive: not significant after Holm (p 0.040, adjusted 0.282)).",
                 "x; no significant difference after Holm (p 0.6, adjusted 1.000)).",
                 "x (one repetition, no interval)."):
        assert findings._rough_caveat(text, _pairs(1, 1)) == text
    assert findings._rough_caveat(HOLM, _pairs(200, 200, rough=False)) == HOLM
    assert findings._rough_caveat(HOLM, []) == HOLM


def test_the_report_of_a_run_of_one_counted_step(tmp_path):
    run = tmp_path / "run"
    run_bench(run, ["--scenario", "decode-steady", "--num-running", "4", "--steps", "1",
                    "--warmup-steps", "2", "--codecs", "msgpack", "--no-single-process",
                    "--no-floor", "--repeat", "3"])
    summary = json.loads((run / "summary.json").read_text())
    assert {c["warnings"][0] for c in summary["cases"]} == {ROUGH}
    # the run's comparison finds its tokens/s change significant after Holm
    (comparison,) = summary["comparisons"]
    comparison["metrics"]["output_tokens_per_s"].update(
        significant=True, p_value=0.001, p_adjusted=0.007, verdict="significant")
    (run / "summary.json").write_text(json.dumps(summary))
    out = tmp_path / "rep"
    assert cli.main(["report", str(run), "--output", str(out), "--no-figures"]) == 0
    md = (out / "report.md").read_text().splitlines()
    (row,) = [ln for ln in md if ln.startswith(f"| num_running=4 | msgpack{one_runner_mark()} | ")
              and "%" in ln.split(" | ")[2]]
    # the cell adds SLOW_STEPS_CELL exactly where the note under the table says that a few
    # slow steps move this row's mean (how three single steps land is the machine's)
    slow = [ln for ln in md if "num_running=4 (msgpack): the tok/s change" in ln
            and SLOW_STEPS in ln]
    assert row.split(" | ")[4] == ("significant after Holm (rough: only 1 counted step each)"
                                   + (SLOW_STEPS_CELL if slow else ""))
    (bullet,) = [ln for ln in md
                 if ln.startswith(f"- At 4 running requests (msgpack{one_runner_mark()}), cached")]
    assert "(over 3 repetitions, significant after Holm (p 0.001, adjusted 0.007); " in bullet
    assert bullet.endswith(" Its cases' figures are rough: only 1 counted step each (< 100), "
                           "as their warnings say.")
