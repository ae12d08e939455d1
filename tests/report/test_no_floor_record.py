"""Each case of ``summary.json`` records whether ``--no-floor`` left it without its
floor (``no_floor``), and the tables read that record to say why the floor columns
are empty: true for the cases of a run given ``--no-floor``, false for a run without
it and for cases that run no floor whatever the options (the overhead scenario, a
timed replay). A summary written before the record (no ``no_floor``) is still read:
the note is then inferred from the case's scenario and settings."""

from __future__ import annotations

import json
import shutil

import pytest

from analysis_run import run_bench
from ipc_bench import cli
from ipc_bench.report.tables import format_tables

STEADY = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "20",
          "--warmup-steps", "5", "--codecs", "msgpack", "--no-single-process"]
NOTE = ("floor tok/s, x floor: - for a two-process case run with --no-floor, which "
        "replays no floor")
REPORT_NOTE = ("`floor tok/s`, `x floor`: - for a two-process case run with `--no-floor`, "
               "which replays no floor.")
TIMED_NOTE = "floor tok/s, x floor: - for a timed replay, which runs no floor"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run folders: decode-steady with and without ``--no-floor``, overhead and a
    timed replay with ``--no-floor``."""
    from test_timed_no_floor import write_trace

    base = tmp_path_factory.mktemp("floorflag")
    trace = base / "trace.csv"
    write_trace(trace)
    run_bench(base / "no_floor", STEADY + ["--no-floor"])
    run_bench(base / "floor", STEADY)
    run_bench(base / "overhead", ["--scenario", "overhead", "--num-running", "4", "--steps",
                                  "20", "--warmup-steps", "5", "--repeat", "2", "--no-floor"])
    run_bench(base / "timed", ["--scenario", "azure-conv-timed", "--trace", str(trace),
                               "--max-requests", "6", "--codecs", "msgpack",
                               "--warmup-steps", "2", "--no-single-process", "--no-floor"])
    return base


def _cases(run) -> list[dict]:
    return json.loads((run / "summary.json").read_text())["cases"]


def _notes(cases) -> list[str]:
    return [ln.strip() for ln in format_tables(cases).splitlines()
            if ln.startswith("  floor tok/s, x floor:")]


def test_the_summary_records_whether_no_floor_left_a_case_without_its_floor(runs):
    cases = _cases(runs / "no_floor")
    assert [(c["policy"], c["no_floor"], c.get("floor_output_tokens_per_s")) for c in cases] \
        == [("send", True, None), ("cached", True, None)]
    cases = _cases(runs / "floor")
    assert [(c["policy"], c["no_floor"]) for c in cases] == [("send", False), ("cached", False)]
    assert all(c["floor_output_tokens_per_s"] > 0 for c in cases)


def test_cases_that_never_run_a_floor_record_no_floor_false(runs):
    overhead = _cases(runs / "overhead")
    assert len(overhead) == 8 and {c["no_floor"] for c in overhead} == {False}
    assert _notes(overhead) == []
    timed = _cases(runs / "timed")
    assert [c["no_floor"] for c in timed] == [False, False]
    assert _notes(timed) == [TIMED_NOTE + " (the floor replays the recorded steps back to "
                                          "back; a timed replay's steps wait for arrivals)"]


def test_the_tables_read_the_record(runs):
    assert _notes(_cases(runs / "no_floor")) == [NOTE]
    assert _notes(_cases(runs / "floor")) == []
    # the record, not the scenario: a case recorded as not skipped by --no-floor
    # gets no note, although nothing else tells it from one that was
    edited = [dict(c, no_floor=False) for c in _cases(runs / "no_floor")]
    assert _notes(edited) == []
    # a case recorded as skipped gets the note whatever its scenario's name
    overhead = [dict(c, no_floor=True) for c in _cases(runs / "overhead")
                if c.get("num_steps")]
    assert overhead and _notes(overhead) == [NOTE] * 2  # a table per policy (label of)


def _without_record(run, path):
    shutil.copytree(run, path)
    summary = json.loads((path / "summary.json").read_text())
    for case in summary["cases"]:
        del case["no_floor"]
    (path / "summary.json").write_text(json.dumps(summary))
    return path


def test_a_summary_written_before_the_record_is_inferred_from_its_settings(runs, tmp_path):
    old = _without_record(runs / "no_floor", tmp_path / "old")
    assert _notes(_cases(old)) == [NOTE]
    assert _notes(_cases(_without_record(runs / "overhead", tmp_path / "old_overhead"))) == []
    assert cli.main(["report", str(old), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 0
    assert REPORT_NOTE in (tmp_path / "rep" / "report.md").read_text().splitlines()


def test_the_report_reads_the_record_beside_an_older_run(runs, tmp_path):
    old = _without_record(runs / "floor", tmp_path / "old")
    out = tmp_path / "rep"
    assert cli.main(["report", str(runs / "no_floor"), str(old), "--output", str(out),
                     "--no-figures"]) == 0
    md = (out / "report.md").read_text().splitlines()
    assert md.count(REPORT_NOTE) == 1
    assert cli.main(["report", str(runs / "floor"), "--output", str(tmp_path / "r2"),
                     "--no-figures"]) == 0
    assert REPORT_NOTE not in (tmp_path / "r2" / "report.md").read_text()


@pytest.mark.parametrize("value", ["yes", 1, None], ids=["text", "number", "null"])
def test_a_record_that_is_not_true_or_false_is_said_and_inferred(runs, tmp_path, value):
    """A hand-edited ``no_floor`` (neither true nor false): one warning naming the case
    and the value, then the record is read as absent (the note inferred, as for a
    summary written before it)."""
    import warnings

    from ipc_bench.analysis.results import load
    from ipc_bench.analysis.run_files import ResultsWarning

    edited = tmp_path / "edited"
    shutil.copytree(runs / "no_floor", edited)
    summary = json.loads((edited / "summary.json").read_text())
    summary["cases"][0]["no_floor"] = value
    case_id = summary["cases"][0]["case_id"]
    (edited / "summary.json").write_text(json.dumps(summary))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResultsWarning)
        results = load(edited)
    shown = json.dumps(value)
    assert [str(w.message) for w in caught] == [
        f"{edited / 'summary.json'}: case {case_id!r} has no_floor {shown}, not true or "
        "false (read as absent: inferred from the case's settings)"]
    assert len(results.cases) == 2  # said, not left out
    rows = results.cases.to_dict("records")
    assert rows[0]["no_floor"] != rows[0]["no_floor"] and rows[1]["no_floor"] is True
    assert _notes(rows) == [NOTE]


def _empty_floor_report(runs, name, tmp_path, capsys) -> tuple[int, str]:
    run = tmp_path / name
    shutil.copytree(runs / name, run)
    (run / "floor.csv").write_bytes(b"")
    code = cli.main(["report", str(run), "--no-figures", "--output", str(tmp_path / "rep")])
    return code, capsys.readouterr().err


def test_an_empty_floor_csv_is_refused_where_a_case_has_floor_figures(runs, tmp_path,
                                                                      capsys):
    # summary.json's floor tok/s and x floor would stand with no row behind them
    code, err = _empty_floor_report(runs, "floor", tmp_path, capsys)
    run = tmp_path / "floor"
    assert (code, err) == (2, f"bench.py report: error: {run}: not a complete run folder "
                              "(floor.csv is empty)\n")


def test_an_empty_floor_csv_of_a_run_without_its_floor_is_only_warned_about(
        runs, tmp_path, capsys):
    code, err = _empty_floor_report(runs, "no_floor", tmp_path, capsys)
    run = tmp_path / "no_floor"
    assert (code, err) == (0, f"bench.py report: warning: {run}/floor.csv: it is empty (not "
                              "even its header line), so nothing is loaded from it; loaded what "
                              "is valid\n")
