"""``scripts/gpu_check.py`` gives a stage whose first case needs more than
``MIN_STAGE_S`` its own least time (``STAGE_MIN_S``, ``min_stage_s``): the Azure replay
(stage 5) is not started with a share under 33 s on CUDA or 8 s on the CPU, where its
first case took 2.7-4.7 s on the 2-core development machine and a 5 s limit (the CPU's
``MIN_STAGE_S``) cut its second case before its first step. A fake clock, as
``test_gpu_check_min_stage``: no stage runs."""

from __future__ import annotations

from script_module import load_script

gpu_check = load_script("gpu_check")


def write_trace(path, rows: int = 100) -> None:
    """A small Azure-format trace: ``rows`` requests 50 ms apart, 40-token prompts,
    8 output tokens each (as many rows as the replay reads on CUDA)."""
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"] + [
        f"2023-11-16 18:15:{40 + i // 20:02d}.{(i % 20) * 5:02d}00000,40,8"
        for i in range(rows)]
    path.write_text("\n".join(lines) + "\n")


def _stage(number: int, cuda: bool, trace: str = "trace.csv"):
    return next(s for s in gpu_check.build_stages(cuda, trace) if s.number == number)


def test_the_replay_has_its_own_minimum_the_others_the_devices():
    assert gpu_check.STAGE_MIN_S == {5: {True: 33.0, False: 8.0}}
    assert [gpu_check.min_stage_s(_stage(5, cuda), cuda) for cuda in (True, False)] == \
        [33.0, 8.0]
    assert [gpu_check.min_stage_s(_stage(n, False), False) for n in (1, 2, 3, 4, 6)] == \
        [5.0] * 5
    assert [gpu_check.min_stage_s(_stage(n, True), True) for n in (1, 2, 3, 4, 6)] == \
        [10.0] * 5


def _fake(monkeypatch, cuda: bool, smoke_s: float):
    """The stages recorded with their limits, not run; the smoke stage spends
    ``smoke_s`` seconds of a fake clock."""
    now, ran = [0.0], []

    def fake_stage(stage, base, out, timeout_s):
        ran.append((stage.name, round(timeout_s, 3)))
        now[0] += smoke_s if stage.name == "smoke" else 0.0
        return 0, "passed"

    monkeypatch.setattr(gpu_check.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(gpu_check, "run_stage", fake_stage)
    monkeypatch.setattr(gpu_check, "_preflight", lambda device: (cuda, 0))
    return ran


def test_on_the_cpu_a_replay_share_of_6_s_does_not_start_it(monkeypatch, tmp_path, capsys):
    """``--budget-s 20``, the smoke stage spends 14 s: the replay's share, all 6 s left,
    is above the CPU's 5 s but under its own 8 s; it was started and cut."""
    trace = tmp_path / "trace.csv"
    write_trace(trace)
    ran = _fake(monkeypatch, False, 14.0)
    assert gpu_check.main(["--output", str(tmp_path / "out"), "--budget-s", "20",
                           "--stages", "1,5", "--trace", str(trace)]) == 1
    assert ran == [("smoke", 20.0)]
    printed = capsys.readouterr()
    why = ("not run for lack of time: its share would be 6.0 s (of the 6.0 s left of the "
           "20 s budget), less than the 8 s this stage is given at least")
    assert f"gpu_check: [azure-conv] {why}\n" in printed.out
    assert printed.err == f"gpu_check: FAILED azure-conv: {why}\n"


def test_on_the_cpu_8_s_start_it(monkeypatch, tmp_path):
    trace = tmp_path / "trace.csv"
    write_trace(trace)
    ran = _fake(monkeypatch, False, 12.0)
    assert gpu_check.main(["--output", str(tmp_path / "out"), "--budget-s", "20",
                           "--stages", "1,5", "--trace", str(trace)]) == 0
    assert ran == [("smoke", 20.0), ("azure-conv", 8.0)]


def test_on_cuda_a_replay_share_of_30_s_goes_to_the_async_stage(monkeypatch, tmp_path,
                                                                 capsys):
    """CUDA, ``--budget-s 130``, the smoke stage spends 100 s: of the 30 s left the
    replay's share (weight 48 against the async stage's 20) would be 21.2 s, above
    CUDA's 10 s but under its own 33 s: not run, and the async stage gets all 30 s."""
    trace = tmp_path / "trace.csv"
    write_trace(trace)
    ran = _fake(monkeypatch, True, 100.0)
    assert gpu_check.main(["--output", str(tmp_path / "out"), "--budget-s", "130",
                           "--stages", "1,5,6", "--trace", str(trace)]) == 1
    assert ran == [("smoke", 90.0), ("async", 30.0)]
    assert capsys.readouterr().err == (
        "gpu_check: FAILED azure-conv: not run for lack of time: its share would be 21.2 s "
        "(of the 30.0 s left of the 130 s budget), less than the 33 s this stage is given "
        "at least\n")
