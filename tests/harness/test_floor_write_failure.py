"""A finished case whose files were all written but floor.csv (a full disk, a file size
limit) is kept as finished without its floor, as one whose floor replay was cut short:
``complete`` true, ``floor_unwritten`` holding the write's line, a warning saying why;
the run still fails on the write, in the same one line, exit 1, and a report shows the
case without its floor figures. Where summary.json cannot take that either, the case is
written as unfinished, as before."""

from __future__ import annotations

import csv
import errno
import fnmatch
import json
import os
from pathlib import Path

import pytest

ENOSPC_LINE = "cannot write results to {run}: No space left on device"
CASE = "num_running=2/send/msgpack#0"
ONE_CASE = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "400",
            "--warmup-steps", "2", "--policies", "send", "--codecs", "msgpack",
            "--no-single-process", "--quiet"]
WARNING = ("floor.csv could not take the floor's rows (400 of them: No space left on "
           "device): the floor's figures (floor tok/s, x floor) are absent; its counted "
           "steps are all in steps.csv")


def _no_space(monkeypatch, refused: dict[str, int]) -> None:
    """Every write to a run-folder file named like a pattern of ``refused`` after its
    first N writes (pattern -> N; a CSV file's first is its header, as the run starts)
    writes half its data, then fails with ENOSPC."""
    from ipc_bench.harness import run_folder

    real, seen = run_folder.write_fd, dict.fromkeys(refused, 0)

    def write_fd(fd: int, data: bytes, path) -> None:
        for pattern, after in refused.items():
            if fnmatch.fnmatch(Path(path).name, pattern):
                seen[pattern] += 1
                if seen[pattern] > after:
                    os.write(fd, data[:len(data) // 2])
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(fd, data, path)

    monkeypatch.setattr(run_folder, "write_fd", write_fd)


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_a_floor_csv_that_cannot_be_written_keeps_the_case_finished_without_its_floor(
        tmp_path, monkeypatch, capsys):
    from ipc_bench import cli

    run = tmp_path / "run"
    _no_space(monkeypatch, {"floor.csv": 1})
    assert cli.main(ONE_CASE + ["--output", str(run)]) == 1
    out, err = capsys.readouterr()
    message = ENOSPC_LINE.format(run=run) + "; rows not written: 400 of floor.csv"
    assert err == f"bench.py: error: {message}; partial results: {run}\n"
    summary = json.loads((run / "summary.json").read_text())
    n = len(summary["cases"][0]["warnings"])  # a loaded machine's noise warnings too
    assert out == (f"{n} warning{'' if n == 1 else 's'} recorded in "
                   f"{run / 'summary.json'} (not shown: --quiet)\n")
    assert (summary["status"], summary["problems"], summary["failed_case"]) == (
        "failed", [message], CASE)
    [case] = summary["cases"]
    assert (case["case_id"], case["complete"], case["error"]) == (CASE, True, None)
    assert case["floor_unwritten"] == ENOSPC_LINE.format(run=run)
    assert case["rows_not_written"] == {"floor.csv": 400}
    assert [w for w in case["warnings"] if "floor" in w] == [WARNING]
    assert "failed_step" not in case and "floor_failed" not in case
    assert case.get("floor_output_tokens_per_s") is None
    assert case.get("floor_step_ns_mean") is None
    # the figures are those of the rows on disk: steps.csv holds every step of the case
    steps = _rows(run / "steps.csv")
    counted = [r for r in steps if r["counted"] == "1"]
    assert (len(steps), len(counted), case["num_steps"]) == (402, 400, 400)
    tokens = sum(int(r["num_output_tokens"]) for r in counted)
    busy_ns = sum(int(r["step_ns"]) for r in counted)
    assert case["output_tokens_per_s"] == pytest.approx(tokens * 1e9 / busy_ns, rel=1e-12)
    assert _rows(run / "floor.csv") == []
    assert len(_rows(run / "requests.csv")) == 2
    assert not (run / "steps.partial.csv").exists()


def test_the_report_of_that_run_shows_the_case_and_why_its_floor_is_absent(
        tmp_path, monkeypatch, capsys):
    from ipc_bench import cli

    run = tmp_path / "run"
    with monkeypatch.context() as m:
        _no_space(m, {"floor.csv": 1})
        assert cli.main(ONE_CASE + ["--output", str(run)]) == 1
    capsys.readouterr()
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 0
    text = (tmp_path / "rep" / "report.md").read_text()
    assert "No case finished" not in text
    assert ("1 of 1 case lost its floor to a failed write, floor.csv not taking its "
            "rows: its x floor and floor tok/s are absent (all listed under Measurement "
            "warnings); bytes are exact whatever the load.\n") in text
    assert f"- `{CASE}`: {WARNING}\n" in text
    [row] = [line for line in text.splitlines()
             if line.startswith("| 0 | send | msgpack | ipc")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    [case] = json.loads((run / "summary.json").read_text())["cases"]
    assert cells[4:8] == ["400", f"{case['output_tokens_per_s']:,.0f}", "-", "-"]


def test_where_summary_json_cannot_take_it_either_the_case_is_unfinished_as_before(
        tmp_path, monkeypatch, capsys):
    from ipc_bench import cli

    run = tmp_path / "run"
    # summary.json: written as the run starts and as the case begins, then refused
    _no_space(monkeypatch, {"floor.csv": 1, "summary.json.*.tmp": 2})
    assert cli.main(ONE_CASE + ["--output", str(run)]) == 1
    out, err = capsys.readouterr()
    assert (out, err) == ("", (
        f"bench.py: error: {ENOSPC_LINE.format(run=run)}; rows not written: 400 of "
        "floor.csv (summary.json could not be updated either: No space left on device; "
        "it still says the run is incomplete and lists no case; case "
        f"{CASE} is not listed, so a report leaves out its rows on disk: 402 in "
        "steps.csv and 2 in requests.csv)\n"))
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["status"], summary["cases"], summary["running_case"]) == (
        "incomplete", [], CASE)


def test_the_findings_count_the_cases_whose_floor_rows_were_not_written_apart():
    """Not as a floor replay cut short (its words name the runner's per-step columns
    absent, which such a case has), nor as warnings on the steps."""
    import pandas as pd

    from ipc_bench.report.findings import _noise_findings

    cases = pd.DataFrame({"case_id": ["a", "b", "c"], "num_steps": [400, 400, 400],
                          "warnings": [[WARNING], [WARNING], []]})
    assert _noise_findings(cases) == [
        "2 of 3 cases lost their floor to a failed write, floor.csv not taking their rows: "
        "their x floor and floor tok/s are absent (all listed under Measurement "
        "warnings); bytes are exact whatever the load."]
