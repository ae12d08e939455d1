"""A hand-edited ``summary.json`` whose case has ``case_id`` null (or missing, empty,
not a text) is said to have that, and the case's rows are said to be those of the
entry that lost its id, where the entry was said to have ``no case_id`` and its rows
to be of a case that ``summary.json does not list``, though it is listed."""

from __future__ import annotations

import json
import shutil
import warnings

import pytest

from ipc_bench.analysis.results import load

SEND = "num_running=4/send/msgpack#0"


@pytest.mark.parametrize("edit, why", [
    (lambda c: c.update(case_id=None), "case_id null, not a text"),
    (lambda c: c.pop("case_id"), "no case_id"),
    (lambda c: c.update(case_id=""), "an empty case_id"),
    (lambda c: c.update(case_id=7), "case_id 7, not a text"),
], ids=["null", "missing", "empty", "a-number"])
def test_a_case_whose_id_is_not_a_text_is_named_as_listed(shared_two_case_run, tmp_path,
                                                          edit, why):
    run = tmp_path / "run"
    shutil.copytree(shared_two_case_run, run, ignore=shutil.ignore_patterns("report"))
    summary = json.loads((run / "summary.json").read_text())
    assert summary["cases"][0]["case_id"] == SEND
    edit(summary["cases"][0])
    (run / "summary.json").write_text(json.dumps(summary))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = load(run)
    assert [str(w.message) for w in caught] == [
        f"{run / 'summary.json'}: cases[0] has {why} (left out)",
        f"{run}: case '{SEND}' has 25 rows in steps.csv and 4 rows in requests.csv, "
        f"but summary.json lists it as cases[0], which has {why} (left out)"]
    assert list(loaded.cases["case_id"]) == ["num_running=4/cached/msgpack#0"]
