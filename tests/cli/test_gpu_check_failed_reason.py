"""``scripts/gpu_check.py``'s ``FAILED`` lines carry the reason a stage that failed by
itself gave (its first ``bench.py: error:`` line, else the exception its output ended
in), where they said only ``failed with exit 1`` and the step that failed was named
only in the indented tail above."""

from __future__ import annotations

import pytest

from script_module import load_script

gpu_check = load_script("gpu_check")

ORACLE = ("bench.py: error: num_running=16/cached/msgpack#0: input oracle: step 4: request "
          "cmpl-0-0: the runner fed token id 86766 at position 185, the scheduler's "
          "all_token_ids hold 86767; partial results: /tmp/gc/1-smoke")


@pytest.mark.parametrize("output, reason", [
    (f"{ORACLE}\n1 warning recorded in /tmp/gc/1-smoke/summary.json (not shown: --quiet)\n",
     "num_running=16/cached/msgpack#0: input oracle: step 4: request cmpl-0-0: the runner "
     "fed token id 86766 at position 185, the scheduler's all_token_ids hold 86767"),
    ("bench.py: error: token streams differ in decode-steady [num_running=64]: a\n"
     "bench.py: error: token streams differ in decode-steady [num_running=256]: b\n",
     "token streams differ in decode-steady [num_running=64]: a (1 more error line in its "
     "output)"),
    ("Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n",
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"),
    ("some line\n", "")])
def test_the_reason_is_the_first_error_line_else_the_exception(output, reason):
    assert gpu_check.error_reason(output) == reason


def test_a_failed_stage_s_failed_line_names_its_reason(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(gpu_check, "run_child", lambda name, cmd, t, log: (1, ORACLE + "\n", ""))
    monkeypatch.setattr(gpu_check, "_preflight", lambda device: (False, 0))
    assert gpu_check.main(["--output", str(tmp_path), "--stages", "1"]) == 1
    assert capsys.readouterr().err == (
        "gpu_check: FAILED smoke: failed with exit 1: num_running=16/cached/msgpack#0: "
        "input oracle: step 4: request cmpl-0-0: the runner fed token id 86766 at position "
        "185, the scheduler's all_token_ids hold 86767\n")


def test_a_cut_or_killed_stage_keeps_its_one_sentence(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(gpu_check, "run_child", lambda name, cmd, t, log: (
        -9, "bench.py: error: never mind\n", ""))
    monkeypatch.setattr(gpu_check, "_preflight", lambda device: (False, 0))
    assert gpu_check.main(["--output", str(tmp_path), "--stages", "1"]) == 1
    assert capsys.readouterr().err == "gpu_check: FAILED smoke: killed by SIGKILL\n"


def test_a_failed_stage_0_names_its_reason(monkeypatch, tmp_path):
    monkeypatch.setattr(gpu_check, "run_child", lambda name, cmd, t, log: (
        1, "decode_step_check.py: error: --preset llama-3.1-8b does not fit: ...\n", ""))
    attention, failed = gpu_check.run_decode_step(True, tmp_path, 60)
    assert failed == ["decode-step: failed with exit 1: --preset llama-3.1-8b does not fit: "
                      "...; it wrote no 0-decode-step.json"]
