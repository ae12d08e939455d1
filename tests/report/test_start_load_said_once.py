"""A single run's report gives the load average at its start once, to one decimal as
the run's own ``note:`` line does: the note on a loaded start gives it, and the busy
note under it (``blocks.busy_during_note``) then leaves it out, where before it gave it
again to two decimals (``8.2`` and then ``8.23``). A run that started quiet has no
loaded note, and its busy note gives the start's load; a report of several runs gives
each run's to one decimal too."""

from __future__ import annotations

import pandas as pd

from ipc_bench.analysis.results import Results
from ipc_bench.report import blocks
from ipc_bench.report.blocks import _state_notes


def _one(load: float) -> Results:
    empty = pd.DataFrame(columns=["run_id", "case_id"])
    frame = pd.DataFrame([dict(run_id="r", case_id=f"c{i}", codec="msgpack", complete=True,
                               num_steps=300, machine_busy_pct=b, step_ns_block_cv=cv)
                          for i, (b, cv) in enumerate([(99.6, 0.3), (100.0, 0.05)])])
    return Results(cases=frame, steps=empty, requests=empty, floor=empty, itl=empty,
                   metadata={"r": dict(load_avg=[load, 7.9, 7.5], cpu_count=2)},
                   status={"r": "complete"}, problems={"r": []}, paths={})


TAIL = ("noisy step times (`step_ns_block_cv` over 10 %) in 1 of 2 cases. The busy share "
        "counts every process, this run's own among them, so it is not other work's alone.")


def test_a_loaded_start_gives_its_load_average_once():
    assert _state_notes(_one(8.23), "r") == [
        ("note", "The machine was loaded when this run started, or had just been (1-minute "
                 "load average 8.2 on 2 CPUs, an average that falls over about a minute): "
                 "other work then may have competed with the two processes, so times and "
                 "tokens/s may be noisy; bytes are exact whatever the load."),
        ("note", "As this run recorded the machine's load: the machine 99.8 % busy (mean "
                 "`machine_busy_pct` over 2 cases); " + TAIL)]


def test_a_quiet_start_gives_it_in_the_busy_note():
    assert _state_notes(_one(0.64), "r") == [
        ("note", "As this run recorded the machine's load: the machine 99.8 % busy (mean "
                 "`machine_busy_pct` over 2 cases); 1-minute load average 0.6 on 2 CPUs at "
                 "its start; " + TAIL)]


def test_a_runs_item_gives_it_to_one_decimal():
    one = _one(8.23)
    assert blocks.machine_load_line("r", blocks.machine_load(one.cases, one.metadata["r"])) \
        == ("`r`: the machine 99.8 % busy (mean `machine_busy_pct` over 2 cases); 1-minute "
            "load average 8.2 on 2 CPUs at its start; " + TAIL.split(". The busy")[0])
