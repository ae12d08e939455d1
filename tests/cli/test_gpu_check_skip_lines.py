"""The lines of ``scripts/gpu_check.py`` for a stage not run for lack of time: a share
a few ms under the minimum (start-up took them) is printed cut down to two decimals
(``4.99 s``), where one decimal printed ``its share would be 5.0 s ..., less than the 5
s a stage is given at least``; a smoke stage not run stops the check as a failed one
does (one line, ``the other stages are not run``), where each later stage printed a
``lack of time`` line and a ``FAILED`` line of its own share. A fake clock: no stage
runs."""

from __future__ import annotations

from script_module import load_script

gpu_check = load_script("gpu_check")


def _fake(monkeypatch, startup_s: float):
    """The CPU; the stages recorded, not run; the device probe spends ``startup_s``
    seconds of a fake clock (the start-up before the first stage)."""
    now, ran = [0.0], []

    def fake_preflight(device):
        now[0] += startup_s
        return False, 0

    def fake_decode_step(cuda, out, timeout_s):
        ran.append("decode-step")
        return "gather", []

    def fake_stage(stage, base, out, timeout_s):
        ran.append(stage.name)
        return 0, "passed"

    monkeypatch.setattr(gpu_check.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(gpu_check, "_preflight", fake_preflight)
    monkeypatch.setattr(gpu_check, "run_decode_step", fake_decode_step)
    monkeypatch.setattr(gpu_check, "run_stage", fake_stage)
    return ran


def _skip_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith("gpu_check: [")
            or "other stages" in ln]


def test_a_share_just_under_the_minimum_does_not_print_as_the_minimum(
        monkeypatch, tmp_path, capsys):
    """The trial's ``--budget-s 5 --stages 1`` on the CPU: 3 ms of start-up leave
    4.997 s, the smoke stage's share, under the CPU's 5 s."""
    ran = _fake(monkeypatch, 0.003)
    assert gpu_check.main(["--output", str(tmp_path / "out"), "--budget-s", "5",
                           "--stages", "1"]) == 1
    assert ran == []
    printed = capsys.readouterr()
    why = ("not run for lack of time: its share would be 4.99 s (of the 4.99 s left of the "
           "5 s budget), less than the 5 s a stage is given at least")
    assert _skip_lines(printed.out) == [
        f"gpu_check: [smoke] {why}",
        "gpu_check: the smoke stage was not run: the other stages are not run"]
    assert printed.err == f"gpu_check: FAILED smoke: {why}\n"


def test_a_smoke_stage_not_run_stops_the_later_ones_as_a_failed_one_does(
        monkeypatch, tmp_path, capsys):
    """The trial's ``--budget-s 4.5 --stages 0,1,2``: the smoke stage's line keeps its
    one decimal; stage 0 and stage 2 are not assessed, each with a share of its own,
    but stopped with the smoke stage's one line, and only the smoke stage fails."""
    ran = _fake(monkeypatch, 0.0)
    assert gpu_check.main(["--output", str(tmp_path / "out"), "--budget-s", "4.5",
                           "--stages", "0,1,2"]) == 1
    assert ran == []
    printed = capsys.readouterr()
    why = ("not run for lack of time: its share would be 4.5 s (of the 4.5 s left of the "
           "4.5 s budget), less than the 5 s a stage is given at least")
    assert _skip_lines(printed.out) == [
        f"gpu_check: [smoke] {why}",
        "gpu_check: the smoke stage was not run: the other stages are not run"]
    assert printed.err == f"gpu_check: FAILED smoke: {why}\n"


def test_the_replay_after_a_skipped_smoke_stage_prints_no_share(
        monkeypatch, tmp_path, capsys):
    """The trial's ``--budget-s 3 --stages 1,5`` (with a trace): no ``[azure-conv] ...
    its share would be 3.0 s`` line, no ``FAILED azure-conv``."""
    trace = tmp_path / "trace.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(
        f"2023-11-16 18:15:{40 + i // 20:02d}.{(i % 20) * 5:02d}00000,40,8\n"
        for i in range(100)))
    ran = _fake(monkeypatch, 0.0)
    assert gpu_check.main(["--output", str(tmp_path / "out"), "--budget-s", "3",
                           "--stages", "1,5", "--trace", str(trace)]) == 1
    assert ran == []
    printed = capsys.readouterr()
    assert "azure-conv" not in printed.out + printed.err
    assert printed.err == (
        "gpu_check: FAILED smoke: not run for lack of time: its share would be 3.0 s (of "
        "the 3.0 s left of the 3 s budget), less than the 5 s a stage is given at least\n")


def test_share_texts_keep_one_decimal_unless_it_reads_as_the_minimum():
    assert gpu_check.share_texts(30 * 48 / 68, 30.0, 33.0) == ("21.2", "30.0")
    assert gpu_check.share_texts(4.94, 4.94, 5.0) == ("4.9", "4.9")
    assert gpu_check.share_texts(4.96, 4.96, 5.0) == ("4.96", "4.96")
    assert gpu_check.share_texts(4.997, 12.3456, 5.0) == ("4.99", "12.34")
    assert gpu_check.share_texts(7.9999, 7.9999, 8.0) == ("7.99", "7.99")
    assert gpu_check.share_texts(4.9999999, 4.9999999, 5.0) == ("4.99", "4.99")
