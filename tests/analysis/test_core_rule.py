"""One rule on cores for every scenario (``analysis.cores.decision``): N reader
processes (``--tp`` ranks, ``--pp`` stages, 1 for a case with one runner, 0 for the
single-process case) with N + 2 cores or more show their timings; N = 1 on exactly 2
shows them marked ``°`` with one line under the table; fewer (N >= 2 under N + 2, any
N under N + 1) withholds them. Real runs pinned with ``taskset``: decode-steady on
1 core withholds what it shows on 2, and ``--tp 1`` on 2 cores shows its timings as
decode-steady does."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from analysis_run import REPO
from ipc_bench.analysis import cores

S, M, W = cores.SHOWN, cores.MARKED, cores.WITHHELD

#: ``decision(N, cores)`` for N = 0..4 (rows) and 1..6 cores (columns).
DECISIONS = {
    0: [S, S, S, S, S, S],
    1: [W, M, S, S, S, S],
    2: [W, W, W, S, S, S],
    3: [W, W, W, W, S, S],
    4: [W, W, W, W, W, S],
}

WITHHELD_RUNNER = ("* timings left out: the scheduler and its runner need a core each, "
                   "2 in all; the run's machine had 1. Bytes and the oracles hold.")
MARKED_AA = ("° 2 cores: the scheduler and its runner had a core each and none was spare "
             "for the kernel and the harness's threads; the A/A pair send / send' in this "
             "table measures the noise this leaves.")
MARKED_RANK = ("° 2 cores: the scheduler and its rank had a core each and none was spare "
               "for the kernel and the harness's threads; no A/A pair in this table "
               "measures the noise this leaves.")


def test_the_decision_table():
    assert {n: [cores.decision(n, c) for c in range(1, 7)] for n in DECISIONS} == DECISIONS
    assert [cores.decision(n, 0) for n in range(5)] == [W] * 5
    assert cores.decision(4, None) == S  # readers on other machines: nothing counted
    assert (cores.withheld(1, 1), cores.withheld(1, 2), cores.marked(1, 2),
            cores.marked(2, 3), cores.withheld(2, 3)) == (True, False, True, False, True)


def test_the_summary_fields_of_each_kind():
    assert cores.core_fields("tp", 1, 2) == dict(
        tp_cores=2, tp_oversubscribed=False, tp_timings_withheld=False,
        tp_timings_marked=True)
    assert cores.core_fields("runner", 1, 1) == dict(
        runner_cores=1, runner_oversubscribed=True, runner_timings_withheld=True,
        runner_timings_marked=False)
    assert cores.core_fields("pp", 2, 3) == dict(
        pp_cores=3, pp_oversubscribed=False, pp_timings_withheld=True,
        pp_timings_marked=False)


def test_a_one_runner_case_follows_the_rule_at_n_1():
    one, two, three = ({"runner_cores": c, "transport": "ipc"} for c in (1, 2, 3))
    assert cores.kind_readers_and_cores(one) == ("runner", 1, 1)
    assert (cores.is_withheld(two), cores.is_marked(two)) == (False, True)
    assert (cores.is_withheld(three), cores.is_marked(three)) == (False, False)
    assert cores.footnote([one, two, three]) == WITHHELD_RUNNER
    assert cores.footnote([two, three]) is None
    # a single-process case records no runner cores: nothing to withhold or mark
    assert not cores.is_withheld({"transport": "inproc"})
    assert not cores.is_marked({"transport": "inproc"})


def test_the_marked_line_names_the_reader_and_an_a_a_pair_only_where_there_is_one():
    runner = {"runner_cores": 2}
    assert cores.marked_footnote([runner, {"runner_cores": 4}]) == (
        "° 2 cores: the scheduler and its runner had a core each and none was spare for "
        "the kernel and the harness's threads; no A/A pair in this table measures the "
        "noise this leaves.")
    assert cores.marked_footnote([dict(runner, arm="send"),
                                  dict(runner, arm="send'")]) == MARKED_AA
    assert cores.marked_footnote([{"tp": 1, "tp_cores": 2}]) == MARKED_RANK
    assert cores.marked_footnote([{"pp": 1, "pp_cores": 2}]).startswith(
        "° 2 cores: the scheduler and its stage had a core each")
    assert cores.marked_footnote([{"tp": 2, "tp_cores": 2}, {"runner_cores": 3}]) is None


def _cpus(n: int):
    return sorted(os.sched_getaffinity(0))[:n]


def _pinned_run(tmp_path: Path, cpus: list[int], args: list[str]) -> tuple[list[str], dict]:
    """``taskset -c CPUS python bench.py ARGS --quiet``: its stdout lines, stripped, and
    its summary.json."""
    out = tmp_path / "run"
    proc = subprocess.run(
        ["taskset", "-c", ",".join(map(str, cpus)), sys.executable, "bench.py", *args,
         "--steps", "20", "--warmup-steps", "2", "--num-running", "4", "--codecs",
         "msgpack", "--no-floor", "--no-hostname", "--quiet", "--output", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = [ln.strip() for ln in proc.stdout.splitlines()]
    return lines, json.loads((out / "summary.json").read_text())


def _rows(lines: list[str], transport: str) -> list[list[str]]:
    """The case table's rows over ``transport`` (its cells, split on blanks)."""
    return [ln.split() for ln in lines if len(ln.split()) == 15
            and ln.split()[2].rstrip("*°") == transport and ln.split()[3] == "20"]


needs_taskset = pytest.mark.skipif(shutil.which("taskset") is None, reason="no taskset")


@needs_taskset
def test_decode_steady_on_one_core_withholds_its_two_process_timings(tmp_path):
    lines, summary = _pinned_run(tmp_path, _cpus(1), ["--scenario", "decode-steady"])
    ipc = _rows(lines, "ipc")
    # policy codec transport steps tok/s floor x-floor s2r r2s tok prompt build enc dec step
    assert [r[:11] for r in ipc] == [
        ["send", "msgpack", "ipc*", "20", "-", "-", "-", "390", "361", "20", "0"],
        ["cached", "msgpack", "ipc*", "20", "-", "-", "-", "371", "361", "0", "0"]]
    assert [r[11:] for r in ipc] == [["-"] * 4] * 2
    inproc = _rows(lines, "inproc")  # N = 0: its one core is its own
    assert len(inproc) == 2 and all(r[4] != "-" and r[14] != "-" for r in inproc)
    assert WITHHELD_RUNNER in lines
    assert "runner gap: left out with the timings (*) of 2 cases" in lines
    assert not any("°" in ln for ln in lines)
    fields = [{k: v for k, v in c.items() if k.startswith("runner_") and "cores" in k
               or k.startswith("runner_timings")} for c in summary["cases"]]
    assert fields == [dict(runner_cores=1, runner_timings_withheld=True,
                           runner_timings_marked=False)] * 2 + [{}, {}]


@needs_taskset
@pytest.mark.skipif(len(_cpus(2)) < 2, reason="needs 2 CPUs")
def test_decode_steady_on_two_cores_marks_its_timings(tmp_path):
    lines, summary = _pinned_run(tmp_path, _cpus(2), ["--scenario", "decode-steady", "--aa",
                                                      "--no-single-process"])
    ipc = _rows(lines, "ipc")
    assert [r[:4] for r in ipc] == [["send", "msgpack", "ipc°", "20"],
                                    ["send'", "msgpack", "ipc°", "20"]]
    assert all(r[4] != "-" and r[11:] != ["-"] * 4 for r in ipc)  # shown
    assert lines.count(MARKED_AA) == 2  # under the case table and the runner gap table
    assert not any("timings left out" in ln for ln in lines)
    assert [(c["runner_cores"], c["runner_timings_withheld"], c["runner_timings_marked"])
            for c in summary["cases"]] == [(2, False, True)] * 2


@needs_taskset
@pytest.mark.skipif(len(_cpus(2)) < 2, reason="needs 2 CPUs")
def test_tp_1_on_two_cores_shows_its_timings_marked_as_decode_steady(tmp_path):
    lines, summary = _pinned_run(tmp_path, _cpus(2), ["--scenario", "tp-broadcast", "--tp",
                                                      "1", "--tp-transports", "ipc"])
    ipc = _rows(lines, "ipc")
    assert [r[:4] + r[7:11] for r in ipc] == [
        ["send", "msgpack", "ipc°", "20", "390", "361", "20", "0"],
        ["cached", "msgpack", "ipc°", "20", "371", "361", "0", "0"]]
    assert all(r[4] != "-" and r[11:] != ["-"] * 4 for r in ipc)  # shown
    # under the case table, the runner gap table and the scenario's two tables
    assert lines.count(MARKED_RANK) == 3
    assert not any("timings left out" in ln for ln in lines)
    saving = [ln.split() for ln in lines if ln.startswith("ipc°  msgpack  1  4")]
    assert len(saving) == 1 and saving[0][7] != "-"  # send's saving in encode us
    assert [(c["tp_cores"], c["tp_oversubscribed"], c["tp_timings_withheld"],
             c["tp_timings_marked"]) for c in summary["cases"]] == [(2, False, False, True)] * 2
