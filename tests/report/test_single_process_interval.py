"""The single-process finding's ratio is paired by repetition as the comparisons'
are: the geometric mean of the per-repetition single / two-process ratios with the
Student-t interval of their logs (the run's --ci-method's point and interval under
another method), and one repetition is said to be one sample with no interval, its
ratio not established as a cost of IPC."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from analysis_run import run_bench
from ipc_bench.analysis.results import load
from ipc_bench.report import findings
from test_metrics import _summary

SINGLE = {"send": [64_000.0, 61_500.0, 66_200.0], "cached": [63_000.0, 65_900.0, 62_100.0]}
TWO = {"send": [15_100.0, 13_800.0, 16_400.0], "cached": [13_300.0, 14_100.0, 12_500.0]}

HEAD = ("At 4 running requests, the single-process baseline (no IPC, no serialization) "
        "runs, each arm against its own two-process case (")


def _where(workload: str) -> str:
    return "At 4 running requests"


def _rows(reps: int) -> pd.DataFrame:
    rows = []
    for rep in range(reps):
        for arm in ("send", "cached"):
            for codec, tok in (("none", SINGLE[arm][rep]), ("msgpack", TWO[arm][rep])):
                rows.append(dict(_summary(arm, rep, tok, 100_000.0), codec=codec,
                                 case_id=f"num_running=4/{arm}/{codec}#{rep}",
                                 run_id="run"))
    return pd.DataFrame(rows)


def _t_arm(arm: str) -> str:
    one, two = np.array(SINGLE[arm]), np.array(TWO[arm])
    logs = np.log(one / two)
    mean = logs.mean()
    half = scipy.stats.t.ppf(0.975, len(logs) - 1) * logs.std(ddof=1) / np.sqrt(len(logs))
    geo_one, geo_two = np.exp(np.log(one).mean()), np.exp(np.log(two).mean())
    assert np.isclose(geo_one / geo_two, np.exp(mean))  # the quotient is the ratio
    return (f"{arm}: {geo_one:,.0f} tok/s, {np.exp(mean):.2f}x "
            f"[{np.exp(mean - half):.2f}, {np.exp(mean + half):.2f}] its two-process "
            f"msgpack case ({geo_two:,.0f} tok/s)")


def test_repetitions_give_the_geometric_mean_ratio_and_its_student_t_interval():
    assert findings._single_process_findings(_rows(3), _where) == [
        HEAD + "3 repetitions, paired by repetition: geometric mean of the "
        "per-repetition ratios [95 % Student-t interval]; tok/s: each case's geometric "
        "mean over them, whose quotient is the ratio): " + _t_arm("cached") + "; "
        + _t_arm("send") + ": the cost of having IPC at all."]
    # the figures of this frame, pinned
    text = findings._single_process_findings(_rows(3), _where)[0]
    assert "cached: 63,646 tok/s, 4.79x [4.42, 5.19]" in text
    assert "send: 63,871 tok/s, 4.24x [3.75, 4.80]" in text


def test_the_ratio_follows_the_runs_ci_method():
    # a sign-test interval needs >= 6 pairs: 3 give the median ratio and say so
    text = findings._single_process_findings(_rows(3), _where, method="sign")[0]
    ratio = {arm: np.median(np.array(SINGLE[arm]) / np.array(TWO[arm]))
             for arm in ("send", "cached")}
    assert text.startswith(
        HEAD + "3 repetitions, paired by repetition: median of the per-repetition "
        "ratios, no interval: a sign-test interval needs >= 6 pairs; tok/s: each case's "
        "geometric mean over them): ")
    assert f"cached: 63,646 tok/s, {ratio['cached']:.2f}x (3 repetitions, no " \
           "interval) its two-process" in text
    assert f"send: 63,871 tok/s, {ratio['send']:.2f}x (3 repetitions" in text


def test_one_repetition_is_one_sample_with_no_interval():
    one, two = SINGLE["send"][0], TWO["send"][0]
    # a ratio with no interval is said to be one repetition's, not a cost of IPC
    assert findings._single_process_findings(_rows(1), _where) == [
        HEAD + "one repetition: one sample, no interval): cached: "
        f"{SINGLE['cached'][0]:,.0f} tok/s, {SINGLE['cached'][0] / TWO['cached'][0]:.2f}x "
        f"its two-process msgpack case ({TWO['cached'][0]:,.0f} tok/s); send: "
        f"{one:,.0f} tok/s, {one / two:.2f}x its two-process msgpack case "
        f"({two:,.0f} tok/s): one repetition, no interval to tell it from noise: not "
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
    (``send: ... its two-process msgpack case (... tok/s)``) with the Student-t
    interval computed here, and its raw bounds."""
    res = load(run)
    cases = res.cases
    two = [float(cases.loc[(cases["codec"] == "msgpack") & (cases["repetition"] == rep),
                           "output_tokens_per_s"].iloc[0]) for rep in range(len(ratios))]
    for rep, (tok, k) in enumerate(zip(two, ratios)):
        cases.loc[(cases["codec"] == "none") & (cases["repetition"] == rep),
                  "output_tokens_per_s"] = tok * k
    logs = np.log(np.array(ratios))
    half = scipy.stats.t.ppf(0.975, len(logs) - 1) * logs.std(ddof=1) / np.sqrt(len(logs))
    lo, hi = np.exp(logs.mean() - half), np.exp(logs.mean() + half)
    geo_two = np.exp(np.log(two).mean())
    part = (f"send: {geo_two * np.exp(logs.mean()):,.0f} tok/s, {np.exp(logs.mean()):.2f}x "
            f"[{lo:.2f}, {hi:.2f}] its two-process msgpack case ({geo_two:,.0f} tok/s)")
    return res, part, (lo, hi)


def _spread(lo: float, hi: float) -> list[float]:
    """Three ratios whose Student-t interval of the logs is ``[lo, hi]``."""
    mid = (np.log(lo) + np.log(hi)) / 2
    sd = (np.log(hi) - mid) * np.sqrt(3) / scipy.stats.t.ppf(0.975, 2)
    return [float(np.exp(mid + k * sd)) for k in (-1, 0, 1)]


def _single_process_line(items) -> str:
    (line,) = [x for x in items if x.startswith(HEAD)]
    return line


def test_a_run_without_a_pair_defines_the_single_process_verdict_in_its_legend(send_only_run):
    # send alone: no summary table, yet the single-process line's verdict is defined
    res, part, _ = _with_ratios(send_only_run, [1.3, 0.9, 1.6])
    items = findings.findings(res)
    assert items.summary is None
    assert _single_process_line(items).endswith(
        part + ": inconclusive (interval beyond ±10 %), the interval holding 1.00x: the "
        "data cannot tell a cost of having IPC from none.")
    assert "1.23x [0.60, 2.54]" in part
    assert items.legend == (
        "Reading the findings: **inconclusive (interval beyond ±10 %)**: no significant "
        "difference, but the interval reaches beyond ±10 %, too few repetitions or too "
        "noisy to tell a 10 % difference from none.")


def test_the_single_process_verdict_reads_the_interval_as_printed(send_only_run):
    # [0.90, 1.05] from a low bound of 0.8999, [0.95, 1.10] from a high of 1.1004: the
    # printed interval is within ±10 %, and so is the verdict
    for (lo, hi), printed in (((0.8999, 1.05), "0.97x [0.90, 1.05]"),
                              ((0.95, 1.1004), "1.02x [0.95, 1.10]")):
        res, part, raw = _with_ratios(send_only_run, _spread(lo, hi))
        assert np.allclose(raw, (lo, hi)) and printed in part
        items = findings.findings(res)
        assert _single_process_line(items).endswith(
            part + ": within noise, the interval holding 1.00x: the data cannot tell a "
            "cost of having IPC from none.")
        assert items.legend == ("Reading the findings: **within noise**: the interval "
                                "holds no change and stays within ±10 %.")
