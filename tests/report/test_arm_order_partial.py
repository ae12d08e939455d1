"""The arm-order line of the findings (``order_findings``) judges the complete pairs a
comparison still holds where one of its cases is missing from the summary, and ends
in words fit for the single-process block (codec ``none``), which serialises
nothing."""

from __future__ import annotations

import json
import shutil

import pytest

from analysis_run import run_bench
from test_arm_order_caveat import GRID, TAIL, _lines, _reordered

NONE_TAIL = TAIL.removesuffix("its bytes are exact whatever the order.") + (
    "its arms run in one process and serialise nothing, so it has no bytes for the "
    "order to lean.")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, shared_five_repetition_run):
    """``five``: cached against send, 5 repetitions (a copy of the session's,
    ``shared_five_repetition_run``); ``sp``: the same with the single-process block, 3
    repetitions."""
    base = tmp_path_factory.mktemp("armorder_partial")
    shutil.copytree(shared_five_repetition_run, base / "five")
    run_bench(base / "sp", [a for a in GRID if a != "--no-single-process"]
              + ["--repeat", "3"])
    return base


def test_a_comparison_missing_a_case_is_judged_by_the_pairs_it_holds(runs, tmp_path):
    run = _reordered(runs / "five", tmp_path / "gone", ["cached"] * 5)
    summary = json.loads((run / "summary.json").read_text())
    gone = next(c for c in summary["cases"] if c["arm"] == "send" and c["repetition"] == 2)
    summary["cases"].remove(gone)
    (run / "summary.json").write_text(json.dumps(summary))
    assert _lines(run) == [
        "At 4 running requests (msgpack), cached ran first in 4 of 4 pairs of cached "
        "against send, where a balanced order puts each arm first in 2: " + TAIL]


def test_the_single_process_block_has_no_bytes_to_lean(runs, tmp_path):
    run = _reordered(runs / "sp", tmp_path / "sp", ["cached"] * 3)
    lines = _lines(run)
    assert lines == [
        "At 4 running requests (msgpack), cached ran first in 3 of 3 pairs of cached "
        "against send, where a balanced order puts each arm first in 1 or 2: " + TAIL,
        "At 4 running requests (single process, no serialization), cached ran first in 3 "
        "of 3 pairs of cached against send, where a balanced order puts each arm first in "
        "1 or 2: " + NONE_TAIL]
