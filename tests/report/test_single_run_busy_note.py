"""A single run's report says how busy the machine was while it ran (the mean
``machine_busy_pct`` over its finished cases and its count of noisy cases), after the
note on the load at its start, in the words a report of several runs gives the run under
Runs (``blocks.machine_load_words``), not the start's load average alone."""

from __future__ import annotations

import json
import re

import pandas as pd

from ipc_bench import cli
from ipc_bench.analysis.results import Results, load
from ipc_bench.report import blocks
from ipc_bench.harness.environment import loaded_at_start
from ipc_bench.report.blocks import _state_notes

#: The loaded-start note of a run of two-process cases (as before this note).
LOADED = ("The machine was loaded when this run started, or had just been (1-minute load "
          "average 3.4 on 2 CPUs, an average that falls over about a minute): other work "
          "then may have competed with the two processes, so times and tokens/s may be "
          "noisy; bytes are exact whatever the load.")
#: The busy note under it, which leaves out the start's load average the note above gave.
BUSY = ("As this run recorded the machine's load: the machine 98.0 % busy (mean "
        "`machine_busy_pct` over 3 cases); noisy step times (`step_ns_block_cv` over 10 %) "
        "in 2 of 3 cases. The busy share counts every process, this run's own among them, "
        "so it is not other work's alone.")


def _one(cases: list[dict], md: dict) -> Results:
    empty = pd.DataFrame(columns=["run_id", "case_id"])
    frame = pd.DataFrame([dict(run_id="r", case_id=f"c{i}", codec="msgpack", complete=True,
                               num_steps=300, **c) for i, c in enumerate(cases)])
    return Results(cases=frame, steps=empty, requests=empty, floor=empty, itl=empty,
                   metadata={"r": md}, status={"r": "complete"}, problems={"r": []},
                   paths={})


def test_a_loaded_run_says_how_busy_the_machine_was_after_its_start_load():
    one = _one([dict(machine_busy_pct=96.0, step_ns_block_cv=0.3),
                dict(machine_busy_pct=98.0, step_ns_block_cv=0.2),
                dict(machine_busy_pct=100.0, step_ns_block_cv=0.05)],
               dict(load_avg=[3.4, 2.7, 2.7], cpu_count=2))
    notes = [b for b in _state_notes(one, "r") if b[0] == "note"]
    assert notes == [("note", LOADED), ("note", BUSY)]
    # the words of the run's item under a multi-run report's Runs, the same function's
    line = blocks.machine_load_line("r", blocks.machine_load(one.cases, one.metadata["r"]))
    assert line == ("`r`: the machine 98.0 % busy (mean `machine_busy_pct` over 3 cases); "
                    "1-minute load average 3.4 on 2 CPUs at its start; noisy step times "
                    "(`step_ns_block_cv` over 10 %) in 2 of 3 cases")


def test_a_quiet_start_still_says_how_busy_the_run_was():
    one = _one([dict(machine_busy_pct=55.0, step_ns_block_cv=0.05)],
               dict(load_avg=[0.2, 0.3, 0.3], cpu_count=2))
    assert _state_notes(one, "r") == [("note", (
        "As this run recorded the machine's load: the machine 55.0 % busy (mean "
        "`machine_busy_pct` over 1 case); 1-minute load average 0.2 on 2 CPUs at its "
        "start; noisy step times (`step_ns_block_cv` over 10 %) in 0 of 1 cases. The busy "
        "share counts every process, this run's own among them, so it is not other work's "
        "alone."))]


def test_a_summary_from_before_the_field_gets_no_busy_note():
    one = _one([dict(step_ns_block_cv=0.05)], dict(load_avg=[0.2, 0.3, 0.3], cpu_count=2))
    assert _state_notes(one, "r") == []


def test_the_report_of_a_small_run_gives_its_recorded_busy_share(shared_small_run, tmp_path):
    out = tmp_path / "rep"
    assert cli.main(["report", str(shared_small_run), "--no-figures", "--output",
                     str(out)]) == 0
    lines = (out / "report.md").read_text().splitlines()
    loaded = load([shared_small_run]).finished()
    run = loaded.run_ids[0]
    said = loaded_at_start(loaded.metadata[run]) is not None  # by the note above it
    words = blocks.machine_load_words(blocks.machine_load(loaded.cases,
                                                          loaded.metadata[run]),
                                      start_said=said)
    busy = float(json.loads((shared_small_run / "summary.json").read_text())
                 ["cases"][0]["machine_busy_pct"])
    assert busy > 0 and re.match(r"the machine [0-9.]+ % busy \(mean `machine_busy_pct` "
                                 r"over \d+ cases\); " + ("(?!1-minute)" if said
                                                         else "1-minute load average"),
                                 words)
    want = (f"> **Note:** As this run recorded the machine's load: {words}. The busy share "
            "counts every process, this run's own among them, so it is not other work's "
            "alone.")
    assert want in lines
    assert lines.index(want) < lines.index("## Findings")
