"""The caveat of a finding that calls a difference significant over cases of fewer
counted steps than ``summary.MIN_STEPS`` (``findings._rough_caveat``: ``Its cases'
figures are rough: ...``) ends every comparison's finding that can say so, not cached
against send's alone: another recorded comparison's (``cached+async`` against
``cached``, an A/A pair's), a timed replay's wall-time clause, an ``overhead`` run's;
each over its own cases (``findings.comparison_pairs``)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from analysis_run import run_bench
from fault_helpers import one_runner_mark
from ipc_bench import cli
from ipc_bench.report import findings
from test_timed_no_floor import write_trace

ONE = " Its cases' figures are rough: only 1 counted step each (< 100), as their warnings say."
HOLM = dict(significant=True, p_value=0.001, p_adjusted=0.007, adjustment="holm")
NOT_HOLM = dict(significant=False, p_value=0.3, p_adjusted=1.0, adjustment="holm")
SAID = "significant after Holm (p 0.001, adjusted 0.007)"
FEW = ["--num-running", "4", "--steps", "1", "--warmup-steps", "2", "--codecs", "msgpack",
       "--no-floor", "--repeat", "3"]


def test_a_comparisons_cases_are_its_arms_in_its_repetitions():
    rows = [dict(case_id=f"{arm}#{rep}{codec}", policy=arm.split("+")[0].rstrip("'"),
                 arm=arm, workload="num_running=4", codec=codec, transport="ipc",
                 model="null", repetition=rep)
            for codec in ("msgpack", "pickle") for rep in range(3)
            for arm in ("send", "send'", "cached", "cached+async")]
    cases = pd.DataFrame(rows)
    c = dict(workload="num_running=4", codec="msgpack", transport="ipc", model="null",
             baseline="cached", treatment="cached+async", repetitions=[0, 2])
    assert [(t["case_id"], b["case_id"]) for t, b in findings.comparison_pairs(cases, c)] \
        == [("cached+async#0msgpack", "cached#0msgpack"),
            ("cached+async#2msgpack", "cached#2msgpack")]
    aa = dict(c, codec="pickle", baseline="send", treatment="send'", repetitions=None)
    assert [(t["case_id"], b["case_id"]) for t, b in findings.comparison_pairs(cases, aa)] \
        == [(f"send'#{r}pickle", f"send#{r}pickle") for r in range(3)]
    # the pair findings' own: send and cached, every repetition, as before
    assert [(s["case_id"], k["case_id"]) for s, k in findings.pair_records(
        cases, ("num_running=4", "msgpack", "ipc", "null"))] == [
        (f"send#{r}msgpack", f"cached#{r}msgpack") for r in range(3)]


def test_a_recorded_verdicts_own_significant_words_get_the_caveat_too():
    """A summary written before Holm's p-values gives its verdict as recorded
    (``significant: ...``), as the overhead finding gives ``verdict_of``'s."""
    pairs = [({"num_steps": 1, "warnings": ["only 1 counted step (< 100): figures are "
                                            "rough"]}, {"num_steps": 200, "warnings": []})]
    text = "x (significant: cached+async 10.0 % higher than cached)."
    assert findings._rough_caveat(text, pairs) == (
        text + " 1 of its 2 cases' figures are rough: only 1 counted step (< 100), as its "
        "warning says.")
    for text in ("x: no significant difference.", "x (not significant after Holm (p 0.04, "
                 "adjusted 0.28)).", "x: inconclusive: the 95 % interval [...] reaches "
                 "beyond 1.1x either way: too few repetitions or too noisy."):
        assert findings._rough_caveat(text, pairs) == text


def _mark_significant(run, metric: str = "output_tokens_per_s", significant: bool = True) -> None:
    """Every comparison's ``metric`` in ``run`` made significant after Holm (``HOLM``);
    with ``significant=False``, every metric of every comparison made not significant
    (p 0.3), whatever the run found (one counted step of async scheduling against none
    is a real difference, found significant in most runs)."""
    summary = json.loads((run / "summary.json").read_text())
    for c in summary["comparisons"]:
        if significant:
            c["metrics"][metric].update(HOLM, verdict="significant")
        else:
            for m in c["metrics"].values():
                m.update(NOT_HOLM, verdict="not significant")
        c.pop("arrival_bound", None)  # a timed replay's: its tok/s then compared
    (run / "summary.json").write_text(json.dumps(summary))


def _bullets(run, out, start: str) -> list[str]:
    assert cli.main(["report", str(run), "--output", str(out), "--no-figures"]) == 0
    return [ln for ln in (out / "report.md").read_text().splitlines()
            if ln.startswith(start)]


@pytest.mark.parametrize("extra,head", [
    (["--aa"], f"- At 4 running requests (msgpack{one_runner_mark()}), the A/A pair send' "
               "against send (one "
               "policy run twice) over 3 paired repetitions shows a significant difference "
               "in 1 of its "),
    (["--async-scheduling"], f"- At 4 running requests (msgpack{one_runner_mark()}), "
                             "cached+async against "
                             "cached over 3 paired repetitions: output tokens/s ")])
def test_another_comparisons_significant_finding_over_rough_cases(tmp_path, extra, head):
    run = tmp_path / "run"
    run_bench(run, ["--scenario", "decode-steady", *FEW, "--no-single-process", *extra])
    out = tmp_path / "rep"
    _mark_significant(run, significant=False)
    (plain,) = _bullets(run, out, head.split(" over ")[0])
    assert not plain.endswith(ONE)  # not significant: no caveat
    _mark_significant(run)
    (line,) = _bullets(run, tmp_path / "rep2", head)
    assert f"({SAID})" in line and line.endswith(ONE), line
    assert line.count("figures are rough") == 1


def test_a_timed_replays_significant_wall_clause_over_rough_cases(tmp_path):
    write_trace(tmp_path / "trace.csv")
    run = tmp_path / "timed"
    run_bench(run, ["--scenario", "azure-conv-timed", "--trace", str(tmp_path / "trace.csv"),
                    "--max-requests", "6", "--codecs", "msgpack", "--warmup-steps", "2",
                    "--repeat", "3"])
    steps = [c["num_steps"] for c in json.loads((run / "summary.json").read_text())["cases"]]
    assert max(steps) < 100
    _mark_significant(run)
    (line,) = _bullets(run, tmp_path / "rep", "- This is a timed replay")
    lo, hi = min(steps), max(steps)
    counted = f"only {lo} counted steps each" if lo == hi else \
        f"only {lo} to {hi} counted steps each"
    assert f", {SAID})" in line
    assert line.endswith(f". Its cases' figures are rough: {counted} (< 100), as their "
                         "warnings say."), line


def test_an_overhead_runs_significant_finding_over_rough_cases(tmp_path):
    """Its ``totals`` arm counts no step, so carries no such warning: 3 of the 6 cases."""
    run = tmp_path / "oh"
    run_bench(run, ["--scenario", "overhead", *FEW])
    summary = json.loads((run / "summary.json").read_text())
    loop = {"totals": [200_000.0, 210_000.0, 220_000.0],
            "steps": [400_000.0, 421_000.0, 439_000.0]}
    for c in summary["cases"]:
        c["loop_step_ns_mean"] = loop[c["arm"]][c["repetition"]]
    (run / "summary.json").write_text(json.dumps(summary))
    lines = _bullets(run, tmp_path / "rep", "- At num_running=4,of=")
    assert len(lines) == 2
    for line in lines:
        assert "): significant: steps 100.0 % higher than totals. 3 of its 6 cases' figures " \
               "are rough: only 1 counted step each (< 100), as their warnings say." in line, line
