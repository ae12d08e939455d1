"""A report of several runs none of whose side-by-side rows compares them (every case
they share ran with other settings, as two emulated runs of different presets) says so
under Runs, points to each run's own findings in its section, and gives the command that
renders each run's report alone, quoted to paste (``analysis.results.report_pointer``);
runs whose rows compare get no such line."""

from __future__ import annotations

import pytest

from analysis_run import run_bench
from ipc_bench import cli
from ipc_bench.analysis.results import load, report_pointer
from ipc_bench.report.blocks import no_row_compares, unlike_workloads

ARGS = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "20",
        "--warmup-steps", "2", "--codecs", "msgpack", "--no-single-process", "--no-floor"]
HEAD = ("No row of the side-by-side tables below compares these runs: no other run has a "
        "case of `a`, the reference, that it ran alike (the same workload, arm and codec, "
        "with the same settings), so no ratio between runs is given. Each run's own "
        "findings are in "
        "its section below (Run `a`, Run `b`), as its own report gives them, which renders "
        "with (")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``a`` and ``same``, one grid; ``b``, that grid with ``--vocab-size 100``, which
    changes every row's figures."""
    base = tmp_path_factory.mktemp("norow")
    run_bench(base / "a", ARGS)
    run_bench(base / "same", ARGS)
    run_bench(base / "b", ARGS + ["--vocab-size", "100"])
    return base


def _report(runs, tmp_path, *names) -> list[str]:
    out = tmp_path / "rep"
    assert cli.main(["report", *(str(runs / n) for n in names), "--no-figures",
                     "--output", str(out)]) == 0
    return (out / "report.md").read_text().splitlines()


def test_runs_no_row_compares_point_to_each_runs_findings_and_its_command(runs, tmp_path):
    lines = _report(runs, tmp_path, "a", "b")
    commands = [f"`{r}`: `{report_pointer(runs / r, load([runs / r]).metadata[r])}`"
                for r in ("a", "b")]
    line = HEAD + "; ".join(commands) + ")."
    at = lines.index(line)
    assert lines.index("## Runs") < at < lines.index("## Side by side")
    # the command as pasted: the run's own folder and bench.py, the run folder absolute
    assert commands[0].endswith(f"python bench.py report {runs / 'a'}`")
    assert commands[0].startswith("`a`: `cd ")
    # and the sections it points to hold each run's findings
    assert [ln for ln in lines if ln.startswith("## Run ")] == [
        "## Run a (decode-steady)", "## Run b (decode-steady)"]
    assert lines.count("### Findings") == 2


def test_runs_whose_rows_compare_get_no_such_line(runs, tmp_path):
    lines = _report(runs, tmp_path, "a", "same")
    assert not any(ln.startswith("No row of the side-by-side tables") for ln in lines)


def test_no_row_compares_on_loaded_runs(runs):
    both = load([runs / "a", runs / "b"]).by_arm().finished()
    assert no_row_compares(both, "", unlike_workloads(both, exact=True)) is True
    alike = load([runs / "a", runs / "same"]).by_arm().finished()
    assert no_row_compares(alike, "", unlike_workloads(alike, exact=True)) is False
