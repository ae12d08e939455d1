"""A report of a ``--ci-method t`` run and a 5-repetition ``--ci-method bootstrap`` run
showed the bootstrap run's cell of the run-by-run effect table as a bare ``0.910``,
with nothing there to say why it has no interval (a percentile-bootstrap interval needs
34 pairs). Its cell says so, in the findings' words, where the interval would be; a
run of one repetition keeps the bare ratio (the table's note on one repetition), and a
run with pairs enough keeps its interval."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from ipc_bench.report.blocks import _effect_blocks, effect_cell

SEND = [1000.0] * 6
CACHED = [1100.0, 1120.0, 1080.0, 1050.0, 1150.0, 1110.0]


def _runs(tokens: dict, methods: dict) -> SimpleNamespace:
    """Runs ``tokens`` (run -> (send, cached) tokens/s over repetitions) at 4 running,
    msgpack, compared with ``methods`` (run -> --ci-method)."""
    rows = [dict(run_id=r, workload="num_running=4", policy=arm, codec="msgpack",
                 repetition=i, complete=True, output_tokens_per_s=v)
            for r, arms in tokens.items()
            for arm, vals in zip(("send", "cached"), arms) for i, v in enumerate(vals)]
    return SimpleNamespace(run_ids=list(tokens), cases=pd.DataFrame(rows),
                           metadata={r: {"ci_method": m} for r, m in methods.items()})


def test_a_bootstrap_run_of_five_pairs_says_why_its_cell_has_no_interval():
    results = _runs({"a": (SEND[:5], CACHED[:5]), "b": (SEND[:5], CACHED[:5])},
                    {"a": "t", "b": "bootstrap"})
    (_, header, rows) = _effect_blocks(results)[1]
    assert header == ["workload", "codec", "a", "b", "b ÷ a"]
    assert rows == [["num_running=4", "msgpack", "1.099 [1.053, 1.148]",
                     "1.100 (no interval: a percentile-bootstrap interval needs >= 34 pairs)",
                     "1.000 [0.951, 1.052] within noise"]]


def test_a_sign_run_says_so_below_six_pairs_and_shows_its_interval_from_six():
    five = _runs({"a": (SEND[:5], CACHED[:5]), "b": (SEND[:5], CACHED[:5])},
                 {"a": "t", "b": "sign"})
    assert _effect_blocks(five)[1][2][0][3] == (
        "1.100 (no interval: a sign-test interval needs >= 6 pairs)")
    six = _runs({"a": (SEND, CACHED), "b": (SEND, CACHED)}, {"a": "t", "b": "sign"})
    assert _effect_blocks(six)[1][2][0][3] == "1.105 [1.050, 1.150]"


def test_one_repetition_and_an_interval_keep_their_cells():
    one = dict(n=1, ratio=1.15, ratio_low=float("nan"), ratio_high=float("nan"),
               method="bootstrap")
    assert effect_cell(one) == "1.150"
    assert effect_cell(dict(one, n=3, method="t", ratio_low=1.05, ratio_high=1.2)) == (
        "1.150 [1.050, 1.200]")
    assert effect_cell(dict(one, n=3)) == (
        "1.150 (no interval: a percentile-bootstrap interval needs >= 34 pairs)")
