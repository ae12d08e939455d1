"""``bench.py report RUN... --baseline RUN_DIR``: the side-by-side ratio columns divide
by the run chosen (one of those given, however spelt), its caption names it, and a row
that run has no case for shows ``-`` with a note saying why; the environment differences
under Runs are each run's against it, under a line naming it; any other folder is one
error line and exit code 2."""

from __future__ import annotations

import json

import pytest

from analysis_run import copy_as_another_run, run_bench
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
                          "`full ÷ sendonly`, divides each run's mean by that of run "
                          "`sendonly`, the baseline given)")
    assert "| workload | arm | codec | full | sendonly | full ÷ sendonly |" in section
    cached = [ln for ln in section if ln.startswith("| num_running=4 | cached |")]
    assert cached and all(ln.endswith("| - | - |") for ln in cached)
    note = ("`-` in the ratio columns of a row: run `sendonly` has no such case "
            "(workload, arm and codec), so there is no mean to divide by.")
    assert section.count(note) == section.count("| workload | arm | codec | full | "
                                                 "sendonly | full ÷ sendonly |")


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


def _runs_section(md: str) -> list[str]:
    lines = md.splitlines()
    start = lines.index("## Runs")
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("## "))
    return [ln for ln in lines[start + 1:end] if ln and not ln.startswith("|")]


def test_environment_differences_are_stated_against_the_chosen_run(runs, tmp_path, capsys):
    """A copy of run ``full`` with another torch version, given second and chosen as the
    baseline: the difference is ``full``'s against it, under a line naming it."""
    older = copy_as_another_run(runs / "full", tmp_path / "older")
    summary = json.loads((older / "summary.json").read_text())
    torch_version = summary["metadata"]["packages"]["torch"]
    summary["metadata"]["packages"]["torch"] = "2.12.0"
    (older / "summary.json").write_text(json.dumps(summary))
    code = cli.main(["report", str(runs / "full"), str(older), "--baseline", str(older),
                     "--output", str(tmp_path / "rep"), "--no-figures"])
    assert code == 0, capsys.readouterr().err
    assert _runs_section((tmp_path / "rep" / "report.md").read_text()) == [
        "> **Note:** The runs differ in ways that can change the numbers: compare with care.",
        "Reference: run `older`, the baseline given (`--baseline`). Every other run's "
        "machine, software and scenario are compared with it, the settings that change the "
        "numbers between every two runs (against `older` where it is one of them); a line "
        "`RUN against OTHER: ...` gives RUN's value first.",
        f"- full against older: package torch differs: {torch_version} vs 2.12.0"]
    code = cli.main(["report", str(runs / "full"), str(older),
                     "--output", str(tmp_path / "rep-first"), "--no-figures"])
    assert code == 0, capsys.readouterr().err
    assert _runs_section((tmp_path / "rep-first" / "report.md").read_text())[1:] == [
        "Reference: run `full`, the first loaded (`--baseline RUN_DIR` chooses another). "
        "Every other run's machine, software and scenario are compared with it, the "
        "settings that change the numbers between every two runs (against `full` where it "
        "is one of them); a line `RUN against OTHER: ...` gives RUN's value first.",
        f"- older against full: package torch differs: 2.12.0 vs {torch_version}"]
