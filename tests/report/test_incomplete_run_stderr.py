"""``bench.py report`` of a run that is not complete (killed, stopped, failed) says so
on stderr, one line per such run, as ``bench.py microbench`` does
(``results.incomplete_run_line``, ``document.warn_incomplete_runs``), where it said so
only inside the report; its exit code stays 0, and a complete run beside it gets no
line."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from ipc_bench import cli
from ipc_bench.analysis import microbench
from ipc_bench.analysis.results import read_summary

SEND, CACHED = "num_running=4/send/msgpack#0", "num_running=4/cached/msgpack#0"
#: 2026-01-02 03:04:05 UTC, the time a killed run last rewrote its summary.json.
MTIME = 1767323045
REPORT_TAIL = "the report's figures cover the cases it finished"
MICROBENCH_TAIL = "the cases it did not finish are not timed"


def _copy(run: Path, where: Path, **fields) -> Path:
    """A copy of ``run`` at ``where`` with ``fields`` set in its summary.json, no end
    recorded, and the rows of its CSV files of the cases ``fields["cases"]`` leaves out
    left out too (a killed run's running case has its rows in steps.partial.csv);
    ``fields["start_time_utc"]`` goes into its metadata."""
    shutil.copytree(run, where)
    kept = [c["case_id"] for c in fields["cases"]]
    for csv in where.glob("*.csv"):
        lines = csv.read_text().splitlines(keepends=True)
        csv.write_text("".join(lines[:1] + [ln for ln in lines[1:]
                                            if ln.startswith(tuple(c + "," for c in kept))]))
    path = where / "summary.json"
    summary = json.loads(path.read_text())
    assert [c["case_id"] for c in summary["cases"]] == [SEND, CACHED]
    summary["metadata"].pop("end_time_utc", None)
    if "start_time_utc" in fields:  # said as the run's start, not MTIME
        summary["metadata"]["start_time_utc"] = fields.pop("start_time_utc")
    summary.update(comparisons=[], byte_model=[])
    summary.update(fields)
    path.write_text(json.dumps(summary))
    os.utime(path, (MTIME, MTIME))
    return where


def _report(runs: list[Path], out: Path, capsys) -> tuple[int, list[str]]:
    code = cli.main(["report", *map(str, runs), "--output", str(out), "--no-figures"])
    return code, capsys.readouterr().err.splitlines()


def test_a_run_stopped_by_sigterm_is_one_warning_line_as_microbench_words_it(
        shared_two_case_run, tmp_path, capsys):
    summary = json.loads((shared_two_case_run / "summary.json").read_text())
    stopped = dict(summary["cases"][1], complete=False)
    run = _copy(shared_two_case_run, tmp_path / "stopped", status="incomplete",
                running_case=None, failed_case=CACHED,
                problems=[f"{CACHED}: interrupted by SIGTERM"],
                cases=[summary["cases"][0], stopped])
    line = f"{run}: this run is incomplete: {CACHED}: interrupted by SIGTERM; 1 of its 2 "
    assert _report([run], tmp_path / "rep", capsys) == (
        0, [f"bench.py report: warning: {line}cases finished: {REPORT_TAIL}"])
    assert microbench.incomplete_run_text(str(run), read_summary(run)) == (
        f"{line}cases finished: {MICROBENCH_TAIL}")


def test_a_killed_and_a_failed_run_are_a_line_each(shared_two_case_run, shared_floor_run,
                                                    tmp_path, capsys):
    first = json.loads((shared_two_case_run / "summary.json").read_text())["cases"][:1]
    killed = _copy(shared_two_case_run, tmp_path / "killed", status="incomplete",
                   running_case=CACHED, failed_case=None, problems=[], cases=first,
                   start_time_utc="2026-01-02T03:04:00.5+00:00")
    problem = f"cannot write results to {tmp_path / 'failed'}: No space left on device"
    first = json.loads((shared_floor_run / "summary.json").read_text())["cases"][:1]
    failed = _copy(shared_floor_run, tmp_path / "failed", status="failed",
                   running_case=None, failed_case=CACHED, problems=[problem], cases=first)
    assert (killed / ".claimed").is_file()  # its lock let go: killed, not running
    code, err = _report([killed, failed], tmp_path / "rep", capsys)
    assert code == 0
    assert err == [
        f"bench.py report: warning: {killed}: this run is incomplete: stopped without "
        "finishing its summary (killed, or summary.json could not be written: a full "
        "disk, say): no process holds its lock, no end was recorded, summary status "
        f"incomplete, 1 of 2 cases recorded, last case {CACHED} running (the run "
        f"started 2026-01-02 03:04:00 UTC); 1 of its 2 cases finished: {REPORT_TAIL}",
        f"bench.py report: warning: {failed}: this run failed: {problem}; case {CACHED} "
        f"was running; 1 of its 2 cases finished: {REPORT_TAIL}"]


def test_a_complete_run_gets_no_line(shared_two_case_run, tmp_path, capsys):
    assert _report([shared_two_case_run], tmp_path / "rep", capsys) == (0, [])


@pytest.mark.parametrize("planned, words", [(None, "1 case finished"),
                                            (3, "1 of its 3 cases finished")])
def test_the_shared_line_counts_the_cases_planned_where_the_run_listed_them(planned, words):
    from ipc_bench.analysis.results import incomplete_run_line

    assert incomplete_run_line("r\nx", "failed", "", 1, planned, "TAIL") == (
        f"r\\nx: this run failed: no reason recorded; {words}: TAIL")
