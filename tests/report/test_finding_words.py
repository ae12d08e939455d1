"""The findings say each number one way: the tokens/s change is the paired ratio and
the tok/s beside it are named means, the bytes share is of send's scheduler → runner payload, and the
median step difference names its direction and base."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import scipy.stats

from ipc_bench.report import findings
from test_metrics import _summary


def _cases(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([dict(r, run_id="run") for r in rows])


def _where(workload: str) -> str:
    return "At 4 running requests"


def test_the_tokens_finding_gives_the_paired_ratio_and_names_the_means():
    rows = [_summary("send", 0, 100_000.0, 282700.0),
            _summary("cached", 0, 70_000.0, 231400.0),
            _summary("send", 1, 43_600.0, 285000.0),
            _summary("cached", 1, 47_960.0, 230000.0)]
    res = type("R", (), {})()
    res.cases, res.labels, res.metadata = _cases(rows), ["num_running"], {"run": {}}
    tables = findings._pair_tables(res)
    key = next(iter(tables["tput"]))
    text = findings._pair_finding(res.cases, tables, key, _where, timed=False)
    assert text == (
        "At 4 running requests (msgpack), cached sends 81 fewer bytes per step to the runner "
        "(5.3 % of send's scheduler → runner payload), encodes the SchedulerOutput and the "
        "ModelRunnerOutput within noise of send's time per step (+0.0 % [+0.0, +0.0] %; "
        "send - cached: +0.00 µs), decodes them within noise of send's time per step "
        "(+0.0 % [+0.0, +0.0] %; send - cached: +0.00 µs) and saves 4.90 µs per step "
        "building the SchedulerOutput and the ModelRunnerOutput (-60.5 % [-60.5, -60.5] "
        "%); output tokens/s changes by "
        "-12.3 % [-95.0, +1450.0] % (over 2 repetitions, inconclusive (interval beyond "
        "1.1x either way); geometric means 66,030 → 57,941 tok/s).")


def test_a_one_repetition_ratio_says_so_in_its_own_finding():
    rows = [_summary("send", 0, 100_000.0, 282700.0), _summary("cached", 0, 49_300.0, 231400.0)]
    res = type("R", (), {})()
    res.cases, res.labels, res.metadata = _cases(rows), ["num_running"], {"run": {}}
    tables = findings._pair_tables(res)
    key = next(iter(tables["tput"]))
    text = findings._pair_finding(res.cases, tables, key, _where, timed=False)
    assert text.endswith("output tokens/s changes by -50.7 % (one repetition, no "
                         "interval: 100,000 → 49,300 tok/s).")


def test_the_share_finding_names_the_direction_and_base_of_the_step_difference():
    rows = []
    for policy, step, s2r in (("send", 110_000.0, 12_000.0), ("cached", 100_000.0, 9_000.0)):
        s = _summary(policy, 0, 50_000.0, step + 1000)  # step_ns_median = step
        s["s2r_build_encode_decode_ns_median"] = s2r
        rows.append(s)
    assert findings._share_findings(_cases(rows), _where, ["num_running"]) == [
        "At 4 running requests (msgpack), send's SchedulerOutput path (build + encode + "
        "decode, medians) costs 3.00 µs per step more than cached's, 3.00 % of cached's "
        "100.0 µs median step; send's whole median step, 110.0 µs, is 10.00 % longer "
        "than cached's (noisier; one repetition, no interval)."]


def test_the_share_finding_takes_its_figures_from_one_aggregation():
    # Two repetitions whose per-pair shares are 1 % and 5 % (mean 3 %): the finding's
    # figures are means over the repetitions (4.00 µs over a 250.0 µs step), and its
    # shares are what those printed figures give: 4.00 / 250.0 = 1.60 %, and the whole
    # step (175.0 against 250.0 µs) 30.00 % shorter.
    rows = []
    for rep, (send_step, cached_step, d_s2r) in enumerate(((150_000.0, 200_000.0, 2_000.0),
                                                           (200_000.0, 300_000.0, 6_000.0))):
        for policy, step, s2r in (("send", send_step, 9_000.0 + d_s2r),
                                  ("cached", cached_step, 9_000.0)):
            s = _summary(policy, rep, 50_000.0, step + 1000)  # step_ns_median = step
            s["s2r_build_encode_decode_ns_median"] = s2r
            rows.append(s)
    assert findings._share_findings(_cases(rows), _where, ["num_running"]) == [
        "At 4 running requests (msgpack), send's SchedulerOutput path (build + encode + "
        "decode, medians) is not resolved from cached's: +4.00 µs per step, +1.60 % of "
        "cached's step, 250.0 µs as the mean of its 2 repetitions' median steps (send - cached: "
        "[-4.50, +7.70] %, 95 % Student-t "
        "interval), [-11, +19] µs per step: the interval holds 0 but reaches beyond 1 % of "
        "the step, so it does not show the cost is small; send's whole step, 175.0 µs as the same mean, differs from cached's "
        "by -30.00 % (send - cached: [-80.82, +20.82] %, 95 % Student-t interval), "
        "inconclusive (interval beyond 1.1x either way) "
        "(noisier; means over 2 "
        "repetitions of each case's figures, not the geometric means over repetitions that "
        "`bench.py`'s comparison block prints as `step median`)."]
    # the ratio estimator's interval: the s2r residuals d - R c (R = 4,000 / 250,000 =
    # 0.016) are 2,000 - 3,200 and 6,000 - 4,800 = -1,200 and +1,200 ns, deviation
    # 1,697 ns; 12.706 (t, 1 degree of freedom) x 1,697 / sqrt(2) / 250,000 = 6.10 %
    # around 1.60 %: [-4.50, +7.70] %; the whole step's residuals -50,000 + 60,000 and
    # -100,000 + 90,000 ns give 12.706 x 14,142 / sqrt(2) / 250,000 = 50.82 % around
    # -30.00 %: [-80.82, +20.82] %.


def test_the_emulated_note_names_the_arms_that_ran():
    import types

    from ipc_bench.report import blocks

    rows = [dict(policy="send", arm=arm, emulated=True, emulated_gpu="H200",
                 gpu_figures="uncalibrated") for arm in ("send", "send'")]
    one = types.SimpleNamespace(cases=pd.DataFrame(rows))
    assert blocks._emulated_block(one.cases)[1].endswith(
        "so step times and tokens/s are what `send` and `send'` cost next to that step, "
        "not a measured GPU run.")
    one.cases = pd.DataFrame(rows[:1])
    assert blocks._emulated_block(one.cases)[1].endswith(
        "so step times and tokens/s are what `send` costs next to that step, not a "
        "measured GPU run.")


def test_a_timed_replay_of_one_policy_speaks_of_no_pair(tmp_path):
    from analysis_run import run_bench
    from ipc_bench.analysis.results import load
    from test_timed_no_floor import write_trace

    write_trace(tmp_path / "trace.csv")
    run_bench(tmp_path / "timed", ["--scenario", "azure-conv-timed", "--trace",
                                   str(tmp_path / "trace.csv"), "--max-requests", "6",
                                   "--codecs", "msgpack", "--warmup-steps", "2",
                                   "--policies", "send"])
    from ipc_bench.analysis.pace import replay_pace

    lines = findings.findings(load(tmp_path / "timed"))
    assert findings.TIMED_REPLAY_ONE_ARM == (
        "This is a timed replay: arrivals follow the trace's clock, so a case's tokens/s "
        "follows the trace, not the harness, and is no throughput figure; the latencies "
        "(the Latency section) are the result.")
    # its words follow the case's recorded pace: arrival-bound on an idle machine (the
    # engine keeps up with arrivals 5 ms apart); a loaded one can leave a request
    # waiting behind a slow step, and the case is then load-bound by its own records
    [case] = json.loads((tmp_path / "timed" / "summary.json").read_text())["cases"]
    if replay_pace(case) == "arrival-bound":
        assert findings.TIMED_REPLAY_ONE_ARM in lines
    else:
        assert replay_pace(case) == "load-bound"
        assert any(ln.startswith("This is a timed replay, but load-bound: ") for ln in lines)
    assert not any("both policies" in ln for ln in lines)


def test_the_share_figure_of_a_timed_replay_does_not_point_to_a_share_finding():
    import pytest

    from ipc_bench.report import plots
    from test_withheld_figures import results_of

    rows = [dict(_summary(p, 0, 50_000.0, 200_000.0), trace_speedup=1.0,
                 num_running_mean=4.0, s2r_build_encode_decode_ns_median=9_000.0)
            for p in ("send", "cached")]
    with pytest.raises(plots.NoData) as info:
        plots.send_cost_share(results_of(rows))
    assert str(info.value) == (
        "one workload only: this figure needs a sweep over running requests or step times "
        "(decode-steady, step-time); a timed replay's steps wait for arrivals, so the "
        "findings give its latencies instead")
    rows = [{k: v for k, v in r.items() if k != "trace_speedup"} for r in rows]
    with pytest.raises(plots.NoData) as info:
        plots.send_cost_share(results_of(rows))
    assert str(info.value).endswith("(decode-steady, step-time); the findings give the share")


def _sp_steps(one, two) -> str:
    """The single-process finding's step cost of an arm whose cases ran 4 tokens a step
    at ``one`` (single process) and ``two`` (two processes) tok/s by repetition:
    ``; its mean step +X µs [lo, hi] over the single process's``, the mean of the
    per-repetition differences of their steps (4e9 / tok/s ns) with the Student-t
    interval, by hand (no interval with one repetition)."""
    d = 4e6 / np.asarray(two, dtype=float) - 4e6 / np.asarray(one, dtype=float)  # µs
    if len(d) == 1:
        return f"; its mean step {d[0]:+,.1f} µs over the single process's"
    half = scipy.stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    return (f"; its mean step {d.mean():+,.1f} µs [{d.mean() - half:+,.1f}, "
            f"{d.mean() + half:+,.1f}] over the single process's")


#: The single-process finding's words on what its step cost is (``findings._step_cost_over``).
SP_STEP_OVER = ("; µs per step: the two-process case's mean step less the single process's, "
                "the mean of the per-repetition differences")
#: ... with its interval, and why that can read apart from the ratio's.
SP_STEP_INTERVAL = (" [95 % Student-t interval], an interval of the step times' differences, "
                    "not of the tokens/s ratios' logs, so it can exclude 0 where the "
                    "ratio's holds 1")
#: ... of one repetition: no statistic over repetitions named.
SP_STEP_ONE = "; µs per step: the two-process case's mean step less the single process's"


def test_the_single_process_finding_keeps_each_arm_apart():
    # cached 235,000 and cached+async 152,000 tok/s single-process were averaged into
    # one 193,500 against the two-process cases of both: each arm now stands against
    # its own two-process case.
    rows = []
    for rep in range(2):
        for arm, policy, single, two in (("cached", "cached", 235_000.0, 100_000.0),
                                         ("cached+async", "cached", 152_000.0, 80_000.0)):
            for codec, tok in (("none", single + rep), ("msgpack", two + rep)):
                rows.append(dict(_summary(policy, rep, tok, 4e9 / tok), codec=codec,
                                 arm=arm, case_id=f"num_running=4/{arm}/{codec}#{rep}"))
    assert findings._single_process_findings(_cases(rows), _where) == [
        "At 4 running requests, the single-process baseline (no IPC, no serialization; "
        "with the null model, whose step computes nothing) "
        "runs, each arm against its own two-process case with msgpack, the run's only "
        "two-process codec (2 repetitions, paired by "
        "repetition: geometric mean of the per-repetition ratios [95 % Student-t "
        "interval]; tok/s: each case's geometric mean over them, whose quotient is the "
        "ratio" + SP_STEP_OVER + SP_STEP_INTERVAL + "; 2 ratio intervals in this "
        "line (2 arms x 1 codec), each unadjusted: were every true ratio 1.00x, "
        "the chance that one or more excludes 1.00x is up to 10 % (2 x 5 %)): cached: "
        "235,000 tok/s, 2.35x [2.35, 2.35] two processes with msgpack (100,000 tok/s"
        + _sp_steps([235_000.0, 235_001.0], [100_000.0, 100_001.0]) + "); "
        "cached+async: 152,000 tok/s, 1.90x [1.90, 1.90] two processes with msgpack "
        "(80,000 tok/s" + _sp_steps([152_000.0, 152_001.0], [80_000.0, 80_001.0])
        + "): against msgpack, the cost of having IPC at all."]


def test_the_single_process_finding_pairs_the_repetitions_both_cases_finished():
    # an interrupted --repeat 3 run: cached's single-process case finished repetition 0
    # alone, its two-process case 0 and 1 (10,696 and 14,677 tok/s): the ratio is of
    # repetition 0's pair, not of 34,509 against the mean of both (12,686)
    rows = [dict(_summary("cached", 0, 34_509.0, 4e9 / 34_509.0), codec="none"),
            dict(_summary("cached", 0, 10_696.0, 4e9 / 10_696.0), codec="msgpack"),
            dict(_summary("cached", 1, 14_677.0, 4e9 / 14_677.0), codec="msgpack"),
            dict(_summary("send", 0, 30_000.0, 4e9 / 30_000.0), codec="none"),
            dict(_summary("send", 1, 32_000.0, 4e9 / 32_000.0), codec="none"),
            dict(_summary("send", 0, 10_000.0, 4e9 / 10_000.0), codec="msgpack"),
            dict(_summary("send", 1, 12_000.0, 4e9 / 12_000.0), codec="msgpack")]
    # send's two pairs: geometric means and the Student-t interval of the log ratios
    one, two = np.array([30_000.0, 32_000.0]), np.array([10_000.0, 12_000.0])
    logs = np.log(one / two)
    half = scipy.stats.t.ppf(0.975, 1) * logs.std(ddof=1) / np.sqrt(2)
    send_one, send_two = np.exp(np.log(one).mean()), np.exp(np.log(two).mean())
    send_ratio = np.exp(logs.mean())
    send_low, send_high = np.exp(logs.mean() - half), np.exp(logs.mean() + half)
    assert findings._single_process_findings(_cases(rows), _where) == [
        "At 4 running requests, the single-process baseline (no IPC, no serialization; "
        "with the null model, whose step computes nothing) "
        "runs, each arm against its own two-process case with msgpack, the run's only "
        "two-process codec (up to 2 repetitions, paired "
        "by repetition: geometric mean of the per-repetition ratios [95 % Student-t "
        "interval]; tok/s: each case's geometric mean over them, whose quotient is the "
        "ratio, each arm's over the repetitions both its cases finished" + SP_STEP_OVER
        + SP_STEP_INTERVAL + "): "
        "cached: 34,509 tok/s, 3.23x (one repetition, no interval) two processes with "
        f"msgpack (10,696 tok/s{_sp_steps([34_509.0], [10_696.0])}); send: "
        f"{send_one:,.0f} tok/s, {send_ratio:.2f}x "
        f"[{send_low:.2f}, {send_high:.2f}] two processes with msgpack "
        f"({send_two:,.0f} tok/s{_sp_steps(one, two)}): against msgpack, for cached, "
        "one repetition, no "
        "interval to tell it "
        "from noise: not established as the cost of having IPC; for send, the cost of "
        "having IPC at all."]


def _tight_pair_finding(recorded):
    rows = []
    for rep, (send, cached) in enumerate(((100_000.0, 106_000.0), (90_000.0, 96_300.0),
                                          (110_000.0, 117_000.0))):
        rows += [_summary("send", rep, send, 282700.0), _summary("cached", rep, cached, 231400.0)]
    res = type("R", (), {})()
    res.cases, res.labels, res.metadata = _cases(rows), ["num_running"], {"run": {}}
    tables = findings._pair_tables(res)
    key = next(iter(tables["tput"]))
    return findings._pair_finding(res.cases, tables, key, _where, timed=False,
                                  recorded={key: {"output_tokens_per_s": recorded}}
                                  if recorded else None)


def test_a_pair_finding_states_its_verdict_and_that_its_interval_is_unadjusted():
    # The interval excludes zero, but the Holm-adjusted test does not find a
    # significant difference: the finding says so instead of reading as significant.
    text = _tight_pair_finding(dict(significant=False, adjustment="holm", p_value=0.022,
                                    p_adjusted=0.131, family_size=6))
    assert text.endswith(
        "output tokens/s changes by +6.5 % [+5.2, +7.7] % (over 3 repetitions, not "
        "significant after Holm (p 0.022, adjusted 0.131); geometric means 99,666 → "
        "106,098 tok/s).")
    # the legend under the findings says what that verdict means, with its family
    legend = findings.findings_legend(
        [text], "t", {("w", "msgpack", None, None): {"m": {"family_size": 6}}})
    assert ("**significant, not significant or no significant difference after Holm (p, "
            "adjusted)**: the verdict of the run's comparison (the one `bench.py` printed), "
            "by Holm's correction over the 6 timed metrics its comparison tests together: "
            "p unadjusted, then Holm-adjusted; `not significant after Holm` where the "
            "unadjusted interval shown does not include 0 % but the adjusted test finds no "
            "significant difference (`inconclusive: not significant after Holm` where that "
            "interval also reaches beyond 1.1x either way), `no significant difference after Holm` "
            "where it includes 0 %.") in legend
    # the terminal's comparison block gives the same verdicts in the same words
    from ipc_bench.analysis import stats
    from ipc_bench.report import tables

    assert f"`{stats.NOT_SIGNIFICANT_HOLM}` where" in legend
    assert f"(`{tables.INCONCLUSIVE_HOLM}` where" in legend
    assert "not significant after Holm (p 0.022" in text
    text = _tight_pair_finding(dict(significant=True, adjustment="holm", p_value=0.002,
                                    p_adjusted=0.012, family_size=6))
    assert ("(over 3 repetitions, significant after Holm (p 0.002, adjusted 0.012); "
            "geometric means") in text
    # without the run's recorded comparison: its own test, named unadjusted
    assert "3 repetitions, significant (unadjusted test); geometric means" in _tight_pair_finding(None)


def test_a_one_repetition_timed_replay_carries_the_caveat_before_its_latencies(tmp_path):
    # Its latency percentiles (e.g. "TTFT ... p99 22.7 → 35.5 ms") are one replay's:
    # the caveat every other one-repetition report prints comes first.
    from analysis_run import run_bench
    from ipc_bench.analysis.results import load
    from test_timed_no_floor import write_trace

    write_trace(tmp_path / "trace.csv")
    run_bench(tmp_path / "timed", ["--scenario", "azure-conv-timed", "--trace",
                                   str(tmp_path / "trace.csv"), "--max-requests", "6",
                                   "--codecs", "msgpack", "--warmup-steps", "2"])
    lines = findings.findings(load(tmp_path / "timed"))
    latency = [i for i, ln in enumerate(lines) if "latency send → cached:" in ln]
    assert latency and lines[0] == findings.ONE_REPETITION == (
        "One repetition per case, so no intervals: a difference of any size may be the "
        "machine's noise, which can reach tens of % between two runs of one case on a "
        "loaded machine (run with `--repeat N` for 95 % intervals).")
    assert lines.index(findings.ONE_REPETITION) < min(latency)


def _single_process_rows(pairs: dict[str, tuple[float, float]]) -> list[dict]:
    """Two repetitions of each arm's single-process and two-process msgpack cases:
    ``pairs``: arm -> (single-process tok/s, two-process tok/s)."""
    rows = []
    for rep in range(2):
        for arm, (single, two) in pairs.items():
            policy = arm.split("+")[0]
            for codec, tok in (("none", single), ("msgpack", two)):
                rows.append(dict(_summary(policy, rep, tok, 4e9 / tok), codec=codec,
                                 arm=arm, case_id=f"num_running=4/{arm}/{codec}#{rep}"))
    return rows


def test_a_slower_single_process_is_not_called_the_cost_of_ipc():
    # The single process ran 0.91x the two-process case: it was slower, so there is no
    # cost of IPC to read, and the finding no longer claims one; where the interval
    # holds 1.00x (1.00x [1.00, 1.00]) it cannot tell a cost from none.
    rows = _single_process_rows({"send": (91_000.0, 100_000.0),
                                 "cached": (95_000.0, 100_000.0)})
    assert findings._single_process_findings(_cases(rows), _where) == [
        "At 4 running requests, the single-process baseline (no IPC, no serialization; "
        "with the null model, whose step computes nothing) "
        "runs, each arm against its own two-process case with msgpack, the run's only "
        "two-process codec (2 repetitions, paired by "
        "repetition: geometric mean of the per-repetition ratios [95 % Student-t "
        "interval]; tok/s: each case's geometric mean over them, whose quotient is the "
        "ratio" + SP_STEP_OVER + SP_STEP_INTERVAL + "; 2 ratio intervals in this "
        "line (2 arms x 1 codec), each unadjusted: were every true ratio 1.00x, "
        "the chance that one or more excludes 1.00x is up to 10 % (2 x 5 %)): cached: "
        "95,000 tok/s, 0.95x [0.95, 0.95] two processes with msgpack (100,000 tok/s; its "
        "mean step -2.1 µs [-2.1, -2.1] over the single process's); "
        "send: 91,000 tok/s, 0.91x [0.91, 0.91] two processes with msgpack "
        "(100,000 tok/s; its mean step -4.0 µs [-4.0, -4.0] over the single process's): "
        "against msgpack, the single "
        "process was slower than the two-process case, so no cost of having IPC is "
        "measurable here."]
    mixed = _single_process_rows({"send": (91_000.0, 100_000.0),
                                  "cached": (235_000.0, 100_000.0)})
    assert findings._single_process_findings(_cases(mixed), _where)[0].endswith(
        "cached: 235,000 tok/s, 2.35x [2.35, 2.35] two processes with msgpack "
        "(100,000 tok/s; its mean step +23.0 µs [+23.0, +23.0] over the single process's); "
        "send: 91,000 tok/s, 0.91x [0.91, 0.91] two processes with msgpack "
        "(100,000 tok/s; its mean step -4.0 µs [-4.0, -4.0] over the single process's): "
        "against msgpack, for cached, "
        "the cost of having IPC at all; for send, the single process was slower than the "
        "two-process case, so no cost of having IPC is measurable there.")
    even = _single_process_rows({"send": (100_000.0, 100_000.0)})
    assert findings._single_process_findings(_cases(even), _where)[0].endswith(
        "1.00x [1.00, 1.00] two processes with msgpack (100,000 tok/s; its mean step +0.0 µs "
        "[+0.0, +0.0] over the single process's): against msgpack, within noise, "
        "the interval holding 1.00x: the data cannot tell a cost of having IPC from none.")
    # 1.00001x both repetitions: an interval that 2 decimals would print [1.00, 1.00],
    # and which the finding read as holding 1.00x, lies above it; printed with the
    # digits that show so, it reads as it prints, and so does its point (1.00x before)
    above = _single_process_rows({"send": (100_001.0, 100_000.0)})
    assert findings._single_process_findings(_cases(above), _where)[0].endswith(
        "1.00001x [1.00001, 1.00001] two processes with msgpack (100,000 tok/s; its mean "
        "step +0.0004 µs [+0.0004, +0.0004] over the single process's): against "
        "msgpack, the cost of having IPC at all.")
    # one repetition at 1.00001x: no interval, so not established as a cost (read as
    # printed: at 1.00x it was said to be no faster)
    one = [r for r in above if r["repetition"] == 0]
    assert findings._single_process_findings(_cases(one), _where)[0].endswith(
        "1.00001x two processes with msgpack (100,000 tok/s; its mean step +0.0004 µs "
        "over the single process's): against msgpack, one repetition, no interval to "
        "tell it from noise: not established as the cost of having IPC.")
    even = [r for r in _single_process_rows({"send": (100_000.0, 100_000.0)})
            if r["repetition"] == 0]
    assert findings._single_process_findings(_cases(even), _where)[0].endswith(
        "1.00x two processes with msgpack (100,000 tok/s; its mean step +0.0 µs over the "
        "single process's): against msgpack, the single process was no faster than the "
        "two-process case, so no cost of having IPC is measurable here.")


def _noisy_single_process_rows(pairs: dict[str, tuple[list, list]]) -> list[dict]:
    """Each arm's single-process and two-process msgpack cases by repetition:
    ``pairs``: arm -> (single-process tok/s by repetition, two-process's)."""
    rows = []
    for arm, (single, two) in pairs.items():
        for rep, (one_tok, two_tok) in enumerate(zip(single, two)):
            for codec, tok in (("none", one_tok), ("msgpack", two_tok)):
                rows.append(dict(_summary(arm, rep, tok, 4e9 / tok), codec=codec,
                                 case_id=f"num_running=4/{arm}/{codec}#{rep}"))
    return rows


def test_a_single_process_ratio_whose_interval_holds_1_is_not_called_a_cost():
    # An emulated 1B run printed send's 1.31x [0.91, 1.90] "the cost of having IPC at
    # all": an interval that holds 1.00x cannot tell that cost from none, and says so.
    rows = _noisy_single_process_rows({"send": ([52_000.0, 70_000.0, 40_000.0],
                                                [40_000.0, 45_000.0, 38_000.0])})
    text = findings._single_process_findings(_cases(rows), _where)[0]
    assert text.endswith(
        "send: 52,608 tok/s, 1.29x [0.79, 2.09] two processes with msgpack (40,896 "
        "tok/s" + _sp_steps([52_000.0, 70_000.0, 40_000.0], [40_000.0, 45_000.0, 38_000.0])
        + "): against msgpack, inconclusive (interval beyond 1.1x either way), the interval "
        "holding 1.00x: the data cannot tell a cost of having IPC from none.")
    # the legend under the findings defines the verdict it uses
    assert ("**inconclusive (interval beyond 1.1x either way)**: no significant difference, but "
            "the interval reaches beyond 1.1x either way, too few repetitions or too noisy to tell "
            "a 10 % difference from none.") in findings.findings_legend([text], "t", {})
    # an 8B run: cached's 1.04x [0.88, 1.21] beside send's interval above 1.00x (the
    # figures: the Student-t interval of the log ratios, checked by hand)
    rows = _noisy_single_process_rows({
        "send": ([56_000.0, 58_000.0, 57_000.0], [40_000.0, 41_000.0, 40_500.0]),
        "cached": ([52_000.0, 46_000.0, 50_000.0], [47_000.0, 48_000.0, 46_000.0])})
    assert findings._single_process_findings(_cases(rows), _where)[0].endswith(
        "cached: 49,269 tok/s, 1.05x [0.86, 1.27] two processes with msgpack (46,993 "
        "tok/s" + _sp_steps([52_000.0, 46_000.0, 50_000.0], [47_000.0, 48_000.0, 46_000.0])
        + "); send: 56,994 tok/s, 1.41x [1.39, 1.43] two processes with msgpack "
        "(40,498 tok/s" + _sp_steps([56_000.0, 58_000.0, 57_000.0],
                                    [40_000.0, 41_000.0, 40_500.0])
        + "): against msgpack, for cached, inconclusive (interval beyond 1.1x either way), the interval "
        "holding 1.00x: the data cannot tell a cost of having IPC from none; for send, "
        "the cost of having IPC at all.")
    # within 1.1x either way: within noise, the same reading
    rows = _noisy_single_process_rows({"send": ([40_400.0, 41_000.0, 40_100.0],
                                                [40_000.0, 41_300.0, 39_900.0])})
    assert findings._single_process_findings(_cases(rows), _where)[0].endswith(
        "send: 40,498 tok/s, 1.003x [0.98, 1.02] two processes with msgpack (40,395 "
        "tok/s" + _sp_steps([40_400.0, 41_000.0, 40_100.0], [40_000.0, 41_300.0, 39_900.0])
        + "): against msgpack, within noise, "
        "the interval holding 1.00x: the data cannot tell a cost of having IPC from none.")


def test_a_single_process_ratio_with_no_interval_is_not_called_a_cost():
    # one repetition of 1.30x: said to be one, and not established as a cost
    rows = _noisy_single_process_rows({"send": ([52_000.0], [40_000.0]),
                                       "cached": ([49_000.0], [50_000.0])})
    assert findings._single_process_findings(_cases(rows), _where)[0].endswith(
        "(one repetition: one sample, no interval" + SP_STEP_ONE + "): cached: 49,000 "
        "tok/s, 0.98x two processes with msgpack (50,000 tok/s; its mean step -1.6 µs "
        "over the single process's); send: 52,000 tok/s, 1.30x two processes with "
        "msgpack (40,000 tok/s; its mean step +23.1 µs over the single process's): "
        "against msgpack, for send, one "
        "repetition, no interval "
        "to tell it from noise: not established as the cost of having IPC; for cached, "
        "the single process was slower than the two-process case, so no cost of having "
        "IPC is measurable there.")
    # three repetitions under the sign test, which needs 6 for an interval
    rows = _noisy_single_process_rows({"send": ([52_000.0, 53_000.0, 51_000.0],
                                                [40_000.0, 40_000.0, 40_000.0])})
    assert findings._single_process_findings(_cases(rows), _where, method="sign")[
        0].endswith("send: 51,994 tok/s, 1.30x (3 repetitions, no interval) two processes "
                    "with msgpack (40,000 tok/s; its mean step +23.1 µs over the single "
                    "process's): against msgpack, 3 repetitions, no interval to tell it from noise: "
                    "not established as the cost of having IPC.")


def test_equal_bytes_are_said_as_such_not_as_0_fewer():
    """A codec whose messages carry no token ids either way (replicated): both arms
    send the same bytes, and the clause says so instead of `0 fewer (0.0 %)`."""
    rows = [_summary("send", 0, 100_000.0, 282700.0), _summary("cached", 0, 99_000.0, 231400.0)]
    rows[1]["sched_to_runner_payload_bytes_per_step"] = rows[0][
        "sched_to_runner_payload_bytes_per_step"]
    res = type("R", (), {})()
    res.cases, res.labels, res.metadata = _cases(rows), ["num_running"], {"run": {}}
    tables = findings._pair_tables(res)
    text = findings._pair_finding(res.cases, tables, next(iter(tables["tput"])), _where,
                                  timed=False)
    assert text.startswith("At 4 running requests (msgpack), cached sends as many bytes "
                           "per step to the runner as send, encodes the SchedulerOutput and "
                           "the ModelRunnerOutput in the same time per step as send (0.00 µs "
                           "difference; one repetition, no interval), decodes them in the "
                           "same time per step as send (0.00 µs difference; one repetition, "
                           "no interval) and saves 4.90 µs ")


def _timed_finding(figures: list[tuple[str, int, float, float]]) -> str:
    """The timed-replay finding of summaries (policy, repetition, wall tok/s, wall_s)."""
    rows = [dict(_summary(policy, rep, tps, 200_000.0), trace_speedup=20.0, wall_s=wall_s)
            for policy, rep, tps, wall_s in figures]
    res = type("R", (), {})()
    res.cases, res.labels, res.metadata = _cases(rows), ["num_running"], {"run": {}}
    tables = findings._pair_tables(res)
    return findings._timed_replay_finding(res.cases, tables["tput"], _where, {})


def test_a_timed_replays_finding_gives_its_wall_times_and_claims_no_likeness():
    # A trial's replay: 667 against 480 tok/s (wall), 2.7 against 3.4 s; the finding
    # said "both policies produce the same tokens in about the same wall time".
    text = _timed_finding([("send", 0, 667.0, 2.7), ("cached", 0, 480.0, 3.4)])
    assert text == (
        "This is a timed replay: arrivals follow the trace's clock, so its tokens/s "
        "(wall), every output token over the wall time from the first arrival to the last "
        "completion, measures the arrivals, not throughput; the latencies (the Latency "
        "section) are the result. Its pace was not recorded (a run before the figures "
        "that label it): had its requests queued, its tokens/s (wall) would be the "
        "engine's throughput under that backlog instead. At 4 running requests (msgpack), "
        "send ran 2.70 s and cached 3.40 s of wall time, first arrival to last completion: "
        "667 → 480 tok/s (wall), -28.0 % (one repetition, no interval).")
    assert "about the same" not in text


def test_a_timed_replays_wall_times_are_about_the_same_only_within_noise():
    # Two pairs of ratios 1.001 and 0.999: the interval holds 0 % within 1.1x either way;
    # their geometric mean, -0.00005 %, prints on its side of 0, not as -0.0 %.
    text = _timed_finding([("send", 0, 1000.0, 2.0), ("cached", 0, 1001.0, 2.0),
                           ("send", 1, 1000.0, 2.0), ("cached", 1, 999.0, 2.0)])
    assert text.endswith(
        "At 4 running requests (msgpack), send ran 2.00 s and cached 2.00 s of wall time, "
        "first arrival to last completion (means over repetitions): 1,000 → 1,000 tok/s "
        "(wall), -0.0001 % [-1.3, +1.3] % (paired geometric mean over 2 repetitions, no "
        "significant difference), within noise: about the same wall time.")
    # Ratios 1.1 and 0.9: the interval reaches beyond 1.1x either way: inconclusive, not alike.
    text = _timed_finding([("send", 0, 1000.0, 2.0), ("cached", 0, 1100.0, 1.8),
                           ("send", 1, 1000.0, 2.0), ("cached", 1, 900.0, 2.2)])
    assert text.endswith(
        "At 4 running requests (msgpack), send ran 2.00 s and cached 2.00 s of wall time, "
        "first arrival to last completion (means over repetitions): 1,000 → 1,000 tok/s "
        "(wall), -0.5 % [-72.2, +256.0] % (paired geometric mean over 2 repetitions, "
        "inconclusive (interval beyond 1.1x either way)).")


def test_the_token_bytes_finding_says_preempted_requests_resend_whole_lists():
    # a resumed request re-sends its prompt and outputs from token 0, counted with the
    # prompt chunks: a run with preemptions and no chunked prefill showed 5.953 B of
    # "prompt chunks re-sent during chunked prefill"
    rows = pd.DataFrame([
        dict(policy="send", codec="msgpack", workload="trace=burst", arm="send",
             decode_token_bytes_per_step=20.25, prompt_chunk_bytes_per_step=5.953,
             sched_to_runner_payload_bytes_per_step=400.0, num_preemptions=12),
        dict(policy="cached", codec="msgpack", workload="trace=burst", arm="cached",
             decode_token_bytes_per_step=0.0, prompt_chunk_bytes_per_step=0.0,
             sched_to_runner_payload_bytes_per_step=374.0, num_preemptions=12)])
    assert findings._token_bytes_findings(rows) == [
        "On `trace=burst` (msgpack), send's new_token_ids take 26.2 of 400 bytes per step: "
        "20.2 B decode tokens and 6.0 B prompt chunks re-sent during chunked prefill and "
        "the whole lists of requests resumed after preemption in the counted steps, if "
        "any (up to 12 preemptions a case, warm-up included)."]
    rows["num_preemptions"] = 0
    assert findings._token_bytes_findings(rows)[0].endswith(
        "6.0 B prompt chunks re-sent during chunked prefill.")
