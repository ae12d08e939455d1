"""Instrumentation off ("totals"): same steps, same tokens, only loop totals recorded."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from analysis_run import bench_in_process
from ipc_bench.harness.spec import CaseSpec
from ipc_bench.engine.config import ModelConfig, SchedulerConfig
from ipc_bench.analysis.summary import summarize_case
from ipc_bench.harness.supervisor import run_case
from ipc_bench.engine.workloads import SteadyDecodeWorkload


def spec(instrumentation: str, policy: str = "send") -> CaseSpec:
    return CaseSpec(
        scenario="t", labels={"num_running": 4}, policy=policy, codec="msgpack",
        scheduler=SchedulerConfig(max_num_seqs=4, max_model_len=512, num_blocks=1024),
        model=ModelConfig(),
        make_workload=lambda: SteadyDecodeWorkload(4, seed=3, vocab_size=128_256,
                                                   prompt_len_range=(4, 20),
                                                   output_len_range=(5, 40)),
        warmup_steps=10, max_steps=120, count="decode_only", floor=False,
        instrumentation=instrumentation)


def test_totals_mode_runs_the_same_steps_and_records_nothing_per_step():
    steps = run_case(spec("steps"))
    totals = run_case(spec("totals"))
    assert totals.token_digest == steps.token_digest
    assert totals.sched_rows == [] and totals.runner_columns == {}
    assert totals.loop_totals["loop_steps"] == steps.loop_totals["loop_steps"] == 110
    assert (totals.loop_totals["loop_output_tokens"]
            == steps.loop_totals["loop_output_tokens"]
            == sum(row[7] for row in steps.sched_rows[10:]))
    for result in (steps, totals):
        s = summarize_case(result)
        assert s["loop_steps"] == 110 and s["loop_step_ns_mean"] > 0
        assert s["instrumentation"] == result.spec.instrumentation


def test_overhead_scenario_prints_the_ratio_per_policy(tmp_path):
    proc = bench_in_process(  # cli.main in this process, its runners processes
        ["--scenario", "overhead", "--num-running", "4", "--steps", "50", "--warmup-steps",
         "5", "--repeat", "2", "--quiet", "--output", str(tmp_path / "run")])
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if "steps/totals = " in ln]
    assert len(lines) == 2
    # the bare loop leaves out the correctness checks too (docs/oracles.md)
    assert ("Instrumentation overhead (loop time per step, per-step recording and "
            "correctness checks on / off):") in proc.stdout.splitlines()
    assert "of=send" in lines[0] and "of=cached" in lines[1]
    # the arms (steps, totals) are not policies: the bytes send's ids add are named
    # send - cached, not steps - cached
    exact = [ln for ln in proc.stdout.splitlines() if " exact" in ln]
    assert len(exact) == 2, proc.stdout
    assert re.fullmatch(
        r"  \[num_running=4,of=send\] msgpack steps: 100 of 100 messages exact \(both "
        r"directions: 50 SchedulerOutput, 50 ModelRunnerOutput; every one of its 50 "
        r"counted steps\); send - cached = "
        r"\d+\.\d{3} B per running request on these steps \(uniform ids in a 128,256 "
        r"vocabulary: 4\.975 per id with its own framing, not the outer list's\)",
        exact[0]), exact[0]
    assert exact[1] == ("  [num_running=4,of=cached] msgpack steps: 100 of 100 messages "
                        "exact (both directions: 50 SchedulerOutput, 50 ModelRunnerOutput; "
                        "every one of its 50 counted steps)")
    send = [r for r in json.loads((tmp_path / "run" / "summary.json").read_text())["byte_model"]
            if r["policy"] == "send"]
    assert [(r["arm"], r["cached_arm"], r["difference"]) for r in send] == [
        ("steps", None, "send - cached")]
    assert all("over 2 pairs" in ln for ln in lines)
    assert all(re.search(r" over 2 pairs; \d+\.\d vs \d+\.\d us/step \(steps vs totals, "
                         r"geometric means over the pairs: the ratio is their quotient\); ",
                         ln) for ln in lines), lines
    # the bare loop's '-' cells and its missing schedule digest are said once, as design
    out = proc.stdout.splitlines()
    assert out.count("  totals: the bare loop (instrumentation totals) records no step, so "
                     "its cells are '-'; its loop time per step is in the instrumentation "
                     "overhead lines") == 2
    assert not [ln for ln in out if ln.startswith("  steps 0:")]
    # its rows: every cell after the identity '-', its steps too (it ran them, unrecorded)
    bare = [ln.split() for ln in out if re.match(r"\d+\s+totals\s", ln)]
    assert len(bare) == 4 and all(row[4:] == ["-"] * 12 for row in bare), bare
    assert [ln for ln in out if "not compared" in ln] == [
        f"note: token streams not compared in overhead [num_running=4,of={p}] for the 2 "
        "bare-loop case(s) (instrumentation totals): they keep no schedule digest, by design"
        for p in ("send", "cached")]
    # the arms share no per-step metric: no comparison block, not a header over no table
    assert not [ln for ln in proc.stdout.splitlines() if ln.startswith("steps vs totals")]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["comparisons"] == []
    # the report leads its findings with the same paired ratios, one per policy
    from ipc_bench import cli
    from ipc_bench.analysis.stats import compare_cases, ratio_interval, verdict_of
    from ipc_bench.report import findings

    assert cli.main(["report", str(tmp_path / "run"), "--output", str(tmp_path / "rep")]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    found = md[md.index("## Findings"):].split("\n## ")[0].splitlines()
    want = []
    for cmp in compare_cases(summary["cases"], metrics=(("loop_step_ns_mean", "ns"),)):
        m = cmp["metrics"]["loop_step_ns_mean"]
        want.append(f"- At {cmp['workload']} (msgpack), per-step recording and checks make "
                    f"the loop's step {m['ratio_geomean']:.3f}x as long (steps/totals, 95 % "
                    f"interval {ratio_interval(m['ratio_ci_low'], m['ratio_ci_high'])} "
                    f"over 2 pairs; {m['treatment_geomean'] / 1e3:.1f} against "
                    f"{m['baseline_geomean'] / 1e3:.1f} us per step (steps against totals, "
                    f"geometric means over the pairs: the ratio is their quotient)): "
                    f"{verdict_of(m)}."
                    # a significant difference over 50 counted steps: the steps arm's
                    # two cases carry the rough-figures warning (the bare loop's none)
                    + (" 2 of its 4 cases' figures are rough: only 50 counted steps each "
                       "(< 100), as their warnings say."
                       if findings.SIGNIFICANT.search(verdict_of(m)) else ""))
        # one statistic: the figures beside the ratio point the way it does
        assert m["ratio_geomean"] == pytest.approx(
            m["treatment_geomean"] / m["baseline_geomean"])
    assert [cmp["workload"] for cmp in compare_cases(
        summary["cases"], metrics=(("loop_step_ns_mean", "ns"),))] == [
        "num_running=4,of=send", "num_running=4,of=cached"]
    assert found[2:4] == want


def test_the_steps_totals_line_gives_one_statistic():
    """Medians beside a geometric-mean ratio could point the other way (0.9757 next to
    470.5 vs 409.4 us/step): the line gives the arms' geometric means, whose quotient
    the ratio is."""
    from scenarios.overhead import report

    summaries = []
    # totals: 400, 420, 440 us; steps: two repetitions faster, one much slower, so the
    # medians (400 vs 420 us) point the other way from the ratio (1.0226)
    for rep, (totals, steps) in enumerate([(400e3, 380e3), (420e3, 400e3), (440e3, 520e3)]):
        for arm, v in (("totals", totals), ("steps", steps)):
            summaries.append(dict(scenario="overhead", workload="num_running=4,of=send",
                                  codec="msgpack", transport="ipc", model="null",
                                  policy="send", arm=arm, repetition=rep, complete=True,
                                  num_steps=0 if arm == "totals" else 100, loop_steps=100,
                                  loop_step_ns_mean=v))
    line = report(summaries).splitlines()[2]
    assert line == (
        "  num_running=4,of=send msgpack: steps/totals = 1.0226 [0.7490, 1.3961] over 3 "
        "pairs; 429.2 vs 419.7 us/step (steps vs totals, geometric means over the pairs: "
        "the ratio is their quotient); inconclusive: the 95 % interval [-25.1, +39.6] % "
        "reaches beyond 1.1x either way: too few repetitions or too noisy to tell a 10 % difference "
        "from none")
