"""A run's end counts and prints the warnings the report adds to the cases of a trace
replay arm whose repetitions vary over 10 % (``replay_noise.noisy_arm_warnings``), as
the report lists and counts them with the recorded ones."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

from analysis_run import scale_case_times
from ipc_bench.analysis import results as results_module
from ipc_bench.analysis.replay_noise import noisy_arm_warnings
from ipc_bench import cli
from ipc_bench.analysis.results import Results
from ipc_bench.cli import execute
from ipc_bench.cli.execute import (quiet_warnings_line, replay_arm_warnings,
                                   warnings_count_line)

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO.parent / "shared" / "traces" / "AzureLLMInferenceTrace_conv.csv"
IDS = ["trace=azure-conv:30/send/msgpack#0", "trace=azure-conv:30/send/msgpack#1"]
LINE = ("across the 2 repetitions of its arm, its 50-step block means vary by a median "
        "47.1 % (`step_ns_rep_block_cv`, > 10 %): the machine may be noisy")
ADDED = {IDS[0]: [LINE], IDS[1]: [LINE]}


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


def test_the_run_reads_back_what_the_report_adds(monkeypatch, tmp_path):
    """The run's end reads its steps.csv with the csv module, not ``results.load``
    (which imports pandas), and gives the report's lines."""
    read = []
    monkeypatch.setattr(results_module, "load", lambda path: read.append(path))
    (tmp_path / "steps.csv").write_text("case_id,seq,counted,step_ns\n" + "".join(
        f"{c},{k},1,{1000 * (1 + i)}\n" for i, c in enumerate(IDS) for k in range(150)))
    summaries = [dict(case_id=c, trace="azure-conv:30", workload="trace=azure-conv:30",
                      arm="send", codec="msgpack", transport="ipc", model="null",
                      repetition=i, num_steps=150, schedule_digest="abc")
                 for i, c in enumerate(IDS)]
    assert replay_arm_warnings(summaries, tmp_path) == ADDED
    assert noisy_arm_warnings(_two_repetitions()) == ADDED  # the report's
    # one replay case, or none: nothing to compare, and the folder is not read
    (tmp_path / "steps.csv").unlink()
    assert replay_arm_warnings(summaries[:1], tmp_path) == {}
    assert replay_arm_warnings([dict(case_id="a"), dict(case_id="b")], tmp_path) == {}
    assert replay_arm_warnings(summaries, tmp_path) == {}  # no steps.csv: none
    assert read == []


def test_the_count_line_counts_them_and_says_where_they_were_printed(tmp_path):
    cases = [dict(case_id=IDS[0], warnings=["rough"]), dict(case_id=IDS[1], warnings=[])]
    tail = (f": the recorded ones in {tmp_path}/summary.json, all of them under "
            f"Measurement warnings in python bench.py report {tmp_path}")
    assert warnings_count_line(cases, tmp_path, added=ADDED) == (
        "3 measurement warnings in 2 of 2 cases (printed under their case lines above; 2 "
        "of them on the repetitions of a trace replay arm that vary over 10 %, printed "
        "after the last case)" + tail)
    assert warnings_count_line(cases, tmp_path, on_stdout=True, added=ADDED) == (
        "3 measurement warnings in 2 of 2 cases (printed on stderr under their case lines; "
        "2 of them on the repetitions of a trace replay arm that vary over 10 %, printed "
        "on stderr after the last case)" + tail)
    bare = [dict(case_id=c, warnings=[]) for c in IDS]
    assert warnings_count_line(bare, tmp_path, added=ADDED) == (
        "2 measurement warnings in 2 of 2 cases (on the repetitions of a trace replay arm "
        "that vary over 10 %, printed after the last case): see Measurement warnings in "
        f"python bench.py report {tmp_path}, which adds them (they are not in "
        f"{tmp_path}/summary.json)")
    assert warnings_count_line(bare, tmp_path, added={}) is None


def test_the_quiet_line_counts_them_too(tmp_path):
    cases = [dict(case_id=IDS[0], warnings=["rough"]), dict(case_id=IDS[1], warnings=[])]
    assert quiet_warnings_line(cases, tmp_path, ADDED) == (
        f"1 warning recorded in {tmp_path}/summary.json (not shown: --quiet); 2 more "
        "warnings on the repetitions of a trace replay arm that vary over 10 % (in python "
        f"bench.py report {tmp_path})")
    assert quiet_warnings_line(cases[1:], tmp_path, {IDS[1]: [LINE]}) == (
        "1 warning on the repetitions of a trace replay arm that vary over 10 % (in "
        f"python bench.py report {tmp_path})")


def _loaded_added(run: Path) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return noisy_arm_warnings(results_module.load(run))


@pytest.mark.skipif(not TRACE.is_file(), reason="no Azure conv trace beside the checkout")
def test_a_replay_run_ends_with_the_reports_lines_and_count(tmp_path):
    """A real replay of two repetitions: whatever the machine's noise, the lines after
    its time line are the report's added warnings and the count of them with the
    recorded ones; one repetition made 3 times slower, the arm is flagged."""
    run = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    proc = subprocess.run(
        [sys.executable, "bench.py", "--scenario", "azure-conv", "--trace", str(TRACE),
         "--max-requests", "30", "--repeat", "2", "--codecs", "msgpack", "--policies",
         "send", "--no-single-process", "--no-floor", "--output", str(run)],
        cwd=REPO, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr.splitlines()
    end = next(i for i, line in enumerate(err) if line.startswith("ipc-bench: 2 cases"))
    cases = json.loads((run / "summary.json").read_text())["cases"]
    added = _loaded_added(run)
    # each kind in full once, then in short (``_Run._arm_lines``); the cases' own
    # machine-noise warnings, under a loaded machine, may come in short too
    # (``_Run._log_warnings``, counted in ``in_short``)
    replayed = execute._Run(run_dir=run, writer=None, quiet=False, num_cases=2,
                            progress_bar=False)
    replayed.log = lambda line: None
    for case in cases:
        replayed._log_warnings(case)
    want, short = replayed._arm_lines(added)
    count = warnings_count_line(cases, run, added=added, added_short=short,
                                in_short=replayed.in_short)
    assert err[end + 1:] == want + ([count] if count else [])
    slow = tmp_path / "slow"
    shutil.copytree(run, slow)
    scale_case_times(slow, IDS[1], 3.0)
    flagged = replay_arm_warnings(cases, slow)
    assert sorted(flagged) == IDS and flagged == _loaded_added(slow)
    assert all(lines[0].startswith("across the 2 repetitions of its arm, its 50-step block "
                                   "means vary by a median ") for lines in flagged.values())


TINY = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "20",
        "--warmup-steps", "2", "--policies", "send", "--codecs", "msgpack",
        "--no-single-process", "--no-floor"]


def test_the_run_end_prints_them_without_backticks(monkeypatch, capsys, tmp_path):
    """The report's lines keep their Markdown code spans (``LINE``); the terminal gets
    them as plain text, where it once printed the backticks."""
    monkeypatch.setattr(execute, "replay_arm_warnings",
                        lambda cases, run_dir: noisy_arm_warnings(_two_repetitions()))
    assert cli.main(TINY + ["--output", str(tmp_path / "run")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if line.startswith("warning: trace=")] == [
        f"warning: {IDS[0]}: across the 2 repetitions of its arm, its 50-step block means "
        f"vary by a median 47.1 % (step_ns_rep_block_cv, > 10 %): the machine may be "
        f"noisy", f"warning: {IDS[1]}: as above (the machine may be noisy): "
        "step_ns_rep_block_cv 47.1 %"]
    assert not [line for line in err if "`" in line]
