"""A hand-edited ``summary.json`` whose ``metadata.start_time_utc`` (or
``end_time_utc``) is null: a run writes neither as null (the start as it starts, the
end once it ends, absent before), so null is warned and left out as ``"yesterday"``
is (``metadata_checks._METADATA_VALUES_NEVER_NULL``)."""

from __future__ import annotations

import json
import shutil

import pytest

from analysis_run import load_with_warnings


@pytest.fixture(scope="module")
def good_run(tmp_path_factory, shared_two_case_run):
    run = tmp_path_factory.mktemp("null_times") / "good"
    shutil.copytree(shared_two_case_run, run)
    return run


def _edited(good_run, tmp_path, **metadata):
    run = tmp_path / "run"
    shutil.copytree(good_run, run)
    summary = json.loads((run / "summary.json").read_text())
    summary["metadata"].update(metadata)
    (run / "summary.json").write_text(json.dumps(summary))
    return run


@pytest.mark.parametrize("value,shown", [(None, "null"), ("yesterday", '"yesterday"')])
@pytest.mark.parametrize("key", ["start_time_utc", "end_time_utc"])
def test_a_run_time_that_is_no_time_is_warned_and_left_out(good_run, tmp_path, key, value,
                                                           shown):
    run = _edited(good_run, tmp_path, **{key: value})
    results, lines = load_with_warnings(run)
    assert lines == [f"{run / 'summary.json'}: metadata.{key} is {shown}, not an ISO 8601 "
                     "time (left out)"]
    assert key not in results.metadata[run.name]


def test_the_unedited_run_warns_of_nothing(good_run):
    assert load_with_warnings(good_run)[1] == []
