"""A ``--tp N`` case whose scheduler and N ranks outnumber its cores warns whatever the
broadcast (``analysis.tp.tp_core_warning``): spinning ring readers hold their cores
while they wait; readers that sleep while they wait (XPUB over ipc, the ring's block
wait) all wake for the same frame, so the N ranks still run each step at once. On a
2-core machine, ``--tp 4`` over ipc or shm-block had more than 2 of its processes
runnable in about half of the samples of ``/proc/PID/task/*/stat``, spinning shm in
99 %, ``--tp 1`` over ipc in 3 %."""

from __future__ import annotations

import pytest

from ipc_bench.analysis.tp import tp_core_warning

BASE = dict(tp=4, tp_cores=2, tp_oversubscribed=True)


@pytest.mark.parametrize("transport,warning", [
    ("shm", "--tp 4 with spinning readers (shm) on 2 core(s): 5 processes share them; "
            "those timings are not comparable"),
    ("shm-block", "--tp 4 over shm-block on 2 core(s): the 4 ranks sleep between steps "
                  "but wake together for each step's broadcast, so 5 processes share the "
                  "cores while they run it; those timings are not comparable"),
    ("ipc", "--tp 4 over ipc on 2 core(s): the 4 ranks sleep between steps but wake "
            "together for each step's broadcast, so 5 processes share the cores while "
            "they run it; those timings are not comparable"),
])
def test_every_broadcast_with_fewer_cores_than_processes_warns(transport, warning):
    assert tp_core_warning(dict(BASE, transport=transport)) == warning


def test_no_warning_with_enough_cores_without_tp_or_without_this_machines_cores():
    """``tp_oversubscribed`` false (N + 1 cores or more), a case without ``--tp``, and
    ranks started by hand on other machines (no ``tp_cores``) give no warning."""
    assert tp_core_warning(dict(BASE, transport="ipc", tp_cores=5,
                                tp_oversubscribed=False)) is None
    assert tp_core_warning({"transport": "shm", "num_steps": 100}) is None
    assert tp_core_warning({"tp": 4, "transport": "tcp", "tp_oversubscribed": None}) is None
