"""A warning a scenario's report adds to a case after the run's last case (step-time's
send case descheduled: ``send_cost_send_step_off``) comes after the case lines, where
it is printed, ``warning: CASE: TEXT``, after the run's time line; the count line says
so instead of calling it printed under its case's line."""

from __future__ import annotations

import json
import os

from ipc_bench import cli
from ipc_bench.cli import execute
from ipc_bench.harness.scenario import discover

SEND_ID = "num_running=2,step_time_ms=1.0/send/msgpack#0"
LATE = "fixed step 1 ms: send's case was descheduled (a stand-in warning)"


def test_a_warning_added_after_the_last_case_is_printed_after_it(
        tmp_path, capsys, monkeypatch):
    step_time = discover()["step-time"]
    real = step_time.pair_cost
    monkeypatch.setattr(step_time, "pair_cost",
                        lambda send, cached: {**real(send, cached),
                                              "send_cost_send_step_off": [LATE]})
    monkeypatch.setattr(execute, "noise_warnings", lambda summary, usage=None: [])
    monkeypatch.setattr(execute, "floor_pair_notes", lambda cases: [])
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # no load note
    out = tmp_path / "run"
    assert cli.main(["--scenario", "step-time", "--step-time-ms", "1", "--num-running",
                     "2", "--steps", "20", "--warmup-steps", "2", "--codecs", "msgpack",
                     "--no-single-process", "--no-floor", "--output", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert not any(line.startswith("  warning: ") for line in err), err
    timed = next(i for i, line in enumerate(err) if line.startswith("ipc-bench: 2 cases run in "))
    assert err[timed + 1] == f"warning: {SEND_ID}: {LATE}"
    assert len(err) == timed + 3 and err[timed + 2].startswith(
        "1 measurement warning in 1 of 2 cases (found after the last case by the "
        f"scenario's report, printed after it): see {out}/summary.json, or Measurement "
        "warnings in python "), err
    cases = {c["case_id"]: c for c in json.loads((out / "summary.json").read_text())["cases"]}
    assert cases[SEND_ID]["warnings"] == [LATE]


def test_the_count_line_for_stdout_says_they_went_to_stderr(tmp_path):
    line = execute.warnings_count_line([{"warnings": ["a", "b"]}], tmp_path, late=1,
                                       on_stdout=True)
    assert line.startswith(
        "2 measurement warnings in 1 of 1 case (printed on stderr under their case lines; "
        "1 of them found after the last case by the scenario's report, printed on stderr "
        "after it): ")
    assert execute.warnings_count_line([{"warnings": ["a"]}], tmp_path, late=1).startswith(
        "1 measurement warning in 1 of 1 case (found after the last case by the scenario's "
        "report, printed after it): ")
