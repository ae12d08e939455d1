"""A paired comparison of cases whose timings are shown marked ``°`` (N = 1 on exactly
2 cores: ``analysis.cores``) carries the mark: ``summary.json``'s ``comparisons`` entry
records the ``°`` line as ``timings_marked``, the terminal's comparison block puts the
mark after its codec and the line under its table, the ratio line under the case table
puts it after its codec, and the report's findings, findings table and cached against
send table mark the pair's timings and say why once. A comparison recorded before the
mark is given it from its cases. A comparison of a withheld case prints no timing: the
single-process baseline's finding is not drawn against withheld two-process cases."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from analysis_run import REPO
from ipc_bench import cli
from ipc_bench.analysis import cores
from ipc_bench.analysis.stats import compare_cases, with_timings_marked
from ipc_bench.report.tables import format_comparisons

MARKED_RUNNER = (
    "° 2 cores: the scheduler and its runner had a core each and none was spare for the "
    "kernel and the harness's threads, in the cases whose timings are compared here.")
MARKED_FRONTEND = MARKED_RUNNER.replace("its runner", "its frontend")


def _case(policy: str, rep: int, n_cores: int, **kw) -> dict:
    """A one-runner decode-steady case summary with round numbers."""
    send = policy == "send"
    s = dict(scenario="decode-steady", workload="num_running=8", case_id=f"{policy}#{rep}",
             policy=policy, arm=policy, codec="msgpack", transport="ipc", model="null",
             repetition=rep, complete=True, num_steps=100, num_running=8,
             runner_readers=1, **cores.core_fields("runner", 1, n_cores),
             output_tokens_per_s=50_000.0 + 100 * rep + (0 if send else 900),
             sched_to_runner_payload_bytes_per_step=400.0 if send else 380.0,
             runner_to_sched_payload_bytes_per_step=360.0,
             build_ns_per_step=10_000.0 + 10 * rep + (900 if send else 0),
             encode_ns_per_step=5_000.0 + 10 * rep, decode_ns_per_step=6_000.0 + 10 * rep,
             step_ns_mean=160_000.0 + 100 * rep + (900 if send else 0))
    s.update(kw)
    return s


def _cases(n_cores: int, **kw) -> list[dict]:
    return [_case(p, rep, n_cores, **kw) for p in ("send", "cached") for rep in range(3)]


def test_a_comparison_of_marked_cases_records_and_prints_the_mark():
    (entry,) = compare_cases(_cases(2))
    assert entry["timings_marked"] == MARKED_RUNNER
    assert "timings_withheld" not in entry and "step_ns_mean" in entry["metrics"]
    lines = format_comparisons([entry]).splitlines()
    assert lines[1].startswith("cached vs send  [num_running=8]  msgpack°: cached/send ")
    assert lines[-1] == MARKED_RUNNER
    # enough cores: nothing marked; one core: withheld, no timing compared, no mark
    (shown,) = compare_cases(_cases(3))
    assert "timings_marked" not in shown and "timings_withheld" not in shown
    assert "msgpack:" in format_comparisons([shown]).splitlines()[1]
    (held,) = compare_cases(_cases(1))
    assert "timings_marked" not in held
    assert sorted(held["metrics"]) == ["runner_to_sched_payload_bytes_per_step",
                                       "sched_to_runner_payload_bytes_per_step"]
    assert "°" not in format_comparisons([held])


def test_the_single_process_case_with_a_frontend_names_it():
    cases = _cases(2, transport="inproc", codec="none", frontend=True)
    (entry,) = compare_cases(cases)
    assert entry["timings_marked"] == MARKED_FRONTEND


def test_a_comparison_recorded_before_the_mark_is_given_it():
    cases = _cases(2)
    (entry,) = compare_cases(cases)
    old = {k: v for k, v in entry.items() if k != "timings_marked"}
    assert with_timings_marked(old, cases)["timings_marked"] == MARKED_RUNNER
    # only its own arms and repetitions count
    assert "timings_marked" not in with_timings_marked(
        dict(old, repetitions=[]), cases)
    three = _cases(3)
    (shown,) = compare_cases(three)
    assert with_timings_marked(shown, three) is shown


def _run(tmp_path, cpus: list[int], *args: str) -> tuple[list[str], dict, list[str]]:
    """``taskset -c CPUS bench.py --scenario decode-steady ARGS``: its stdout lines, its
    summary.json and its report.md's lines (``bench.py report --no-figures``)."""
    out = tmp_path / "run"
    proc = subprocess.run(
        ["taskset", "-c", ",".join(map(str, cpus)), sys.executable, "bench.py",
         "--scenario", "decode-steady", *args, "--steps", "20", "--warmup-steps", "2",
         "--num-running", "4", "--codecs", "msgpack", "--no-floor", "--no-hostname",
         "--repeat", "2", "--quiet", "--output", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert cli.main(["report", str(out), "--no-figures", "--output",
                     str(tmp_path / "report")]) == 0
    return ([ln.strip() for ln in proc.stdout.splitlines()],
            json.loads((out / "summary.json").read_text()),
            (tmp_path / "report" / "report.md").read_text().splitlines())


needs_two = [pytest.mark.skipif(shutil.which("taskset") is None, reason="no taskset"),
             pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")]


@needs_two[0]
@needs_two[1]
def test_a_run_on_two_cores_marks_its_comparisons_everywhere(tmp_path):
    lines, summary, report = _run(tmp_path, sorted(os.sched_getaffinity(0))[:2])
    # summary.json: the two-process pair marked, the single process's not (N = 0)
    assert [(c["codec"], c.get("timings_marked")) for c in summary["comparisons"]] == [
        ("msgpack", MARKED_RUNNER), ("none", None)]
    # the terminal: the ratio line, the comparison block's title and its last line
    assert any(ln.startswith("cached/send (msgpack°; paired by repetition") for ln in lines)
    assert any(ln.startswith("cached/send (none; paired by repetition") for ln in lines)
    assert any(ln.startswith("cached vs send  [num_running=4]  msgpack°: ") for ln in lines)
    assert any(ln.startswith("cached vs send  [num_running=4]  none: ") for ln in lines)
    assert lines.count(MARKED_RUNNER) == 1
    # the report: findings, the findings table, the pair table and their ° lines
    assert any(ln.startswith("- At 4 running requests (msgpack°), cached sends 20 fewer "
                             "bytes per step") for ln in report)
    assert any(ln.startswith("- At 4 running requests (single process, no serialization),")
               for ln in report)
    assert any(ln.startswith("| num_running=4 | msgpack° | 20 (5.0 %) |") for ln in report)
    assert f"- `°` {MARKED_RUNNER[2:]}" in report
    pair = [ln.split(" | ")[1:3] for ln in report if ln.startswith("| num_running=4 | ")
            and len(ln.split(" | ")) == 8]
    assert ["msgpack°", "output tokens/s"] in pair and ["msgpack°", "build µs/step"] in pair
    assert ["msgpack", "s2r payload B/step"] in pair  # bytes: exact, unmarked
    assert ["none", "output tokens/s"] in pair
    caption = next(ln for ln in report if ln.startswith("send, cached: each arm's"))
    assert f" prints). `°` {MARKED_RUNNER[2:]} " in caption


@needs_two[0]
@needs_two[1]
def test_a_frontend_run_on_two_cores_marks_the_single_process_and_withholds_the_rest(
        tmp_path):
    lines, summary, report = _run(tmp_path, sorted(os.sched_getaffinity(0))[:2],
                                  "--frontend")
    marks = {c["codec"]: (c.get("timings_marked"), "timings_withheld" in c)
             for c in summary["comparisons"]}
    assert marks == {"msgpack": (None, True), "none": (MARKED_FRONTEND, False)}
    assert any(ln.startswith("cached vs send  [num_running=4]  none°: ") for ln in lines)
    assert MARKED_FRONTEND in lines
    assert any(ln.startswith("- At 4 running requests (single process, no serialization°), "
                             "cached ") for ln in report)
    assert f"- `°` {MARKED_FRONTEND[2:]}" in report
    # the two-process cases are withheld: no single-process baseline line against them
    assert not any("the single-process baseline" in ln for ln in report)
    assert not any("two processes with msgpack" in ln for ln in report)
