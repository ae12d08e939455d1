"""The host's launch time of a decode step: ``StepEventTimer.ended_at_ns`` (the clock as
the step's last launch returned), ``decode_step_check.py``'s ``host_launch_ns`` made
from it, and the 1 ms host goal judged on it rather than on step minus GPU busy (which
counts an eager forward's dispatch between kernels as busy)."""

from __future__ import annotations

import itertools

from ipc_bench.engine import models
from ipc_bench.engine.cuda_step import StepEventTimer
from script_module import load_script

dsc = load_script("decode_step_check")


class _Event:
    """A timing event on synthetic time: ``record`` notes nothing, every span is 2 ms."""

    def record(self) -> None:
        pass

    def elapsed_time(self, other) -> float:
        return 2.0


def test_the_timer_reads_its_clock_as_the_last_launch_returns():
    ticks = itertools.count(1000, 7)
    timer = StepEventTimer(_Event, clock=lambda: next(ticks))
    assert timer.ended_at_ns is None
    timer.begin()
    assert timer.ended_at_ns is None  # the first event is not the step's last launch
    timer.end()
    assert timer.ended_at_ns == 1000
    timer.collect()
    timer.begin()
    timer.end()
    assert timer.ended_at_ns == 1007


def test_the_host_goal_is_judged_on_the_launch_time_not_step_minus_busy():
    # a launch-bound eager step: step minus busy is 0.05 ms, the launches took 1.5 ms
    rows = [dict(config="gather", num_running=16, x_roofline=2.5, host_ns=5e4,
                 host_launch_ns=1.5e6, gpu_busy_ns=9e6),
            dict(config="gather", num_running=256, x_roofline=1.9, host_ns=5e4,
                 host_launch_ns=0.4e6, gpu_busy_ns=9e6)]
    assert dsc.goal_lines(rows, "llama-3.2-1b", 300, 2000, "NVIDIA H200")[1] == (
        "  gather: 16 running: 2.50x roofline (met), host launch 1.500 ms (NOT met); "
        "256 running: 1.90x roofline (met), host launch 0.400 ms (met)")


def test_run_config_reports_the_launch_time_of_each_counted_step(monkeypatch):
    """On CPU with a step timer on synthetic events (the model has none on CPU): the
    row's ``host_launch_ns`` is the median of (the timer's clock at the last launch
    minus the step's start), here read on one counting clock, so each step's is the
    ticks between the start and the last launch; the table shows it."""
    clock = itertools.count(0, 1000)
    tick = lambda: next(clock)  # noqa: E731
    monkeypatch.setattr(dsc.time, "perf_counter_ns", tick)

    class TimedModel(models.TorchModel):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.timer = StepEventTimer(_Event, clock=tick)

    monkeypatch.setattr(models, "TorchModel", TimedModel)
    sched = dsc.SchedulerConfig(max_num_seqs=2, max_model_len=64, block_size=16,
                                num_blocks=8)
    import torch
    from ipc_bench.engine.roofline import measure_device_figures

    figures = measure_device_figures(torch, "cpu", torch.float32)
    rows = dsc.run_config(torch, "tiny", "cpu", "gather", False, [2], sched, steps=3,
                          warmup=1, lo=5, hi=10, seed=0, figures=figures)
    # per step: the start (t0), the timer's end (t0 + 1000), then the step's end
    assert rows[0]["host_launch_ns"] == 1000.0
    assert rows[0]["step_ns"] == 2000.0
    assert rows[0]["gpu_busy_ns"] == 2e6 and rows[0]["host_ns"] == 2000.0 - 2e6
    header, line = dsc.format_rows(rows).splitlines()[:2]
    assert header.split()[:9] == ["config", "running", "bucket", "step", "ms", "GPU", "ms",
                                  "host", "ms"] and "  host launch ms  " in header
    assert line.split()[:7] == ["gather", "2", "2", "0.002", "2.000", "-1.998", "0.001"]
