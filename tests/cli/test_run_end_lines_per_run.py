"""A report of several runs whose cases share ids compares each run's recorded run-end
lines (``run_end_arm_warnings``) with the lines the report finds for that run's own
arm, and lists each case's added lines of its own run only: before, the lines of every
run's case of one id were pooled, so two identical runs read as changed after the run
and each case carried the other run's lines as well."""

from __future__ import annotations

import pandas as pd

from ipc_bench.analysis.replay_noise import (RUN_END_FIELD, record_run_end_warnings,
                                             run_end_differences, run_noisy_arm_warnings)
from ipc_bench.analysis.results import Results
from ipc_bench.report.blocks import _case_warnings
from test_replay_noise_without_pandas import (FLOOR_LINE, SEND, WANT, _cases, _floor,
                                              _folder, _steps)


def _two_runs(tmp_path, steps_b: list[dict]) -> Results:
    """Runs ``a`` and ``b`` of the same cases, each with the lines its run's end
    recorded from the same files; ``b``'s steps as ``steps_b``."""
    cases = _cases()
    record_run_end_warnings(cases, run_noisy_arm_warnings(cases, _folder(tmp_path)))

    def frame(per_run):
        return pd.DataFrame([dict(run_id=run, **row) for run, rows in per_run
                             for row in rows])

    empty = pd.DataFrame(columns=["run_id", "case_id"])
    runs = ("a", "b")
    return Results(cases=frame([(r, cases) for r in runs]),
                   steps=frame([("a", _steps()), ("b", steps_b)]), requests=empty,
                   floor=frame([(r, _floor()) for r in runs]), itl=empty,
                   metadata={r: {} for r in runs}, status={r: "complete" for r in runs},
                   problems={r: [] for r in runs}, paths={})


def test_two_identical_runs_differ_nowhere(tmp_path):
    results = _two_runs(tmp_path, _steps())
    assert results.cases[RUN_END_FIELD].notna().sum() == 10
    assert run_end_differences(results) == []


def test_each_case_lists_its_own_runs_lines_once(tmp_path):
    added = [w for w in _case_warnings(_two_runs(tmp_path, _steps()))
             if "repetitions of its arm" in w]
    assert added == 2 * [f"`{cid}`: {line}" for cid in SEND for line in WANT[cid]]


def test_an_edited_run_is_named_in_its_lines(tmp_path):
    # run b's steps.csv edited after it ran: its third send repetition as fast as the others
    edited = [dict(row, step_ns=1000 + row["seq"] % 2)
              if row["case_id"] == SEND[2] and row["counted"] else row for row in _steps()]
    assert run_end_differences(_two_runs(tmp_path, edited)) == [
        f"`{cid}` of run `b`: the run's end printed 2 lines on the repetitions of its arm, "
        "where the report finds 1" for cid in SEND]
    assert [w for w in _case_warnings(_two_runs(tmp_path, edited)) if "floor" in w] == \
        [f"`{cid}`: {FLOOR_LINE}" for cid in SEND] * 2
