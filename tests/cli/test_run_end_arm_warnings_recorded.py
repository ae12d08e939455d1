"""The lines a logical-clock replay's end prints on its noisy arms come from its CSV files
read without pandas, not through ``results.load``'s checks, so an edit of those files
after the run could make them and the report's differ unseen. The run now records them
on each finished replay case (``run_end_arm_warnings``), and the report's Measurement
warnings say, case by case, where its own (from the files as loaded and checked)
differ."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

from ipc_bench.analysis.replay_noise import (RUN_END_FIELD, record_run_end_warnings,
                                             run_end_differences, run_noisy_arm_warnings)
from ipc_bench.analysis.results import Results, load
from ipc_bench.cli import execute
from ipc_bench.report.blocks import RUN_END_NOTE, _warning_blocks
from ipc_bench.report.render import plain_text
from test_replay_noise_without_pandas import (CACHED, FLOOR_LINE, SEND, WANT, _cases, _floor,
                                              _folder, _steps)

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO.parent / "shared" / "traces" / "AzureLLMInferenceTrace_conv.csv"


def _results(cases: list[dict], steps: list[dict]) -> Results:
    def frame(rows):
        return pd.DataFrame([dict(run_id="r", **row) for row in rows])

    empty = pd.DataFrame(columns=["run_id", "case_id"])
    return Results(cases=frame(cases), steps=frame(steps), requests=empty,
                   floor=frame(_floor()), itl=empty, metadata={"r": {}},
                   status={"r": "complete"}, problems={"r": []}, paths={})


def test_the_run_records_its_lines_and_the_report_says_where_its_own_differ(tmp_path):
    cases = _cases()
    record_run_end_warnings(cases, run_noisy_arm_warnings(cases, _folder(tmp_path)))
    assert {c["case_id"]: c.get(RUN_END_FIELD) for c in cases} == {
        SEND[0]: WANT[SEND[0]], SEND[1]: WANT[SEND[1]], SEND[2]: WANT[SEND[2]],
        CACHED[0]: [], CACHED[1]: [], CACHED[2]: None}  # CACHED[2] did not finish
    assert run_end_differences(_results(cases, _steps())) == []
    # steps.csv edited after the run: the third send repetition as fast as the others
    edited = [dict(row, step_ns=1000 + row["seq"] % 2)
              if row["case_id"] == SEND[2] and row["counted"] else row for row in _steps()]
    results = _results(cases, edited)
    differ = [f"`{cid}`: the run's end printed 2 lines on the repetitions of its arm, "
              "where the report finds 1" for cid in SEND]
    assert run_end_differences(results) == differ
    blocks = _warning_blocks(results, 2)
    assert blocks[-2:] == [("p", RUN_END_NOTE), ("ul", differ)]
    assert [f"`{cid}`: {FLOOR_LINE}" for cid in SEND] == \
        [w for w in blocks[2][1] if "floor" in w]
    # where the report's differ only in their figures
    cases[0][RUN_END_FIELD] = [WANT[SEND[0]][0].replace("40.3", "41.0"), FLOOR_LINE]
    assert run_end_differences(_results(cases, _steps())) == [
        f"`{SEND[0]}`: the run's end printed 2 lines on the repetitions of its arm, where "
        "the report finds 2 with other figures"]


def test_a_summary_without_the_field_or_with_another_value_is_not_compared():
    cases = _cases()
    assert run_end_differences(_results(cases, _steps())) == []
    cases[0][RUN_END_FIELD] = "not a list"
    assert run_end_differences(_results(cases, _steps())) == []


def _reorder(run_dir: Path) -> None:
    """Put each repetition's counted step times in another order (the first
    ascending, the second descending), which keeps every figure the loader's checks
    recompute (sums, means, medians) and changes every block mean."""
    path = run_dir / "steps.csv"
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for suffix, backwards in (("#0", False), ("#1", True)):
        mine = [r for r in rows if r["case_id"].endswith(suffix) and r["counted"] == "1"]
        for row, value in zip(mine, sorted((int(r["step_ns"]) for r in mine),
                                           reverse=backwards)):
            row["step_ns"] = str(value)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _report_differences(run_dir: Path) -> list[str]:
    done = subprocess.run([sys.executable, "bench.py", "report", str(run_dir)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    text = (run_dir / "report" / "report.md").read_text()
    if RUN_END_NOTE not in text:
        return []
    after = text.split(RUN_END_NOTE, 1)[1].strip().split("\n\n", 1)[0]
    return [line.removeprefix("- ") for line in after.splitlines()]


@pytest.mark.skipif(not TRACE.is_file(), reason="no Azure conv trace beside the checkout")
def test_a_replay_records_what_its_end_printed_and_its_report_checks_it(tmp_path):
    run_dir = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "bench.py", "--scenario", "azure-conv", "--trace", str(TRACE),
         "--max-requests", "10", "--repeat", "2", "--model", "null", "--codecs",
         "msgpack", "--policies", "send", "--no-single-process", "--no-floor",
         "--output", str(run_dir)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    ids = [c["case_id"] for c in summary["cases"]]
    assert ids == [f"trace=azure-conv:10/send/msgpack#{r}" for r in range(2)]
    # the lines the run's end found, each kind in full once and in short after it
    # (``_Run._arm_lines``), recorded whole
    recorded = {c["case_id"]: c[RUN_END_FIELD] for c in summary["cases"]}
    lines, _ = execute._Run(run_dir=run_dir, writer=None, quiet=False, num_cases=2,
                            progress_bar=False)._arm_lines(recorded)
    assert [line for line in done.stderr.splitlines()
            if any(line.startswith(f"warning: {cid}: ") for cid in ids)] == lines
    assert all(plain_text(w) in "\n".join(lines) for w in recorded[ids[0]])
    assert _report_differences(run_dir) == []  # the files as the run left them
    _reorder(run_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = run_end_differences(load(run_dir))
    assert _report_differences(run_dir) == expected
