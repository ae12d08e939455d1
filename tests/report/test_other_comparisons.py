"""The report gives every paired comparison the run made: an ``--aa`` run's send'
against send and an ``--async-scheduling`` run's cached+async against cached, each
under a heading naming its arms with the terminal's figures, and a finding per
comparison (for an A/A pair, whether the machine's noise alone produced a verdict)."""

from __future__ import annotations

import math

import pytest

from analysis_run import copy_as_another_run, run_bench
from fault_helpers import one_runner_mark
from ipc_bench import cli
from ipc_bench.analysis.results import load, read_summary
from ipc_bench.report.findings import _comparison_finding, findings
from ipc_bench.analysis.stats import NOT_SIGNIFICANT_HOLM
from ipc_bench.report.tables import (INCONCLUSIVE_HOLM, INCONCLUSIVE_HOLM_NOTE,
                                     INCONCLUSIVE_NOTE, comparison_parts, holm_note)

ARGS = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "40",
        "--warmup-steps", "5", "--repeat", "2", "--codecs", "msgpack", "--no-floor",
        "--no-single-process"]

#: The ° a one-runner case's timings carry on exactly 2 cores, and what its comparison's
#: line under the table says after "° 2 cores: " (``analysis.cores``).
M = one_runner_mark()
MARKED_REST = ("the scheduler and its runner had a core each and none was spare for the "
               "kernel and the harness's threads, in the cases whose timings are compared "
               "here.")


def _where(workload: str) -> str:
    return "At 16 running requests"


def _metric(ratio: float, low: float, high: float, significant: bool, verdict: str) -> dict:
    return dict(method="t", ratio_geomean=ratio, ratio_median=ratio, ratio_ci_low=low,
                ratio_ci_high=high, significant=significant, verdict=verdict)


def _comparison(baseline: str, treatment: str, tput: dict, step: dict) -> dict:
    return dict(workload="num_running=16", codec="msgpack", baseline=baseline,
                treatment=treatment, n_pairs=3,
                metrics=dict(output_tokens_per_s=tput, step_ns_mean=step))


def test_an_aa_pair_without_a_significant_difference():
    c = _comparison("send", "send'",
                    _metric(0.975, 0.932, 1.020, False, "no significant difference"),
                    _metric(1.025, 0.980, 1.073, False, "no significant difference"))
    assert _comparison_finding(c, _where) == (
        "At 16 running requests (msgpack), the A/A pair send' against send (one policy "
        "run twice) over 3 paired repetitions shows no significant difference in any of "
        "its 2 compared metrics, so the machine's noise alone gave no verdict: output "
        "tokens/s -2.5 % [-6.8, +2.0] %, mean step +2.5 % [-2.0, +7.3] %.")


def test_an_aa_pair_with_intervals_too_wide_is_inconclusive_not_reassuring():
    """Two repetitions: tokens/s +54.8 % [-81.2, +1175.0] % shows no significant
    difference only because it could see none; the finding says the check is
    inconclusive (summaries recorded before say "no significant difference")."""
    c = _comparison("send", "send'",
                    _metric(1.548, 0.188, 12.750, False, "no significant difference"),
                    _metric(1.025, 0.980, 1.073, False, "no significant difference"))
    assert _comparison_finding(c, _where) == (
        "At 16 running requests (msgpack), the A/A pair send' against send (one policy "
        "run twice) over 3 paired repetitions is inconclusive: no compared metric "
        "differs significantly, but the intervals of 1 of its 2 compared metrics "
        "(out tok/s) reach beyond 1.1x either way, so this run could not have seen a 10 % "
        "difference (too few repetitions or too noisy) and does not show that the "
        "machine's noise is small: output tokens/s +54.8 % [-81.2, +1175.0] %, mean "
        "step +2.5 % [-2.0, +7.3] %.")


def test_another_pair_with_a_wide_interval_says_inconclusive():
    c = _comparison("cached", "cached+async",
                    _metric(1.548, 0.188, 12.750, False, "no significant difference"),
                    _metric(1.025, 0.980, 1.073, False, "no significant difference"))
    assert _comparison_finding(c, _where) == (
        "At 16 running requests (msgpack), cached+async against cached over 3 paired "
        "repetitions: output tokens/s +54.8 % [-81.2, +1175.0] % (inconclusive (interval "
        "beyond 1.1x either way)); mean step +2.5 % [-2.0, +7.3] % (no significant difference).")


def test_an_aa_pair_with_a_significant_difference():
    c = _comparison("send", "send'",
                    _metric(0.975, 0.932, 1.020, False, "no significant difference"),
                    _metric(1.060, 1.010, 1.110, True,
                            "significant: send' 6.0 % higher than send"))
    assert _comparison_finding(c, _where) == (
        "At 16 running requests (msgpack), the A/A pair send' against send (one policy "
        "run twice) over 3 paired repetitions shows a significant difference in 1 of its "
        "2 compared metrics: step mean (significant: send' 6.0 % higher than send). The "
        "machine's noise alone produces verdicts here: read this run's verdicts with care.")


def test_another_pair_gives_its_ratios_and_verdicts():
    c = _comparison("cached", "cached+async",
                    _metric(1.100, 1.050, 1.150, True,
                            "significant: cached+async 10.0 % higher than cached"),
                    _metric(0.910, 0.870, 0.950, True,
                            "significant: cached+async 9.0 % lower than cached"))
    assert _comparison_finding(c, _where) == (
        "At 16 running requests (msgpack), cached+async against cached over 3 paired "
        "repetitions: output tokens/s +10.0 % [+5.0, +15.0] % (significant: cached+async "
        "10.0 % higher than cached); mean step -9.0 % [-13.0, -5.0] % (significant: "
        "cached+async 9.0 % lower than cached).")


def test_a_pair_without_verdicts_gives_the_reason_once():
    why = "no verdict: the t-interval needs >= 2 pairs, have 1 (use --repeat 2 or more)"
    tput = dict(_metric(6.133, None, None, None, why), ratio_ci_low=None)
    step = dict(_metric(0.163, None, None, None, why), ratio_ci_low=None)
    c = dict(_comparison("cached", "cached+async", tput, step), n_pairs=1)
    assert _comparison_finding(c, _where) == (
        "At 16 running requests (msgpack), cached+async against cached over 1 paired "
        "repetition: output tokens/s +513.3 %, mean step -83.7 % (no verdict: the "
        "t-interval needs >= 2 pairs, have 1 (use --repeat 2 or more)).")


#: The two runs the report tests read: the comparison each makes beside send/cached.
EXTRAS = {"aa": (["--aa"], "send", "send'"),
          "async": (["--async-scheduling"], "cached", "cached+async")}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """name -> (run folder, its stdout) for each of ``EXTRAS``."""
    base = tmp_path_factory.mktemp("comparison-runs")
    return {name: (base / name, run_bench(base / name, ARGS + extra))
            for name, (extra, _, _) in EXTRAS.items()}


@pytest.mark.parametrize("name", list(EXTRAS))
def test_the_report_gives_the_comparison(tmp_path, runs, name):
    extra, base, treat = EXTRAS[name]
    run, printed = runs[name]
    recorded = read_summary(run)["comparisons"]
    assert [(c["baseline"], c["treatment"]) for c in recorded] == [(base, treat)]
    title, header, rows, held = comparison_parts(recorded[0])
    # two repetitions on a loaded machine: an interval may reach beyond 1.1x either way, or a
    # pair lie far enough from the other for the diff and ratio intervals to part
    assert title in printed and held in printed
    notes = {INCONCLUSIVE_NOTE, INCONCLUSIVE_HOLM_NOTE, holm_note([NOT_SIGNIFICANT_HOLM]),
             holm_note([NOT_SIGNIFICANT_HOLM, INCONCLUSIVE_HOLM])}
    for line in held.splitlines():
        assert line in notes or line.startswith("diff CI and ratio CI disagree on ") \
            or line == f"{M} 2 cores: {MARKED_REST}", line  # ° on 2 cores (N = 1)
    # no figures: the comparison is a table and a finding
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"), "--no-figures"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## cached against send" not in md
    assert "No send/cached pair in this run." not in md
    table = "\n".join("| " + " | ".join(r) + " |" for r in [header] + rows[:1])
    assert f"## {treat} against {base}\n\n{title}\n\n" in md
    assert table.split("\n")[0] in md and table.split("\n")[1] in md
    lines = [f for f in findings(load(run)) if f"{treat} against {base}" in f]
    assert len(lines) == 1 and f"- {lines[0]}" in md
    start = (f"At 4 running requests (msgpack{M}), " + (
        "the A/A pair send' against send (one policy run twice) over 2 paired repetitions "
        if extra == ["--aa"] else
        "cached+async against cached over 2 paired repetitions: output tokens/s "))
    assert lines[0].startswith(start)
    if extra == ["--aa"]:  # two noisy repetitions are often too few to see 10 %
        assert lines[0][len(start):].startswith(("shows ", "is inconclusive: "))


def test_a_report_of_two_runs_gives_each_run_its_own_comparison(tmp_path, runs):
    """Two runs in one report: each run's section (level 3) has its own comparison,
    with that run's title line, and not the other run's."""
    (aa, _), (sync_async, _) = runs["aa"], runs["async"]
    assert cli.main(["report", str(aa), str(sync_async), "--output",
                     str(tmp_path / "rep"), "--no-figures"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    first, second = md.split("\n## Run aa (decode-steady)\n")[1].split(
        "\n## Run async (decode-steady)\n")
    for section, name, other in ((first, "aa", "async"), (second, "async", "aa")):
        extra, base, treat = EXTRAS[name]
        title = comparison_parts(read_summary(runs[name][0])["comparisons"][0])[0]
        assert f"\n### {treat} against {base}\n\n{title}\n\n" in section
        _, other_base, other_treat = EXTRAS[other]
        assert f"### {other_treat} against {other_base}" not in section
    # The async run has a send/cached pair only through its cached arm: none to show.
    assert "### cached against send" not in first + second


def test_side_by_side_keeps_each_arm_apart(tmp_path, runs):
    """Two runs with a sync and an async arm of cached: the side-by-side table has a
    row per arm, each the geometric mean of that arm's cases (never the two averaged),
    and the ratio of a run to its copy is 1 with the Welch interval of the two
    repetitions of each (symmetric about 1)."""
    from scipy.stats import ttest_ind

    from ipc_bench.analysis.stats import ratio_interval
    from ipc_bench.report.blocks import format_value

    run = runs["async"][0]
    copy = tmp_path / "async-copy"
    copy_as_another_run(run, copy)
    assert cli.main(["report", str(run), str(copy), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    side = md.split("## Side by side")[1].split("\n## ")[0]
    cases = read_summary(run)["cases"]
    for arm in ("cached", "cached+async"):
        rates = [c["output_tokens_per_s"] for c in cases
                 if c["arm"] == arm and c["codec"] == "msgpack"]
        mean = format_value(math.exp(sum(math.log(r) for r in rates) / len(rates)), 2)
        logs = [math.log(r) for r in rates]
        ci = ttest_ind(logs, logs, equal_var=False).confidence_interval(0.95)
        low, high = math.exp(ci.low), math.exp(ci.high)
        word = ("within noise" if round(low, 3) * 1.1 >= 1 and round(high, 3) <= 1.1
                else "inconclusive")
        cell = f"1.000 {ratio_interval(low, high)} {word}"
        assert f"| num_running=4 | {arm} | msgpack | {mean} | {mean} | {cell} |" in side, side


def test_a_comparison_whose_interval_excludes_zero_says_its_verdict_is_holm_adjusted():
    tput = dict(_metric(1.067, 1.037, 1.097, False, "no significant difference"),
                adjustment="holm", p_value=0.022, p_adjusted=0.131)
    step = _metric(0.940, 0.910, 0.970, True, "significant: cached+async 6.0 % lower than "
                   "cached")
    c = dict(_comparison("cached", "cached+async", tput, step),
             family=["step_ns_mean", "step_ns_median", "output_tokens_per_s",
                     "build_ns_per_step", "encode_ns_per_step", "decode_ns_per_step"])
    assert _comparison_finding(c, _where) == (
        "At 16 running requests (msgpack), cached+async against cached over 3 paired "
        "repetitions: output tokens/s +6.7 % [+3.7, +9.7] % (not significant after Holm "
        "(p 0.022, adjusted 0.131)); mean step -6.0 % [-9.0, -3.0] % (significant: "
        "cached+async 6.0 % lower than cached).")


def test_a_comparison_of_a_case_the_loader_left_out_is_recomputed_without_it(
        tmp_path, runs, capsys):
    """A hand-edited case of the async run (left out with a warning): the comparison
    summary.json recorded over it is recomputed over the one pair left, in the report
    and in the findings (``findings.run_comparisons``)."""
    import json
    import shutil

    run = tmp_path / "async"
    shutil.copytree(runs["async"][0], run)
    summary = json.loads((run / "summary.json").read_text())
    case = next(c for c in summary["cases"] if c["arm"] == "cached+async")
    case["output_tokens_per_s"] = "fast"
    (run / "summary.json").write_text(json.dumps(summary))
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 0
    err = capsys.readouterr().err
    assert f"case '{case['case_id']}' has output_tokens_per_s \"fast\"" in err
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "cached+async against cached over 2 paired repetitions" not in md
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (line,) = [f for f in findings(load(run)) if "against cached" in f]
    assert ("cached+async against cached over 1 paired repetition: " in line
            and line.endswith("(no verdict: the t-interval needs >= 2 pairs, have 1 "
                              "(use --repeat 2 or more)).")), line


def test_a_pp_aa_run_gives_its_comparison_not_a_note_on_direct(tmp_path):
    """``--pp 1 --aa``: send' against send is the run's comparison (its own section
    and finding), not "a --pp run compares send with direct", which no case ran. (One
    stage: a --pp run is one whatever its stage count, and each stage process imports
    torch.)"""
    run = tmp_path / "ppaa"
    run_bench(run, ["--scenario", "pp", "--pp", "1", "--num-running", "2", "--steps",
                    "20", "--warmup-steps", "3", "--codecs", "msgpack", "--aa",
                    "--repeat", "2"])
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "compares send with `direct`" not in md and "## cached against send" not in md
    assert f"\n## send' against send\n\nsend' vs send  [num_running=2,pp=1]  msgpack{M}: " in md
    assert (f"- At 2 running requests, pp=1 (msgpack{M}), the A/A pair send' against send (one "
            "policy run twice) over 2 paired repetitions") in md


def _holm(ratio: float, low: float, high: float, significant: bool, p: float,
          adjusted: float, verdict: str = "no significant difference") -> dict:
    """A recorded metric with Holm's verdict and p-values, as summary.json holds it."""
    return dict(_metric(ratio, low, high, significant, verdict), adjustment="holm",
                p_value=p, p_adjusted=adjusted)


SEVEN = ["step_ns_mean", "step_ns_median", "output_tokens_per_s", "build_ns_per_step",
         "encode_ns_per_step", "decode_ns_per_step", "sched_cpu_ns_per_step"]


def test_another_pairs_holm_verdicts_are_in_the_legends_short_words():
    """cached+async against cached: each verdict as the pair findings word theirs
    (``findings.short_verdict``), p unadjusted then adjusted, never "after Holm's
    correction over N timed metrics"."""
    from ipc_bench.report.findings import short_verdict

    def line(tput: dict, step: dict) -> str:
        c = dict(_comparison("cached", "cached+async", tput, step), family=SEVEN)
        return _comparison_finding(c, _where)

    head = ("At 16 running requests (msgpack), cached+async against cached over 3 paired "
            "repetitions: ")
    assert line(_holm(1.067, 1.037, 1.097, False, 0.022, 0.131),
                _holm(0.940, 0.910, 0.970, True, 0.0004, 0.003,
                      "significant: cached+async 6.0 % lower than cached")) == head + (
        "output tokens/s +6.7 % [+3.7, +9.7] % (not significant after Holm (p 0.022, "
        "adjusted 0.131)); mean step -6.0 % [-9.0, -3.0] % (significant after Holm (p "
        "<0.001, adjusted 0.003)).")
    assert line(_holm(1.300, 1.020, 1.650, False, 0.040, 0.280),
                _holm(1.548, 0.188, 12.750, False, 0.500, 1.000)) == head + (
        "output tokens/s +30.0 % [+2.0, +65.0] % (inconclusive: not significant after "
        "Holm (p 0.040, adjusted 0.280)); mean step +54.8 % [-81.2, +1175.0] % "
        "(inconclusive (interval beyond 1.1x either way); no significant difference after Holm (p "
        "0.500, adjusted 1.000)).")
    assert short_verdict(_holm(1.025, 0.980, 1.073, False, 0.300, 0.900)) == (
        "no significant difference after Holm (p 0.300, adjusted 0.900)")
    # a summary written before the short words: its Holm verdict without p-values
    old = _metric(1.300, 1.020, 1.650, False, "inconclusive: not significant after Holm "
                  "adjustment; the 95 % interval [+2.0, +65.0] % does not include 0 % but "
                  "is unadjusted")
    assert short_verdict(old) == "inconclusive: not significant after Holm"


def test_an_aa_pair_gives_the_holm_verdicts_it_depends_on_with_p_values():
    """A figure whose unadjusted interval excludes 0 % beside "no significant
    difference" gets its Holm verdict in the legend's words; one whose interval holds
    0 % needs none beyond the sentence's."""
    tput = _holm(1.067, 1.037, 1.097, False, 0.022, 0.131)
    step = _holm(1.025, 0.980, 1.073, False, 0.300, 0.900)
    c = dict(_comparison("send", "send'", tput, step), family=SEVEN)
    assert _comparison_finding(c, _where) == (
        "At 16 running requests (msgpack), the A/A pair send' against send (one policy "
        "run twice) over 3 paired repetitions shows no significant difference in any of "
        "its 2 compared metrics, so the machine's noise alone gave no verdict: output "
        "tokens/s +6.7 % [+3.7, +9.7] % (not significant after Holm (p 0.022, adjusted "
        "0.131)), mean step +2.5 % [-2.0, +7.3] %.")
    # an interval the adjustment left unjudged is no interval too wide to see 10 %
    c["metrics"]["output_tokens_per_s"] = _holm(
        1.300, 1.020, 1.650, False, 0.040, 0.280, "inconclusive: not significant after "
        "Holm; the 95 % interval [+2.0, +65.0] % does not include 0 % but is unadjusted")
    assert _comparison_finding(c, _where).endswith(
        "shows no significant difference in any of its 2 compared metrics, so the "
        "machine's noise alone gave no verdict: output tokens/s +30.0 % [+2.0, +65.0] % "
        "(inconclusive: not significant after Holm (p 0.040, adjusted 0.280)), mean step "
        "+2.5 % [-2.0, +7.3] %.")
    c["metrics"]["step_ns_mean"] = _holm(1.060, 1.030, 1.090, True, 0.001, 0.006,
                                         "significant: send' 6.0 % higher than send")
    assert _comparison_finding(c, _where) == (
        "At 16 running requests (msgpack), the A/A pair send' against send (one policy "
        "run twice) over 3 paired repetitions shows a significant difference in 1 of its "
        "2 compared metrics: step mean (significant after Holm (p 0.001, adjusted "
        "0.006)). The machine's noise alone produces verdicts here: read this run's "
        "verdicts with care.")


def test_the_legend_defines_the_comparisons_words_without_a_send_cached_pair():
    from ipc_bench.report.findings import findings_legend

    c = dict(_comparison("cached", "cached+async",
                         _holm(1.067, 1.037, 1.097, False, 0.022, 0.131),
                         _holm(1.025, 0.980, 1.073, False, 0.300, 0.900)), family=SEVEN)
    line = _comparison_finding(c, _where)
    assert findings_legend([line], "t", {}, [c], pairs=False) == (
        "Reading the findings: **significant, not significant or no significant "
        "difference after Holm (p, adjusted)**: the verdict of the run's comparison (the "
        "one `bench.py` printed), by Holm's correction over the 7 timed metrics its "
        "comparison tests together: p unadjusted, then Holm-adjusted; `not significant "
        "after Holm` where the unadjusted interval shown does not include 0 % but the "
        "adjusted test finds no significant difference (`inconclusive: not significant "
        "after Holm` where that interval also reaches beyond 1.1x either way), `no significant "
        "difference after Holm` where it includes 0 %.")
    assert findings_legend(["no verdict here"], "t", {}, [c], pairs=False) == ""
    recorded = {("num_running=16", "msgpack", "ipc", "null"): {
        "output_tokens_per_s": dict(c["metrics"]["output_tokens_per_s"], family_size=6)}}
    assert ("by Holm's correction over the timed metrics its comparison tests together "
            "(6 for msgpack, 7 for cached+async against cached): ") in findings_legend(
        [line], "t", recorded, [c])


def test_a_reports_comparison_finding_gives_holm_p_values_and_a_legend(tmp_path, runs):
    """The --aa and --async-scheduling runs (no send/cached pair): the comparison's
    Holm verdicts carry their p-values, defined in a legend under them (an A/A
    finding gives a figure's own verdict only where Holm decided it, so it may have
    none, one or two)."""
    for name, (extra, base, treat) in EXTRAS.items():
        out = tmp_path / name
        assert cli.main(["report", str(runs[name][0]), "--output", str(out),
                         "--no-figures"]) == 0
        md = (out / "report.md").read_text().splitlines()
        (line,) = [ln for ln in md if ln.startswith("- ") and f"{treat} against {base}" in ln]
        assert "Holm's correction" not in line and "after Holm adjustment" not in line
        if name == "aa" and " after Holm (p " not in line:  # no verdict to define
            continue
        # async's finding gives both figures' verdicts; an A/A pair's gives one or
        # both, as the machine's noise decides
        assert line.count(" after Holm (p ") in ((2,) if name == "async" else (1, 2)), line
        # under the findings (past the ° line where their timings are marked: N = 1 on
        # 2 cores)
        legend = next(ln for ln in md[md.index(line):]
                      if ln.startswith("Reading the findings: "))
        assert legend.startswith("Reading the findings: ") and (
            "**significant, not significant or no significant difference after Holm (p, "
            "adjusted)**: the verdict of the run's comparison (the one `bench.py` "
            "printed), by Holm's correction over the 7 timed metrics its comparison "
            "tests together") in legend
