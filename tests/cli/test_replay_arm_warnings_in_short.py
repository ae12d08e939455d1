"""The warnings a run's end prints on the cases of a trace replay arm whose repetitions
vary over 10 % (``replay_noise.noisy_arm_warnings``) get a case's machine-noise
treatment (``execute._Run._arm_lines``): each kind, the steps' ``step_ns_rep_block_cv``
and the floor's ``floor_step_ns_rep_block_cv``, in full the first time it comes up,
then in short on one ``as above`` line a case, which the run's count line counts;
summary.json's ``run_end_arm_warnings`` and the report keep them whole."""

from __future__ import annotations

import json

import pandas as pd

from ipc_bench import cli
from ipc_bench.analysis.replay_noise import noisy_arm_warnings
from ipc_bench.analysis.results import Results
from ipc_bench.cli import execute
from ipc_bench.cli.command_line import SCRIPT
from ipc_bench.cli.execute import _Run, warnings_count_line

IDS = [f"trace=azure-conv:30/{arm}/msgpack#{r}" for arm in ("send", "cached")
       for r in range(3)]
STEPS = ("across the 3 repetitions of its arm, its 50-step block means vary by a median "
         "{} % (step_ns_rep_block_cv, > 10 %): the machine may be noisy")
FLOOR = ("across the 3 repetitions of its arm, its 50-step mean floor step times vary by "
         "a median 50.0 % (floor_step_ns_rep_block_cv, > 10 %): the machine may be noisy, "
         "and the floor tok/s and x floor with it")


def _arms() -> Results:
    """Two replay arms of 3 repetitions, 150 counted steps and 150 floor steps each; the
    third repetition of each 3 times slower (it stands out), its floor steps 1, 2 and 3
    us."""
    cases = pd.DataFrame([dict(run_id="r", case_id=c, workload="trace=azure-conv:30",
                               arm=c.split("/")[1], codec="msgpack", transport="ipc",
                               model="null", repetition=int(c[-1]), trace="azure-conv:30",
                               schedule_digest="abc", num_steps=150) for c in IDS])
    slow = {"send": [1, 1.05, 3], "cached": [1, 1.1, 3]}
    steps = pd.DataFrame([dict(run_id="r", case_id=c, seq=k, counted=True, step_ns=int(
        1000 * slow[c.split("/")[1]][int(c[-1])] * (1 + 0.01 * (k % 7))))
        for c in IDS for k in range(150)])
    floor = pd.DataFrame([dict(run_id="r", case_id=c, i=k, floor_step_ns=500 * (1 + int(c[-1])))
                          for c in IDS for k in range(150)])
    empty = pd.DataFrame(columns=["run_id", "case_id"])
    return Results(cases=cases, steps=steps, requests=empty, floor=floor, itl=empty,
                   metadata={"r": {}}, status={"r": "complete"}, problems={"r": []},
                   paths={})


def test_each_kind_in_full_once_then_in_short(tmp_path):
    added = noisy_arm_warnings(_arms())
    assert list(added) == IDS
    run = _Run(run_dir=tmp_path, writer=None, quiet=False, num_cases=6, progress_bar=False)
    lines, short = run._arm_lines(added)
    standout = " (this repetition stands out: {} % from the others')"
    assert lines == [
        f"warning: {IDS[0]}: {STEPS.format('67.8')}",
        f"warning: {IDS[0]}: {FLOOR}",
        f"warning: {IDS[1]}: as above (the machine may be noisy): step_ns_rep_block_cv "
        "67.8 %, floor_step_ns_rep_block_cv 50.0 %",
        f"warning: {IDS[2]}: as above (the machine may be noisy): step_ns_rep_block_cv "
        f"67.8 %{standout.format('192.7')}, floor_step_ns_rep_block_cv 50.0 %",
        f"warning: {IDS[3]}: as above (the machine may be noisy): step_ns_rep_block_cv "
        "66.3 %, floor_step_ns_rep_block_cv 50.0 %",
        f"warning: {IDS[4]}: as above (the machine may be noisy): step_ns_rep_block_cv "
        "66.3 %, floor_step_ns_rep_block_cv 50.0 %",
        f"warning: {IDS[5]}: as above (the machine may be noisy): step_ns_rep_block_cv "
        f"66.3 %{standout.format('185.7')}, floor_step_ns_rep_block_cv 50.0 %"]
    assert short == 10
    # a line of no known kind stays in full
    assert run._arm_lines({"x": ["something else"]}) == (["warning: x: something else"], 0)


def test_the_count_line_counts_those_in_short(tmp_path):
    added = {IDS[0]: ["a", "b"], IDS[1]: ["c", "d"]}
    cases = [dict(case_id=IDS[0], warnings=["rough"]), dict(case_id=IDS[1], warnings=[])]
    assert warnings_count_line(cases, tmp_path, added=added, in_short=1,
                               added_short=2) == (
        "5 measurement warnings in 2 of 2 cases (printed under their case lines above; 4 "
        "of them on the repetitions of a trace replay arm that vary over 10 %, printed "
        'after the last case; 3 of them in short, on "as above" lines): the recorded ones '
        f"in {tmp_path}/summary.json, all of them under Measurement warnings in python "
        f"bench.py report {tmp_path}")
    assert warnings_count_line(cases[1:], tmp_path, added={IDS[1]: ["c", "d"]},
                               added_short=2, on_stdout=True).startswith(
        "2 measurement warnings in 1 of 1 case (on the repetitions of a trace replay arm "
        "that vary over 10 %, printed on stderr after the last case; 2 of them in short, "
        'on "as above" lines): ')


def test_a_run_prints_them_once_then_in_short(monkeypatch, capsys, tmp_path):
    """The arms' lines given to the run's own 6 cases, in the order they ran."""
    lines = list(noisy_arm_warnings(_arms()).values())
    given = {}

    def arm_warnings(cases, run_dir):
        given.update(zip([c["case_id"] for c in cases], lines))
        return dict(given)

    monkeypatch.setattr(execute, "replay_arm_warnings", arm_warnings)
    monkeypatch.setattr(execute, "noise_warnings", lambda summary, usage=None: [])
    monkeypatch.setattr(execute, "floor_pair_notes", lambda cases: [])
    out = tmp_path / "run"
    assert cli.main(["--scenario", "decode-steady", "--num-running", "2", "--steps", "20",
                     "--warmup-steps", "2", "--policies", "send,cached", "--codecs",
                     "msgpack", "--repeat", "3", "--no-single-process", "--no-floor",
                     "--output", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    end = next(i for i, line in enumerate(err) if line.startswith("ipc-bench: 6 cases run"))
    ids = list(given)
    assert err[end + 1:end + 3] == [f"warning: {ids[0]}: {STEPS.format('67.8')}",
                                    f"warning: {ids[0]}: {FLOOR}"]
    assert err[end + 3:end + 5] == [
        f"warning: {ids[1]}: as above (the machine may be noisy): step_ns_rep_block_cv "
        "67.8 %, floor_step_ns_rep_block_cv 50.0 %",
        f"warning: {ids[2]}: as above (the machine may be noisy): step_ns_rep_block_cv "
        "67.8 % (this repetition stands out: 192.7 % from the others'), "
        "floor_step_ns_rep_block_cv 50.0 %"]
    assert all(line.startswith(f"warning: {c}: as above (the machine may be noisy): "
                               "step_ns_rep_block_cv 66.3 %")
               for c, line in zip(ids[3:], err[end + 5:end + 8]))
    assert err[end + 8:] == [
        "12 measurement warnings in 6 of 6 cases (on the repetitions of a trace replay "
        "arm that vary over 10 %, printed after the last case; 10 of them in short, on "
        f'"as above" lines): see Measurement warnings in python {SCRIPT} report {out}, '
        f"which adds them (they are not in {out}/summary.json)"]
    assert [c["warnings"] for c in json.loads((out / "summary.json").read_text())["cases"]] \
        == [[]] * 6
