"""A ``--tp`` run's findings give send - cached in the bytes that reach the N ranks in
all (``tp_s2r_wire_bytes_all_ranks_per_step``), each transport as measured: XPUB's
grows with N (each rank gets its copy), the shared-memory ring's does not (one copy
serves every rank); they gave only the bytes the scheduler writes once, the same for
every N, whatever the cores (timings withheld or not)."""

from __future__ import annotations

import pandas as pd

from ipc_bench.analysis.results import Results
from ipc_bench.report import findings
from test_withheld_timings import tp_summary

LINE = ("At 8 running requests (msgpack), send - cached in bytes per step that reach the "
        "N ranks in all: over ipc 20 / 40 / 80 at N = 1 / 2 / 4 (ZeroMQ XPUB: the frame "
        "written once goes to each rank, N copies); over shm 20 at N = 1 and over "
        "shm-block 20 / 20 / 20 at N = 1 / 2 / 4 (the shared-memory ring: written once, "
        "read by every rank, one copy).")


def _ring(policy: str, n: int, transport: str, n_cores: int) -> dict:
    """``tp_summary`` over a ring: the bytes written once reach every rank once."""
    written = 402.0 if policy == "send" else 382.0
    return tp_summary(policy, n, n_cores, transport=transport,
                      workload=f"broadcast={transport},num_running=8,tp={n}",
                      case_id=f"{transport}/{n}/{policy}#0",
                      tp_s2r_wire_bytes_all_ranks_per_step=written)


def _summaries(n_cores: int) -> list[dict]:
    out = []
    for n in (1, 2, 4):
        out += [tp_summary(p, n, n_cores, case_id=f"ipc/{n}/{p}#0") for p in ("send", "cached")]
        out += [_ring(p, n, "shm-block", n_cores) for p in ("send", "cached")]
    return out + [_ring(p, 1, "shm", n_cores) for p in ("send", "cached")]


def _results(summaries: list[dict]) -> Results:
    cases = pd.DataFrame([dict(s, run_id="run", arm=s["policy"], model="null")
                          for s in summaries])
    empty = pd.DataFrame(columns=["run_id", "case_id"])
    return Results(cases=cases, steps=empty, requests=empty, floor=empty, itl=empty,
                   metadata={"run": {"cases": [{"labels": {"num_running": 8}}]}},
                   status={"run": "complete"}, problems={"run": []}, paths={"run": "run"})


def test_the_bytes_to_all_ranks_per_transport_and_n():
    assert findings._tp_delivery_findings(pd.DataFrame(_summaries(2))) == [LINE]


def test_the_report_findings_carry_them_with_timings_withheld_or_not():
    for n_cores in (2, 16):  # every case withheld; none
        lines = findings.findings(_results(_summaries(n_cores)))
        assert lines.count(LINE) == 1


def test_a_run_without_tp_cases_has_no_such_line():
    from test_metrics import SUMMARIES

    assert findings._tp_delivery_findings(pd.DataFrame(SUMMARIES)) == []
