"""A run stopped before its end records no ``comparisons`` (a run compares its cases
once they have all run); its report computes them as the run would have, so that its
findings' verdicts are Holm-adjusted, never an unadjusted interval stated as a
saving."""

from __future__ import annotations

import json
import shutil

from analysis_run import run_bench
from ipc_bench import cli

RUN = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "5", "--warmup-steps",
       "0", "--repeat", "3", "--codecs", "msgpack", "--no-single-process", "--no-floor"]


def _findings(run, out) -> list[str]:
    assert cli.main(["report", str(run), "--output", str(out), "--no-figures"]) == 0
    text = (out / "report.md").read_text()
    return text.split("## Findings", 1)[1].split("\n## ", 1)[0].strip().splitlines()


def test_a_run_without_recorded_comparisons_gets_the_same_verdicts(tmp_path, capsys):
    run_bench(tmp_path / "run", RUN)
    copy = tmp_path / "stopped"
    shutil.copytree(tmp_path / "run", copy)
    summary = json.loads((copy / "summary.json").read_text())
    assert summary["comparisons"]
    summary["comparisons"] = []
    (copy / "summary.json").write_text(json.dumps(summary))
    full = _findings(tmp_path / "run", tmp_path / "rep-run")
    assert any("Holm" in line for line in full)
    assert _findings(copy, tmp_path / "rep-stopped") == full
