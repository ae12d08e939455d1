"""The loaded-machine note counts a ``--frontend`` case's frontend among the processes
that other work may have competed with."""

from __future__ import annotations

import pandas as pd

from ipc_bench.report.blocks import _processes_phrase


def test_a_frontend_run_has_three_processes_to_a_case():
    cases = pd.DataFrame([dict(codec="msgpack", frontend=True),
                          dict(codec="pickle", frontend=True)])
    assert _processes_phrase(cases) == ("the three processes of each case (the scheduler, "
                                        "its runner and the frontend)")


def test_a_run_without_the_frontend_reads_as_before():
    assert _processes_phrase(pd.DataFrame([dict(codec="msgpack", frontend=False),
                                           dict(codec="none", frontend=False)])) == \
        "the two processes"
    assert _processes_phrase(pd.DataFrame([dict(codec="msgpack")])) == "the two processes"


def test_tp_cases_with_the_frontend_count_it_too():
    cases = pd.DataFrame([dict(codec="msgpack", tp=1, frontend=True),
                          dict(codec="msgpack", tp=4, frontend=True)])
    assert _processes_phrase(cases) == ("each case's 3 to 6 processes (the scheduler, the "
                                        "frontend and its N runner ranks or stages)")
