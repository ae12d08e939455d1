"""``aa_false_positive.py --from-run`` of a study interrupted before its condition's
record (``condition.json``) was written names the condition's load truthfully (a busy
condition's is unknown, not "no added load"), prints the load average at the start
as the sampled one is (two decimals), and says the A/A run is incomplete in one
``aa_false_positive.py: warning: ...`` line, ``bench.py report``'s words
(``results.incomplete_run_line``), not as a raw Python warning; the record is written
as a condition starts, so a study interrupted later keeps it."""

from __future__ import annotations

import argparse
import json
import shutil

from analysis_run import TWO_CASE_ARGS, shared_run
from script_module import load_script, run_script

aa = load_script("aa_false_positive")

LOAD_AVG = [2.45361328125, 2.3740234375, 2.55712890625]
MISSING = "condition record missing (the study was interrupted before writing it)"


def _interrupted_study(tmp_path_factory, tmp_path):
    """A study folder whose busy condition holds an A/A run of 3 pairs interrupted by
    SIGINT in its last case (5 of its 6 cases finished) and no ``condition.json``;
    every case's machine record set to 97.5 % busy and 0.25 % steal. Returns (study,
    A/A run folder, the case interrupted)."""
    run = shared_run(tmp_path_factory, TWO_CASE_ARGS + ["--aa", "--repeat", "3"])
    study = tmp_path / "study"
    where = study / "busy" / "aa"
    shutil.copytree(run, where)
    path = where / "summary.json"
    summary = json.loads(path.read_text())
    cases = summary["cases"]
    assert len(cases) == 6
    last = cases[-1]["case_id"]
    for c in cases:
        c.update(machine_busy_pct=97.5, cpu_steal_pct=0.25)
    cases[-1]["complete"] = False
    summary["metadata"]["load_avg"] = LOAD_AVG
    summary["metadata"].pop("end_time_utc", None)
    summary.update(status="incomplete", running_case=None, failed_case=last,
                   problems=[f"{last}: interrupted by SIGINT"])
    path.write_text(json.dumps(summary))
    return study, where, last


def test_an_interrupted_busy_study_without_its_record(tmp_path_factory, tmp_path):
    study, where, last = _interrupted_study(tmp_path_factory, tmp_path)
    done = run_script("aa_false_positive", "--from-run", str(study), "--load", "busy",
                      "--group-sizes", "2")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"aa_false_positive.py: warning: {where}: this run is incomplete: {last}: "
        "interrupted by SIGINT; 5 of its 6 cases finished: the analysis covers the pairs "
        "it finished"]
    lines = done.stdout.splitlines()
    assert lines[:4] == [
        f"A/A study {study}", "",
        f"== busy: {MISSING}: added load unknown; load avg (1, 5, 15 min) at start 2.45, "
        "2.37, 2.56; machine busy 98 % and steal 0.25 % (means over the cases)",
        "A/A send vs send': 2 pairs in a run stopped early; false positives of 95 % "
        "verdicts, % [Clopper-Pearson 95 %], groups of K pairs (t; sign at K >= 6)"]
    written = json.loads((study / "aa_false_positive.json").read_text())
    info = written["conditions"]["busy"]
    assert (info["background_load"], info["condition_record"]) == (
        "unknown", "missing (the study was interrupted before writing it)")


def test_the_labels_of_a_condition():
    assert aa.load_label(dict(condition="busy", background_load=dict(cpu=1))) == (
        "busy loop pinned to cpu 1")
    assert aa.load_label(dict(condition="idle", background_load=None)) == "no added load"
    assert aa.load_label(dict(condition="idle", background_load=None,
                              condition_record="missing (no condition.json)")) == (
        "condition record missing (no condition.json): no added load")
    assert aa.load_at_start([1, 0.5, 0.125]) == (
        "load avg (1, 5, 15 min) at start 1.00, 0.50, 0.12")
    assert aa.load_at_start(None) == "load avg at start not recorded"
    assert aa.load_at_start(["1", 2, 3]) == "load avg at start not recorded"


class _NoLoad:
    """``BackgroundLoad`` starting no process."""

    def __init__(self, cpu):
        self.cpu = cpu

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def test_the_condition_is_recorded_before_its_first_run(tmp_path, monkeypatch):
    seen = []

    class Stop(Exception):
        pass

    def run_bench(extra, out_dir):
        seen.append(json.loads((out_dir.parent / "condition.json").read_text()))
        raise Stop

    monkeypatch.setattr(aa, "BackgroundLoad", _NoLoad)
    monkeypatch.setattr(aa, "run_bench", run_bench)
    args = argparse.Namespace(busy_cpu=0, policy="send", codec="msgpack", seed=0,
                              num_running=4, steps=5, pairs=2, reference_steps=[5],
                              reference_pairs=[2], reference_running=8)
    try:
        aa.run_condition(args, "busy", tmp_path)
    except Stop:
        pass
    none = dict(load1_mean=None, load1_max=None, busy_pct_mean=None, busy_pct_max=None,
                steal_pct_mean=None, steal_pct_max=None)
    assert seen == [dict(condition="busy", reference=[], background_load=dict(cpu=0),
                         machine=dict(samples=[], **none))]
