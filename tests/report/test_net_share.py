"""The net share beside the SchedulerOutput path's: send - cached of the path plus the
runner's token-id bookkeeping (update_states writes the ids received under send,
write_back the ids sampled under cached), over cached's step, with the path share's
interval; and the tok/s verdict's qualifier where its interval is wider than the change
that share implies (docs/comparisons.md, "The net share" and "What a tok/s verdict can
see"). Checked on a small real emulated run, recomputed from its steps.csv, and on
hand-made summaries whose figures give exact cells."""

from __future__ import annotations

import csv
import json
import math
import statistics
from pathlib import Path

import pandas as pd
import pytest
import scipy.stats as sps

from analysis_run import copy_without_case_field, run_bench
from ipc_bench.analysis.results import Results, load
from ipc_bench.analysis.run_files import ResultsWarning
from ipc_bench.analysis.stats import interval_end, point_text
from ipc_bench.cli import main as cli
from ipc_bench.report import findings
from test_metrics import _summary

ARGS = ["--scenario", "decode-steady", "--model", "emulated", "--model-preset",
        "llama-3.2-1b", "--num-running", "4", "--steps", "20", "--warmup-steps", "5",
        "--repeat", "3", "--codecs", "msgpack", "--no-floor", "--no-single-process"]
NET_COLUMNS = ("build_ns", "encode_ns", "runner_decode_ns", "runner_update_ns",
               "runner_writeback_ns")
COUNTS = ("the SchedulerOutput path plus the runner's token-id bookkeeping, update_states "
          "+ write_back, per-step medians of the sum: update_states writes the ids "
          "received under send, write_back the ids sampled under cached")
#: The inconclusive clause as the terminal gives it, and as the report's findings do
#: (its legend defines the short one).
LONG_INCONCLUSIVE = ("inconclusive: the interval reaches beyond 1.1x either way, too few "
                     "repetitions or too noisy to tell a 10 % difference from none")
SHORT_INCONCLUSIVE = "inconclusive (interval beyond 1.1x either way)"
HEADER = ("send - cached, net share: path + runner update_states + write_back (% of "
          "cached's step) [95 %]")


@pytest.fixture(scope="module")
def emulated_run(tmp_path_factory) -> tuple[Path, str]:
    run = tmp_path_factory.mktemp("net") / "run"
    return run, run_bench(run, ARGS)


def _counted(run: Path) -> dict[str, list[dict]]:
    """steps.csv's counted rows by case id."""
    rows: dict[str, list[dict]] = {}
    with open(run / "steps.csv", newline="") as f:
        for r in csv.DictReader(f):
            if r["counted"] in ("True", "true", "1"):
                rows.setdefault(r["case_id"], []).append(r)
    return rows


def _net_medians(run: Path) -> dict[tuple[str, int], tuple[float, float]]:
    """(policy, repetition) -> (median of the five columns' sum, median step_ns), from
    steps.csv."""
    out = {}
    for rows in _counted(run).values():
        net = statistics.median(sum(int(r[c]) for c in NET_COLUMNS) for r in rows)
        step = statistics.median(int(r["step_ns"]) for r in rows)
        out[(rows[0]["policy"], int(rows[0]["repetition"]))] = (float(net), float(step))
    return out


def _share(diffs: list[float], steps: list[float]) -> tuple[float, float, float]:
    """The mean difference over the mean step, with the ratio estimator's t interval."""
    n = len(diffs)
    share = statistics.mean(diffs) / statistics.mean(steps)
    resid = [d - share * c for d, c in zip(diffs, steps)]
    half = sps.t.ppf(0.975, n - 1) * statistics.stdev(resid) / math.sqrt(n) / \
        statistics.mean(steps)
    return share, share - half, share + half


def _cell(share: float, low: float, high: float) -> str:
    ends = ", ".join(interval_end(100 * e, 2, sign=True, band="percent") for e in (low, high))
    return f"{point_text(100 * share, 2, sign=True)} % [{ends}] %"


def _sentence(diff_ns: float, share: float, low: float, high: float,
              base_ns: float) -> str:
    ends = ", ".join(interval_end(100 * e, 2, sign=True, band="percent") for e in (low, high))
    tail = f" (send - cached: [{ends}] %, 95 % Student-t interval)."
    if low <= 0 <= high and ((1 + low) * 1.1 < 1 or high > 0.1):
        # beyond 1.1x either way (a busy machine's repetitions): inconclusive
        return (f"Net share ({COUNTS}): send's policy work differs from cached's by "
                f"{point_text(diff_ns / 1e3, 2, sign=True)} µs per step, "
                f"{point_text(100 * share, 2, sign=True)} % of cached's step"
                + tail[:-1] + ", " + LONG_INCONCLUSIVE + ".")
    if low <= 0 <= high:
        if max(-low, high) > 0.01:  # beyond 1 % of the step: not resolved, its µs given
            us = [e * base_ns / 1e3 for e in (low, high)]
            digits = 1 if max(map(abs, us)) < 10 else 0
            tail = (tail[:-1] + ", [" + ", ".join(f"{e:+,.{digits}f}" for e in us)
                    + "] µs per step: the interval holds 0 but reaches beyond 1 % of the "
                    "step, so it does not show the cost is small.")
        verb = "is not resolved from cached's:" if max(-low, high) > 0.01 else \
            "is within noise of cached's:"
        return (f"Net share ({COUNTS}): send's policy work {verb} "
                f"{point_text(diff_ns / 1e3, 2, sign=True)} µs per step, "
                f"{point_text(100 * share, 2, sign=True)} % of cached's step" + tail)
    return (f"Net share ({COUNTS}): send's policy work costs "
            f"{point_text(abs(diff_ns) / 1e3, 2)} µs per step "
            f"{'more' if diff_ns >= 0 else 'less'} than cached's, "
            f"{point_text(100 * abs(share), 2)} % of cached's step" + tail)


def _in_report(sentence: str) -> str:
    """The terminal's net-share ``sentence`` as the report's findings give it."""
    return sentence.replace(f", {LONG_INCONCLUSIVE}.", f", {SHORT_INCONCLUSIVE}.")


def _expected(run: Path) -> tuple[str, str, float]:
    """The net share's summary cell and sentence, and the share, from steps.csv."""
    med = _net_medians(run)
    diffs = [med[("send", r)][0] - med[("cached", r)][0] for r in range(3)]
    steps = [med[("cached", r)][1] for r in range(3)]
    share, low, high = _share(diffs, steps)
    return (_cell(share, low, high),
            _sentence(statistics.mean(diffs), share, low, high, statistics.mean(steps)), share)


def test_the_summary_records_the_net_figure_as_steps_csv_gives_it(emulated_run):
    run, _ = emulated_run
    med = _net_medians(run)
    cases = json.loads((run / "summary.json").read_text())["cases"]
    assert len(cases) == 6
    for c in cases:
        assert c["s2r_net_ns_median"] == med[(c["policy"], c["repetition"])][0]


def test_the_report_and_the_terminal_give_the_net_share(emulated_run, tmp_path):
    run, stdout = emulated_run
    cell, sentence, _ = _expected(run)
    items = findings.findings(load([run]))
    header, (row,) = items.summary
    assert header[-1] == HEADER
    assert row[7] == cell
    (line,) = [f for f in items if "send's SchedulerOutput path" in f]
    assert line.endswith(" " + _in_report(sentence))
    # the terminal's share line says the same
    (term,) = [ln for ln in stdout.splitlines() if ln.startswith("  send's share [")]
    assert term.endswith(" " + sentence)
    # and the rendered report
    out = tmp_path / "rep"
    assert cli(["report", str(run), "--output", str(out), "--no-figures"]) == 0
    md = (out / "report.md").read_text()
    assert f"| {cell} |\n" in md and _in_report(sentence) in md


def test_the_tok_s_verdict_says_when_its_interval_is_wider_than_the_net_share(emulated_run):
    run, _ = emulated_run
    _, _, share = _expected(run)
    cases = json.loads((run / "summary.json").read_text())["cases"]
    tps = {(c["policy"], c["repetition"]): c["output_tokens_per_s"] for c in cases}
    logs = [math.log(tps[("cached", r)] / tps[("send", r)]) for r in range(3)]
    half = sps.t.ppf(0.975, 2) * statistics.stdev(logs) / math.sqrt(3)  # on the log scale
    factor, effect = math.exp(half), 100 * share
    assert abs(effect) >= 0.005  # 2 decimals show it (smaller: one significant digit)
    items = findings.findings(load([run]))
    (row,) = items.summary[1]
    verdict = row[4]
    (pair,) = [f for f in items if "output tokens/s changes by" in f]
    way = "faster" if share > 0 else "slower"
    words = (f"the tok/s interval spans a factor of {factor:,.2f} either way of its centre, "
             f"more than the {abs(effect):.2f} % change (cached {way}) the net share "
             "implies: this run cannot tell a change of that size from none in tokens/s")
    if half > abs(math.log1p(share)) and not findings.SIGNIFICANT.search(verdict):
        assert float(f"{factor:.2f}") > 1 + abs(float(f"{effect:.2f}")) / 100  # else more
        assert verdict.endswith("; " + words)
        assert pair.endswith(" T" + words[1:] + ", so its verdict is no evidence of no "
                             "change.")
    else:
        assert "the tok/s interval" not in verdict and "the tok/s interval" not in pair


def test_an_older_run_has_its_net_share_from_steps_csv_or_says_it_is_unavailable(
        emulated_run, tmp_path):
    run, _ = emulated_run
    cell, sentence, _ = _expected(run)
    old = copy_without_case_field(run, tmp_path / "old", "s2r_net_ns_median")
    items = findings.findings(load([old]))
    assert items.summary[1][0][7] == cell  # recomputed from steps.csv
    assert any(f.endswith(" " + _in_report(sentence)) for f in items)
    # without steps.csv's runner_writeback_ns either: unavailable, said in its cell
    frame = pd.read_csv(old / "steps.csv")
    frame.drop(columns=["runner_writeback_ns"]).to_csv(old / "steps.csv", index=False)
    with pytest.warns(ResultsWarning, match="its header lacks runner_writeback_ns"):
        items = findings.findings(load([old]))
    assert items.summary[1][0][7] == findings.NET_UNAVAILABLE == (
        "— (unavailable: neither summary.json's s2r_net_ns_median nor steps.csv's "
        "runner_update_ns and runner_writeback_ns)")
    assert not any("Net share (" in f for f in items)
    out = tmp_path / "rep"
    assert cli(["report", str(old), "--output", str(out), "--no-figures"]) == 0
    assert findings.NET_UNAVAILABLE in (out / "report.md").read_text()


#: (send tok/s, cached tok/s) per repetition: cached/send within 2.3 % either way, no
#: significant difference; each step 231,400 ns (cached), 232,400 ns (send).
TPS = ((60_000.0, 60_600.0), (60_000.0, 59_700.0), (60_000.0, 60_300.0))


def _hand_made(net: bool) -> Results:
    rows = []
    for rep, (send_tps, cached_tps) in enumerate(TPS):
        for policy, tps, step, s2r, total in (("send", send_tps, 233_400.0, 12_000.0, 30_000.0),
                                              ("cached", cached_tps, 232_400.0, 9_000.0,
                                               28_000.0)):
            s = _summary(policy, rep, tps, step)  # step_ns_median = step - 1000
            s.update(s2r_build_encode_decode_ns_median=s2r, run_id="run")
            if net:
                s["s2r_net_ns_median"] = total
            rows.append(s)
    empty = pd.DataFrame(columns=["run_id", "case_id"])
    return Results(cases=pd.DataFrame(rows), steps=empty, requests=empty, floor=empty,
                   itl=empty, metadata={"run": {"cases": [{"labels": {"num_running": 4}}]}},
                   status={"run": "complete"}, problems={"run": []}, paths={"run": "run"})


def test_the_verdict_cell_names_the_net_share_or_else_the_paths():
    logs = [math.log(c / s) for s, c in TPS]
    half = sps.t.ppf(0.975, 2) * statistics.stdev(logs) / math.sqrt(3)
    assert f"{math.exp(half):.2f}" == "1.02"  # the factor either way of its centre
    # 2,000 ns of net work (3,000 on the path) over cached's 231,400 ns median step
    assert f"{100 * 2_000 / 231_400:.2f}" == "0.86"
    (row,) = findings.findings(_hand_made(net=True)).summary[1]
    assert row[4] == ("no significant difference; the tok/s interval spans a factor of "
                      "1.02 either way of its centre, more than the 0.86 % change (cached "
                      "faster) the net share implies: this run cannot tell a change of "
                      "that size from none in tokens/s")
    assert row[5] == "+1.30 % [+1.30, +1.30] %" and row[7] == "+0.86 % [+0.86, +0.86] %"
    items = findings.findings(_hand_made(net=False))
    (row,) = items.summary[1]
    assert row[4] == ("no significant difference; the tok/s interval spans a factor of "
                      "1.02 either way of its centre, more than the 1.30 % change (cached "
                      "faster) the SchedulerOutput path share implies: this run cannot "
                      "tell a change of that size from none in tokens/s")
    assert row[7] == findings.NET_UNAVAILABLE
    (pair,) = [f for f in items if "output tokens/s changes by" in f]
    assert pair.endswith(" The tok/s interval spans a factor of 1.02 either way of its "
                         "centre, more than the 1.30 % change (cached faster) the "
                         "SchedulerOutput path share implies: this run cannot tell a "
                         "change of that size from none in tokens/s, so its verdict is no "
                         "evidence of no change.")
