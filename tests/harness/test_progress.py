"""Progress: a bar on a terminal; off one (a log, a pipe, CI) a plain line a minute;
nothing with --quiet."""

from __future__ import annotations

import io
import json
import os
import re
import pty
import select
import struct
import subprocess
import sys
import time
import types

import pytest

from analysis_run import REPO
from ipc_bench.harness import progress
from ipc_bench.harness.progress import (CaseHeartbeat, CaseProgress, case_progress,
                                          progress_enabled)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("quiet, env, tty, shown", [
    (False, {}, True, True),
    (False, {"CI": ""}, True, True),
    (False, {"CI": "false"}, True, True),
    (False, {"CI": "true"}, True, False),
    (False, {"CI": "1"}, True, False),
    (True, {}, True, False),
    (False, {}, False, False),
])
def test_progress_enabled(quiet, env, tty, shown):
    stream = _Tty() if tty else io.StringIO()
    assert progress_enabled(quiet, stream=stream, environ=env) is shown


def test_bar_counts_steps_and_shows_tokens_per_s():
    out = io.StringIO()
    bar = CaseProgress("case", total=1000, by_requests=False, stream=out, interval_s=0.0)
    for seq in range(1, 1001):
        bar(seq, 4 * seq, 0)
    assert bar.bar.n == 1000
    bar.bar.refresh()
    text = out.getvalue()
    bar.close()
    assert "case" in text and "1000/1000" in text and "tok/s" in text and "step" in text


def test_bar_touches_tqdm_only_every_stride_steps():
    bar = CaseProgress("case", total=None, by_requests=False, stream=io.StringIO(),
                       interval_s=3600.0)
    bar(1, 4, 0)  # first update: the stride grows (the interval is far away)
    assert bar.updates == 1 and bar.stride == 10 and bar.next_seq == 11
    for seq in range(2, 11):
        bar(seq, 4 * seq, 0)
    assert bar.updates == 1 and bar.bar.n == 1  # calls in between are one comparison each
    bar(11, 44, 0)
    assert bar.updates == 2 and bar.bar.n == 11 and bar.stride == 100
    bar.close()


def test_bar_counts_requests_for_trace_replays():
    bar = CaseProgress("trace", total=3, by_requests=True, stream=io.StringIO(),
                       interval_s=0.0)
    bar(5, 50, 1)
    bar(9, 90, 3)
    assert bar.bar.n == 3 and bar.bar.total == 3 and bar.bar.unit == "req"
    bar.close()


def test_case_progress_picks_steps_or_requests():
    steady = types.SimpleNamespace(max_steps=120, make_workload=lambda: None)
    bar = case_progress(steady, "x", stream=io.StringIO())
    assert (bar.by_requests, bar.bar.total) == (False, 120)
    bar.close()
    counted = types.SimpleNamespace(max_steps=1200, counted_steps=100, warmup_steps=20,
                                    make_workload=lambda: None)
    bar = case_progress(counted, "x", stream=io.StringIO())
    assert (bar.by_requests, bar.bar.total) == (False, 120)
    bar.close()
    trace = types.SimpleNamespace(max_steps=None, make_workload=lambda: [0] * 7)
    bar = case_progress(trace, "x", stream=io.StringIO())
    assert (bar.by_requests, bar.bar.total) == (True, 7)
    bar.close()


class _Clock:
    """``time.monotonic`` for the progress module, moved by hand, and the heartbeat's
    time of day (``progress._stamp``) read from it: 1000 s is ``00:16:40``."""

    def __init__(self, monkeypatch):
        self.now = 1000.0
        monkeypatch.setattr(progress.time, "monotonic", lambda: self.now)
        monkeypatch.setattr(progress, "_stamp", lambda: _hms(self.now))


def _hms(seconds: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(seconds))


def test_heartbeat_writes_a_line_a_minute_with_the_time_left(monkeypatch):
    clock, out = _Clock(monkeypatch), io.StringIO()
    beat = CaseHeartbeat("[2/8] num_running=256/send/msgpack#0", total=60_200,
                         by_requests=False, stream=out)
    clock.now += 0.5
    beat(1, 256, 0)  # the first step: tokens/s count from here
    for seq in range(2, 41_201):  # 40 s of steps, 1,000 a second
        clock.now = 1000.5 + seq / 1000
        beat(seq, 256 * seq, 0)
    assert out.getvalue() == ""  # none before a minute
    for seq in range(41_201, 60_001):
        clock.now = 1000.5 + seq / 1000 + 20 * (seq >= 41_300)  # a 20 s stall
        beat(seq, 256 * seq, 0)
    lines = out.getvalue().splitlines()
    assert len(lines) == 1, lines
    seq = int(lines[0].split(": ")[1].split()[0].replace(",", ""))  # the step it looked at
    assert 41_300 <= seq < 42_400  # at the first look a minute in (looks come every second)
    elapsed = 0.5 + seq / 1000 + 20  # since the case began; its first step at 0.5 s
    rate = 256 * (seq - 1) / (elapsed - 0.5)
    left = (60_200 - seq) * (elapsed - 0.5) / (seq - 1)  # the pace since the first step
    assert lines[0] == (f"{_hms(1000 + elapsed)} [2/8] num_running=256/send/msgpack#0: "
                        f"{seq:,} of 60,200 steps "
                        f"after 1 min {round(elapsed) - 60} s, {rate:,.0f} tok/s; about "
                        f"{round(left)} s of steps left at this pace")


def test_heartbeat_counts_requests_and_says_no_time_left_without_a_total(monkeypatch):
    clock, out = _Clock(monkeypatch), io.StringIO()
    beat = CaseHeartbeat("trace", total=None, by_requests=True, stream=out, interval_s=0.0)
    beat(1, 4, 0)
    clock.now += 3725
    beat(20, 10, 1)  # past the stride a zero interval grows to
    assert out.getvalue() == "01:18:45 trace: 1 request after 1 h 2 min, 0 tok/s\n"
    beat = CaseHeartbeat("steps", total=None, by_requests=False, stream=out, interval_s=0.0)
    clock.now += 61
    beat(7, 0, 0)  # a case's first step a minute in (a slow start-up)
    assert out.getvalue().splitlines()[-1] == "01:19:46 steps: 7 steps after 1 min 1 s"


def test_case_progress_gives_a_heartbeat_off_a_terminal(monkeypatch):
    clock, out = _Clock(monkeypatch), io.StringIO()
    trace = types.SimpleNamespace(max_steps=None, make_workload=lambda: [0] * 7, floor=True)
    beat = case_progress(trace, "x", stream=out, bar=False)
    assert isinstance(beat, CaseHeartbeat) and (beat.by_requests, beat.total) == (True, 7)
    clock.now += 30
    beat(1, 10, 0)  # the first step, after 30 s of start-up
    clock.now += 40
    beat(50, 500, 3)  # 3 of 7 requests in the 40 s since: 4 more take about 53 s
    assert out.getvalue() == ("00:17:50 x: 3 of 7 requests after 1 min 10 s, 12 tok/s; about 53 s "
                              "of requests left at this pace, then the floor\n")


def _steps(beat, clock, first, last, per_s, tokens=4):
    """Steps ``first`` to ``last`` through ``beat``, ``per_s`` a second of the clock."""
    t0 = clock.now
    for seq in range(first, last + 1):
        clock.now = t0 + (seq - first + 1) / per_s
        beat(seq, tokens * seq, 0)


def _floor(beat, clock, total, per_s):
    """A floor of ``total`` steps, ``per_s`` a second, called as ``replay_floor`` calls."""
    t0, next_n = clock.now, beat.floor(0, total)
    for n in range(1, total + 1):
        clock.now = t0 + n / per_s
        if n >= next_n:
            next_n = beat.floor(n, total)
    beat.floor(total, total)


def test_heartbeat_reports_the_floor_at_the_same_cadence(monkeypatch):
    clock, out = _Clock(monkeypatch), io.StringIO()
    beat = CaseHeartbeat("[1/2] c", total=3000, by_requests=False, stream=out,
                         interval_s=0.0, floor=True)
    clock.now += 10  # start-up
    _steps(beat, clock, 1, 3000, per_s=100)  # 30 s of steps: no line yet
    assert out.getvalue() == ""
    clock.now += 5  # the floor begins 45 s into the case
    _floor(beat, clock, 2950, per_s=50)  # 59 s of floor
    lines = out.getvalue().splitlines()
    # The first look a minute into the case: 15 s into the floor, 750 steps at 50 a second.
    assert lines == ["00:17:40 [1/2] c: floor 750 of 2,950 steps, 1 min 0 s into the case; about "
                     "44 s of the floor left at this pace"]


def test_heartbeat_says_how_much_of_the_run_is_left(monkeypatch):
    clock, out = _Clock(monkeypatch), io.StringIO()
    specs = [types.SimpleNamespace(case_id=f"n=2/{p}/msgpack#0", warmup_steps=1000,
                                   counted_steps=5000, floor=True, transport="ipc",
                                   max_steps=None)
             for p in ("send", "cached")]
    pace = progress.RunPace(specs)
    beat = case_progress(specs[0], "[1/2] a", stream=out, bar=False, run=pace, index=0)
    beat.interval_s = 0.0
    clock.now += 6  # start-up: the next case's too, before any case finished
    _steps(beat, clock, 1, 3001, per_s=50)  # the line at step 2,700, 60 s into the case
    # Left: 3,300 steps at 50/s (66 s), then the next case: 6 s + 6,000 steps (120 s);
    # the floors are left out: no floor has been replayed whose pace could time them
    # (a floor of 5,000 at the steps' pace would add 200 s, where they take 100 s).
    assert out.getvalue().splitlines() == [
        "00:17:40 [1/2] a: 2,700 of 6,000 steps (1,000 of them warm-up) after 1 min 0 s, "
        "200 tok/s; about 1 min 6 s of steps left at this pace, then the floor; about "
        "3 min 12 s of the run left; the estimate leaves out the floors (none replayed yet)"]
    _steps(beat, clock, 3002, 6000, per_s=50)
    clock.now += 1
    _floor(beat, clock, 5000, per_s=100)  # twice as fast as the steps: 50 s
    clock.now += 4
    beat.close()  # 6 + 120 + 1 + 50 + 4 s: 11 s outside the steps and the floor
    assert pace.other_s == [pytest.approx(11.0)] and pace.floor_ratio == pytest.approx(0.5)
    out.seek(0)
    out.truncate()
    beat = case_progress(specs[1], "[2/2] b", stream=out, bar=False, run=pace, index=1)
    beat.interval_s = 0.0
    clock.now += 2
    _steps(beat, clock, 1, 1500, per_s=100)
    # The run's latest line was over a minute ago: this case's first comes once it has
    # 10 s of steps, at step 1,001. Left: 4,999 steps (50 s), then its floor at the
    # floor pace of the finished case of its workload and transport (5,000 x 0.01 s =
    # 50 s), not at that floor's ratio to its steps times this case's steps (25 s). The
    # run: the same.
    assert out.getvalue().splitlines() == [
        "00:19:53 [2/2] b: 1,001 of 6,000 steps (1,000 of them warm-up) after 12 s, "
        "400 tok/s; about 50 s of steps left at this pace, then the floor; about 1 min 40 s "
        "of the run left"]


def test_cases_of_a_transport_not_run_yet_are_counted_apart(monkeypatch):
    clock, out = _Clock(monkeypatch), io.StringIO()
    ipc = types.SimpleNamespace(case_id="w/a#0", warmup_steps=0, counted_steps=100,
                                floor=False, transport="ipc", max_steps=None)
    # (their floors, in cases counted apart, are not said again as floors left out)
    inproc = [types.SimpleNamespace(case_id=f"w/{p}#0", warmup_steps=0, counted_steps=100,
                                    floor=True, transport="inproc", max_steps=None)
              for p in ("b", "c")]
    pace = progress.RunPace([ipc] + inproc)
    beat = case_progress(ipc, "[1/3] a", stream=out, bar=False, run=pace, index=0)
    beat.interval_s = 0.0
    _steps(beat, clock, 1, 100, per_s=1)  # the line at step 60, 60 s in: 40 s left
    assert out.getvalue().splitlines() == [
        "00:17:40 [1/3] a: 60 of 100 steps after 1 min 0 s, 4 tok/s; about 40 s of steps "
        "left at this pace; about 40 s of the run left; the estimate leaves out 2 cases of "
        "a size or transport not run yet (no pace to time them by)"]
    beat.close()
    beat = case_progress(inproc[0], "[2/3] b", stream=out, bar=False, run=pace, index=1)
    beat.interval_s = 0.0
    _steps(beat, clock, 1, 100, per_s=1)
    # A line a minute of the run: at 120 s (this case's step 20) and 180 s (step 80):
    # 20 s left, then the last case at this pace: 100 s.
    assert out.getvalue().splitlines()[1:] == [
        "00:18:40 [2/3] b: 20 of 100 steps after 20 s, 4 tok/s; about 1 min 20 s of steps "
        "left at this pace, then the floor; about 3 min 0 s of the run left; the estimate "
        "leaves out the floors (none replayed yet)",
        "00:19:40 [2/3] b: 80 of 100 steps after 1 min 20 s, 4 tok/s; about 20 s of steps "
        "left at this pace, then the floor; about 2 min 0 s of the run left; the estimate "
        "leaves out the floors (none replayed yet)"]


def test_cases_of_a_size_not_run_yet_are_counted_apart(monkeypatch):
    # a step-time sweep's sizes run at paces far apart: a later size is not timed at
    # this one's pace (which once gave 3 min 44 s for a run 9 min from its end)
    clock, out = _Clock(monkeypatch), io.StringIO()
    specs = [types.SimpleNamespace(case_id=f"step_time_ms={ms}/{p}/msgpack#0",
                                   warmup_steps=0, counted_steps=100, floor=False,
                                   transport="ipc", max_steps=None)
             for ms in (2, 20) for p in ("send", "cached")]
    pace = progress.RunPace(specs)
    beat = case_progress(specs[0], "[1/4] a", stream=out, bar=False, run=pace, index=0)
    beat.interval_s = 0.0
    _steps(beat, clock, 1, 100, per_s=1)  # 40 s left, then cached at 2 ms: 1 s + 100 s
    assert out.getvalue().splitlines()[-1].endswith(
        "about 40 s of steps left at this pace; about 2 min 21 s of the run left; the "
        "estimate leaves out 2 cases of a size or transport not run yet (no pace to time "
        "them by)")
    assert [p.group for p in pace.plans] == ["step_time_ms=2 ipc"] * 2 + [
        "step_time_ms=20 ipc"] * 2


def test_no_run_left_where_a_case_left_has_no_step_count(monkeypatch):
    clock, out = _Clock(monkeypatch), io.StringIO()
    steady = types.SimpleNamespace(case_id="s#0", warmup_steps=0, counted_steps=100,
                                   floor=False, transport="ipc", max_steps=None)
    timed = types.SimpleNamespace(case_id="t#0", warmup_steps=0, counted_steps=100,
                                  floor=False, transport="ipc", max_steps=None,
                                  trace_speedup=1.0)
    trace = types.SimpleNamespace(case_id="r#0", warmup_steps=0, counted_steps=None,
                                  floor=False, transport="ipc", max_steps=None,
                                  make_workload=lambda: [0] * 7)
    for later in (timed, trace):
        beat = case_progress(steady, "s", stream=out, bar=False,
                             run=progress.RunPace([steady, later]), index=0)
        beat.interval_s = 0.0
        _steps(beat, clock, 1, 100, per_s=1)
        assert out.getvalue().splitlines()[-1].endswith("of steps left at this pace")
    assert progress.case_plan(timed) is None and progress.case_plan(trace) is None


def test_bar_counts_the_floor_on_the_same_bar():
    out = io.StringIO()
    bar = CaseProgress("[1/2] c", total=100, by_requests=False, stream=out, interval_s=0.0)
    for seq in range(1, 101):
        bar(seq, 4 * seq, 0)
    assert bar.floor(0, 80) >= 1
    assert (bar.bar.n, bar.bar.total, bar.bar.desc) == (0, 80, "[1/2] c floor")
    bar.floor(80, 80)
    bar.bar.refresh()
    line = out.getvalue().split("\r")[-1]
    assert line.startswith("[1/2] c floor: 100%") and "80/80" in line and "tok/s" not in line
    bar.close()


def test_a_run_off_a_terminal_reports_each_floor(tmp_path, monkeypatch):
    """``replay_floor`` tells the case's heartbeat how far its floor is, up to its end."""
    from ipc_bench import cli
    from ipc_bench.cli import execute

    out, real = io.StringIO(), execute.case_progress

    def every_look(case, desc, bar=True, **kw):
        beat = real(case, desc, stream=out, bar=False, **kw)
        beat.every_s = 0.0  # a line at every look
        return beat

    monkeypatch.setattr(execute, "case_progress", every_look)
    monkeypatch.setattr(execute, "progress_enabled", lambda quiet: False)
    assert cli.main(ARGS[1:] + ["--policies", "send", "--output", str(tmp_path / "r")]) == 0
    floors = [line.split(": ", 1)[1].split(", ")[0] for line in out.getvalue().splitlines()
              if ": floor " in line]
    # a line once a floor step is done (its pace known), up to the floor's end
    assert 0 < int(floors[0].split()[1]) <= 300 and floors[-1] == "floor 300 of 300 steps"


def test_the_terminal_gets_a_bar_and_a_log_a_line_a_minute(tmp_path, monkeypatch, capsys):
    """What ``bench.py`` hands ``run_case``: a bar where ``progress_enabled``, else a
    heartbeat (unless --quiet)."""
    from ipc_bench import cli
    from ipc_bench.cli import execute

    seen = []
    real = execute.case_progress

    def spy(case, desc, bar=True, **kw):
        seen.append(bar)
        return real(case, desc, stream=io.StringIO(), bar=bar, **kw)

    monkeypatch.setattr(execute, "case_progress", spy)
    for enabled in (True, False):
        monkeypatch.setattr(execute, "progress_enabled", lambda quiet: enabled)
        assert cli.main(ARGS[1:] + ["--policies", "send", "--output",
                                    str(tmp_path / str(enabled))]) == 0
    assert seen == [True, False]
    assert cli.main(ARGS[1:] + ["--policies", "send", "--quiet", "--output",
                                str(tmp_path / "quiet")]) == 0
    assert seen == [True, False]


ARGS = ["bench.py", "--scenario", "decode-steady", "--num-running", "2", "--steps", "300",
        "--warmup-steps", "0", "--codecs", "msgpack", "--no-single-process"]


def _run_on_pty(args, env) -> str:
    """Run ``args`` with stdout and stderr on a pseudo-terminal of 100 columns."""
    import fcntl
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    proc = subprocess.Popen([sys.executable, *args], cwd=REPO, stdin=subprocess.DEVNULL,
                            stdout=slave, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
    finally:
        proc.wait(timeout=30)
        os.close(master)
    assert proc.returncode == 0, b"".join(chunks).decode(errors="replace")
    return b"".join(chunks).decode(errors="replace")


def test_bar_on_a_terminal_and_not_in_ci(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    text = _run_on_pty(ARGS + ["--output", str(tmp_path / "a")], env)
    assert "num_running=2/send/msgpack#0" in text
    assert "step/s" in text or "s/step" in text  # tqdm's rate: the bar was drawn
    env["CI"] = "true"
    text = _run_on_pty(ARGS + ["--output", str(tmp_path / "b")], env)
    assert "step/s" not in text and "s/step" not in text
    env.pop("CI")
    text = _run_on_pty(ARGS + ["--quiet", "--output", str(tmp_path / "c")], env)
    assert "step/s" not in text and "s/step" not in text


def test_no_bar_when_stderr_is_not_a_terminal(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    proc = subprocess.run([sys.executable, *ARGS, "--output", str(tmp_path / "r")], cwd=REPO,
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "\r" not in proc.stderr and "step/s" not in proc.stderr
    assert "[1/2] num_running=2/send/msgpack#0: " in proc.stderr


def test_each_cases_warnings_follow_its_line(tmp_path, monkeypatch, capsys):
    from ipc_bench import cli
    from ipc_bench.cli import execute
    from ipc_bench.cli.command_line import SCRIPT

    monkeypatch.setattr(execute, "noise_warnings",
                        lambda summary, usage=None: [f"noisy {summary['case_id']}"])
    monkeypatch.setattr(execute, "floor_pair_notes", lambda cases: [])  # the machine's
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # no load note
    run = tmp_path / "r"
    assert cli.main(ARGS[1:] + ["--output", str(run)]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == f"ipc-bench: decode-steady, 2 cases -> {run}"
    assert len(lines) == 7, lines
    for n, i in enumerate((1, 3), 1):  # each case's line, then its warning
        tag, case = lines[i].split(": ")[0].split()
        assert tag == f"[{n}/2]"
        assert lines[i + 1] == f"  warning: noisy {case}"
    # the run's time to the case lines' precision: never below a case's printed time
    total = re.fullmatch(r"ipc-bench: 2 cases run in (\d+\.\d) s", lines[5])
    assert total, lines
    cases = [float(re.search(r"\(([\d.]+) s for the whole case\)", lines[i]).group(1))
             for i in (1, 3)]
    assert float(total.group(1)) >= max(cases), lines
    assert lines[6] == (f"2 measurement warnings in 2 of 2 cases (printed under their case "
                        f"lines above): see {run}/summary.json, or Measurement warnings in "
                        f"python {SCRIPT} report {run}")  # the run's last line


def test_a_runs_time_reads_as_its_cases_do():
    from ipc_bench.cli.execute import run_seconds

    assert [run_seconds(s) for s in (0.04, 0.3, 0.34, 9.96, 12.44, 59.94, 59.96, 75, 3725)] \
        == ["0.04 s", "0.3 s", "0.3 s", "10.0 s", "12.4 s", "59.9 s", "1 min 0 s",
            "1 min 15 s", "1 h 2 min"]


def test_a_one_step_case_says_step(tmp_path, monkeypatch, capsys):
    from ipc_bench import cli
    from ipc_bench.cli import execute

    monkeypatch.setattr(execute, "noise_warnings", lambda summary, usage=None: [])
    args = ["--scenario", "decode-steady", "--num-running", "1", "--steps", "1",
            "--warmup-steps", "0", "--codecs", "msgpack", "--no-single-process",
            "--policies", "send", "--output", str(tmp_path / "r")]
    assert cli.main(args) == 0
    out = capsys.readouterr()
    assert re.search(r"^\[1/1\] num_running=1/send/msgpack#0: 1 step, [\d,]+ tok/s \(",
                     out.err, re.M), out.err
    assert ("ModelRunnerOutput; its only counted step); token ids in send = "
            in out.out), out.out


def test_a_run_without_warnings_ends_with_its_results(tmp_path, monkeypatch, capsys):
    from ipc_bench import cli
    from ipc_bench.cli import execute

    monkeypatch.setattr(execute, "noise_warnings", lambda summary, usage=None: [])
    assert cli.main(ARGS[1:] + ["--output", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err
    assert "measurement warning" not in err


def test_warnings_count_line_counts_the_cases_warnings(tmp_path):
    from ipc_bench.cli.execute import warnings_count_line

    assert warnings_count_line([{"warnings": []}, {}], tmp_path) is None
    cases = [{"warnings": ["a"]}, {"warnings": []}, {"warnings": ["b", "c"]}]
    assert warnings_count_line(cases, tmp_path) == (
        f"3 measurement warnings in 2 of 3 cases (printed under their case lines above): "
        f"see {tmp_path}/summary.json, or Measurement warnings in python bench.py report "
        f"{tmp_path}")
    assert warnings_count_line([{"warnings": ["a"]}], tmp_path).startswith(
        "1 measurement warning in 1 of 1 case (")
    # a core warning is printed under its first case only: its repeats are said to be
    tp = dict(num_steps=1000, tp=2, tp_cores=2, tp_oversubscribed=True, transport="ipc")
    core = ("--tp 2 over ipc on 2 core(s): the 2 ranks sleep between steps but wake "
            "together for each step's broadcast, so 3 processes share the cores while they "
            "run it; those timings are not comparable")
    cases = [dict(tp, warnings=[core, "noisy"]), dict(tp, warnings=[core]),
             dict(tp, warnings=[core])]
    assert warnings_count_line(cases, tmp_path).startswith(
        "4 measurement warnings in 3 of 3 cases (printed under their case lines above; 2 "
        "of them core warnings repeated from an earlier case, printed there only): see ")
    # the notes on floors not comparable are counted too, with or without warnings
    both = (f": the warnings in {tmp_path}/summary.json, the warnings and the floor notes "
            f"under Measurement warnings in python bench.py report {tmp_path}")
    assert warnings_count_line(cases, tmp_path, 7) == (
        "4 measurement warnings in 3 of 3 cases (printed under their case lines above; 2 "
        "of them core warnings repeated from an earlier case, printed there only); 7 "
        "pairs of floors not comparable (the run's note: lines, on stdout)" + both)
    assert warnings_count_line([{}], tmp_path, 1) == (
        f"1 pair of floors not comparable (the run's note: lines, on stdout): see "
        f"Measurement warnings in python bench.py report {tmp_path}, which lists them "
        f"(they are not in {tmp_path}/summary.json)")
    # stdout's line, where stdout goes elsewhere than stderr
    assert warnings_count_line(cases, tmp_path, 7, on_stdout=True) == (
        "4 measurement warnings in 3 of 3 cases (printed on stderr under their case lines; "
        "2 of them core warnings repeated from an earlier case, printed there only); 7 "
        "pairs of floors not comparable (the note: lines above)" + both)


@pytest.mark.parametrize("apart", [True, False])
def test_stdouts_log_counts_the_warnings_where_stderr_goes_elsewhere(apart, tmp_path):
    """``> out.log 2> err.log``: the tables' log ends with the count of the warnings
    that only stderr's holds; ``> log 2>&1``: the count once, stderr's."""
    run = tmp_path / "r"
    out_path, err_path = tmp_path / "out.log", tmp_path / "err.log"
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    with open(out_path, "w") as out, open(err_path, "w") as err:
        args = [("20" if a == "300" else a) for a in ARGS]  # --steps 20
        proc = subprocess.run([sys.executable, *args, "--output", str(run)],
                              cwd=REPO, stdout=out, stderr=err if apart else out, env=env,
                              timeout=120)
    assert proc.returncode == 0
    summary = json.loads((run / "summary.json").read_text())
    count = sum(len(c["warnings"]) for c in summary["cases"])
    assert count >= 2  # 20 counted steps: "figures are rough" in each case
    out = out_path.read_text()
    words = f"{count} measurement warnings in 2 of 2 cases (printed "
    if apart:
        assert f"\n{words}on stderr under their case lines" in out
        assert out.index(words) < out.index("\nresults: ")
        assert err_path.read_text().count(words) == 1
    else:
        assert out.count(words) == 1 and f"{words}under their case lines above" in out


def test_the_floor_is_told_the_progress_of_its_own_case_only(monkeypatch):
    # the supervisor hands replay_floor the case's own bar (its on_step's floor), and
    # nothing where on_step has none: no state outlives the case
    from ipc_bench.harness import supervisor

    seen = []

    def replay(exchange, codec, frames, seqs, progress=None):
        seen.append(progress)
        return [1] * len(seqs)

    monkeypatch.setattr(supervisor, "replay_floor", replay)
    import dataclasses

    from fault_helpers import steady_case

    spec = dataclasses.replace(steady_case(4, max_steps=20), floor=True)
    beat = case_progress(spec, "[1/1] c", stream=io.StringIO(), bar=False)
    supervisor.run_case(spec, on_step=beat)
    supervisor.run_case(spec, on_step=lambda *a: None)
    assert seen == [beat.floor, None]


def test_a_run_of_short_cases_writes_a_line_a_minute(monkeypatch):
    # 20-s cases: a line a minute of the run, each once its case has 10 s of steps;
    # the floors, none replayed yet, are left out of the run left and said to be
    clock, out = _Clock(monkeypatch), io.StringIO()
    specs = [types.SimpleNamespace(case_id=f"n={n}/send/msgpack#0", warmup_steps=0,
                                   counted_steps=20, floor=n == 4, transport="ipc",
                                   max_steps=None) for n in (2, 2, 2, 2, 2, 4)]
    specs[1].case_id = "n=2/cached/msgpack#0"
    specs[3].floor = True  # a floor in a case timed at this pace, none replayed yet
    pace = progress.RunPace(specs)
    for i, spec in enumerate(specs[:5]):
        beat = case_progress(spec, f"[{i + 1}/6] c{i}", stream=out, bar=False, run=pace,
                             index=i)
        beat.interval_s = 0.0
        _steps(beat, clock, 1, 20, per_s=1)
        beat.close()
    # One line in 100 s: at 60 s (the 3rd case's 20th step, 20 s in); it times the 4th
    # and 5th cases at this pace (2 x 20 s) but not the 4th's floor, and counts the 6th,
    # another size, apart (its floor with it).
    assert out.getvalue().splitlines() == [
        "00:17:40 [3/6] c2: 20 of 20 steps after 20 s, 4 tok/s; about 40 s of the run "
        "left; the estimate leaves out 1 case of a size or transport not run yet (no pace "
        "to time them by) and the floors (none replayed yet)"]
    beat = case_progress(specs[5], "[6/6] c5", stream=out, bar=False, run=pace, index=5)
    beat.interval_s = 0.0
    _steps(beat, clock, 1, 9, per_s=1)  # 9 s of steps, 109 s into the run: no line
    clock.now += 12
    beat(10, 40, 0)  # 121 s into the run, 20 s of steps past the first: 10 left, 22 s
    assert out.getvalue().splitlines()[-1] == (
        "00:18:41 [6/6] c5: 10 of 20 steps after 21 s, 2 tok/s; about 22 s of steps left "
        "at this pace, then the floor; about 22 s of the run left; the estimate leaves out "
        "the floors (none replayed yet)")


def test_a_time_left_under_half_a_second_is_under_1_s_not_about_0_s():
    assert [progress.about_words(s) for s in (0, 0.3, 0.5, 59.6, 61, 7300)] == [
        "about 0 s", "under 1 s", "under 1 s", "about 1 min 0 s", "about 1 min 1 s",
        "about 2 h 1 min"]
    line = io.StringIO()
    beat = CaseHeartbeat("[1/2] c", 10, False, stream=line, every_s=0.0,
                         stamp=lambda: "00:01:00")
    beat.floor_pace = lambda: 0.01  # 10 ms a floor step: 2 steps left, 0.02 s
    beat._show_floor(2_940, 2_942, beat.t_start + 60)
    assert line.getvalue().endswith("floor 2,940 of 2,942 steps, 1 min 0 s into the case; "
                                    "under 1 s of the floor left at this pace\n")
