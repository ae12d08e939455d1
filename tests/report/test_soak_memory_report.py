"""The soak's headline, memory after warm-up: the report gives the same figures and
verdict as the terminal (``analysis.soak.memory_lines``), as a finding and a table, and
says what counts as flat for the live Python allocations."""

from __future__ import annotations

import pandas as pd

from ipc_bench.analysis.soak import MEMORY_TABLE_HEADER, memory_finding, memory_lines, memory_table_rows, python_line
from ipc_bench.report import blocks, findings
from ipc_bench.scenarios.soak import report
from test_withheld_figures import results_of

MIB = 2**20


def _soak(**extra):
    s = dict(scenario="soak", case_id="trace=soak:300/send/msgpack#0", workload="trace=soak:300",
             policy="send", codec="msgpack", transport="ipc", model="null", repetition=0,
             complete=True, num_steps=2000, num_total_steps=2050, num_requests=300,
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


SCHED_ANON = ("sched  RssAnon: baseline 20.0 MiB, end 23.0 MiB, growth +15.12 % (largest "
              "after warm-up +16.12 %, slope +120.0 KiB/min, second half +80.0 KiB/min) OVER "
              "(goal < 5 %)")
PY = ("sched  live Python allocations: 100,000 -> 100,500 blocks (+0.50 %): flat (within "
      "±1 %): growth of RSS is then allocator fragmentation or memory held free, not live "
      "Python objects")


def test_the_terminal_prints_the_memory_lines():
    s = _soak()
    text = report([s])
    assert f"  {SCHED_ANON}" in text.splitlines()
    assert f"  {PY}" in text.splitlines()
    assert [f"  {x}" for x in memory_lines(s)] == text.splitlines()[2:7]


def test_not_flat_says_so():
    s = _soak(sched_py_growth_pct=-3.0, sched_py_end_bytes=97_000.0)
    assert python_line(s) == (
        "sched  live Python allocations: 100,000 -> 97,000 blocks (-3.00 %): not flat "
        "(beyond ±1 %): live Python objects grew, a leak is possible")


def test_the_report_has_the_memory_finding_and_table():
    s = _soak()
    res = results_of([s])
    lines = findings.findings(res)
    memory = [x for x in lines if x.startswith("Soak ")]
    assert memory == [memory_finding(s)]
    assert memory[0].startswith(
        "Soak trace=soak:300/send/msgpack#0: memory growth after warm-up is OVER the goal of "
        "< 5 % for sched RssAnon +15.12 %. ")
    assert " ".join(SCHED_ANON.split()) in memory[0]
    assert memory[0].endswith(" ".join(PY.split()) + ".")
    rows = memory_table_rows(s)
    assert rows[1] == ["sched", "RssAnon", "20.0", "23.0", "+15.12", "+16.12", "+120.0",
                       "+80.0", "OVER (goal < 5 %)"]
    assert rows[0][-1] == "ok (goal < 5 %)"
    built = blocks._soak_blocks(res, 3)
    assert built[0] == ("h", 3, "Soak memory")
    assert built[2] == ("table", MEMORY_TABLE_HEADER, rows)
    assert built[-1] == ("p", " ".join(PY.split()))


def test_within_the_goal_and_too_few_samples():
    s = _soak(sched_anon_growth_pct=2.0)
    assert memory_finding(s).startswith(
        "Soak trace=soak:300/send/msgpack#0: memory growth after warm-up is within the goal "
        "of < 5 % for every measure. ")
    bare = {k: v for k, v in _soak().items() if "_growth_pct" not in k}
    assert memory_finding(bare) is None
    assert blocks._soak_blocks(results_of([bare]), 3) == []
    assert memory_table_rows(bare)[0] == ["sched", "VmRSS"] + ["-"] * 6 + ["too few samples"]


def test_a_run_without_soak_has_no_memory_section():
    res = results_of([dict(_soak(), scenario="decode-steady")])
    assert blocks._soak_blocks(res, 3) == []
    assert not any(x.startswith("Soak ") for x in findings.findings(res))
    assert isinstance(res.cases, pd.DataFrame)
