"""A timed replay's counts of what each latency is over (``ttft_count``, ``tpot_count``,
``itl_count``, ``e2e_count``: the report's p99 notes quote them), hand-edited in
``summary.json`` to another whole number: they are recounted from the case's
``requests.csv`` rows with that latency (``itl.csv``'s rows for ``itl_count``), as its
``ttft_ms_p99`` is recomputed from them, and a case whose count disagrees is left out
with one warning naming both, by the report and by ``results.load`` alike, so that the
p99 note never quotes a count its rows do not hold."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from test_hand_edited_summary import _assert_left_out, _loaded


@pytest.fixture(scope="module")
def timed_run(shared_timed_run):
    """A real timed replay of 6 requests of 8 output tokens (conftest's
    ``shared_timed_run``): (folder, send id, cached id)."""
    run, _, send, cached = shared_timed_run
    return run, send, cached


def test_a_run_records_the_counts_its_rows_hold(timed_run):
    run, _, _ = timed_run
    cases = json.loads((run / "summary.json").read_text())["cases"]
    assert [[c[f"{n}_count"] for n in ("ttft", "tpot", "itl", "e2e")] for c in cases] \
        == [[6, 6, 42, 6], [6, 6, 42, 6]]
    assert _loaded(run) == []


@pytest.mark.parametrize("key, value, rows, source", [
    ("ttft_count", 7, "6 rows with a ttft_s", "requests.csv"),
    ("ttft_count", 0, "6 rows with a ttft_s", "requests.csv"),
    ("ttft_count", 500, "6 rows with a ttft_s", "requests.csv"),
    ("tpot_count", 5, "6 rows with a tpot_s", "requests.csv"),
    ("itl_count", 50, "42 rows with an itl_s", "itl.csv"),
    ("itl_count", 1_234_567, "42 rows with an itl_s", "itl.csv"),
    ("e2e_count", 1, "6 rows with an e2e_s", "requests.csv"),
])
def test_a_count_typed_over_leaves_the_case_out(timed_run, tmp_path, capsys, key, value,
                                                rows, source):
    src, send, cached = timed_run
    run = tmp_path / "run"
    shutil.copytree(src, run)
    summary = json.loads((run / "summary.json").read_text())
    summary["cases"][0][key] = value
    (run / "summary.json").write_text(json.dumps(summary))
    line = (f"{run / source}: case '{send}' has {rows}, but summary.json has {key} "
            f"{value:,} (left out)")
    _assert_left_out(run, tmp_path, capsys, line, send, cached)


def test_a_count_of_a_latency_no_row_has_is_named_so():
    from ipc_bench.analysis.row_checks import _count_problem

    case = pd.Series({"case_id": "c", "tpot_count": 3})
    rows = pd.DataFrame({"tpot_s": [float("nan")] * 4})
    gaps = pd.DataFrame({"itl_s": [0.5, 0.25]})
    assert _count_problem(case, rows, gaps, Path("RUN"), {"itl_count": 2},
                          ["ttft", "tpot", "itl", "e2e"]) == (
        "RUN/requests.csv: case 'c' has no tpot_s in 4 rows, but summary.json has "
        "tpot_count 3 (left out)")
    agree = pd.Series({"case_id": "c", "itl_count": 2, "tpot_count": 0})
    assert _count_problem(agree, rows, gaps, Path("RUN"), {"itl_count": 2},
                          ["ttft", "tpot", "itl", "e2e"]) is None
