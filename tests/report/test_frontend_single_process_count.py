"""The loaded-machine note of a ``--frontend`` run counts its single-process case's two
processes (its engine core and the frontend) beside the other cases' three."""

from __future__ import annotations

import pandas as pd

from ipc_bench.analysis.results import Results
from ipc_bench.report.blocks import _processes_phrase, _state_notes

MIXED = ("each case's 2 to 3 processes (the scheduler, its runner and the frontend, or a "
         "single-process case's engine core and the frontend)")


def _frame(*records):
    return pd.DataFrame(list(records))


def test_a_frontend_run_with_its_single_process_case_counts_2_to_3():
    cases = _frame(dict(codec="msgpack", frontend=True), dict(codec="none", frontend=True))
    assert _processes_phrase(cases) == MIXED


def test_single_process_cases_alone_with_the_frontend_run_two():
    assert _processes_phrase(_frame(dict(codec="none", frontend=True))) == \
        "the two processes of each case (its engine core and the frontend)"


def test_the_count_follows_each_cases_own_frontend():
    cases = _frame(dict(codec="msgpack", frontend=False), dict(codec="none", frontend=True))
    assert _processes_phrase(cases) == (
        "the two processes of each case (the scheduler and its runner, or a single-process "
        "case's engine core and the frontend)")


def test_tp_cases_beside_a_single_process_frontend_case():
    cases = _frame(dict(codec="msgpack", tp=1, frontend=True),
                   dict(codec="msgpack", tp=4, frontend=True),
                   dict(codec="none", frontend=True))
    assert _processes_phrase(cases) == (
        "each case's 2 to 6 processes (the scheduler, the frontend and its N runner ranks "
        "or stages, or a single-process case's engine core and the frontend)")


def test_the_load_note_of_a_frontend_run_with_its_single_process_case():
    cases = _frame(dict(codec="msgpack", frontend=True), dict(codec="none", frontend=True))
    empty = pd.DataFrame(columns=["run_id", "case_id"])
    one = Results(cases=cases, steps=empty, requests=empty, floor=empty, itl=empty,
                  metadata={"r": dict(load_avg=[3.4, 2.7, 2.7], cpu_count=2)},
                  status={"r": "complete"}, problems={"r": []}, paths={})
    notes = [b for b in _state_notes(one, "r") if "loaded" in b[1]]
    assert notes == [("note", "The machine was loaded when this run started, or had just "
                      "been (1-minute load average 3.4 on 2 CPUs, an average that falls over "
                      f"about a minute): other work then may have competed with {MIXED}, so "
                      "times and tokens/s may be noisy; bytes are exact whatever the load.")]
