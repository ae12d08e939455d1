"""The Findings section opens with a summary table, one row per workload and codec,
whose cells are the figures the findings state (bytes cached saves, the tokens/s change
with its interval and short verdict, send's shares of cached's step), renders in the
Markdown and the HTML report alike, and ends with a legend that defines the short
verdicts its clauses use; every difference reads send - cached, as the pair table's."""

from __future__ import annotations

import math
import re
from html import escape

import pandas as pd
import scipy.stats as sps

from analysis_run import run_bench
from fault_helpers import one_runner_mark
from ipc_bench.analysis.results import Results
from ipc_bench.cli import main as cli
from ipc_bench.report import findings
from ipc_bench.report.render import render_html, render_markdown
from test_metrics import _summary

#: (send tok/s, cached tok/s, send step ns, cached step ns) per repetition; the
#: SchedulerOutput path takes 12,000 ns (send) against 9,000 (cached) in each.
REPS = ((56_602.0, 69_154.0, 282_700.0, 231_400.0),
        (56_000.0, 70_000.0, 285_000.0, 230_000.0),
        (57_000.0, 68_000.0, 280_000.0, 233_000.0))


def _results() -> Results:
    rows = []
    for rep, (send_tps, cached_tps, send_step, cached_step) in enumerate(REPS):
        for policy, tps, step, s2r in (("send", send_tps, send_step, 12_000.0),
                                       ("cached", cached_tps, cached_step, 9_000.0)):
            s = _summary(policy, rep, tps, step)  # step_ns_median = step - 1000
            s.update(s2r_build_encode_decode_ns_median=s2r, run_id="run")
            rows.append(s)
    empty = pd.DataFrame(columns=["run_id", "case_id"])
    return Results(cases=pd.DataFrame(rows), steps=empty, requests=empty, floor=empty,
                   itl=empty, metadata={"run": {"cases": [{"labels": {"num_running": 4}}]}},
                   status={"run": "complete"}, problems={"run": []}, paths={"run": "run"})


def _t(n: int) -> float:
    return sps.t.ppf(0.975, n - 1)


def _ratio_cell(send: list[float], cached: list[float]) -> str:
    """cached/send's paired geometric mean with its Student-t interval, as % change."""
    logs = [math.log(c / s) for s, c in zip(send, cached)]
    n, mean = len(logs), sum(logs) / len(logs)
    half = _t(n) * math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1) / n)
    lo, mid, hi = (math.exp(mean + k * half) for k in (-1, 0, 1))
    return (f"{100 * (mid - 1):+.1f} % [{100 * (lo - 1):+.1f}, {100 * (hi - 1):+.1f}] %")


def _share_cell(diffs: list[float], steps: list[float]) -> str:
    """The mean difference over the mean step, with the ratio estimator's interval."""
    n = len(diffs)
    share = (sum(diffs) / n) / (sum(steps) / n)
    resid = [d - share * c for d, c in zip(diffs, steps)]
    mr = sum(resid) / n
    sd = math.sqrt(sum((r - mr) ** 2 for r in resid) / (n - 1))
    half = _t(n) * sd / math.sqrt(n) / (sum(steps) / n)
    return (f"{100 * share:+.2f} % [{100 * (share - half):+.2f}, "
            f"{100 * (share + half):+.2f}] %")


def test_the_summary_row_holds_the_findings_figures():
    items = findings.findings(_results())
    header, rows = items.summary
    assert header == findings.SUMMARY_HEADER == [
        "workload", "codec", "s2r B/step saved by cached (% of send's payload)",
        "output tok/s change, cached/send [95 %]", "tok/s verdict",
        "send - cached, SchedulerOutput path (% of cached's step) [95 %]",
        "send - cached, whole step (% of cached's step) [95 %]",
        "send - cached, net share: path + runner update_states + write_back (% of "
        "cached's step) [95 %]"]
    send_steps = [r[2] - 1000 for r in REPS]  # the medians the share lines read
    cached_steps = [r[3] - 1000 for r in REPS]
    tput = _ratio_cell([r[0] for r in REPS], [r[1] for r in REPS])
    assert tput == "+22.1 % [+15.3, +29.4] %"
    assert rows == [[
        "num_running=4", "msgpack", "81 (5.3 %)",  # 1,530 - 1,449 B, of send's 1,530
        tput, "significant (unadjusted test)",
        _share_cell([3_000.0] * 3, cached_steps),
        _share_cell([s - c for s, c in zip(send_steps, cached_steps)], cached_steps),
        findings.NET_UNAVAILABLE]]  # no s2r_net_ns_median, no steps.csv
    assert rows[0][5:7] == ["+1.30 % [+1.28, +1.32] %", "+22.17 % [+17.50, +26.85] %"]
    # the same figures as the findings state them
    (pair,) = [f for f in items if "output tokens/s changes by" in f]
    assert f"output tokens/s changes by {tput} (over 3 repetitions, significant " \
        "(unadjusted test); geometric means" in pair
    assert "(5.3 % of send's scheduler → runner payload)" in pair
    (share,) = [f for f in items if "send's SchedulerOutput path" in f]
    assert "1.30 % of cached's step" in share and "[+1.28, +1.32] %" in share
    assert "is 22.17 % longer than cached's (send - cached: [+17.50, +26.85] %" in share


def test_the_summary_table_renders_in_markdown_and_html():
    items = findings.findings(_results())
    blocks = findings.findings_blocks(items)
    assert [b[0] for b in blocks] == ["table", "p", "p", "ul", "p"]
    assert blocks[1] == ("p", items.caption) == ("p", BASES + OVER_REPS)
    assert blocks[2] == ("p", findings.SUMMARY_NOTE)
    assert blocks[3] == ("ul", list(items))
    assert blocks[4] == ("p", items.legend)
    row = ("| num_running=4 | msgpack | 81 (5.3 %) | +22.1 % [+15.3, +29.4] % | significant "
           "(unadjusted test) | +1.30 % [+1.28, +1.32] % | +22.17 % [+17.50, +26.85] % | "
           f"{findings.NET_UNAVAILABLE} |")
    md = render_markdown(blocks)
    assert row in md.splitlines()
    assert md.index(row) < md.index("- At 4 running requests (msgpack), cached sends 81 fewer")
    html = render_html(blocks, "t")
    assert ("<tr><td>num_running=4</td><td>msgpack</td><td>81 (5.3 %)</td>"
            "<td>+22.1 % [+15.3, +29.4] %</td><td>significant (unadjusted test)</td>"
            "<td>+1.30 % [+1.28, +1.32] %</td><td>+22.17 % [+17.50, +26.85] %</td>"
            f"<td>{escape(findings.NET_UNAVAILABLE)}</td></tr>") in html


#: The summary table's caption line of a run with per-step medians: what its columns'
#: figures are of (``findings._summary_basis``), before the repetitions' statistic.
BASES = ("Bases: tok/s, counted output tokens over the counted steps' summed time (of "
         "mean steps: a few slow steps move it); shares, send - cached in each case's "
         "median step and in its SchedulerOutput path's per-step median, over cached's "
         "step")


#: The caption's words on repetitions after ``BASES`` (``send_cost.mean_share``).
OVER_REPS = ("; over repetitions, the mean of the differences over the mean of cached's steps, "
        "not the mean of the per-repetition shares.")


def _one_repetition(send_mean: float, send_median: float, send_tps: float,
                    cached_mean: float = 260_000.0) -> Results:
    """``_results``' first repetition, cached's step ``cached_mean`` (260.0 µs) as the
    mean and 258.1 µs as the median, 69,154 tok/s; send's as given."""
    res = _results()
    one = res.cases[res.cases["repetition"] == 0].reset_index(drop=True)
    send, cached = one["policy"] == "send", one["policy"] == "cached"
    for mask, mean, median, tps in ((send, send_mean, send_median, send_tps),
                                    (cached, cached_mean, 258_100.0, 69_154.0)):
        one.loc[mask, ["step_ns_mean", "step_ns_median", "output_tokens_per_s"]] = (
            mean, median, tps)
    res.cases = one
    return res


def test_the_caption_names_each_columns_basis_and_where_they_part():
    """A one-repetition run whose send case had a few slow steps: its tok/s change, of
    mean steps (458.2 against 260.0 µs), is +76.2 %, its whole step's share, of median
    steps, +1.55 %: the caption says what each is of, and that the mean is moved."""
    items = findings.findings(_one_repetition(458_200.0, 262_100.0, 69_154.0 * 260 / 458.2))
    (row,) = items.summary[1]
    # every figure without an interval says why, the shares as the tok/s change
    assert row[3] == "+76.2 % (one repetition, no interval)"
    # 3,000 and 4,000 ns over cached's 258,100 ns median step
    assert row[5:] == ["+1.16 % (one repetition, no interval)",
                       "+1.55 % (one repetition, no interval)", findings.NET_UNAVAILABLE]
    assert items.caption == (
        f"{BASES}. num_running=4 (msgpack): the tok/s change (+76.2 %, of mean steps) and "
        "the whole step's share (+1.55 %, of median steps) disagree: a few slow steps move "
        "the mean (num_running=4/send/msgpack#0's mean step is 458.2 µs, its median "
        "262.1 µs); the median's share is the typical step's.")
    # of opposite signs: send slower by its mean, faster by its median
    items = findings.findings(_one_repetition(275_000.0, 256_000.0, 69_154.0 * 260 / 275))
    assert items.caption.startswith(
        f"{BASES}. num_running=4 (msgpack): the tok/s change (+5.8 %, of mean steps) and "
        "the whole step's share (-0.81 %, of median steps) disagree: a few slow steps move the "
        "mean (num_running=4/send/msgpack#0's mean step is 275.0 µs, its median 256.0 µs)")
    # cached's slow steps: its mean (400.0 µs) lowers the change to -34.5 %, below
    # the share, and it is cached's case that is named
    items = findings.findings(_one_repetition(262_000.0, 262_000.0, 69_154.0 * 400 / 262,
                                              cached_mean=400_000.0))
    assert items.caption == (
        f"{BASES}. num_running=4 (msgpack): the tok/s change (-34.5 %, of mean steps) and "
        "the whole step's share (+1.51 %, of median steps) disagree: a few slow steps move "
        "the mean (num_running=4/cached/msgpack#0's mean step is 400.0 µs, its median "
        "258.1 µs); the median's share is the typical step's.")
    # within 10x of each other, or both under 2 %: no note
    for mean, median in ((300_000.0, 285_000.0), (263_000.0, 258_200.0)):
        items = findings.findings(_one_repetition(mean, median, 69_154.0 * 260_000 / mean))
        assert items.caption == f"{BASES}."


def test_a_figure_the_run_lacks_is_a_dash():
    res = _results()
    # one repetition: no interval and no verdict; the single process saves no bytes
    one = res.cases[res.cases["repetition"] == 0]
    single = one.assign(codec="none", transport="inproc",
                        case_id=one["case_id"].str.replace("msgpack", "none"))
    res.cases = pd.concat([one, single], ignore_index=True)
    _, rows = findings.findings(res).summary
    assert rows[0][2:5] == ["81 (5.3 %)", "+22.2 % (one repetition, no interval)", "—"]
    assert rows[1][:5] == ["num_running=4", "single process", "—",
                           "+22.2 % (one repetition, no interval)", "—"]
    assert rows[1][5:] == ["—", "—", "—"]  # no share line for the single process


def test_the_verdict_column_is_the_findings_short_verdict():
    assert findings._verdict_label(
        ", inconclusive (interval beyond 1.1x either way); no significant difference after Holm "
        "(p 0.272, adjusted 1.000)") == "inconclusive (interval beyond 1.1x either way)"
    assert findings._verdict_label(", not significant after Holm (p 0.040, adjusted 0.282)") \
        == "not significant after Holm"
    assert findings._verdict_label("") == "—"


def test_a_runs_report_reads_send_minus_cached_and_opens_with_the_summary(tmp_path):
    run_bench(tmp_path / "run", ["--scenario", "decode-steady", "--num-running", "4",
                                 "--steps", "40", "--warmup-steps", "5", "--repeat", "3",
                                 "--codecs", "msgpack", "--no-single-process"])
    assert cli(["report", str(tmp_path / "run"), "--output", str(tmp_path / "rep")]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "cached - send" not in md and "cached - send" not in html
    section = md[md.index("## Findings"):md.index("## Measurement warnings")
                 if "## Measurement warnings" in md else md.index("## Figures")]
    lines = section.splitlines()
    assert lines[2] == "| " + " | ".join(findings.SUMMARY_HEADER) + " |"
    cells = lines[4].strip("| ").split(" | ")
    assert cells[:2] == ["num_running=4", f"msgpack{one_runner_mark()}"]
    # the tokens/s cell is the finding's change, the pair table's cached/send as %
    assert f"output tokens/s changes by {cells[3]} (over 3 repetitions" in section
    pair = {r.split(" | ")[2]: r.split(" | ") for r in md.splitlines()  # (° on 2 cores)
            if r.startswith(("| num_running=4 | msgpack | ", "| num_running=4 | msgpack° | "))}
    ratio, lo, hi = map(float, re.findall(r"[\d.]+", pair["output tokens/s"][7]))
    assert cells[3] == (f"{100 * (ratio - 1):+.1f} % [{100 * (lo - 1):+.1f}, "
                        f"{100 * (hi - 1):+.1f}] %")
    saved = float(pair["s2r payload B/step"][6].replace(",", ""))
    send_b = float(pair["s2r payload B/step"][4].replace(",", ""))
    assert cells[2] == f"{saved:,.0f} ({100 * saved / send_b:.1f} %)"
    # each time clause's send - cached is the pair table's send - cached column
    for metric, noun in (("encode µs/step", "encod"), ("build µs/step", "build")):
        diff = float(pair[metric][6])
        said = re.search(rf"{noun}[^;]*?send - cached: ([+-][\d.]+) µs", section)
        if said:  # (a clause that claims a saving or cost gives it unsigned)
            assert float(said.group(1)) == diff
        else:
            assert re.search(rf"(saves|spends) {abs(diff):.2f} µs", section)
    assert "Reading the findings: a % change is cached/send" in section
    assert "<th>s2r B/step saved by cached (% of send&#x27;s payload)</th>" in html


def test_the_findings_say_how_many_cases_carry_measurement_warnings():
    floor = ("the standard deviation of 50-step mean floor step times is 12.7 % of their "
             "mean (> 10 %): the machine may be noisy, and the floor tok/s and x floor with "
             "it")
    cases = pd.DataFrame({"case_id": ["a#0", "b#0", "c#0", "d#0"],
                          "warnings": [["noisy"], [], ["noisy", floor], [floor]]})
    assert findings._noise_findings(cases) == [
        "2 of 4 cases carry measurement warnings on their steps: their times, and the "
        "intervals and verdicts drawn from them, are less certain than the figures alone "
        "say; 1 more case has a noisy floor alone: its x floor and floor tok/s are less "
        "certain, its times not (all listed under Measurement warnings); bytes are "
        "exact whatever the load."]
    assert findings._noise_findings(cases.iloc[:1]) == [
        "1 of 1 case carries measurement warnings on its steps: its times, and the "
        "intervals and verdicts drawn from them, are less certain than the figures alone "
        "say (all listed under Measurement warnings); bytes are exact whatever the load."]
    assert findings._noise_findings(cases.iloc[3:]) == [
        "1 of 1 case has a noisy floor alone: its x floor and floor tok/s are less "
        "certain, its times not (all listed under Measurement warnings); bytes are "
        "exact whatever the load."]
    assert findings._noise_findings(cases.assign(warnings=[[], [], [], []])) == []
    # cases that counted no step are left out: their warnings say why
    assert findings._noise_findings(cases.assign(num_steps=[0, 0, 0, 0])) == []
    assert findings._noise_findings(cases.assign(num_steps=[0, 5, 5, 0]))[0].startswith(
        "1 of 2 cases carries measurement warnings on its steps")
    assert findings._noise_findings(cases.drop(columns="warnings")) == []


def test_a_share_cell_without_an_interval_says_why():
    from ipc_bench.analysis.send_cost import MeanShare

    cell = findings._share_cell
    assert cell(MeanShare(4_500.0, 1e6, 0.0045, pairs=1)) == \
        "+0.45 % (one repetition, no interval)"
    assert cell(MeanShare(4_500.0, 1e6, 0.0045, pairs=3, method="sign")) == \
        "+0.45 % (3 repetitions, no interval: a sign-test interval needs >= 6 pairs)"
    assert cell(MeanShare(4_500.0, 1e6, 0.0045, -0.001, 0.0101, pairs=3)) == \
        "+0.45 % [-0.10, +1.01] %"
    assert cell(None) == cell(MeanShare(None, None, None)) == "—"


def test_a_change_the_mean_steps_do_not_explain_is_not_blamed_on_slow_steps():
    """Send's mean step is its median (262.0 µs), 0.77 % over cached's 260.0 µs mean,
    yet its tok/s is 1/1.25 of cached's: the +25.0 % change is not of the steps (the
    arms' tokens per step differ), and no case's slow steps are named."""
    items = findings.findings(_one_repetition(262_000.0, 262_000.0, 69_154.0 / 1.25))
    assert items.summary[1][0][3] == "+25.0 % (one repetition, no interval)"
    assert items.caption == (
        f"{BASES}. num_running=4 (msgpack): the tok/s change (+25.0 %, of mean steps) and "
        "the whole step's share (+1.51 %, of median steps) disagree: not by the step times "
        "(send's mean step +0.77 % over cached's): the arms' output tokens per counted "
        "step differ.")
    # the mean steps carrying two thirds of the gap (+1.51 % to +25.0 %) or more
    # explain it: at +17.2 % (send's mean 304.8 µs) they do, at +16.9 % not quite
    for mean, said in ((304_800.0, "a few slow steps move the mean"),
                       (304_000.0, "not by the step times")):
        items = findings.findings(_one_repetition(mean, 262_000.0, 69_154.0 / 1.25))
        assert f"disagree: {said}" in items.caption


def test_the_bases_name_the_rows_whose_share_is_of_another_step():
    from ipc_bench.analysis.send_cost import step_shares

    median = step_shares([3_000.0], [4_000.0], [258_100.0], "t", "median")
    mean = step_shares([3_000.0], [4_000.0], [260_000.0], "t", "mean")
    res = _results()
    shares = {("num_running=4", "msgpack"): median, ("num_running=16", "pickle"): mean}
    assert findings._summary_basis(res.cases, [], shares) == (
        "Bases: shares, send - cached in each case's median step (mean step: "
        "num_running=16 (pickle)) and in its SchedulerOutput path's per-step median, over "
        "cached's step.")
    assert findings._summary_basis(res.cases, [], {k: mean for k in shares}) == (
        "Bases: shares, send - cached in each case's mean step and in its SchedulerOutput "
        "path's per-step median, over cached's step.")


def test_a_whole_step_share_far_over_its_path_share_is_called_the_machines_noise():
    """One repetition of the same batches: a whole step's share over 10 times the
    SchedulerOutput path's (here +59.19 % beside +3.11 %) is not send's work; the caption
    says so. Within 10 times, under 2 %, or with an interval: no note."""
    from ipc_bench.analysis.send_cost import step_shares

    far = step_shares([9_280.0], [176_600.0], [298_350.0], "t", "median")
    assert (round(far.s2r.share, 4), round(far.whole.share, 4)) == (0.0311, 0.5919)
    assert findings._whole_path_note(("azure", "msgpack"), far) == (
        "azure (msgpack): the whole step's share (+59.19 %) is over 10 times its "
        "SchedulerOutput path's (+3.11 %): the two arms run the same batches, so the rest "
        "is not send's work but a difference between the two cases that one repetition "
        "cannot tell from the machine's noise (no interval): quote the path's share, or "
        "run --repeat 5.")
    near = step_shares([9_280.0], [92_000.0], [298_350.0], "t", "median")  # 9.9 times
    small = step_shares([10.0], [5_000.0], [298_350.0], "t", "median")  # 1.68 %
    repeated = step_shares([9_280.0, 9_300.0], [176_600.0, 170_000.0],
                           [298_350.0, 298_000.0], "t", "median")
    assert repeated.whole.low is not None
    assert [findings._whole_path_note(("a", "msgpack"), s) for s in (near, small, repeated)] \
        == ["", "", ""]


def test_a_whole_step_share_not_established_is_marked_under_the_table(monkeypatch):
    # the whole step's share, +22.17 % [+17.50, +26.85] %, excludes 0, but the run's
    # recorded comparison of the step median is not significant after Holm: the bullet
    # says so, and the table's cell, which alone read as an established cost, is marked
    # and the mark said under the table
    step = dict(significant=False, adjustment="holm", p_value=0.011, p_adjusted=0.056,
                family_size=7)
    monkeypatch.setattr(findings, "recorded_metrics", lambda results: {
        ("num_running=4", "msgpack", None, None): {"step_ns_median": step}})
    items = findings.findings(_results())
    (row,) = items.summary[1]
    assert row[6] == "+22.17 % [+17.50, +26.85] % §"
    assert items.caption == (
        BASES + OVER_REPS + " `§`: the whole step's share's "
        "interval, unadjusted, excludes 0, but the difference is not established: the "
        "run's comparison of the same steps is not significant after Holm, or its ratio "
        "interval holds 1 (the finding's line below says which).")
    (share,) = [f for f in items if "send's SchedulerOutput path" in f]
    assert ("is 22.17 % longer than cached's (send - cached: [+17.50, +26.85] %, 95 % "
            "Student-t interval), but the comparison's step median is not significant "
            "after Holm (p 0.011, adjusted 0.056)") in share
    # significant after Holm: no mark, no line
    step.update(significant=True, p_adjusted=0.04)
    items = findings.findings(_results())
    assert items.summary[1][0][6] == "+22.17 % [+17.50, +26.85] %"
    assert items.caption == BASES + OVER_REPS


def test_a_whole_step_share_beside_a_block_ratio_holding_1_is_not_established():
    # the share excludes 0 while the comparison block's ratio of the same steps holds
    # 1 (the line says "the difference is not established"): marked; beside a ratio
    # that excludes 1, or a share that holds 0, not
    from ipc_bench.analysis.send_cost import MeanShare, StepShares

    whole = MeanShare(300.0, 10_000.0, 0.03, 0.01, 0.05, 3)
    holds = StepShares(whole, whole, 10_300.0, "median", 3, (0.97, 0.93, 1.01))
    assert findings._unestablished(holds, {}, "w", "msgpack") is True
    excludes = StepShares(whole, whole, 10_300.0, "median", 3, (0.97, 0.95, 0.99))
    assert findings._unestablished(excludes, {}, "w", "msgpack") is False
    zero = MeanShare(300.0, 10_000.0, 0.03, -0.01, 0.05, 3)
    assert findings._unestablished(StepShares(zero, zero, 10_300.0, "median", 3,
                                              (0.97, 0.93, 1.01)), {}, "w", "msgpack") is False
    assert findings._unestablished(None, {}, "w", "msgpack") is False
