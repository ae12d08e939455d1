"""A summary whose ``status`` was edited to a value ``bench.py`` never writes: the line
on the run's state quotes the value found (escaped, cut, one line) and says it is read
as unknown, where it said ``status unknown`` (or printed the value raw)."""

from __future__ import annotations

import pytest

from ipc_bench.analysis.results import KILLED_OR_RUNNING, unfinished_detail

END = "2026-12-06T20:00:00+00:00"


def _summary(**kw) -> dict:
    summary = {"format_version": 1, "cases": [], "running_case": None,
               "metadata": {"cases": [{}, {}], "end_time_utc": END}}
    summary.update(kw)
    return summary


@pytest.mark.parametrize("status, said", [
    ("weird", '"weird" (read as unknown)'),
    ("x\ny", '"x\\ny" (read as unknown)'),          # one line
    ("caf\u00e9 \u202e", '"caf\u00e9 \\u202e" (read as unknown)'),  # escaped where unprintable
    ("w" * 60, '"' + "w" * 39 + '... (read as unknown)'),  # cut to 40 characters
    (5, "5 (read as unknown)"),
    (None, "null (read as unknown)"),
    ("incomplete", "incomplete"),  # a status bench.py writes: as it is
])
def test_an_edited_status_with_an_end_is_quoted(tmp_path, status, said):
    assert unfinished_detail(_summary(status=status), tmp_path) == (
        f"status {said}, but its end was recorded (end_time_utc {END}) with no problem "
        "(summary.json edited, or written by another tool), 0 of 2 cases recorded")


def test_an_edited_status_without_an_end_is_quoted(tmp_path):
    summary = _summary(status="we\nird")
    del summary["metadata"]["end_time_utc"]
    assert unfinished_detail(summary, tmp_path) == (
        f"{KILLED_OR_RUNNING}: no end was recorded, summary status \"we\\nird\" (read as "
        "unknown), 0 of 2 cases recorded")


def test_a_missing_status_is_unknown(tmp_path):
    summary = _summary()
    assert unfinished_detail(summary, tmp_path) == (
        f"status unknown, but its end was recorded (end_time_utc {END}) with no problem "
        "(summary.json edited, or written by another tool), 0 of 2 cases recorded")
