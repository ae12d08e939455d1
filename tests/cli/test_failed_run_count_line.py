"""A run (not ``--quiet``) that ends on a failed case ends as an interrupted one does,
with the line that counts the warnings of the cases its ``summary.json`` holds, on
stderr before the error's line, which stays the run's last (``execute._Run.stop_count``):
a runner killed mid-case, a runner that exits with an error, a run folder that cannot
be written. A case whose runner failed while it replayed its floor is written as
finished (``complete: true``, ``floor_failed``), as is one whose captured messages could
not be saved after it was written: its case line and warnings are printed, as a
finished case's are, before those two lines. A write failure's line before a failed
case's: the count comes once (``--quiet``'s line too, where it came after each)."""

from __future__ import annotations

import errno
import json
import os
import re
import signal
import sys

import pytest
from fault_helpers import FAKE_RUNNER, wait_dead

from ipc_bench import cli
from ipc_bench.cli import execute
from ipc_bench.cli.command_line import SCRIPT
from ipc_bench.harness import recording, run_folder, supervisor
from ipc_bench.harness.spec import CaseError

_TWO = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "20",
        "--warmup-steps", "2", "--policies", "send,cached", "--codecs", "msgpack",
        "--no-single-process"]
SEND, CACHED = "num_running=2/send/msgpack#0", "num_running=2/cached/msgpack#0"
_LAST = 21  # the case's last step (steps.csv seq): 2 warm-up steps, then 20 counted


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


def _fail_the_second_case(monkeypatch, how: str, pids: list) -> None:
    """The cached case (the run's second) fails at step 5: its runner killed by SIGKILL
    there, or a runner that exits with code 7 there (``tests/fake_runner.py``)."""
    real = execute.run_case
    if how == "exit":
        monkeypatch.setenv("FAKE_RUNNER_MODE", "exit")
        monkeypatch.setenv("FAKE_RUNNER_STEP", "5")

    def run_case(case, on_step=None, result=None, **kw):
        if case.policy != "cached":
            return real(case, on_step=on_step, result=result, **kw)
        if how == "exit":
            try:
                return supervisor.run_case(case, on_step=on_step, result=result,
                                           runner_command=[sys.executable, str(FAKE_RUNNER)],
                                           **kw)
            finally:
                pids.append(result.runner_pid)

        def kill_at_5(seq, *args):
            if on_step is not None:
                on_step(seq, *args)
            if seq == 5:
                pids.append(result.runner_pid)
                os.kill(result.runner_pid, signal.SIGKILL)
                wait_dead(result.runner_pid)

        return real(case, on_step=kill_at_5, result=result, **kw)

    monkeypatch.setattr(execute, "run_case", run_case)


def _case_line(lines: list[str], tag: str, case_id: str) -> int:
    """Where ``lines`` hold the line of case ``case_id`` written as finished, ``[1/2]
    CASE: 20 steps, 12,345 tok/s (0.4 s for the whole case)``."""
    found = [i for i, x in enumerate(lines) if x.startswith(f"{tag} ")]
    assert len(found) == 1, lines
    assert re.fullmatch(rf"{re.escape(tag)} {re.escape(case_id)}: 20 steps, [\d,]+ tok/s "
                        r"\([\d.]+ s for the whole case\)", lines[found[0]]), lines
    return found[0]


def _after_first_case(err: str) -> list[str]:
    lines = err.splitlines()
    return lines[_case_line(lines, "[1/2]", SEND) + 1:]


@pytest.mark.parametrize("how", ["killed", "exit"])
def test_a_run_that_ends_on_a_failed_runner_ends_with_the_count_then_its_line(
        tmp_path, monkeypatch, capsys, handlers_restored, how):
    _own_warnings(monkeypatch)
    pids: list = []
    _fail_the_second_case(monkeypatch, how, pids)
    run_dir = tmp_path / "run"
    assert cli.main(_TWO + ["--output", str(run_dir)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    tail = _after_first_case(err)
    assert tail[:2] == [f"  warning: own {SEND}", _count(run_dir, 1, 1, 2)], tail
    assert len(tail) == 3, tail
    pid = pids[0]
    if how == "killed":  # noticed on the send or in the wait for the reply
        assert re.fullmatch(
            rf"bench\.py: error: {re.escape(CACHED)}: runner process {pid} was killed by "
            r"SIGKILL, noticed while (sending SchedulerOutput|waiting for "
            rf"ModelRunnerOutput) for step 5; partial results: {re.escape(str(run_dir))}",
            tail[2]), tail[2]
    else:
        assert tail[2] == (
            f"bench.py: error: {CACHED}: runner process {pid} exited with code 7 (fake "
            "runner: exiting at step 5), noticed while waiting for ModelRunnerOutput for "
            f"step 5; partial results: {run_dir}")
    cases = json.loads((run_dir / "summary.json").read_text())["cases"]
    assert [(c["case_id"], c["complete"]) for c in cases] == [(SEND, True), (CACHED, False)]
    # --quiet: its own line on stdout, stderr the error's line alone, as before
    quiet_dir = tmp_path / "quiet"
    pids.clear()
    assert cli.main(_TWO + ["--quiet", "--output", str(quiet_dir)]) == 1
    out, err = capsys.readouterr()
    assert out == f"1 warning recorded in {quiet_dir}/summary.json (not shown: --quiet)\n"
    assert len(err.splitlines()) == 1 and err.startswith(f"bench.py: error: {CACHED}: "
                                                         f"runner process {pids[0]} "), err


def test_a_run_folder_write_failure_ends_with_the_count_then_its_line(
        tmp_path, monkeypatch, capsys, handlers_restored):
    """The second case's rows cannot be flushed to steps.partial.csv (a full disk):
    the folder's summary.json takes the failure and holds both cases."""
    _own_warnings(monkeypatch)
    monkeypatch.setattr(recording, "FLUSH_INTERVAL_S", 0.0)  # flush after every step
    real_begin, real_write, full = run_folder.RunWriter.begin_case, run_folder.write_fd, [False]

    def begin_case(self, spec):
        real_begin(self, spec)
        full[0] = full[0] or spec.policy == "cached"

    def write_fd(fd, data, path):
        if full[0] and os.path.basename(path) == "steps.partial.csv":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real_write(fd, data, path)

    monkeypatch.setattr(run_folder.RunWriter, "begin_case", begin_case)
    monkeypatch.setattr(run_folder, "write_fd", write_fd)
    run_dir = tmp_path / "run"
    assert cli.main(_TWO + ["--output", str(run_dir)]) == 1
    tail = _after_first_case(capsys.readouterr().err)
    assert tail[:2] == [f"  warning: own {SEND}", _count(run_dir, 1, 1, 2)], tail
    assert len(tail) == 3, tail
    assert tail[2].startswith(f"bench.py: error: cannot write results to {run_dir}: No "
                              "space left on device"), tail[2]
    assert tail[2].endswith(f"; partial results: {run_dir}"), tail[2]
    cases = json.loads((run_dir / "summary.json").read_text())["cases"]
    assert [(c["case_id"], c["complete"]) for c in cases] == [(SEND, True), (CACHED, False)]


def test_a_case_whose_runner_failed_in_its_floor_is_printed_with_its_warnings(
        tmp_path, monkeypatch, capsys, handlers_restored):
    """The runner exits once it read the floor's frame 3 (after every counted step of
    the first case): the case is written as finished, and printed so, before the count
    line and the error's line."""
    _own_warnings(monkeypatch)
    monkeypatch.setenv("FAKE_RUNNER_MODE", "exit-in-floor")
    monkeypatch.setenv("FAKE_RUNNER_STEP", "3")
    pids: list = []

    def run_fake(case, **kwargs):
        try:
            return supervisor.run_case(
                case, runner_command=[sys.executable, str(FAKE_RUNNER)], **kwargs)
        finally:
            pids.append(kwargs["result"].runner_pid)

    monkeypatch.setattr(execute, "run_case", run_fake)
    run_dir = tmp_path / "run"
    assert cli.main(_TWO + ["--output", str(run_dir)]) == 1
    lines = capsys.readouterr().err.splitlines()
    line = (f"runner process {pids[0]} exited with code 7 (fake runner: exiting at floor "
            "frame 3), noticed while waiting for floor reply 3")
    case, = json.loads((run_dir / "summary.json").read_text())["cases"]
    assert case["case_id"] == SEND and case["num_total_steps"] == _LAST + 1
    assert case["complete"] is True and case["floor_failed"] == line
    assert case["warnings"] == [
        f"own {SEND}",
        f"the runner failed while replaying the floor after step {_LAST} (steps.csv seq: "
        f"warm-up and uncounted steps included): {line}: the floor's figures (floor tok/s, "
        "x floor) are absent, and so are the runner's per-step columns (its report comes "
        "after the floor)"]
    first = _case_line(lines, "[1/2]", SEND)
    assert lines[first + 1:] == [
        *(f"  warning: {w}" for w in case["warnings"]),
        _count(run_dir, 2, 1, 1),
        f"bench.py: error: {SEND}: {line}; partial results: {run_dir}"]
    assert case["case_elapsed_s"] > 0  # the case's time, as a finished case's


def test_a_case_written_as_finished_before_its_messages_failed_is_printed(
        tmp_path, monkeypatch, capsys, handlers_restored):
    """The second case is written as finished (summary.json lists it, complete), then
    its captured messages cannot be saved (a full disk): its line and warnings are
    printed, as the first case's, before the count line (which counts them as printed
    above) and the error's line."""
    _own_warnings(monkeypatch)
    real = execute.save_captures

    def save_captures(run_dir, result):
        if result.spec.policy == "cached":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(run_dir, result)

    monkeypatch.setattr(execute, "save_captures", save_captures)
    run_dir = tmp_path / "run"
    assert cli.main(_TWO + ["--output", str(run_dir)]) == 1
    lines = capsys.readouterr().err.splitlines()
    cases = json.loads((run_dir / "summary.json").read_text())["cases"]
    assert [(c["case_id"], c["complete"], c["warnings"]) for c in cases] == [
        (SEND, True, [f"own {SEND}"]), (CACHED, True, [f"own {CACHED}"])]
    first = _case_line(lines, "[1/2]", SEND)
    assert lines[first + 1] == f"  warning: own {SEND}"
    assert _case_line(lines, "[2/2]", CACHED) == first + 2
    assert lines[first + 3:] == [
        f"  warning: own {CACHED}",
        _count(run_dir, 2, 2, 2),
        f"bench.py: error: cannot write results to {run_dir}/messages: No space left on "
        f"device; partial results: {run_dir}"]


@pytest.mark.parametrize("quiet", [False, True])
def test_a_failed_case_that_cannot_be_written_counts_the_warnings_once(
        tmp_path, monkeypatch, capsys, handlers_restored, quiet):
    """The second case fails, and its rows cannot be written (a full disk): the write
    failure's line, then the case's, each an error; the count line comes once, before
    both (``--quiet``: its line on stdout once, where it was printed after each)."""
    _own_warnings(monkeypatch)
    real_run, real_write = execute.run_case, run_folder.write_fd

    def run_case(case, **kw):
        result = real_run(case, **kw)
        if case.policy == "cached":
            raise CaseError("the runner broke (injected)", 3)
        return result

    def write_fd(fd, data, path):
        if os.path.basename(path) == "requests.csv" and CACHED.encode() in data:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real_write(fd, data, path)

    monkeypatch.setattr(execute, "run_case", run_case)
    monkeypatch.setattr(run_folder, "write_fd", write_fd)
    run_dir = tmp_path / "run"
    assert cli.main(_TWO + ["--output", str(run_dir)] + (["--quiet"] if quiet else [])) == 1
    out, err = capsys.readouterr()
    errors = [
        f"bench.py: error: cannot write results to {run_dir}: No space left on device; rows "
        f"not written: 2 of requests.csv; partial results: {run_dir}",
        f"bench.py: error: {CACHED}: the runner broke (injected); partial results: {run_dir}"]
    if quiet:
        assert out == f"1 warning recorded in {run_dir}/summary.json (not shown: --quiet)\n"
        assert err.splitlines() == errors
    else:
        assert out == ""
        assert _after_first_case(err) == [
            f"  warning: own {SEND}", _count(run_dir, 1, 1, 2), *errors]
    cases = json.loads((run_dir / "summary.json").read_text())["cases"]
    assert [(c["case_id"], c["complete"]) for c in cases] == [(SEND, True), (CACHED, False)]
