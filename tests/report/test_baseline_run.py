"""``bench.py report RUN... --baseline RUN_DIR``: the side-by-side ratio columns divide
by the run chosen (one of those given, however spelt), its caption names it, and a row
that run has no case for shows ``-`` with a note saying why; any other folder is one
error line and exit code 2."""

from __future__ import annotations

import pytest

from analysis_run import run_bench
from ipc_bench import cli

COMMON = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "20",
          "--warmup-steps", "5", "--codecs", "msgpack", "--no-floor", "--no-single-process"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run ``full`` (send and cached) and run ``sendonly`` (send alone)."""
    base = tmp_path_factory.mktemp("baseline")
    run_bench(base / "full", COMMON)
    run_bench(base / "sendonly", COMMON + ["--policies", "send"])
    return base


def _side_by_side(md: str) -> list[str]:
    lines = md.splitlines()
    start = lines.index("## Side by side")
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("## "))
    return lines[start + 1:end]


def test_the_chosen_run_is_the_denominator_and_its_missing_rows_are_explained(
        runs, capsys):
    code = cli.main(["report", str(runs / "full"), str(runs / "sendonly"),
                     "--baseline", str(runs / "sendonly") + "/",
                     "--output", str(runs / "rep")])
    assert code == 0, capsys.readouterr().err
    section = _side_by_side((runs / "rep" / "report.md").read_text())
    assert section[1] == ("**output tokens/s** (mean over repetitions; the ratio column, "
                          "`full / sendonly`, divides each run's mean by that of run "
                          "`sendonly`, the baseline given)")
    assert "| workload | arm | codec | full | sendonly | full / sendonly |" in section
    cached = [ln for ln in section if ln.startswith("| num_running=4 | cached |")]
    assert cached and all(ln.endswith("| - | - |") for ln in cached)
    note = ("`-` in the ratio columns of a row: run `sendonly` has no such case "
            "(workload, arm and codec), so there is no mean to divide by.")
    assert section.count(note) == section.count("| workload | arm | codec | full | "
                                                 "sendonly | full / sendonly |")


def test_a_baseline_that_is_not_one_of_the_runs_is_one_error_line(runs, tmp_path, capsys):
    other = tmp_path / "other"
    other.mkdir()
    code = cli.main(["report", str(runs / "full"), str(runs / "sendonly"),
                     "--baseline", str(other), "--output", str(tmp_path / "rep")])
    assert code == 2
    assert capsys.readouterr().err == (
        f"bench.py report: error: --baseline {other}: not one of the run folders given "
        f"({runs / 'full'}, {runs / 'sendonly'})\n")
    assert not (tmp_path / "rep").exists()
