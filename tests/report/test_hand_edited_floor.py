"""A hand-edited floor: a ``summary.json`` floor figure (floor median or mean
``floor_step_ns``, ``floor_output_tokens_per_s``, ``step_to_floor_ratio``) typed over,
or a ``floor.csv`` row's ``floor_step_ns`` edited, is not what the case's floor rows
give (``row_checks._floor_problem``): the case is left out with one warning naming the
folder's file, the case, the figure and both values, in the report and in
``results.load``; an unedited run loads with no warning."""

from __future__ import annotations

import csv
import json
import shutil
import statistics
import warnings

import pytest

from ipc_bench import cli
from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsWarning

SEND = "num_running=4/send/msgpack#0"
CACHED = "num_running=4/cached/msgpack#0"


@pytest.fixture(scope="module")
def good_run(tmp_path_factory, shared_floor_run):
    """A real run of two cases (send, then cached), each with its floor: a copy of the
    session's (``shared_floor_run``), the module's own."""
    run = tmp_path_factory.mktemp("floor") / "good"
    shutil.copytree(shared_floor_run, run)
    return run


def _copy(good_run, tmp_path, figures=None, floor=None):
    """A copy of ``good_run``: the send case's summary figures updated with
    ``figures``; ``floor(rows)`` changes the send case's floor.csv rows (dicts)."""
    run = tmp_path / "run"
    shutil.copytree(good_run, run)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["cases"][0]["case_id"] == SEND
    summary["cases"][0].update(figures or {})
    (run / "summary.json").write_text(json.dumps(summary))
    if floor is not None:
        with open(run / "floor.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        floor([r for r in rows if r["case_id"] == SEND])
        with open(run / "floor.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return run


def _floor_ns(run) -> list[int]:
    with open(run / "floor.csv", newline="") as f:
        return [int(r["floor_step_ns"]) for r in csv.DictReader(f) if r["case_id"] == SEND]


def _send(run) -> dict:
    return json.loads((run / "summary.json").read_text())["cases"][0]


def _assert_left_out(run, tmp_path, capsys, line):
    """``run`` reports and loads with the one warning ``line``, without the send case
    (reported with ``--no-figures``: the figures of the cached case left are those of a
    run without send, tests/report/test_figure_layout)."""
    code = cli.main(["report", str(run), "--output", str(tmp_path / "rep"), "--no-figures"])
    assert code == 0
    assert capsys.readouterr().err.splitlines() == [f"bench.py report: warning: {line}"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResultsWarning)
        loaded = load(run)
    assert [str(w.message) for w in caught] == [line]
    for table in (loaded.cases, loaded.steps, loaded.floor):
        assert set(table["case_id"]) == {CACHED}
    md = (tmp_path / "rep" / "report.md").read_text()
    assert f"> **Note:** Loading this run: {line}" in md


def test_an_unedited_run_loads_without_a_warning(good_run):
    assert len(_floor_ns(good_run)) == 20
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResultsWarning)
        loaded = load(good_run)
    assert [str(w.message) for w in caught] == []
    assert list(loaded.cases["case_id"]) == [SEND, CACHED]


@pytest.mark.parametrize("figure, kind", [("floor_step_ns_median", "median"),
                                          ("floor_step_ns_mean", "mean")])
def test_a_floor_step_figure_typed_over_leaves_the_case_out(
        good_run, tmp_path, capsys, figure, kind):
    run = _copy(good_run, tmp_path, {figure: 400_000})
    floor = _floor_ns(run)
    got = statistics.median(floor) if kind == "median" else statistics.fmean(floor)
    line = (f"{run / 'floor.csv'}: case '{SEND}' has a {kind} floor_step_ns of "
            f"{got:,.6g} over its 20 floor.csv rows, but summary.json has {figure} "
            "400,000 (left out)")
    _assert_left_out(run, tmp_path, capsys, line)


def test_a_floor_rate_typed_over_leaves_the_case_out(good_run, tmp_path, capsys):
    run = _copy(good_run, tmp_path, {"floor_output_tokens_per_s": 620.96})
    total, tokens = sum(_floor_ns(run)), _send(run)["output_tokens"]
    assert tokens == 80
    line = (f"{run / 'floor.csv'}: case '{SEND}' has its output_tokens 80 over the "
            f"{total:,} ns of its 20 floor.csv rows: {80 / (total / 1e9):,.6g} tok/s, but "
            "summary.json has floor_output_tokens_per_s 620.96 (left out)")
    _assert_left_out(run, tmp_path, capsys, line)


def test_an_x_floor_typed_over_leaves_the_case_out(good_run, tmp_path, capsys):
    run = _copy(good_run, tmp_path, {"step_to_floor_ratio": 1.5})
    total, mean = sum(_floor_ns(run)), _send(run)["step_ns_mean"]
    line = (f"{run / 'floor.csv'}: case '{SEND}' has its 20 counted steps of "
            f"step_ns_mean {mean:,.6g} over the {total:,} ns of its 20 floor.csv rows: "
            f"{20 * mean / total:,.6g}, but summary.json has step_to_floor_ratio 1.5 "
            "(left out)")
    _assert_left_out(run, tmp_path, capsys, line)


def test_a_floor_row_edited_leaves_the_case_out(good_run, tmp_path, capsys):
    """Every floor time of the send case doubled: its median is the first figure off."""
    def double(rows):
        for r in rows:
            r["floor_step_ns"] = str(2 * int(r["floor_step_ns"]))
    run = _copy(good_run, tmp_path, floor=double)
    want = _send(run)["floor_step_ns_median"]
    got = statistics.median(_floor_ns(run))
    assert got == 2 * want
    line = (f"{run / 'floor.csv'}: case '{SEND}' has a median floor_step_ns of "
            f"{got:,.6g} over its 20 floor.csv rows, but summary.json has "
            f"floor_step_ns_median {want:,.6g} (left out)")
    _assert_left_out(run, tmp_path, capsys, line)


def _frames(run, counted_only: bool = False) -> int:
    """The ZMTP stream bytes of the send case's replies in ``run``'s ``steps.csv``
    (every row, or its counted ones): each ``r2s_payload_bytes`` with its frame head,
    2 bytes up to 255 bytes of payload and 9 above (README, "wire bytes")."""
    with open(run / "steps.csv", newline="") as f:
        payloads = [int(r["r2s_payload_bytes"]) for r in csv.DictReader(f)
                    if r["case_id"] == SEND and (r["counted"] == "1" or not counted_only)]
    assert len(payloads) == (20 if counted_only else 25)
    return sum(b + (2 if b <= 255 else 9) for b in payloads)


def test_a_reply_total_typed_over_leaves_the_case_out(good_run, tmp_path, capsys):
    """With a floor, ``r2s_wire_bytes_total`` is every step's reply and the floor's
    replays of the counted steps, whose replies are theirs again."""
    want = _frames(good_run) + _frames(good_run, counted_only=True)
    assert _send(good_run)["r2s_wire_bytes_total"] == want
    run = _copy(good_run, tmp_path, {"r2s_wire_bytes_total": _frames(good_run)})
    line = (f"{run / 'steps.csv'}: case '{SEND}' has an r2s_wire_bytes_total of {want:,} "
            "from its 25 rows' r2s_payload_bytes and its floor's replays of its 20 counted "
            f"rows, but summary.json has r2s_wire_bytes_total {_frames(good_run):,} "
            "(left out)")
    _assert_left_out(run, tmp_path, capsys, line)


def _rewrite_floor(run, change):
    """``run`` with its floor.csv rows (dicts, in file order: send's first) ``change``d
    in place (a row added or removed)."""
    with open(run / "floor.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows[3]["case_id"] == SEND
    change(rows)
    with open(run / "floor.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return run


def _warnings_of(run, tmp_path, capsys) -> list[str]:
    """The report's warning lines on ``run`` (``--no-figures``), which ``results.load``
    gives the same."""
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 0
    prefix = "bench.py report: warning: "
    lines = [ln[len(prefix):] for ln in capsys.readouterr().err.splitlines()]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResultsWarning)
        load(run)
    assert [str(w.message) for w in caught] == lines
    return lines


def test_a_floor_row_more_than_the_counted_steps_leaves_the_cases_rows_out(
        good_run, tmp_path, capsys):
    """One of send's 20 floor rows written twice: 21 rows of a floor of 20 counted
    steps; they would be drawn as its own, and its figures could not be checked."""
    run = _rewrite_floor(_copy(good_run, tmp_path), lambda rows: rows.insert(3, rows[3]))
    assert len(_floor_ns(run)) == 21
    assert _warnings_of(run, tmp_path, capsys) == [
        f"{run / 'floor.csv'}: case '{SEND}' has 21 rows, more than the 20 counted steps "
        "summary.json counts (num_steps), one floor step each (its rows left out)"]
    assert set(load(run).floor["case_id"]) == {CACHED}


def test_a_floor_row_missing_is_said_as_a_file_cut_short(good_run, tmp_path, capsys):
    run = _rewrite_floor(_copy(good_run, tmp_path), lambda rows: rows.pop(3))
    assert _warnings_of(run, tmp_path, capsys) == [
        f"{run / 'floor.csv'}: 39 of the 40 rows that summary.json counts (one per counted "
        f"step; their floor figures not checked; 1 case(s) short: {SEND}: 19 of 20); "
        "loaded what is valid"]
