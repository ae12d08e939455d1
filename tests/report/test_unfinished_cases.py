"""Cases that did not finish (``complete`` false: interrupted, or failed by a runner
that died) never feed a finding, comparison or figure, and no table shows their
figures: the report and the terminal tables leave them out and name them."""

from __future__ import annotations

import json
import shutil

import pytest

from analysis_run import copy_as_another_run, shared_run
from fault_helpers import one_runner_mark
from ipc_bench import cli
from ipc_bench.analysis.results import load
from ipc_bench.analysis.stats import point_text
from ipc_bench.report import plots
from ipc_bench.report.findings import findings
from ipc_bench.report.tables import format_tables

RUN = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "40",
       "--warmup-steps", "5", "--codecs", "msgpack"]
LAST = "num_running=4/cached/none#0"


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A copy of the session's run of ``RUN`` (``shared_run``; test_extra_fields.py reads
    it too)."""
    path = tmp_path_factory.mktemp("runs") / "whole"
    shutil.copytree(shared_run(tmp_path_factory, RUN), path)
    return path


def _interrupted(run, where, error="interrupted by SIGINT"):
    """A copy of ``run`` whose last case is recorded as ``bench.py`` records an
    interrupted (or failed) one: ``complete`` false, the error, the step."""
    copy_as_another_run(run, where)
    summary = json.loads((where / "summary.json").read_text())
    case = summary["cases"][-1]
    assert case["case_id"] == LAST
    case.update(complete=False, error=error, failed_step=45)
    summary.update(status="incomplete", problems=[f"{LAST}: {error}"], failed_case=LAST)
    (where / "summary.json").write_text(json.dumps(summary))
    return where, summary


def _ipc_cost_words(ratio: float) -> str:
    """The single-process finding's reading of one repetition's tok/s ``ratio`` (single
    process over two processes, from the run's own figures): the single process faster,
    no interval to establish a cost; slower (a loaded machine can make it so), or no
    faster, no cost measurable."""
    if ratio > 1:
        return ("one repetition, no interval to tell it from noise: not established as "
                "the cost of having IPC")
    return (f"the single process was {'slower than' if ratio < 1 else 'no faster than'} "
            "the two-process case, so no cost of having IPC is measurable here")


def _section(md: str, start: str, end: str) -> str:
    return md[md.index(start):md.index(end)]


def test_the_report_leaves_an_unfinished_case_out_and_names_it(finished_run, tmp_path):
    run, summary = _interrupted(finished_run, tmp_path / "cut")
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep")]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert (f"> **Note:** This run is incomplete: {LAST}: interrupted by SIGINT. Its "
            "figures cover the cases that finished.") in md
    assert (f"> **Note:** Left out of every finding, table and figure, as it did not "
            f"finish: `{LAST}` (interrupted by SIGINT).") in md
    cases = {c["case_id"]: c for c in summary["cases"]}
    single = cases["num_running=4/send/none#0"]["output_tokens_per_s"]
    two = cases["num_running=4/send/msgpack#0"]["output_tokens_per_s"]
    step = (cases["num_running=4/send/msgpack#0"]["step_ns_mean"]
            - cases["num_running=4/send/none#0"]["step_ns_mean"]) / 1e3
    # cached's single-process case did not finish: only send is compared, with its own arm
    assert (f"- At 4 running requests, the single-process baseline (no IPC, no "
            f"serialization; with the null model, whose step computes nothing) runs, each "
            f"arm against its own two-process case{one_runner_mark()} with "
            f"msgpack, the run's only two-process codec (one repetition: one sample, no "
            f"interval; µs per step: the two-process case's mean step less the single "
            f"process's): send: "
            f"{single:,.0f} tok/s, {point_text(single / two, 2, 1.0)}x two processes "
            f"with msgpack ({two:,.0f} tok/s; its mean step "
            f"{point_text(step, 1, sign=True, grouped=True)} µs over the "
            f"single process's): against msgpack, {_ipc_cost_words(single / two)}.") in md
    body = _section(md, "## Findings", "## Configuration")
    assert "| cached | none |" not in body
    value = f"{cases[LAST]['output_tokens_per_s']:,.0f}"
    others = {f"{v:,.0f}" for c in summary["cases"] if c["case_id"] != LAST
              for v in c.values() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    if value not in others:  # another case's figure (a floor's tok/s) can print the same
        assert value not in body
    table = _section(md, "## Cases", "## Runner gap")
    assert [line.split(" | ")[1:3] for line in table.splitlines()
            if line.startswith("| 0 |")] == [["send", "msgpack"], ["cached", "msgpack"],
                                              ["send", "none"]]
    pairs = _section(md, "## cached against send", "## Cases")
    assert "| num_running=4 | none |" not in pairs


def test_findings_and_figures_read_the_finished_cases_only(finished_run, tmp_path):
    run, _ = _interrupted(finished_run, tmp_path / "cut",
                          error="runner process 4242 was killed by SIGKILL while waiting "
                                "for ModelRunnerOutput for step 45")
    res = load(run)
    assert res.unfinished() == [dict(run_id="cut", case_id=LAST, error=(
        "runner process 4242 was killed by SIGKILL while waiting for ModelRunnerOutput "
        "for step 45"))]
    done = res.finished()
    assert list(done.cases["case_id"]) == ["num_running=4/send/msgpack#0",
                                           "num_running=4/cached/msgpack#0",
                                           "num_running=4/send/none#0"]
    assert LAST not in set(done.steps["case_id"]) | set(done.requests["case_id"])
    assert LAST in set(res.steps["case_id"])  # kept in the whole tables
    assert findings(res) == findings(done)
    for figure in (plots.throughput,):  # the others draw two-process cases only
        drawn = plots.figure_png(figure(res))
        assert drawn == plots.figure_png(figure(done))
        assert drawn != plots.figure_png(figure.__wrapped__(res))  # it would show


def test_the_terminal_tables_leave_an_unfinished_case_out(finished_run, tmp_path):
    _, summary = _interrupted(finished_run, tmp_path / "cut")
    text = format_tables(summary["cases"])
    rows = [line.split()[:2] for line in text.splitlines()
            if line.split()[:1] in (["send"], ["cached"])]
    assert rows == [["send", "msgpack"], ["cached", "msgpack"], ["send", "none"],
                    ["send", "msgpack"], ["cached", "msgpack"], ["send", "none"]]  # + gaps
    assert (f"  INCOMPLETE {LAST}: interrupted by SIGINT (left out of this table and the "
            "ratios)") in text.splitlines()
    assert not [line for line in text.splitlines() if line.startswith("  cached/send (none")]
    assert [line for line in text.splitlines() if line.startswith("  cached/send (msgpack")]


def test_a_workload_with_no_finished_case_says_so():
    text = format_tables([dict(case_id="num_running=4/send/msgpack#0", scenario="decode-steady",
                               workload="num_running=4", policy="send", codec="msgpack",
                               transport="ipc", complete=False, error=None)])
    assert text.splitlines() == [
        "decode-steady  [num_running=4]  device=?", "  no case finished",
        "  INCOMPLETE num_running=4/send/msgpack#0: no reason recorded (left out of this "
        "table and the ratios)"]


def test_a_multi_run_report_counts_and_leaves_out_the_unfinished_case(finished_run, tmp_path):
    run, summary = _interrupted(finished_run, tmp_path / "cut")
    assert cli.main(["report", str(finished_run), str(run),
                     "--output", str(tmp_path / "rep"), "--no-figures"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    runs = _section(md, "## Runs", "## Side by side")
    assert [line.split(" | ")[-1] for line in runs.splitlines()
            if line.startswith(("| whole |", "| cut |"))] == [
        "4 |", "4 (1 unfinished, left out) |"]
    tok_s = _section(md, "**output tokens/s**", "**s2r payload B/step**")
    whole = summary["cases"][-1]["output_tokens_per_s"]  # the same case, finished there
    assert [line for line in tok_s.splitlines() if "| cached | none |" in line] == [
        f"| num_running=4 | cached | none | {whole:,.0f} | - | - |"]


def test_a_failed_runs_note_says_it_failed(finished_run, tmp_path):
    error = "runner process 4242 was killed by SIGKILL at step 45"
    run, summary = _interrupted(finished_run, tmp_path / "failed", error)
    summary.update(status="failed")
    (run / "summary.json").write_text(json.dumps(summary))
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert (f"> **Note:** This run failed: {LAST}: {error}. Its figures cover the cases "
            "that finished.") in md


def test_the_configuration_table_marks_the_cases_that_did_not_run_to_the_end(
        finished_run, tmp_path):
    """A run failed in its third case: that case did not finish, the fourth never ran.
    Each row counts its cases (``1 case:``) and says how they went; the finished ones
    carry no mark."""
    where = tmp_path / "failed"
    copy_as_another_run(finished_run, where)
    summary = json.loads((where / "summary.json").read_text())
    ids = [c["case_id"] for c in summary["metadata"]["cases"]]
    assert [c["case_id"] for c in summary["cases"]] == ids == [
        "num_running=4/send/msgpack#0", "num_running=4/cached/msgpack#0",
        "num_running=4/send/none#0", LAST]
    error = "runner process 4242 was killed by SIGKILL"
    summary["cases"][2].update(complete=False, error=error, failed_step=12)
    del summary["cases"][3]  # and its rows: it never ran
    for name in ("steps.csv", "requests.csv", "floor.csv", "itl.csv"):
        if (where / name).exists():
            lines = (where / name).read_text().splitlines(keepends=True)
            (where / name).write_text("".join(
                ln for ln in lines if not ln.startswith(LAST + ",")))
    summary.update(status="failed", problems=[f"{ids[2]}: {error}"], failed_case=ids[2])
    (where / "summary.json").write_text(json.dumps(summary))
    assert cli.main(["report", str(where), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 0
    config = _section((tmp_path / "rep" / "report.md").read_text(), "## Configuration",
                      "## Environment").splitlines()
    assert [line.split(" | ")[0] for line in config if line.startswith("| 1 ")] == [
        "| 1 case: num_running=4/send/msgpack#0", "| 1 case: num_running=4/cached/msgpack#0",
        "| 1 case: num_running=4/send/none#0 (did not finish)",
        f"| 1 case: {LAST} (not run)"]
    assert ("`did not finish`: started but did not finish (the run's status says why); "
            "left out of every finding, table and figure. `not run`: in the run's grid, "
            "never started: the run stopped before it.") in config
