"""The findings' count of cases with measurement warnings: a case that lost its floor
(its floor replay cut short) and carries warnings on its steps too is counted under
both kinds, each count true, never under its step warnings alone."""

from __future__ import annotations

import json
import shutil

import pandas as pd

from ipc_bench import cli
from ipc_bench.report import findings

#: The warning the harness writes for a case whose floor replay a SIGINT cut short
#: (``cli.execute._interrupted_after_steps``), after its 25th step.
FLOOR_CUT = ("interrupted by SIGINT while replaying the floor after step 24: the floor's "
             "figures (floor tok/s, x floor) are absent, and so are the runner's per-step "
             "columns (its report comes after the floor)")
ROUGH = ("only 20 counted steps (< 100): step-time noise not measured (under 150: 3 "
         "blocks of 50) and figures are rough")
ON_STEPS = ("carry measurement warnings on their steps: their times, and the intervals "
            "and verdicts drawn from them, are less certain than the figures alone say; ")
TAIL = " (all listed under Measurement warnings); bytes are exact whatever the load."


def _said(warnings: list[list[str]]) -> list[str]:
    cases = pd.DataFrame({"case_id": [f"c#{i}" for i in range(len(warnings))],
                          "warnings": warnings})
    return findings._noise_findings(cases)


def test_a_case_that_lost_its_floor_and_warns_on_its_steps_is_counted_under_both():
    assert _said([[ROUGH], [ROUGH, FLOOR_CUT], [], []]) == [
        "2 of 4 cases " + ON_STEPS + "1 of 4 cases lost its floor, its replay cut short "
        "(also among those above): its x floor, floor tok/s and the runner's per-step "
        "columns are absent, its times no less certain for that loss" + TAIL]
    assert _said([[ROUGH, FLOOR_CUT], [ROUGH, FLOOR_CUT], [FLOOR_CUT], []]) == [
        "2 of 4 cases " + ON_STEPS + "3 of 4 cases lost their floor, their replay cut "
        "short (2 of them also among those above): their x floor, floor tok/s and the "
        "runner's per-step columns are absent, their times no less certain for that loss"
        + TAIL]
    assert _said([[ROUGH, FLOOR_CUT], [ROUGH, FLOOR_CUT]]) == [
        "2 of 2 cases " + ON_STEPS + "2 of 2 cases lost their floor, their replay cut "
        "short (both of them also among those above): their x floor, floor tok/s and the "
        "runner's per-step columns are absent, their times no less certain for that loss"
        + TAIL]
    assert _said([[ROUGH, FLOOR_CUT], [ROUGH, FLOOR_CUT], [ROUGH, FLOOR_CUT]]) == [
        "3 of 3 cases " + ON_STEPS + "3 of 3 cases lost their floor, their replay cut "
        "short (all of them also among those above): their x floor, floor tok/s and the "
        "runner's per-step columns are absent, their times no less certain for that loss"
        + TAIL]
    # none of them among the cases above: one more, as before
    assert _said([[ROUGH], [FLOOR_CUT]]) == [
        "1 of 2 cases carries measurement warnings on its steps: its times, and the "
        "intervals and verdicts drawn from them, are less certain than the figures alone "
        "say; 1 more case lost its floor, its replay cut short: its x floor, floor tok/s "
        "and the runner's per-step columns are absent, its times not less certain" + TAIL]


def test_the_report_of_a_short_run_whose_last_case_lost_its_floor(tmp_path, shared_floor_run):
    # 20 counted steps: every case warns that its figures are rough
    run = tmp_path / "run"
    shutil.copytree(shared_floor_run, run)
    summary = json.loads((run / "summary.json").read_text())
    assert [c["warnings"][:1] for c in summary["cases"]] == [[ROUGH], [ROUGH]]
    summary["cases"][1]["warnings"].append(FLOOR_CUT)
    (run / "summary.json").write_text(json.dumps(summary))
    out = tmp_path / "rep"
    assert cli.main(["report", str(run), "--output", str(out), "--no-figures"]) == 0
    md = (out / "report.md").read_text().splitlines()
    assert ("- 2 of 2 cases " + ON_STEPS + "1 of 2 cases lost its floor, its replay cut "
            "short (also among those above): its x floor, floor tok/s and the runner's "
            "per-step columns are absent, its times no less certain for that loss"
            + TAIL) in md
