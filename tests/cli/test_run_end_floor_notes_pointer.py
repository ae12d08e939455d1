"""The run-end count line of a run with notes on floors not comparable points at where
those notes are: the report (under Measurement warnings), which works them out again,
not summary.json, which does not hold them; the recorded warnings beside them are
still said to be in summary.json."""

from __future__ import annotations

import os

from ipc_bench.cli.execute import warnings_count_line

NOTE = "at num_running=2 send / cached floors differ"
TINY = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "20",
        "--warmup-steps", "2", "--policies", "send,cached", "--codecs", "msgpack",
        "--no-single-process", "--no-floor"]
IDS = ["trace=azure-conv:30/send/msgpack#0", "trace=azure-conv:30/send/msgpack#1"]


def test_floor_notes_alone_point_at_the_report_only(tmp_path):
    assert warnings_count_line([{}, {}], tmp_path, 2) == (
        "2 pairs of floors not comparable (the run's note: lines, on stdout): see "
        f"Measurement warnings in python bench.py report {tmp_path}, which lists them "
        f"(they are not in {tmp_path}/summary.json)")
    assert warnings_count_line([{}], tmp_path, 1, on_stdout=True) == (
        "1 pair of floors not comparable (the note: lines above): see Measurement "
        f"warnings in python bench.py report {tmp_path}, which lists them (they are not "
        f"in {tmp_path}/summary.json)")


def test_floor_notes_beside_warnings_say_which_are_where(tmp_path):
    assert warnings_count_line([{"warnings": ["a", "b"]}], tmp_path, 3) == (
        "2 measurement warnings in 1 of 1 case (printed under their case lines above); 3 "
        "pairs of floors not comparable (the run's note: lines, on stdout): the warnings "
        f"in {tmp_path}/summary.json, the warnings and the floor notes under Measurement "
        f"warnings in python bench.py report {tmp_path}")
    cases = [dict(case_id=IDS[0], warnings=["rough"]), dict(case_id=IDS[1], warnings=[])]
    assert warnings_count_line(cases, tmp_path, 1, added={IDS[1]: ["vary"]}) == (
        "2 measurement warnings in 2 of 2 cases (printed under their case lines above; 1 "
        "of them on the repetitions of a trace replay arm that vary over 10 %, printed "
        "after the last case); 1 pair of floors not comparable (the run's note: lines, on "
        f"stdout): the recorded warnings in {tmp_path}/summary.json, all of them and the "
        f"floor notes under Measurement warnings in python bench.py report {tmp_path}")


def test_a_run_with_floor_notes_and_no_warning_ends_pointing_at_the_report(
        tmp_path, monkeypatch, capsys):
    from ipc_bench import cli
    from ipc_bench.cli import execute
    from ipc_bench.cli.command_line import SCRIPT

    monkeypatch.setattr(execute, "noise_warnings", lambda summary, usage=None: [])
    monkeypatch.setattr(execute, "floor_pair_notes", lambda cases: [NOTE])
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # no load note
    run = tmp_path / "r"
    assert cli.main(TINY + ["--output", str(run)]) == 0
    assert capsys.readouterr().err.splitlines()[-1] == (
        "1 pair of floors not comparable (the run's note: lines, on stdout): see "
        f"Measurement warnings in python {SCRIPT} report {run}, which lists them (they "
        f"are not in {run}/summary.json)")
