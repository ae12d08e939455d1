"""The times a report gives a run that recorded no end: the run's recorded start
(``start_time_utc``), not ``summary.json``'s modification time, which a copy of the
folder (``cp -r``) sets to when it was copied (a run killed at 13:16:16 was said to be
running since 13:29:24, the copy's time); a file's time, where it is all there is, is
said to be one."""

from __future__ import annotations

import datetime
import json
import os

from ipc_bench.analysis.results import unfinished_detail

CASE = "num_running=4/send/msgpack#0"
#: 2026-12-06 13:29:24 UTC: when the folder was copied.
COPIED = datetime.datetime(2026, 12, 6, 13, 29, 24, tzinfo=datetime.timezone.utc).timestamp()
STATE = ("stopped without finishing its summary (killed, or summary.json could not be "
         "written) or still running: no end was recorded, summary status incomplete, "
         "0 of 2 cases recorded")


def _copied_run(tmp_path, metadata: dict) -> dict:
    summary = {"status": "incomplete", "running_case": CASE, "cases": [],
               "metadata": {**metadata, "cases": [CASE, "num_running=4/cached/msgpack#0"]}}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "steps.partial.csv").write_text("case_id,seq\nx,0\nx,1\nx,2\n")
    for name in ("summary.json", "steps.partial.csv"):
        os.utime(tmp_path / name, (COPIED, COPIED))
    return summary


def test_a_copied_killed_run_is_said_to_have_started_at_its_recorded_start(tmp_path):
    summary = _copied_run(tmp_path, {"start_time_utc": "2026-12-06T13:16:14.52+00:00"})
    assert unfinished_detail(summary, tmp_path) == (
        f"{STATE}, last case {CASE} running (the run started 2026-12-06 13:16:14 UTC), "
        "steps.partial.csv holds 3 rows of it (its modification time 2026-12-06 13:29:24 "
        "UTC)")


def test_a_run_without_a_start_says_the_time_is_the_file_s(tmp_path):
    for metadata in ({}, {"start_time_utc": "yesterday"}):
        summary = _copied_run(tmp_path, metadata)
        assert unfinished_detail(summary, tmp_path) == (
            f"{STATE}, last case {CASE} running since 2026-12-06 13:29:24 UTC "
            "(summary.json's modification time), steps.partial.csv holds 3 rows of it "
            "(its modification time 2026-12-06 13:29:24 UTC)")
