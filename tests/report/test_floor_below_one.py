"""An ``x floor`` below 1 (the floor, less work, ran slower than the case) is flagged:
a warning with the case, a ``!`` after the value in the terminal and report tables
with a note saying what it means, and the findings' floor range leaves it out."""

from __future__ import annotations

import csv
import json
import shutil

import numpy as np
import pytest

from analysis_run import run_bench
from ipc_bench import cli
from ipc_bench.analysis.summary import (floor_below_one_warning, floor_pair_notes,
                                        noise_warnings)
from ipc_bench.report.tables import (FLOOR_BELOW_ONE_NOTE, floor_below_one_note,
                                     format_tables)

RUN = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "40",
       "--warmup-steps", "5", "--codecs", "msgpack", "--no-single-process"]
SLOW = ("the floor (the same messages exchanged bare, less work) ran slower than the case "
        "(x floor 0.89, below 1): the machine's noise outweighed what the harness's logic "
        "adds, so this case's overhead over the floor is noise")


def test_a_case_whose_floor_ran_slower_carries_a_warning():
    case = dict(num_steps=200, step_to_floor_ratio=0.8912)
    assert noise_warnings(case) == [SLOW]
    assert floor_below_one_warning(dict(case, async_scheduling=True)) == (
        "x floor 0.89: the floor replays the frames one at a time while this async case "
        "overlapped its steps, so x floor is not the harness's overhead here")
    assert noise_warnings(dict(case, step_to_floor_ratio=1.0)) == []
    assert noise_warnings(dict(case, step_to_floor_ratio=None)) == []


def _set_x_floor(case: dict, rows: list[dict], ratio: float) -> None:
    """Scale the floor.csv ``rows`` (dicts) of ``case`` (its summary entry) so that its
    ``x floor`` is ``ratio`` (to the ns), and its floor figures to match them, as
    ``analysis.summary`` computes them (the loader checks them against the rows)."""
    step_ns = case["num_steps"] * case["step_ns_mean"]
    scale = step_ns / ratio / sum(int(r["floor_step_ns"]) for r in rows)
    for r in rows:
        r["floor_step_ns"] = str(round(int(r["floor_step_ns"]) * scale))
    floor = np.array([int(r["floor_step_ns"]) for r in rows], dtype=np.int64)
    case.update(floor_step_ns_median=float(np.median(floor)),
                floor_step_ns_mean=float(floor.mean()),
                floor_output_tokens_per_s=case["output_tokens"] / (floor.sum() / 1e9),
                step_to_floor_ratio=step_ns / floor.sum())


@pytest.fixture(scope="module")
def slow_floor_run(tmp_path_factory):
    """A real run whose cached case's floor is slowed to an ``x floor`` of 0.89, with
    its warning, and its send case's set to 3.25 (floor.csv and summary.json)."""
    base = tmp_path_factory.mktemp("runs")
    run_bench(base / "whole", RUN)
    run = base / "slow"
    shutil.copytree(base / "whole", run)
    summary = json.loads((run / "summary.json").read_text())
    with open(run / "floor.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    case = summary["cases"][1]
    assert case["case_id"] == "num_running=4/cached/msgpack#0"
    _set_x_floor(case, [r for r in rows if r["case_id"] == case["case_id"]], 0.89)
    case["warnings"] = [SLOW]
    send = summary["cases"][0]  # above 1 whatever the machine's load
    _set_x_floor(send, [r for r in rows if r["case_id"] == send["case_id"]], 3.25)
    send["warnings"] = []
    with open(run / "floor.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (run / "summary.json").write_text(json.dumps(summary))
    return run, summary


def test_the_terminal_table_marks_it(slow_floor_run):
    _, summary = slow_floor_run
    lines = format_tables(summary["cases"]).splitlines()
    cached = next(ln for ln in lines if ln.startswith("cached"))
    assert cached.split()[6] == "0.89!"
    send = next(ln for ln in lines if ln.startswith("send"))
    assert send.split()[6] == "3.25"
    assert f"  {FLOOR_BELOW_ONE_NOTE}" in lines


def test_the_report_marks_it_and_leaves_it_out_of_the_floor_range(slow_floor_run, tmp_path):
    run, summary = slow_floor_run
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    row = next(ln for ln in md.splitlines() if ln.startswith("| 0 | cached | msgpack |"))
    assert row.split(" | ")[7] == "0.89!"
    assert ("`!`: `x floor` below 1, the floor (the same messages exchanged bare, less "
            "work) ran slower than the case: that case's overhead over the floor is noise; "
            "its warning says so") in md
    assert "async" not in md  # a synchronous run: the note speaks of its own cases
    # send's x floor, 3.25 against cached's 0.89, makes their floors differ by far more
    # than their frames explain (unless a noisy send step ran about 3.65x cached's in
    # this 40-step run, as once under a loaded CI): the run's note then calls them not
    # comparable, so send's is left out of the range too, and counted apart
    lead = ("- No overhead over the floor can be read from this run: the floor ran slower "
            "than the case in 1 case (`x floor` below 1, marked `!`): that overhead is noise")
    if floor_pair_notes(summary["cases"]):
        assert "so their floor tok/s and x floor are not comparable" in md
        assert (f"{lead}; 1 case whose floor is not comparable with its send / cached "
                "twin's, as the notes under Measurement warnings say (the two floors differ "
                "by more than their frames explain: the machine's noise).") in md
    else:  # send's floor is comparable: its 3.25x is the range, cached's left out
        assert "not comparable" not in md
        assert ("take 3.25x the floor (the same recorded messages exchanged bare) in " in md
                and f"{lead[len('- No overhead over the floor can be read from this run: '):]}"
                ", left out." in md), md
    assert f"- `num_running=4/cached/msgpack#0`: {SLOW}" in md


def test_the_note_speaks_of_the_cases_it_marks():
    sync = dict(step_to_floor_ratio=0.89)
    slow_async = dict(step_to_floor_ratio=0.7, async_scheduling=True)
    assert floor_below_one_note([sync, dict(step_to_floor_ratio=1.5)]) == (
        "!: x floor below 1, the floor (the same messages exchanged bare, less work) ran "
        "slower than the case: that case's overhead over the floor is noise; its warning "
        "says so")
    assert floor_below_one_note([slow_async]) == (
        "!: x floor below 1, the floor replays the frames one at a time while that async "
        "case overlapped its steps: its x floor is not the harness's overhead; its warning "
        "says so")
    assert floor_below_one_note([sync, slow_async]).startswith(
        "!: x floor below 1: for a synchronous case, the floor (the same messages exchanged "
        "bare, less work) ran slower than the case, so its overhead over the floor is noise; "
        "for an async case, ")
    assert floor_below_one_note([dict(step_to_floor_ratio=1.2)]) is None


def test_a_range_of_one_value_is_printed_once():
    import pandas as pd

    from ipc_bench.report.findings import _floor_findings

    one = pd.DataFrame({"step_to_floor_ratio": [1.78]})
    assert _floor_findings(one) == [
        "The harness's measured steps take 1.78x the floor (the same recorded messages "
        "exchanged bare) in the one case."]
    alike = pd.DataFrame({"step_to_floor_ratio": [1.781, 1.779]})
    assert _floor_findings(alike) == [
        "The harness's measured steps take 1.78x the floor (the same recorded messages "
        "exchanged bare) in both cases."]
    two = pd.DataFrame({"step_to_floor_ratio": [1.5, 2.25]})
    assert _floor_findings(two) == [
        "The harness's measured steps take 1.50x to 2.25x the floor (the same recorded "
        "messages exchanged bare) across both cases."]
    with_inproc = pd.DataFrame({"step_to_floor_ratio": [1.5, 2.25, None, None]})
    assert _floor_findings(with_inproc) == [  # the single-process cases have no floor
        "The harness's measured steps take 1.50x to 2.25x the floor (the same recorded "
        "messages exchanged bare) across both cases with a floor."]


def test_the_floor_finding_gives_an_async_case_the_async_cause():
    """An async case's x floor below 1 was called noise by the finding while the
    table's note and the case's warning say the case overlapped its steps; the finding
    now gives each kind its own cause."""
    import pandas as pd

    from ipc_bench.report.findings import _floor_findings

    cases = pd.DataFrame({"step_to_floor_ratio": [2.5, 0.8, 0.9],
                          "async_scheduling": [False, True, False]})
    assert _floor_findings(cases) == [
        "The harness's measured steps take 2.50x the floor (the same recorded messages "
        "exchanged bare) in the one synchronous case with `x floor` at or above 1; the "
        "floor ran slower than the case in 1 case (`x floor` below 1, marked `!`): that "
        "overhead is noise; 1 async case (`x floor` 0.80x; below 1 marked `!`) overlapped "
        "its steps while the floor replays the frames one at a time: that `x floor` is not "
        "the harness's overhead on either side of 1, left out."]
    only_async = cases.iloc[:2]
    assert _floor_findings(only_async)[0].endswith(
        "in the one synchronous case; 1 async case (`x floor` 0.80x; below 1 marked `!`) "
        "overlapped its steps while the floor replays the frames one at a time: that "
        "`x floor` is not the harness's overhead on either side of 1, left out.")


def test_the_floor_range_leaves_out_async_cases_on_both_sides_of_one():
    """An async case above 1 stayed in the range while one below 1 was left out,
    though neither's `x floor` is the harness's overhead: both are left out now, and
    the range says it covers the synchronous cases."""
    import pandas as pd

    from ipc_bench.report.findings import _floor_findings

    cases = pd.DataFrame({"step_to_floor_ratio": [2.5, 1.4, 3.0, 0.8],
                          "async_scheduling": [False, True, False, True]})
    assert _floor_findings(cases) == [
        "The harness's measured steps take 2.50x to 3.00x the floor (the same recorded "
        "messages exchanged bare) across the 2 synchronous cases; 2 async cases "
        "(`x floor` 0.80x to 1.40x; below 1 marked `!`) overlapped their steps while the "
        "floor replays the frames one at a time: their `x floor` is not the harness's "
        "overhead on either side of 1, left out."]
    above = cases.iloc[:3]
    assert _floor_findings(above)[0].endswith(
        "across the 2 synchronous cases; 1 async case (`x floor` 1.40x) overlapped its "
        "steps while the floor replays the frames one at a time: that `x floor` is not "
        "the harness's overhead on either side of 1, left out.")


def test_an_x_floor_just_below_1_is_not_shown_as_1():
    """Two decimals would read ``1.00!``, beside a note that says it is below 1."""
    from ipc_bench.report.tables import floor_ratio_cell

    assert [floor_ratio_cell(v) for v in (0.93, 0.9951, 0.9996)] == ["0.93", "0.995", "0.999"]


def test_the_floor_range_says_how_many_of_its_floors_are_noisy():
    """A range of 1.10x to 6.80x reads as the harness's overhead; where the floors of
    some of its cases were flagged noisy, the finding counts them."""
    import pandas as pd

    from ipc_bench.report import findings

    ok = pd.DataFrame(dict(step_to_floor_ratio=[1.1, 6.8, 2.0],
                           floor_step_ns_block_cv=[0.2, 0.05, 0.3], model=["null"] * 3))
    assert findings._floor_findings(ok) == [
        "The harness's measured steps take 1.10x to 6.80x the floor (the same recorded "
        "messages exchanged bare) across all 3 cases (2 of them with a noisy floor, whose "
        "50-step block means vary over 10 % of their mean, as their warnings say, and "
        "their `x floor` with it)."]
    quiet = ok.assign(floor_step_ns_block_cv=[0.01, 0.05, 0.03])
    assert findings._floor_findings(quiet)[0].endswith("across all 3 cases.")


def test_floors_the_notes_call_not_comparable_are_left_out_of_the_range():
    """The floors of repetition 0's send / cached pair differ by 60 µs where their
    frames explain 1 µs: the run's note calls them not comparable, so both cases are
    left out of the range and counted apart; repetition 1's pair is in it."""
    import pandas as pd

    from ipc_bench.analysis.summary import floor_pair_notes
    from ipc_bench.report import findings

    def case(policy, rep, floor_us, ratio):
        return dict(case_id=f"num_running=4/{policy}/msgpack#{rep}", policy=policy,
                    arm=policy, scenario="decode-steady", workload="num_running=4",
                    codec="msgpack", transport="ipc", repetition=rep,
                    async_scheduling=False, schedule_digest="d", model="null",
                    floor_step_ns_mean=floor_us * 1e3, step_to_floor_ratio=ratio,
                    encode_ns_per_step=6_000.0 if policy == "send" else 5_500.0,
                    decode_ns_per_step=15_000.0 if policy == "send" else 14_500.0)

    ok = pd.DataFrame([case("send", 0, 160.0, 1.5), case("cached", 0, 100.0, 3.9),
                       case("send", 1, 101.0, 2.1), case("cached", 1, 100.0, 2.4)])
    (note,) = floor_pair_notes(ok.to_dict("records"))
    assert note.startswith("the floors of num_running=4/send/msgpack#0 and "
                           "num_running=4/cached/msgpack#0 differ by more than")
    assert findings._incomparable_floors(ok) == {"num_running=4/send/msgpack#0",
                                                 "num_running=4/cached/msgpack#0"}
    assert findings._floor_findings(ok) == [
        "The harness's measured steps take 2.10x to 2.40x the floor (the same recorded "
        "messages exchanged bare) across the 2 cases with a comparable floor; 2 cases "
        "whose floors are not comparable with their send / cached twins', as the notes "
        "under Measurement warnings say (the two floors differ by more than their frames "
        "explain: the machine's noise), left out."]
