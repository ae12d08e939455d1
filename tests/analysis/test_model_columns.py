"""Case figures from the model's own per-step columns (analysis.summary): CUDA event
times, emulated step times and the torch model's roofline, on synthetic records;
absent columns give absent keys. And the tables that print them (report.tables)."""

from __future__ import annotations

import pytest

from ipc_bench.analysis.summary import summarize_case
from ipc_bench.engine.config import ModelConfig, SchedulerConfig
from ipc_bench.harness.spec import RUNNER_COLUMNS, SCHED_COLUMNS, CaseResult, CaseSpec
from ipc_bench.report.tables import format_tables


def _result(model: ModelConfig, step_ns: list[int], warm: int = 1,
            scheduled: list[int] | None = None, **columns) -> CaseResult:
    """Steps of ``step_ns`` (the first ``warm`` in the warm-up), 2 requests each with
    ``scheduled[i]`` tokens (default 2: pure decode), runner columns 1 µs each but
    ``columns``."""
    spec = CaseSpec(scenario="s", labels={"num_running": 2}, policy="send", codec="msgpack",
                    scheduler=SchedulerConfig(), model=model, make_workload=lambda: None)
    result = CaseResult(spec=spec, wall_s=0.5)
    for seq, ns in enumerate(step_ns):
        row = dict.fromkeys(SCHED_COLUMNS, 0)
        row.update(seq=seq, step=seq, warmup=int(seq < warm), counted=int(seq >= warm),
                   num_reqs=2, num_output_tokens=2, step_ns=ns, s2r_payload_bytes=10,
                   r2s_payload_bytes=10,
                   num_scheduled_tokens=scheduled[seq] if scheduled else 2)
        result.sched_rows.append(tuple(row[k] for k in SCHED_COLUMNS))
    result.runner_columns = {k: [1000] * len(step_ns) for k in RUNNER_COLUMNS}
    result.runner_columns["runner_t0_ns"] = [sum(step_ns[:i]) for i in range(len(step_ns))]
    result.runner_columns.update(columns)
    return result


def test_cuda_event_columns_give_busy_host_and_idle_times():
    torch = ModelConfig(name="torch", preset="tiny")
    s = summarize_case(_result(torch, [9_000_000, 5_000_000, 7_000_000],
                               gpu_busy_ns=[8_000_000, 3_000_000, 4_000_000],
                               gpu_idle_ns=[-1, 2_500_000, 1_500_000]))
    # counted steps 1 and 2: busy 3 and 4 ms of 5 and 7 ms steps
    assert s["gpu_busy_ns_per_step"] == 3_500_000
    assert s["host_ns_per_step"] == 2_500_000
    assert s["gpu_idle_ns_per_step"] == 2_000_000
    assert s["gpu_busy_share"] == pytest.approx(7 / 12)
    assert s["output_tokens_per_s"] == pytest.approx(4 / 0.012)  # steady state
    assert s["run_output_tokens_per_s"] == pytest.approx(6 / 0.5)  # every step, wall time
    assert "emulated" not in s and "emulated_step_ns_per_step" not in s


def test_the_torch_drafters_column_gives_its_mean_over_counted_steps():
    s = summarize_case(_result(ModelConfig(name="torch", preset="tiny"),
                               [9_000_000, 5_000_000, 7_000_000],
                               draft_ns=[0, 3_000_000, 2_000_000]))
    assert s["draft_ns_per_step"] == 2_500_000  # steps 1 and 2; step 0 is warm-up
    assert "draft_ns_per_step" not in summarize_case(
        _result(ModelConfig(name="torch", preset="tiny"), [5_000_000] * 3))


def test_without_model_columns_the_figures_are_absent_not_zero():
    s = summarize_case(_result(ModelConfig(name="torch", preset="tiny"), [5_000_000] * 3))
    for key in ("gpu_busy_ns_per_step", "gpu_idle_ns_per_step", "host_ns_per_step",
                "gpu_busy_share", "run_output_tokens_per_s", "emulated_step_ns_per_step"):
        assert key not in s
    # a column of the wrong length (a runner that missed steps) is not used either
    s = summarize_case(_result(ModelConfig(name="torch", preset="tiny"), [5_000_000] * 3,
                               gpu_busy_ns=[1, 2]))
    assert "gpu_busy_ns_per_step" not in s


def test_emulated_cases_are_marked_with_their_step_times():
    emulated = ModelConfig(name="emulated", preset="llama-3.2-1b")
    s = summarize_case(_result(emulated, [4_000_000] * 3, emulated_step_ns=[9, 600, 800],
                               runner_forward_ns=[9, 650, 900]))
    assert (s["emulated"], s["emulated_gpu"], s["gpu_figures"]) == (
        True, "NVIDIA H200", "uncalibrated")
    assert s["emulated_step_ns_per_step"] == 700
    assert s["emulated_forward_excess_ns_per_step"] == 75


FIGURES = {"name": "cpu (1 torch thread)", "device": "cpu", "dtype": "float32",
           "element_bytes": 4, "memory_bandwidth_bytes_per_s": 12.5e9, "flops_per_s": 1.5e11,
           "copy_bytes": 64 * 2**20, "matmul_n": 1024, "num_threads": 1, "provenance": {},
           "efficiency": 1.0, "fixed_step_ns": 0, "calibrated": False}
TORCH = ModelConfig(name="torch", preset="tiny", roofline="on")


def test_cpu_roofline_ratio_is_the_median_forward_over_roofline():
    # counted steps 1-4: forward / roofline = 3.0, 2.0, 5.0, 4.0 -> median 3.5
    result = _result(TORCH, [5_000_000] * 5,
                     roofline_ns=[1_000, 1_000_000, 2_000_000, 1_000_000, 500_000],
                     runner_forward_ns=[9_000, 3_000_000, 4_000_000, 5_000_000, 2_000_000])
    result.model_info = {"roofline_figures": FIGURES}
    s = summarize_case(result)
    assert s["roofline_ns_per_step"] == 1_125_000
    assert s["compute_to_roofline_ratio"] == 3.5
    assert s["compute_to_roofline_basis"] == "runner_forward_ns"
    assert s["roofline_figures"] == FIGURES
    assert "host_ns_per_decode_step" not in s  # no CUDA events: no host time


def test_cuda_roofline_ratio_uses_gpu_busy_and_host_time_per_decode_step():
    # counted steps 1-4; step 2 is a prefill chunk (40 tokens for 2 requests), step 4
    # had no request (roofline 0: left out of the ratio)
    result = _result(TORCH, [9_000_000, 5_000_000, 7_000_000, 6_000_000, 1_000_000],
                     scheduled=[2, 2, 40, 2, 2],
                     roofline_ns=[1_000, 2_000_000, 1_000_000, 1_000_000, 0],
                     gpu_busy_ns=[8_000_000, 3_000_000, 4_000_000, 5_000_000, 0],
                     gpu_idle_ns=[-1, 1, 1, 1, -1],
                     runner_forward_ns=[1] * 5)
    s = summarize_case(result)
    # busy / roofline: 1.5, 4.0, 5.0 -> median 4.0
    assert s["compute_to_roofline_ratio"] == 4.0
    assert s["compute_to_roofline_basis"] == "gpu_busy_ns"
    assert s["roofline_ns_per_step"] == 1_000_000
    # host (step - busy) over the decode steps 1, 3, 4: 2, 1 and 1 ms
    assert s["host_ns_per_decode_step"] == pytest.approx(4_000_000 / 3)
    assert s["host_ns_per_step"] == pytest.approx(7_000_000 / 4)
    assert "roofline_figures" not in s  # none came with the Ready


def test_without_a_roofline_column_its_figures_are_absent_not_zero():
    s = summarize_case(_result(TORCH, [5_000_000] * 3, runner_forward_ns=[1, 2, 3]))
    for key in ("roofline_ns_per_step", "compute_to_roofline_ratio",
                "compute_to_roofline_basis", "roofline_figures"):
        assert key not in s
    # every counted step without a request: a mean roofline of 0, no ratio
    s = summarize_case(_result(TORCH, [5_000_000] * 3, roofline_ns=[0, 0, 0]))
    assert s["roofline_ns_per_step"] == 0 and "compute_to_roofline_ratio" not in s


def test_the_printed_tables_show_the_roofline_ratio():
    cpu = _result(TORCH, [5_000_000] * 3, roofline_ns=[1, 1_000_000, 2_000_000],
                  runner_forward_ns=[1, 3_000_000, 5_000_000])
    cpu.model_info = {"roofline_figures": FIGURES}
    cuda = _result(TORCH, [5_000_000] * 3, roofline_ns=[1, 1_000_000, 1_000_000],
                   gpu_busy_ns=[1, 2_000_000, 2_000_000], gpu_idle_ns=[-1, 1, 1])
    cuda.spec.codec = "pickle"
    text = format_tables([summarize_case(cpu), summarize_case(cuda)])
    lines = text.splitlines()
    gpu_header = next(i for i, ln in enumerate(lines) if "GPU busy ms" in ln)
    assert lines[gpu_header].split() == [
        "policy", "codec", "transport", "GPU", "busy", "ms", "host", "ms", "host",
        "ms/decode", "GPU", "idle", "ms", "busy", "share", "roofline", "ms", "x", "roofline",
        "steady", "tok/s", "run", "tok/s"]
    # busy 2 ms of 5 ms steps, every counted step a decode; roofline 1 ms; idle 1 ns
    assert lines[gpu_header + 2].split() == [
        "send", "pickle,", "torch", "model", "ipc", "2.00", "3.00", "3.00", "0.00", "0.40",
        "1.00", "2.00", "400.0", "12.0"]
    cpu_header = next(i for i, ln in enumerate(lines) if "forward ms" in ln)
    assert lines[cpu_header].split() == ["policy", "codec", "transport", "forward", "ms",
                                         "roofline", "ms", "x", "roofline"]
    # forward 4 ms, roofline 1.5 ms, median of 3.0 and 2.5
    assert lines[cpu_header + 2].split() == ["send", "msgpack,", "torch", "model", "ipc",
                                             "4.00", "1.50", "2.75"]
    assert ("  roofline figures measured in the runner on cpu (1 torch thread), float32 (1 "
            "cases): copy 12.5 GB/s (read + write, 64 MiB buffer), matmul 0.150 TFLOP/s "
            "(1024 x 1024); efficiency 1, no fixed time (uncalibrated)") in lines
