"""A report of several runs compares the settings of every pair of runs
(``blocks.setting_differences``), not each run with the first alone: runs that share
no arm with the first still have their differences listed, once, naming the runs,
and their side-by-side rows marked."""

from __future__ import annotations

import pytest

from analysis_run import run_bench, setting_items
from ipc_bench import cli

COMMON = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "40",
          "--warmup-steps", "5", "--codecs", "msgpack", "--no-floor", "--no-single-process"]
RUNS = {"A": ["--async-scheduling", "--policies", "cached"], "B": ["--transport", "shm"],
        "C": ["--frontend"], "D": ["--repeat", "2", "--ci-method", "sign"]}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The report of runs A (cached+async alone: no arm shared with the others), B, C
    and D, as lines of report.md (no figures: the tests read its tables)."""
    base = tmp_path_factory.mktemp("multirun")
    for name, args in RUNS.items():
        run_bench(base / name, COMMON + args)
    assert cli.main(["report", *(str(base / n) for n in RUNS),
                     "--output", str(base / "rep"), "--no-figures"]) == 0
    return (base / "rep" / "report.md").read_text().splitlines()


def _section(md: list[str], title: str) -> list[str]:
    start = md.index(title)
    end = next(i for i in range(start + 1, len(md)) if md[i].startswith("## "))
    return md[start + 1:end]


def test_runs_that_share_no_arm_with_the_first_are_compared_with_each_other(report):
    lines = setting_items(_section(report, "## Runs"))
    # each difference once: the run that differs named against the others
    assert lines == [
        # the options that choose the cases: A ran cached alone, and async
        "- B, C, D against A: option --policies differs: default (cached, send) vs "
        "[cached]",
        "- B, C, D against A: cached+async cases differ: not run (decode-steady's default) "
        "vs run (--async-scheduling given)",
        "- B, C, D against A: synchronous cached cases differ: run (decode-steady's "
        "default) vs not run (--async-scheduling and --policies cached given)",
        # B and A share no arm, so no case setting: B's transport is stated as an option
        "- B against A: option --transport differs: shm vs ipc",
        "- C against B, D: case setting frontend differs: True vs False "
        "(workload num_running=4)",
        "- B against C, D: case setting transport differs: shm vs ipc "
        "(workload num_running=4)",
        # run-wide, like the seed: listed against A too, though A shares no arm
        "- D against A, B, C: option --ci-method differs: sign vs t",
        "- D against B, C: repetitions differ: 2 vs 1 (workload num_running=4)"]


def test_their_side_by_side_rows_are_marked(report):
    """Every table's send and cached rows (run by B, C and D), not A's cached+async."""
    rows = [ln for ln in _section(report, "## Side by side")
            if ln.startswith("| num_running=")]
    marks = {(ln.split(" | ")[1], ln.split(" | ")[0]) for ln in rows}
    # cached+async: A's alone, one run's row, nothing to differ from; msgpack: the
    # cached/send effect table's row, of B, C and D (A ran no send to compare with)
    assert marks == {("cached+async", "| num_running=4"), ("send", "| num_running=4 ≠"),
                     ("cached", "| num_running=4 ≠"), ("msgpack", "| num_running=4 ≠")}
