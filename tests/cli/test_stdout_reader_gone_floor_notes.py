"""A run whose stdout's reader had gone when the run's end text was written (``| true``,
exit 141) had its ``note:`` lines on floors not comparable read by no one: stderr's
count line says so and points at the report, which lists them, where it said they were
on stdout (``execute._stdout_gone``)."""

from __future__ import annotations

import errno
import os

from ipc_bench.cli.execute import warnings_count_line

NOTE = "at num_running=2 send / cached floors differ"
TINY = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "20",
        "--warmup-steps", "2", "--policies", "send,cached", "--codecs", "msgpack",
        "--no-single-process", "--no-floor"]


class _Gone:
    """A stdout whose reader has gone: every write fails with a broken pipe."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def test_the_line_where_stdouts_reader_had_gone_points_at_the_report(tmp_path):
    assert warnings_count_line([{"warnings": ["a"]}], tmp_path, 7, stdout_gone=True) == (
        "1 measurement warning in 1 of 1 case (printed under their case lines above); 7 "
        "pairs of floors not comparable (the run's note: lines, unread: stdout's reader "
        f"had gone; the report lists them): the warnings in {tmp_path}/summary.json, the "
        f"warnings and the floor notes under Measurement warnings in python bench.py "
        f"report {tmp_path}")
    assert warnings_count_line([{}], tmp_path, 1).startswith(  # read: on stdout
        "1 pair of floors not comparable (the run's note: lines, on stdout): ")


def test_a_run_whose_stdout_reader_had_gone_says_its_notes_were_unread(
        tmp_path, monkeypatch, capsys):
    from ipc_bench import cli
    from ipc_bench.cli import execute
    from ipc_bench.cli.command_line import SCRIPT

    monkeypatch.setattr(execute, "noise_warnings", lambda summary, usage=None: [])
    monkeypatch.setattr(execute, "floor_pair_notes", lambda cases: [NOTE])
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # no load note
    monkeypatch.setattr("sys.stdout", _Gone())
    run = tmp_path / "r"
    assert cli.main(TINY + ["--output", str(run)]) == 141
    assert capsys.readouterr().err.splitlines()[-1] == (
        "1 pair of floors not comparable (the run's note: lines, unread: stdout's reader "
        f"had gone; the report lists them): see Measurement warnings in python {SCRIPT} "
        f"report {run}, which lists them (they are not in {run}/summary.json)")
