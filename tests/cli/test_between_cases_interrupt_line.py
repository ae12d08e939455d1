"""An interrupt between two cases: ``bench.py``'s line says after how many cases, the
count ``summary.json``'s ``problems`` records (``execute._Run.interrupted``), in the
shape ``PROG: interrupted by SIGNAL WHEN; KEPT (exit N)``."""

from __future__ import annotations

import json
import os
import signal

_FOUR = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "20",
         "--warmup-steps", "2", "--policies", "send,cached", "--codecs", "msgpack,pickle",
         "--no-single-process", "--quiet"]


def _signal_after_case(monkeypatch, n: int, sig: int) -> None:
    """``sig`` sent to this process once case ``n`` is written, before the next starts."""
    from ipc_bench.cli import execute

    case = execute._Run.case

    def case_then_signal(self, i, spec):
        code = case(self, i, spec)
        if i == n:
            os.kill(os.getpid(), sig)
        return code

    monkeypatch.setattr(execute._Run, "case", case_then_signal)


def test_sighup_after_3_of_4_cases_names_the_count(tmp_path, monkeypatch, capsys,
                                                   handlers_restored):
    from ipc_bench import cli

    _signal_after_case(monkeypatch, 3, signal.SIGHUP)
    run_dir = tmp_path / "run"
    assert cli.main(_FOUR + ["--output", str(run_dir)]) == 129
    assert capsys.readouterr().err == (
        f"bench.py: interrupted by SIGHUP after 3 of 4 cases; partial results: {run_dir} "
        "(exit 129)\n")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["status"], summary["problems"], len(summary["cases"])) == (
        "incomplete", ["interrupted by SIGHUP after 3 of 4 cases"], 3)


def test_sigterm_after_1_of_4_cases_names_the_count(tmp_path, monkeypatch, capsys,
                                                    handlers_restored):
    from ipc_bench import cli

    _signal_after_case(monkeypatch, 1, signal.SIGTERM)
    run_dir = tmp_path / "run"
    assert cli.main(_FOUR + ["--output", str(run_dir)]) == 143
    assert capsys.readouterr().err == (f"bench.py: interrupted by SIGTERM after 1 of 4 cases; partial results: "
                   f"{run_dir} (exit 143)\n")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["problems"] == ["interrupted by SIGTERM after 1 of 4 cases"]
