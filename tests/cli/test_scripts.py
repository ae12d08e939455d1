"""The analysis parts of scripts/ on synthetic run summaries (no runs); oracle_cost on
two-request engines in this process."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from fault_helpers import children, processes_matching
from script_module import load_script

ROOT = Path(__file__).resolve().parents[2]


aa = load_script("aa_false_positive")
codec_fit = load_script("codec_fit")
gpu_check = load_script("gpu_check")


def test_clopper_pearson_known_values():
    # 0/20: upper bound 1 - 0.025 ** (1 / 20); 20/20: lower bound 0.025 ** (1 / 20)
    assert aa.clopper_pearson(0, 20) == (0.0, pytest.approx(1 - 0.025 ** (1 / 20)))
    assert aa.clopper_pearson(20, 20) == (pytest.approx(0.025 ** (1 / 20)), 1.0)
    lo, hi = aa.clopper_pearson(1, 20)
    assert lo == pytest.approx(0.00127, abs=1e-5) and hi == pytest.approx(0.24873, abs=1e-5)


def _aa_cases(pairs, treat_scale=1.0, first=lambda rep: "send"):
    """An A/A run's cases in run order: pair ``rep``'s baseline value varies between
    pairs, ``send'`` is ``treat_scale`` times it, ``first(rep)`` runs first."""
    cases = []
    for rep in range(pairs):
        base = 1000.0 + 37 * ((rep * 7919) % 11)
        arms = [("send", 1.0), ("send'", treat_scale)]
        if first(rep) == "send'":
            arms.reverse()
        for arm, scale in arms:
            cases.append(dict(arm=arm, policy="send", repetition=rep, complete=True,
                              num_steps=100, **{m: base * scale for m in aa.METRICS}))
    return cases


def test_aa_analysis_counts_flagged_groups_and_the_family():
    same = aa.analyse_aa(_aa_cases(12), group_sizes=[2, 6])
    assert same["pairs"] == 12
    t = same["designs"]["as-run"]["t"]
    assert t["2"]["family"]["comparisons"] == 6 and t["6"]["family"]["comparisons"] == 2
    assert all(e["false_positives"] == 0 for k in ("2", "6") for e in t[k].values())
    assert same["designs"]["as-run"]["sign"]["6"]["step_ns_mean"]["false_positives"] == 0
    assert "2" not in same["designs"]["as-run"]["sign"]  # the sign test needs 6 pairs
    # a 10 % shift is found in every group, by every metric and by the family
    shifted = aa.analyse_aa(_aa_cases(12, treat_scale=1.1), group_sizes=[6])
    t6 = shifted["designs"]["as-run"]["t"]["6"]
    assert t6["step_ns_mean"]["false_positives"] == 2 and t6["family"]["false_positives"] == 2
    assert t6["family"]["metrics"] == list(aa.FAMILY)
    assert shifted["all_pairs"]["step_ns_mean"]["ratio_geomean"] == pytest.approx(1.1)


def test_aa_designs_relabel_the_same_cases():
    # send' 10 % slower, run first in odd pairs: as run the ratio is 1.1 in every pair;
    # a fixed order label reads the run position instead of the arm
    cases = _aa_cases(4, treat_scale=1.1, first=lambda rep: "send'" if rep % 2 else "send")
    arms, pairs = aa.pair_sequence(cases)
    assert arms == ["send", "send'"]
    log11 = math.log(1.1)
    assert aa.log_ratios(arms, pairs, "step_ns_mean", "as-run") == pytest.approx([log11] * 4)
    assert aa.log_ratios(arms, pairs, "step_ns_mean", "ab") == pytest.approx(
        [log11, -log11, log11, -log11])
    assert aa.log_ratios(arms, pairs, "step_ns_mean", "abba") == pytest.approx([log11] * 4)
    assert aa.lag1(np.array([1.0, -1.0, 1.0, -1.0, 1.0])) == pytest.approx(-1.0)
    # cases alternate 1000 and 1100 (log values +/- d): autocorrelation -1, +1, -1
    assert aa.case_autocorrelation(pairs, "step_ns_median") is not None
    flip = [({"x": 1000.0}, {"x": 1100.0})] * 4
    assert aa.case_autocorrelation(flip, "x") == pytest.approx([-1.0, 1.0, -1.0])
    assert math.isnan(aa.lag1(np.array([1.0, 2.0])))
    broken = cases[:1] + cases[2:]  # a pair's two cases no longer back to back
    with pytest.raises(SystemExit, match="are not one pair run back to back"):
        aa.pair_sequence(broken)


def test_precision_projects_the_half_width_per_minute():
    # saving 10 ns of 100, differences 9 to 11 (sd 0.894): at n pairs the half-width
    # is t_{n-1} sd / sqrt(n) ns
    from scipy.stats import t as student

    cases = []
    for rep, d in enumerate([9.0, 11.0, 9.0, 11.0, 10.0, 10.0]):
        cases += [dict(arm="send", repetition=rep, **{m: 100.0 for m in aa.METRICS}),
                  dict(arm="cached", repetition=rep, **{m: 100.0 - d for m in aa.METRICS})]
    out = aa.precision(cases, wall_s=30.0)  # 5 s per pair: 12 pairs a minute
    assert (out["pairs"], out["pair_s"]) == (6, 5.0)
    e = out["metrics"]["step_ns_mean"]
    sd = float(np.std([9.0, 11.0, 9.0, 11.0, 10.0, 10.0], ddof=1))
    assert e["saving"] == pytest.approx(10.0) and e["saving_share"] == pytest.approx(0.1)
    assert e["half_width_share"] == pytest.approx(student.ppf(0.975, 5) * sd / math.sqrt(6) / 10)
    assert e["half_width_share_2min"] == pytest.approx(
        student.ppf(0.975, 23) * sd / math.sqrt(24) / 10)
    # 10 % of 10 ns = 1 ns needs t_{n-1} sd / sqrt(n) <= 1: 1.11 at n = 5, 0.94 at 6
    assert e["minutes_to_10pct"] == pytest.approx(6 * 5.0 / 60)


def test_background_load_is_one_pinned_process_stopped_at_the_end():
    cpu = max(os.sched_getaffinity(0))
    with aa.BackgroundLoad(cpu) as load:
        pid = load.proc.pid
        deadline = time.monotonic() + 10
        while os.sched_getaffinity(pid) != {cpu} and time.monotonic() < deadline:
            time.sleep(0.05)
        assert os.sched_getaffinity(pid) == {cpu}
    assert load.proc.poll() is not None  # stopped on leaving the block


def test_codec_fit_points_take_the_median_over_repetitions():
    cases = [dict(policy="send", codec="msgpack", num_running=b, repetition=r, complete=True,
                  num_steps=10, case_id=f"{b}#{r}", encode_ns_per_step=v, decode_ns_per_step=1.0)
             for b, vals in ((16, (10.0, 30.0, 20.0)), (64, (40.0, 41.0, 42.0)))
             for r, v in enumerate(vals)]
    pts = codec_fit.points(dict(cases=cases), codec_fit.codec_ns)
    assert pts == {("send", "msgpack"): {16: 21.0, 64: 42.0}}


def test_oracle_cost_steps_both_engines_through_the_same_schedule(capsys):
    oracle_cost = load_script("oracle_cost")
    m = oracle_cost.measure(2, pairs=2, steps=8)
    assert m["off"] > 0 and m["on"] > 0 and m["q1"] <= m["diff"] <= m["q3"]
    off, on = oracle_cost.SteadyEngine(2, False), oracle_cost.SteadyEngine(2, True)
    for _ in range(40):
        (plan_off, _), (plan_on, _) = off.step(), on.step()
        assert plan_off.num_scheduled_tokens == plan_on.num_scheduled_tokens
    assert len(on.oracle.pending) == 40 % on.oracle.interval  # checked, by calls
    assert oracle_cost.main(["--num-running", "1", "--pairs", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["B", "off", "us/step"] and out[1].split()[0] == "1"


def test_oracle_cost_bench_pairs_runs_off_and_on_alternately(capsys):
    oracle_cost = load_script("oracle_cost")
    figures = oracle_cost.bench_pairs("2", steps=20, pairs=2)
    assert sorted(figures) == sorted(f"num_running=2/{p}/{c}#0" for p in ("send", "cached")
                                     for c in ("msgpack", "pickle", "none"))
    for per_key in figures.values():
        assert sorted(per_key) == ["step_ns_median", "wall_s"]
        assert all(len(v["off"]) == 2 and len(v["on"]) == 2 and min(v["off"] + v["on"]) > 0
                   for v in per_key.values())
    oracle_cost.print_bench(figures)
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["case", "wall", "s", "off", "wall", "s", "on", "on/off",
                              "step", "us", "off", "step", "us", "on", "on/off"]
    assert len(out) == 7


# ---------------------------------------------------------------------- gpu_check


def test_gpu_check_stages_on_cuda_are_the_public_presets(tmp_path):
    trace = tmp_path / "conv.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n")
    stages = gpu_check.build_stages(True, str(trace))
    assert [(s.number, s.name) for s in stages] == [
        (1, "smoke"), (2, "llama-3.2-1b-64"), (2, "llama-3.2-1b-256"), (3, "llama-3.1-8b"),
        (4, "aa-64"), (4, "aa-256"), (5, "azure-conv"), (6, "async")]
    assert stages[0].limit_s == 90.0 and all(s.limit_s is None for s in stages[1:7])
    assert stages[7].limit_s == gpu_check.ASYNC_LIMIT_S

    def arg(stage, name):
        return stage.args[stage.args.index(name) + 1]

    assert [(arg(s, "--model-preset"), arg(s, "--num-running")) for s in stages[:6]] == [
        ("llama-3.2-1b", "16"), ("llama-3.2-1b", "64"), ("llama-3.2-1b", "256"),
        ("llama-3.1-8b", "64"), ("llama-3.2-1b", "64"), ("llama-3.2-1b", "256")]
    assert {arg(s, "--codecs") for s in stages[1:4]} == {"msgpack,pickle"}
    assert not any("--no-single-process" in s.args for s in stages[1:4])
    assert "--aa" in stages[4].args and "--aa" in stages[5].args
    assert (arg(stages[6], "--max-requests"), arg(stages[6], "--trace")) == ("100", str(trace))
    assert "--async-scheduling" in stages[7].args and "--policies" not in stages[7].args
    assert (arg(stages[7], "--model-preset"), arg(stages[7], "--num-running")) == (
        "llama-3.2-1b", "64")
    assert gpu_check.build_stages(True, None)[6].skip.startswith("no Azure conversation trace")
    assert [s.stand_in for s in stages] == [""] * 8  # the GPU presets ran: nothing to say
    assert [s.note for s in stages] == [gpu_check.SMOKE_NOTE.format(steps=20)] + [""] * 7


def test_gpu_check_cpu_stages_are_named_after_what_ran():
    """On the CPU, stages 2 and 3 (folders ``2-tiny-preset``, ``3-cpu-preset``) are named
    after the preset that ran, and every stage's heading says which preset stood in for
    which GPU preset, with both shapes."""
    stages = gpu_check.build_stages(False, None)
    assert [s.name for s in stages] == ["smoke", "tiny-preset", "cpu-preset", "aa",
                                        "azure-conv", "async"]
    tiny = ("no CUDA: preset tiny (2 layers, hidden 64) ran on the CPU in place of "
            "llama-3.2-1b (16 layers, hidden 2048); its figures are not llama-3.2-1b's")
    cpu = ("no CUDA: preset cpu (2 layers, hidden 256) ran on the CPU in place of "
           "llama-3.1-8b (32 layers, hidden 4096); its figures are not llama-3.1-8b's")
    assert [s.stand_in for s in stages] == [tiny, tiny, cpu, tiny, tiny, tiny]


def test_gpu_check_heads_a_cpu_stage_with_its_stand_in_line(monkeypatch, tmp_path, capsys):
    stage = gpu_check.build_stages(False, None)[1]
    monkeypatch.setattr(gpu_check, "run_child", lambda name, cmd, t, log: (0, "", ""))
    assert gpu_check.run_stage(stage, [], tmp_path / "2-tiny-preset", 30) == (0, "passed")
    heading = capsys.readouterr().out.splitlines()
    assert heading[0] == f"gpu_check: [tiny-preset] {stage.stand_in}"
    assert heading[1].startswith("gpu_check: [tiny-preset] python bench.py --scenario "
                                 "decode-steady --model-preset tiny ")


def test_gpu_check_send_share_is_sends_extra_work_over_its_step():
    def case(arm, codec, bed_ns, step_ns):
        return dict(workload="num_running=64", arm=arm, codec=codec, complete=True,
                    s2r_build_encode_decode_ns_median=bed_ns, step_ns_median=step_ns)

    lines = gpu_check.send_shares([case("send", "msgpack", 60_000, 20_000_000),
                                   case("cached", "msgpack", 20_000, 19_000_000),
                                   case("send", "pickle", 50_000, 10_000_000)])
    # the step the case measured: cached's median, as in every other output; each
    # figure named, the whole steps' difference apart from send's build+encode+decode
    assert lines == ["  send's share [num_running=64] msgpack: send's build+encode+decode "
                     "over cached's: +40.0 us per step = +0.21% of cached's 19.00 ms median "
                     "step; whole median step, send's over cached's: +1.00 ms = +5.26%"]
    # send's path cheaper than cached's, its whole step longer: each sign shown
    lines = gpu_check.send_shares([case("send", "msgpack", 12_000, 17_500_000),
                                   case("cached", "msgpack", 20_000, 16_770_000)])
    assert lines == ["  send's share [num_running=64] msgpack: send's build+encode+decode "
                     "over cached's: -8.0 us per step = -0.05% of cached's 16.77 ms median "
                     "step; whole median step, send's over cached's: +0.73 ms = +4.35%"]


def test_gpu_check_smoke_stage_says_its_steps_are_too_few_to_compare_the_policies():
    """A tiny smoke run's tok/s differ by a slow step, not by policy (a reported CPU run:
    send 305 tok/s, cached 107): the line under its table says so."""
    assert [s.note for s in gpu_check.build_stages(False, None)] == [
        "  smoke: 5 counted steps per case, to check that each case runs; too few to "
        "compare send with cached: one slow step can move a case's tok/s and mean step "
        "several-fold"] + [""] * 5


def test_gpu_check_names_its_step_statistics_and_what_tok_s_rests_on(tmp_path):
    """The smoke row of a CPU run: 2 running, a 5.98 ms median step and a 20.5 ms mean
    one (a slow first step); tok/s (97) is running / mean step, so both are shown, and
    a line under the table says what each column is."""
    from ipc_bench.analysis.results import FORMAT_VERSION

    run = tmp_path / "1-smoke"
    run.mkdir()
    case = dict(workload="num_running=2", arm="send", codec="msgpack", transport="ipc",
                output_tokens_per_s=97.4, step_ns_mean=20_530_000.0,
                step_ns_median=5_980_000.0, complete=True, runner_device="cpu")
    (run / "summary.json").write_text(json.dumps(dict(
        format_version=FORMAT_VERSION, metadata={}, cases=[case])))
    lines = gpu_check.format_stage(run, "  a note").splitlines()
    assert lines[3:] == ["  a note"]
    assert re.split(r"\s{2,}", lines[0].strip())[4:8] == [
        "tok/s", "run tok/s", "step ms (mean)", "step ms (median)"]
    assert lines[1].split()[4:8] == ["97", "-", "20.53", "5.98"]
    assert lines[2] == (
        "  tok/s: output tokens of the counted steps over their summed step time (running "
        "requests / step ms (mean) when every counted step decodes one token each); run "
        "tok/s: every token over the case's wall time, warm-up and start-up included (CUDA "
        "only: - on the CPU stages); step ms (mean), (median): of the counted steps; GPU "
        "busy, host, host/decode and GPU idle ms: CUDA events per step, x roofline: GPU busy "
        "over the step's roofline (CUDA only: - on the CPU stages)")


def test_gpu_check_help_says_where_its_default_output_goes(monkeypatch):
    monkeypatch.setattr(gpu_check.tempfile, "tempdir", "/scratch/tmp")
    action = next(a for a in gpu_check.build_parser()._actions
                  if "--output" in a.option_strings)
    assert action.help == (
        "folder for the stages' run folders (default: a new folder gpu-check-XXXXXXXX in "
        "the temporary folder, here /scratch/tmp ($TMPDIR, else /tmp), kept; the last "
        "line names it)")


@pytest.mark.parametrize("attention, buckets", [
    ("flex", [None, "64", "256", "64", "64", "256", "64", "64"]),
    ("varlen", [None, "64", "256", "64", "64", "256", "64", "64"]),
    ("gather", [None] * 8)])
def test_gpu_check_gives_padding_stages_their_running_counts_as_buckets(
        monkeypatch, tmp_path, attention, buckets):
    """Where the attention pads to buckets, each CUDA run's runners compile the one
    bucket of its running count (``--cuda-graph-sizes``), not the 7-9 default ones; the
    Azure replay's varying batches (at most 64 running) one bucket of 64; the smoke
    stage (gather, whatever stage 0 picks) and gather take none (bench.py refuses the
    option there)."""
    from ipc_bench.cli.options import build_parser

    # one request of 40 steps, past the warm-up: a trace its bench.py replays
    trace = tmp_path / "conv.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                     "2023-11-16 18:15:46.6805900,30,40\n")
    given = {}

    def fake_stage(stage, base, out, timeout_s):
        given[stage.name] = base
        return 0, "passed"

    monkeypatch.setattr(gpu_check, "run_decode_step", lambda cuda, out, t: (attention, []))
    monkeypatch.setattr(gpu_check, "run_stage", fake_stage)
    monkeypatch.setattr(gpu_check, "_preflight", lambda device: (True, 0))
    assert gpu_check.main(["--output", str(tmp_path / "out"), "--trace", str(trace)]) == 0

    def option(args, name):
        return args[args.index(name) + 1] if name in args else None

    stages = gpu_check.build_stages(True, str(trace))
    assert [option(given[s.name], "--cuda-graph-sizes") for s in stages] == buckets
    for stage in stages:  # bench.py takes each stage's command line
        args = build_parser().parse_args(stage.args + given[stage.name])
        if args.cuda_graph_sizes:
            assert list(args.cuda_graph_sizes) == [int(option(
                stage.args, "--num-running") or option(stage.args, "--max-num-seqs"))]


def test_gpu_check_stops_after_a_failed_smoke_stage(monkeypatch, tmp_path, capsys):
    ran = []

    def fake_decode_step(cuda, out, timeout_s):  # stage 0 is run for real elsewhere
        ran.append(("decode-step", cuda))
        return "flex", []

    def fake_stage(stage, base, out, timeout_s):
        ran.append((stage.name, timeout_s, base[base.index("--attention") + 1]))
        return 1, "failed with exit 1\n    bench.py: error: token streams differ"

    monkeypatch.setattr(gpu_check, "run_decode_step", fake_decode_step)
    monkeypatch.setattr(gpu_check, "run_stage", fake_stage)
    monkeypatch.setattr(gpu_check, "_preflight", lambda device: (True, 0))
    assert gpu_check.main(["--output", str(tmp_path)]) == 1
    # the smoke stage runs first, with gather: stage 0 never starts
    assert ran == [("smoke", 90.0, "gather")]
    captured = capsys.readouterr()
    assert captured.out.splitlines()[-4:-1] == [
        "gpu_check: [smoke] failed with exit 1 (0 s so far); the last lines of its output "
        "follow", "    bench.py: error: token streams differ",
        "gpu_check: the smoke stage failed: the other stages are not run"]
    assert captured.err == ("gpu_check: FAILED smoke: failed with exit 1: token streams "
                            "differ\n")
    assert captured.out.splitlines()[-1].startswith(f"gpu_check: results in {tmp_path} (")


STOPPED = ("SIGTERM sent; it was stopped (SIGSTOP or SIGTSTP), so SIGCONT followed; 0.2 s "
           "later it exited 143")


@pytest.mark.parametrize("child,summary,lines,failed", [
    ((-9, "", ""), False, ["gpu_check: [smoke] killed by SIGKILL (0 s so far); it printed "
                           "nothing"], "killed by SIGKILL"),
    ((143, "", STOPPED), True, [
        f"gpu_check: [smoke] cut at its 90 s limit: {STOPPED} (0 s so far); it printed nothing",
        "gpu_check: [smoke] no case was written, so there is no table"],
     f"cut at its 90 s limit: {STOPPED}"),
    ((1, "bench.py: error: token streams differ\n", ""), False, [
        "gpu_check: [smoke] failed with exit 1 (0 s so far); the last lines of its output "
        "follow", "    bench.py: error: token streams differ"],
     "failed with exit 1: token streams differ")],
    ids=["killed", "cut-stopped-no-output", "failed"])
def test_gpu_check_says_how_a_stage_ended_in_whole_sentences(
        monkeypatch, tmp_path, capsys, child, summary, lines, failed):
    """A stage killed by a signal is named by it, one cut at its limit says how it was
    stopped; the time so far is on that same line, then whether the stage's last lines
    follow or it printed nothing; a summary without a case prints no table; the FAILED
    line is the first line's sentence, with no dangling colon, and for a failure the
    stage's error line's words."""
    def fake_child(name, cmd, timeout_s, log):
        if summary:
            run = Path(cmd[cmd.index("--output") + 1])
            run.mkdir()
            (run / "summary.json").write_text('{"format_version": 1, "cases": []}')
        return child

    monkeypatch.setattr(gpu_check, "run_child", fake_child)
    monkeypatch.setattr(gpu_check, "_preflight", lambda device: (False, 0))
    assert gpu_check.main(["--output", str(tmp_path), "--stages", "1"]) == 1
    out, err = capsys.readouterr()
    _, command = out.splitlines()[:2]  # the stand-in line, the command line
    assert command.startswith("gpu_check: [smoke] python bench.py --scenario decode-steady ")
    assert out.splitlines()[2:-1] == lines + [
        "gpu_check: the smoke stage failed: the other stages are not run"]
    assert err == f"gpu_check: FAILED smoke: {failed}\n"


def test_gpu_check_continues_a_stopped_stage_so_it_acts_on_the_signal(monkeypatch):
    """A stage stopped (SIGSTOP), its child too, cannot act on the SIGTERM until
    continued: SIGCONT follows, to it and its descendants, so it cleans up and exits at
    once instead of being killed at the end of the grace period; the line says so."""
    import signal

    monkeypatch.setattr(gpu_check, "INTERRUPT_GRACE_S", 30.0)
    stage = ("import signal, subprocess, sys, time\n"
             "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
             "def stop(*_):\n"
             "    child.terminate(); child.wait(); print('cleaned up', flush=True); "
             "sys.exit(143)\n"
             "signal.signal(signal.SIGTERM, stop)\n"
             "print(child.pid, flush=True)\n"
             "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", stage], stdout=subprocess.PIPE, text=True)
    child = int(proc.stdout.readline())
    assert gpu_check._descendants(proc.pid) == [child]
    for pid in (child, proc.pid):
        os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + 10
    while not (gpu_check._is_stopped(proc.pid) and gpu_check._is_stopped(child)):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    t0 = time.monotonic()
    ended = gpu_check._stop(proc, signal.SIGTERM)
    assert time.monotonic() - t0 < 10  # not the 30 s grace
    assert re.fullmatch(r"it was stopped \(SIGSTOP or SIGTSTP\), so SIGCONT followed; "
                        r"\d+\.\d s later it exited 143", ended), ended
    assert proc.stdout.read() == "cleaned up\n"
    assert children(os.getpid()) == []


def test_gpu_check_names_its_folder_on_the_last_line_after_a_failure(tmp_path):
    """``--stages 1 --budget-s 1`` (exit 1): the failure first, the results folder on the
    last line of the output (stdout and stderr in one stream, as on a terminal)."""
    out = subprocess.run([sys.executable, "scripts/gpu_check.py", "--device", "cpu",
                          "--stages", "1", "--budget-s", "1", "--output", str(tmp_path)],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=120)
    lines = out.stdout.splitlines()
    assert out.returncode == 1, out.stdout
    assert lines[-2].startswith("gpu_check: FAILED smoke: "), out.stdout
    assert re.fullmatch(rf"gpu_check: results in {re.escape(str(tmp_path))} \(\d+ s\)",
                        lines[-1]), out.stdout


def test_gpu_check_leaves_no_folder_when_the_device_probe_fails(monkeypatch, tmp_path,
                                                                 capsys):
    monkeypatch.setattr(gpu_check.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(gpu_check, "_preflight", lambda device: (False, 2))
    assert gpu_check.main([]) == 2
    assert list(tmp_path.iterdir()) == []


def test_gpu_check_counts_a_spent_budget_as_a_failure(monkeypatch, tmp_path, capsys):
    def slow_preflight(device):  # the probe alone spends the 1 ms budget
        time.sleep(0.01)
        return False, 0

    monkeypatch.setattr(gpu_check, "_preflight", slow_preflight)
    assert gpu_check.main(["--output", str(tmp_path), "--budget-s", "0.001",
                           "--stages", "1,2"]) == 1
    printed = capsys.readouterr()
    assert printed.err == "gpu_check: FAILED smoke: not run, the 0.001 s budget is spent\n"
    # no stage runs after a smoke stage not run, as after a failed one
    assert "gpu_check: the smoke stage was not run: the other stages are not run\n" in \
        printed.out


def test_gpu_check_passes_a_signal_on_and_kills_a_stage_that_ignores_it(
        monkeypatch, capsys, handlers_restored):
    """A stage that ignores the forwarded SIGTERM is killed after the grace period and
    reaped before the interrupt goes on."""
    import signal
    import threading

    from ipc_bench.harness import signals

    monkeypatch.setattr(gpu_check, "INTERRUPT_GRACE_S", 0.5)
    stubborn = [sys.executable, "-c", "import signal, sys, time; "
                "signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); "
                "time.sleep(60)"]
    old = signals.install()
    signals.unblock()
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGTERM))
    t0 = time.monotonic()
    try:
        timer.start()
        with pytest.raises(signals.Interrupted) as info:
            gpu_check.run_child("stubborn", stubborn, 60)
    finally:
        timer.cancel()
        signals.restore(old)
    assert info.value.code == 143 and 1.4 < time.monotonic() - t0 < 10
    assert capsys.readouterr().out == ("gpu_check: [stubborn] stopped: SIGTERM passed on; "
                                       "0.5 s later it had not exited and was killed by "
                                       "SIGKILL\n")
    assert children(os.getpid()) == []  # reaped, not left a zombie


def _cmdline(pid: int) -> str:
    """``/proc/PID/cmdline`` as one line ('' once the process is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _children(ppid: int) -> list[int]:
    """The pids of the live processes whose parent is ``ppid``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == ppid:
                found.append(int(entry))
    return found


def test_gpu_check_writes_a_stages_output_to_its_log_as_it_comes(tmp_path):
    """A stage's output is in its log while it runs (a check killed from outside keeps
    it), and whole once it ends; a stage cut at its limit keeps what it printed."""
    log = tmp_path / "1-smoke.log"
    # A stage starts with SIGINT / SIGTERM / SIGHUP blocked (signals.child_start) and
    # lifts the block once its handlers are in, as bench.py and decode_step_check.py do.
    talker = [sys.executable, "-u", "-c", "import signal, sys, time; "
              "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM, "
              "signal.SIGHUP}); print('step 1'); print('oops', file=sys.stderr); "
              "time.sleep(30)"]
    t0 = time.monotonic()
    code, text, cut = gpu_check.run_child("smoke", talker, 3, log)
    assert code == -15 and 3 <= time.monotonic() - t0 < 30  # cut by SIGTERM at 3 s
    assert re.fullmatch(r"SIGTERM sent; \d+\.\d s later it was killed by SIGTERM", cut), cut
    assert text == "step 1\noops\n" and log.read_text() == text
    code, text, cut = gpu_check.run_child("done", [sys.executable, "-c", "print('ok')"], 30,
                                          log)
    assert (code, text, cut, log.read_text()) == (0, "ok\n", "", "ok\n")


def test_gpu_check_sigterm_stops_and_reaps_the_running_stage(tmp_path):
    """SIGTERM to gpu_check alone (not its group) while the smoke stage's bench.py runs:
    the stage gets it, writes its results and exits 143, then gpu_check does, with one
    line; no process is left."""
    import signal

    out = tmp_path / "check"
    proc = subprocess.Popen([sys.executable, "scripts/gpu_check.py", "--device", "cpu",
                             "--stages", "1", "--output", str(out)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (out / "1-smoke" / "summary.json").exists():  # the stage has started its run
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    # gpu_check's one child is the stage's bench.py (a process bench.py is forking at
    # this moment bears the same command line until it execs: its parent is not gpu_check)
    stage = [pid for pid in _children(proc.pid)
             if "bench.py" in _cmdline(pid) and str(out / "1-smoke") in _cmdline(pid)]
    assert len(stage) == 1, [_cmdline(pid) for pid in _children(proc.pid)]
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert (proc.returncode, stderr) == (
        143, f"gpu_check.py: interrupted by SIGTERM; results so far in {out} (exit 143)\n")
    assert re.fullmatch(r"gpu_check: \[smoke\] stopped: SIGTERM passed on; \d+\.\d s later "
                        r"it exited 143", stdout.splitlines()[-1]), stdout
    assert processes_matching("bench.py", str(out)) == []  # reaped before the exit
    assert json.loads((out / "1-smoke" / "summary.json").read_text())["status"] == "incomplete"


def test_gpu_check_async_lines_compare_sync_and_async():
    def case(arm, tok_s, gap_ns, share, **kw):
        return dict(workload="num_running=64", arm=arm, complete=True,
                    output_tokens_per_s=tok_s, runner_gap_ns_median=gap_ns,
                    runner_gap_share_median=share, **kw)

    lines = gpu_check.async_lines([
        case("cached", 1000.0, 2_000_000, 0.1, gpu_idle_ns_per_step=2_100_000),
        case("cached+async", 1250.0, 500_000, 0.025, gpu_idle_ns_per_step=50_000,
             runner_lookahead_share=0.95, async_scheduling_mode="device pipelining")])
    assert lines == ["  async [num_running=64]: tok/s sync 1,000 -> async 1,250 = x1.25; "
                     "runner gap p50 sync 2,000 us (10.0%) -> async 500 us (2.5%); GPU idle "
                     "ms/step sync 2.10 -> async 0.05; launched ahead 95%; mode: device "
                     "pipelining"]
    assert gpu_check.async_lines([case("cached", 1.0, 1, 0.1)]) == []


def test_gpu_check_picks_the_fastest_backend_at_the_largest_common_size():
    def row(config, b, step, busy=None, bucket=None):
        return dict(config=config, num_running=b, step_ns=step, gpu_busy_ns=busy,
                    bucket=bucket or b)

    cpu = [row("gather", 2, 30), row("gather", 3, 30), row("flex", 2, 20), row("flex", 3, 20),
           row("flex+graphs", 3, 1)]
    assert gpu_check.fastest_backend(cpu) == "flex"  # at 3 rows: 20 < 30; graphs left out
    # decode_step_check's sizes on CUDA: each B and B + 1, which flex pads to 2 B; flex
    # is faster at the stages' sizes, slower only where padded
    padded = [row("gather", 16, 9, busy=9), row("gather", 17, 9, busy=9),
              row("gather", 256, 90, busy=90), row("gather", 257, 90, busy=90),
              row("flex", 16, 5, busy=5), row("flex", 17, 8, busy=8, bucket=32),
              row("flex", 256, 60, busy=60), row("flex", 257, 120, busy=120, bucket=512)]
    assert gpu_check.fastest_backend(padded) == "flex"  # at 256 unpadded: 60 < 90
    gpu = [row("gather", 256, 5, busy=40), row("varlen", 256, 9, busy=10),
           row("flex", 16, 1, busy=1)]  # no size every backend ran
    assert gpu_check.fastest_backend(gpu) == "gather"
    assert gpu_check.fastest_backend(gpu[:2]) == "varlen"  # GPU time decides, not step
    assert gpu_check.fastest_backend([]) == "gather"


def test_decode_step_check_json_says_how_far_the_run_got(tmp_path, monkeypatch, capsys):
    """The ``--json`` file says whether every configuration ran (``complete``), which were
    not run, skipped or failed, and the signal that ended the run: as written after
    each configuration (what a killed run leaves) and as the interrupt ends it (what
    gpu_check finds after cutting stage 0); a failure without a message is its type."""
    from ipc_bench.engine import paged_attention
    from ipc_bench.harness import signals

    dsc = load_script("decode_step_check")
    out, seen = tmp_path / "rows.json", []

    def run_config(torch, preset, device, backend, graphs, runs, *rest):
        if backend == "flex" and not graphs:
            raise RuntimeError("")
        if graphs:
            seen.append(json.loads(out.read_text()))  # as a SIGKILL here would leave it
            raise signals.Interrupted(143)  # SIGTERM while flex+graphs compiles
        return [dict(config=backend, num_running=b, bucket=b, step_ns=2e6, gpu_busy_ns=None,
                     host_ns=None, roofline_ns=1e6, x_roofline=2.0, tokens=[7] * b,
                     device="cpu (attention gather)") for b in runs]

    monkeypatch.setattr(dsc, "run_config", run_config)
    monkeypatch.setattr(paged_attention, "flex_unsupported", lambda device, block_size: None)
    code = dsc.main(["--device", "cpu", "--num-running", "2", "--json", str(out),
                     "--configs", "gather,varlen,flex,flex+graphs"])
    assert (code, capsys.readouterr().err) == (143, "decode_step_check.py: interrupted by SIGTERM (exit 143)\n")
    left = json.loads(out.read_text())
    common = dict(skipped={"varlen": "varlen needs CUDA: no CPU kernel"},
                  failed={"flex": "RuntimeError"}, goals=[])
    assert {k: v for k, v in seen[0].items() if k not in ("figures", "rows")} == dict(
        complete=False, interrupted_by=None, not_run=["flex+graphs"], **common)
    assert {k: v for k, v in left.items() if k not in ("figures", "rows")} == dict(
        complete=False, interrupted_by="SIGTERM", not_run=["flex+graphs"], **common)
    assert [r["config"] for r in left["rows"]] == ["gather", "gather"]


def test_gpu_check_says_which_configurations_stage_0_did_not_run(monkeypatch, tmp_path,
                                                                capsys):
    """Stage 0 cut at its limit, or stopped by a signal passed on: its lines name the
    configurations its JSON says were not run, so one cut off does not read as one
    skipped; a stage that wrote no JSON says so."""
    from ipc_bench.harness import signals

    cut = "SIGTERM sent; 0.4 s later it exited 143"

    def fake_child(name, cmd, timeout_s, log, interrupt=False):
        (tmp_path / "0-decode-step.json").write_text(json.dumps(dict(
            complete=False, interrupted_by="SIGTERM", not_run=["flex", "flex+graphs"],
            rows=[dict(config="gather", num_running=2, bucket=2, step_ns=1, gpu_busy_ns=1)])))
        if interrupt:
            raise signals.Interrupted(143)
        return 143, "decode_step_check.py: interrupted by SIGTERM (exit 143)\n", cut

    monkeypatch.setattr(gpu_check, "run_child", fake_child)
    state = "0-decode-step.json is incomplete (interrupted by SIGTERM): flex, flex+graphs not run"
    assert gpu_check.run_decode_step(True, tmp_path, 150) == (
        "gather", [f"decode-step: cut at its 150 s limit: {cut}; {state}"])
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"gpu_check: [decode-step] FAILED: cut at its 150 s limit: {cut}; {state}; later "
        "stages use --attention gather")
    monkeypatch.setattr(gpu_check, "run_child",
                        lambda *a: fake_child(*a, interrupt=True))
    with pytest.raises(signals.Interrupted):
        gpu_check.run_decode_step(True, tmp_path, 150)
    assert capsys.readouterr().out.splitlines()[-1] == f"gpu_check: [decode-step] {state}"
    assert gpu_check.decode_step_state(tmp_path / "none.json") == (
        [], "it wrote no none.json")


def test_ring_bench_runs_every_transport_and_size():
    """``scripts/ring_bench.py`` end to end at a tiny size (timings not checked)."""
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "ring_bench.py"), "--sizes",
                          "0,100,2000000", "--iterations", "20", "--repeat", "2"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines()[1:]]
    assert [(r[0], r[1], r[2]) for r in rows] == [
        (size, t, rounds) for size, rounds in (("0", "20"), ("100", "20"), ("2,000,000", "20"))
        for t in ("ring-spin", "ring-block", "zmq-ipc")]
    assert all(float(r[3]) > 0 and float(r[5].replace(",", "")) > 0 for r in rows)


def test_readme_lists_every_script_and_states_gpu_checks_budget():
    """The layout block (docs/layout.md) names each script of scripts/ on a line of its
    own, and the gpu_check paragraph (docs/models-and-gpu.md) gives the script's own
    budget."""
    layout = (ROOT / "docs" / "layout.md").read_text()
    block = layout[layout.index("\nscripts/ "):layout.index("\nresults/ ")]
    listed = [line.split()[0] for line in block.splitlines()[2:]]
    assert listed and sorted(listed) == sorted(p.name for p in (ROOT / "scripts").iterdir()
                                               if p.suffix in (".py", ".sh"))
    assert f"within a budget of {gpu_check.BUDGET_S:.0f} s (`--budget-s`" in \
        (ROOT / "docs" / "models-and-gpu.md").read_text()


def _byte_sweep(*argv, env=None, timeout=60):
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "byte_sweep.py"), *argv],
                          capture_output=True, text=True, timeout=timeout, env=env)


def test_byte_sweep_bad_input_is_one_line_exit_2_before_any_case(tmp_path):
    (tmp_path / "h.csv").write_text("5,x\n")
    cases = [
        (["--formats", "bogus"],
         "argument --formats: 'bogus': choose from cmpl, chatcmpl, numeric"),
        (["--vocab-sizes", "0"], "argument --vocab-sizes: must be at least 2, got 0"),
        (["--vocab-sizes", "abc"], "argument --vocab-sizes: expected an integer, got 'abc'"),
        (["--codecs", "nope"], "argument --codecs: 'nope': choose from msgpack, pickle, packed"),
        (["--num-running", "0"], "argument --num-running: must be at least 1, got 0"),
        (["--steps", "0"], "argument --steps: must be at least 1, got 0"),
        (["--steps", "-3"], "argument --steps: must be at least 1, got -3"),
        (["--json", "/proc/x"], "argument --json: /proc/x: No such file or directory"),
        (["--json", str(tmp_path)], f"argument --json: {tmp_path}: is a directory"),
        (["--token-ids", f"uniform,hist:{tmp_path}/h.csv"],
         f"argument --token-ids: token-id histogram {tmp_path}/h.csv line 1: expected "
         "'token_id,count' (two integers), got '5,x'"),
        (["--token-ids", f"hist:{tmp_path}/none.csv"], "argument --token-ids: cannot read "
         f"token-id histogram {tmp_path}/none.csv: No such file or directory"),
    ]
    for argv, message in cases:
        out = _byte_sweep(*argv)
        assert (out.returncode, out.stderr, out.stdout) == \
            (2, f"byte_sweep.py: error: {message}\n", ""), argv


def test_byte_sweep_help_is_whole():
    text = " ".join(_byte_sweep("--help").stdout.split())
    assert ("distribution (``uniform``, ``zipf``, ``hist:PATH``), this runs the "
            "decode-steady") in text
    assert "Exit 1 if the model misses any frame." in text
    for option in ("--num-running N running requests", "--formats F[,F...] request-id formats",
                   "--vocab-sizes N[,N...] vocabulary sizes", "--codecs C[,C...] codecs"):
        assert option in text, option


def test_byte_sweep_sigterm_removes_the_socket_folder(bench_tmpdir):
    env = dict(os.environ, TMPDIR=str(bench_tmpdir))
    proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "byte_sweep.py"),
                             "--num-running", "4", "--steps", "1000000", "--formats",
                             "numeric", "--vocab-sizes", "32000", "--codecs", "msgpack"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 60
    while (not list(bench_tmpdir.glob("ipc-bench-*")) and proc.poll() is None
           and time.monotonic() < deadline):
        time.sleep(0.2)
    if proc.poll() is not None:
        raise AssertionError(f"byte_sweep.py exited {proc.returncode} before its case "
                             f"started:\n{proc.communicate()[1]}")
    assert list(bench_tmpdir.glob("ipc-bench-*")), "the case never started"
    time.sleep(1)
    proc.terminate()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143
    assert err.splitlines()[-1] == "byte_sweep.py: interrupted by SIGTERM (exit 143)"
    assert list(bench_tmpdir.iterdir()) == []


def test_gpu_check_help_states_the_stage_order(capsys):
    with pytest.raises(SystemExit):
        gpu_check.build_parser().parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "should stay first" not in text
    assert ("(default: all: 0 decode-step, 1 smoke, 2 llama-3.2-1b, 3 llama-3.1-8b, 4 aa, "
            "5 azure-conv, 6 async). They run in the order 1, 0, 2, 4, 3, 5, 6 whatever order "
            "they are given in: the smoke stage, 1, first (with gather; its failure stops the "
            "check), then stage 0 (it picks the --attention of the later stages; without it "
            "they use auto, or gather where Triton lacks a C compiler or Python's headers), "
            "then the others by what they deliver") in text


@pytest.mark.parametrize("toolchain", ["found", "missing"])
def test_gpu_check_without_stage_0_uses_auto_or_gather_where_triton_cannot_build(
        monkeypatch, tmp_path, capsys, toolchain):
    """Without stage 0 the stages take ``auto`` (flex on CUDA, with their buckets), but
    where Triton lacks its C compiler or Python's headers every runner would refuse flex:
    the stages use gather, and say why."""
    why = "--attention flex on CUDA compiles Triton kernels, which need a C compiler ..."
    given = []
    monkeypatch.setattr(gpu_check, "triton_toolchain_problem",
                        lambda: why if toolchain == "missing" else None)
    monkeypatch.setattr(gpu_check, "_preflight", lambda device: (True, 0))
    monkeypatch.setattr(gpu_check, "run_stage",
                        lambda stage, base, out, t: (given.append(base), (0, "passed"))[1])
    assert gpu_check.main(["--output", str(tmp_path), "--stages", "6"]) == 0
    (base,) = given
    tail = base[base.index("--no-hostname") + 1:]
    if toolchain == "found":
        assert tail == ["--cuda-graph-sizes", "64"]
    else:
        assert tail == ["--attention", "gather"]
        assert f"gpu_check: the stages use --attention gather: {why}\n" in capsys.readouterr().out


def test_verify_step_bench_times_both_paths_and_refuses_bad_input(capsys):
    """``scripts/verify_step_bench.py`` on the tiny preset: a row per size, both paths
    giving the same ids; bad input is one line and exit 2 before any model is built."""
    bench = load_script("verify_step_bench")
    assert bench.main(["--num-running", "2,3", "--reps", "1", "--warmup", "0",
                       "--context-min", "8", "--context-max", "40"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[2:]]
    assert [r[0] for r in rows] == ["2", "3"] and all(r[4] == "True" for r in rows)
    for argv in (["--num-running", "0"], ["--num-spec-tokens", "0"],
                 ["--context-min", "2"]):
        assert bench.main(argv) == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1


#: (script of scripts/, its arguments, the last line of its stderr): a comma-separated
#: list with an empty item is refused while the arguments are parsed, before any work
#: (``ipc_bench.cli.options.list_items``), in one line and exit 2
EMPTY_ITEM_CASES = [
    ("aa_false_positive", ["--load", "idle,,busy"], "aa_false_positive.py: error: argument "
     "--load: expected comma-separated conditions, got 'idle,,busy' (an item is empty)"),
    ("aa_false_positive", ["--group-sizes", "2,,3"], "aa_false_positive.py: error: argument "
     "--group-sizes: expected comma-separated integers, got '2,,3' (an item is empty)"),
    ("byte_sweep", ["--vocab-sizes", "32000,"], "byte_sweep.py: error: argument "
     "--vocab-sizes: expected comma-separated integers, got '32000,' (an item is empty)"),
    ("byte_sweep", ["--token-ids", "uniform,,zipf"], "byte_sweep.py: error: argument "
     "--token-ids: expected comma-separated token-id distributions, got 'uniform,,zipf' "
     "(an item is empty)"),
    ("decode_step_check", ["--num-running", "2,,4"], "decode_step_check.py: error: argument "
     "--num-running: expected comma-separated whole numbers, got '2,,4' (an item is empty)"),
    ("decode_step_check", ["--configs", "gather,"], "decode_step_check.py: error: argument "
     "--configs: expected comma-separated configurations, got 'gather,' (an item is empty)"),
    ("gpu_check", ["--stages", "1,,2"], "gpu_check.py: error: argument --stages: expected "
     "comma-separated stage numbers, got '1,,2' (an item is empty)"),
    ("hot_path_bench", ["--only", "encode,,decode"], "hot_path_bench.py: error: argument "
     "--only: expected comma-separated texts, got 'encode,,decode' (an item is empty)"),
    ("oracle_cost", ["--num-running", "1,,64"], "oracle_cost.py: error: --num-running: "
     "expected comma-separated integers, got '1,,64' (an item is empty)"),
    ("oracle_cost", ["--bench", "--num-running", "64,"], "oracle_cost.py: error: "
     "--num-running: expected comma-separated integers, got '64,' (an item is empty)"),
    ("ring_bench", ["--sizes", "64,,1024"], "ring_bench.py: error: --sizes: expected "
     "comma-separated integers, got '64,,1024' (an item is empty)"),
    ("ring_bench", ["--transports", ",zmq-ipc"], "ring_bench.py: error: --transports: "
     "expected comma-separated transports, got ',zmq-ipc' (an item is empty)"),
    ("variant_table", ["--batch-sizes", "1,,16"], "variant_table.py: error: argument "
     "--batch-sizes: expected comma-separated whole numbers, got '1,,16' (an item is "
     "empty)"),
    ("variant_table", ["--only", "send,,cached"], "variant_table.py: error: argument "
     "--only: expected comma-separated alternatives, got 'send,,cached' (an item is "
     "empty)"),
    ("verify_step_bench", ["--num-running", "16,,64"], "verify_step_bench.py: error: "
     "--num-running: expected comma-separated integers, got '16,,64' (an item is empty)"),
]


@pytest.mark.parametrize("script,argv,line", EMPTY_ITEM_CASES,
                         ids=[f"{s} {' '.join(a)}" for s, a, _ in EMPTY_ITEM_CASES])
def test_script_refuses_an_empty_list_item_in_one_line(script, argv, line):
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / f"{script}.py"), *argv],
                         capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stderr.splitlines()[-1:], out.stdout) == (2, [line], "")
    assert "Traceback" not in out.stderr


def test_gpu_check_gives_each_later_stage_its_share_of_the_budget(monkeypatch, tmp_path):
    """A stage that runs to its limit leaves each later stage its weighted share of
    the budget (``STAGE_WEIGHTS``, stage 0 at most its 150 s), in the order they run
    (``RUN_ORDER``); the smoke stage its own 90 s, the async stage at most its 75 s. A
    fake clock: each stage spends all of its limit."""
    # one request of 40 steps, past the warm-up: a trace its bench.py replays
    trace = tmp_path / "conv.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                     "2023-11-16 18:15:46.6805900,30,40\n")
    now = [0.0]
    limits = {}

    def fake_decode_step(cuda, out, timeout_s):
        limits["decode-step"] = round(timeout_s, 6)
        now[0] += timeout_s
        return "flex", []

    def fake_stage(stage, base, out, timeout_s):
        limits[stage.name] = round(timeout_s, 6)
        now[0] += timeout_s
        return 0, "passed"

    monkeypatch.setattr(gpu_check.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(gpu_check, "run_decode_step", fake_decode_step)
    monkeypatch.setattr(gpu_check, "run_stage", fake_stage)
    monkeypatch.setattr(gpu_check, "_preflight", lambda device: (True, 0))
    assert gpu_check.main(["--output", str(tmp_path / "out"), "--trace", str(trace),
                           "--budget-s", "547"]) == 0
    # 547 - 90 = 457 s for weights 100 (stage 0), 77 + 77 (the 1B runs), 20 + 20 (the
    # A/A pairs), 95 (8B), 48 (replay), 20 (async): each its weight in seconds
    assert list(limits.items()) == [
        ("smoke", 90.0), ("decode-step", 100.0), ("llama-3.2-1b-64", 77.0),
        ("llama-3.2-1b-256", 77.0), ("aa-64", 20.0), ("aa-256", 20.0),
        ("llama-3.1-8b", 95.0), ("azure-conv", 48.0), ("async", 20.0)]
    limits.clear()
    now[0] = 0.0
    assert gpu_check.main(["--output", str(tmp_path / "out2"), "--budget-s", "870",
                           "--stages", "2,6"]) == 0
    # stage 0 not asked for: 870 s for weights 77, 77 and 20: 385 s each for the 1B
    # runs; the async stage's 100 s left is over its own 75 s
    assert limits == {"llama-3.2-1b-64": 385.0, "llama-3.2-1b-256": 385.0, "async": 75.0}


def test_gpu_check_refuses_an_output_holding_an_earlier_checks_stages(tmp_path, capsys):
    """A second check into the same --output ran its stages, whose bench.py refused the
    earlier run folder (exit 1, a FAILED row for a case that never ran) and whose log
    replaced the earlier one; now it is refused up front, exit 2, nothing touched."""
    out = tmp_path / "g"
    for name in ("1-smoke", "2-tiny-preset"):
        (out / name).mkdir(parents=True)
    (out / "1-smoke.log").write_text("earlier log\n")
    (out / "notes.txt").write_text("mine\n")
    assert gpu_check.main(["--output", str(out), "--stages", "1"]) == 2
    assert capsys.readouterr().err == (
        f"gpu_check.py: error: argument --output: {out} holds an earlier check's stage results "
        "(1-smoke, 1-smoke.log, 2-tiny-preset), which the stages would refuse or "
        "overwrite: give a new or empty folder\n")
    assert (out / "1-smoke.log").read_text() == "earlier log\n"
    assert gpu_check.stage_entries(tmp_path / "none") == []
    (out / "1-smoke").rmdir()
    (out / "1-smoke.log").unlink()
    (out / "2-tiny-preset").rmdir()
    assert gpu_check.stage_entries(out) == []  # a folder of other files is taken
