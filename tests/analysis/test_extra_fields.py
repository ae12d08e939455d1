"""A CSV file of a run edited line by line as ``sed 's/$/,x/'`` does: the run writes
``\\r\\n`` line ends, so the text lands after the ``\\r`` (``...\\r,x\\n``). Such a line is
one line (as ``sed``, ``grep -n`` and ``wc -l`` number them), read as the edit meant:
a column added to the header (and to the rows) is named as an unexpected column over
the file's true row count, an empty field past the last column loads as a
spreadsheet's does, and a row with a field more than the header is left out, counted
against summary.json's total, on whichever line it is (pandas took an over-long first
row's first field for an index and shifted every row)."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest

from analysis_run import shared_run
from ipc_bench import cli
from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsWarning

#: A run with floor rows: 4 cases (num_running=4, send and cached, msgpack and in
#: process), 45 steps.csv rows each (5 warmup + 40 counted), 4 requests each, 40 floor
#: rows for each msgpack case.
ARGS = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "40",
        "--warmup-steps", "5", "--codecs", "msgpack", "--quiet"]

SEND, CACHED, INPROC = ("num_running=4/send/msgpack#0", "num_running=4/cached/msgpack#0",
                        "num_running=4/send/none#0")

#: Per file: the rows summary.json counts, those of each case, the words before the
#: cases short, and the table ``load`` gives.
FILES = {"steps.csv": (180, 45, "", "steps"), "requests.csv": (16, 4, "", "requests"),
         "floor.csv": (80, 40, "one per counted step; their floor figures not checked; ",
                       "floor")}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A copy of the session's run of ``ARGS`` (``shared_run``; test_unfinished_cases.py
    reads it too)."""
    path = tmp_path_factory.mktemp("runs") / "run"
    shutil.copytree(shared_run(tmp_path_factory, [a for a in ARGS if a != "--quiet"]), path)
    for name in FILES:
        data = (path / name).read_bytes()
        assert data.count(b"\r\n") == data.count(b"\n") == FILES[name][0] + 1
    return path


@pytest.fixture(scope="module")
def intact(run):
    return load(run)


def _copy(run: Path, where: Path) -> Path:
    shutil.copytree(run, where)
    return where


def _sed(path: Path, numbers, text: bytes) -> None:
    """``sed -i 'Ns/$/TEXT/' path`` for each (1-based) line ``N`` of ``numbers``: ``text``
    put before the line's ``\\n``, after its ``\\r``."""
    lines = path.read_bytes().split(b"\n")
    for n in numbers:
        lines[n - 1] += text
    path.write_bytes(b"\n".join(lines))


def _fields(path: Path) -> int:
    return len(path.read_bytes().split(b"\r\n")[0].split(b","))


def _loaded(run: Path) -> tuple[list[str], object]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResultsWarning)
        res = load(run)
    assert [str(w.message) for w in caught] == res.warnings[run.name]
    return res.warnings[run.name], res


def _table(res, name: str):
    return getattr(res, FILES[name][3]).drop(columns="run_id")


@pytest.mark.parametrize("name", list(FILES))
@pytest.mark.parametrize("rows_too", [True, False], ids=["header-and-rows", "header-only"])
def test_a_column_added_to_the_header_is_named_over_the_true_row_count(run, tmp_path,
                                                                        name, rows_too):
    # was: 'its first line is not a CSV header, so its 161 rows are left out' for
    # steps.csv (every line split in two at its \r), 181 with the header alone changed
    copy = _copy(run, tmp_path / "run")
    path = copy / name
    _sed(path, [1], b",extra")
    total, each, words, _ = FILES[name]
    if rows_too:
        _sed(path, range(2, total + 2), b",1")
    short = {"steps.csv": f"4 case(s) short: {SEND}: 0 of 45; {CACHED}: 0 of 45; "
                          f"{INPROC}: 0 of 45; 1 more",
             "requests.csv": f"4 case(s) short: {SEND}: 0 of 4; {CACHED}: 0 of 4; "
                             f"{INPROC}: 0 of 4; 1 more",
             "floor.csv": f"2 case(s) short: {SEND}: 0 of 40; {CACHED}: 0 of 40"}[name]
    got, res = _loaded(copy)
    assert got == [
        f"{path}: its header is not {name}'s columns (unexpected extra), so its {total} "
        f"rows are left out, and it holds 0 of the {total} rows that summary.json counts "
        f"({words}{short}); loaded what is valid"]
    assert len(_table(res, name)) == 0


@pytest.mark.parametrize("name", list(FILES))
@pytest.mark.parametrize("numbers", [[2], list(range(2, 11))], ids=["line-2", "lines-2-10"])
def test_a_trailing_comma_is_an_empty_field_that_loads(run, intact, tmp_path, name,
                                                       numbers):
    # was: 'line 3 holds only commas (left out)' ('lines 3, 5, 7, 9, 11 and 4 more')
    copy = _copy(run, tmp_path / "run")
    _sed(copy / name, numbers, b",")
    got, res = _loaded(copy)
    assert got == []
    assert _table(res, name).equals(_table(intact, name))


def _lf(path: Path) -> None:
    path.write_bytes(path.read_bytes().replace(b"\r\n", b"\n"))


@pytest.mark.parametrize("name", list(FILES))
@pytest.mark.parametrize("line", [2, 9])
@pytest.mark.parametrize("ending", ["crlf", "lf"])
def test_a_field_more_than_the_header_leaves_its_row_out_and_counts_it(
        run, intact, tmp_path, name, line, ending):
    # was (crlf): '1 row does not have the header's N fields' for a phantom row ',7',
    # the edited row loaded and nothing short; (lf, line 2): pandas read the first field
    # as an index, every row shifted: 'N rows hold a value that is not a number'
    copy = _copy(run, tmp_path / "run")
    path = copy / name
    if ending == "lf":
        _lf(path)
    _sed(path, [line], b",7")
    case = path.read_bytes().split(b"\n")[line - 1].split(b",")[0].decode()
    total, each, words, _ = FILES[name]
    got, res = _loaded(copy)
    assert got == [
        f"{path}: 1 row does not have the header's {_fields(run / name)} fields (left out), "
        f"and it holds {total - 1} of the {total} rows that summary.json counts ({words}1 "
        f"case(s) short: {case}: {each - 1} of {each}); loaded what is valid"]
    want = _table(intact, name).drop(index=line - 2).reset_index(drop=True)
    assert _table(res, name).equals(want)


def test_lines_after_an_edited_one_keep_their_numbers(run, tmp_path):
    # was: line 7 named (each of lines 2 and 5 split in two at its \r)
    copy = _copy(run, tmp_path / "run")
    path = copy / "steps.csv"
    _sed(path, [2], b",7")
    _sed(path, [5], b',"x')
    got, res = _loaded(copy)
    assert got == [
        f"{path}: line 5 holds an unterminated quote (left out), and 1 row does not have "
        f"the header's {_fields(run / 'steps.csv')} fields (left out), and it holds 178 of "
        f"the 180 rows that summary.json counts (1 case(s) short: {SEND}: 43 of 45); "
        "loaded what is valid"]
    assert len(res.steps) == 178


def test_the_report_says_the_row_left_out(run, tmp_path, capsys):
    copy = _copy(run, tmp_path / "run")
    path = copy / "steps.csv"
    _sed(path, [2], b",7")
    message = (f"{path}: 1 row does not have the header's {_fields(path)} fields (left "
               f"out), and it holds 179 of the 180 rows that summary.json counts (1 case(s) "
               f"short: {SEND}: 44 of 45); loaded what is valid")
    capsys.readouterr()
    assert cli.main(["report", str(copy), "--no-figures", "--output",
                     str(tmp_path / "rep")]) == 0
    assert capsys.readouterr().err == f"bench.py report: warning: {message}\n"
    assert f"Loading this run: {message}." in (tmp_path / "rep" / "report.md").read_text()
