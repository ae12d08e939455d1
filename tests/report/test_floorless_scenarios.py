"""Scenarios that never run a floor (``overhead``, ``pp``; ``soak`` and the timed
replays, whose cases are timed replays): beside a run with floors, the settings line
says that the scenario runs none, from what the run recorded (each case's ``floor`` and
``no_floor``, or its ``pp``), not that ``--no-floor`` left them out, whether or not the
flag was given."""

from __future__ import annotations

import json

import pytest

from analysis_run import run_bench
from ipc_bench import cli
from ipc_bench.harness.environment import compare_settings

STEADY = ["--num-running", "8", "--steps", "10", "--warmup-steps", "2", "--codecs",
          "msgpack"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``overhead`` and ``pp`` (``--pp 1``) given ``--no-floor``, ``overhead-plain``
    without it, and ``floor``, a decode-steady run with its floors."""
    base = tmp_path_factory.mktemp("floorless")
    run_bench(base / "overhead", ["--scenario", "overhead", *STEADY, "--repeat", "2",
                                  "--no-floor"])
    run_bench(base / "overhead-plain", ["--scenario", "overhead", *STEADY, "--repeat", "2"])
    # one stage: every stage process imports torch, and the cases' floor records do not
    # depend on their stage count
    run_bench(base / "pp", ["--scenario", "pp", "--pp", "1", *STEADY, "--no-floor",
                            "--no-single-process"])
    run_bench(base / "floor", ["--scenario", "decode-steady", *STEADY,
                               "--no-single-process"])
    return base


def _md(runs, name: str) -> dict:
    return json.loads((runs / name / "summary.json").read_text())["metadata"]


def _floor_lines(a: dict, b: dict) -> list[str]:
    return [ln for ln in compare_settings(a, b)[0] if ln.startswith("floors differ")]


def test_each_case_records_whether_the_flag_left_its_floor_out(runs):
    assert [(c["pp"], c["floor"], c["no_floor"]) for c in _md(runs, "pp")["cases"]] == [
        (1, False, False)] * 2
    assert {(c["floor"], c["no_floor"]) for c in _md(runs, "overhead")["cases"]} == {
        (False, False)}
    assert [(c["floor"], c["no_floor"]) for c in _md(runs, "floor")["cases"]] == [
        (True, False)] * 2


@pytest.mark.parametrize("name,scenario", [("overhead", "overhead"),
                                           ("overhead-plain", "overhead"), ("pp", "pp")])
def test_a_scenario_without_floors_says_so_with_or_without_the_flag(runs, name, scenario):
    run, floor = _md(runs, name), _md(runs, "floor")
    assert run["options"]["no_floor"] is (name != "overhead-plain")
    assert _floor_lines(run, floor) == [
        f"floors differ: not run ({scenario} runs none, --no-floor or not) vs run "
        "(decode-steady's default)"]
    assert _floor_lines(floor, run) == [
        f"floors differ: run (decode-steady's default) vs not run ({scenario} runs none, "
        "--no-floor or not)"]


def test_a_pp_run_written_before_no_floor_was_recorded_is_known_by_its_stages(runs):
    older = _md(runs, "pp")
    for case in older["cases"]:
        del case["no_floor"]
    assert _floor_lines(older, _md(runs, "floor")) == [
        "floors differ: not run (pp runs none, --no-floor or not) vs run (decode-steady's "
        "default)"]


def test_the_flag_is_still_why_where_a_case_could_have_run_one(runs):
    floor = _md(runs, "floor")
    flagged = json.loads(json.dumps(floor))
    flagged["options"]["no_floor"] = True
    for case in flagged["cases"]:
        case.update(floor=False, no_floor=True)
    assert _floor_lines(flagged, floor) == [
        "floors differ: not run (--no-floor given) vs run (decode-steady's default)"]
    # the recorded no_floor is said by that line alone, never as a case setting
    assert compare_settings(flagged, floor) == (_floor_lines(flagged, floor), [])


def test_the_report_of_a_pp_run_beside_one_with_floors_says_pp_runs_none(runs, tmp_path):
    assert cli.main(["report", str(runs / "floor"), str(runs / "pp"), "--output",
                     str(tmp_path / "rep"), "--no-figures"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text().splitlines()
    assert ("- pp against floor: floors differ: not run (pp runs none, --no-floor or not) "
            "vs run (decode-steady's default)") in md
    assert not any("no_floor" in ln for ln in md if ln.startswith("|"))
