"""The run-by-run effect table's one note on its ratio columns' ``-`` said that the
baseline run has no cached/send ratio, also under a row whose ``-`` comes from another
run that has none (the baseline's own cell a ratio). The note on the baseline says
which rows it is about, and each other run without a cell where the baseline has one
gets a note of its own, naming it."""

from __future__ import annotations

from ipc_bench.report.blocks import _effect_blocks
from runs_section import effect_runs

#: Per (workload, codec), per run: (send, cached) tokens/s over repetitions; run ``b``
#: lacks 64 running, run ``a`` 4 running.
TOKENS = {
    ("num_running=4", "msgpack"): {"b": ([100.0, 100.0], [101.0, 103.0])},
    ("num_running=16", "msgpack"): {"a": ([200.0, 200.0], [202.0, 200.0]),
                                    "b": ([210.0, 210.0], [212.0, 214.0])},
    ("num_running=64", "msgpack"): {"a": ([300.0, 300.0], [300.0, 303.0])},
    ("num_running=256", "msgpack"): {"a": ([400.0, 400.0], [404.0, 400.0])},
}


def _runs(ids=("a", "b")):
    """``TOKENS`` as loaded runs (``runs_section.effect_runs``)."""
    return effect_runs(TOKENS, ids)


NONE = ("no such cached/send ratio (it did not compare cached with send in that workload "
        "and codec, or its own table gives that pair no ratio)")


def test_each_run_without_a_cell_is_named_under_the_table():
    blocks = _effect_blocks(_runs())
    assert [row[0] for row in blocks[1][2]] == [
        "num_running=4", "num_running=16", "num_running=64", "num_running=256"]
    assert [row[-1] for row in blocks[1][2]][::2] == ["-", "-"]
    notes = [b[1] for b in blocks[2:] if b[1].startswith("`-`")]
    assert notes == [
        f"`-` in the ratio columns of a row where run `a`'s cell is `-`: that run has "
        f"{NONE}, so there is no effect to divide by; the other runs' cells are their own "
        "effects.",
        f"`-` in column `b ÷ a` on 2 rows where run `b`'s cell is `-`: that run has {NONE}, "
        "so it has no effect to divide by run `a`'s."]


def test_a_baseline_that_lacks_no_row_gets_the_other_run_s_note_alone():
    blocks = _effect_blocks(_runs(("b", "a")))
    assert [b[1] for b in blocks[2:] if b[1].startswith("`-`")] == [
        f"`-` in the ratio columns of a row where run `b`'s cell is `-`: that run has "
        f"{NONE}, so there is no effect to divide by; the other runs' cells are their own "
        "effects.",
        f"`-` in column `a ÷ b` on 1 row where run `a`'s cell is `-`: that run has {NONE}, "
        "so it has no effect to divide by run `b`'s."]
