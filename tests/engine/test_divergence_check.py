"""scripts/divergence_check.py: the comparison of runs' token streams (first diverging
step and request, the top-2 margins there, the smallest margins), its lines and exit
status, bad input, the budget, and on CPU runs in fresh processes that agree."""

from __future__ import annotations

import json

import pytest

from script_module import load_script

div = load_script("divergence_check")

A, B, C = "cmpl-a-0", "cmpl-b-0", "cmpl-c-0"


def _run(*steps):
    """A run's record from ``(req_ids, tokens, margins)`` per step."""
    return {"steps": [dict(req_ids=list(r), tokens=list(t), margins=list(m))
                      for r, t, m in steps]}


# three steps of two requests, then a third joins (a replacement prefilled)
BASE = [([A, B], [11, 22], [0.5, 0.25]),
        ([A, B], [12, 23], [0.0625, 0.75]),
        ([A, B, C], [13, 24, 31], [0.125, 0.001953125, 2.0])]
# the same, but request B's token at step 2 flipped where its margin was smallest
FLIPPED = BASE[:2] + [([A, B, C], [13, 99, 31], [0.125, 0.0009765625, 2.0])]


def test_equal_runs_have_no_divergence_and_their_smallest_margins():
    assert div.first_divergence(_run(*BASE), _run(*BASE)) is None
    assert div.smallest_margins(_run(*BASE), 3) == [
        dict(step=2, request=B, margin=0.001953125),
        dict(step=1, request=A, margin=0.0625),
        dict(step=2, request=A, margin=0.125)]


def test_the_first_diverging_step_request_tokens_and_margins():
    assert div.first_divergence(_run(*BASE), _run(*FLIPPED)) == dict(
        step=2, request=B, tokens=[24, 99], margins=[0.001953125, 0.0009765625])
    # a request only one run sampled: the other's token and margin are None
    late = BASE[:1] + [([A], [12], [0.0625])] + BASE[2:]
    assert div.first_divergence(_run(*BASE), _run(*late)) == dict(
        step=1, request=B, tokens=[23, None], margins=[0.75, None])


def test_compare_runs_pairs_lines_and_exit_status():
    runs = [_run(*BASE), _run(*BASE), _run(*FLIPPED)]
    result = div.compare_runs(runs)
    assert [(p["runs"], p["equal"], p["steps"]) for p in result["pairs"]] == [
        ([1, 2], True, 3), ([1, 3], False, 3), ([2, 3], False, 3)]
    assert result["diverged"] is True
    lines = div.compare_lines(result)
    assert lines[:3] == [
        "run 1 vs run 2: equal over 3 steps",
        f"run 1 vs run 3: DIVERGE at step 2, request {B}: token 24 (top-2 margin "
        "0.00195312) vs 99 (top-2 margin 0.000976562)",
        f"run 2 vs run 3: DIVERGE at step 2, request {B}: token 24 (top-2 margin "
        "0.00195312) vs 99 (top-2 margin 0.000976562)"]
    assert lines[3:5] == [
        f"run 1: smallest top-2 margins: 0.00195312 (step 2, {B}), 0.0625 (step 1, {A}), "
        f"0.125 (step 2, {A}), 0.25 (step 0, {B}), 0.5 (step 0, {A})",
        "run 2: smallest top-2 margins: as run 1"]
    assert lines[5] == (f"run 3: smallest top-2 margins: 0.000976562 (step 2, {B}), "
                        f"0.0625 (step 1, {A}), 0.125 (step 2, {A}), 0.25 (step 0, {B}), "
                        f"0.5 (step 0, {A})")
    assert div.verdict(result, 3, 3, []) == 1
    assert div.verdict_line(result, 3, 3, 1) == (
        "result: the runs DIVERGE: 2 of 3 pairs differ (a found divergence is this "
        "check's result, exit 1)")
    agree = div.compare_runs(runs[:2])
    assert (div.verdict(agree, 2, 2, []), div.verdict_line(agree, 2, 2, 0)) == (
        0, "result: all 2 runs agree token for token")
    # a run missing: incomplete, exit 3, unless the runs that completed diverge
    assert div.verdict(agree, 2, 3, ["run 3: FAILED exit 1: boom"]) == div.EXIT_INCOMPLETE
    assert div.verdict_line(agree, 2, 3, 3) == (
        "result: incomplete: 2 of 3 runs completed, and they agree (exit 3)")
    assert div.verdict(result, 3, 5, ["run 4: FAILED"]) == 1


@pytest.mark.parametrize("argv,line", [
    (["--runs", "1"], "argument --runs: must be at least 2, got 1"),
    (["--budget-s", "nan"], "argument --budget-s: must be a finite number above 0, got nan"),
    (["--preset", "huge"], "argument --preset: unknown preset 'huge'; choose from "),
    (["--device", "cpu", "--attention", "varlen"], "--attention varlen needs CUDA "
     "(FlashAttention's paged kernel); on CPU use gather or flex\n"),
])
def test_bad_input_is_one_line_and_exit_2(argv, line, capsys):
    assert div.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"divergence_check.py: error: {line}") and err.count("\n") == 1


def test_a_budget_too_short_for_a_run_starts_none_and_exits_3(tmp_path, capsys):
    out = tmp_path / "div.json"
    assert div.main(["--device", "cpu", "--runs", "2", "--budget-s", "1",
                     "--output", str(out)]) == 3
    text = capsys.readouterr().out
    assert text.splitlines()[1:] == [
        "  runs 1-2: not started: --budget-s 1 ran out",
        "result: incomplete: 0 of 2 runs completed (exit 3)"]
    data = json.loads(out.read_text())
    assert (data["runs"], data["failures"], data["diverged"]) == (
        [], ["runs 1-2: not started: --budget-s 1 ran out"], False)


def test_cpu_runs_in_fresh_processes_agree(tmp_path, capsys):
    out = tmp_path / "div.json"
    assert div.main(["--device", "cpu", "--runs", "2", "--steps", "3", "--num-running", "2",
                     "--attention", "gather", "--output", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("divergence_check.py: 2 runs of tiny on cpu, 2 running, 3 steps, "
                           "attention gather; deterministic off, cuDNN SDPA off, SDPA math "
                           "only off\n")
    assert "run 1 vs run 2: equal over 3 steps\n" in text
    assert text.endswith("result: all 2 runs agree token for token\n")
    data = json.loads(out.read_text())
    first, second = data["runs"]
    assert data["devices"] == ["cpu (attention gather)"] * 2
    # step 0 prefills both prompts and samples for both; every step after decodes both
    assert [len(s["tokens"]) for s in first["steps"]] == [2, 2, 2]
    assert first["steps"] == second["steps"]
    assert all(0 < m < float("inf") for s in first["steps"] for m in s["margins"])
    assert data["pairs"] == [dict(runs=[1, 2], equal=True, steps=3, divergence=None)]
    assert [r["n"] for r in data["runs"]] == data["compared"] == [1, 2]
