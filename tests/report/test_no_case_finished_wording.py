"""A multi-run report's machine-load line says why a run recorded no
``machine_busy_pct``: a run that finished no case (its runner killed in its first case)
recorded nothing to read, whatever its age; a run whose finished cases lack the field
was written before it existed. Neither is called "an older run" where it is not."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd

from analysis_run import REPO, bench_in_process, run_bench
from ipc_bench.report.blocks import machine_load_blocks, machine_load_line

NAN = math.nan
QUIET = ("`a`: the machine 60.0 % busy (mean `machine_busy_pct` over 1 case); 1-minute "
         "load average 1.5 on 2 CPUs at its start; step-time noise not measured (no "
         "case counted 150 steps, the 3 blocks of 50 `step_ns_block_cv` needs)")


def _results(rows: list[dict], finished: set[str]) -> SimpleNamespace:
    """Two runs' cases ``rows``; ``finished()`` keeps those of the ``finished`` runs."""
    md = {r: {"cpu_count": 2, "load_avg": [1.5]} for r in ("a", "b")}
    table = pd.DataFrame(rows)
    out = SimpleNamespace(run_ids=["a", "b"], cases=table, metadata=md)
    done = SimpleNamespace(run_ids=["a", "b"], cases=table[table["run_id"].isin(finished)],
                           metadata=md)
    out.finished = lambda: done
    return out


def test_a_run_that_finished_no_case_is_not_called_older():
    # b's only case did not finish: it is left out before its load is read
    results = _results([dict(run_id="a", case_id="c0", machine_busy_pct=60.0,
                             step_ns_block_cv=NAN),
                        dict(run_id="b", case_id="c0", machine_busy_pct=NAN,
                             step_ns_block_cv=NAN)], finished={"a"})
    assert machine_load_blocks(results)[1] == ("ul", [
        QUIET, "`b`: not recorded (no case finished, so none recorded `machine_busy_pct`)"])


def test_a_run_whose_finished_cases_lack_the_field_was_written_before_it():
    results = _results([dict(run_id="a", case_id="c0", machine_busy_pct=60.0,
                             step_ns_block_cv=NAN),
                        dict(run_id="b", case_id="c0", machine_busy_pct=NAN,
                             step_ns_block_cv=NAN)], finished={"a", "b"})
    assert machine_load_blocks(results)[1] == ("ul", [
        QUIET, "`b`: not recorded (`machine_busy_pct` absent from its finished cases: a "
               "summary written before the field existed)"])


def test_the_line_without_a_count_of_finished_cases_reads_as_before_the_field():
    assert machine_load_line("r", None) == (
        "`r`: not recorded (`machine_busy_pct` absent from its finished cases: a summary "
        "written before the field existed)")
    assert machine_load_line("r", None, 0) == (
        "`r`: not recorded (no case finished, so none recorded `machine_busy_pct`)")


def _children(pid: int) -> list[int]:
    """The pids of ``pid``'s child processes (``/proc/*/stat``'s parent field)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(entry.name))
    return out


def _runner_killed_in_first_case(path: Path, tmpdir: Path) -> Path:
    """A decode-steady run into ``path`` whose runner process (the child of bench.py)
    is SIGKILLed once its first case's ``steps.partial.csv`` holds rows; bench.py
    then fails the run. Returns ``path``."""
    proc = subprocess.Popen(
        [sys.executable, "bench.py", "--scenario", "decode-steady", "--num-running", "4",
         "--steps", "100000", "--no-single-process", "--codecs", "msgpack", "--policies",
         "send", "--quiet", "--output", str(path)],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env=dict(os.environ, TMPDIR=str(tmpdir)))
    partial = path / "steps.partial.csv"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (
                partial.is_file() and partial.read_bytes().count(b"\n") > 2
                and _children(proc.pid)):
            time.sleep(0.1)
        for child in _children(proc.pid):
            os.kill(child, signal.SIGKILL)
        assert proc.wait(timeout=60) != 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return path


def test_the_report_of_a_run_whose_runner_was_killed_in_its_first_case(tmp_path):
    a = tmp_path / "runA"
    run_bench(a, ["--scenario", "decode-steady", "--num-running", "4", "--steps", "120",
                  "--no-single-process", "--codecs", "msgpack"])
    b = _runner_killed_in_first_case(tmp_path / "runB", tmp_path)
    # the machine-load note stands where a run started loaded: say run A did, whatever
    # this machine's load
    summary = json.loads((a / "summary.json").read_text())
    md = summary["metadata"]
    md["load_avg"] = [float(md["cpu_count"])] * 3
    (a / "summary.json").write_text(json.dumps(summary))
    out = tmp_path / "rep"
    proc = bench_in_process(["report", str(a), str(b), "--no-figures", "--output",
                             str(out)])  # cli.main, in this process
    assert proc.returncode == 0, proc.stderr
    lines = (out / "report.md").read_text().splitlines()
    assert [ln for ln in lines if ln.startswith("- `runB`: ")] == [
        "- `runB`: not recorded (no case finished, so none recorded `machine_busy_pct`)"]
    assert not [ln for ln in lines if "an older run" in ln]
