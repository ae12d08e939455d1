"""``--cpu-affinity``: its syntax, its refusals (one line, exit 2, nothing started), a
real two-process run whose runner is pinned, a frontend's own set, ``--tp`` ranks and
``--pp`` stages pinned, a runner started by hand that pins itself (``bench.py runner
--cpu-affinity``), and how runs that differ in it compare."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import pytest

from fault_helpers import REPO, free_base_port
from remote_launch import Launcher, bench_run
from ipc_bench import cli
from ipc_bench.harness import affinity
from ipc_bench.harness.affinity import format_cpus, parse_affinity
from ipc_bench.harness.environment import compare_settings
from ipc_bench.report import blocks

DS = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "20",
      "--warmup-steps", "2", "--policies", "send,cached", "--codecs", "msgpack",
      "--no-floor", "--quiet"]
SYNTAX = ("expected comma-separated CPU sets in process order (scheduler, runner, further "
          "ranks or stages), each a CPU N, a range N-M, or several joined by + (0+2-3)")
ALLOWED = format_cpus(os.sched_getaffinity(0))
TWO_CPUS = pytest.mark.skipif(not {0, 1} <= os.sched_getaffinity(0),
                              reason="needs CPUs 0 and 1")


def test_sets_are_read_in_process_order_and_written_back_the_same():
    sets = parse_affinity("0,1-3,0+2-3, 4 ")
    assert sets == (frozenset({0}), frozenset({1, 2, 3}), frozenset({0, 2, 3}),
                    frozenset({4}))
    assert [format_cpus(s) for s in sets] == ["0", "1-3", "0+2-3", "4"]
    assert format_cpus({5, 1, 2, 3, 7, 8}) == "1-3+5+7-8"


#: (the option's value, the scenario's other options, the error after "bench.py: error: ")
REFUSALS = [
    ("0,x", [], f"argument --cpu-affinity: {SYNTAX}, got '0,x'"),
    ("0,,1", [], f"argument --cpu-affinity: {SYNTAX}, got '0,,1'"),
    ("0,-1", [], f"argument --cpu-affinity: {SYNTAX}, got '0,-1'"),
    # a value that begins "-" and a digit is a value (was "expected one argument")
    ("-1,0", [], f"argument --cpu-affinity: {SYNTAX}, got '-1,0'"),
    ("-1", [], f"argument --cpu-affinity: {SYNTAX}, got '-1'"),
    ("-.5", [], f"argument --cpu-affinity: {SYNTAX}, got '-.5'"),
    ("", [], f"argument --cpu-affinity: {SYNTAX}, got ''"),
    ("0,3-1", [], "argument --cpu-affinity: range 3-1 runs backwards: give N-M with N <= M"),
    ("0,4096", [], "--cpu-affinity: CPU 4096 is not among those this process may run on "
     f"({ALLOWED})"),
    ("0", [], "--cpu-affinity gives 1 CPU set, but case num_running=2/send/msgpack#0 runs 2 "
     "processes (scheduler, runner): give one set per process"),
    ("0,1,0", [], "--cpu-affinity gives 3 CPU sets, but this run's cases run at most 2 "
     "processes (scheduler, runner)"),
    ("0,0", ["--transport", "tcp", "--remote-runners"],
     "--cpu-affinity gives 2 CPU sets, but this run's cases run at most 1 process "
     "(scheduler): runners on other hosts are not pinned from here (bench.py runner "
     "--cpu-affinity pins one where it starts)"),
    ("0", ["--frontend"], "--cpu-affinity gives 1 CPU set, but case "
     "num_running=2/send/msgpack#0 runs 2 processes (scheduler, runner) and a frontend: "
     "give 2 sets (the frontend inherits the scheduler's set) or 3 (the last one pins the "
     "frontend)"),
    ("0,1,1,0", ["--frontend"], "--cpu-affinity gives 4 CPU sets, but this run's cases run "
     "at most 2 processes (scheduler, runner) and a frontend: give 2 sets (the frontend "
     "inherits the scheduler's set) or 3 (the last one pins the frontend)"),
    ("0,0,0", ["--transport", "tcp", "--remote-runners", "--frontend"],
     "--cpu-affinity gives 3 CPU sets, but this run's cases run at most 1 process "
     "(scheduler) and a frontend: give 1 set (the frontend inherits the scheduler's set) "
     "or 2 (the last one pins the frontend); runners on other hosts are not pinned from "
     "here (bench.py runner --cpu-affinity pins one where it starts)"),
]


@pytest.mark.parametrize("spec,more,message", REFUSALS,
                         ids=[" ".join([r[0] or "empty", *r[1]]) for r in REFUSALS])
def test_bad_sets_are_one_line_and_exit_2_before_any_case(spec, more, message, tmp_path,
                                                           capsys):
    before = os.sched_getaffinity(0)
    code = cli.main(DS + more + ["--cpu-affinity", spec, "--output", str(tmp_path / "run")])
    out, err = capsys.readouterr()
    assert (code, err.splitlines(), out) == (2, [f"bench.py: error: {message}"], "")
    assert not (tmp_path / "run").exists()
    assert os.sched_getaffinity(0) == before  # nothing pinned


def test_a_platform_without_sched_setaffinity_is_refused(monkeypatch, tmp_path, capsys):
    monkeypatch.delattr(os, "sched_setaffinity")
    code = cli.main(DS + ["--cpu-affinity", "0,0", "--output", str(tmp_path / "run")])
    out, err = capsys.readouterr()
    assert (code, err.splitlines(), out) == (2, [
        "bench.py: error: --cpu-affinity needs os.sched_setaffinity, which this platform "
        "lacks (Linux only)"], "")


@pytest.mark.parametrize("call,process", [("pin_from_env()", "runner"),
                                          ("pin_from_env('frontend')", "frontend")])
def test_a_runner_given_a_set_it_cannot_take_says_why(call, process):
    env = dict(os.environ, IPC_BENCH_CPU_AFFINITY="4096",
               PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", "from ipc_bench.harness.affinity import "
                           f"pin_from_env; print({call})"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout == (f"cannot pin the {process} to CPUs 4096 (IPC_BENCH_CPU_AFFINITY): "
                           "[Errno 22] Invalid argument\n")


def _run(tmp_path, *more: str, base: list[str] = DS) -> dict:
    proc = bench_run([*base, *more, "--output", str(tmp_path)], timeout_s=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads((tmp_path / "summary.json").read_text())


@TWO_CPUS
def test_a_pinned_run_records_the_sets_the_kernel_reports(tmp_path):
    """Scheduler on CPU 0, runner on CPU 1: the runner's set is read back from the
    kernel (its pid) after the handshake; the single-process cases run on the
    scheduler's; without the option nothing is recorded."""
    pinned = _run(tmp_path / "pinned", "--cpu-affinity", "0,1")
    got = {c["case_id"]: c["cpus_allowed"] for c in pinned["cases"]}
    assert got == {"num_running=2/send/msgpack#0": "scheduler: 0; runner: 1",
                   "num_running=2/cached/msgpack#0": "scheduler: 0; runner: 1",
                   "num_running=2/send/none#0": "scheduler: 0",
                   "num_running=2/cached/none#0": "scheduler: 0"}
    recorded = {c["case_id"]: c["cpu_affinity"] for c in pinned["metadata"]["cases"]}
    assert recorded == {"num_running=2/send/msgpack#0": ["0", "1"],
                        "num_running=2/cached/msgpack#0": ["0", "1"],
                        "num_running=2/send/none#0": ["0"],
                        "num_running=2/cached/none#0": ["0"]}
    free = _run(tmp_path / "free", "--no-single-process")
    assert ["cpus_allowed" in c for c in free["cases"]] == [False, False]
    assert [c["cpu_affinity"] for c in free["metadata"]["cases"]] == [None, None]
    # Compared: pinning changes timings, so the tokens/s and step rows the two ran are
    # marked; not the bytes rows (the first three rows of each table).
    assert cli.main(["report", str(tmp_path / "pinned"), str(tmp_path / "free"),
                     "--output", str(tmp_path / "report"), "--no-figures"]) == 0
    md = (tmp_path / "report" / "report.md").read_text().splitlines()
    assert ("- free against pinned: case setting cpu_affinity differs: not pinned vs 0,1 "
            "(workload num_running=2)") in md
    tables = [[row.split(" | ")[0] for row in md[md.index(caption) + 4:][:3]]
              for caption in md if caption.startswith("**") and "ratio column" in caption]
    assert tables[:3] == [
        ["| num_running=2 ≠"] * 2 + ["| num_running=2"],
        ["| num_running=2"] * 3,
        ["| num_running=2 ≠"] * 2 + ["| num_running=2"]], tables
    # the effect table (cached/send of each run) last, its one msgpack row marked as
    # the timing tables' rows are: its ratio is of tokens/s, a timing
    assert len(tables) == 4 and tables[3][0] == "| num_running=2 ≠", tables
    assert md.count(blocks.TIMING_ONLY_NOTE) == 1


def test_runs_that_differ_in_their_sets_are_not_comparable():
    case = {"case_id": "num_running=2/send/msgpack#0", "labels": {"num_running": 2},
            "policy": "send", "arm": "send", "codec": "msgpack", "repetition": 0,
            "transport": "ipc", "cpu_affinity": ["0", "1"]}
    pinned = {"scenario": "decode-steady", "seed": 0, "cases": [case]}
    free = copy.deepcopy(pinned)
    free["cases"][0]["cpu_affinity"] = None
    older = copy.deepcopy(pinned)
    del older["cases"][0]["cpu_affinity"]
    line = "case setting cpu_affinity differs: 0,1 vs not pinned (workload num_running=2)"
    assert compare_settings(pinned, free) == ([line], ["num_running=2"])
    assert compare_settings(pinned, free, exact=True) == ([line], [])
    assert compare_settings(free, older) == ([], [])
    assert compare_settings(pinned, older) == ([line], ["num_running=2"])


def test_the_configuration_table_shows_the_sets_as_the_option_reads_them(tmp_path):
    from ipc_bench.report.blocks import _config_blocks

    class Results:
        metadata = {"r": {"scenario": "decode-steady", "seed": 0, "cases": [
            {"case_id": "a", "labels": {}, "policy": "send", "codec": "msgpack",
             "repetition": 0, "transport": "ipc", "cpu_affinity": ["0", "1-3"]}]}}
        status = {"r": "complete"}

    table = _config_blocks(Results(), "r")[-1]
    assert table == ("table", ["cases", "scheduler", "model", "run"],
                     [["1 case: a", "", "", "cpu_affinity=0,1-3, transport=ipc"]])


def test_the_cores_a_case_may_share_are_those_of_its_sets_together():
    assert affinity.cores_in_use((frozenset({0}), frozenset({0}))) == 1
    assert affinity.cores_in_use((frozenset({0}), frozenset({1, 2}))) == 3
    assert affinity.cores_in_use(None) == len(os.sched_getaffinity(0))


@TWO_CPUS
@pytest.mark.parametrize("spec,cores", [("0,1", 2), ("0,0", 1)])
def test_a_spinning_ring_counts_the_cores_of_the_pinned_sets(spec, cores, tmp_path):
    """The scheduler alone is on one CPU; its runner on another is not oversubscribed."""
    run = _run(tmp_path, "--transport", "shm", "--no-single-process", "--cpu-affinity", spec)
    assert [(c["shm_cores"], c["shm_oversubscribed"]) for c in run["cases"]] == \
        [(cores, cores < 2)] * 2


@TWO_CPUS
def test_a_frontend_takes_the_last_set_or_inherits_the_schedulers(tmp_path):
    """``--frontend`` with one set more than the processes: the last pins the frontend
    (read back from the kernel for its pid, recorded after the case's sets); with the
    old count it runs on the scheduler's set, recorded as well."""
    own = _run(tmp_path / "own", "--frontend", "--cpu-affinity", "0,1,1")
    assert {c["case_id"]: c["cpus_allowed"] for c in own["cases"]} == {
        "num_running=2/send/msgpack#0": "scheduler: 0; runner: 1; frontend: 1",
        "num_running=2/cached/msgpack#0": "scheduler: 0; runner: 1; frontend: 1",
        "num_running=2/send/none#0": "scheduler: 0; frontend: 1",
        "num_running=2/cached/none#0": "scheduler: 0; frontend: 1"}
    assert {c["case_id"]: c["cpu_affinity"] for c in own["metadata"]["cases"]} == {
        "num_running=2/send/msgpack#0": ["0", "1", "1"],
        "num_running=2/cached/msgpack#0": ["0", "1", "1"],
        "num_running=2/send/none#0": ["0", "1"],
        "num_running=2/cached/none#0": ["0", "1"]}
    inherited = _run(tmp_path / "inherited", "--frontend", "--no-single-process",
                     "--cpu-affinity", "0,1")
    assert [c["cpus_allowed"] for c in inherited["cases"]] == \
        ["scheduler: 0; runner: 1; frontend: 0"] * 2
    assert [c["cpu_affinity"] for c in inherited["metadata"]["cases"]] == [["0", "1"]] * 2


#: A small --tp / --pp case: null model, 20 counted steps.
SMALL = ["--num-running", "8", "--steps", "20", "--warmup-steps", "2", "--policies",
         "send,cached", "--codecs", "msgpack", "--no-floor", "--quiet"]


def _policies(base: list[str], policies: str) -> list[str]:
    """``base`` with its ``--policies`` value replaced (an option may be given once)."""
    at = base.index("--policies") + 1
    return [*base[:at], policies, *base[at + 1:]]


def _needs_two_cpus() -> None:
    allowed = os.sched_getaffinity(0)
    if len(allowed) < 2 or not {0, 1} <= allowed:
        pytest.skip(f"needs CPUs 0 and 1 among those this process may run on "
                    f"({format_cpus(allowed)})")


def test_tp_ranks_are_pinned_each_to_its_set(tmp_path):
    """``--tp 2``: the scheduler, rank 0 and rank 1 take the sets in that order."""
    _needs_two_cpus()
    run = _run(tmp_path, "--scenario", "tp-broadcast", "--tp", "2", "--tp-transports",
               "ipc", "--cpu-affinity", "0,1,0", base=SMALL)
    assert [(c["case_id"], c["cpus_allowed"], c["tp_cores"]) for c in run["cases"]] == [
        ("num_running=8,tp=2,broadcast=ipc/send/msgpack#0",
         "scheduler: 0; rank 0: 1; rank 1: 0", 2),
        ("num_running=8,tp=2,broadcast=ipc/cached/msgpack#0",
         "scheduler: 0; rank 0: 1; rank 1: 0", 2)]


def test_pp_stages_are_pinned_each_to_its_set(tmp_path):
    """``--pp 2``: the scheduler, stage 0 and stage 1 (``rank N``) in that order."""
    _needs_two_cpus()
    run = _run(tmp_path, "--scenario", "pp", "--pp", "2", "--cpu-affinity", "0,1,1",
               base=_policies(SMALL, "send"))
    assert [(c["case_id"], c["cpus_allowed"], c["pp_cores"]) for c in run["cases"]] == [
        ("num_running=8,pp=2/send/msgpack#0", "scheduler: 0; rank 0: 1; rank 1: 1", 2)]


RUNNER_SYNTAX = ("expected one CPU set: a CPU N, a range N-M, or several joined by + "
                 "(0+2-3)")
#: (bench.py runner --cpu-affinity's value, the error after "bench.py runner: error: ")
RUNNER_REFUSALS = [
    ("x", f"argument --cpu-affinity: {RUNNER_SYNTAX}, got 'x'"),
    ("0,1", f"argument --cpu-affinity: {RUNNER_SYNTAX}, got '0,1'"),
    ("-1,0", f"argument --cpu-affinity: {RUNNER_SYNTAX}, got '-1,0'"),
    ("-0-1", f"argument --cpu-affinity: {RUNNER_SYNTAX}, got '-0-1'"),
    ("", f"argument --cpu-affinity: {RUNNER_SYNTAX}, got ''"),
    ("3-1", "argument --cpu-affinity: range 3-1 runs backwards: give N-M with N <= M"),
    ("4096", "--cpu-affinity: CPU 4096 is not among those this process may run on "
     f"({ALLOWED})"),
]


@pytest.mark.parametrize("spec,message", RUNNER_REFUSALS,
                         ids=[r[0] or "empty" for r in RUNNER_REFUSALS])
def test_a_runner_started_by_hand_refuses_bad_sets_in_one_line(spec, message, capsys):
    before = os.sched_getaffinity(0)
    code = cli.main(["runner", "--connect", "tcp://127.0.0.1:9", "--cpu-affinity", spec])
    out, err = capsys.readouterr()
    assert (code, err.splitlines(), out) == (2, [f"bench.py runner: error: {message}"], "")
    assert os.sched_getaffinity(0) == before  # nothing pinned, nothing connected


def test_a_runner_started_by_hand_without_sched_setaffinity_is_refused(monkeypatch, capsys):
    monkeypatch.delattr(os, "sched_setaffinity")
    code = cli.main(["runner", "--connect", "tcp://127.0.0.1:9", "--cpu-affinity", "0"])
    out, err = capsys.readouterr()
    assert (code, err.splitlines(), out) == (2, [
        "bench.py runner: error: --cpu-affinity needs os.sched_setaffinity, which this "
        "platform lacks (Linux only)"], "")


def _run_remote(tmp_path, scheduler_args: list[str], runner_sets: list[str]) -> tuple:
    """A run with ``--remote-runners`` and one ``bench.py runner --cpu-affinity SET``
    per rank (``runner_sets``, rank order); returns (each runner's first stderr line,
    each case's ``(case_id, cpus_allowed)``). The runners' control ports are
    ``--port``'s base + rank."""
    port = free_base_port(2 + 2 * len(runner_sets))
    with Launcher() as launch:
        sched = launch.scheduler([*scheduler_args, "--transport", "tcp", "--remote-runners",
                                  "--port", str(port)], tmp_path)  # once bound
        runners = [launch.runner(port + rank, "--cpu-affinity", cpus)
                   for rank, cpus in enumerate(runner_sets)]
        errs = [r.communicate(timeout=120)[1] for r in runners]
        _, err = sched.communicate(timeout=60)
    assert (sched.returncode, err, [r.returncode for r in runners]) == \
        (0, "", [0] * len(runners)), errs
    summary = json.loads((tmp_path / "summary.json").read_text())
    return ([e.splitlines()[0].replace(f":{port}", ":PORT") for e in errs],
            [(c["case_id"], c["cpus_allowed"]) for c in summary["cases"]])


@TWO_CPUS
@pytest.mark.parametrize("scheduler_sets,recorded", [
    (["--cpu-affinity", "0"], "scheduler: 0; runner: 1"),
    ([], f"scheduler: {ALLOWED}; runner: 1")])
def test_a_runner_started_by_hand_pins_itself_and_the_case_records_its_set(
        tmp_path, scheduler_sets, recorded):
    """The runner names the set its kernel reports in its handshake reply; it is
    recorded whether the scheduler was pinned or not."""
    lines, cases = _run_remote(tmp_path, [*_policies(DS, "send"), "--no-single-process",
                                          *scheduler_sets], ["1"])
    assert lines == ["bench.py runner: connected to tcp://127.0.0.1:PORT; pinned to CPUs 1; "
                     "serving cases until the scheduler's run ends"]
    assert cases == [("num_running=2/send/msgpack#0", recorded)]


@TWO_CPUS
def test_tp_ranks_started_by_hand_record_their_own_sets(tmp_path):
    _, cases = _run_remote(tmp_path, [*_policies(SMALL, "cached"), "--scenario",
                                      "tp-broadcast", "--tp", "2", "--cpu-affinity", "0"],
                           ["1", "0"])
    assert cases == [("num_running=8,tp=2,broadcast=tcp/cached/msgpack#0",
                      "scheduler: 0; rank 0: 1; rank 1: 0")]


def test_sets_of_one_workloads_cases_are_told_apart():
    """A workload whose cases were pinned to other sets (the single process to one CPU,
    the two processes to two) lists them with ``; ``, not the comma inside a set."""
    case = {"case_id": "num_running=2/send/msgpack#0", "labels": {"num_running": 2},
            "policy": "send", "arm": "send", "codec": "msgpack", "repetition": 0,
            "transport": "ipc", "cpu_affinity": ["0", "1"]}
    alone = dict(case, case_id="num_running=2/send/none#0", codec="none",
                 transport="inproc", cpu_affinity=["0"])
    pinned = {"scenario": "decode-steady", "seed": 0, "cases": [alone, case]}
    free = copy.deepcopy(pinned)
    for c in free["cases"]:
        c["cpu_affinity"] = None
    lines, _ = compare_settings(pinned, free)
    assert lines == ["case setting cpu_affinity differs: 0; 0,1 vs not pinned (workload "
                     "num_running=2)"]
