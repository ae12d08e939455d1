"""A run's end text and a report's closing line reach stdout in one write call
(``console.one_write``), counted on a stdout stand-in that records each call, so the
check does not hang on a race with a pipe's reader: the run's end was several
(``print(tables)``, then ``print("\\nresults: DIR")``: four calls), which a reader
that reads once and leaves (``| head -1``) could leave between (exit 141)."""

from __future__ import annotations

import sys

from ipc_bench import cli
from stdout_calls import WriteCalls

ARGS = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "3",
        "--warmup-steps", "0", "--codecs", "msgpack", "--policies", "send",
        "--no-single-process", "--no-floor", "--quiet"]


def test_a_runs_end_text_and_its_reports_line_are_one_write_each(tmp_path, monkeypatch):
    run = tmp_path / "run"
    out = WriteCalls()
    monkeypatch.setattr(sys, "stdout", out)
    assert cli.main(ARGS + ["--output", str(run)]) == 0
    assert len(out.writes) == 1, out.writes
    text = out.writes[0]
    assert text.startswith("decode-steady  [num_running=2]  device=cpu  model=null")
    assert text.endswith(f"/summary.json (not shown: --quiet)\n\nresults: {run}\n")
    out.writes.clear()
    assert cli.main(["report", str(run), "--no-figures"]) == 0
    assert out.writes == [f"report: {run / 'report' / 'report.html'}\n"]
