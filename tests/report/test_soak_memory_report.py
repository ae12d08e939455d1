"""The soak's headline, memory after warm-up: the report gives the same figures and
verdict as the terminal (``analysis.soak.memory_lines``), as a finding and a table, and
says what counts as flat for the live Python allocations; each verdict names the growth
it judges (at the end) and the largest after warm-up where that shows higher. The
report also gives the terminal's step counts (warm-up and counted apart) and byte
drift lines (``analysis.soak.soak_lines``)."""

from __future__ import annotations

import pandas as pd

from ipc_bench.analysis.soak import (MEMORY_TABLE_HEADER, drift_finding, drift_lines,
                                     memory_finding, memory_lines, memory_table_rows,
                                     python_line, run_line)
from ipc_bench.report import blocks, findings
from ipc_bench.scenarios.soak import report
from test_withheld_figures import results_of

MIB = 2**20


def _soak(**extra):
    s = dict(scenario="soak", case_id="trace=soak:300/send/msgpack#0", workload="trace=soak:300",
             policy="send", codec="msgpack", transport="ipc", model="null", repetition=0,
             complete=True, num_steps=2000, num_warmup_steps=50, num_total_steps=2050,
             num_requests=300,
             wall_s=60.0, trace_speedup=12.0, output_tokens_per_s=5000.0)
    for who, kind, base, growth in (("sched", "rss", 60, 3.0), ("sched", "anon", 20, 15.12),
                                    ("runner", "rss", 50, 1.0), ("runner", "anon", 10, 2.0)):
        key = f"{who}_{kind}"
        s.update({f"{key}_baseline_bytes": base * MIB,
                  f"{key}_end_bytes": base * MIB * (1 + growth / 100),
                  f"{key}_growth_pct": growth, f"{key}_max_growth_pct": growth + 1,
                  f"{key}_slope_bytes_per_min": 120 * 1024.0,
                  f"{key}_late_slope_bytes_per_min": 80 * 1024.0})
    s.update(sched_py_baseline_bytes=100_000.0, sched_py_end_bytes=100_500.0,
             sched_py_growth_pct=0.5)
    s.update(extra)
    return s


SCHED_ANON = ("sched  RssAnon: baseline 20.0 MiB, end 23.0 MiB, slope +120.0 KiB/min, "
              "second half +80.0 KiB/min: OVER (growth at the end +15.12 % ≥ 5 %; the "
              "largest after warm-up, +16.12 %, is not judged)")
PY = ("sched  live Python allocations: 100,000 -> 100,500 blocks: flat (growth at the end "
      "+0.50 %, within ±1 %): growth of RSS is then allocator fragmentation or memory held "
      "free, not live Python objects")
RUN = ("Soak trace=soak:300/send/msgpack#0: 2,050 steps (50 warm-up, 2,000 counted), 300 "
       "requests, 60 s at 12.00x")
#: The terminal's memory lines of a soak with too few samples, as the report lists them.
TOO_FEW = [f"{who} {what}: too few samples" for who in ("sched", "runner")
           for what in ("VmRSS", "RssAnon")]
DRIFT = dict(s2r_decode_bytes_per_req_baseline=112.11, s2r_decode_bytes_per_req_end=107.42,
             s2r_decode_bytes_per_req_drift_pct=-4.18, r2s_decode_bytes_per_req_baseline=97.65,
             r2s_decode_bytes_per_req_end=94.94, r2s_decode_bytes_per_req_drift_pct=-2.78)
DRIFT_LINES = ["s2r payload bytes per request per decode step: 112.11 -> 107.42 (-4.18 %)",
               "r2s payload bytes per request per decode step: 97.65 -> 94.94 (-2.78 %)"]


def test_the_terminal_prints_the_memory_lines():
    s = _soak()
    text = report([s])
    assert f"  {SCHED_ANON}" in text.splitlines()
    assert f"  {PY}" in text.splitlines()
    assert [f"  {x}" for x in memory_lines(s)] == text.splitlines()[2:7]
    assert text.splitlines()[1] == RUN  # every step, warm-up and counted apart


def test_not_flat_says_so():
    s = _soak(sched_py_growth_pct=-3.0, sched_py_end_bytes=97_000.0)
    assert python_line(s) == (
        "sched  live Python allocations: 100,000 -> 97,000 blocks: not flat (growth at "
        "the end -3.00 %, beyond ±1 %): live Python objects grew, a leak is possible")


def test_the_report_has_the_memory_finding_and_table():
    s = _soak()
    res = results_of([s])
    lines = findings.findings(res)
    memory = [x for x in lines if x.startswith("Soak ")]
    assert memory == [memory_finding(s)]
    assert memory[0].startswith(
        "Soak trace=soak:300/send/msgpack#0: memory growth at the end (over the baseline "
        "after warm-up) is OVER the goal of < 5 % for sched RssAnon +15.12 %. ")
    assert " ".join(SCHED_ANON.split()) in memory[0]
    assert memory[0].endswith(" ".join(PY.split()) + ".")
    rows = memory_table_rows(s)
    assert rows[1] == ["sched", "RssAnon", "20.0", "23.0", "+15.12", "+16.12", "+120.0",
                       "+80.0", "OVER (growth at the end +15.12 % ≥ 5 %; the largest after "
                       "warm-up, +16.12 %, is not judged)"]
    assert rows[0][-1] == ("ok (growth at the end +3.00 % < 5 %; the largest after warm-up, "
                           "+4.00 %, is not judged)")
    built = blocks._soak_blocks(res, 3)
    assert built[:2] == [("h", 3, "Soak"), ("p", RUN + ".")]
    assert built[3] == ("table", MEMORY_TABLE_HEADER, rows)
    assert built[-1] == ("p", " ".join(PY.split()))


def test_within_the_goal_and_too_few_samples():
    s = _soak(sched_anon_growth_pct=2.0)
    assert memory_finding(s).startswith(
        "Soak trace=soak:300/send/msgpack#0: memory growth at the end (over the baseline "
        "after warm-up) is within the goal of < 5 % for every measure; the largest after "
        "warm-up, not judged, reached sched RssAnon +16.12 %. ")
    bare = {k: v for k, v in _soak().items() if "_growth_pct" not in k}
    assert memory_finding(bare) is None
    # no table, but the section, its steps and the terminal's lines saying why
    assert blocks._soak_blocks(results_of([bare]), 3) == [
        ("h", 3, "Soak"), ("p", RUN + "."), ("ul", TOO_FEW)]
    assert memory_table_rows(bare)[0] == ["sched", "VmRSS"] + ["-"] * 6 + ["too few samples"]


def test_a_run_without_soak_has_no_memory_section():
    res = results_of([dict(_soak(), scenario="decode-steady")])
    assert blocks._soak_blocks(res, 3) == []
    assert not any(x.startswith("Soak ") for x in findings.findings(res))
    assert isinstance(res.cases, pd.DataFrame)


def test_each_verdict_names_the_growth_it_judges_and_the_largest_beside_it():
    # Within the goal at the end, over it at one sample after warm-up: the verdict says
    # it judges the end and names the largest, as the table's column shows it.
    s = _soak(sched_anon_growth_pct=2.62, sched_anon_max_growth_pct=5.11,
              sched_anon_end_bytes=20 * MIB * 1.0262, runner_rss_max_growth_pct=1.0, sched_py_max_growth_pct=2.11)
    assert memory_finding(s).startswith(
        "Soak trace=soak:300/send/msgpack#0: memory growth at the end (over the baseline "
        "after warm-up) is within the goal of < 5 % for every measure; the largest after "
        "warm-up, not judged, reached sched RssAnon +5.11 %. ")
    rows = memory_table_rows(s)
    assert MEMORY_TABLE_HEADER[4:6] == ["growth at the end %", "largest after warm-up %"]
    assert rows[1][4:6] == ["+2.62", "+5.11"]
    assert rows[1][-1] == ("ok (growth at the end +2.62 % < 5 %; the largest after warm-up, "
                           "+5.11 %, is not judged)")
    assert rows[2][-1] == "ok (growth at the end +1.00 % < 5 %)"  # the largest is the end's
    assert python_line(s) == (
        "sched  live Python allocations: 100,000 -> 100,500 blocks: flat (growth at the end "
        "+0.50 %, within ±1 %; the largest after warm-up, +2.11 %, is not judged): growth "
        "of RSS is then allocator fragmentation or memory held free, not live Python "
        "objects")
    assert memory_lines(s)[1] == (
        "sched  RssAnon: baseline 20.0 MiB, end 20.5 MiB, slope +120.0 KiB/min, second half "
        "+80.0 KiB/min: ok (growth at the end +2.62 % < 5 %; the largest after warm-up, "
        "+5.11 %, is not judged)")


def test_the_report_gives_the_terminals_drift_lines():
    s = _soak(**DRIFT)
    assert drift_lines(s) == DRIFT_LINES
    assert report([s]).splitlines()[-2:] == [f"  {x}" for x in DRIFT_LINES]
    res = results_of([s])
    assert drift_finding(s) in findings.findings(res)
    assert drift_finding(s) == (
        "Soak trace=soak:300/send/msgpack#0: byte drift (payload bytes per scheduled "
        "request in pure-decode steps, the baseline window after warm-up -> the end window): "
        + "; ".join(DRIFT_LINES) + ".")
    built = blocks._soak_blocks(res, 3)
    assert built[-2:] == [
        ("p", "Byte drift (payload bytes per scheduled request in pure-decode steps, the "
              "baseline window after warm-up -> the end window):"), ("ul", DRIFT_LINES)]
    # Drift alone (too few memory samples): the section gives it, with the steps.
    bare = {k: v for k, v in s.items() if "_growth_pct" not in k or "drift" in k}
    # (the memory lines say why no table: too few samples)
    assert blocks._soak_blocks(results_of([bare]), 3) == [
        ("h", 3, "Soak"), ("p", RUN + "."), ("ul", TOO_FEW)] + built[-2:]


def test_the_headline_labels_the_steps():
    assert run_line(_soak()) == RUN
    # A summary without its counted steps: all steps less the warm-up ones.
    assert run_line({k: v for k, v in _soak().items() if k != "num_steps"}) == RUN


def test_the_lines_and_the_table_give_the_seconds_each_slope_spans():
    """A rate per minute fitted over 15 s of a short soak is no trend: the line and the
    report's table give the span beside it (summaries without it keep the rate alone)."""
    s = _soak(sched_anon_slope_span_s=15.2, sched_anon_late_slope_span_s=7.6)
    assert memory_lines(s)[1] == (
        "sched  RssAnon: baseline 20.0 MiB, end 23.0 MiB, slope +120.0 KiB/min over 15 s, "
        "second half +80.0 KiB/min over 8 s: OVER (growth at the end +15.12 % ≥ 5 %; the "
        "largest after warm-up, +16.12 %, is not judged)")
    assert memory_table_rows(s)[1][6:8] == ["+120.0 (15 s)", "+80.0 (8 s)"]
    assert memory_table_rows(s)[0][6:8] == ["+120.0", "+80.0"]
