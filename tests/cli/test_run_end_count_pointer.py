"""The run-end count line's pointer says where each kind of warning it counts lives:
the recorded ones in summary.json, the ones the report adds to a trace replay arm
whose repetitions vary over 10 % (``replay_arm_warnings``) only in the report."""

from __future__ import annotations

from ipc_bench.cli.execute import warnings_count_line

IDS = ["trace=azure-conv:30/send/msgpack#0", "trace=azure-conv:30/send/msgpack#1"]
LINE = "across the 2 repetitions of its arm, its 50-step block means vary"


def test_recorded_warnings_alone_point_at_the_summary_or_the_report(tmp_path):
    cases = [dict(case_id=IDS[0], warnings=["rough"]), dict(case_id=IDS[1], warnings=[])]
    assert warnings_count_line(cases, tmp_path, added={}) == (
        "1 measurement warning in 1 of 2 cases (printed under their case lines above): "
        f"see {tmp_path}/summary.json, or Measurement warnings in python bench.py report "
        f"{tmp_path}")


def test_added_warnings_with_floor_notes_point_at_the_report(tmp_path):
    bare = [dict(case_id=c, warnings=[]) for c in IDS]
    assert warnings_count_line(bare, tmp_path, floor_notes=1, added={IDS[1]: [LINE]}) == (
        "1 measurement warning in 1 of 2 cases (on the repetitions of a trace replay arm "
        "that vary over 10 %, printed after the last case); 1 pair of floors not comparable "
        "(the run's note: lines, on stdout): see Measurement warnings in python bench.py "
        f"report {tmp_path}, which adds the warnings and lists the floor notes (neither is "
        f"in {tmp_path}/summary.json)")


def test_recorded_and_added_warnings_say_which_are_where(tmp_path):
    cases = [dict(case_id=IDS[0], warnings=["rough", "rougher"]),
             dict(case_id=IDS[1], warnings=["rough"])]
    assert warnings_count_line(cases, tmp_path, added={IDS[0]: [LINE]}) == (
        "4 measurement warnings in 2 of 2 cases (printed under their case lines above; 1 "
        "of them on the repetitions of a trace replay arm that vary over 10 %, printed "
        f"after the last case): the recorded ones in {tmp_path}/summary.json, all of them "
        f"under Measurement warnings in python bench.py report {tmp_path}")
