"""README.md and results/published/README.md say which azure-conv noise figures the
committed summary.json holds: the median 26.2 % a 50-step block's mean step time varied by
across repetitions, and its floor's 15.9 %, are report figures computed from the run's
steps.csv and floor.csv, which are not committed (it said every number could be checked
from summary.json); the per-arm medians quoted beside them are the committed cases'
``run_end_arm_warnings`` lines'."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "results" / "published"


def _flat(path: Path) -> str:
    return re.sub(r"\s+", " ", path.read_text())


def _arm_medians(field: str) -> list[float]:
    """Each arm's median of ``field`` as the committed azure-conv cases' run-end lines
    give it, sorted."""
    summary = json.loads((PUBLISHED / "azure-conv" / "azure-conv-r5.summary.json")
                         .read_text())
    found = {float(m.group(1)) for case in summary["cases"]
             for line in case["run_end_arm_warnings"]
             for m in [re.search(rf"by a median ([\d.]+) % \(`{field}`", line)] if m}
    return sorted(found)


def test_the_per_arm_medians_quoted_are_the_committed_summarys():
    assert _arm_medians("step_ns_rep_block_cv") == [20.6, 26.6, 28.1, 28.9]
    assert _arm_medians("floor_step_ns_rep_block_cv") == [11.0, 12.9, 20.5, 22.8]
    published = _flat(PUBLISHED / "README.md")
    assert ("the committed summary.json keeps each arm's own medians, in the lines under "
            "each case's `run_end_arm_warnings` (its 50-step block means 20.6, 26.6, 28.1 "
            "and 28.9 %, its floor's 11.0 to 22.8 %)") in published
    assert ("each case's `run_end_arm_warnings` in the committed `summary.json` holds its "
            "arm's median, 20.6 to 28.9 %)") in _flat(ROOT / "README.md")


def test_the_readmes_say_the_medians_over_every_arm_need_uncommitted_csvs():
    published = _flat(PUBLISHED / "README.md")
    assert "so every number can be checked" not in published
    assert ("except the azure-conv replay's spread across repetitions (its median 26.2 % "
            "and its floor's 15.9 %, below): those are report figures "
            "(`step_ns_rep_block_cv`, `floor_step_ns_rep_block_cv`: "
            "[metrics.md](../../docs/metrics.md)) computed from the run's `steps.csv` and "
            "`floor.csv`, which are not committed.") in published
    assert ("The 26.2 % and 15.9 %, medians over every block of every arm, need the run's "
            "`steps.csv` and `floor.csv` (not committed)") in published
    assert ("varied by a median 26.2 % between repetitions of the same schedule: a figure "
            "of its report, computed from the run's `steps.csv`, which is not committed;"
            ) in _flat(ROOT / "README.md")
    assert not list((PUBLISHED / "azure-conv").glob("*.csv"))


def test_metrics_md_gives_the_published_azure_conv_runs_block_cvs():
    """docs/metrics.md quoted 0.21-0.36, the replaced a292f1a run's, as the committed
    run's; the committed run's cases have 0.16-0.47."""
    summary = json.loads((PUBLISHED / "azure-conv" / "azure-conv-r5.summary.json")
                         .read_text())
    cvs = [case["step_ns_block_cv"] for case in summary["cases"]]
    assert (len(cvs), f"{min(cvs):.2f}", f"{max(cvs):.2f}") == (20, "0.16", "0.47")
    assert summary["metadata"]["git"]["commit"].startswith("d28ab013")
    assert ("in the published azure-conv run (`results/published/azure-conv`, made at "
            "d28ab013) every case's `step_ns_block_cv` is 0.16-0.47 (0.21-0.36 in the run "
            "it replaced, made at a292f1a), and in that a292f1a run a least-squares fit"
            ) in _flat(ROOT / "docs" / "metrics.md")
