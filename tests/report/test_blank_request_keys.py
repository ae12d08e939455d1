"""A timed replay's ``requests.csv`` or ``itl.csv`` row whose ``index`` (the request it
belongs to) or whose gap (``itl_s``) is an empty field is left out with one line, and
only its own case's figures over it are withheld: every other case keeps its
latencies. An index written ``0.0`` is request 0."""

from __future__ import annotations

import shutil

import pytest

from test_hand_edited_summary import _loaded
from test_latency_figures import _edit_csv, _itl_withheld


@pytest.fixture(scope="module")
def timed_run(shared_timed_run):
    """conftest's real timed replay of 6 requests of 8 output tokens: (folder, send id,
    cached id)."""
    run, _, send, cached = shared_timed_run
    return run, send, cached


def _edited(timed_run, tmp_path, name: str, column: str, value: str):
    """A copy of the run whose first row of ``name`` (the send case's) has ``column``
    set to ``value``."""
    src, send, _ = timed_run
    run = tmp_path / "run"
    shutil.copytree(src, run)

    def change(rows):
        assert rows[0]["case_id"] == send
        rows[0][column] = value

    _edit_csv(run / name, change)
    return run


@pytest.mark.parametrize("column", ["index", "itl_s"])
def test_a_blank_gap_or_request_in_itl_csv_is_left_out_and_said(timed_run, tmp_path, column):
    run = _edited(timed_run, tmp_path, "itl.csv", column, "")
    _, send, cached = timed_run
    assert _loaded(run) == [f"{run / 'itl.csv'}: 1 row has no {column} (left out)",
                            _itl_withheld(run, send, 1)]
    from ipc_bench.analysis.results import load

    cases = load(run).cases.set_index("case_id")
    assert cases.loc[cached, "itl_ms_p50"] == cases.loc[cached, "itl_ms_p50"]  # kept
    assert cases.loc[cached, "ttft_ms_p50"] == cases.loc[cached, "ttft_ms_p50"]


def test_a_blank_request_index_withholds_its_case_alone(timed_run, tmp_path):
    run = _edited(timed_run, tmp_path, "requests.csv", "index", "")
    _, send, cached = timed_run
    assert _loaded(run) == [
        f"{run / 'requests.csv'}: 1 row has no index (left out)",
        f"{run / 'requests.csv'}: case '{send}' has ttft_ms_*, tpot_ms_* and e2e_ms_* "
        "withheld (not quoted): summary.json's are over its 6 rows, 1 of them impossible "
        "(left out); its other 5 rows are loaded"]
    from ipc_bench.analysis.results import load

    cases = load(run).cases.set_index("case_id")
    assert cases.loc[cached, "e2e_ms_p50"] == cases.loc[cached, "e2e_ms_p50"]  # kept


def test_an_index_written_as_a_float_is_that_request(timed_run, tmp_path):
    run = _edited(timed_run, tmp_path, "itl.csv", "index", "0.0")
    assert _loaded(run) == []
