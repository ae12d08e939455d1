"""Case figures from the model's own per-step columns (analysis.summary): CUDA event
times and emulated step times, on synthetic records; absent columns give absent keys."""

from __future__ import annotations

import pytest

from ipc_bench.analysis.summary import summarize_case
from ipc_bench.engine.config import ModelConfig, SchedulerConfig
from ipc_bench.harness.spec import RUNNER_COLUMNS, SCHED_COLUMNS, CaseResult, CaseSpec


def _result(model: ModelConfig, step_ns: list[int], warm: int = 1, **columns) -> CaseResult:
    spec = CaseSpec(scenario="s", labels={"num_running": 2}, policy="send", codec="msgpack",
                    scheduler=SchedulerConfig(), model=model, make_workload=lambda: None)
    result = CaseResult(spec=spec, wall_s=0.5)
    for seq, ns in enumerate(step_ns):
        row = dict.fromkeys(SCHED_COLUMNS, 0)
        row.update(seq=seq, step=seq, warmup=int(seq < warm), counted=int(seq >= warm),
                   num_reqs=2, num_output_tokens=2, step_ns=ns, s2r_payload_bytes=10,
                   r2s_payload_bytes=10)
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
