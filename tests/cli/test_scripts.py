"""The analysis parts of scripts/ on synthetic run summaries (no runs); oracle_cost on
two-request engines in this process."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


aa = _load("aa_false_positive")
codec_fit = _load("codec_fit")


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


def test_oracle_cost_steps_both_engines_through_the_same_schedule(capsys):
    oracle_cost = _load("oracle_cost")
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
