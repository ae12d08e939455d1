"""The wait for a runner started by hand is said on the lines that count it, and kept.

With ``--remote-runners`` the scheduler waits for a runner started by hand in the first
case that needs it; that wait is part of the case's "for the whole case" and of the
run's "N cases run in" figures, so both lines say how much of them it was: the first
case's ``(X s for the whole case, Y s of it waiting for runners started by hand)``, the
run's ``ipc-bench: 2 cases run in X s, Y s of it waiting for runners started by hand``;
the second case, whose runner was already connected, prints as a spawned runner's. The
case's ``summary.json`` entry keeps the wait as ``runner_wait_s`` beside
``case_elapsed_s``, the figures the line rounds; a summary written before the field
loads and reports as it did, and a hand-edited negative one is refused. One late-runner
run (``late_run``) serves every test here.
"""

from __future__ import annotations

import json
import re
import shutil
import time
import warnings

import pytest

from analysis_run import copy_without_case_field
from fault_helpers import free_base_port
from ipc_bench import cli
from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsWarning
from remote_launch import START_S, Launcher

CASE = ["--scenario", "decode-steady", "--transport", "tcp", "--num-running", "4",
        "--steps", "40", "--policies", "send,cached", "--codecs", "msgpack",
        "--no-single-process"]
FIRST, SECOND = "num_running=4/send/msgpack#0", "num_running=4/cached/msgpack#0"
#: The least wait the lines must show: the test holds the runner back longer (below).
DELAY_S = 4.0
#: What the test sleeps on top of ``DELAY_S`` once the first case is running: the
#: case's own set-up before its wait begins (milliseconds) and the lines' rounding to
#: 0.1 s cannot bring a wait that long under ``DELAY_S``.
MARGIN_S = 0.5
#: How much longer than the whole second case (the same steps, its runner connected
#: already) the first case's own work (its time less its wait) may take: its first
#: handshake and the scheduler's first use of its modules, on a loaded machine. Half of
#: ``DELAY_S``: a wait measured short by more than that fails.
OWN_SPARE_S = DELAY_S / 2
WAITED = "of it waiting for runners started by hand"
#: Below this a wait is not said on the line (``cli.execute._hand_wait``).
SAID_FROM_S = 0.095


def _wait_for_running_case(summary_path, sched, case_id: str) -> None:
    """Return once ``summary.json`` names ``case_id`` as the running case (written as
    the case begins, before it waits for its runner)."""
    deadline = time.monotonic() + START_S
    while True:
        try:
            if json.loads(summary_path.read_text()).get("running_case") == case_id:
                return
        except (OSError, ValueError):  # not written yet
            pass
        assert sched.poll() is None, sched.communicate(timeout=30)[1]
        assert time.monotonic() < deadline, f"{case_id} did not begin within {START_S:g} s"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def late_run(tmp_path_factory):
    """A run of two cases whose runner, started by hand, connects ``DELAY_S +
    MARGIN_S`` seconds after the first case began: its folder and the scheduler's
    stderr."""
    port = free_base_port(3)
    run = tmp_path_factory.mktemp("late") / "run"
    with Launcher() as launch:
        sched = launch.scheduler([*CASE, "--remote-runners", "--port", str(port)], run)
        assert sched.first_line.startswith("bench.py: waiting up to "), sched.first_line
        runner = launch.runner(port, held=True)  # imported, held before it connects
        _wait_for_running_case(run / "summary.json", sched, FIRST)
        time.sleep(DELAY_S + MARGIN_S)  # the person starting it
        launch.release(runner)
        (rc, _, runner_err), (sched_rc, _, err) = launch.finish(runner, sched)
    assert (sched_rc, rc) == (0, 0), (err, runner_err)
    return run, err


def _said_s(seconds: float) -> str:
    """A case's whole time as its line writes it: to 0.1 s (``1.3``), below 0.1 s to
    two significant figures (``0.065``)."""
    return f"{seconds:.1f}" if seconds >= 0.095 else f"{seconds:.2g}"


def _cases(run) -> dict:
    """The cases of ``run``'s ``summary.json`` by their ``case_id``."""
    summary = json.loads((run / "summary.json").read_text())
    return {c["case_id"]: c for c in summary["cases"]}


def test_the_wait_for_a_runner_started_by_hand_is_said_on_the_case_and_run_lines(
        late_run):
    _, err = late_run
    lines = [line for line in err.splitlines()
             if line.startswith(("[", "ipc-bench: 2 cases run in "))]
    assert len(lines) == 3, err
    first = re.fullmatch(
        rf"\[1/2\] {re.escape(FIRST)}: 40 steps, [\d,]+ tok/s "
        rf"\((\d+\.\d) s for the whole case, (\d+\.\d) s {WAITED}\)", lines[0])
    assert first, lines
    whole, waited = (float(g) for g in first.groups())
    assert DELAY_S <= waited <= whole, lines[0]
    # the runner was connected when the second case began: its line is a spawned one's
    # (to 0.1 s, or to two significant figures below 0.1 s: ``0.065 s``)
    second = re.fullmatch(rf"\[2/2\] {re.escape(SECOND)}: 40 steps, [\d,]+ tok/s "
                          r"\((\d+\.\d+) s for the whole case\)", lines[1])
    assert second, lines
    # The first case's own work, its time less its wait, is about the second's whole
    # time (the same steps over a runner already started): not the wait's seconds
    # left in it (a wait measured short). Each figure is to 0.1 s: 0.1 s more spare.
    assert whole - waited < float(second.group(1)) + OWN_SPARE_S + 0.1, lines
    total = re.fullmatch(rf"ipc-bench: 2 cases run in (\d+\.\d) s, (\d+\.\d) s {WAITED}",
                         lines[2])
    assert total, lines
    run_s, run_waited = (float(g) for g in total.groups())
    assert waited <= run_waited <= run_s, lines


def test_the_wait_is_kept_in_the_summary_as_the_part_of_the_case_it_was(late_run):
    run, err = late_run
    cases = _cases(run)
    first, second = cases[FIRST], cases[SECOND]
    # the line's figures are the summary's, to 0.1 s
    assert (f"({first['case_elapsed_s']:.1f} s for the whole case, "
            f"{first['runner_wait_s']:.1f} s {WAITED})") in err
    assert f"({_said_s(second['case_elapsed_s'])} s for the whole case)" in err
    assert DELAY_S <= first["runner_wait_s"] < first["case_elapsed_s"]
    assert first["runner_wait_s"] == round(first["runner_wait_s"], 3)
    # The rest of the case holds at least its counted steps, which came after the
    # wait: the whole case is not the wait (the steps' mean times their count, in s).
    steps_s = first["num_steps"] * first["step_ns_mean"] / 1e9
    assert first["case_elapsed_s"] - first["runner_wait_s"] >= steps_s > 0
    assert first["case_elapsed_s"] - first["runner_wait_s"] < (
        second["case_elapsed_s"] + OWN_SPARE_S)
    # the second case's runner had connected: no wait that its line would say
    assert 0.0 <= second["runner_wait_s"] < SAID_FROM_S


def _report(run, out, capsys) -> tuple[int, list[str]]:
    code = cli.main(["report", str(run), "--output", str(out), "--no-figures"])
    return code, capsys.readouterr().err.splitlines()


def test_a_summary_from_before_runner_wait_s_loads_and_reports_alike(
        late_run, tmp_path, capsys):
    run, _ = late_run
    old = copy_without_case_field(run, tmp_path / "old", "runner_wait_s")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResultsWarning)
        assert [c.get("runner_wait_s") for c in _cases(old).values()] == [None, None]
        assert list(load(old).cases["case_id"]) == [FIRST, SECOND]
    code, new_err = _report(run, tmp_path / "new_rep", capsys)
    old_code, old_err = _report(old, tmp_path / "old_rep", capsys)
    assert (old_code, code) == (0, 0), (old_err, new_err)
    assert [line.replace(str(old), "RUN") for line in old_err] == [
        line.replace(str(run), "RUN") for line in new_err]
    assert not any("runner_wait_s" in line for line in old_err), old_err


@pytest.mark.parametrize("wait, why", [
    (-3, "runner_wait_s -3, a negative number"),
    (99, "runner_wait_s 99, more than its case_elapsed_s {elapsed} (the whole case, the "
         "wait included)")])
def test_a_hand_edited_runner_wait_s_is_refused(late_run, tmp_path, capsys, wait, why):
    run, _ = late_run
    edited = tmp_path / "edited"
    shutil.copytree(run, edited)
    summary = json.loads((edited / "summary.json").read_text())
    summary["cases"][0]["runner_wait_s"] = wait
    (edited / "summary.json").write_text(json.dumps(summary))
    _, err = _report(edited, tmp_path / "rep", capsys)
    why = why.format(elapsed=summary["cases"][0]["case_elapsed_s"])
    assert any(f"case '{FIRST}' has {why}" in line for line in err), err
