"""A SIGUSR1 sent to a run's whole process group (``kill -USR1 -PGID``; ``timeout -s
USR1`` signals its command's group too) reaches the runner and the frontend as well as
``bench.py``. They treat it as they treat SIGTERM: its default action ends them at once
(they ignore SIGINT and SIGHUP only, which a terminal sends; the scheduler decides how
the run ends, ``signals.child_of_scheduler``), and the run reports its own interrupt: the
case that finished is written whole, the running one up to its last step, one line
names the signal, exit 138, and no process of the run is left."""

from __future__ import annotations

import json
import os
import re
import signal

import pytest

from fault_helpers import (alive, bench, children, load_run, runners_of, wait_dead,
                           wait_for, without_load_note)

#: ``signals.WHERE_DEFAULT``, spelt out.
WHERE_DEFAULT = (signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM, signal.SIGVTALRM,
                 signal.SIGPROF, signal.SIGXCPU)


def _own_group() -> None:
    """A child's ``preexec_fn``: a process group of its own (as a shell's job), these
    signals at their default action, as a terminal starts a command."""
    os.setpgid(0, 0)
    for sig in WHERE_DEFAULT:
        signal.signal(sig, signal.SIG_DFL)


def _complete_cases(run_dir) -> int:
    try:
        summary = json.loads((run_dir / "summary.json").read_text())
    except (OSError, ValueError):
        return 0
    return sum(1 for c in summary.get("cases", ()) if c.get("complete"))


@pytest.mark.parametrize("extra,kids", [([], 1), (["--frontend"], 2)],
                         ids=["runner", "runner+frontend"])
def test_sigusr1_to_the_process_group_ends_the_run_as_sigterm_does(tmp_path, extra, kids):
    run_dir = tmp_path / "run"
    proc = bench(["--scenario", "decode-steady", "--num-running", "4", "--steps", "20000",
                  "--policies", "send,cached", "--codecs", "msgpack", "--model", "null",
                  "--no-single-process", "--no-floor", "--quiet", *extra,
                  "--output", str(run_dir)], preexec_fn=_own_group)
    try:
        # the first case written whole, the second one running (its rows flushed)
        wait_for(lambda: _complete_cases(run_dir) == 1
                 and (run_dir / "steps.partial.csv").exists(), what="the second case",
                 proc=proc)
        started = wait_for(lambda: len(children(proc.pid)) == kids and children(proc.pid),
                           what="the second case's children", proc=proc)
        os.killpg(proc.pid, signal.SIGUSR1)
        for pid in started:
            wait_dead(pid, timeout_s=30)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 138, err
    lines = without_load_note(err.splitlines())
    running = "num_running=4/cached/msgpack#0"
    assert len(lines) == 1, lines
    m = re.fullmatch(rf"bench\.py: {re.escape(running)}: interrupted by SIGUSR1 at step "
                     rf"(\d+) \(steps\.csv seq: warm-up and uncounted steps included\); "
                     rf"partial results: {re.escape(str(run_dir))} \(exit 138\)", lines[0])
    assert m, lines
    assert children(proc.pid) == [] and runners_of(proc.pid) == []
    assert not any(alive(pid) for pid in started)
    summary, frames = load_run(run_dir)
    assert (summary["status"], summary["problems"], summary["failed_case"]) == (
        "incomplete", [f"{running}: interrupted by SIGUSR1"], running)
    first, second = summary["cases"]
    assert (first["case_id"], first["complete"], first["error"]) == (
        "num_running=4/send/msgpack#0", True, None)
    assert (second["case_id"], second["complete"], second["error"]) == (
        running, False, "interrupted by SIGUSR1")
    recorded = sum(len(c.get("warnings") or ()) for c in summary["cases"])  # the machine's noise
    assert out.splitlines() == ([] if not recorded else [
        f"{recorded} warning{'' if recorded == 1 else 's'} recorded in "
        f"{run_dir / 'summary.json'} (not shown: --quiet)"])
    steps = frames["steps.csv"]
    mine = steps[steps["case_id"] == first["case_id"]]
    assert (len(mine), int(mine["counted"].sum())) == (first["num_total_steps"], 20000)
    assert len(steps[steps["case_id"] == running]) == second["failed_step"] == int(m.group(1))
    assert not (run_dir / "steps.partial.csv").exists()
