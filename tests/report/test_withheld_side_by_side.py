"""A report of several runs withholds the timings of ``--tp`` / ``--pp`` cases on fewer
than N + 2 cores (``analysis.cores``) in its side-by-side tables and its replicated
scheduler table as its case tables do (``-`` with the ``*`` note), prints repetitions
as integers when a run of it finished no case, and says truthfully why a baseline run's
ratios are ``-`` when it finished no case or did not finish one."""

from __future__ import annotations

import json
import os

import pytest

from analysis_run import copy_as_another_run, run_bench, sigkill_in_first_case
from ipc_bench import cli
from ipc_bench.report.blocks import NO_FIGURES_NOTE, SIDE_NO_INTERVAL_NOTE

STEADY = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "20",
          "--warmup-steps", "5", "--codecs", "msgpack", "--no-floor", "--no-single-process"]
#: Two ranks on this 2-core machine (``os.sched_getaffinity``): timings withheld.
TP = ["--scenario", "tp-broadcast", "--tp", "2", "--num-running", "4", "--steps", "20",
      "--warmup-steps", "5", "--codecs", "msgpack,replicated", "--tp-transports", "ipc",
      "--no-floor"]
NOTE = ("`*` timings left out: N ranks need N + 2 free cores, one each for them and the "
        "scheduler, a spare for the kernel and the harness's threads (N = 2 needs 4); the "
        "run\'s machine had 2. Bytes and the oracles hold.")
SIDE_NOTE = NOTE + " `-*`: the run's cell of such a case; a ratio drawn from it is `-` too."
TP_ROW = "| broadcast=ipc,num_running=4,tp=2 |"

#: Two of this process's CPUs: the runs below are pinned to them (the cores rule reads
#: the affinity), so the notes name a 2-core machine on any machine.
TWO_CORES = sorted(os.sched_getaffinity(0))[:2]
pytestmark = pytest.mark.skipif(len(TWO_CORES) < 2, reason="needs 2 CPUs to pin the runs to")


def _pinned_bench(path, args: list[str]) -> None:
    """``run_bench`` with the child's CPUs set to ``TWO_CORES`` (its runners inherit it)."""
    saved = os.sched_getaffinity(0)
    os.sched_setaffinity(0, TWO_CORES)
    try:
        run_bench(path, args)
    finally:
        os.sched_setaffinity(0, saved)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run ``steady`` (decode-steady, send and cached) and run ``tp`` (--tp 2)."""
    base = tmp_path_factory.mktemp("withheld")
    _pinned_bench(base / "steady", STEADY)
    _pinned_bench(base / "tp", TP)
    return base


def _report(*args: str) -> str:
    """report.md of ``bench.py report ARGS --no-figures`` (no test here reads a figure)."""
    assert cli.main(["report", *args, "--no-figures"]) == 0
    out = args[args.index("--output") + 1]
    with open(os.path.join(out, "report.md")) as f:
        return f.read()


def _tables(md: str) -> dict[str, list[str]]:
    """The side-by-side section's lines under each table's bold label."""
    lines = md.splitlines()
    start = lines.index("## Side by side")
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("## "))
    out: dict[str, list[str]] = {}
    key = None
    for ln in lines[start + 1:end]:
        if ln.startswith("**"):  # a table's label, or the figure's after the last
            key = ln[2:ln.index("**", 2)] if "(geometric mean over repetitions" in ln else None
            if key:
                out[key] = []
        elif ln.endswith(NO_FIGURES_NOTE):  # where the figure would be (--no-figures)
            key = None
        elif key and ln:
            out[key].append(ln)
    return out


def test_side_by_side_withholds_the_timings_of_tp_cases(runs):
    md = _report(str(runs / "steady"), str(runs / "tp"), "--output", str(runs / "rep"))
    tables = _tables(md)
    for label in ("output tokens/s", "step µs (mean)"):
        rows = [ln for ln in tables[label] if ln.startswith(TP_ROW)]
        assert [ln.split(" | ", 3)[3] for ln in rows] == ["- | -* | - |"] * 4, label
        assert tables[label][-1] == SIDE_NOTE
    byte_rows = [ln for ln in tables["s2r payload B/step"] if ln.startswith(TP_ROW)]
    # each codec's arms side by side, send before cached (blocks.side_by_side_order)
    assert [ln.split(" | ")[1:3] for ln in byte_rows] == [
        ["send", "msgpack"], ["cached", "msgpack"], ["send", "replicated"],
        ["cached", "replicated"]]
    assert byte_rows[2:] == [TP_ROW + " send | replicated | - | 18 | - |",
                             TP_ROW + " cached | replicated | - | 18 | - |"]
    assert SIDE_NOTE not in tables["s2r payload B/step"]
    # the case tables, the same rule
    assert "| 0 | send | msgpack | ipc* | 20 | - | - | - |" in md
    # the replicated scheduler's times too
    section = md[md.index("### Replicated scheduler"):]
    assert section.splitlines()[4:8] == [
        "| 0 | broadcast=ipc,num_running=4,tp=2* | send | replicated | 18.0 | 24.0 | - | - |",
        "| 0 | broadcast=ipc,num_running=4,tp=2* | cached | replicated | 18.0 | 24.0 | - | - |",
        "", NOTE]


def test_a_withheld_baseline_divides_nothing(runs):
    md = _report(str(runs / "steady"), str(runs / "tp"), "--baseline", str(runs / "tp"),
                 "--output", str(runs / "rep-tp"))
    rows = [ln for ln in _tables(md)["output tokens/s"] if ln.startswith(TP_ROW)]
    assert [ln.rsplit(" | ", 3)[1:] for ln in rows] == [["-", "-*", "- |"]] * 4


def _killed_run(path, tmpdir):
    """A decode-steady run SIGKILLed in its first case (no case recorded)."""
    return sigkill_in_first_case(path, [*STEADY[:4], "--steps", "1000000", *STEADY[6:],
                                        "--policies", "send"], tmpdir)


def test_a_baseline_that_finished_no_case_is_said_so(runs, tmp_path, killed_bench_tmpdir):
    killed = _killed_run(tmp_path / "killed", killed_bench_tmpdir)
    md = _report(str(runs / "steady"), str(runs / "tp"), str(killed), "--baseline",
                 str(killed), "--output", str(tmp_path / "rep"))
    tables = _tables(md)
    note = ("`-` in every ratio column: run `killed`, the baseline, finished no case (its "
            "section says why), so there is no mean to divide by.")
    for label, lines in tables.items():
        steady = [ln for ln in lines if ln.startswith("| num_running=4 | send | msgpack |")]
        assert steady[0].endswith(" | - | - | - |"), label  # killed's column, both ratios
        assert note in lines, label
        assert not any("has no such case" in ln for ln in lines), label
    # a run of no case leaves the others' repetitions integers
    assert "| 0 | send | msgpack | ipc* | 20 |" in md
    assert "| 0.0 |" not in md


def test_a_baseline_case_that_did_not_finish_is_said_so(runs, tmp_path):
    """Run ``cut``: ``steady`` whose cached case was interrupted (as a SIGTERM leaves
    it): the cached row's ratio is ``-`` because that case did not finish."""
    cut = copy_as_another_run(runs / "steady", tmp_path / "cut")
    summary = json.loads((cut / "summary.json").read_text())
    summary["status"] = "incomplete"
    cached = next(c for c in summary["cases"] if c["policy"] == "cached")
    cached.update(complete=False, error="interrupted by SIGTERM")
    (cut / "summary.json").write_text(json.dumps(summary))
    md = _report(str(runs / "steady"), str(cut), "--baseline", str(cut),
                 "--output", str(tmp_path / "rep"))
    lines = _tables(md)["output tokens/s"]
    assert [ln for ln in lines if ln.startswith("| num_running=4 | cached |")][0].endswith(
        " | - | - |")
    assert lines[-2:] == ["`-` in the ratio columns of num_running=4 / cached / msgpack: "
                          "run `cut` ran that case but it did not finish (its section says "
                          "why), so there is no mean to divide by.",
                          SIDE_NO_INTERVAL_NOTE]  # the send row: one repetition each
    assert not any("has no such case" in ln for ln in lines)
