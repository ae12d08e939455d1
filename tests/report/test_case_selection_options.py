"""A report of several runs states the options that chose which cases ran
(``environment.CASE_SELECTION_OPTIONS``: ``--codecs``, ``--policies``, ``--aa``...) as it
states the other option differences, by what the runs' cases ran; a run written before
they were recorded loads without a false difference."""

from __future__ import annotations

import json

import pytest

from analysis_run import copy_as_another_run, run_bench, setting_items
from ipc_bench import cli
from ipc_bench.harness.environment import (CASE_SELECTION_OPTIONS, MEASUREMENT_FLAGS,
                                           compare_settings)

COMMON = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "40",
          "--warmup-steps", "5", "--no-floor"]
RUNS = {"both": [], "msgpack": ["--codecs", "msgpack"], "cached": ["--policies", "cached"],
        "nosp": ["--no-single-process"]}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run folders: ``RUNS``, ``floor``, as ``both`` but without ``--no-floor``, and
    ``older``, a copy of ``both`` whose summary lacks the recorded case-selection
    options and ``--no-floor``, as a run written before them."""
    base = tmp_path_factory.mktemp("selection")
    for name, args in RUNS.items():
        run_bench(base / name, COMMON + args)
    run_bench(base / "floor", [a for a in COMMON if a != "--no-floor"])
    older = copy_as_another_run(base / "both", base / "older")
    summary = json.loads((older / "summary.json").read_text())
    for name in CASE_SELECTION_OPTIONS + tuple(MEASUREMENT_FLAGS):
        del summary["metadata"]["options"][name]
    (older / "summary.json").write_text(json.dumps(summary))
    return base


def _differences(base, names: list[str]) -> list[str]:
    out = base / ("rep-" + "-".join(names))
    assert cli.main(["report", *(str(base / n) for n in names), "--output", str(out),
                     "--no-figures"]) == 0  # the tests read the Runs section alone
    md = (out / "report.md").read_text().splitlines()
    start = md.index("## Runs")
    end = md.index("## Side by side")
    return setting_items(md[start:end])


def test_the_options_are_recorded_as_given(runs):
    options = [json.loads((runs / n / "summary.json").read_text())["metadata"]["options"]
               for n in ("both", "msgpack", "cached", "nosp")]
    assert [{k: o[k] for k in CASE_SELECTION_OPTIONS} for o in options] == [
        dict(policies=None, codecs=None, aa=False, async_scheduling=False,
             num_spec_tokens=None, no_single_process=False, transport="ipc"),
        dict(policies=None, codecs=["msgpack"], aa=False, async_scheduling=False,
             num_spec_tokens=None, no_single_process=False, transport="ipc"),
        dict(policies=["cached"], codecs=None, aa=False, async_scheduling=False,
             num_spec_tokens=None, no_single_process=False, transport="ipc"),
        dict(policies=None, codecs=None, aa=False, async_scheduling=False,
             num_spec_tokens=None, no_single_process=True, transport="ipc")]


def test_another_codec_and_policy_set_is_a_difference(runs, capsys):
    assert _differences(runs, ["both", "msgpack", "cached"]) == [
        "- msgpack against both, cached: option --codecs differs: [msgpack] vs default "
        "(msgpack, pickle)",
        "- cached against both, msgpack: option --policies differs: [cached] vs default "
        "(cached, send)"]
    assert capsys.readouterr().err == ""


def test_no_single_process_is_a_difference(runs):
    assert _differences(runs, ["both", "nosp"]) == [
        "- nosp against both: single-process cases differ: not run (--no-single-process "
        "given) vs run (decode-steady's default)"]


def _metadata(runs, name: str) -> dict:
    return json.loads((runs / name / "summary.json").read_text())["metadata"]


def test_no_floor_is_one_line_that_marks_no_workload(runs):
    """``--no-floor`` against its default: one line, as ``--no-single-process`` gets,
    not the case setting ``floor`` of the arms (``False vs False, True``: the
    single-process arm never has a floor); the floor replays the frames after the
    counted steps, so the rows of the cases stay comparable, by tokens/s and bytes."""
    both, floor = _metadata(runs, "both"), _metadata(runs, "floor")
    assert (both["options"]["no_floor"], floor["options"]["no_floor"]) == (True, False)
    line = "floors differ: not run (--no-floor given) vs run (decode-steady's default)"
    assert compare_settings(both, floor) == ([line], [])
    assert compare_settings(both, floor, exact=True) == ([line], [])
    assert compare_settings(floor, both) == (
        ["floors differ: run (decode-steady's default) vs not run (--no-floor given)"], [])
    assert _differences(runs, ["both", "floor"]) == [
        "- floor against both: floors differ: run (decode-steady's default) vs not run "
        "(--no-floor given)"]
    md = (runs / "rep-both-floor" / "report.md").read_text().splitlines()
    side = md[md.index("## Side by side"):]
    side = side[:next(i for i in range(1, len(side)) if side[i].startswith("## "))]
    rows = [ln for ln in side if ln.startswith("| num_running=")]
    # 6 arms x 3 tables, then the effect table's 3 pairs (msgpack, pickle, none)
    assert len(rows) == 21 and not any("≠" in ln for ln in rows)
    # a run written before --no-floor was recorded: what its cases did
    assert compare_settings(_metadata(runs, "older"), floor)[0] == [
        "floors differ: not run (not recorded) vs run (decode-steady's default)"]


def test_a_run_written_before_compares_by_its_cases(runs):
    """The older copy of ``both`` ran the same cases: no difference with it; against
    the msgpack run, what it ran, marked as not recorded."""
    older = json.loads((runs / "older" / "summary.json").read_text())["metadata"]
    both = json.loads((runs / "both" / "summary.json").read_text())["metadata"]
    msgpack = json.loads((runs / "msgpack" / "summary.json").read_text())["metadata"]
    assert compare_settings(older, both) == ([], [])
    assert compare_settings(both, older) == ([], [])
    assert compare_settings(msgpack, older)[0] == [
        "option --codecs differs: [msgpack] vs not recorded (msgpack, pickle)"]
    assert _differences(runs, ["both", "older"]) == []


def _md(policy: str, transport: str, options: dict) -> dict:
    """Metadata of a run of one case and its single-process twin."""
    case = dict(case_id="c", labels={"num_running": 4}, policy=policy, arm=policy,
                codec="msgpack", transport=transport, repetition=0)
    twin = dict(case, case_id="c1", codec="none", transport="inproc")
    return dict(seed=0, options=options, cases=[case, twin])


def test_the_transport_is_an_option_difference_where_no_arm_is_shared():
    """Runs that share no arm compare no case setting: another transport is stated as
    an option; where they share one, it is the shared arm's case setting, once."""
    send = _md("send", "shm", dict(policies=["send"], transport="shm"))
    cached = _md("cached", "ipc", dict(policies=["cached"], transport="ipc"))
    assert compare_settings(send, cached) == ([
        "option --policies differs: [send] vs [cached]",
        "option --transport differs: shm vs ipc"], [])
    older = _md("cached", "ipc", {})
    assert compare_settings(send, older)[0] == [
        "option --policies differs: [send] vs not recorded (cached)",
        "option --transport differs: shm vs not recorded (ipc)"]
    both = _md("send", "ipc", dict(policies=["send"], transport="ipc"))
    assert compare_settings(send, both) == ([
        "case setting transport differs: inproc, shm vs inproc, ipc (workload "
        "num_running=4)"],
        ["num_running=4"])


def _readers_md(scenario: str, cases: list[tuple[dict, str]], **options) -> dict:
    """Metadata of a ``scenario`` run (``pp``, ``tp-broadcast``) of one send case per
    (labels, transport) of ``cases``, every option left to its default but ``options``."""
    given = {name: None for name in ("tp", "pp", "tp_transports", "codecs", "policies")}
    given.update(transport="ipc", **options)
    return dict(seed=0, scenario=scenario, options=given, cases=[
        dict(case_id=f"c{i}", labels=labels, policy="send", arm="send", codec="msgpack",
             transport=transport, repetition=0) for i, (labels, transport) in enumerate(cases)])


def test_one_transport_given_to_both_runs_is_no_option_difference():
    """Both runs given --transport ipc, a tp-broadcast run's cases ran its broadcast's
    transports: the transports in effect differ, not the option, and --tp / --pp,
    which one scenario takes and the other does not, are stated."""
    pp = _readers_md("pp", [({"num_running": 4, "pp": 1}, "ipc"),
                            ({"num_running": 4, "pp": 2}, "ipc")])
    tp = _readers_md("tp-broadcast", [
        ({"num_running": 4, "tp": 1, "broadcast": b}, b) for b in ("ipc", "shm-block", "shm")]
        + [({"num_running": 4, "tp": 2, "broadcast": "ipc"}, "ipc")])
    assert compare_settings(pp, tp) == ([
        "transports in effect differ: ipc vs ipc, shm, shm-block (--transport ipc in both; "
        "tp-broadcast's cases run its --tp-transports, default)",
        "option --pp differs: default (1, 2) vs none (scenario tp-broadcast takes no --pp)",
        "option --tp differs: none (scenario pp takes no --tp) vs default (1, 2)"], [])
    given = _readers_md("tp-broadcast", [
        ({"num_running": 4, "tp": 2, "broadcast": "shm-block"}, "shm-block")],
        tp=[2], tp_transports=["shm-block"])
    assert compare_settings(given, pp)[0] == [
        "transports in effect differ: shm-block vs ipc (--transport ipc in both; "
        "tp-broadcast's cases run its --tp-transports, [shm-block])",
        "option --pp differs: none (scenario tp-broadcast takes no --pp) vs default (1, 2)",
        "option --tp differs: [2] vs none (scenario pp takes no --tp)"]
    # the same broadcast transport as the pp run's: no transport line at all
    alike = _readers_md("tp-broadcast", [({"num_running": 4, "tp": 1, "broadcast": "ipc"},
                                          "ipc")], tp_transports=["ipc"])
    assert compare_settings(alike, pp)[0] == [
        "option --pp differs: none (scenario tp-broadcast takes no --pp) vs default (1, 2)",
        "option --tp differs: default (1) vs none (scenario pp takes no --tp)"]


def test_codecs_given_alike_but_run_otherwise_say_the_codecs_in_effect():
    """Both given --codecs msgpack,pickle, one ran msgpack alone (as a scenario may
    leave one out): never ``[msgpack, pickle] vs [msgpack, pickle] (in effect: ...)``."""
    a = _md("send", "ipc", dict(codecs=["msgpack", "pickle"]))
    b = _md("send", "ipc", dict(codecs=["msgpack", "pickle"]))
    b["cases"][0]["codec"] = "pickle"
    assert compare_settings(a, b)[0] == [
        "codecs in effect differ: msgpack vs pickle (--codecs [msgpack, pickle] in both)"]
