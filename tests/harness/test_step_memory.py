"""The check before the first case of what a run's per-step records will need
(``memory.check_step_memory``), with ``MemAvailable`` faked through its seam
(``cli.run.available_memory_bytes``), and the packed rows (``spec.StepRows``) that
replaced a tuple per step."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ipc_bench import cli
from ipc_bench.cli import execute
from ipc_bench.cli import run as cli_run
from ipc_bench.engine.config import ConfigError
from ipc_bench.harness import memory
from ipc_bench.harness.memory import (case_steps, check_step_memory, floor_chunk_bytes,
                                      size_text, step_bytes)
from ipc_bench.harness.spec import SCHED_COLUMNS, StepRows

RUN = ["--scenario", "decode-steady", "--codecs", "msgpack", "--no-single-process"]


def _main(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, err.splitlines(), out


@pytest.fixture
def no_run(monkeypatch):
    """Cases that pass every check are not run: ``run_cases`` answers 0 at once."""
    ran = []
    monkeypatch.setattr(execute, "run_cases", lambda args, cases, *a, **k: ran.append(
        len(cases)) or 0)
    return ran


def test_bytes_per_step_are_the_measured_constants():
    # the scheduler's and the runner's lines, at 4 and at 256 running requests
    assert (memory.STEP_BYTES_SCHEDULER, memory.STEP_BYTES_SCHEDULER_PER_RUNNING,
            memory.STEP_BYTES_RUNNER, memory.STEP_BYTES_RUNNER_PER_RUNNING) == (
        2_250, 238, 580, 127)


def test_a_run_that_cannot_fit_is_refused_with_the_steps_that_fit(monkeypatch, capsys,
                                                                   no_run):
    monkeypatch.setattr(cli_run, "available_memory_bytes", lambda: 10**10)
    code, lines, out = _main(RUN + ["--num-running", "4", "--steps", "1000000000"], capsys)
    # 4,290 bytes a step x 1,000,000,100 steps, and the floor's chunk: 4,096 steps x
    # (462 + 354) x 4 running = 13,369,344 bytes; advice in half of it:
    # (10**10 // 2 - 13,369,344) // 4,290 - 100 warm-up steps = 1,162,284, rounded down
    # to two significant digits (a margin below half)
    assert (code, lines, out, no_run) == (2, [
        "bench.py: error: the largest case, num_running=4/send/msgpack#0 (1,000,000,100 "
        "steps with warm-up), needs about 4.3 TB of memory for its per-step records "
        "(4,290 bytes a step, and 13 MB for its floor's chunk of 4,096 decoded steps), "
        "more than the 10.0 GB available (MemAvailable): --steps 1,100,000 or fewer fits "
        "in half of it (--scenario soak writes its steps to disk as it goes and runs as "
        "long as asked)"], "", [])


def test_the_largest_case_is_named_and_the_steps_fit_every_case(monkeypatch, capsys,
                                                                no_run):
    monkeypatch.setattr(cli_run, "available_memory_bytes", lambda: 10**10)
    code, lines, _ = _main(RUN + ["--num-running", "4,256", "--steps", "1000000"], capsys)
    # 256 running: 2,250 + 238 x 256 + 580 + 127 x 256 = 96,270 bytes a step, and the
    # floor's chunk, 4,096 x (462 + 354) x 256 = 855,638,016 bytes
    assert (code, lines) == (2, [
        "bench.py: error: the largest case, num_running=256/send/msgpack#0 (1,000,100 steps "
        "with warm-up), needs about 97.1 GB of memory for its per-step records (96,270 "
        "bytes a step, and 856 MB for its floor's chunk of 4,096 decoded steps), more than "
        "the 10.0 GB available (MemAvailable): --steps 42,000 or fewer fits in half of it "
        "(--scenario soak writes its steps to disk as it goes and runs as long as asked)"])


def test_a_run_over_half_the_memory_is_warned_and_runs(monkeypatch, capsys, no_run):
    monkeypatch.setattr(cli_run, "available_memory_bytes", lambda: 10**9)
    code, lines, _ = _main(RUN + ["--num-running", "4", "--steps", "200000"], capsys)
    # 4,290 x 200,100 + 13,369,344 = 871,798,344 bytes: over half of 1 GB, under all of it
    assert (code, no_run) == (0, [2])
    assert lines == [
        "bench.py: warning: the largest case, num_running=4/send/msgpack#0 (200,100 steps "
        "with warm-up), needs about 872 MB of memory for its per-step records (4,290 bytes "
        "a step, and 13 MB for its floor's chunk of 4,096 decoded steps), 87 % of the 1.0 "
        "GB available (MemAvailable)"]


def test_a_run_under_half_the_memory_says_nothing(monkeypatch, capsys, no_run):
    monkeypatch.setattr(cli_run, "available_memory_bytes", lambda: 10**9)
    code, lines, _ = _main(RUN + ["--num-running", "4", "--steps", "50000"], capsys)
    assert (code, lines, no_run) == (0, [], [2])


def test_no_check_where_memavailable_cannot_be_read(monkeypatch, capsys, no_run):
    monkeypatch.setattr(cli_run, "available_memory_bytes", lambda: None)
    code, lines, _ = _main(RUN + ["--num-running", "4", "--steps", "1000000000"], capsys)
    assert (code, lines, no_run) == (0, [], [2])


def test_not_even_one_step_fits(monkeypatch, capsys, no_run):
    monkeypatch.setattr(cli_run, "available_memory_bytes", lambda: 400_000)
    code, lines, _ = _main(RUN + ["--num-running", "4", "--steps", "10"], capsys)
    # (400,000 // 2 - 32,640) // 4,290 = 39 steps, fewer than the 100 warm-up steps (the
    # floor's chunk: 10 counted steps x (462 + 354) x 4 running = 32,640 bytes); the
    # advice may count all 39, whose chunk, 127,296 bytes, leaves (200,000 - 127,296) //
    # 4,290 = 16
    assert (code, lines) == (2, [
        "bench.py: error: the largest case, num_running=4/send/msgpack#0 (110 steps with "
        "warm-up), needs about 0.5 MB of memory for its per-step records (4,290 bytes a "
        "step, and 33 kB for its floor's chunk of 10 decoded steps), more than the 0.4 MB "
        "available (MemAvailable): not even --steps 1 fits in half of it beside the 100 "
        "warm-up steps: --warmup-steps plus --steps at most 16 fits, or fewer running "
        "requests, or more memory (--scenario soak writes its steps to disk as it goes and "
        "runs as long as asked)"])


def _steady_cases(argv):
    from ipc_bench.cli.options import build_parser
    from ipc_bench.harness.scenario import discover

    args = build_parser().parse_args(RUN + argv)
    module = discover()[args.scenario]
    opts = cli_run._scenario_options(args)
    return cli_run._build_cases(args.scenario, module, opts)


def test_streamed_and_trace_cases_are_exempt():
    case = _steady_cases(["--num-running", "4", "--steps", "1000000000"])[0]
    assert case_steps(case) == 1_000_000_100
    streamed = dataclasses.replace(case, stream=True)  # soak: records leave memory
    replay = dataclasses.replace(case, counted_steps=None)  # runs until requests finish
    assert (case_steps(streamed), case_steps(replay)) == (None, None)
    assert check_step_memory([streamed, replay], 1) is None
    with pytest.raises(ConfigError):
        check_step_memory([streamed, case], 1)


def test_remote_runners_count_the_scheduler_alone():
    case = _steady_cases(["--num-running", "4", "--steps", "100"])[0]
    assert (step_bytes(case), step_bytes(case, remote_runners=True)) == (4_290, 3_202)
    assert step_bytes(dataclasses.replace(case, tp=4)) == 3_202 + 4 * 1_088


def test_size_text():
    assert [size_text(b) for b in (32_640, 99_999, 100_000, 819_500, 499_000_000, 1.5e9,
                                   3.16e9, 7.45e12)] == [
        "33 kB", "100 kB", "0.1 MB", "0.8 MB", "499 MB", "1.5 GB", "3.2 GB", "7.5 TB"]


def test_the_floors_chunk_is_its_counted_steps_up_to_4096():
    # (462 + 354) bytes a step per running request: scheduler and runner
    few = _steady_cases(["--num-running", "4", "--steps", "10"])[0]
    many = _steady_cases(["--num-running", "256", "--steps", "100000"])[0]
    assert floor_chunk_bytes(few) == 10 * 816 * 4 == 32_640
    assert floor_chunk_bytes(many) == 4_096 * 816 * 256 == 855_638_016
    assert floor_chunk_bytes(many, remote_runners=True) == 4_096 * 462 * 256
    assert floor_chunk_bytes(dataclasses.replace(many, tp=2)) == 4_096 * (462 + 2 * 354) * 256
    bare = _steady_cases(["--num-running", "256", "--steps", "100000", "--no-floor"])[0]
    assert floor_chunk_bytes(bare) == 0


ROWS = [tuple(range(i, i + len(SCHED_COLUMNS))) for i in (0, 100, 2**40)]


def test_step_rows_read_as_the_list_of_tuples():
    rows = StepRows()
    for row in ROWS:
        rows.record(row)
    assert (len(rows), bool(rows), bool(StepRows())) == (3, True, False)
    assert (rows[0], rows[-1], rows[1:], list(rows)) == (ROWS[0], ROWS[2], ROWS[1:], ROWS)
    assert rows == ROWS and StepRows() == [] and rows == StepRows(ROWS)
    a = np.asarray(rows, dtype=np.int64)
    assert a.shape == (3, len(SCHED_COLUMNS)) and a.tolist() == [list(r) for r in ROWS]
    rows.record(ROWS[0])  # no view of the buffer is left to block it
    del rows[:2]
    assert rows == [ROWS[2], ROWS[0]]
    with pytest.raises(IndexError, match="step row 2 of 2"):
        rows[2]
    with pytest.raises(ValueError, match="a step row has 26 values, got 3"):
        rows.append((1, 2, 3))


def test_a_case_without_a_floor_holds_the_no_floor_figures(monkeypatch, capsys, no_run):
    case = _steady_cases(["--num-running", "256", "--steps", "100", "--no-floor"])[0]
    # 2,200 + 260 x 256 + 760 + 126 x 256: no counted message is decoded again at the end
    assert (case.floor, step_bytes(case)) == (False, 101_776)
    # with a floor: 2,250 + 238 x 256 + 580 + 127 x 256 (its chunk is not per step)
    assert step_bytes(dataclasses.replace(case, floor=True)) == 96_270
    monkeypatch.setattr(cli_run, "available_memory_bytes", lambda: 10**10)
    code, lines, _ = _main(RUN + ["--num-running", "256", "--steps", "60000", "--no-floor"],
                           capsys)
    # 101,776 x 60,100 = 6.1 GB: over half of 10 GB
    assert (code, no_run, lines) == (0, [2], [
        "bench.py: warning: the largest case, num_running=256/send/msgpack#0 (60,100 steps "
        "with warm-up), needs about 6.1 GB of memory for its per-step records (101,776 "
        "bytes a step), 61 % of the 10.0 GB available (MemAvailable)"])


def test_not_even_one_step_without_warm_up_fits():
    """Where one step alone is more than half of the memory, no --warmup-steps helps
    (the runner-buffer check refuses such a run through the CLI first)."""
    case = _steady_cases(["--num-running", "4", "--steps", "10"])[0]
    per_step = step_bytes(case) + floor_chunk_bytes(case)  # 10 counted steps' chunk
    with pytest.raises(ConfigError) as refused:
        check_step_memory([case], 2 * per_step - 1)
    assert str(refused.value).endswith(
        ": not even --steps 1 fits in half of it: fewer running requests, or more memory "
        "(--scenario soak writes its steps to disk as it goes and runs as long as asked)")
    with pytest.raises(ConfigError) as refused:
        check_step_memory([case], 2 * per_step)
    assert (": not even --steps 1 fits in half of it beside the 100 warm-up steps: "
            "--warmup-steps plus --steps at most 1 fits, or fewer running requests, or "
            "more memory (--scenario soak") in str(refused.value)


def test_advice_is_rounded_down_to_two_significant_digits():
    assert [memory._round_down(n) for n in (7, 99, 100, 999, 1_162_284, 42_949, 225_965)] == [
        7, 99, 100, 990, 1_100_000, 42_000, 220_000]


def test_the_bare_loop_of_overhead_keeps_no_records():
    """``--scenario overhead``'s ``totals`` case records no step: not estimated, so a
    refusal names its ``steps`` twin."""
    from ipc_bench.cli.options import build_parser
    from ipc_bench.harness.scenario import discover

    args = build_parser().parse_args(["--scenario", "overhead", "--num-running", "4",
                                      "--steps", "100", "--repeat", "2"])
    cases = cli_run._build_cases("overhead", discover()["overhead"],
                                 cli_run._scenario_options(args))
    kinds = {c.instrumentation: case_steps(c) for c in cases}
    assert kinds == {"steps": 200, "totals": None}
