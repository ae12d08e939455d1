"""The warnings a run prints after its last case on a trace replay arm whose repetitions
vary over 10 % are the report's lines (``replay_noise.noisy_arm_warnings``), whose
Markdown code spans (`` `step_ns_rep_block_cv` ``) the terminal gets as plain text,
where it once printed the backticks; the report keeps them."""

from __future__ import annotations

import pandas as pd

from ipc_bench import cli
from ipc_bench.analysis.replay_noise import noisy_arm_warnings
from ipc_bench.analysis.results import Results
from ipc_bench.cli import execute

IDS = ["trace=azure-conv:30/send/msgpack#0", "trace=azure-conv:30/send/msgpack#1"]
TINY = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "20",
        "--warmup-steps", "2", "--policies", "send", "--codecs", "msgpack",
        "--no-single-process", "--no-floor"]


def _two_repetitions() -> Results:
    """Two repetitions of one replay arm, 150 counted steps each, of 1 and 2 us."""
    cases = pd.DataFrame([dict(run_id="r", case_id=c, workload="trace=azure-conv:30",
                               arm="send", codec="msgpack", transport="ipc", model="null",
                               repetition=i, trace="azure-conv:30", schedule_digest="abc",
                               num_steps=150) for i, c in enumerate(IDS)])
    steps = pd.DataFrame([dict(run_id="r", case_id=c, seq=k, step_ns=1000 * (1 + i),
                               counted=True) for i, c in enumerate(IDS) for k in range(150)])
    empty = pd.DataFrame(columns=["run_id", "case_id"])
    return Results(cases=cases, steps=steps, requests=empty, floor=empty, itl=empty,
                   metadata={"r": {}}, status={"r": "complete"}, problems={"r": []},
                   paths={})


def test_the_report_line_keeps_its_code_span():
    assert noisy_arm_warnings(_two_repetitions())[IDS[0]] == [
        "across the 2 repetitions of its arm, its 50-step block means vary by a median "
        "47.1 % (`step_ns_rep_block_cv`, > 10 %): the machine may be noisy"]


def test_the_run_end_prints_it_without_backticks(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(execute, "replay_arm_warnings",
                        lambda cases, run_dir: noisy_arm_warnings(_two_repetitions()))
    assert cli.main(TINY + ["--output", str(tmp_path / "run")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if line.startswith("warning: trace=")] == [
        f"warning: {case}: across the 2 repetitions of its arm, its 50-step block means "
        f"vary by a median 47.1 % (step_ns_rep_block_cv, > 10 %): the machine may be "
        f"noisy" for case in IDS]
    assert not [line for line in err if "`" in line]
