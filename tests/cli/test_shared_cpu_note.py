"""``--cpu-affinity`` sets that give a case's processes fewer CPUs together than there
are processes (``0,0``: scheduler and runner on one CPU) are said at the run's start in
one ``note:`` line, kept in the metadata's notes, which the report lists: the two take
turns, so each one's times include the other's."""

from __future__ import annotations

import json
import os
import types

import pytest

from ipc_bench import cli
from ipc_bench.cli.run import shared_cpu_note

DS = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "20",
      "--warmup-steps", "2", "--codecs", "msgpack", "--no-floor"]
NOTE = ("--cpu-affinity 0,0 runs the 2 processes of 2 cases (scheduler, runner) on 1 CPU "
        "(0): they take turns on it, so each one's times include the other's and are not "
        "comparable with a run that gives each process its own CPU (bytes and the oracles "
        "hold)")


def _case(*sets, transport="ipc", tp=None, pp=None):
    return types.SimpleNamespace(cpu_affinity=tuple(frozenset(s) for s in sets) or None,
                                 transport=transport, tp=tp, pp=pp)


def test_a_scheduler_and_runner_on_one_cpu_are_said():
    cases = [_case({0}, {0}), _case({0}, {0}), _case({0}, transport="inproc")]
    assert shared_cpu_note(cases) == NOTE


def test_tp_ranks_sharing_cpus_are_said_with_the_widest_case():
    cases = [_case({0}, {1}, {1}, tp=2), _case({0}, {0}, transport="ipc")]
    assert shared_cpu_note(cases) == (
        "--cpu-affinity 0,1,1 runs the 3 processes of 2 cases (scheduler, rank 0, rank 1) "
        "on 2 CPUs (0-1): they take turns on them, so each one's times include the "
        "others' and are not comparable with a run that gives each process its own CPU "
        "(bytes and the oracles hold)")


@pytest.mark.parametrize("cases", [
    [_case({0}, {1})],  # a CPU each
    [_case({0, 1}, {0, 1})],  # two CPUs for two processes: the kernel may part them
    [_case({0}, transport="inproc")],  # one process
    [_case()],  # not pinned
])
def test_nothing_is_said_where_each_process_may_have_its_own_cpu(cases):
    assert shared_cpu_note(cases) is None


@pytest.mark.skipif(0 not in os.sched_getaffinity(0), reason="needs CPU 0")
def test_a_run_on_one_cpu_says_it_and_its_report_lists_it(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(DS + ["--cpu-affinity", "0,0", "--output", str(out)]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines[:2] == [f"ipc-bench: decode-steady, 4 cases -> {out}", f"note: {NOTE}"]
    assert json.loads((out / "summary.json").read_text())["metadata"]["notes"] == [NOTE]
    assert cli.main(["report", str(out), "--output", str(tmp_path / "report"),
                     "--no-figures"]) == 0
    md = (tmp_path / "report" / "report.md").read_text()
    assert f"Printed by the run when it started (`note:` lines):\n\n- {NOTE}\n" in md
