"""The single-process case of a ``--frontend`` run has a frontend process beside it,
busy decoding every step's outputs as a runner would be, so the cores rule
(``analysis.cores.decision``) counts it as N = 1 (``runner_readers`` 1 with
``runner_cores`` in ``summary.json``): shown on 3 cores, shown marked ``°`` on exactly 2
with a line naming the frontend, withheld on 1. A summary written before it was counted
(no ``runner_cores`` on the single-process case) is shown unmarked, as it was."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from analysis_run import REPO
from ipc_bench.analysis import cores

MARKED_FRONTEND = (
    "° 2 cores: the scheduler and its frontend had a core each and none was spare for the "
    "kernel and the harness's threads; no A/A pair in this table measures the noise this "
    "leaves.")
WITHHELD_BOTH = (
    "* timings left out: the scheduler, its runner and its frontend need a core each and a "
    "spare for the kernel and the harness's threads, 4 in all; the run's machine had 1; "
    "the scheduler and its frontend need a core each, 2 in all; the run's machine had 1. "
    "Bytes and the oracles hold.")


def _inproc(cores_: int) -> dict:
    return {"transport": "inproc", "frontend": True, "runner_readers": 1,
            "runner_cores": cores_, **cores.core_fields("runner", 1, cores_)}


def test_the_single_process_case_with_a_frontend_is_one_reader():
    one, two, three = (_inproc(c) for c in (1, 2, 3))
    assert [cores.kind_readers_and_cores(s) for s in (one, two, three)] == [
        ("frontend", 1, 1), None, None]
    assert [(cores.is_withheld(s), cores.is_marked(s)) for s in (one, two, three)] == [
        (True, False), (False, True), (False, False)]
    assert cores.footnote([one, three]) == (
        "* timings left out: the scheduler and its frontend need a core each, 2 in all; "
        "the run's machine had 1. Bytes and the oracles hold.")
    assert cores.marked_footnote([two, three]) == MARKED_FRONTEND
    # beside the two-process cases of the same run on one core
    two_process = {"transport": "ipc", "frontend": True, "runner_readers": 2,
                   "runner_cores": 1}
    assert cores.footnote([two_process, one]) == WITHHELD_BOTH
    # a table marking a one-runner case and the frontend's (two runs): "its reader"
    assert cores.marked_footnote([two, {"runner_cores": 2}]).startswith(
        "° 2 cores: the scheduler and its reader had a core each")


def test_a_single_process_summary_from_before_the_count_is_shown_as_it_was():
    old = {"transport": "inproc", "frontend": True, "codec": "none"}
    assert cores.runner_readers(old) == 1  # counted as N = 1 were its cores known
    assert cores.runner_readers({"transport": "inproc"}) == 0
    assert (cores.is_withheld(old), cores.is_marked(old), cores.footnote([old]),
            cores.marked_footnote([old])) == (False, False, None, None)


def _run(tmp_path, cpus: list[int]) -> tuple[list[str], dict]:
    out = tmp_path / "run"
    proc = subprocess.run(
        ["taskset", "-c", ",".join(map(str, cpus)), sys.executable, "bench.py",
         "--scenario", "decode-steady", "--frontend", "--steps", "20", "--warmup-steps",
         "2", "--num-running", "4", "--codecs", "msgpack", "--no-floor", "--no-hostname",
         "--quiet", "--output", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return ([ln.strip() for ln in proc.stdout.splitlines()],
            json.loads((out / "summary.json").read_text()))


def _fields(summary: dict) -> list[dict]:
    keys = ("runner_readers", "runner_cores", "runner_oversubscribed",
            "runner_timings_withheld", "runner_timings_marked")
    return [{k: c[k] for k in keys} for c in summary["cases"]
            if c["transport"] == "inproc"]


def _rows(lines: list[str]) -> list[list[str]]:
    return [ln.split() for ln in lines if len(ln.split()) == 15 and ln.split()[3] == "20"]


needs_taskset = pytest.mark.skipif(shutil.which("taskset") is None, reason="no taskset")


@needs_taskset
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")
def test_a_frontend_run_on_two_cores_marks_its_single_process_timings(tmp_path):
    lines, summary = _run(tmp_path, sorted(os.sched_getaffinity(0))[:2])
    rows = _rows(lines)
    assert [r[:3] for r in rows] == [["send", "msgpack", "ipc*"], ["cached", "msgpack", "ipc*"],
                                     ["send", "none", "inproc°"], ["cached", "none", "inproc°"]]
    assert all(r[4] != "-" and r[14] != "-" for r in rows[2:])  # shown
    assert MARKED_FRONTEND in lines
    assert _fields(summary) == [dict(runner_readers=1, runner_cores=2,
                                     runner_oversubscribed=False,
                                     runner_timings_withheld=False,
                                     runner_timings_marked=True)] * 2


@needs_taskset
def test_a_frontend_run_on_one_core_withholds_its_single_process_timings(tmp_path):
    lines, summary = _run(tmp_path, sorted(os.sched_getaffinity(0))[:1])
    rows = _rows(lines)
    assert [r[2] for r in rows] == ["ipc*", "ipc*", "inproc*", "inproc*"]
    assert [r[4] for r in rows] == ["-"] * 4 and [r[14] for r in rows] == ["-"] * 4
    assert WITHHELD_BOTH in lines
    assert not any("°" in ln for ln in lines)
    assert _fields(summary) == [dict(runner_readers=1, runner_cores=1,
                                     runner_oversubscribed=True,
                                     runner_timings_withheld=True,
                                     runner_timings_marked=False)] * 2
