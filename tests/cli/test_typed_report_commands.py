"""The commands a report and a run's end name for the reader to type: the report's
``Rendered ... by`` line is ``cd CWD && python SCRIPT report ...``, as the run's ``-
command:`` line is, ``SCRIPT`` being ``bench.py`` as typed (``sys.argv[0]``) or its
absolute path in-process, so that it renders the report again from any folder; the
run's last lines point at ``python SCRIPT report DIR``, typed in the same folder. And
the report's floor notes, which a run whose stdout failed never printed, say so."""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from ipc_bench import cli
from ipc_bench.cli import execute
from ipc_bench.cli.command_line import SCRIPT, recording
from ipc_bench.cli.execute import quiet_warnings_line, warnings_count_line

REPO = Path(__file__).resolve().parents[2]
TINY = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "20",
        "--warmup-steps", "2", "--policies", "send,cached", "--codecs", "msgpack",
        "--no-single-process", "--no-floor"]
NOTE = "at num_running=2 send / cached floors differ"
ENOSPC = os.strerror(errno.ENOSPC)


class _Full:
    """A stdout whose every write fails as one to ``/dev/full`` does."""

    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, ENOSPC)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def _rendered(out: Path) -> str:
    line = next(ln for ln in (out / "report.md").read_text().splitlines()
                if ln.startswith("Rendered "))
    return re.sub(r"^Rendered \d{4}-\d\d-\d\d \d\d:\d\d UTC by ", "Rendered by ", line)


def _trial(tmp_path: Path, capsys) -> tuple[Path, str]:
    """A run in ``TRIAL/w d/r1`` and bench.py's path relative to ``TRIAL``."""
    trial = tmp_path / "trial3"
    assert cli.main(TINY + ["--quiet", "--output", str(trial / "w d" / "r1")]) == 0
    capsys.readouterr()
    return trial, os.path.relpath(REPO / "bench.py", trial)


def test_the_rendered_by_line_of_bench_py_typed_elsewhere_reruns_from_anywhere(
        tmp_path, capsys):
    trial, script = _trial(tmp_path, capsys)
    argv = [script, "report", "w d/r1", "--no-figures", "--output", "rrX"]
    proc = subprocess.run([sys.executable, *argv], cwd=trial, capture_output=True,
                          text=True, timeout=120)
    assert (proc.returncode, proc.stdout) == (0, "report: rrX/report.html\n")
    line = (f"cd {trial} && python {script} report 'w d/r1' --no-figures --output rrX")
    want = (f"Rendered by `{line}` from run folder `r1` (raw data: `r1.summary.json` "
            "beside this file).")
    assert _rendered(trial / "rrX") == want
    (trial / "rrX" / "report.md").unlink()
    proc = subprocess.run(["bash", "-c", line.replace(" && python ", f" && {sys.executable} ")],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout) == (0, "report: rrX/report.html\n")
    assert _rendered(trial / "rrX") == want


def test_the_rendered_by_line_in_process_names_bench_py_absolute(tmp_path, capsys,
                                                                  monkeypatch):
    trial, _ = _trial(tmp_path, capsys)
    monkeypatch.chdir(trial)
    assert cli.main(["report", "w d/r1", "--no-figures", "--output", "rrX"]) == 0
    assert capsys.readouterr().out == "report: rrX/report.html\n"
    assert SCRIPT == str(REPO / "bench.py")
    assert _rendered(trial / "rrX") == (
        f"Rendered by `cd {trial} && python {SCRIPT} report 'w d/r1' --no-figures "
        "--output rrX` from run folder `r1` (raw data: `r1.summary.json` beside this "
        "file).")


def test_the_report_command_names_bench_py_as_the_run_did():
    from ipc_bench.cli.execute import report_command

    assert report_command(Path("df7")) == "python bench.py report df7"  # not in cli.main
    with recording(["../head2/bench.py", "--scenario", "soak"], "/tmp/trial3"):
        assert report_command(Path("df7")) == "python ../head2/bench.py report df7"
        assert report_command(Path("w d/r1")) == (
            "python ../head2/bench.py report 'w d/r1'")
        assert warnings_count_line([{"warnings": ["a"]}], Path("df7")) == (
            "1 measurement warning in 1 of 1 case (printed under their case lines above): "
            "see df7/summary.json, or Measurement warnings in python ../head2/bench.py "
            "report df7")
        assert quiet_warnings_line([{"case_id": "c", "warnings": []}], Path("df7"),
                                   {"c": ["x"]}) == (
            "1 warning on the repetitions of a trace replay arm that vary over 10 % (in "
            "python ../head2/bench.py report df7)")
    with recording(["bench.py", "--scenario", "soak"], "/tmp/trial3"):
        assert report_command(Path("df7")) == "python bench.py report df7"
    with recording(["/tmp/my x/bench.py", "--scenario", "soak"]):
        assert report_command(Path("df7")) == "python '/tmp/my x/bench.py' report df7"


def _last_line(capsys) -> str:
    return capsys.readouterr().err.splitlines()[-1]


def test_a_runs_last_line_names_bench_py_as_typed(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(execute, "noise_warnings",
                        lambda summary, usage=None: [f"noisy {summary['case_id']}"])
    monkeypatch.setattr(execute, "floor_pair_notes", lambda cases: [])
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # no load note
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["../head2/bench.py", *TINY, "--output", "df7"])
    assert cli.main() == 0  # bench.py's own call: sys.argv as typed
    assert _last_line(capsys) == (
        "2 measurement warnings in 2 of 2 cases (printed under their case lines above): "
        "see df7/summary.json, or Measurement warnings in python ../head2/bench.py "
        "report df7")
    assert cli.main(TINY + ["--output", "in proc"]) == 0
    assert _last_line(capsys) == (
        "2 measurement warnings in 2 of 2 cases (printed under their case lines above): "
        f"see in proc/summary.json, or Measurement warnings in python {SCRIPT} report "
        "'in proc'")


def test_the_reports_floor_notes_say_a_failed_stdout_lost_them(tmp_path, capsys,
                                                                monkeypatch):
    monkeypatch.setattr(execute, "noise_warnings", lambda summary, usage=None: [])
    monkeypatch.setattr(execute, "floor_pair_notes", lambda cases: [NOTE])
    monkeypatch.setattr("ipc_bench.analysis.summary.floor_pair_notes", lambda cases: [NOTE])
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert cli.main(TINY + ["--output", str(tmp_path / "printed")]) == 0
    with monkeypatch.context() as m:
        m.setattr("sys.stdout", _Full())
        assert cli.main(TINY + ["--output", str(tmp_path / "lost")]) == 1
    capsys.readouterr()

    def lines(*runs: str) -> list[str]:
        out = tmp_path / f"rep-{'-'.join(runs)}"
        assert cli.main(["report", *(str(tmp_path / r) for r in runs), "--no-figures",
                         "--output", str(out)]) == 0
        md = (out / "report.md").read_text().splitlines()
        i = next(i for i, ln in enumerate(md) if ln.startswith("Floors of send"))
        return md[i:i + 3]

    assert lines("lost") == [
        "Floors of send / cached twins (the run's `note:` lines for these were lost with "
        "its stdout):", "", f"- {NOTE}"]
    assert lines("printed") == [
        "Floors of send / cached twins (the run printed these as `note:` lines):", "",
        f"- {NOTE}"]


def test_the_floor_notes_intro_of_several_runs():
    from ipc_bench.report.blocks import _floor_notes_intro

    lost = [f"cannot write to stdout: {ENOSPC}"]
    assert _floor_notes_intro(SimpleNamespace(problems={"a": [], "b": lost})) == (
        "Floors of send / cached twins (the runs printed these as `note:` lines, but "
        "`b`, whose stdout failed, lost them):")
    assert _floor_notes_intro(SimpleNamespace(problems={"a": lost, "b": lost})) == (
        "Floors of send / cached twins (the runs' `note:` lines for these were lost with "
        "their stdout):")
    assert _floor_notes_intro(SimpleNamespace(problems={"a": [], "b": []})) == (
        "Floors of send / cached twins (the run printed these as `note:` lines):")
    assert _floor_notes_intro(SimpleNamespace()) == (
        "Floors of send / cached twins (the run printed these as `note:` lines):")
