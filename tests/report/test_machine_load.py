"""A report of several runs says, at its opening, which run ran on a busier machine and
by what figures the runs recorded (mean ``machine_busy_pct`` over their cases, the load
average at their start, cases with noisy step times), where their mean busy shares are
10 points apart or more; it says nothing where they are closer or not recorded."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd

from ipc_bench.report.blocks import BUSY_APART, machine_load_blocks

NAN = math.nan


def _results(busy: dict[str, list[float]], cv: dict[str, list[float]],
             load: dict[str, list[float]]) -> SimpleNamespace:
    rows = [dict(run_id=r, case_id=f"c{i}", machine_busy_pct=b, step_ns_block_cv=c)
            for r in busy for i, (b, c) in enumerate(zip(busy[r], cv[r]))]
    md = {r: {"cpu_count": 2, **({"load_avg": load[r]} if r in load else {})} for r in busy}
    out = SimpleNamespace(run_ids=list(busy), cases=pd.DataFrame(rows), metadata=md)
    out.finished = lambda: out
    return out


QUIET = [60.0, 70.0, 80.0]
#: What a run's line says of its step-time noise where every case was too short for
#: ``step_ns_block_cv`` (NaN in each row).
SHORT = ("step-time noise not measured (no case counted 150 steps, the 3 blocks of 50 "
         "`step_ns_block_cv` needs)")
BUSY = [95.0, 99.0, 97.5, 0.0]  # the 0: /proc/stat unread, left out of the mean


def test_the_busier_run_is_named_with_each_runs_recorded_figures():
    results = _results({"a": QUIET, "d": BUSY},
                       {"a": [0.05, 0.2, NAN], "d": [0.3, 0.4, 0.11, 0.01]},
                       {"a": [0.34, 0.5, 0.6], "d": [3.57, 2.0, 1.0]})
    hi = (95.0 + 99.0 + 97.5) / 3  # 97.1666...
    assert f"{hi:.1f}" == "97.2"
    assert machine_load_blocks(results) == [
        ("note", "The machine was busier during run `d` than during run `a`: 97.2 % "
                 "against 70.0 % of its CPU time busy on average over their cases "
                 "(`machine_busy_pct`, 10 points apart or more), so the runs' times and "
                 "tokens/s may differ for that reason as well as for any change in code "
                 "(bytes per step do not). The share counts every process, the runs' own "
                 "among them: code that keeps the CPUs busier raises it too. As each run "
                 "recorded it:"),
        ("ul", ["`a`: the machine 70.0 % busy (mean `machine_busy_pct` over 3 cases); "
                "1-minute load average 0.3 on 2 CPUs at its start; noisy step times "
                "(`step_ns_block_cv` over 10 %) in 1 of 2 cases",
                "`d`: the machine 97.2 % busy (mean `machine_busy_pct` over 3 cases); "
                "1-minute load average 3.6 on 2 CPUs at its start; noisy step times "
                "(`step_ns_block_cv` over 10 %) in 3 of 4 cases"])]


def test_three_runs_name_the_busiest_and_the_least_busy_and_what_is_not_recorded():
    results = _results({"a": QUIET, "b": [71.0, 72.0], "old": [NAN], "d": BUSY},
                       {"a": [NAN] * 3, "b": [NAN] * 2, "old": [NAN], "d": [NAN] * 4},
                       {"a": [0.34, 0.5, 0.6]})
    note, items = machine_load_blocks(results)
    assert note[1].startswith("The machine was busiest during run `d` and least busy "
                              "during run `a`: 97.2 % against 70.0 % of its CPU time")
    assert items == ("ul", [
        "`a`: the machine 70.0 % busy (mean `machine_busy_pct` over 3 cases); 1-minute "
        "load average 0.3 on 2 CPUs at its start; " + SHORT,
        "`b`: the machine 71.5 % busy (mean `machine_busy_pct` over 2 cases); load "
        "average at its start not recorded; " + SHORT,
        "`old`: not recorded (`machine_busy_pct` absent from its finished cases: a "
        "summary written before the field existed)",
        "`d`: the machine 97.2 % busy (mean `machine_busy_pct` over 3 cases); load "
        "average at its start not recorded; " + SHORT])


def test_runs_closer_than_the_threshold_or_unrecorded_say_nothing():
    assert BUSY_APART == 10.0
    just_under = [70.0 + BUSY_APART - 0.01] * 3  # 79.99 against 70.0
    assert machine_load_blocks(_results({"a": QUIET, "b": just_under},
                                        {"a": [NAN] * 3, "b": [NAN] * 3}, {})) == []
    at = [80.0, 80.0, 80.0]  # 10.0 points apart: said
    assert machine_load_blocks(_results({"a": QUIET, "b": at},
                                        {"a": [NAN] * 3, "b": [NAN] * 3}, {}))[0][1] \
        .startswith("The machine was busier during run `b` than during run `a`: 80.0 % "
                    "against 70.0 %")
    assert machine_load_blocks(_results({"a": QUIET, "old": [NAN, 0.0]},
                                        {"a": [NAN] * 3, "old": [NAN] * 2}, {})) == []


def test_the_tests_filter_knows_every_item_form():
    """``analysis_run.setting_items`` drops the note's items from the Runs section of
    real runs (whether it is written depends on the machine's load); it must match every
    form ``machine_load_line`` writes and no setting difference."""
    from analysis_run import setting_items

    results = _results({"a": QUIET, "b": [71.0, 72.0], "old": [NAN], "d": BUSY},
                       {"a": [NAN] * 3, "b": [NAN] * 2, "old": [NAN], "d": [0.3] * 4},
                       {"a": [0.34, 0.5, 0.6]})
    items = ["- " + item for item in machine_load_blocks(results)[1][1]]
    difference = "- b against a: option --codecs differs: [msgpack] vs default (msgpack, pickle)"
    assert setting_items(items + [difference]) == [difference]
    # and the Runs section less the note and its items, both notes' forms
    from analysis_run import without_machine_load

    loaded = _results({"a": [99.8], "b": [99.3]}, {"a": [NAN], "b": [NAN]},
                      {"a": [3.1], "b": [3.5]})
    for blocks in (machine_load_blocks(results), machine_load_blocks(loaded)):
        (_, note), (_, listed) = blocks
        lines = [f"> **Note:** {note}", *("- " + item for item in listed), difference]
        assert without_machine_load(lines) == [difference]


def test_a_run_that_could_not_read_proc_stat_and_one_without_its_cpu_count_say_so():
    results = _results({"a": QUIET, "zero": [0.0, 0.0], "d": BUSY},
                       {"a": [NAN] * 3, "zero": [NAN] * 2, "d": [NAN] * 4},
                       {"a": [0.34, 0.5, 0.6], "d": [3.57, 2.0, 1.0]})
    del results.metadata["d"]["cpu_count"]
    assert machine_load_blocks(results)[1] == ("ul", [
        "`a`: the machine 70.0 % busy (mean `machine_busy_pct` over 3 cases); 1-minute "
        "load average 0.3 on 2 CPUs at its start; " + SHORT,
        "`zero`: not recorded (`machine_busy_pct` 0 in every case: `/proc/stat` could "
        "not be read)",
        "`d`: the machine 97.2 % busy (mean `machine_busy_pct` over 3 cases); 1-minute "
        "load average 3.6 (its CPU count not recorded) at its start; " + SHORT])


def test_a_run_from_before_the_noise_figure_says_it_is_not_recorded():
    results = _results({"a": QUIET, "d": BUSY}, {"a": [NAN] * 3, "d": [NAN] * 4}, {})
    results.cases = results.cases.drop(columns="step_ns_block_cv")
    assert [item.rsplit("; ", 1)[1] for item in machine_load_blocks(results)[1][1]] == [
        "step-time noise not recorded"] * 2


def test_run_names_with_backticks_stay_one_code_span():
    results = _results({"a`x": QUIET, "d": BUSY}, {"a`x": [NAN] * 3, "d": [NAN] * 4}, {})
    assert machine_load_blocks(results)[0][1].startswith(
        "The machine was busier during run `d` than during run ``a`x``: ")


def test_a_column_of_nulls_is_an_older_run():
    """``machine_busy_pct`` null in every case (summary.json written so): not recorded,
    no crash."""
    results = _results({"a": QUIET, "d": BUSY}, {"a": [NAN] * 3, "d": [NAN] * 4}, {})
    results.cases["machine_busy_pct"] = results.cases["machine_busy_pct"].astype(object)
    results.cases.loc[results.cases["run_id"] == "d", "machine_busy_pct"] = None
    results.cases.loc[results.cases["run_id"] == "a", "machine_busy_pct"] = None
    assert machine_load_blocks(results) == []


def test_runs_of_close_shares_that_started_loaded_are_named_with_their_figures():
    # two runs of one command 20 s apart, both on a saturated machine: their shares
    # are close (99.8 and 99.3 %), yet ratios between them can stray from 1 for the
    # load alone; the Runs section said only "Same machine, software and commit"
    results = _results({"r64a": [99.8] * 2, "r64b": [99.3] * 2},
                       {"r64a": [0.3, 0.05], "r64b": [NAN, NAN]},
                       {"r64a": [3.1, 2.0, 1.0], "r64b": [0.9, 2.0, 1.0]})
    assert machine_load_blocks(results) == [
        ("note", "Run `r64a` started on a loaded machine (a 1-minute load average of 50 % "
                 "of its CPUs or more, which counts work that had just ended too, such as "
                 "a run before): other work may have competed with its processes, by "
                 "amounts that change from minute to minute, so ratios of times and "
                 "tokens/s between the runs of this report can stray from 1 for that "
                 "reason alone, called significant or not (the repetitions of one run are "
                 "not paired with another's). Bytes per step are exact whatever the load; "
                 "within a run, the arms a paired comparison pairs ran back to back, under "
                 "much the same load. As each run recorded it:"),
        ("ul", ["`r64a`: the machine 99.8 % busy (mean `machine_busy_pct` over 2 cases); "
                "1-minute load average 3.1 on 2 CPUs at its start; noisy step times "
                "(`step_ns_block_cv` over 10 %) in 1 of 2 cases",
                "`r64b`: the machine 99.3 % busy (mean `machine_busy_pct` over 2 cases); "
                "1-minute load average 0.9 on 2 CPUs at its start; step-time noise not "
                "measured (no case counted 150 steps, the 3 blocks of 50 "
                "`step_ns_block_cv` needs)"])]
    both = _results({"a": [99.8], "b": [99.3], "c": [98.0]}, {"a": [NAN], "b": [NAN],
                    "c": [NAN]}, {"a": [3.1], "b": [3.5], "c": [0.2]})
    assert machine_load_blocks(both)[0][1].startswith(
        "Runs `a` and `b` started on a loaded machine (a 1-minute load average of 50 % of "
        "its CPUs or more, which counts work that had just ended too, such as a run "
        "before): other work may have competed with their processes,")
    # a run name with a % sign is kept as it is
    assert machine_load_blocks(_results({"run-100%": [99.8], "b": [99.3]},
                                        {"run-100%": [NAN], "b": [NAN]},
                                        {"run-100%": [3.1]}))[0][1].startswith(
        "Run `run-100%` started on a loaded machine (a 1-minute load average of 50 % of")
    # one run alone, or no run loaded at its start: nothing
    assert machine_load_blocks(_results({"a": [99.8]}, {"a": [NAN]}, {"a": [3.1]})) == []
    assert machine_load_blocks(_results({"a": [99.8], "b": [99.3]}, {"a": [NAN], "b": [NAN]},
                                        {"a": [0.9], "b": [0.2]})) == []
