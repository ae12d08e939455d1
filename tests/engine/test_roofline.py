"""The torch model's roofline (ipc_bench.engine.roofline): RooflineStep's element size
against a hand calculation, the device figures measured with torch on CPU, the torch
model's per-step roofline column, and the --roofline setting."""

from __future__ import annotations

import json
import math

import msgspec
import numpy as np
import pytest
import torch

from ipc_bench.cli import main as cli_main
from ipc_bench.engine import roofline
from ipc_bench.engine.config import TORCH_PRESETS, ConfigError, ModelConfig, SchedulerConfig
from ipc_bench.engine.model_runner import ModelRunner
from ipc_bench.engine.models import model_info
from ipc_bench.engine.roofline import (MeasuredFigures, RooflineStep, StepRoofline,
                                       measure_device_figures, roofline_enabled)
from ipc_bench.engine.scheduler import Scheduler
from ipc_bench.engine.workloads import SteadyDecodeWorkload

#: Small sizes so that a model start measures in a few hundredths of a second.
SMALL = (2**20, 64, 0.01)


def _figures(bandwidth: float, flops: float) -> MeasuredFigures:
    return MeasuredFigures(name="test", device="cpu", dtype="float32", element_bytes=4,
                           memory_bandwidth_bytes_per_s=bandwidth, flops_per_s=flops,
                           copy_bytes=1, matmul_n=1, num_threads=1, provenance={})


# The tiny preset (2 layers, hidden 64, 4 query and 2 KV heads of 16, MLP 128) with a
# 1,000-id LM head, one step of 2 decoding requests with 10 and 30 tokens in their
# caches (T = R = 2, context 40, attention pairs 40), on 10 GB/s and 15 GFLOP/s.
# Matmuls (in, out): QKV (64, 128), O (64, 64), gate + up (64, 256), down (128, 64).
#
# FLOPs per layer: QKV 2 x 2 x 64 x 128 = 32,768; O 16,384; gate + up 65,536; down
# 32,768; attention 4 x 64 x 40 = 10,240: 157,696. LM head 2 x 2 x 64 x 1,000 = 256,000.
# Bytes per layer with 2-byte elements: QKV 2 (8,192 + 128 + 256) = 17,152; O 8,704;
# gate + up 34,048; down 17,152; attention 2 x 2 x 32 x 40 = 5,120: 82,176. LM head
# 2 (64,000 + 128 + 2,000) = 132,256.
#
# 2 bytes: every op has about 1.9 FLOPs per byte, above the 1.5 of these rates, so
# every op is compute-bound: (2 x 157,696 + 256,000) FLOP / 15 GFLOP/s = 38,092.8 ns.
# 4 bytes: twice the bytes, about 0.95 FLOPs per byte: every op is memory-bound:
# 2 x (2 x 82,176 + 132,256) B = 593,216 B / 10 GB/s = 59,321.6 ns.
@pytest.mark.parametrize("element_bytes, step_ns", [(2, 38_092.8), (4, 59_321.6)])
def test_roofline_step_counts_the_element_size(element_bytes, step_ns):
    step = RooflineStep(TORCH_PRESETS["tiny"], 1000, _figures(1e10, 1.5e10), element_bytes)
    got = step.ns(num_tokens=2, num_reqs=2, context_tokens=40, attention_pairs=40)
    assert got == pytest.approx(step_ns, abs=1e-6)
    assert step.for_step(np.array([0, 1, 2]), np.array([10, 30])) == round(step_ns)
    assert step.kv_bytes_per_token == 2 * 32 * element_bytes


def test_roofline_step_defaults_to_bf16_and_refuses_odd_sizes():
    figures = _figures(1e10, 1.5e10)
    default = RooflineStep(TORCH_PRESETS["tiny"], 1000, figures)
    assert default.element_bytes == 2
    assert default.ns(2, 2, 40, 40) == pytest.approx(38_092.8, abs=1e-6)
    with pytest.raises(ConfigError, match="^element_bytes must be 1, 2, 4 or 8, got 3$"):
        RooflineStep(TORCH_PRESETS["tiny"], 1000, figures, 3)


def test_measured_figures_on_cpu_are_positive_and_say_how_they_were_measured():
    figures = measure_device_figures(torch, "cpu", torch.float32, copy_bytes=2**20,
                                     matmul_n=64, min_run_time_s=0.01)
    assert (figures.device, figures.dtype, figures.element_bytes) == ("cpu", "float32", 4)
    assert (figures.copy_bytes, figures.matmul_n) == (2**20, 64)
    assert figures.num_threads == torch.get_num_threads()
    assert figures.name == f"cpu ({torch.get_num_threads()} torch thread" + (
        "" if torch.get_num_threads() == 1 else "s") + ")"
    for rate in (figures.memory_bandwidth_bytes_per_s, figures.flops_per_s):
        assert math.isfinite(rate) and rate > 0
    assert (figures.efficiency, figures.fixed_step_ns, figures.calibrated) == (1.0, 0, False)
    bw, fl = figures.provenance["memory_bandwidth_bytes_per_s"], figures.provenance["flops_per_s"]
    assert bw.startswith("measured in this process: median of torch.utils.benchmark.Timer")
    assert "dst.copy_(src) of a 1 MiB float32 buffer" in bw
    assert "counted as 2 x 1,048,576 bytes (read + write)" in bw
    assert "torch.matmul of two 64 x 64 float32 matrices" in fl
    # bf16 on the CPU: 2-byte elements, the buffer's size kept
    half = measure_device_figures(torch, "cpu", torch.bfloat16, copy_bytes=2**20,
                                  matmul_n=32, min_run_time_s=0.01)
    assert (half.dtype, half.element_bytes, half.copy_bytes) == ("bfloat16", 2, 2**20)
    with pytest.raises(ConfigError, match="^copy_bytes \\(2\\) must hold one torch.float32 "):
        measure_device_figures(torch, "cpu", torch.float32, copy_bytes=2, matmul_n=8)


def test_roofline_is_on_by_default_on_cuda_only():
    assert [roofline_enabled(s, d) for s in ("auto", "on", "off") for d in ("cpu", "cuda")] == [
        False, True, True, True, False, False]


def test_step_roofline_records_counts_and_computes_at_the_end():
    keep = StepRoofline(TORCH_PRESETS["tiny"], 1000, _figures(1e10, 1.5e10))
    keep.record(np.array([0, 1, 2]), np.array([10, 30]))
    keep.record(np.array([0]), np.array([], dtype=np.int64))  # no request: 0
    assert keep.columns() == {"roofline_ns": [59_322, 0]}  # float32: memory-bound
    assert keep.info()["roofline_figures"]["memory_bandwidth_bytes_per_s"] == 1e10


@pytest.mark.parametrize("kwargs, message", [
    (dict(name="null", roofline="on"), "--roofline on applies to the torch model only, not null"),
    (dict(name="emulated", roofline="off"),
     "--roofline off applies to the torch model only, not emulated"),
    (dict(name="torch", roofline="yes"),
     "unknown roofline setting 'yes' (--roofline); choose from auto, on, off"),
])
def test_roofline_setting_errors(kwargs, message):
    with pytest.raises(ConfigError) as exc:
        ModelConfig(**kwargs).validate()
    assert str(exc.value) == message
    ModelConfig(name="fixed-step").validate()  # auto: any model


def test_cli_refuses_roofline_for_the_null_model(capsys, tmp_path):
    assert cli_main(["--scenario", "decode-steady", "--roofline",
                     "--output", str(tmp_path / "run")]) == 2
    captured = capsys.readouterr()
    assert captured.err == ("bench.py: error: model null does not take --roofline (the torch "
                            "model's roofline)\n")
    assert captured.out == ""
    assert not (tmp_path / "run").exists()


def _run_torch(roofline_setting: str, steps: int):
    """The tiny torch model on CPU over ``steps`` steps of 3 running requests with
    chunked prefill; returns the model and each step's (query_start_loc, seq_lens)."""
    sched_cfg = SchedulerConfig(max_num_seqs=3, max_num_batched_tokens=48, max_model_len=256,
                                block_size=16, num_blocks=64)
    runner = ModelRunner(sched_cfg, ModelConfig(name="torch", preset="tiny", device="cpu",
                                                roofline=roofline_setting), "cached")
    sched = Scheduler(sched_cfg, "cached")
    workload = SteadyDecodeWorkload(3, seed=7, vocab_size=128_256, prompt_len_range=(40, 90),
                                    output_len_range=(4, 24))
    seen = []
    execute = runner.model.execute

    def spy(batch, inputs):
        seen.append((inputs.query_start_loc.copy(), inputs.seq_lens.copy()))
        return execute(batch, inputs)

    runner.model.execute = spy
    while sched.step < steps:
        for r in workload.arrivals(sched.step):
            sched.add_request(r.req_id, r.index, r.prompt_token_ids, r.max_tokens)
        plan = sched.schedule()
        finished = sched.update_from_output(
            plan, runner.execute_model(sched.build_scheduler_output(plan)))
        if finished:
            workload.on_finished(len(finished), plan.step)
    return runner.model, seen


def test_torch_model_reports_each_steps_roofline(monkeypatch):
    monkeypatch.setitem(roofline.MEASURE_DEFAULTS, "cpu", SMALL)
    model, seen = _run_torch("on", 12)
    figures = model.step_roofline.figures
    assert (figures.dtype, figures.element_bytes, figures.copy_bytes, figures.matmul_n) == (
        "float32", 4, 2**20, 64)
    # an independent RooflineStep on the same figures, float32 (4 bytes)
    want = RooflineStep(TORCH_PRESETS["tiny"], 128_256, figures, 4)
    columns = model.step_columns()
    assert list(columns) == ["roofline_ns"]  # CPU: no CUDA event columns
    assert len(columns["roofline_ns"]) == len(seen) == 12
    assert columns["roofline_ns"] == [want.for_step(q, s) for q, s in seen]
    assert min(columns["roofline_ns"]) > 0
    # prefill chunks of 48 tokens next to decodes were among the steps
    assert max(int(q[-1]) for q, _ in seen) == 48
    assert model_info(model) == {"roofline_figures": msgspec.to_builtins(figures)}


def test_torch_model_on_cpu_keeps_no_roofline_unless_asked():
    model, seen = _run_torch("auto", 3)
    assert model.step_roofline is None
    assert model.step_columns() == {}
    assert model_info(model) == {}


def test_a_cpu_run_with_the_roofline_reports_the_ratio(tmp_path, capsys):
    """Two processes and the single-process case: the runner's measured figures reach
    summary.json through the handshake's Ready, and the printed table shows the ratio."""
    out = tmp_path / "run"
    assert cli_main(["--scenario", "decode-steady", "--model", "torch", "--model-preset",
                     "tiny", "--num-running", "2", "--steps", "8", "--warmup-steps", "2",
                     "--policies", "cached", "--codecs", "msgpack", "--no-floor", "--quiet",
                     "--roofline", "--output", str(out)]) == 0
    text = capsys.readouterr().out
    assert "x roofline: median forward / roofline" in text
    assert "roofline figures measured in the runner on cpu (1 torch thread), float32 " \
           "(2 cases): copy " in text
    cases = json.loads((out / "summary.json").read_text())["cases"]
    assert [c["transport"] for c in cases] == ["ipc", "inproc"]
    for c in cases:
        figures = c["roofline_figures"]
        assert (figures["dtype"], figures["element_bytes"], figures["copy_bytes"],
                figures["matmul_n"]) == ("float32", 4, 64 * 2**20, 1024)
        assert figures["provenance"]["flops_per_s"].startswith("measured in this process")
        assert c["compute_to_roofline_basis"] == "runner_forward_ns"
        assert c["compute_to_roofline_ratio"] > 0 and c["roofline_ns_per_step"] > 0
        assert "gpu_busy_ns_per_step" not in c and "host_ns_per_decode_step" not in c
    config = json.loads((out / "summary.json").read_text())["metadata"]["cases"][0]
    assert config["model"]["roofline"] == "on"
