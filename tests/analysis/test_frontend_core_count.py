"""A ``--frontend`` case runs three busy processes (the scheduler, its runner and the
frontend, which decodes every step's outputs), so the cores rule
(``analysis.cores.decision``) counts it as N = 2 readers (``runner_readers``): its
timings are withheld below 4 cores, with a line naming the frontend, never marked
``°`` as a one-runner case on 2 cores is. The N = 1 footnote of ``--tp 1`` / ``--pp 1``
on one core states the rule as it is (N + 2 to show, exactly 2 marked)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from analysis_run import REPO
from ipc_bench.analysis import cores

WITHHELD_FRONTEND = (
    "* timings left out: the scheduler, its runner and its frontend need a core each and "
    "a spare for the kernel and the harness's threads, 4 in all; the run's machine had 2. "
    "Bytes and the oracles hold.")
REST = ("free cores, one each for them and the scheduler, a spare for the kernel and the "
        "harness's threads")


def test_a_frontend_case_is_two_readers():
    fe = {c: {"runner_readers": 2, "runner_cores": c, "transport": "ipc"} for c in (2, 3, 4)}
    assert [cores.kind_readers_and_cores(fe[c]) for c in (2, 3, 4)] == [
        ("runner", 2, 2), ("runner", 2, 3), None]
    assert not any(cores.is_marked(fe[c]) for c in (2, 3, 4))
    assert cores.footnote([fe[2], fe[4]]) == WITHHELD_FRONTEND
    assert cores.marked_footnote([fe[2], fe[3], fe[4]]) is None
    assert cores.core_fields("runner", 2, 3) == dict(
        runner_cores=3, runner_oversubscribed=False, runner_timings_withheld=True,
        runner_timings_marked=False)
    # both kinds of one-runner case in one table: a clause each
    assert cores.footnote([{"runner_cores": 1}, fe[3]]) == (
        "* timings left out: the scheduler and its runner need a core each, 2 in all; the "
        "run's machine had 1; the scheduler, its runner and its frontend need a core each "
        "and a spare for the kernel and the harness's threads, 4 in all; the run's machine "
        "had 3. Bytes and the oracles hold.")


def test_a_frontend_summary_from_before_the_count_is_ruled_on_afresh():
    """Written as N = 1 (marked on 2, shown on 3): ruled on as N = 2."""
    old = {"runner_cores": 2, "runner_timings_withheld": False, "runner_timings_marked": True,
           "frontend": True}
    assert cores.kind_readers_and_cores(old) == ("runner", 2, 2)
    assert not cores.is_marked(old) and cores.footnote([old]) == WITHHELD_FRONTEND
    three = dict(old, runner_cores=3, runner_timings_marked=False)
    assert cores.is_withheld(three)
    # without a frontend the recorded flags and the rule agree
    assert cores.is_marked({"runner_cores": 2, "runner_timings_marked": True})


def test_the_n_1_footnote_states_the_rule():
    assert cores.footnote([{"tp": 1, "tp_cores": 1}]) == (
        f"* timings left out: N ranks need N + 2 {REST} (N = 1 needs 3; on exactly 2, "
        "N = 1 is shown marked °); the run's machine had 1. Bytes and the oracles hold.")
    assert cores.footnote([{"pp": 1, "pp_cores": 1}, {"pp": 2, "pp_cores": 1}]) == (
        f"* timings left out: N stages need N + 2 {REST} (N = 1 needs 3, N = 2 needs 4; on "
        "exactly 2, N = 1 is shown marked °); the run's machine had 1. Bytes and the "
        "oracles hold.")
    # withheld at N = 1 on 2 cores under the rule before the mark: no "on exactly 2"
    assert cores.footnote([{"tp": 1, "tp_cores": 2, "tp_timings_withheld": True}]) == (
        f"* timings left out: N ranks need N + 2 {REST} (N = 1 needs 3); the run's "
        "machine had 2. Bytes and the oracles hold.")


@pytest.mark.skipif(shutil.which("taskset") is None, reason="no taskset")
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")
def test_a_frontend_run_on_two_cores_withholds_its_timings(tmp_path):
    cpus = ",".join(map(str, sorted(os.sched_getaffinity(0))[:2]))
    out = tmp_path / "run"
    proc = subprocess.run(
        ["taskset", "-c", cpus, sys.executable, "bench.py", "--scenario", "decode-steady",
         "--frontend", "--no-single-process", "--steps", "20", "--warmup-steps", "2",
         "--num-running", "4", "--codecs", "msgpack", "--no-floor", "--no-hostname",
         "--quiet", "--output", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = [ln.strip() for ln in proc.stdout.splitlines()]
    rows = [ln.split() for ln in lines if len(ln.split()) == 15 and ln.split()[3] == "20"]
    assert [r[:4] for r in rows] == [["send", "msgpack", "ipc*", "20"],
                                     ["cached", "msgpack", "ipc*", "20"]]
    assert [r[4] for r in rows] == ["-", "-"] and [r[11:] for r in rows] == [["-"] * 4] * 2
    assert WITHHELD_FRONTEND in lines
    assert not any("°" in ln for ln in lines)
    summary = json.loads((out / "summary.json").read_text())
    assert [{k: c[k] for k in ("runner_readers", "runner_cores", "runner_timings_withheld",
                               "runner_timings_marked")} for c in summary["cases"]] == [
        dict(runner_readers=2, runner_cores=2, runner_timings_withheld=True,
             runner_timings_marked=False)] * 2


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")
def test_a_frontends_own_cpu_set_counts_among_the_cores(tmp_path):
    """``--cpu-affinity A,A,B``: the scheduler and runner on A, the frontend on B: 2 cores
    (the frontend's set counted), withheld as N = 2 on 2."""
    a, b = sorted(os.sched_getaffinity(0))[:2]
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "bench.py", "--scenario", "decode-steady", "--frontend",
         "--no-single-process", "--cpu-affinity", f"{a},{a},{b}", "--steps", "20",
         "--warmup-steps", "2", "--num-running", "4", "--codecs", "msgpack", "--no-floor",
         "--no-hostname", "--quiet", "--output", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert WITHHELD_FRONTEND in [ln.strip() for ln in proc.stdout.splitlines()]
    summary = json.loads((out / "summary.json").read_text())
    assert [(c["runner_readers"], c["runner_cores"]) for c in summary["cases"]] == [(2, 2)] * 2
