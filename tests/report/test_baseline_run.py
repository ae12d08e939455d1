"""``bench.py report RUN... --baseline RUN_DIR``: the side-by-side ratio columns divide
by the run chosen (one of those given, however spelt), its caption names it, and a row
that run has no case for shows ``-`` with a note saying why; the environment differences
under Runs are each run's against it, under a line naming it; any other folder is one
error line and exit code 2."""

from __future__ import annotations

import json

import pytest

from analysis_run import (copy_as_another_run, run_bench, send_and_both_runs,
                          without_machine_load)
from ipc_bench import cli


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run ``full`` (send and cached) and run ``sendonly`` (send alone): copies of the
    session's (``analysis_run.send_and_both_runs``)."""
    return send_and_both_runs(tmp_path_factory, tmp_path_factory.mktemp("baseline"), "full",
                              "sendonly")


def _side_by_side(md: str) -> list[str]:
    lines = md.splitlines()
    start = lines.index("## Side by side")
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("## "))
    return lines[start + 1:end]


def test_the_chosen_run_is_the_denominator_and_its_missing_rows_are_explained(
        runs, capsys):
    code = cli.main(["report", str(runs / "full"), str(runs / "sendonly"),
                     "--baseline", str(runs / "sendonly") + "/",
                     "--output", str(runs / "rep"), "--no-figures"])  # tables alone
    assert code == 0, capsys.readouterr().err
    section = _side_by_side((runs / "rep" / "report.md").read_text())
    assert section[1] == ("**output tokens/s** (geometric mean over repetitions; the ratio column, "
                          "`full ÷ sendonly`, divides each run's geometric mean by that of run "
                          "`sendonly`, the baseline given)")
    assert "| workload | arm | codec | full | sendonly | full ÷ sendonly |" in section
    cached = [ln for ln in section if ln.startswith("| num_running=4 | cached |")]
    assert cached and all(ln.endswith("| - | - |") for ln in cached)
    note = ("`-` in the ratio columns of a row: run `sendonly` has no such case (its grid "
            "holds no case of that workload, arm and codec), so there is no mean to divide "
            "by.")
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


def test_a_baseline_that_does_not_exist_says_so(runs, tmp_path, capsys):
    missing = tmp_path / "no-such-run"
    code = cli.main(["report", str(runs / "full"), str(runs / "sendonly"),
                     "--baseline", str(missing), "--output", str(tmp_path / "rep")])
    assert code == 2
    assert capsys.readouterr().err == (
        f"bench.py report: error: --baseline {missing}: does not exist (give one of the run "
        f"folders given: {runs / 'full'}, {runs / 'sendonly'})\n")
    assert not (tmp_path / "rep").exists()


def _runs_section(md: str) -> list[str]:
    lines = md.splitlines()
    start = lines.index("## Runs")
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("## "))
    return without_machine_load([ln for ln in lines[start + 1:end]
                                 if ln and not ln.startswith("|")])


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
        "machine, software and scenario are compared with it; the settings that change the "
        "numbers are compared between every two runs (against `older` where it is one of "
        "them); a line `RUN against OTHER: ...` gives RUN's value first.",
        f"- full against older: package torch differs: {torch_version} vs 2.12.0"]
    code = cli.main(["report", str(runs / "full"), str(older),
                     "--output", str(tmp_path / "rep-first"), "--no-figures"])
    assert code == 0, capsys.readouterr().err
    assert _runs_section((tmp_path / "rep-first" / "report.md").read_text())[1:] == [
        "Reference: run `full`, the first loaded (`--baseline RUN_DIR` chooses another). "
        "Every other run's machine, software and scenario are compared with it; the "
        "settings that change the numbers are compared between every two runs (against "
        "`full` where it is one of them); a line `RUN against OTHER: ...` gives RUN's "
        "value first.",
        f"- older against full: package torch differs: 2.12.0 vs {torch_version}"]


def test_a_baseline_interrupted_before_some_cases_says_which_it_never_ran(tmp_path, capsys):
    """Baseline ``cut`` (send alone at 4, 8 and 16 running) was interrupted in its
    second case: the first finished, the second did not, the third was never run. Its
    rows read each so, and only the cached rows, which its grid lacks, read ``has no
    such case``."""
    from analysis_run import interrupt_in_case

    grid = ["--scenario", "decode-steady", "--num-running", "4,8,16", "--warmup-steps", "5",
            "--codecs", "msgpack", "--no-floor", "--no-single-process"]
    run_bench(tmp_path / "full", grid + ["--steps", "20"])
    cut = interrupt_in_case(tmp_path / "cut", grid + ["--steps", "20000", "--policies",
                                                      "send"], 1)
    code = cli.main(["report", str(tmp_path / "full"), str(cut), "--baseline", str(cut),
                     "--output", str(tmp_path / "rep"), "--no-figures"])
    assert code == 0, capsys.readouterr().err
    section = _side_by_side((tmp_path / "rep" / "report.md").read_text())
    table = section[section.index("| workload | arm | codec | full | cut | full ÷ cut |"):]
    table = table[:table.index("")]
    # (workload, arm) -> the ratio cell; `≠`: the runs' --steps differ
    ratios = {(ln.split(" | ")[0].removesuffix(" ≠"), ln.split(" | ")[1]): ln.split(" | ")[-1]
              for ln in table[2:]}
    assert list(ratios) == [("| num_running=4", arm) for arm in ("send", "cached")] + [
        ("| num_running=8", arm) for arm in ("send", "cached")] + [
        ("| num_running=16", arm) for arm in ("send", "cached")]
    # both ran it, with other --steps: no ratio of the two
    assert ratios.pop(("| num_running=4", "send")) == "- (not comparable) |"
    assert set(ratios.values()) == {"- |"}
    notes = section[section.index(table[-1]) + 2:section.index(table[-1]) + 5]
    assert notes == [
        "`-` in the ratio columns of num_running=8 / send / msgpack: run `cut` ran that "
        "case but it did not finish (its section says why), so there is no mean to divide "
        "by.", "",
        "`-` in the ratio columns of num_running=16 / send / msgpack: run `cut` stopped "
        "before it ran that case (it is in its grid; its section says why it stopped), so "
        "there is no mean to divide by."]
    assert section[section.index(table[-1]) + 6] == (
        "`-` in the ratio columns of a row: run `cut` has no such case (its grid holds no "
        "case of that workload, arm and codec), so there is no mean to divide by.")
    # Interrupted as its second case started, before the case was recorded: the run's
    # problems name it, so it still reads as run but not finished, not as never run.
    from ipc_bench.analysis.results import load
    from ipc_bench.report.blocks import NOT_REACHED, UNFINISHED, absent_base_cases

    summary = json.loads((cut / "summary.json").read_text())
    assert summary["problems"] == ["num_running=8/send/msgpack#0: interrupted by SIGINT"]
    summary["cases"] = summary["cases"][:1]
    (cut / "summary.json").write_text(json.dumps(summary))
    (cut / "steps.partial.csv").unlink(missing_ok=True)
    assert absent_base_cases(load(cut).by_arm(), "cut") == (
        {("num_running=8", "send", "msgpack"): UNFINISHED,
         ("num_running=16", "send", "msgpack"): NOT_REACHED}, True)


def test_the_first_run_given_as_baseline_is_named_the_baseline_given():
    """``--baseline`` naming the run that is also loaded first: the reference line says
    it is the baseline given, not the first loaded with a hint to choose another."""
    from ipc_bench.report.blocks import reference_line

    tail = ("Every other run's machine, software and scenario are compared with it; the "
            "settings that change the numbers are compared between every two runs "
            "(against `a` where it is one of them); a line `RUN against OTHER: ...` "
            "gives RUN's value first.")
    assert reference_line(["a", "b"], "a", given=True) == (
        "Reference: run `a`, the baseline given (`--baseline`). " + tail)
    assert reference_line(["a", "b"], "a") == (
        "Reference: run `a`, the first loaded (`--baseline RUN_DIR` chooses another). "
        + tail)
