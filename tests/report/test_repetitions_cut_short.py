"""A ``--repeat 2`` run interrupted in its last case keeps two repetitions of one
policy and one of the other: the report says so, not "One repetition per case"."""

from __future__ import annotations

import json
import shutil

from analysis_run import run_bench
from ipc_bench import cli
from ipc_bench.report.findings import ONE_REPETITION

RUN = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "20",
       "--warmup-steps", "5", "--codecs", "msgpack", "--no-single-process", "--no-floor"]
CUT = ("1 to 2 repetitions per case, but fewer than two pairs of send and cached in each "
       "workload, so no intervals: a difference of any size may be the machine's noise, "
       "which can reach tens of % between two runs of one case on a loaded machine (run "
       "with `--repeat N` for 95 % intervals).")


def test_a_repeat_run_cut_short_counts_its_repetitions(tmp_path):
    run = tmp_path / "run"
    run_bench(run, RUN + ["--repeat", "2"])
    summary = json.loads((run / "summary.json").read_text())
    last = summary["cases"][-1]
    last.update(complete=False, error="interrupted by SIGINT")
    summary.update(status="incomplete", problems=[f"{last['case_id']}: interrupted by SIGINT"])
    (run / "summary.json").write_text(json.dumps(summary))
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"), "--no-figures"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text().splitlines()
    assert f"- {CUT}" in md
    assert not any(ONE_REPETITION in line for line in md)


def test_one_repetition_per_case_is_said_as_before(tmp_path, shared_two_case_run):
    run = tmp_path / "run"
    shutil.copytree(shared_two_case_run, run)  # a run of RUN (analysis_run.TWO_CASE_ARGS)
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"), "--no-figures"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text().splitlines()
    assert f"- {ONE_REPETITION}" in md
