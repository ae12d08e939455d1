"""An interrupted run (not ``--quiet``) ends as a finished one does, with the line that
counts its cases' warnings, printed on stderr before the interrupt's line, which stays
the run's last (``execute._Run.stop_count``); ``--quiet`` prints its own count on stdout
(``quiet_count``). A case whose floor a signal cut short is written as finished
(``complete: true``): its case line and warnings are printed, as a finished case's are,
before those two lines."""

from __future__ import annotations

import json
import os
import signal

from ipc_bench import cli
from ipc_bench.cli import execute
from ipc_bench.cli.command_line import SCRIPT
from ipc_bench.harness import supervisor

_TWO = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "20",
        "--warmup-steps", "2", "--policies", "send,cached", "--codecs", "msgpack",
        "--no-single-process"]
SEND, CACHED = "num_running=2/send/msgpack#0", "num_running=2/cached/msgpack#0"


def _own_warnings(monkeypatch) -> None:
    """One warning per case, its own, and no other (no load note, no floor notes)."""
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    monkeypatch.setattr(execute, "noise_warnings",
                        lambda summary, usage=None: [f"own {summary['case_id']}"])
    monkeypatch.setattr(execute, "floor_pair_notes", lambda cases: [])


def _count(run_dir, n: int, cases: int, of: int) -> str:
    return (f"{n} measurement warning{'' if n == 1 else 's'} in {cases} of {of} "
            f"case{'' if of == 1 else 's'} (printed under their case lines above): see "
            f"{run_dir}/summary.json, or Measurement warnings in "
            f"python {SCRIPT} report {run_dir}")


def test_an_interrupt_between_cases_ends_with_the_count_then_its_line(
        tmp_path, monkeypatch, capsys, handlers_restored):
    _own_warnings(monkeypatch)
    case = execute._Run.case

    def case_then_signal(self, i, spec):
        code = case(self, i, spec)
        if i == 1:
            os.kill(os.getpid(), signal.SIGINT)
        return code

    monkeypatch.setattr(execute._Run, "case", case_then_signal)
    run_dir = tmp_path / "run"
    assert cli.main(_TWO + ["--output", str(run_dir)]) == 130
    out, err = capsys.readouterr()
    lines = err.splitlines()
    first = lines.index(next(x for x in lines if x.startswith("[1/2] ")))
    assert lines[first + 1:] == [
        f"  warning: own {SEND}",
        _count(run_dir, 1, 1, 1),
        f"bench.py: interrupted by SIGINT after 1 of 2 cases; partial results: {run_dir} "
        "(exit 130)"]
    assert out == ""
    # --quiet: its own line on stdout, stderr the interrupt's line alone, as before
    quiet_dir = tmp_path / "quiet"
    assert cli.main(_TWO + ["--quiet", "--output", str(quiet_dir)]) == 130
    assert capsys.readouterr() == (
        f"1 warning recorded in {quiet_dir}/summary.json (not shown: --quiet)\n",
        f"bench.py: interrupted by SIGINT after 1 of 2 cases; partial results: {quiet_dir} "
        "(exit 130)\n")


def test_a_case_whose_floor_was_cut_short_is_printed_with_its_warnings(
        tmp_path, monkeypatch, capsys, handlers_restored):
    _own_warnings(monkeypatch)
    replay, calls = supervisor.replay_floor, []

    def signal_in_the_second_floor(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGINT)  # raised by the handler inside the replay
        return replay(*args, **kwargs)

    monkeypatch.setattr(supervisor, "replay_floor", signal_in_the_second_floor)
    run_dir = tmp_path / "run"
    assert cli.main(_TWO + ["--output", str(run_dir)]) == 130
    lines = capsys.readouterr().err.splitlines()
    cases = json.loads((run_dir / "summary.json").read_text())["cases"]
    assert [c["case_id"] for c in cases] == [SEND, CACHED]
    cached = cases[1]
    assert cached["complete"] is True and cached["floor_interrupted"] is True
    last = cached["num_total_steps"] - 1
    when = f"interrupted by SIGINT while replaying the floor after step {last}"
    assert cached["warnings"] == [
        f"own {CACHED}",
        f"{when}: the floor's figures (floor tok/s, x floor) are absent, and so are the "
        "runner's per-step columns (its report comes after the floor)"]
    second = lines.index(next(x for x in lines if x.startswith("[2/2] ")))
    assert lines[second].startswith(f"[2/2] {CACHED}: 20 steps, ")
    assert lines[second].endswith(" s for the whole case)")
    assert cached["case_elapsed_s"] > 0
    assert lines[second + 1:] == [
        *(f"  warning: {w}" for w in cached["warnings"]),
        _count(run_dir, 3, 2, 2),
        f"bench.py: {CACHED}: {when} (steps.csv seq: warm-up and uncounted steps "
        f"included); partial results: {run_dir} (exit 130)"]
