"""Findings about a ``--tp`` case that ran more processes than cores say so, and the
loaded-machine note counts the processes a case ran."""

from __future__ import annotations


import pandas as pd

from ipc_bench.analysis.results import Results
from ipc_bench.report.blocks import _processes_phrase, _state_notes
from ipc_bench.report.findings import _pair_finding


def _case(tp, policy, codec="msgpack", cores=2):
    return dict(workload=f"broadcast=ipc,num_running=256,tp={tp}", policy=policy, codec=codec,
                transport="ipc", model="null", tp=tp, tp_cores=cores,
                tp_oversubscribed=cores < tp + 1)


def _tables(cases):
    tput = {}
    for (workload, codec), g in cases.groupby(["workload", "codec"], sort=False):
        send = 100.0 if "tp=2" in workload else 200.0
        tput[(workload, codec, "ipc", "null")] = dict(ratio=1.833, n=1, significant=None,
                                                      send=send, cached=send * 1.833)
    return dict(tput=tput, s2r={}, enc={}, dec={}, build={})


def test_a_finding_on_an_oversubscribed_tp_case_says_so():
    cases = pd.DataFrame([_case(1, "send"), _case(1, "cached"), _case(2, "send"),
                          _case(2, "cached")])
    tables = _tables(cases)

    def where(workload):
        return "At 256 running requests, " + workload.split(",")[-1]
    one, two = (_pair_finding(cases, tables, key, where, False) for key in tables["tput"])
    # tp=1 on 2 cores: N = 1 on exactly 2, its timings shown marked (analysis.cores)
    assert one == ("At 256 running requests, tp=1 (msgpack°), cached changes output tokens/s "
                   "by +83.3 % (one repetition, no interval: 200 → 367 tok/s).")
    assert two == ("At 256 running requests, tp=2 (msgpack), cached changes output tokens/s "
                   "by +83.3 % (one repetition, no interval: 100 → 183 tok/s). OVERSUBSCRIBED: "
                   "tp=2 ran 3 processes (the "
                   "scheduler and 2 ranks) on 2 cores, so they shared cores: its times and "
                   "tokens/s are not comparable with the other cases', only its bytes are.")


def test_load_note_counts_the_processes_of_a_case():
    tp = pd.DataFrame([_case(1, "send"), _case(2, "send"), _case(4, "send")])
    assert _processes_phrase(tp) == ("each case's 2 to 5 processes (the scheduler and its N "
                                     "runner ranks or stages)")
    plain = pd.DataFrame([dict(codec="msgpack"), dict(codec="none")])
    assert _processes_phrase(plain) == "the two processes"
    assert _processes_phrase(pd.DataFrame([_case(2, "send")])) == \
        "the three processes of each case"
    empty = pd.DataFrame(columns=["run_id", "case_id"])
    one = Results(cases=tp, steps=empty, requests=empty, floor=empty, itl=empty,
                  metadata={"r": dict(load_avg=[6.1, 5, 4], cpu_count=2)},
                  status={"r": "complete"}, problems={"r": []}, paths={})
    notes = [b for b in _state_notes(one, "r") if "loaded" in b[1]]
    assert notes == [("note", "The machine was loaded when this run started, or had just "
                      "been (1-minute load average 6.1 on 2 CPUs, an average that falls over "
                      "about a minute): other work then may have competed with each case's "
                      "2 to 5 processes (the scheduler and its N runner ranks or stages), so "
                      "times and tokens/s may be noisy; bytes are exact whatever the load.")]
