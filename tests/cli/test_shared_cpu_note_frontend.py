"""The ``--cpu-affinity`` shared-CPU note with ``--frontend``: the frontend is one more
process, on its own set (the last) or on the scheduler's, which it inherits, and the
note quotes every set given. ``--frontend --cpu-affinity 0,0,0`` was said as
``--cpu-affinity 0,0`` with 2 processes though 3 take turns on CPU 0, and ``0,1`` or
``0,1,1`` (3 processes on 2 CPUs) went unsaid."""

from __future__ import annotations

import os
import types

import pytest

from ipc_bench import cli
from ipc_bench.cli.run import shared_cpu_note

TAIL = ("so each one's times include the others' and are not comparable with a run that "
        "gives each process its own CPU (bytes and the oracles hold)")


def _case(*sets, frontend_cpus=None, transport="ipc", frontend=True):
    return types.SimpleNamespace(cpu_affinity=tuple(frozenset(s) for s in sets),
                                 frontend=frontend, transport=transport, tp=None, pp=None,
                                 frontend_cpus=frontend_cpus and frozenset(frontend_cpus))


def test_a_frontend_with_its_own_set_is_counted_and_quoted():
    cases = [_case({0}, {0}, frontend_cpus={0}), _case({0}, {0}, frontend_cpus={0}),
             _case({0}, frontend_cpus={0}, transport="inproc")]
    assert shared_cpu_note(cases) == (
        "--cpu-affinity 0,0,0 runs the 3 processes of 3 cases (scheduler, runner, "
        "frontend) on 1 CPU (0): they take turns on it, " + TAIL)
    # the runner alone on CPU 1: still 3 processes on 2 CPUs
    assert shared_cpu_note([_case({0}, {1}, frontend_cpus={1})]) == (
        "--cpu-affinity 0,1,1 runs the 3 processes of 1 case (scheduler, runner, "
        "frontend) on 2 CPUs (0-1): they take turns on them, " + TAIL)
    assert shared_cpu_note([_case({0}, {0}, frontend_cpus={1})]) == (
        "--cpu-affinity 0,0,1 runs the 3 processes of 1 case (scheduler, runner, "
        "frontend) on 2 CPUs (0-1): they take turns on them, " + TAIL)


def test_a_frontend_on_the_schedulers_set_is_counted():
    cases = [_case({0}, {1}), _case({0}, {1}),
             _case({0}, transport="inproc", frontend=False)]
    assert shared_cpu_note(cases) == (
        "--cpu-affinity 0,1 runs the 3 processes of 2 cases (scheduler, runner, frontend "
        "on the scheduler's set) on 2 CPUs (0-1): they take turns on them, " + TAIL)


@pytest.mark.parametrize("cases", [
    [_case({0}, {1}, frontend_cpus={2})],  # a CPU each
    [_case({0, 1}, {2})],  # the frontend on the scheduler's two CPUs: one each
    [_case({0}, {1}, frontend=False)],  # no frontend
])
def test_nothing_is_said_where_each_process_may_have_its_own_cpu(cases):
    assert shared_cpu_note(cases) is None


@pytest.mark.skipif(not {0, 1} <= os.sched_getaffinity(0), reason="needs CPUs 0 and 1")
def test_a_frontend_run_on_two_cpus_says_it(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["--scenario", "decode-steady", "--num-running", "2", "--steps", "10",
                     "--warmup-steps", "2", "--codecs", "msgpack", "--no-floor",
                     "--no-single-process", "--frontend", "--cpu-affinity", "0,1",
                     "--output", str(out)]) == 0
    assert capsys.readouterr().err.splitlines()[1] == (
        "note: --cpu-affinity 0,1 runs the 3 processes of 2 cases (scheduler, runner, "
        "frontend on the scheduler's set) on 2 CPUs (0-1): they take turns on them, "
        + TAIL)
