"""``scripts/gpu_check.py`` does not start a stage whose share of what is left of the
budget is under ``MIN_STAGE_S`` (10 s on CUDA, 5 s on the CPU: less than its first
case takes): one line as it is passed over, a ``FAILED`` line, exit 1, and its time
goes to the later stages. Near the end of a budget stages were started with limits of
0-3 s and killed at once (``cut at its 0 s limit``). A fake clock: each stage spends
what the test says."""

from __future__ import annotations

from script_module import load_script

gpu_check = load_script("gpu_check")


def _fake(monkeypatch, cuda: bool, spend: dict[str, float]):
    """Stage 0 and the stages recorded with their limits, not run; each spends
    ``spend[name]`` seconds of a fake clock (0 where not given)."""
    now = [0.0]
    ran = []

    def fake_decode_step(cuda, out, timeout_s):
        ran.append(("decode-step", round(timeout_s, 3)))
        now[0] += spend.get("decode-step", 0.0)
        return "gather", []

    def fake_stage(stage, base, out, timeout_s):
        ran.append((stage.name, round(timeout_s, 3)))
        now[0] += spend.get(stage.name, 0.0)
        return 0, "passed"

    monkeypatch.setattr(gpu_check.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(gpu_check, "run_decode_step", fake_decode_step)
    monkeypatch.setattr(gpu_check, "run_stage", fake_stage)
    monkeypatch.setattr(gpu_check, "_preflight", lambda device: (cuda, 0))
    return ran


def test_the_minimum_is_one_case_of_the_device(tmp_path):
    assert gpu_check.MIN_STAGE_S == {True: 10.0, False: 5.0}


def test_a_share_under_the_minimum_is_not_run_and_its_time_goes_on(
        monkeypatch, tmp_path, capsys):
    """CUDA, 130 s: the smoke stage spends 85 s; of the 45 s left the A/A runs (weight 20
    each against the 8B stage's 95) would get 6.7 s and 7.8 s: not run; the 8B stage
    then gets all 45 s."""
    ran = _fake(monkeypatch, True, {"smoke": 85.0})
    out = tmp_path / "out"
    assert gpu_check.main(["--output", str(out), "--budget-s", "130",
                           "--stages", "1,4,3"]) == 1
    assert ran == [("smoke", 90.0), ("llama-3.1-8b", 45.0)]
    printed = capsys.readouterr()
    lines = [ln for ln in printed.out.splitlines() if "lack of time" in ln]
    assert lines == [
        "gpu_check: [aa-64] not run for lack of time: its share would be 6.7 s (of the "
        "45.0 s left of the 130 s budget), less than the 10 s a stage is given at least",
        "gpu_check: [aa-256] not run for lack of time: its share would be 7.8 s (of the "
        "45.0 s left of the 130 s budget), less than the 10 s a stage is given at least"]
    assert printed.err == (
        "gpu_check: FAILED aa-64: not run for lack of time: its share would be 6.7 s (of "
        "the 45.0 s left of the 130 s budget), less than the 10 s a stage is given at least\n"
        "gpu_check: FAILED aa-256: not run for lack of time: its share would be 7.8 s (of "
        "the 45.0 s left of the 130 s budget), less than the 10 s a stage is given at "
        "least\n")


def test_on_the_cpu_the_last_seconds_start_no_stage(monkeypatch, tmp_path, capsys):
    """The trial's ``--budget-s 30`` on the CPU: with 3 s left the later stages were
    started with limits of 2.7 and 3 s and cut; now neither starts."""
    ran = _fake(monkeypatch, False, {"smoke": 27.0})
    out = tmp_path / "out"
    assert gpu_check.main(["--output", str(out), "--budget-s", "30",
                           "--stages", "1,2,6"]) == 1
    assert ran == [("smoke", 30.0)]
    assert capsys.readouterr().err == (
        "gpu_check: FAILED tiny-preset: not run for lack of time: its share would be 2.7 s "
        "(of the 3.0 s left of the 30 s budget), less than the 5 s a stage is given at "
        "least\n"
        "gpu_check: FAILED async: not run for lack of time: its share would be 3.0 s (of "
        "the 3.0 s left of the 30 s budget), less than the 5 s a stage is given at least\n")


def test_a_spent_budget_keeps_its_words(monkeypatch, tmp_path, capsys):
    ran = _fake(monkeypatch, False, {"smoke": 31.0})
    assert gpu_check.main(["--output", str(tmp_path / "out"), "--budget-s", "30",
                           "--stages", "1,6"]) == 1
    assert ran == [("smoke", 30.0)]
    printed = capsys.readouterr()
    assert "gpu_check: [async] not run, the 30 s budget is spent\n" in printed.out
    assert printed.err == "gpu_check: FAILED async: not run, the 30 s budget is spent\n"
