"""The analysis parts of scripts/ on synthetic run summaries (no runs)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


aa = _load("aa_false_positive")
codec_fit = _load("codec_fit")
gpu_check = _load("gpu_check")


def test_clopper_pearson_known_values():
    # 0/20: upper bound 1 - 0.025 ** (1 / 20); 20/20: lower bound 0.025 ** (1 / 20)
    assert aa.clopper_pearson(0, 20) == (0.0, pytest.approx(1 - 0.025 ** (1 / 20)))
    assert aa.clopper_pearson(20, 20) == (pytest.approx(0.025 ** (1 / 20)), 1.0)
    lo, hi = aa.clopper_pearson(1, 20)
    assert lo == pytest.approx(0.00127, abs=1e-5) and hi == pytest.approx(0.24873, abs=1e-5)


def _aa_summary(pairs, treat_scale=1.0):
    cases = []
    for rep in range(pairs):
        base = 1000.0 + 37 * ((rep * 7919) % 11)  # varies between repetitions
        for arm, scale in (("send", 1.0), ("send'", treat_scale)):
            cases.append(dict(arm=arm, policy="send", repetition=rep, complete=True,
                              num_steps=100, **{m: base * scale for m in aa.METRICS}))
    return dict(cases=cases)


def test_aa_analysis_counts_flagged_groups():
    same = aa.analyse(_aa_summary(12), groups=2, per_group=6)
    assert same["pairs"] == 12
    for entry in same["metrics"].values():
        for method in ("t", "bootstrap", "sign"):
            assert entry[method]["false_positives"] == 0
        assert entry["all_pairs"]["verdict"] == "no significant difference"
    shifted = aa.analyse(_aa_summary(12, treat_scale=1.1), groups=2, per_group=6)
    assert shifted["metrics"]["step_ns_mean"]["t"]["false_positives"] == 2


def test_aa_analysis_skips_methods_without_an_interval():
    result = aa.analyse(_aa_summary(10), groups=2, per_group=5)
    assert "sign" not in result["metrics"]["step_ns_mean"]  # needs 6 pairs
    with pytest.raises(SystemExit, match="10 pairs, need 12"):
        aa.analyse(_aa_summary(10), groups=2, per_group=6)


def test_codec_fit_points_take_the_median_over_repetitions():
    cases = [dict(policy="send", codec="msgpack", num_running=b, repetition=r, complete=True,
                  num_steps=10, case_id=f"{b}#{r}", encode_ns_per_step=v, decode_ns_per_step=1.0)
             for b, vals in ((16, (10.0, 30.0, 20.0)), (64, (40.0, 41.0, 42.0)))
             for r, v in enumerate(vals)]
    pts = codec_fit.points(dict(cases=cases), codec_fit.codec_ns)
    assert pts == {("send", "msgpack"): {16: 21.0, 64: 42.0}}


# ---------------------------------------------------------------------- gpu_check


def test_gpu_check_stages_on_cuda_are_the_public_presets(tmp_path):
    trace = tmp_path / "conv.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n")
    stages = gpu_check.build_stages(True, str(trace))
    assert [s.name for s in stages] == ["smoke", "llama-3.2-1b", "llama-3.1-8b", "aa",
                                        "azure-conv"]
    assert stages[0].limit_s == 90.0 and all(s.limit_s is None for s in stages[1:])

    def arg(stage, name):
        return stage.args[stage.args.index(name) + 1]

    assert [(arg(s, "--model-preset"), arg(s, "--num-running")) for s in stages[:4]] == [
        ("llama-3.2-1b", "16"), ("llama-3.2-1b", "64,256"), ("llama-3.1-8b", "64"),
        ("llama-3.2-1b", "64")]
    assert arg(stages[1], "--codecs") == arg(stages[2], "--codecs") == "msgpack,pickle"
    assert "--no-single-process" not in stages[1].args + stages[2].args
    assert "--aa" in stages[3].args
    assert (arg(stages[4], "--max-requests"), arg(stages[4], "--trace")) == ("100", str(trace))
    assert gpu_check.build_stages(True, None)[4].skip.startswith("no Azure conversation trace")


def test_gpu_check_send_share_is_sends_extra_work_over_its_step():
    def case(arm, codec, bed_ns, step_ns):
        return dict(workload="num_running=64", arm=arm, codec=codec, complete=True,
                    s2r_build_encode_decode_ns_median=bed_ns, step_ns_median=step_ns)

    lines = gpu_check.send_shares([case("send", "msgpack", 60_000, 20_000_000),
                                   case("cached", "msgpack", 20_000, 19_000_000),
                                   case("send", "pickle", 50_000, 10_000_000)])
    assert lines == ["  send's share [num_running=64] msgpack: 40.0 us of a 20.00 ms step "
                     "= 0.20%"]


def test_gpu_check_stops_after_a_failed_smoke_stage(monkeypatch, tmp_path, capsys):
    ran = []

    def fake_stage(stage, base, out, timeout_s):
        ran.append((stage.name, timeout_s))
        return 1, "failed (exit 1):\n    bench.py: error: token streams differ"

    monkeypatch.setattr(gpu_check, "run_stage", fake_stage)
    monkeypatch.setattr(gpu_check, "_preflight", lambda device: (True, 0))
    assert gpu_check.main(["--output", str(tmp_path)]) == 1
    assert ran == [("smoke", 90.0)]
    captured = capsys.readouterr()
    assert "the smoke stage failed: the other stages are not run" in captured.out
    assert "gpu_check: FAILED smoke: failed (exit 1):" in captured.err


def test_gpu_check_counts_a_spent_budget_as_a_failure(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(gpu_check, "_preflight", lambda device: (False, 0))
    assert gpu_check.main(["--output", str(tmp_path), "--budget-s", "0",
                           "--stages", "1,2"]) == 1
    err = capsys.readouterr().err
    assert "FAILED smoke: not run, the 0 s budget is spent" in err
    assert "FAILED llama-3.2-1b (tiny preset): not run" in err
    assert "FAILED llama-3.1-8b" not in err  # not asked for


@pytest.mark.slow
def test_gpu_check_without_cuda_runs_every_stage_shrunk(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA present: the check would run the GPU stages")
    out = subprocess.run([sys.executable, "scripts/gpu_check.py", "--output",
                          str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                         timeout=280)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == ("gpu_check: no CUDA device (torch.cuda.is_available() is False): "
                        "running the stages shrunk on the CPU (tiny and cpu presets) instead")
    ends = [ln for ln in lines if "] passed (" in ln or "] SKIPPED" in ln]
    names = ["smoke", "llama-3.2-1b (tiny preset)", "llama-3.1-8b (cpu preset)", "aa",
             "azure-conv"]
    assert [ln.split("[")[1].split("]")[0] for ln in ends] == names
    assert sum(ln.startswith("workload ") and "GPU busy ms" in ln for ln in lines) == 5
    runs = sorted(p.name for p in tmp_path.iterdir())
    for run in runs:
        cases = json.loads((tmp_path / run / "summary.json").read_text())["cases"]
        assert all(c["complete"] and c["runner_device"].startswith("cpu") for c in cases)
        assert all("gpu_busy_ns_per_step" not in c for c in cases)  # no CUDA: absent
    smoke = json.loads((tmp_path / "1-smoke" / "summary.json").read_text())["cases"]
    assert [(c["policy"], c["codec"]) for c in smoke] == [("send", "msgpack"),
                                                          ("cached", "msgpack")]
    assert any("send's share [num_running=4] msgpack:" in ln for ln in lines)
