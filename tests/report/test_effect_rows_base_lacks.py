"""The multi-run report's cached/send effect table keeps a row for every run's effect,
those the baseline run lacks (another codec, another number running) included: their
ratio columns read ``-``, with a note saying why, as a side-by-side table's rows
without a baseline case."""

from __future__ import annotations

from ipc_bench.report.blocks import _effect_blocks, effect_no_base_note
from runs_section import effect_runs

#: Per (workload, codec), per run: (send, cached) tokens/s over repetitions.
TOKENS = {
    ("num_running=1", "msgpack"): {"emu": ([100.0, 100.0, 100.0], [101.0, 102.0, 100.5])},
    ("num_running=64", "msgpack"): {"base": ([1000.0, 1000.0, 1000.0], [1010.0, 990.0, 1000.0]),
                                    "emu": ([500.0, 500.0, 500.0], [505.0, 500.0, 495.0])},
    ("num_running=64", "pickle"): {"pkl": ([400.0, 400.0, 400.0], [404.0, 408.0, 412.0])},
}


def _runs(ids=("base", "emu", "pkl")):
    """``TOKENS`` as loaded runs (``runs_section.effect_runs``)."""
    return effect_runs(TOKENS, ids)


def test_every_runs_effect_has_a_row_and_the_ones_the_baseline_lacks_say_why():
    # cells: Student-t over each run's log ratios (scipy: emu at 1 running 1.0116
    # [0.9929, 1.0308]); emu ÷ base: Welch's interval [0.9776, 1.0229]
    blocks = _effect_blocks(_runs())
    assert blocks[1] == ("table", ["workload", "codec", "base", "emu", "pkl",
                                   "emu ÷ base", "pkl ÷ base"], [
        ["num_running=1", "msgpack", "-", "1.012 [0.993, 1.031]", "-", "-", "-"],
        ["num_running=64", "msgpack", "0.99997 [0.975, 1.025]", "0.99997 [0.975, 1.025]",
         "-", "1.000 [0.978, 1.023] within noise", "-"],
        ["num_running=64", "pickle", "-", "-", "1.020 [0.995, 1.045]", "-", "-"]])
    assert ("p", effect_no_base_note("base")) in blocks[2:]
    assert effect_no_base_note("base") == (
        "`-` in the ratio columns of a row where run `base`'s cell is `-`: that run has no "
        "such cached/send ratio (it did not compare cached with send in that workload and "
        "codec, or its own table "
        "gives that pair no ratio), so there is no effect to divide by; the other runs' "
        "cells are their own effects.")


def test_a_baseline_with_every_row_needs_no_such_note():
    blocks = _effect_blocks(_runs(("emu", "base")))
    assert [row[:2] for row in blocks[1][2]] == [["num_running=1", "msgpack"],
                                                 ["num_running=64", "msgpack"]]
    assert ("p", effect_no_base_note("emu")) not in blocks
