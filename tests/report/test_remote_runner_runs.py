"""A run whose runners were started by hand (``--remote-runners``: its metadata's
``remote_runners``), perhaps on another machine, compared with one whose runners it
spawned is no match: the Runs section lists the difference as it lists a
``--frontend`` case setting's, where it said ``Same machine, software and commit by
their metadata.`` and listed none."""

from __future__ import annotations

import json
import shutil

from analysis_run import TWO_CASE_ARGS, run_bench, setting_items
from ipc_bench import cli
from ipc_bench.harness.environment import compare_settings

REMOTE = {"count": 1, "host": "127.0.0.1", "ports": {"ctls": [5600]}}
BY_HAND = "1 started by hand on 127.0.0.1 (--remote-runners)"


def _metadata(run, **extra):
    md = json.loads((run / "summary.json").read_text())["metadata"]
    return {**md, **extra}


def test_runners_started_by_hand_differ_from_spawned_ones(shared_two_case_run):
    spawned = _metadata(shared_two_case_run)
    remote = _metadata(shared_two_case_run, remote_runners=REMOTE)
    workloads = ["num_running=4"]
    assert compare_settings(remote, spawned) == (
        [f"runners differ: {BY_HAND} vs spawned by the run"], workloads)
    assert compare_settings(spawned, remote) == (
        [f"runners differ: spawned by the run vs {BY_HAND}"], workloads)
    elsewhere = _metadata(shared_two_case_run, remote_runners={**REMOTE, "host": "10.0.0.5"})
    assert compare_settings(remote, elsewhere)[0] == [
        f"runners differ: {BY_HAND} vs 1 started by hand on 10.0.0.5 (--remote-runners)"]
    other_ports = _metadata(shared_two_case_run, remote_runners={**REMOTE, "ports": {}})
    assert compare_settings(remote, other_ports) == ([], [])
    assert compare_settings(spawned, spawned) == ([], [])


def test_the_runs_section_lists_it(shared_two_case_run, tmp_path):
    run_bench(tmp_path / "spawned", TWO_CASE_ARGS)
    remote = tmp_path / "remote"
    shutil.copytree(shared_two_case_run, remote)
    summary = json.loads((remote / "summary.json").read_text())
    summary["metadata"]["remote_runners"] = REMOTE
    # the same commit (another may have been made since the session's run)
    summary["metadata"].pop("git", None)
    summary["metadata"].update({k: v for k, v in _metadata(tmp_path / "spawned").items()
                                if k == "git"})
    (remote / "summary.json").write_text(json.dumps(summary))
    out = tmp_path / "rep"
    assert cli.main(["report", str(tmp_path / "spawned"), str(remote), "--output", str(out),
                     "--no-figures"]) == 0
    md = (out / "report.md").read_text()
    runs = md[md.index("## Runs\n"):].split("\n## ")[0].splitlines()
    assert "Same machine, software and commit by their metadata." not in runs
    assert "> **Note:** The runs differ in ways that can change the numbers: compare with " \
           "care." in runs
    assert setting_items(runs) == [
        f"- remote against spawned: runners differ: {BY_HAND} vs spawned by the run"]
