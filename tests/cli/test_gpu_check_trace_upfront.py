"""``scripts/gpu_check.py`` refuses a ``--trace`` that its Azure replay stage's
``bench.py`` would refuse, before any stage runs, in one line with ``bench.py``'s
reason (``trace_problem``), exit 2, nothing created; it ran every other stage first
(about 49 s on the CPU) and failed only at stage 5."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from script_module import ROOT, load_script, run_script

HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
ROW = "2023-11-16 18:15:46.6805900,{},4\n"
GARBAGE = bytes([0x8f, 0x31, 0xff, 0x00, 0xc3, 0x28, 0x9d, 0x0a, 0xfe, 0x41]) * 30


def _trace(path, rows: list[str]):
    path.write_text(HEADER + "".join(rows))
    return path


@pytest.fixture
def gpu_check(monkeypatch):
    """The script with its device probe reported as CPU and its stages recorded, not
    run: ``module.started`` lists the probe (``"probe"``) and each stage's name."""
    module = load_script("gpu_check")
    module.started = []

    def probe(device):
        module.started.append("probe")
        return module.probe_result

    def stage(stage, base, out, timeout_s):
        module.started.append(stage.name)
        module.stage_args[stage.name] = stage.args
        return 0, "passed"

    module.probe_result = (False, 0)
    module.stage_args = {}
    monkeypatch.setattr(module, "_preflight", probe)
    monkeypatch.setattr(module, "run_decode_step", lambda cuda, out, t: ("gather", []))
    monkeypatch.setattr(module, "run_stage", stage)
    return module


def _bench_reason(trace, requests: int) -> str:
    """What ``bench.py`` says refusing ``trace`` for the replay stage (after
    ``bench.py: error: ``)."""
    proc = subprocess.run([sys.executable, "bench.py", "--scenario", "azure-conv", "--model",
                           "torch", "--model-preset", "tiny", "--device", "cpu", "--trace",
                           str(trace), "--max-requests", str(requests), "--quiet",
                           "--output", str(trace.parent / "bench-run")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and not (trace.parent / "bench-run").exists()
    assert proc.stderr.startswith("bench.py: error: ")
    return proc.stderr.removeprefix("bench.py: error: ").rstrip("\n")


def test_random_bytes_are_refused_before_the_device_probe(gpu_check, tmp_path, capsys):
    trace = tmp_path / "garbage.csv"
    trace.write_bytes(GARBAGE)
    out = tmp_path / "out"
    assert gpu_check.main(["--output", str(out), "--trace", str(trace)]) == 2
    reason = f"{trace} line 1: not UTF-8 text (byte 1 of the line)"
    assert capsys.readouterr() == ("", f"gpu_check.py: error: argument --trace: {reason}\n")
    assert reason == _bench_reason(trace, 4)  # bench.py's own words
    assert gpu_check.started == [] and sorted(os.listdir(tmp_path)) == ["garbage.csv"]


def test_a_trace_without_requests_is_refused(gpu_check, tmp_path, capsys):
    trace = _trace(tmp_path / "empty.csv", [])
    assert gpu_check.main(["--output", str(tmp_path / "out"), "--trace", str(trace)]) == 2
    err = capsys.readouterr().err
    assert err == f"gpu_check.py: error: argument --trace: {_bench_reason(trace, 4)}\n"
    assert gpu_check.started == [] and not (tmp_path / "out").exists()


def test_the_rows_the_device_replays_decide(gpu_check, tmp_path, capsys):
    """Row 6 (the fifth request) bad: the CPU stage replays 4 requests and runs it; the
    CUDA stage replays 100 and is refused right after the device probe, before any
    stage, as its bench.py would refuse it."""
    trace = _trace(tmp_path / "conv.csv", [ROW.format(30)] * 4 + [ROW.format("abc")])
    assert gpu_check.main(["--output", str(tmp_path / "cpu"), "--trace", str(trace),
                           "--stages", "5"]) == 0
    assert gpu_check.started == ["probe", "azure-conv"]
    args = gpu_check.stage_args["azure-conv"]
    assert args[args.index("--max-requests") + 1] == "4"
    capsys.readouterr()

    gpu_check.started.clear()
    gpu_check.probe_result = (True, 0)
    out = tmp_path / "cuda"
    assert gpu_check.main(["--output", str(out), "--trace", str(trace)]) == 2
    reason = (f"{trace} line 6: ContextTokens is not a positive integer (digits only): "
              "'abc'")
    assert capsys.readouterr() == ("", f"gpu_check.py: error: argument --trace: {reason}\n")
    assert reason == _bench_reason(trace, 100)
    assert gpu_check.started == ["probe"] and not out.exists()


def test_a_trace_no_stage_replays_is_not_read(gpu_check, tmp_path, capsys):
    trace = tmp_path / "garbage.csv"
    trace.write_bytes(GARBAGE)
    assert gpu_check.main(["--output", str(tmp_path / "out"), "--trace", str(trace),
                           "--stages", "1"]) == 0
    assert gpu_check.started == ["probe", "smoke"]


def test_a_bad_default_trace_is_refused_by_name(gpu_check, tmp_path, capsys, monkeypatch):
    trace = tmp_path / "AzureLLMInferenceTrace_conv.csv"
    trace.write_bytes(GARBAGE)
    monkeypatch.setattr(gpu_check, "TRACE_CANDIDATES", (tmp_path / "absent.csv", trace))
    assert gpu_check.main(["--output", str(tmp_path / "out")]) == 2
    assert capsys.readouterr() == ("", (
        f"gpu_check.py: error: the default --trace, {trace}, cannot be replayed: {trace} "
        "line 1: not UTF-8 text (byte 1 of the line); give --trace PATH, or leave stage "
        "5 out (--stages)\n"))
    assert gpu_check.started == [] and not (tmp_path / "out").exists()


def test_a_relative_trace_reaches_the_stage_as_an_absolute_path(gpu_check, tmp_path,
                                                                monkeypatch):
    """The stages' bench.py runs in the checkout: a path relative to the folder the
    check was started from would name another file there."""
    _trace(tmp_path / "conv.csv", [ROW.format(30)] * 4)
    monkeypatch.chdir(tmp_path)
    assert gpu_check.main(["--output", "out", "--trace", "conv.csv", "--stages", "5"]) == 0
    args = gpu_check.stage_args["azure-conv"]
    assert args[args.index("--trace") + 1] == str(tmp_path / "conv.csv")


def test_in_its_own_process_nothing_is_created(tmp_path):
    trace = tmp_path / "garbage.csv"
    trace.write_bytes(GARBAGE)
    proc = run_script("gpu_check", "--output", str(tmp_path / "gc"), "--trace", str(trace))
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", f"gpu_check.py: error: argument --trace: {trace} line 1: not UTF-8 text "
               "(byte 1 of the line)\n")
    assert sorted(os.listdir(tmp_path)) == ["garbage.csv"]
