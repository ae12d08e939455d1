"""Instrumentation off ("totals"): same steps, same tokens, only loop totals recorded."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from ipc_bench.harness.spec import CaseSpec
from ipc_bench.engine.config import ModelConfig, SchedulerConfig
from ipc_bench.analysis.summary import summarize_case
from ipc_bench.harness.supervisor import run_case
from ipc_bench.engine.workloads import SteadyDecodeWorkload

ROOT = Path(__file__).resolve().parents[2]


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
    proc = subprocess.run(
        [sys.executable, "bench.py", "--scenario", "overhead", "--num-running", "4",
         "--steps", "50", "--warmup-steps", "5", "--repeat", "2", "--quiet",
         "--output", str(tmp_path / "run")],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if "steps/totals = " in ln]
    assert len(lines) == 2
    assert "of=send" in lines[0] and "of=cached" in lines[1]
    # the arms (steps, totals) are not policies: the bytes send's ids add are named
    # send - cached, not steps - cached
    exact = [ln for ln in proc.stdout.splitlines() if " exact" in ln]
    assert len(exact) == 2, proc.stdout
    assert re.fullmatch(
        r"  \[num_running=4,of=send\] msgpack steps: 100/100 exact; send - cached = "
        r"\d+\.\d{3} B per running request on these steps \(uniform ids in a 128,256 "
        r"vocabulary: 4\.975\)", exact[0]), exact[0]
    assert exact[1] == "  [num_running=4,of=cached] msgpack steps: 100/100 exact"
    send = [r for r in json.loads((tmp_path / "run" / "summary.json").read_text())["byte_model"]
            if r["policy"] == "send"]
    assert [(r["arm"], r["cached_arm"], r["difference"]) for r in send] == [
        ("steps", None, "send - cached")]
    assert all("over 2 pairs" in ln for ln in lines)
    # the bare loop's '-' cells and its missing schedule digest are said once, as design
    out = proc.stdout.splitlines()
    assert out.count("  totals: the bare loop (instrumentation totals) records no step, so "
                     "its cells are '-'; its loop time per step is in the instrumentation "
                     "overhead lines") == 2
    assert not [ln for ln in out if ln.startswith("  steps 0:")]
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
    from ipc_bench.analysis.stats import compare_cases

    assert cli.main(["report", str(tmp_path / "run"), "--output", str(tmp_path / "rep")]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    found = md[md.index("## Findings"):].split("\n## ")[0].splitlines()
    want = []
    for cmp in compare_cases(summary["cases"], metrics=(("loop_step_ns_mean", "ns"),)):
        m = cmp["metrics"]["loop_step_ns_mean"]
        want.append(f"- At {cmp['workload']} (msgpack), per-step recording and checks make "
                    f"the loop's step {m['ratio_geomean']:.3f}x as long (steps/totals, 95 % "
                    f"interval [{m['ratio_ci_low']:.3f}, {m['ratio_ci_high']:.3f}] over 2 "
                    f"pairs; {m['treatment_median'] / 1e3:.1f} against "
                    f"{m['baseline_median'] / 1e3:.1f} us per step, medians): "
                    f"{m['verdict']}.")
    assert [cmp["workload"] for cmp in compare_cases(
        summary["cases"], metrics=(("loop_step_ns_mean", "ns"),))] == [
        "num_running=4,of=send", "num_running=4,of=cached"]
    assert found[2:4] == want
