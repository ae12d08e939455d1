"""``--order-seed``: the seed of the arms' random order per repetition, recorded in the
run's metadata; a rerun with another order seed runs the same cases in other orders,
so a report of the two lists the difference but marks no workload as not comparable,
as a run given another ``--seed`` (another workload) is marked."""

from __future__ import annotations

import json

import pytest

from analysis_run import run_bench
from ipc_bench import cli
from ipc_bench.harness.environment import compare_settings
from ipc_bench.report import blocks

GRID = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "10",
        "--warmup-steps", "2", "--codecs", "msgpack", "--no-floor", "--no-single-process",
        "--repeat", "3"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three runs of one grid: ``seed0`` (``--seed 0`` alone), ``order2`` (``--order-seed
    2``) and ``seed1`` (``--seed 1``)."""
    base = tmp_path_factory.mktemp("orderseed")
    run_bench(base / "seed0", GRID)
    run_bench(base / "order2", GRID + ["--order-seed", "2"])
    run_bench(base / "seed1", GRID + ["--seed", "1"])
    return base


def _md(run) -> dict:
    return json.loads((run / "summary.json").read_text())["metadata"]


def test_the_run_records_its_order_seed_and_runs_its_orders(runs):
    seed0, order2 = _md(runs / "seed0"), _md(runs / "order2")
    assert (seed0["seed"], seed0["order_seed"], seed0["options"]["order_seed"]) == (0, 0, None)
    assert (order2["seed"], order2["order_seed"], order2["options"]["order_seed"]) == (0, 2, 2)
    assert seed0["arm_order"] == (
        "counterbalanced per workload and codec with --repeat 2 or more: each repetition "
        "runs a row of a balanced Latin square (Williams design; two arms: A B or B A), so "
        "each arm runs first, and in each place, in as many repetitions as their number "
        "allows; the arms' places in the square, which rows a number of repetitions that "
        "is not a multiple of the rows' count leaves out, and the rows' sequence are "
        "drawn at random (seeded by --order-seed, default the --seed value); the codec "
        "blocks of each workload (the single-process block too) are ordered the same way "
        "over the repetitions, from a draw of their own, the first repetition's in the "
        "order given; as given with one repetition")
    # counterbalanced orders (scenario.balanced_orders; 3 repetitions: one arm first in
    # 2): cached first in repetitions 0 and 2 under order seed 0, in 0 alone under 2
    assert [c["arm"] for c in seed0["cases"]] == ["cached", "send", "send", "cached",
                                                  "cached", "send"]
    assert [c["arm"] for c in order2["cases"]] == ["cached", "send", "send", "cached",
                                                   "send", "cached"]


def test_runs_that_differ_in_order_seed_alone_stay_comparable(runs, tmp_path):
    seed0, order2, seed1 = (_md(runs / n) for n in ("seed0", "order2", "seed1"))
    assert compare_settings(order2, seed0) == (
        ["option --order-seed differs: 2 vs default (--seed 0)"], [])
    assert compare_settings(seed0, order2) == (
        ["option --order-seed differs: default (--seed 0) vs 2"], [])
    # another --seed is another workload: every shared one marked, and no order-seed
    # line beside it (neither run was given --order-seed)
    assert compare_settings(seed1, seed0) == (
        ["seed differs: 1 vs 0",
         "case setting model.seed differs: 1 vs 0 (workload num_running=4)"],
        ["num_running=4"])
    assert cli.main(["report", str(runs / "seed0"), str(runs / "order2"), "--output",
                     str(tmp_path / "rep"), "--no-figures"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "- order2 against seed0: option --order-seed differs: 2 vs default (--seed 0)" in (
        md.splitlines())
    # no row marked unlike (a floor noise note may call a floor not comparable with its
    # twin's on a busy machine: the machine's noise, not the option)
    assert blocks.UNLIKE_CELL not in md and "≠" not in md
    # no "compare with care": the same cases in other orders, their rows comparable
    assert blocks.ORDER_SEED_ONLY in md.splitlines() and "compare with care" not in md
    assert cli.main(["report", str(runs / "seed0"), str(runs / "seed1"), "--output",
                     str(tmp_path / "seeds"), "--no-figures"]) == 0
    assert "- (not comparable)" in (tmp_path / "seeds" / "report.md").read_text()


def test_an_order_seed_is_compared_with_an_older_run_by_its_seed():
    case = dict(case_id="c", labels={"num_running": 4}, policy="send", codec="msgpack",
                repetition=0)
    older = dict(seed=0, options={}, cases=[case])  # before --order-seed: seeded by --seed
    given = dict(seed=0, order_seed=0, options={"order_seed": 0}, cases=[case])
    other = dict(seed=0, order_seed=5, options={"order_seed": 5}, cases=[case])
    assert compare_settings(given, older) == ([], [])
    assert compare_settings(other, older) == (
        ["option --order-seed differs: 5 vs default (--seed 0)"], [])
    # --seed 1 --order-seed 0 draws --seed 0's orders: the seed alone differs
    mixed = dict(seed=1, order_seed=0, options={"order_seed": 0}, cases=[case])
    assert compare_settings(mixed, older) == (["seed differs: 1 vs 0"], ["num_running=4"])
    assert compare_settings(mixed, dict(older, seed=1)) == (
        ["option --order-seed differs: 0 vs default (--seed 1)"], [])
