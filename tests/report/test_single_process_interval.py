"""The single-process finding's ratio is paired by repetition as the comparisons'
are: the geometric mean of the per-repetition single / two-process ratios with the
Student-t interval of their logs (the run's --ci-method's point and interval under
another method), and one repetition is said to be one sample with no interval, its
ratio not established as a cost of IPC."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from analysis_run import run_bench
from fault_helpers import one_runner_mark
from ipc_bench.analysis.results import load
from ipc_bench.report import findings
from test_metrics import _summary

SINGLE = {"send": [64_000.0, 61_500.0, 66_200.0], "cached": [63_000.0, 65_900.0, 62_100.0]}
TWO = {"send": [15_100.0, 13_800.0, 16_400.0], "cached": [13_300.0, 14_100.0, 12_500.0]}

def _head(mark: str) -> str:
    return ("At 4 running requests, the single-process baseline (no IPC, no serialization; "
            "with the null model, whose step computes nothing) "
            f"runs, each arm against its own two-process case{mark} with msgpack, "
            "the run's only two-process codec (")


#: Of hand-made cases, which record no cores (never marked), and of a real run's, ° where
#: its two-process cases are marked (exactly 2 cores).
HEAD, RUN_HEAD = _head(""), _head(one_runner_mark())


def _where(workload: str) -> str:
    return "At 4 running requests"


def _step_ns(tok: float) -> float:
    """The mean step (ns) of a case of 4 running requests, one token each per step, at
    ``tok`` tokens/s."""
    return 4e9 / tok


def _rows(reps: int) -> pd.DataFrame:
    rows = []
    for rep in range(reps):
        for arm in ("send", "cached"):
            for codec, tok in (("none", SINGLE[arm][rep]), ("msgpack", TWO[arm][rep])):
                rows.append(dict(_summary(arm, rep, tok, _step_ns(tok)), codec=codec,
                                 case_id=f"num_running=4/{arm}/{codec}#{rep}",
                                 run_id="run"))
    return pd.DataFrame(rows)


def _step_words(diffs_ns) -> str:
    """``; its mean step +X µs [lo, hi] over the single process's``: the mean of the
    per-repetition differences (two processes - single process) with their Student-t
    interval, by hand."""
    d = np.asarray(diffs_ns) / 1e3
    if len(d) == 1:
        return f"; its mean step {d[0]:+,.1f} µs over the single process's"
    half = scipy.stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    return (f"; its mean step {d.mean():+,.1f} µs [{d.mean() - half:+,.1f}, "
            f"{d.mean() + half:+,.1f}] over the single process's")


def _t_arm(arm: str) -> str:
    one, two = np.array(SINGLE[arm]), np.array(TWO[arm])
    logs = np.log(one / two)
    mean = logs.mean()
    half = scipy.stats.t.ppf(0.975, len(logs) - 1) * logs.std(ddof=1) / np.sqrt(len(logs))
    geo_one, geo_two = np.exp(np.log(one).mean()), np.exp(np.log(two).mean())
    assert np.isclose(geo_one / geo_two, np.exp(mean))  # the quotient is the ratio
    steps = _step_words([_step_ns(t) - _step_ns(o) for o, t in zip(one, two)])
    return (f"{arm}: {geo_one:,.0f} tok/s, {np.exp(mean):.2f}x "
            f"[{np.exp(mean - half):.2f}, {np.exp(mean + half):.2f}] two processes with "
            f"msgpack ({geo_two:,.0f} tok/s{steps})")


#: The single-process finding's words on its step cost (``findings._step_cost_over``).
STEP_OVER = ("; µs per step: the two-process case's mean step less the single process's, "
             "the mean of the per-repetition differences [95 % Student-t interval], an "
             "interval of the step times' differences, not of the tokens/s ratios' logs, "
             "so it can exclude 0 where the ratio's holds 1")


def test_repetitions_give_the_geometric_mean_ratio_and_its_student_t_interval():
    assert findings._single_process_findings(_rows(3), _where) == [
        HEAD + "3 repetitions, paired by repetition: geometric mean of the "
        "per-repetition ratios [95 % Student-t interval]; tok/s: each case's geometric "
        "mean over them, whose quotient is the ratio" + STEP_OVER + "; 2 ratio intervals "
        "in this line (2 arms x 1 codec), each unadjusted: were every true ratio 1.00x, the chance that one or more excludes "
        "1.00x is up to 10 % (2 x 5 %)): " + _t_arm("cached") + "; " + _t_arm("send")
        + ": against msgpack, the cost of having IPC at all."]
    # the figures of this frame, pinned: 4 requests' steps of about 300 µs with two
    # processes against about 63 µs in one
    text = findings._single_process_findings(_rows(3), _where)[0]
    assert ("cached: 63,646 tok/s, 4.79x [4.42, 5.19] two processes with msgpack "
            "(13,284 tok/s; its mean step +238.6 µs [+198.0, +279.2] over the single "
            "process's)") in text
    assert ("send: 63,871 tok/s, 4.24x [3.75, 4.80] two processes with msgpack "
            "(15,063 tok/s; its mean step +203.6 µs [+152.2, +255.0] over the single "
            "process's)") in text


def test_the_ratio_follows_the_runs_ci_method():
    # a sign-test interval needs >= 6 pairs: 3 give the median ratio and say so
    text = findings._single_process_findings(_rows(3), _where, method="sign")[0]
    ratio = {arm: np.median(np.array(SINGLE[arm]) / np.array(TWO[arm]))
             for arm in ("send", "cached")}
    assert text.startswith(
        HEAD + "3 repetitions, paired by repetition: median of the per-repetition "
        "ratios, no interval: a sign-test interval needs >= 6 pairs; tok/s: each case's "
        "geometric mean over them; µs per step: the two-process case's mean step less the "
        "single process's, the median of the per-repetition differences): ")
    assert f"cached: 63,646 tok/s, {ratio['cached']:.2f}x (3 repetitions, no " \
           "interval) two processes with msgpack" in text
    assert f"send: 63,871 tok/s, {ratio['send']:.2f}x (3 repetitions" in text


def test_one_repetition_is_one_sample_with_no_interval():
    one, two = SINGLE["send"][0], TWO["send"][0]
    # a ratio with no interval is said to be one repetition's, not a cost of IPC
    assert findings._single_process_findings(_rows(1), _where) == [
        HEAD + "one repetition: one sample, no interval; µs per step: the two-process "
        "case's mean step less the single process's): cached: "
        f"{SINGLE['cached'][0]:,.0f} tok/s, {SINGLE['cached'][0] / TWO['cached'][0]:.2f}x "
        f"two processes with msgpack ({TWO['cached'][0]:,.0f} tok/s; its mean step "
        "+237.3 µs over the single process's); send: "
        f"{one:,.0f} tok/s, {one / two:.2f}x two processes with msgpack "
        f"({two:,.0f} tok/s{_step_words([_step_ns(two) - _step_ns(one)])}): against "
        "msgpack, one repetition, no interval to tell it from noise: not "
        "established as the cost of having IPC."]


@pytest.fixture(scope="module")
def send_only_run(tmp_path_factory):
    """A real run of one policy (send) with its single-process cases: no cached/send
    pair, so no summary table, and a legend of the verdict words alone."""
    path = tmp_path_factory.mktemp("single_process") / "run"
    run_bench(path, ["--scenario", "decode-steady", "--num-running", "4", "--steps", "40",
                     "--warmup-steps", "5", "--codecs", "msgpack", "--policies", "send",
                     "--no-floor", "--repeat", "3"])
    return path


def _with_ratios(run, ratios: list[float]):
    """``run`` loaded, each repetition's single-process tok/s set to ``ratios[rep]``
    times its msgpack case's; returns the results and the finding's expected tail
    (``send: ... two processes with msgpack (... tok/s)``) with the Student-t
    interval computed here, and its raw bounds."""
    res = load(run)
    cases = res.cases
    at = [(cases["codec"] == "msgpack") & (cases["repetition"] == rep)
          for rep in range(len(ratios))]
    two = [float(cases.loc[a, "output_tokens_per_s"].iloc[0]) for a in at]
    steps = [float(cases.loc[a, "step_ns_mean"].iloc[0]) for a in at]
    for rep, (tok, step, k) in enumerate(zip(two, steps, ratios)):
        one = (cases["codec"] == "none") & (cases["repetition"] == rep)
        cases.loc[one, "output_tokens_per_s"] = tok * k
        cases.loc[one, "step_ns_mean"] = step / k  # the same tokens per step
    logs = np.log(np.array(ratios))
    half = scipy.stats.t.ppf(0.975, len(logs) - 1) * logs.std(ddof=1) / np.sqrt(len(logs))
    lo, hi = np.exp(logs.mean() - half), np.exp(logs.mean() + half)
    geo_two = np.exp(np.log(two).mean())
    part = (f"send: {geo_two * np.exp(logs.mean()):,.0f} tok/s, {np.exp(logs.mean()):.2f}x "
            f"[{lo:.2f}, {hi:.2f}] two processes with msgpack ({geo_two:,.0f} tok/s"
            + _step_words([s - s / k for s, k in zip(steps, ratios)]) + ")")
    return res, part, (lo, hi)


def _spread(lo: float, hi: float) -> list[float]:
    """Three ratios whose Student-t interval of the logs is ``[lo, hi]``."""
    mid = (np.log(lo) + np.log(hi)) / 2
    sd = (np.log(hi) - mid) * np.sqrt(3) / scipy.stats.t.ppf(0.975, 2)
    return [float(np.exp(mid + k * sd)) for k in (-1, 0, 1)]


def _single_process_line(items) -> str:
    (line,) = [x for x in items if x.startswith(RUN_HEAD)]
    return line


def test_a_run_without_a_pair_defines_the_single_process_verdict_in_its_legend(send_only_run):
    # send alone: no summary table, yet the single-process line's verdict is defined
    res, part, _ = _with_ratios(send_only_run, [1.3, 0.9, 1.6])
    items = findings.findings(res)
    assert items.summary is None
    assert _single_process_line(items).endswith(
        part + ": against msgpack, inconclusive (interval beyond 1.1x either way), the interval holding 1.00x: the "
        "data cannot tell a cost of having IPC from none.")
    assert "1.23x [0.60, 2.54]" in part
    assert items.legend == (
        "Reading the findings: **inconclusive (interval beyond 1.1x either way)**: no significant "
        "difference, but the interval reaches beyond 1.1x either way, too few repetitions or too "
        "noisy to tell a 10 % difference from none.")


def test_the_single_process_verdict_reads_the_interval_as_printed(send_only_run):
    # a low bound of 0.9051 (below 1/1.1, 0.9091) and a high of 1.1004 (above 1.1) were
    # printed [0.91, 1.05] and [0.95, 1.10] and read as within noise from those digits:
    # each now prints the digits that show it beyond the band, and the verdict, on the
    # same ends, is inconclusive; bounds just inside the band (0.9095, 1.0996) read
    # within noise, 1.0996 printed with the digits that keep it off the edge 1.1
    for (lo, hi), printed, verdict in (
            ((0.9051, 1.05), "0.97x [0.905, 1.05]",
             "inconclusive (interval beyond 1.1x either way)"),
            ((0.95, 1.1004), "1.02x [0.95, 1.1004]",
             "inconclusive (interval beyond 1.1x either way)"),
            ((0.9095, 1.05), "0.98x [0.91, 1.05]", "within noise"),
            ((0.95, 1.0996), "1.02x [0.95, 1.0996]", "within noise")):
        res, part, raw = _with_ratios(send_only_run, _spread(lo, hi))
        assert np.allclose(raw, (lo, hi))
        part = re.sub(r"[0-9.]+x \[[^]]*\]", printed, part)
        items = findings.findings(res)
        assert _single_process_line(items).endswith(
            part + f": against msgpack, {verdict}, the interval holding 1.00x: the data "
            "cannot tell a cost of having IPC from none.")


#: Three repetitions at 64 running of each arm's single-process case and its
#: two-process cases with msgpack and with pickle (vLLM's multiprocess executor
#: pickles): cached's interval against msgpack lies above 1.00x, send's holds it.
CODECS = {("send", "none"): [10_000.0, 10_500.0, 9_800.0],
          ("send", "msgpack"): [9_400.0, 9_000.0, 9_800.0],
          ("send", "pickle"): [8_600.0, 8_900.0, 8_300.0],
          ("cached", "none"): [10_100.0, 10_400.0, 9_900.0],
          ("cached", "msgpack"): [9_300.0, 9_700.0, 9_200.0],
          ("cached", "pickle"): [8_700.0, 8_400.0, 9_000.0]}


def _codec_rows(drop: tuple[str, ...] = ()) -> pd.DataFrame:
    return pd.DataFrame([
        dict(_summary(arm, rep, tok, 64e9 / tok), codec=codec, run_id="run",
             case_id=f"num_running=64/{arm}/{codec}#{rep}")
        for (arm, codec), toks in CODECS.items() if codec not in drop
        for rep, tok in enumerate(toks)])


def _at_64(workload: str) -> str:
    return "At 64 running requests"


def test_each_two_process_codec_is_compared_and_named():
    # the finding compared msgpack alone, which vLLM never uses on this hop, without
    # saying so: each codec now has its ratio, named, its 4 intervals counted unadjusted,
    # and send's inconclusive beside cached's cost is said to be no difference
    assert findings._single_process_findings(_codec_rows(), _at_64) == [
        "At 64 running requests, the single-process baseline (no IPC, no serialization; "
        "with the null model, whose step computes nothing) "
        "runs, each arm against its own two-process case with each two-process codec, "
        "msgpack and pickle (3 repetitions, paired by repetition: geometric mean of the "
        "per-repetition ratios [95 % Student-t interval]; tok/s: each case's geometric "
        "mean over them, whose quotient is the ratio" + STEP_OVER + "; 4 ratio intervals "
        "in this line (2 arms x 2 codecs), each unadjusted: were every true ratio 1.00x, the chance that one or more excludes "
        "1.00x is up to 20 % (4 x 5 %)): cached: 10,131 tok/s, 1.08x [1.06, 1.096] two "
        "processes with msgpack (9,398 tok/s; its mean step +493.7 µs [+368.2, +619.2] "
        "over the single process's), 1.16x [1.01, 1.35] two processes with "
        "pickle (8,697 tok/s; its mean step +1,043.8 µs [+25.5 to +2,062.0] over the single "
        "process's); send: 10,096 tok/s, 1.07x [0.89, 1.30] two processes "
        "with msgpack (9,394 tok/s; its mean step +474.8 µs [-795.0 to +1,744.6] over the "
        "single process's), 1.17x [1.15, 1.20] two processes with pickle "
        "(8,597 tok/s; its mean step +1,106.0 µs [+932.7 to +1,279.2] over the single "
        "process's): against msgpack, for cached, the cost of having IPC at all; for "
        "send, inconclusive (interval beyond 1.1x either way), the interval holding 1.00x: the "
        "data cannot tell a cost of having IPC from none; the arms' readings differ, but "
        "their intervals overlap ([1.06, 1.096] and [0.89, 1.30]): the data do not "
        "establish a difference between the arms. Against pickle, the cost of having IPC at all."]
    # cached against pickle, by hand: the Student-t interval of the log ratios
    logs = np.log(np.array(CODECS[("cached", "none")]) / CODECS[("cached", "pickle")])
    half = scipy.stats.t.ppf(0.975, 2) * logs.std(ddof=1) / np.sqrt(3)
    assert [f"{np.exp(logs.mean() + k * half):.2f}" for k in (0, -1, 1)] == \
        ["1.16", "1.01", "1.35"]


def test_codecs_of_one_reading_are_named_together():
    # every arm's interval above 1.00x with both codecs: one clause for both codecs,
    # not the same sentence once per codec
    rows = _codec_rows()
    send_msgpack = (rows["policy"] == "send") & (rows["codec"] == "msgpack")
    rows.loc[send_msgpack, "output_tokens_per_s"] = [9_100.0, 9_600.0, 8_950.0]
    rows.loc[send_msgpack, "step_ns_mean"] = 64e9 / rows.loc[send_msgpack,
                                                             "output_tokens_per_s"]
    text = findings._single_process_findings(rows, _at_64)[0]
    assert text.endswith("over the single process's): against msgpack and pickle, the "
                         "cost of having IPC at all.")
    assert text.count("the cost of having IPC at all") == 1


def test_one_two_process_codec_says_why_it_is_the_only_one():
    head = ("At 64 running requests, the single-process baseline (no IPC, no "
            "serialization; with the null model, whose step computes nothing) runs, each "
            "arm against its own two-process case with ")
    only = findings._single_process_findings(_codec_rows(("pickle",)), _at_64)[0]
    assert only.startswith(head + "msgpack, the run's only two-process codec (3 "
                           "repetitions")
    assert "; 2 ratio intervals in this line (2 arms x 1 codec), each unadjusted: were every true ratio 1.00x, " \
           "the chance that one or more excludes 1.00x is up to 10 % (2 x 5 %)): " in only
    # pickle ran but none of its cases finished: msgpack alone, and why
    alone = findings._single_process_findings(_codec_rows(("pickle",)), _at_64,
                                              ran=_codec_rows())[0]
    assert alone.startswith(head + "msgpack alone: pickle has no finished pair of cases "
                            "here (3 repetitions")
    # a run of pickle alone is compared against pickle
    assert findings._single_process_findings(_codec_rows(("msgpack",)), _at_64)[0].endswith(
        "send: 10,096 tok/s, 1.17x [1.15, 1.20] two processes with pickle (8,597 tok/s; "
        "its mean step +1,106.0 µs [+932.7 to +1,279.2] over the single process's): "
        "against pickle, the cost of having IPC at all.")


def test_arms_whose_intervals_do_not_overlap_get_no_such_clause():
    rows = _codec_rows(("pickle",))
    # send's single process 30 to 32 % faster each repetition: [1.29, 1.34], clear of
    # cached's [1.06, 1.10]
    send_one = (rows["policy"] == "send") & (rows["codec"] == "none")
    rows.loc[send_one, "output_tokens_per_s"] = [9_400.0 * 1.30, 9_000.0 * 1.31,
                                                 9_800.0 * 1.32]
    rows.loc[send_one, "step_ns_mean"] = 64e9 / rows.loc[send_one, "output_tokens_per_s"]
    text = findings._single_process_findings(rows, _at_64)[0]
    assert text.endswith("send: 12,306 tok/s, 1.31x [1.29, 1.34] two processes with "
                         "msgpack (9,394 tok/s; its mean step +1,612.4 µs [+1,460.2 to "
                         "+1,764.6] over the single process's): against msgpack, the cost "
                         "of having IPC at all.")
    # one arm with no cost and one with, intervals apart: the readings differ, unqualified
    rows.loc[send_one, "output_tokens_per_s"] = [9_400.0 * 0.80, 9_000.0 * 0.81,
                                                 9_800.0 * 0.82]
    rows.loc[send_one, "step_ns_mean"] = 64e9 / rows.loc[send_one, "output_tokens_per_s"]
    assert findings._single_process_findings(rows, _at_64)[0].endswith(
        ": against msgpack, for cached, the cost of having IPC at all; for send, the "
        "single process was slower than the two-process case, so no cost of having IPC "
        "is measurable there.")


def _spread_rows(intervals: dict[str, tuple[float, float]]) -> pd.DataFrame:
    """Three repetitions of each arm's single-process and two-process msgpack cases at
    4 running, the two-process case 10,000 tok/s, the single process ``_spread``'s
    ratios of the arm's interval ``intervals[arm]`` times that."""
    rows = []
    for arm, (lo, hi) in intervals.items():
        for rep, k in enumerate(_spread(lo, hi)):
            for codec, tok in (("none", 10_000.0 * k), ("msgpack", 10_000.0)):
                rows.append(dict(_summary(arm, rep, tok, _step_ns(tok)), codec=codec,
                                 run_id="run", case_id=f"num_running=4/{arm}/{codec}#{rep}"))
    return pd.DataFrame(rows)


def test_an_end_that_2_decimals_would_round_onto_1_reads_on_its_side_as_printed():
    # cached [1.004, 1.05] and send [0.95, 0.999]: at 2 decimals [1.00, 1.05] and [0.95,
    # 1.00], which the finding read as holding 1.00x and overlapping; printed with the
    # digits that show their side of 1, cached's lies above 1.00x (a cost), send's below
    # (slower), and the intervals, apart as printed, get no overlap clause
    text = findings._single_process_findings(
        _spread_rows({"cached": (1.004, 1.05), "send": (0.95, 0.999)}), _where)[0]
    assert text.endswith(
        "cached: 10,267 tok/s, 1.03x [1.004, 1.05] two processes with msgpack (10,000 "
        "tok/s; its mean step +10.4 µs [+1.7, +19.1] over the single process's); send: "
        "9,742 tok/s, 0.97x [0.95, 0.999] two processes with msgpack (10,000 tok/s; its "
        "mean step -10.6 µs [-20.9, -0.3] over the single process's): against msgpack, "
        "for cached, the cost of having IPC at all; for "
        "send, the single process was slower than the two-process case, so no cost of "
        "having IPC is measurable there.")
    # an end of exactly 1 holds 1.00x and prints as it is
    text = findings._single_process_findings(_spread_rows({"send": (1.0, 1.05)}), _where)[0]
    # (the step difference's interval, of the per-repetition differences, can part
    # from the ratio's, of their logs, as the comparison block's diff CI can)
    assert text.endswith("send: 10,247 tok/s, 1.02x [1.00, 1.05] two processes with "
                         "msgpack (10,000 tok/s; its mean step +9.6 µs [+0.1, +19.2] over "
                         "the single process's): against msgpack, within noise, "
                         + findings.HOLDS_NO_COST + ".")


def test_a_ratio_near_1_prints_its_side_beside_its_interval():
    # the single process 0.001 % faster in each of 3 repetitions: the interval excludes
    # 1.00x and prints so; its point, 1.00x at 2 decimals, gets the digits that show it
    # above 1 as the interval does (stats.point_text)
    from ipc_bench.analysis.stats import compare_paired

    cmp = compare_paired([10_000.0] * 3, [10_000.12, 10_000.10, 10_000.14], method="t")
    assert findings._single_process_arm_parts({"msgpack": cmp}, True) == (
        "10,000 tok/s, 1.00001x [1.00001, 1.00002] two processes with msgpack "
        "(10,000 tok/s)")
