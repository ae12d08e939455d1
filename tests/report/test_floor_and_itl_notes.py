"""Two report notes of a run that lost part of what it records: a case whose floor
replay was cut short (a signal, or the runner failing, after its last counted step)
is not said to carry measurement warnings on its steps (its step times are as
measured, only its floor's figures are absent); and the latency figure of a timed replay
whose ``itl.csv`` is cut short names only the arms its ITL panel draws and says the
other arm's ITL rows are missing from ``itl.csv``, not that the figure draws both."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from ipc_bench import cli
from ipc_bench.report import findings

#: The warning the harness writes for a case whose floor replay a SIGINT cut short
#: (``cli.execute._interrupted_after_steps``), after its 25th step.
FLOOR_CUT = ("interrupted by SIGINT while replaying the floor after step 24: the floor's "
             "figures (floor tok/s, x floor) are absent, and so are the runner's per-step "
             "columns (its report comes after the floor)")
#: The same for a runner that failed there (``cli.execute._floor_failed``).
FLOOR_FAILED = ("the runner failed while replaying the floor after step 24 (steps.csv "
                "seq: warm-up and uncounted steps included): the runner exited: the floor's "
                "figures (floor tok/s, x floor) are absent, and so are the runner's per-step "
                "columns (its report comes after the floor)")
NOISY_FLOOR = ("the standard deviation of 50-step mean floor step times is 12.7 % of their "
               "mean (> 10 %): the machine may be noisy, and the floor tok/s and x floor "
               "with it")
ON_STEPS = "carries measurement warnings on its steps"
LOST_ONE = ("1 of 2 cases lost its floor, its replay cut short: its x floor, floor tok/s "
            "and the runner's per-step columns are absent, its times not less certain (all "
            "listed under Measurement warnings); bytes are exact whatever the load.")


def test_a_floor_cut_short_is_not_a_warning_on_the_steps():
    cases = pd.DataFrame({"case_id": ["a#0", "b#0"], "warnings": [[], [FLOOR_CUT]]})
    assert findings._noise_findings(cases) == [LOST_ONE]
    assert findings._noise_findings(cases.assign(warnings=[[], [FLOOR_FAILED]])) == \
        [LOST_ONE]
    both = cases.assign(warnings=[[FLOOR_CUT], [FLOOR_FAILED]])
    assert findings._noise_findings(both) == [
        "2 of 2 cases lost their floor, their replay cut short: their x floor, floor tok/s "
        "and the runner's per-step columns are absent, their times not less certain (all "
        "listed under Measurement warnings); bytes are exact whatever the load."]
    # said after the noisy steps and floors, as one more
    mixed = pd.DataFrame({"case_id": ["a#0", "b#0", "c#0", "d#0"],
                          "warnings": [["noisy"], [NOISY_FLOOR], [FLOOR_CUT], ["noisy"]]})
    assert findings._noise_findings(mixed) == [
        "2 of 4 cases carry measurement warnings on their steps: their times, and the "
        "intervals and verdicts drawn from them, are less certain than the figures alone "
        "say; 1 more case has a noisy floor alone: its x floor and floor tok/s are less "
        "certain, its times not; 1 more case lost its floor, its replay cut short: its x "
        "floor, floor tok/s and the runner's per-step columns are absent, its times not "
        "less certain (all listed under Measurement warnings); bytes are exact whatever "
        "the load."]


def test_the_report_of_a_run_whose_floor_was_interrupted(tmp_path, shared_floor_run):
    run = tmp_path / "run"
    shutil.copytree(shared_floor_run, run)
    summary = json.loads((run / "summary.json").read_text())
    assert [c["policy"] for c in summary["cases"]] == ["send", "cached"]
    summary["cases"][0]["warnings"] = []
    summary["cases"][1]["warnings"] = [FLOOR_CUT]
    (run / "summary.json").write_text(json.dumps(summary))
    out = tmp_path / "rep"
    assert cli.main(["report", str(run), "--output", str(out), "--no-figures"]) == 0
    md = (out / "report.md").read_text()
    assert f"\n- {LOST_ONE}\n" in md
    assert ON_STEPS not in md


@pytest.fixture(scope="module")
def timed_run(shared_timed_run):
    """A real timed replay of 6 requests of 8 output tokens (7 gaps each: 42 ITL rows
    a case), send then cached, msgpack alone (conftest's ``shared_timed_run``)."""
    return shared_timed_run[0]


LATENCY = ("TTFT (from each request's intended arrival, so queueing counts) and "
           "inter-token latency distributions per arm and codec ")


def _latency_caption(run, tmp_path) -> str:
    out = tmp_path / "rep"
    assert cli.main(["report", str(run), "--output", str(out)]) == 0
    md = (out / "report.md").read_text()
    return md.split("![TTFT and ITL distributions](latency_cdfs.png)\n\n", 1)[1] \
        .split("\n", 1)[0]


def test_a_short_itl_csv_is_said_in_the_latency_caption(timed_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(timed_run, run)
    itl = run / "itl.csv"
    lines = itl.read_text().splitlines(keepends=True)
    assert len(lines) == 1 + 2 * 42 and "/send/" in lines[42] and "/cached/" in lines[43]
    itl.write_text("".join(lines[:21]))  # the header and 20 of send's 42 gaps
    assert _latency_caption(run, tmp_path) == (
        LATENCY + "(TTFT: `send` and `cached`; inter-token latency: `send`), from a timed "
        "replay. The ITL rows of `cached` are missing from itl.csv, which is short (see the "
        "loading note above). Of `send`'s 42 ITL rows, itl.csv holds only 20.")


def test_a_whole_itl_csv_keeps_its_caption(timed_run, tmp_path):
    assert _latency_caption(timed_run, tmp_path) == (
        LATENCY + "(`send` and `cached`), from a timed replay.")
