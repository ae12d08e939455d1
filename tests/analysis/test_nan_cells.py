"""A literal ``nan`` (any case: ``nan``, ``NaN``, ``NAN``, ``-nan``) or another of
pandas' NA words (``NA``, ``null``) in a value column of a hand-edited CSV file is a
value that is not a number, as ``abc`` is: its row is left out with the same warning, in
``results.load`` and in ``bench.py report``, for ``steps.csv``, ``requests.csv``,
``floor.csv`` and ``itl.csv`` alike (``run_files._read_csv``, where pandas read those
words as missing values and kept the row silently). In ``steps.csv``'s ``counted`` and
``warmup`` flags it is no value, as a blank: the case's check names it."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest

from analysis.test_cut_short import _case_total, not_a_number_line
from analysis_run import four_case_copy
from ipc_bench import cli
from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsWarning, _read_csv


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    return four_case_copy(tmp_path_factory, tmp_path_factory.mktemp("runs") / "small")


def _edit(path: Path, line: int, column: str, value: str) -> str:
    """Set ``column`` of data line ``line`` (1: the first row) of the CSV file ``path``
    to ``value``, the field count kept; returns the row's first field (its case)."""
    lines = path.read_text().splitlines(keepends=True)
    names = lines[0].rstrip("\r\n").split(",")
    fields = lines[line].rstrip("\r\n").split(",")
    fields[names.index(column)] = value
    lines[line] = ",".join(fields) + "\r\n"
    path.write_text("".join(lines))
    return fields[0]


@pytest.mark.parametrize("word", ["nan", "NaN", "NAN", "-nan", "NA", "null"])
def test_nan_in_steps_csv_is_a_value_that_is_not_a_number(small_run, tmp_path, capsys,
                                                          word):
    run = shutil.copytree(small_run, tmp_path / "edited")
    steps = run / "steps.csv"
    case = _edit(steps, 5, "step_ns", word)
    total, _ = _case_total(run, case)
    message = not_a_number_line(run, case)
    with pytest.warns(ResultsWarning) as caught:
        res = load(run)
    assert [str(w.message) for w in caught] == [message]
    assert len(res.steps) == total - 1
    assert int(res.steps["step_ns"].isna().sum()) == 0
    assert str(res.steps["step_ns"].dtype) == "int64"
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 0
    assert capsys.readouterr().err == f"bench.py report: warning: {message}\n"


def test_nan_in_a_counted_flag_is_named_as_a_blank_one_is(small_run, tmp_path):
    """The flags keep their words: a ``nan`` flag, as a blank one, leaves the row in
    and the case out (``row_checks``), the same line for both."""
    lines = []
    for word in ("", "nan"):
        run = shutil.copytree(small_run, tmp_path / f"flag{len(lines)}")
        _edit(run / "steps.csv", 5, "counted", word)
        with pytest.warns(ResultsWarning) as caught:
            load(run)
        lines.append([str(w.message).replace(str(run), "RUN") for w in caught])
    assert lines[1] == lines[0]
    assert len(lines[0]) == 1 and "without a counted value (blank or not a number" in (
        lines[0][0]), lines[0]


def test_nan_in_requests_csv_is_a_value_that_is_not_a_number(small_run, tmp_path):
    run = shutil.copytree(small_run, tmp_path / "requests")
    path = run / "requests.csv"
    _edit(path, 1, "num_output_tokens", "nan")
    _edit(path, 2, "num_output_tokens", "NaN")
    with pytest.warns(ResultsWarning) as caught:
        res = load(run)
    assert [str(w.message) for w in caught] == [
        f"{path}: 2 rows hold a value that is not a number (in num_output_tokens; left "
        "out), and it holds 10 of the 12 rows that summary.json counts (1 case(s) short: "
        "num_running=2/send/msgpack#0: 0 of 2); loaded what is valid"]
    assert len(res.requests) == 10
    assert str(res.requests["num_output_tokens"].dtype) == "int64"


def test_nan_in_floor_csv_is_a_value_that_is_not_a_number(shared_floor_run, tmp_path):
    run = shutil.copytree(shared_floor_run, tmp_path / "floor")
    path = run / "floor.csv"
    rows = path.read_text().count("\n") - 1
    case = _edit(path, 3, "floor_step_ns", "nan")
    assert (rows, case) == (40, "num_running=4/send/msgpack#0")  # 20 counted steps each
    with pytest.warns(ResultsWarning) as caught:
        res = load(run)
    assert [str(w.message) for w in caught] == [
        f"{path}: 1 row holds a value that is not a number (in floor_step_ns; left out), "
        "and it holds 39 of the 40 rows that summary.json counts (one per counted step; "
        "their floor figures not checked; 1 case(s) short: num_running=4/send/msgpack#0: "
        "19 of 20); loaded what is valid"]
    assert len(res.floor) == rows - 1
    assert int(res.floor["floor_step_ns"].isna().sum()) == 0


def test_nan_in_itl_csv_is_a_value_that_is_not_a_number(tmp_path):
    import pandas as pd

    path = tmp_path / "itl.csv"
    path.write_text("case_id,index,itl_s\r\nc,0,0.5\r\nc,0,nan\r\nc,1,NaN\r\nc,1,\r\n"
                    "c,2,0.25\r\n")
    notes: list[str] = []
    df = _read_csv(pd, path, ("case_id", "index", "itl_s"), notes)
    assert notes == ["2 rows hold a value that is not a number (in itl_s; left out)"]
    assert df["itl_s"].tolist()[:1] + df["itl_s"].tolist()[2:] == [0.5, 0.25]
    assert len(df) == 3 and df["itl_s"].isna().tolist() == [False, True, False]


def test_an_intact_run_still_loads_without_warning(small_run):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResultsWarning)
        res = load(small_run)
    assert res.warnings == {"small": []}
