"""A case whose steps all fall in the warm-up: per-request figures are reported, the
per-step ones are absent (never 0) and a warning names ``--warmup-steps``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis_run import bench_in_process
from ipc_bench import cli
from ipc_bench.analysis.summary import no_counted_steps_warning, noise_warnings

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT.parent / "shared" / "traces" / "AzureLLMInferenceTrace_conv.csv"
needs_trace = pytest.mark.skipif(not TRACE.is_file(), reason="Azure traces not in ../shared/traces")
#: Per-step figures a case without counted steps must leave out rather than report as 0.
PER_STEP = ("busy_output_tokens_per_s", "step_ns_mean", "sched_to_runner_payload_bytes_per_step",
            "encode_ns_per_step", "floor_output_tokens_per_s")


def _bench(capsys, args: list[str]) -> subprocess.CompletedProcess:
    """``bench.py ARGS`` as ``cli.main`` in this process (its runners are processes): the
    exit code, stdout and stderr a ``python bench.py`` gives, without its start."""
    code = cli.main(args)
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["bench.py", *args], code, out, err)


def _bench_unchecked(monkeypatch, args: list[str]) -> subprocess.CompletedProcess:
    """``bench.py ARGS`` (``analysis_run.bench_in_process``) with the checks made before
    the first case (``harness.trace_checks.check_trace_cases``) passing everything, so
    that a run reaches what a replay inside the warm-up records after it (the path a
    replay no bound covers takes)."""
    from ipc_bench.harness import trace_checks

    monkeypatch.setattr(trace_checks, "check_trace_cases", lambda *a, **k: [])
    return bench_in_process(args)


@needs_trace
def test_timed_replay_inside_the_warmup_reports_its_latencies(tmp_path, capsys):
    run = tmp_path / "timed"
    proc = _bench(capsys, ["--scenario", "azure-conv-timed", "--trace", str(TRACE),
                           "--max-requests", "1", "--codecs", "msgpack", "--output", str(run)])
    assert proc.returncode == 0, proc.stderr  # its latencies cover every request
    # said before the first case: one request's steps do not depend on the wall clock
    lines = proc.stderr.splitlines()
    warned = ("bench.py: warning: no step will be counted (the latencies and tok/s over "
              "wall time cover every request, the per-step figures none): the timed replay "
              "of the first row (--max-requests 1) takes 44 steps (its batches follow the "
              "wall clock), all within the default --warmup-steps 50: set --warmup-steps "
              "below 44 (e.g. --warmup-steps 22) or raise --max-requests")
    assert lines.count(warned) == 1 and lines.index(warned) < min(
        i for i, ln in enumerate(lines) if ln.startswith("[1/")), proc.stderr
    assert " 0 tok/s" not in proc.stderr and " 0 tok/s" not in proc.stdout
    summary = json.loads((run / "summary.json").read_text())
    requests = pd.read_csv(run / "requests.csv")
    for case in summary["cases"]:
        assert case["num_steps"] == 0 and case["num_warmup_steps"] == case["num_total_steps"] > 0
        mine = requests[requests["case_id"] == case["case_id"]]
        assert case["ttft_ms_p50"] == pytest.approx(1e3 * mine["ttft_s"].median())
        assert case["tpot_ms_mean"] == pytest.approx(1e3 * mine["tpot_s"].mean())
        assert case["e2e_ms_p99"] == pytest.approx(1e3 * np.percentile(mine["e2e_s"], 99))
        assert case["itl_ms_p50"] > 0
        tokens = int(mine["num_output_tokens"].sum())
        assert case["output_tokens_per_s"] == pytest.approx(tokens / case["wall_s"])
        assert not [k for k in PER_STEP if k in case]
        total = case["num_total_steps"]
        assert case["warnings"][:1] == [  # then noise warnings, if the machine is busy
            f"all {total} steps fell in the warm-up, so no step was counted and the per-step "
            "figures are absent (the latencies and tok/s over wall time cover every request): "
            f"set --warmup-steps below {total} (e.g. --warmup-steps {total // 2}) or raise "
            "--max-requests (if the trace has more rows)"]
        assert f"warning: {case['warnings'][0]}" in proc.stderr
    assert "counted no step" not in proc.stderr
    assert (summary["status"], summary["problems"]) == ("complete", [])
    assert "TTFT p50 ms" in proc.stdout  # the latency table is printed
    # its tokens/s is over wall time, and the progress line and the table say so
    progress = [ln for ln in proc.stderr.splitlines() if ln.startswith("[1/")]
    assert len(progress) == 1 and ": 0 steps, " in progress[0], proc.stderr
    assert progress[0].split(", ")[1].split(" (")[:2] == [
        f"{summary['cases'][0]['output_tokens_per_s']:,.0f} tok/s", "wall)"], progress
    assert "  out tok/s (wall)  " in proc.stdout


@needs_trace
def test_logical_replay_inside_the_warmup_is_refused_before_it_runs(tmp_path, capsys):
    """The first row of the conversation trace (374 prompt tokens, 44 output) takes 44
    steps: one to prefill (and sample the first token), 43 to decode."""
    proc = _bench(capsys, ["--scenario", "azure-conv", "--trace", str(TRACE),
                           "--max-requests", "1", "--codecs", "msgpack", "--policies", "send",
                           "--no-single-process", "--output", str(tmp_path / "logical")])
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.splitlines() == [
        "bench.py: error: no step would be counted: the replay of the first row "
        "(--max-requests 1) takes 44 steps, all within the default --warmup-steps 50: set "
        "--warmup-steps below 44 (e.g. --warmup-steps 22) or raise --max-requests"]
    assert not (tmp_path / "logical").exists()
    # one step past the warm-up: it runs, and counts that step
    proc = _bench(capsys, ["--scenario", "azure-conv", "--trace", str(TRACE),
                           "--max-requests", "1", "--codecs", "msgpack", "--policies", "send",
                           "--no-single-process", "--no-floor", "--warmup-steps", "43",
                           "--quiet", "--output", str(tmp_path / "one")])
    assert proc.returncode == 0, proc.stderr
    case = json.loads((tmp_path / "one" / "summary.json").read_text())["cases"][0]
    assert (case["num_total_steps"], case["num_steps"]) == (44, 1)


@needs_trace
def test_logical_replay_inside_the_warmup_shows_no_zero_rate(tmp_path, monkeypatch):
    proc = _bench_unchecked(monkeypatch, ["--scenario", "azure-conv", "--trace", str(TRACE),
                                          "--max-requests", "1", "--codecs", "msgpack",
                                          "--policies", "send", "--no-single-process",
                                          "--output", str(tmp_path / "logical")])
    assert proc.returncode == 1, proc.stderr
    progress = [ln for ln in proc.stderr.splitlines() if ln.startswith("[1/")]
    assert len(progress) == 1 and ": 0 steps, - tok/s (" in progress[0], proc.stderr
    case = json.loads((tmp_path / "logical" / "summary.json").read_text())["cases"][0]
    assert "output_tokens_per_s" not in case
    assert "--warmup-steps" in case["warnings"][0]
    # the table's "-" cells are explained under it, in one line (also with --quiet)
    assert proc.stdout.count(f"  steps 0: {case['warnings'][0]}") == 1, proc.stdout
    # the run is no success: one line names the case and why, after the tables; the
    # results are kept, status failed
    total = case["num_total_steps"]
    steps = "the only step" if total == 1 else f"all {total} steps"
    line = (f"{case['case_id']} counted no step: {steps} fell in the warm-up of 50 steps; its per-step figures are absent: set "
            f"--warmup-steps below {total} (e.g. --warmup-steps {total // 2}) or raise "
            "--max-requests (if the trace has more rows)")
    assert proc.stderr.splitlines()[-1] == f"bench.py: error: {line}"
    summary = json.loads((tmp_path / "logical" / "summary.json").read_text())
    assert (summary["status"], summary["problems"]) == ("failed", [line])


@needs_trace
def test_a_pair_that_counted_no_step_is_said_in_the_report(tmp_path, capsys, monkeypatch):
    """Send and cached both inside the warm-up: the report says why it has no finding
    and no pair, not that the run held no send/cached pair."""
    run = tmp_path / "both"
    proc = _bench_unchecked(monkeypatch, ["--scenario", "azure-conv", "--trace", str(TRACE),
                                          "--max-requests", "1", "--codecs", "msgpack",
                                          "--no-single-process", "--no-floor", "--output",
                                          str(run)])
    assert proc.returncode == 1, proc.stderr
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## Findings\n\n- None: no case counted a step (the measurement warnings say " \
           "why).\n" in md
    assert ("> **Note:** No send/cached pair to compare: send and cached ran, but counted "
            "no step (the measurement warnings say why).") in md
    assert "No send/cached pair in this run" not in md


def test_no_counted_step_after_the_warmup_names_no_option():
    # a steady case whose steps after the warm-up were none of them pure decode
    summary = dict(num_steps=0, num_total_steps=120, num_warmup_steps=100)
    assert noise_warnings(summary) == [
        "no step was counted (120 steps, 100 in the warm-up, none of the rest of the kind "
        "this scenario counts): the per-step figures are absent"]
    assert no_counted_steps_warning(dict(num_steps=0, num_total_steps=1, num_warmup_steps=1,
                                         trace_speedup=10.0)).endswith(
        "set --warmup-steps below 1 (e.g. --warmup-steps 0) or raise --max-requests (if the "
        "trace has more rows)")


def test_the_bare_loop_of_overhead_is_not_warned_about_counted_steps():
    """``overhead``'s ``totals`` arm keeps loop totals by design, never per-step rows."""
    totals = {"num_steps": 0, "num_warmup_steps": 0, "num_total_steps": 0,
              "instrumentation": "totals", "loop_steps": 135, "loop_step_ns_mean": 822_614.8}
    assert noise_warnings(totals) == []
    assert noise_warnings(dict(totals, instrumentation="steps")) == [no_counted_steps_warning(
        dict(totals, instrumentation="steps"))]


@pytest.mark.parametrize("cv, shown", [(0.104, "10.4"), (0.1004, "10.04"), (0.2, "20.0"),
                                       (0.10004, "10.004")])
def test_the_noise_warning_prints_its_share_above_the_threshold(cv, shown):
    """A block CV just over 10 % is never rounded to a "10 %" that reads as not over."""
    assert noise_warnings(dict(num_steps=500, step_ns_block_cv=cv)) == [
        f"the standard deviation of 50-step mean step times is {shown} % of their mean "
        "(> 10 %): the machine may be noisy"]


def test_a_case_that_counted_no_step_is_a_problem_of_the_run():
    from ipc_bench.analysis.summary import no_step_counted

    warm = dict(case_id="a", complete=True, num_steps=0, num_total_steps=47,
                num_warmup_steps=47, num_requests=20, num_rejected=0)
    rest = dict(warm, case_id="b", num_total_steps=120, num_warmup_steps=100,
                trace_speedup=10.0)
    assert no_step_counted([warm, rest, dict(rest, case_id="c", trace_speedup=None)],
                           {"a": 50}) == [
        "a counted no step: all 47 steps fell in the warm-up of 50 steps; its per-step "
        "figures are absent: set --warmup-steps below 47 (e.g. --warmup-steps 23) or "
        "raise --max-requests (if the trace has more rows)",
        "c counted no step: 120 steps, 100 in the warm-up, none of the rest of the kind "
        "this scenario counts; its per-step figures are absent"]  # b: a timed replay
    # counted steps, an unfinished case, a bare loop, every request rejected: no line
    assert no_step_counted([dict(warm, num_steps=3), dict(warm, complete=False),
                            dict(warm, instrumentation="totals"),
                            dict(warm, num_rejected=20)], {"a": 50}) == []
