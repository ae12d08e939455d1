"""Send's cost as a share of the step follows the run's ``--ci-method`` everywhere it is
given (the step-time lines of the terminal and the findings, the decode-steady share
lines, ``send_cost_share.png``): the point and its interval are of one statistic, the
mean for ``t``, the median for ``sign`` and ``bootstrap`` (``send_cost.SHARE_STATISTICS``),
and the line says which; with fewer pairs than the method needs there is no interval,
in the pair tables' words."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from ipc_bench.analysis.send_cost import mean_share
from ipc_bench.report import plots
from ipc_bench.report.findings import _step_time_findings
from ipc_bench.scenarios.step_time import report
from test_send_cost_one_share import _results
from test_metrics import _summary

#: Six pairs at a 5 ms fixed step, B = 16: cached's whole step (ns), send - cached on
#: the whole step and on the SchedulerOutput path (ns). Means 5.25 ms, 75 and 5.833 µs;
#: medians 5.20 ms, 35 and 3.5 µs.
CACHED_NS = (5_200_000, 5_200_000, 5_200_000, 5_200_000, 5_200_000, 5_500_000)
STEP_DIFF_NS = (10_000, 20_000, 30_000, 40_000, 50_000, 300_000)
S2R_DIFF_NS = (1_000, 2_000, 3_000, 4_000, 5_000, 20_000)


def _step_time_cases() -> list[dict]:
    out = []
    for rep, (cached, d_step, d_s2r) in enumerate(zip(CACHED_NS, STEP_DIFF_NS, S2R_DIFF_NS)):
        for policy, step, s2r in (("send", cached + d_step, 20_000 + d_s2r),
                                  ("cached", cached, 20_000)):
            out.append(dict(scenario="step-time", complete=True, num_steps=200,
                            step_time_ms=5.0, num_running=16, codec="msgpack",
                            repetition=rep, policy=policy, case_id=f"{policy}-{rep}",
                            fixed_step_ms=5.0, step_ns_median=step,
                            s2r_build_encode_decode_ns_median=s2r,
                            runner_forward_ns_median=5_000_000))
    return out


HEAD = ("fixed step 5 ms, B = 16, msgpack: send's SchedulerOutput path (build + encode + "
        "decode, medians) costs ")


@pytest.mark.parametrize("method,line", [
    # the mean's Student-t interval holds 0 (the 20 µs pair widens it), the median's
    # sign-test interval does not
    ("t", HEAD.replace("costs ", "is within noise of cached's: ") + "+5.83 µs per step, "
     "+0.11 % of the measured step (cached's median, 5.25 ms as the mean of its 6 "
     "repetitions' medians) (send - cached: [-0.03, "
     "+0.25] %, 95 % Student-t interval); send's whole median step is not resolved from "
     "cached's: +1.43 % (send - cached: [-0.76, +3.62] %, 95 % Student-t interval): the "
     "interval holds 0 but reaches beyond 1 % of the step, so it does not show the cost "
     "is small "
     "(noisier). Means over 6 repetitions; each share is the mean difference over the "
     "mean step."),
    ("sign", HEAD + "3.50 µs per step more than cached's, 0.07 % of the measured step "
     "(cached's median, 5.20 ms as the median of its 6 repetitions' medians) (send - "
     "cached: [+0.02, +0.36] %, 95 % sign-test "
     "interval of the per-pair shares); send's whole median step is 0.67 % longer than "
     "cached's (send - cached: [+0.19, +5.45] %, 95 % sign-test interval of the per-pair "
     "shares) (noisier). Medians over 6 repetitions; each share is the median "
     "difference over the median step."),
    ("bootstrap", HEAD + "3.50 µs per step more than cached's, 0.07 % of the measured "
     "step (cached's median, 5.20 ms as the median of its 6 repetitions' medians) (no "
     "interval: a percentile-bootstrap interval "
     "needs >= 34 pairs); send's whole median step is 0.67 % longer than cached's (no "
     "interval: a percentile-bootstrap interval needs >= 34 pairs) (noisier). Medians "
     "over 6 repetitions; each share is the median difference over the median step.")])
def test_the_step_time_lines_follow_the_method(method, line):
    summaries = _step_time_cases()
    text = report(summaries, method)
    assert _step_time_findings(pd.DataFrame(summaries), method)[0] == line
    stat = "mean" if method == "t" else "median"
    assert text.splitlines()[1].startswith(
        f"send's cost per step (send minus cached, {stat} over repetitions (--ci-method "
        f"{method}); ")
    # the table gives the same figures: 5.25 or 5.20 ms, 75.0 or 35.0 µs, ...
    row = text.splitlines()[4].split()
    assert row[3:] == (["5.25", "75.0", "1.43", "5.83", "0.11"] if method == "t"
                       else ["5.20", "35.0", "0.67", "3.50", "0.07"])


def test_the_share_and_its_interval_are_of_one_statistic():
    t = mean_share(S2R_DIFF_NS, CACHED_NS, "t")
    sign = mean_share(S2R_DIFF_NS, CACHED_NS, "sign")
    boot = mean_share(S2R_DIFF_NS, CACHED_NS, "bootstrap")
    assert (t.statistic, t.diff_ns, t.base_ns) == ("mean", 35_000 / 6, 5_250_000)
    assert (t.high + t.low) / 2 == pytest.approx(t.share)  # centred on the mean's share
    # sign, 6 pairs: [x_(1), x_(6)] of the per-pair shares d_i / c_i (the shares R at
    # which the sign test keeps a median 0 of d_i - R c_i), around the median
    # difference over the median step
    assert (sign.statistic, sign.diff_ns, sign.base_ns, sign.share, sign.low, sign.high) == (
        "median", 3_500, 5_200_000, 3_500 / 5_200_000, 1_000 / 5_200_000,
        20_000 / 5_500_000)
    assert (boot.statistic, boot.share, boot.low, boot.high, boot.pairs) == (
        "median", 3_500 / 5_200_000, None, None, 6)
    with pytest.raises(ValueError, match="unknown interval method 'z'"):
        mean_share(S2R_DIFF_NS, CACHED_NS, "z")


def _ratio_t_interval(d, c):
    """The ratio estimator's 95 % t-interval of mean(d) / mean(c) over paired samples,
    recomputed here with numpy and scipy: R +/- t_{n-1} sd(d - R c) / (sqrt(n) mean(c))."""
    import numpy as np
    from scipy import stats as sps

    d, c = np.asarray(d, float), np.asarray(c, float)
    r = d.mean() / c.mean()
    half = sps.t.ppf(0.975, d.size - 1) * np.std(d - r * c, ddof=1) / (
        np.sqrt(d.size) * c.mean())
    return r, r - half, r + half


def test_the_t_share_interval_carries_the_steps_noise():
    # six noisy pairs: cached's step (ns) swings by a factor of 2, send's difference
    # with it; the difference's interval over a fixed mean step leaves that out
    import numpy as np
    from scipy import stats as sps

    d = [20_000.0, 60_000.0, 5_000.0, 90_000.0, 30_000.0, 10_000.0]
    c = [400_000.0, 800_000.0, 350_000.0, 900_000.0, 500_000.0, 300_000.0]
    m = mean_share(d, c, "t")
    r, low, high = _ratio_t_interval(d, c)
    assert (m.share, m.pairs, m.statistic) == (pytest.approx(215_000 / 3_250_000), 6, "mean")
    assert (m.low, m.high) == (pytest.approx(low, rel=1e-9), pytest.approx(high, rel=1e-9))
    # the old interval, the difference's alone over the mean step, is wider here (the
    # difference grows with the step, so the residuals are smaller than d's spread)
    naive = sps.t.ppf(0.975, 5) * np.std(d, ddof=1) / np.sqrt(6) / np.mean(c)
    assert high - low < 2 * naive
    # ... and narrower where the difference does not follow the step
    d2 = [30_000.0, 40_000.0, 25_000.0, 35_000.0, 45_000.0, 30_000.0]
    m2 = mean_share(d2, c, "t")
    r2, low2, high2 = _ratio_t_interval(d2, c)
    assert (m2.low, m2.high) == (pytest.approx(low2, rel=1e-9), pytest.approx(high2, rel=1e-9))
    naive2 = sps.t.ppf(0.975, 5) * np.std(d2, ddof=1) / np.sqrt(6) / np.mean(c)
    assert high2 - low2 > 2 * naive2
    # pairs stay paired: a missing value drops its pair, not one side
    m3 = mean_share(d + [None], c + [1_000_000.0], "t")
    assert (m3.share, m3.low, m3.high, m3.pairs) == (m.share, m.low, m.high, 6)


def test_the_sign_and_bootstrap_share_intervals_resample_the_pairs():
    import numpy as np

    d = [float(x) for x in (20, 60, 5, 90, 30, 10, 25, 40, 70)]
    c = [float(x) for x in (400, 800, 350, 900, 500, 300, 450, 600, 700)]
    sign = mean_share(d, c, "sign")
    shares = sorted(x / y for x, y in zip(d, c))
    # 9 pairs: k = 2 (P(Bin(9, 1/2) <= 1) = 0.0195 <= 0.025 < P(<= 2) = 0.0898),
    # so [x_(2), x_(8)] of the per-pair shares
    assert (sign.share, sign.low, sign.high) == (30 / 500, shares[1], shares[7])
    d34, c34 = (d * 4)[:34], (c * 4)[:34]  # 34 pairs, enough for the bootstrap
    boot = mean_share(d34, c34, "bootstrap")
    rng = np.random.default_rng(20291)
    idx = rng.integers(0, 34, size=(10_000, 34))
    a, b = np.asarray(d34), np.asarray(c34)
    lo, hi = np.percentile(np.median(a[idx], axis=1) / np.median(b[idx], axis=1),
                           [2.5, 97.5])
    assert (boot.share, boot.low, boot.high, boot.pairs) == (
        float(np.median(a) / np.median(b)), pytest.approx(lo), pytest.approx(hi), 34)


def _decode_steady_rows() -> list[dict]:
    rows = []
    for b in (4, 16):
        for rep, (cached, d_step, d_s2r) in enumerate(
                zip(CACHED_NS, STEP_DIFF_NS, S2R_DIFF_NS)):
            for policy, step, s2r in (("send", cached + d_step, 9_000.0 + d_s2r),
                                      ("cached", cached, 9_000.0)):
                s = _summary(policy, rep, 50_000.0, step + 1000)  # step_ns_median = step
                s.update(workload=f"num_running={b}", num_running=b,
                         case_id=f"num_running={b}/{policy}/msgpack#{rep}",
                         s2r_build_encode_decode_ns_median=s2r, run_id="run")
                rows.append(s)
    return rows


@pytest.mark.parametrize("method,drawn,title", [
    ("t", (75_000 / 5_250_000, 35_000 / 6 / 5_250_000), "mean(send - cached) / mean(cached's "
     "median step) over repetitions (bars: 95 % Student-t interval)"),
    ("sign", (35_000 / 5_200_000, 3_500 / 5_200_000), "median(send - cached) / median("
     "cached's median step) over repetitions (bars: 95 % sign-test interval)"),
    ("bootstrap", (35_000 / 5_200_000, 3_500 / 5_200_000), "median(send - cached) / "
     "median(cached's median step) over repetitions (no interval: a percentile-bootstrap "
     "interval needs >= 34 pairs)")])
def test_the_figure_draws_the_methods_share_and_interval(method, drawn, title):
    from ipc_bench.report import blocks

    res = _results(_decode_steady_rows())
    res.metadata["run"]["ci_method"] = method
    fig = plots.send_cost_share(res)
    text = fig._suptitle.get_text()
    assert title in text.replace("\n", " ")
    # the caption states what the title does, in the same words: the share and its bars
    formula, bars = title.split(" (", 1)
    caption = blocks.caption("send_cost_share", plots.drawn(fig))
    assert f"the findings' share, {formula}, each difference" in caption
    assert f"({bars.removesuffix(')')}" in caption
    assert max(len(line) for line in text.split("\n")) <= plots.NOTE_LINE_CHARS
    table = plots.send_cost_table(res.cases, labels=res.labels)
    _, axes = plots._figure(1, 2)
    bars, _ = plots._send_cost_series(table, [], axes, {}, method)
    for width, diffs, share in ((plots.SHARE_LINEWIDTHS[0], STEP_DIFF_NS, drawn[0]),
                                (plots.SHARE_LINEWIDTHS[1], S2R_DIFF_NS, drawn[1])):
        bar = next(b for b in bars if b[6]["linewidth"] == width)
        m = mean_share(diffs, CACHED_NS, method)
        assert bar[2] == pytest.approx([100 * share] * 2)
        if m.low is None:
            assert all(math.isnan(v) for v in bar[3] + bar[4])
        else:
            assert (bar[3][0], bar[4][0]) == pytest.approx((100 * m.low, 100 * m.high))


def test_the_terminal_of_a_step_time_run_follows_its_method(tmp_path):
    from analysis_run import bench_in_process

    proc = bench_in_process(  # cli.main in this process, its runners processes
        ["--scenario", "step-time", "--num-running", "4", "--steps", "5", "--warmup-steps",
         "1", "--codecs", "msgpack", "--step-time-ms", "2", "--no-single-process",
         "--no-floor", "--ci-method", "sign", "--output", str(tmp_path / "run")])
    assert proc.returncode == 0, proc.stderr
    assert ("send's cost per step (send minus cached, median over repetitions "
            "(--ci-method sign); ") in proc.stdout


def test_the_figure_of_one_repetition_says_it_draws_no_interval():
    rows = [r for r in _decode_steady_rows() if r["case_id"].endswith("#0")]
    fig = plots.send_cost_share(_results(rows))
    text = fig._suptitle.get_text().replace("\n", " ")
    assert "(one repetition: no interval)" in text and "bars:" not in text
