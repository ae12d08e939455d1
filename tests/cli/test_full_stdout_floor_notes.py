"""A run whose stdout fails (``> /dev/full``) lost its ``note:`` lines on floors not
comparable with the tables: stderr's count line, which names them, says so and points
at the report, which lists them, where it once sent the reader to stdout."""

from __future__ import annotations

import errno
import os

from ipc_bench.cli.execute import warnings_count_line

NOTE = "at num_running=2 send / cached floors differ"
TINY = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "20",
        "--warmup-steps", "2", "--policies", "send,cached", "--codecs", "msgpack",
        "--no-single-process", "--no-floor"]


class _Full:
    """A stdout whose every write fails as one to ``/dev/full`` does."""

    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def test_the_line_where_stdout_failed_points_at_the_report(tmp_path):
    assert warnings_count_line([{}], tmp_path, 1, stdout_lost=True) == (
        "1 pair of floors not comparable (the run's note: lines, lost with stdout; the "
        f"report lists them): see Measurement warnings in python bench.py report "
        f"{tmp_path}, which lists them (they are not in {tmp_path}/summary.json)")
    assert warnings_count_line([{"warnings": ["a"]}], tmp_path, 7, stdout_lost=True) == (
        "1 measurement warning in 1 of 1 case (printed under their case lines above); 7 "
        "pairs of floors not comparable (the run's note: lines, lost with stdout; the "
        f"report lists them): the warnings in {tmp_path}/summary.json, the warnings and "
        f"the floor notes under Measurement warnings in python bench.py report {tmp_path}")


def test_a_run_on_a_full_stdout_says_its_notes_were_lost(tmp_path, monkeypatch, capsys):
    from ipc_bench import cli
    from ipc_bench.cli import execute
    from ipc_bench.cli.command_line import SCRIPT

    monkeypatch.setattr(execute, "noise_warnings", lambda summary, usage=None: [])
    monkeypatch.setattr(execute, "floor_pair_notes", lambda cases: [NOTE])
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # no load note
    monkeypatch.setattr("sys.stdout", _Full())
    run = tmp_path / "r"
    assert cli.main(TINY + ["--output", str(run)]) == 1
    assert capsys.readouterr().err.splitlines()[-2:] == [
        "1 pair of floors not comparable (the run's note: lines, lost with stdout; the "
        f"report lists them): see Measurement warnings in python {SCRIPT} report {run}, "
        f"which lists them (they are not in {run}/summary.json)",
        f"bench.py: error: cannot write to stdout: No space left on device; the results "
        f"are in {run}"]
