"""The net share of a run whose summary.json predates both the net figure
(``s2r_net_ns_median``) and the SchedulerOutput path's median
(``s2r_build_encode_decode_ns_median``): the report recomputes the net figure from
steps.csv's counted rows, whose runner columns are there since the first format, as
for a run that lacks the net figure alone (docs/comparisons.md, "The net share"); only
where steps.csv lacks them is the cell the unavailable one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from analysis_run import run_bench
from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsWarning
from ipc_bench.report import findings
from test_net_share import ARGS, _expected


@pytest.fixture(scope="module")
def early_run(tmp_path_factory) -> tuple[Path, Path]:
    """A small emulated run, and a copy whose summary.json lacks both medians."""
    base = tmp_path_factory.mktemp("early")
    run = base / "run"
    run_bench(run, ARGS)
    old = base / "old"
    shutil.copytree(run, old)
    summary = json.loads((old / "summary.json").read_text())
    for c in summary["cases"]:
        del c["s2r_net_ns_median"], c["s2r_build_encode_decode_ns_median"]
    (old / "summary.json").write_text(json.dumps(summary))
    return run, old


def test_the_net_figure_is_recomputed_without_the_path_median(early_run):
    run, old = early_run
    cell, sentence, _ = _expected(run)
    cases = load([old]).cases
    assert "s2r_build_encode_decode_ns_median" not in cases.columns
    filled = findings.with_net_figure(cases, load([old]).steps)
    recorded = {c["case_id"]: c["s2r_net_ns_median"]
                for c in json.loads((run / "summary.json").read_text())["cases"]}
    assert dict(zip(filled["case_id"], filled["s2r_net_ns_median"])) == recorded
    items = findings.findings(load([old]))
    (row,) = items.summary[1]
    assert row[7] == cell
    assert any(f.endswith(" " + sentence) for f in items)


def test_without_the_runner_columns_the_cell_says_unavailable(early_run, tmp_path):
    _, old = early_run
    bare = tmp_path / "bare"
    shutil.copytree(old, bare)
    frame = pd.read_csv(bare / "steps.csv")
    frame.drop(columns=["runner_update_ns"]).to_csv(bare / "steps.csv", index=False)
    with pytest.warns(ResultsWarning, match="its header lacks runner_update_ns"):
        items = findings.findings(load([bare]))
    (row,) = items.summary[1]
    assert row[7] == findings.NET_UNAVAILABLE
    assert not any("Net share (" in f for f in items)
