"""Run folders cut short or damaged: a ``steps.csv`` with a torn last line or missing
rows loads what is valid with a one-line warning, and so does a CSV file whose header
is not its columns (its rows left out); a run whose ``bench.py`` was SIGKILLed is
described from its files, not as "no reason recorded"."""

from __future__ import annotations

import json
import re
import shutil
import warnings
from pathlib import Path

import pytest

from analysis_run import copy_as_another_run, four_case_copy, sigkill_in_first_case
from ipc_bench import cli
from ipc_bench.analysis.results import RunStatusWarning, load, read_summary
from ipc_bench.analysis.run_files import ResultsError, ResultsWarning
from ipc_bench.harness.run_folder import CASE_KEYS, REQUEST_COLUMNS, STEPS_HEADER
from ipc_bench.harness.spec import RUNNER_COLUMNS

ROOT = Path(__file__).resolve().parents[2]
#: The report option that draws no figure: for a copy whose loaded rows are some of the
#: intact run's (a row left out) or whose file left out had no row (FOUR_CASE_ARGS replay
#: no floor and record no ITL), whose figures are those of a run that ran so.
NO_FIGURES = "--no-figures"


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    return four_case_copy(tmp_path_factory, tmp_path_factory.mktemp("runs") / "small")


def _copy(run: Path, where: Path) -> Path:
    shutil.copytree(run, where)
    return where


def test_an_intact_run_loads_without_warning(small_run):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResultsWarning)
        res = load(small_run)
    assert res.warnings == {"small": []} and res.status_detail == {"small": ""}


def test_a_torn_last_row_is_left_out_with_one_warning(small_run, tmp_path, capsys):
    run = _copy(small_run, tmp_path / "torn")
    steps = run / "steps.csv"
    text = steps.read_bytes()
    steps.write_bytes(text[:-15])  # the writer killed mid-row
    rows = text.count(b"\n") - 1
    last_case = text.splitlines()[-1].split(b",")[0].decode()
    want = {c["case_id"]: c["num_total_steps"] for c in read_summary(run)["cases"]}
    with pytest.warns(ResultsWarning) as caught:
        res = load(run)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert message == (
        f"{steps}: its last line is cut mid-row (left out), and it holds {rows - 1:,} of the "
        f"{sum(want.values()):,} rows that summary.json counts (1 case(s) short: {last_case}: "
        f"{want[last_case] - 1:,} of {want[last_case]:,}); loaded what is valid")
    assert res.warnings["torn"] == [message]
    assert len(res.steps) == rows - 1
    assert str(res.steps["step_ns"].dtype) == "int64"  # no NaN row spoiling the types
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"), NO_FIGURES]) == 0
    err = capsys.readouterr().err
    assert err == f"bench.py report: warning: {message}\n"
    assert f"Loading this run: {message}." in (tmp_path / "rep" / "report.md").read_text()


def test_missing_rows_are_counted_against_the_summary(small_run, tmp_path):
    run = _copy(small_run, tmp_path / "short")
    lines = (run / "steps.csv").read_text().splitlines(keepends=True)
    first_case = lines[1].split(",")[0]
    kept = [ln for ln in lines if not ln.startswith(first_case + ",")][:1] + [
        ln for ln in lines[1:] if ln.startswith(first_case + ",")][:10] + [
        ln for ln in lines[1:] if not ln.startswith(first_case + ",")]
    (run / "steps.csv").write_text("".join(kept))
    want = {c["case_id"]: c["num_total_steps"] for c in read_summary(run)["cases"]}
    with pytest.warns(ResultsWarning, match=re.escape(
            f"{run / 'steps.csv'}: {len(kept) - 1:,} of the {sum(want.values()):,} rows "
            f"that summary.json counts (1 case(s) short: {first_case}: 10 of "
            f"{want[first_case]:,}); loaded what is valid")):
        res = load(run)
    assert (res.steps["case_id"] == first_case).sum() == 10


def test_a_sigkilled_run_is_described_from_its_files(tmp_path, killed_bench_tmpdir):
    run = tmp_path / "killed"
    # a SIGKILLed bench.py cannot remove its socket folder: left there
    sigkill_in_first_case(run, ["--scenario", "decode-steady", "--num-running", "4",
                                "--steps", "1000000", "--codecs", "msgpack", "--policies",
                                "send", "--no-floor", "--no-single-process"],
                          killed_bench_tmpdir)
    partial = run / "steps.partial.csv"
    rows = partial.read_bytes().count(b"\n") - 1
    assert rows >= 2
    with pytest.warns(RunStatusWarning):
        res = load(run)
    detail = res.status_detail["killed"]
    assert re.fullmatch(
        r"stopped without finishing its summary \(killed, or summary\.json could not be "
        r"written: a full disk, say\): no process holds its lock, no end was recorded, "
        r"summary status "
        r"incomplete, 0 of 1 cases recorded, last case num_running=4/send/msgpack#0 running "
        r"\(the run started \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\), steps\.partial\.csv holds "
        rf"{rows:,} rows of it \(its modification time \d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d "
        r"UTC\)", detail)
    # said on loading, and the case it was running named as unfinished
    assert res.warnings["killed"] == [
        f"{run}: this run is incomplete: {detail}; no case loaded; the case it was running "
        "is not loaded (Results.unfinished names it; Results.finished leaves it out)"]
    assert res.unfinished() == [dict(
        run_id="killed", case_id="num_running=4/send/msgpack#0",
        error="the run stopped during it, killed or unable to write summary.json; its "
              "rows in steps.partial.csv are not loaded")]
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep")]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert f"This run is incomplete: {detail}." in md
    assert "no reason recorded" not in md
    # a folder without the claim file (an older run's) cannot tell killed from running
    (run / ".claimed").unlink()
    with pytest.warns(RunStatusWarning):
        older = load(run)
    assert older.status_detail["killed"].startswith(
        "stopped without finishing its summary (killed, or summary.json could not be "
        "written) or still running: no end was recorded, summary status "
        "incomplete, 0 of 1 cases recorded, last case ")


#: The columns each CSV file of a run folder holds, as the loader expects them.
EXPECTED_COLUMNS = {"steps": STEPS_HEADER,
                    "requests": CASE_KEYS + REQUEST_COLUMNS,
                    "floor": ("case_id", "i", "floor_step_ns"),
                    "itl": ("case_id", "index", "itl_s")}


def _missing(stem: str) -> str:
    columns = EXPECTED_COLUMNS[stem]
    more = len(columns) - 5
    return ", ".join(columns[:5]) + (f" and {more} more" if more > 0 else "")


@pytest.mark.parametrize("stem", ["steps", "requests", "floor", "itl"])
def test_a_csv_with_a_wrong_header_is_left_out_with_one_warning(small_run, tmp_path, capsys,
                                                                stem):
    run = _copy(small_run, tmp_path / "garbled")
    path = run / f"{stem}.csv"
    path.write_text("garbage,x\n1,2\n")
    message = (f"{path}: its header is not {stem}.csv's columns (missing {_missing(stem)}; "
               "unexpected garbage, x), so its row is left out")
    if stem in ("steps", "requests"):
        message += ", and it holds " + _none_of(run, "num_total_steps" if stem == "steps"
                                       else "num_requests")
    message += "; loaded what is valid"
    with pytest.warns(ResultsWarning) as caught:
        res = load(run)
    assert [str(w.message) for w in caught] == [message]
    table = getattr(res, stem)
    assert len(table) == 0 and "garbage" not in table.columns
    figures = [NO_FIGURES] if stem in ("floor", "itl") else []
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"), *figures]) == 0
    assert capsys.readouterr().err == f"bench.py report: warning: {message}\n"
    assert f"Loading this run: {message}." in (tmp_path / "rep" / "report.md").read_text()


def _none_of(run: Path, counted: str) -> str:
    """The words on a CSV file with none of the rows its 4 cases' ``counted`` (a
    ``summary.json`` field) counts."""
    want = {c["case_id"]: c[counted] for c in read_summary(run)["cases"]}
    named = "; ".join(f"{case}: 0 of {n:,}" for case, n in list(want.items())[:3])
    assert len(want) == 4
    return (f"0 of the {sum(want.values()):,} rows that summary.json counts (4 case(s) short: "
            f"{named}; 1 more)")


@pytest.mark.parametrize("name", ["steps.csv", "requests.csv"])
def test_an_empty_csv_of_rows_the_summary_counts_is_refused(small_run, tmp_path, capsys,
                                                            name):
    """0 bytes, not even the header the run wrote when it began: the rows the summary
    counts are lost, not cut short; refused as an empty itl.csv is, in the loader and
    in ``bench.py report`` (one line, exit 2)."""
    run = _copy(small_run, tmp_path / "emptied")
    (run / name).write_bytes(b"")
    message = f"{run}: not a complete run folder ({name} is empty)"
    with pytest.raises(ResultsError) as exc:
        load(run)
    assert str(exc.value) == message
    code = cli.main(["report", str(run), "--output", str(tmp_path / "rep"), "--no-figures"])
    assert (code, capsys.readouterr().err) == (2, f"bench.py report: error: {message}\n")


def test_an_empty_requests_csv_where_no_case_counts_requests_is_said_so(small_run,
                                                                        tmp_path):
    run = _copy(small_run, tmp_path / "emptied")
    (run / "requests.csv").write_bytes(b"")
    summary = read_summary(run)
    for case in summary["cases"]:
        case["num_requests"] = 0
    (run / "summary.json").write_text(json.dumps(summary))
    with pytest.warns(ResultsWarning) as caught:
        res = load(run)
    assert [str(w.message) for w in caught] == [
        f"{run / 'requests.csv'}: it is empty (not even its header line), so nothing is "
        "loaded from it; loaded what is valid"]
    assert len(res.requests) == 0 and list(res.requests.columns)[:2] == ["run_id", "case_id"]


def test_a_header_only_steps_file_loads_typed_flags(small_run, tmp_path):
    run = _copy(small_run, tmp_path / "headers")
    steps = run / "steps.csv"
    steps.write_text(steps.read_text().splitlines(keepends=True)[0])
    with pytest.warns(ResultsWarning):
        res = load(run)
    assert len(res.steps) == 0
    assert str(res.steps["counted"].dtype) == "bool"  # selects rows, not columns
    assert list(res.steps[res.steps["counted"]].columns) == list(res.steps.columns)


def _case_total(run: Path, case: str) -> tuple[int, int]:
    """(all steps rows summary.json counts, those of ``case``)."""
    want = {c["case_id"]: c["num_total_steps"] for c in read_summary(run)["cases"]}
    return sum(want.values()), want[case]


def not_a_number_line(run: Path, case: str) -> str:
    """The warning on run ``run``'s steps.csv with one ``step_ns`` of ``case`` that is
    not a number: that row left out, the case a row short."""
    total, of_case = _case_total(run, case)
    return (f"{run / 'steps.csv'}: 1 row holds a value that is not a number (in step_ns; "
            f"left out), and it holds {total - 1:,} of the {total:,} rows that summary.json "
            f"counts (1 case(s) short: {case}: {of_case - 1:,} of {of_case:,}); loaded what "
            "is valid")


def test_a_value_that_is_not_a_number_leaves_its_row_out(small_run, tmp_path, capsys):
    run = _copy(small_run, tmp_path / "edited")
    steps = run / "steps.csv"
    lines = steps.read_text().splitlines(keepends=True)
    names = lines[0].rstrip("\r\n").split(",")
    fields = lines[5].rstrip("\r\n").split(",")
    fields[names.index("step_ns")] = "abc"  # the field count kept
    lines[5] = ",".join(fields) + "\r\n"
    steps.write_text("".join(lines))
    message = not_a_number_line(run, fields[0])
    with pytest.warns(ResultsWarning) as caught:
        res = load(run)
    assert [str(w.message) for w in caught] == [message]
    assert len(res.steps) == len(lines) - 2
    assert "abc" not in set(res.steps["step_ns"].astype(str))
    assert str(res.steps["step_ns"].dtype) == "int64"
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"), NO_FIGURES]) == 0
    assert capsys.readouterr().err == f"bench.py report: warning: {message}\n"


def test_nul_bytes_in_a_row_leave_it_out(small_run, tmp_path, capsys):
    run = _copy(small_run, tmp_path / "nul")
    steps = run / "steps.csv"
    data = bytearray(steps.read_bytes())
    start = data.index(b"\n", len(data) // 2) + 40  # inside one row, its line breaks kept
    data[start:start + 100] = b"\0" * 100
    assert data.count(b"\n") == steps.read_bytes().count(b"\n")
    steps.write_bytes(bytes(data))
    case = bytes(data[data.rindex(b"\n", 0, start) + 1:]).split(b",")[0].decode()
    total, of_case = _case_total(run, case)
    message = (f"{steps}: 1 row does not have the header's "
               f"{len(STEPS_HEADER)} fields (left out), and it holds "
               f"{total - 1:,} of the {total:,} rows that summary.json counts (1 case(s) short: "
               f"{case}: {of_case - 1:,} of {of_case:,}); loaded what is valid")
    with pytest.warns(ResultsWarning) as caught:
        res = load(run)
    assert [str(w.message) for w in caught] == [message]
    assert len(res.steps) == total - 1
    assert set(res.steps["codec"]) == {"msgpack"}  # no shifted field passing for a codec
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"), NO_FIGURES]) == 0
    assert capsys.readouterr().err == f"bench.py report: warning: {message}\n"


def test_a_value_that_is_not_a_number_in_requests_csv(small_run, tmp_path):
    run = _copy(small_run, tmp_path / "requests")
    path = run / "requests.csv"
    lines = path.read_text().splitlines(keepends=True)
    names = lines[0].rstrip("\r\n").split(",")
    for k in (1, 2):
        fields = lines[k].rstrip("\r\n").split(",")
        fields[names.index("num_output_tokens")] = "x1"
        lines[k] = ",".join(fields) + "\r\n"
    path.write_text("".join(lines))
    with pytest.warns(ResultsWarning) as caught:
        res = load(run)
    assert [str(w.message) for w in caught] == [
        f"{path}: 2 rows hold a value that is not a number (in num_output_tokens; left "
        "out), and it holds 10 of the 12 rows that summary.json counts (1 case(s) short: "
        "num_running=2/send/msgpack#0: 0 of 2); loaded what is valid"]
    assert len(res.requests) == len(lines) - 3
    assert str(res.requests["num_output_tokens"].dtype) == "int64"


def test_a_run_written_before_a_column_existed_loads_with_it_empty(small_run, tmp_path,
                                                                   capsys):
    """A steps.csv without a measured column (as a run written before it existed): its
    rows load, that column is NaN, and the warning says why; the report is written."""
    import pandas as pd

    gone = RUNNER_COLUMNS[-1]
    run = _copy(small_run, tmp_path / "older")
    path = run / "steps.csv"
    table = pd.read_csv(path)
    table.drop(columns=[gone]).to_csv(path, index=False)
    with pytest.warns(ResultsWarning) as caught:
        res = load(run)
    message = (f"{path}: its header lacks {gone} (a run written before that column "
               "existed, or the file edited): left empty, and the summary's figures over "
               "it not checked against it; loaded what is valid")
    assert [str(w.message) for w in caught] == [message]
    assert len(res.steps) == len(table) and res.steps[gone].isna().all()
    assert list(res.steps["step_ns"]) == list(table["step_ns"])
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep")]) == 0
    assert capsys.readouterr().err == f"bench.py report: warning: {message}\n"


def _counted(run: Path, count: str, case: str) -> tuple[int, int]:
    """(all rows summary.json counts by ``count``, those of ``case``)."""
    want = {c["case_id"]: c[count] for c in read_summary(run)["cases"]}
    return sum(want.values()), want[case]


@pytest.mark.parametrize("name, count", [("steps.csv", "num_total_steps"),
                                         ("requests.csv", "num_requests")])
@pytest.mark.parametrize("where", ["middle", "end"])
def test_an_unterminated_quote_leaves_out_its_line_only(small_run, tmp_path, capsys, name,
                                                        count, where):
    """A stray ``"`` opens a quoted field that would run to the end of the file (a CSV
    reader's field limit, or pandas' "EOF inside string"): its line is left out, named,
    and the lines before and after it load."""
    run = _copy(small_run, tmp_path / "quote")
    path = run / name
    lines = path.read_text().splitlines(keepends=True)
    k = len(lines) // 2 if where == "middle" else len(lines) - 2
    case = lines[k].split(",")[0]
    if name == "steps.csv":
        assert ",msgpack," in lines[k]
        lines[k] = lines[k].replace(",msgpack,", ',"msgpack,', 1)
    else:
        lines[k] = 'garbage,,"unterminated\r\n'
    path.write_text("".join(lines))
    total, of_case = _counted(run, count, case)
    message = (f"{path}: line {k + 1} holds an unterminated quote (left out), and it holds "
               f"{total - 1:,} of the {total:,} rows that summary.json counts (1 case(s) short: "
               f"{case}: {of_case - 1:,} of {of_case:,}); loaded what is valid")
    with pytest.warns(ResultsWarning) as caught:
        res = load(run)
    assert [str(w.message) for w in caught] == [message]
    table = res.steps if name == "steps.csv" else res.requests
    assert len(table) == len(lines) - 2 == total - 1
    key = "seq" if name == "steps.csv" else "index"
    names = lines[0].rstrip("\r\n").split(",")
    written = [(ln.split(",")[0], int(ln.split(",")[names.index(key)]))
               for i, ln in enumerate(lines[1:], start=1) if i != k]
    assert list(zip(table["case_id"], table[key])) == written
    assert set(table["codec"]) == {"msgpack"}
    assert cli.main(["report", str(run), "--no-figures", "--output",
                     str(tmp_path / "rep")]) == 0
    assert capsys.readouterr().err == f"bench.py report: warning: {message}\n"


def test_quoted_fields_closed_on_their_line_load(small_run, tmp_path):
    """The run's writer quotes a ``case_id`` of several labels (``"num_running=4,tp=2/
    ..."``): a quoted field closed on its line is read as any other."""
    run = _copy(small_run, tmp_path / "quoted")
    path = run / "steps.csv"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0] + "".join(
        '"{}",{}'.format(*ln.split(",", 1)) for ln in lines[1:]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResultsWarning)
        res = load(run)
    assert res.warnings == {"quoted": []}
    assert list(res.steps["step_ns"]) == list(load(small_run).steps["step_ns"])


def test_lines_of_only_commas_and_quotes_are_named(small_run, tmp_path, capsys):
    run = _copy(small_run, tmp_path / "commas")
    path = run / "steps.csv"
    lines = path.read_text().splitlines(keepends=True)
    names = lines[0].rstrip("\r\n").split(",")
    empty = "," * (len(names) - 1) + "\r\n"
    lines[20:20] = [empty, empty]  # lines 21 and 22
    for k in range(30, 37):  # 7 rows, lines 31 to 37
        lines[k] = lines[k].replace(",msgpack,", ',"msgpack,', 1)
    path.write_text("".join(lines))
    cases = {ln.split(",")[0] for ln in lines[30:37]}
    assert len(cases) == 1
    case = cases.pop()
    total, of_case = _counted(run, "num_total_steps", case)
    message = (f"{path}: lines 31, 32, 33, 34, 35 and 2 more hold an unterminated quote "
               "(left out), and lines 21 and 22 hold only commas (left out), and it holds "
               f"{total - 7:,} of the {total:,} rows that summary.json counts (1 case(s) short: "
               f"{case}: {of_case - 7:,} of {of_case:,}); loaded what is valid")
    with pytest.warns(ResultsWarning) as caught:
        res = load(run)
    assert [str(w.message) for w in caught] == [message]
    assert len(res.steps) == total - 7
    assert cli.main(["report", str(run), "--no-figures", "--output",
                     str(tmp_path / "rep")]) == 0
    assert capsys.readouterr().err == f"bench.py report: warning: {message}\n"


def test_a_row_without_a_case_id_is_named(small_run, tmp_path):
    run = _copy(small_run, tmp_path / "noid")
    path = run / "steps.csv"
    lines = path.read_text().splitlines(keepends=True)
    case, rest = lines[10].split(",", 1)
    lines[10] = "," + rest  # its other fields kept
    path.write_text("".join(lines))
    total, of_case = _counted(run, "num_total_steps", case)
    with pytest.warns(ResultsWarning) as caught:
        res = load(run)
    assert [str(w.message) for w in caught] == [
        f"{path}: 1 row has no case_id (left out)",
        f"{path}: {total - 1:,} of the {total:,} rows that summary.json counts (1 case(s) short: "
        f"{case}: {of_case - 1:,} of {of_case:,}); loaded what is valid"]
    assert len(res.steps) == total - 1 and res.steps["case_id"].notna().all()


def test_a_run_written_before_num_waiting_loads_without_a_warning(small_run, tmp_path):
    """num_waiting only labels a timed replay's pace, and the report names the older
    measure for such a run: its absence from an older steps.csv is not warned about."""
    import warnings

    import pandas as pd

    run = _copy(small_run, tmp_path / "older")
    path = run / "steps.csv"
    table = pd.read_csv(path)
    table.drop(columns=["num_waiting"]).to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = load(run)
    assert len(res.steps) == len(table) and res.steps["num_waiting"].isna().all()


@pytest.mark.parametrize("stem", ["steps", "requests"])  # FOUR_CASE_ARGS have no floor or ITL rows
def test_a_csv_saved_with_a_byte_order_mark_loads_as_it_was(small_run, tmp_path, stem):
    """A file saved again by an editor that writes a UTF-8 byte-order mark (and CRLF
    line ends) loads every row, as the file the run wrote does."""
    run = _copy(small_run, tmp_path / "bom")
    path = run / f"{stem}.csv"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\n", b"\r\n"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResultsWarning)
        res = load(run)
    want = getattr(load(small_run), stem)
    assert len(getattr(res, stem)) == len(want) and len(want) > 0
    assert list(getattr(res, stem).columns) == list(want.columns)


def _rewrite_lines(path: Path, change) -> None:
    lines = path.read_bytes().splitlines()
    path.write_bytes(b"\n".join(change(lines[0], lines[1:])) + b"\n")


@pytest.mark.parametrize("edit", ["sorted", "shuffled", "empty-tail", "empty-columns"])
def test_a_steps_csv_saved_from_a_spreadsheet_loads_as_written(small_run, tmp_path, edit):
    """Rows sorted or shuffled (by step time, say), or empty fields after the last
    column (a spreadsheet's save, on the data rows or on every line): every value is
    intact, so every row loads, in the order the run wrote them, with no warning."""
    run = _copy(small_run, tmp_path / edit)
    path = run / "steps.csv"
    col = path.read_bytes().splitlines()[0].split(b",").index(b"step_ns")
    import random

    change = {
        "sorted": lambda h, rows: [h, *sorted(rows, key=lambda r: -int(r.split(b",")[col]))],
        "shuffled": lambda h, rows: [h, *random.Random(7).sample(rows, len(rows))],
        "empty-tail": lambda h, rows: [h, *(r + b",," for r in rows)],
        "empty-columns": lambda h, rows: [h + b",,", *(r + b",," for r in rows)],
    }[edit]
    _rewrite_lines(path, change)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResultsWarning)
        res = load(run)
    want = load(small_run).steps
    got = res.steps
    assert list(got.columns) == list(want.columns)
    assert got.drop(columns="run_id").equals(want.drop(columns="run_id"))


def _stopped_copy(run: Path, where: Path, keep_rows: bool = False) -> tuple[Path, list[str]]:
    """A copy of ``run`` (4 cases) as ``bench.py`` leaves it stopped (or still going)
    in its third case: two cases listed, the third named as ``running_case``, no end,
    a ``.claimed`` file; the rows of the last two cases removed, the third's kept in
    the CSV files where ``keep_rows`` (it was finishing: its rows appended, the summary
    not yet rewritten). Returns the copy and the case ids."""
    _copy(run, where)
    summary = json.loads((where / "summary.json").read_text())
    ids = [c["case_id"] for c in summary["cases"]]
    assert len(ids) == 4
    gone = ids[3:] if keep_rows else ids[2:]
    summary.update(cases=summary["cases"][:2], status="incomplete", running_case=ids[2])
    summary["metadata"].pop("end_time_utc", None)
    (where / "summary.json").write_text(json.dumps(summary))
    for name in ("steps.csv", "requests.csv", "floor.csv", "itl.csv"):
        lines = (where / name).read_text().splitlines(keepends=True)
        (where / name).write_text("".join(
            ln for ln in lines if not ln.startswith(tuple(c + "," for c in gone))))
    (where / ".claimed").touch()
    return where, ids


def _held(run: Path):
    """The run's claim locked, as a ``bench.py`` still going holds it."""
    import fcntl

    claim = open(run / ".claimed", "rb")
    fcntl.flock(claim, fcntl.LOCK_EX)
    return claim


def test_a_stopped_run_warns_on_loading_and_names_the_case_it_was_running(
        small_run, tmp_path, capsys):
    run, ids = _stopped_copy(small_run, tmp_path / "stopped")
    with pytest.warns(ResultsWarning) as caught:
        res = load(run)
    detail = res.status_detail["stopped"]
    assert detail.startswith(
        "stopped without finishing its summary (killed, or summary.json could not be "
        "written: a full disk, say): no process holds its lock, no end was recorded, "
        f"summary status incomplete, 2 of 4 cases recorded, last case {ids[2]} running "
        "(the run started ")
    line = (f"{run}: this run is incomplete: {detail}; 2 cases loaded, both finished; the "
            "case it was running is not loaded (Results.unfinished names it; "
            "Results.finished leaves it out)")
    assert [(w.category, str(w.message)) for w in caught] == [(RunStatusWarning, line)]
    assert res.warnings == {"stopped": [line]} and res.status_warning == {"stopped": line}
    assert res.unfinished() == [dict(
        run_id="stopped", case_id=ids[2],
        error="the run stopped during it, killed or unable to write summary.json")]
    assert list(res.finished().cases["case_id"]) == ids[:2]
    assert res.select("stopped").unfinished() == res.unfinished()
    # the report says it in its note, not again as a loading note; on stderr one line,
    # as microbench's (results.incomplete_run_line)
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 0
    assert capsys.readouterr().err == (
        f"bench.py report: warning: {run}: this run is incomplete: {detail}; 2 of its 4 "
        "cases finished: the report's figures cover the cases it finished\n")
    md = (tmp_path / "rep" / "report.md").read_text()
    assert f"This run is incomplete: {detail}. Its figures cover the cases that finished." in md
    assert (f"> **Note:** Left out of every finding, table and figure, as it did not "
            f"finish: `{ids[2]}` (the run stopped during it, killed or unable to write "
            "summary.json).") in md
    assert "Loading this run" not in md
    # two runs: the Runs table counts the stopped case with the run's
    other = copy_as_another_run(small_run, tmp_path / "whole")
    assert cli.main(["report", str(other), str(run), "--output", str(tmp_path / "two"),
                     "--no-figures"]) == 0
    assert "| 3 (1 unfinished, left out) |" in (tmp_path / "two" / "report.md").read_text()


def test_a_run_still_going_warns_on_loading(small_run, tmp_path):
    run, ids = _stopped_copy(small_run, tmp_path / "going")
    with _held(run):
        with pytest.warns(RunStatusWarning) as caught:
            res = load(run)
    detail = res.status_detail["going"]
    assert detail.startswith("still running (it holds its lock): no end was recorded, ")
    assert [str(w.message) for w in caught] == [
        f"{run}: this run is incomplete: {detail}; 2 cases loaded, both finished; the case "
        "it was running is not loaded (Results.unfinished names it; Results.finished "
        "leaves it out)"]
    assert res.unfinished() == [dict(run_id="going", case_id=ids[2],
                                     error="still running as the run was read")]
    with warnings.catch_warnings():  # a complete run: none, and nothing unfinished
        warnings.simplefilter("error", ResultsWarning)
        whole = load(small_run)
    assert whole.unfinished() == [] and whole.status_warning == {"small": ""}
    assert whole.finished() is whole


def test_a_case_finishing_as_a_running_run_is_read_is_said_plainly(small_run, tmp_path):
    """A case's rows are appended before summary.json lists it: a run read between the
    two has rows of a case its summary names as running."""
    run, ids = _stopped_copy(small_run, tmp_path / "racing", keep_rows=True)
    counts = {name: sum(ln.startswith(ids[2] + ",") for ln in
                        (run / name).read_text().splitlines())
              for name in ("steps.csv", "requests.csv")}
    assert all(counts.values())
    rows = (f"{counts['steps.csv']:,} rows in steps.csv and {counts['requests.csv']:,} "
            "rows in requests.csv")
    with _held(run):
        with pytest.warns(ResultsWarning):
            res = load(run)
    assert res.warnings["racing"][1:] == [
        f"{run}: case '{ids[2]}' was finishing as the run was read: its {rows} came in "
        "before summary.json listed it (left out; read the run again to have it)"]
    assert ids[2] not in set(res.steps["case_id"])
    # no process holds the lock: rows of a case the summary does not list are an edit
    with pytest.warns(ResultsWarning):
        res = load(run)
    assert res.warnings["racing"][1:] == [
        f"{run}: case '{ids[2]}' has {rows}, but summary.json does not list it (left out)"]


def test_a_streamed_case_read_as_its_run_goes_is_said_running(small_run, tmp_path):
    """A streamed case (soak) appends its rows while it runs, for hours maybe: read
    then, it is running, not finishing."""
    run, ids = _stopped_copy(small_run, tmp_path / "streaming", keep_rows=True)
    summary = json.loads((run / "summary.json").read_text())
    for case in summary["metadata"]["cases"]:
        if case["case_id"] == ids[2]:
            case["stream"] = True
    (run / "summary.json").write_text(json.dumps(summary))
    n = {name: sum(ln.startswith(ids[2] + ",") for ln in (run / name).read_text().splitlines())
         for name in ("steps.csv", "requests.csv")}
    with _held(run):
        with pytest.warns(ResultsWarning):
            res = load(run)
    assert [ln for ln in res.warnings["streaming"] if ids[2] in ln and "streams" in ln] == [
        f"{run}: case '{ids[2]}' was running as the run was read: it streams its rows, and "
        f"its {n['steps.csv']:,} rows in steps.csv and {n['requests.csv']:,} rows in "
        "requests.csv so far are left out until it ends (read the run again then)"]


def test_the_configuration_table_of_a_run_still_going_marks_its_cases_so(
        small_run, tmp_path, capsys):
    """A report of a run still going marks its running case `still running` and those
    not started `not run yet`, not as a stopped run's (`did not finish`, `not run`: the
    run stopped before it)."""
    from ipc_bench.report.blocks import CASE_STATE_NOTES, NOT_RUN_YET, RUNNING

    run, ids = _stopped_copy(small_run, tmp_path / "going")
    with _held(run):
        assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"),
                         "--no-figures"]) == 0
    capsys.readouterr()
    md = (tmp_path / "rep" / "report.md").read_text()
    assert f"| 1 case: {ids[2]} (still running)" in md
    assert f"| 1 case: {ids[3]} (not run yet)" in md
    assert CASE_STATE_NOTES[RUNNING] in md and CASE_STATE_NOTES[NOT_RUN_YET] in md
    assert "(did not finish)" not in md and "(not run)" not in md
    # stopped (no process holds the lock): the stopped run's marks
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep2"),
                     "--no-figures"]) == 0
    md = (tmp_path / "rep2" / "report.md").read_text()
    assert f"| 1 case: {ids[2]} (did not finish)" in md
    assert f"| 1 case: {ids[3]} (not run)" in md
