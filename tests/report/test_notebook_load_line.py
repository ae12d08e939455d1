"""notebooks/analysis.ipynb's first output says how busy the machine was while the run
ran (``load:``), in the words the report gives it in the run's own section
(``blocks.machine_load_words``): the mean ``machine_busy_pct`` of its finished cases,
the 1-minute load average at its start and its step-time noise."""

from __future__ import annotations

import json
import shutil

from notebook_run import first_output_lines, needs_jupyter, run_notebook

needs_jupyter()

#: The load the edited copy of the small run records (``_loaded_copy``).
WORDS = ("the machine 42.0 % busy (mean `machine_busy_pct` over 12 cases); 1-minute load "
         "average 1.3 on 8 CPUs at its start; step-time noise not measured (no case counted "
         "150 steps, the 3 blocks of 50 `step_ns_block_cv` needs)")


def _loaded_copy(run, path):
    """The small run copied to ``path`` with round figures of the machine's load: its
    cases 40 and 44 % busy in turn, a 1-minute load average of 1.34 on 8 CPUs at its
    start."""
    shutil.copytree(run, path)
    summary = json.loads((path / "summary.json").read_text())
    for i, case in enumerate(summary["cases"]):
        case["machine_busy_pct"] = 40.0 if i % 2 == 0 else 44.0
    summary["metadata"].update(load_avg=[1.34, 1.0, 0.5], cpu_count=8)
    (path / "summary.json").write_text(json.dumps(summary))
    return path


def test_the_first_output_gives_the_runs_load_in_the_reports_words(shared_small_run,
                                                                    tmp_path):
    from ipc_bench import cli

    run = _loaded_copy(shared_small_run, tmp_path / "loaded")
    lines = first_output_lines(run_notebook(str(run)))
    assert lines[3].startswith("steps: ")
    assert lines[4] == f"load: {WORDS}"
    assert cli.main(["report", str(run), "--no-figures", "--output",
                     str(tmp_path / "report")]) == 0
    assert f"As this run recorded the machine's load: {WORDS}." in " ".join(
        (tmp_path / "report" / "report.md").read_text().split())
