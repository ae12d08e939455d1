"""The withheld-timings footnote (``analysis.cores``) names what N counts: the ranks of
``--tp`` cases, the stages of ``--pp`` cases, "ranks or stages" when a table withholds
both kinds."""

from __future__ import annotations

import os

import pytest

from analysis_run import run_bench
from ipc_bench.analysis import cores

REST = ("free cores, one each for them and the scheduler, a spare for the kernel and the "
        "harness's threads")


def case(kind: str, n: int, n_cores: int) -> dict:
    """A case summary's core fields of a ``--tp`` or ``--pp`` case."""
    return {kind: n, f"{kind}_cores": n_cores,
            f"{kind}_timings_withheld": cores.withheld(n, n_cores)}


def test_tp_cases_name_ranks():
    # N = 1 on 2 cores is shown (marked), so only N = 2 is left out
    assert cores.footnote([case("tp", 2, 2), case("tp", 1, 2)]) == (
        f"* timings left out: N ranks need N + 2 {REST} (N = 2 needs 4); "
        "the run's machine had 2. Bytes and the oracles hold.")
    # a summary written under the rule before N = 1 was shown on 2 cores keeps its flag
    old = {"tp": 1, "tp_cores": 2, "tp_timings_withheld": True}
    assert cores.footnote([case("tp", 2, 2), old]) == (
        f"* timings left out: N ranks need N + 2 {REST} (N = 1 needs 3, N = 2 needs 4); "
        "the run's machine had 2. Bytes and the oracles hold.")


def test_pp_cases_name_stages():
    assert cores.footnote([case("pp", 2, 2)]) == (
        f"* timings left out: N stages need N + 2 {REST} (N = 2 needs 4); the run's "
        "machine had 2. Bytes and the oracles hold.")


def test_both_kinds_in_one_table_name_ranks_or_stages():
    summaries = [case("tp", 2, 3), case("pp", 3, 2), case("tp", 4, 16)]  # the last: kept
    assert cores.footnote(summaries) == (
        f"* timings left out: N ranks or stages need N + 2 {REST} (N = 2 needs 4, N = 3 "
        "needs 5); the run's machine had 2/3. Bytes and the oracles hold.")


def test_the_kind_is_carried_and_the_pairs_are_unchanged():
    assert cores.kind_readers_and_cores(case("pp", 2, 2)) == ("pp", 2, 2)
    assert cores.kind_readers_and_cores(case("tp", 2, 3)) == ("tp", 2, 3)
    assert cores.kind_readers_and_cores(case("tp", 2, 4)) is None
    assert cores.readers_and_cores(case("pp", 2, 2)) == (2, 2)
    assert cores.footnote_of([]) is None
    # a kind not known (a microbench row written before rows named theirs)
    assert cores.footnote_of([(None, 2, 2)]) == (
        f"* timings left out: N ranks or stages need N + 2 {REST} (N = 2 needs 4); the "
        "run's machine had 2. Bytes and the oracles hold.")


TWO_CORES = sorted(os.sched_getaffinity(0))[:2]


@pytest.mark.skipif(len(TWO_CORES) < 2, reason="needs 2 CPUs to pin the run to")
def test_a_pp_runs_terminal_footnote_names_stages(tmp_path):
    """A real ``--pp 2`` run pinned to 2 CPUs (the cores rule reads the affinity): send
    alone, one case of two stages (the footnote is under its case table and its pipeline
    hops table; each stage imports torch, so a direct case would add two more)."""
    saved = os.sched_getaffinity(0)
    os.sched_setaffinity(0, TWO_CORES)
    try:
        out = run_bench(tmp_path / "pp", ["--scenario", "pp", "--pp", "2", "--steps", "50",
                                          "--warmup-steps", "5", "--num-running", "4",
                                          "--codecs", "msgpack", "--policies", "send"])
    finally:
        os.sched_setaffinity(0, saved)
    notes = [ln.strip() for ln in out.splitlines() if "timings left out" in ln]
    assert notes and set(notes) == {
        f"* timings left out: N stages need N + 2 {REST} (N = 2 needs 4); the run's "
        "machine had 2. Bytes and the oracles hold."}
