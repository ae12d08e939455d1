"""Whole numbers beyond a float's range in the metadata the report reads as numbers
(``cpu_count``, ``load_avg``): valid JSON, but ``float()`` of them overflows, and the
loaded-machine note crashed ``report`` with an ``OverflowError`` traceback. They are
left out with one warning line each, as out-of-range case values are."""

from __future__ import annotations

import pytest

from test_hand_edited_summary import NO_FIGURES, _edit, _report, _set, good_run  # noqa: F401

HUGE = 10 ** 400


@pytest.mark.parametrize("path, value, warning", [
    ("metadata.cpu_count", HUGE,  # as written, cut at 40
     "metadata.cpu_count is 1" + "0" * 39 + "..., not a whole number of CPUs"),
    ("metadata.load_avg", [HUGE, 1, 1],
     "metadata.load_avg is [1" + "0" * 38 + "..., not a list of load averages"),  # cut at 40
    ("metadata.load_avg", [2e15, 1, 1],
     "metadata.load_avg is [2000000000000000.0, 1, 1], not a list of load averages")])
def test_a_huge_number_in_the_metadata_is_left_out_with_one_warning(
        good_run, tmp_path, capsys, path, value, warning):
    run = _edit(good_run, tmp_path, _set(path, value))
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    assert (code, err) == (0, [f"bench.py report: warning: {run / 'summary.json'}: "
                               f"{warning} (left out)"])
    assert (tmp_path / "rep" / "report.md").exists()
