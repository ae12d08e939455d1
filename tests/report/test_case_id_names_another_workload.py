"""A hand-edited ``summary.json`` whose case's ``case_id`` names another workload than
the case's own (``num_running=8/send/msgpack#0`` on a case of 4 running requests): the
loader leaves the case out with one line, as it does a case whose id names another arm
(``metadata_checks._arm_problem``)."""

from __future__ import annotations

import json
import shutil

import pytest

from analysis_run import load_with_warnings

SEND, CACHED = "num_running=4/send/msgpack#0", "num_running=4/cached/msgpack#0"


@pytest.fixture(scope="module")
def good_run(tmp_path_factory, shared_two_case_run):
    run = tmp_path_factory.mktemp("workload_id") / "good"
    shutil.copytree(shared_two_case_run, run)
    return run


def _edited(good_run, tmp_path, change):
    run = tmp_path / "run"
    shutil.copytree(good_run, run)
    summary = json.loads((run / "summary.json").read_text())
    assert [c["case_id"] for c in summary["cases"]] == [SEND, CACHED]
    change(summary["cases"][0])
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def test_a_case_id_naming_another_workload_leaves_the_case_out(good_run, tmp_path):
    run = _edited(good_run, tmp_path,
                  lambda case: case.update(case_id="num_running=8/send/msgpack#0"))
    results, lines = load_with_warnings(run)
    assert lines == [
        f"{run / 'summary.json'}: case 'num_running=8/send/msgpack#0' has workload "
        "\"num_running=4\", but its case_id names workload num_running=8 (left out)",
        f"{run}: case '{SEND}' has 25 rows in steps.csv and 4 rows in requests.csv, but "
        "summary.json does not list it (left out)"]
    assert list(results.cases["case_id"]) == [CACHED]


def test_a_workload_field_typed_over_leaves_the_case_out(good_run, tmp_path):
    run = _edited(good_run, tmp_path, lambda case: case.update(workload="num_running=8"))
    results, lines = load_with_warnings(run)
    assert lines == [
        f"{run / 'summary.json'}: case '{SEND}' has workload \"num_running=8\", but its "
        "case_id names workload num_running=4 (left out)"]
    assert list(results.cases["case_id"]) == [CACHED]


def test_labels_in_another_order_are_the_same_workload(good_run, tmp_path):
    """``case_id`` keeps the scenario's label order, ``workload`` sorts them."""
    def two_labels(case):
        case.update(case_id="num_running=4,b=1/send/msgpack#0", workload="b=1,num_running=4")

    run = _edited(good_run, tmp_path, two_labels)
    _, lines = load_with_warnings(run)
    assert not any("but its case_id names" in line for line in lines), lines
