"""The arms' orders ``scenario.grid`` runs are counterbalanced over the repetitions of
each workload and codec: each arm runs first, and in each place, in ``repeat // k`` or
``repeat // k + 1`` of them (``balanced_orders``: rows of a Williams square), not as
independent draws per repetition gave them (cached first in 5 of 5, or 14 of 18)."""

from __future__ import annotations

import random
from collections import Counter
from itertools import combinations

import pytest

from ipc_bench.harness.scenario import (ScenarioOptions, arm_order_rng, balanced_orders,
                                        steady_cases, williams_rows)

#: The arm sets ``grid`` orders: two policies; one policy and its A/A copy; two policies
#: and their copies (4 arms); cached against cached+async; async with its A/A copy.
ARM_SETS = {
    "policies": dict(policies=["send", "cached"]),
    "aa": dict(policies=["send"], aa=True),
    "aa4": dict(policies=["send", "cached"], aa=True),
    "counterpart": dict(policies=["cached"], async_scheduling=True, sync_counterpart=True),
    "async-aa": dict(policies=["cached"], async_scheduling=True, aa=True),
}


def _blocks(repeat: int, seed: int = 0, order_seed=None, **kw) -> dict[tuple, list[list]]:
    """(num_running, codec) -> the arms' order of each repetition, in repetition order,
    of a two-workload, two-codec grid with its single-process block (codec none)."""
    opts = ScenarioOptions(seed=seed, order_seed=order_seed, repeat=repeat,
                           codecs=["msgpack", "pickle"], **kw)
    out: dict[tuple, dict[int, list]] = {}
    for c in steady_cases(opts, "decode-steady", [4, 16], single_process=True):
        out.setdefault((c.labels["num_running"], c.codec), {}).setdefault(
            c.repetition, []).append(c.arm_label)
    return {k: [v[r] for r in sorted(v)] for k, v in out.items()}


@pytest.mark.parametrize("arms", list(ARM_SETS))
@pytest.mark.parametrize("repeat", [2, 3, 4, 5, 6])
def test_each_arm_leads_and_takes_each_place_as_evenly_as_the_count_allows(arms, repeat):
    for seed in range(12):
        blocks = _blocks(repeat, seed=seed, **ARM_SETS[arms])
        assert sorted(blocks) == [(4, "msgpack"), (4, "none"), (4, "pickle"),
                                  (16, "msgpack"), (16, "none"), (16, "pickle")]
        for orders in blocks.values():
            k = len(orders[0])
            assert k == (4 if arms == "aa4" else 2)
            for place in range(k):
                counts = Counter(order[place] for order in orders)
                assert set(counts) == set(orders[0]) or repeat < k
                assert all(counts[a] in (repeat // k, -(-repeat // k)) for a in orders[0])
            # and each arm before each other one in repeat // 2 or one more
            for a, b in combinations(orders[0], 2):
                first = sum(o.index(a) < o.index(b) for o in orders)
                assert first in (repeat // 2, -(-repeat // 2))


def test_the_orders_users_got_lopsided_are_balanced():
    # --num-running 1,256 --repeat 3 (2 workloads x 3 codecs x 3 repetitions):
    # independent draws ran cached first in 14 of 18 blocks; now 8, each workload and
    # codec's 3 split 2 and 1
    opts = ScenarioOptions(seed=0, repeat=3)
    cases = steady_cases(opts, "decode-steady", [1, 256], single_process=True)
    firsts = [c.arm_label for i, c in enumerate(cases)
              if i == 0 or (cases[i - 1].repetition, cases[i - 1].labels, cases[i - 1].codec)
              != (c.repetition, c.labels, c.codec)]
    assert len(firsts) == 18 and firsts.count("cached") == 8
    for orders in _blocks(3).values():
        assert sorted(Counter(o[0] for o in orders).values()) == [1, 2]
    # five repetitions (cached first in 5 of 5 in msgpack and pickle before): 3 and 2
    for orders in _blocks(5).values():
        assert sorted(Counter(o[0] for o in orders).values()) == [2, 3]


def test_the_orders_of_order_seed_0():
    s, c = "send", "cached"
    assert _blocks(4, policies=[s, c]) == {
        (4, "msgpack"): [[c, s], [s, c], [s, c], [c, s]],
        (4, "pickle"): [[s, c], [s, c], [c, s], [c, s]],
        (4, "none"): [[c, s], [s, c], [c, s], [s, c]],
        (16, "msgpack"): [[s, c], [c, s], [s, c], [c, s]],
        (16, "pickle"): [[s, c], [s, c], [c, s], [c, s]],
        (16, "none"): [[c, s], [s, c], [c, s], [s, c]],
    }
    # 4 arms: the rows of a Williams square, each once
    assert _blocks(4, policies=[s, c], aa=True)[(4, "msgpack")] == [
        [s, "cached'", c, "send'"],
        [c, s, "send'", "cached'"],
        ["cached'", "send'", s, c],
        ["send'", c, "cached'", s]]


def _codec_orders(repeat: int, seed: int = 0, **kw) -> dict[int, list[list[str]]]:
    """num_running -> the codec blocks' order of each repetition, in repetition order,
    of ``_blocks``' grid (two policies)."""
    opts = ScenarioOptions(seed=seed, repeat=repeat, codecs=["msgpack", "pickle"],
                           policies=["send", "cached"], **kw)
    out: dict[int, dict[int, list[str]]] = {}
    for c in steady_cases(opts, "decode-steady", [4, 16], single_process=True):
        order = out.setdefault(c.labels["num_running"], {}).setdefault(c.repetition, [])
        if not order or order[-1] != c.codec:
            order.append(c.codec)
    return {k: [v[r] for r in sorted(v)] for k, v in out.items()}


@pytest.mark.parametrize("repeat", [2, 3, 5, 6])
def test_each_codec_block_leads_and_takes_each_place_as_evenly_as_the_count_allows(repeat):
    # the single-process block (codec none) no longer always runs last: its ratio and
    # msgpack against pickle are not always measured one way round a drift
    for seed in range(12):
        for orders in _codec_orders(repeat, seed=seed).values():
            assert all(sorted(o) == ["msgpack", "none", "pickle"] for o in orders)
            assert orders[0] == ["msgpack", "pickle", "none"]
            for place in range(3):
                counts = Counter(order[place] for order in orders)
                assert all(counts[b] in (repeat // 3, -(-repeat // 3))
                           for b in ("msgpack", "none", "pickle"))


def test_the_codec_blocks_of_order_seed_0():
    m, p, n = "msgpack", "pickle", "none"
    # three repetitions of three blocks: each block first, second and last once, the
    # first repetition's in the order given (the tables list blocks as first seen)
    assert _codec_orders(3) == {4: [[m, p, n], [p, n, m], [n, m, p]],
                                16: [[m, p, n], [n, m, p], [p, n, m]]}
    # one repetition: as given, the single-process block last
    assert _codec_orders(1) == {4: [[m, p, n]], 16: [[m, p, n]]}


def test_the_same_seed_gives_the_same_orders_and_another_seed_others():
    for arms in ARM_SETS.values():
        for repeat in (2, 3, 5):
            same = _blocks(repeat, seed=3, **arms)
            assert _blocks(repeat, seed=3, **arms) == same
            # --order-seed 3 orders as --seed 3 does, whatever the workload's seed
            assert _blocks(repeat, seed=0, order_seed=3, **arms) == same
            other = _blocks(repeat, seed=3, order_seed=4, **arms)
            assert other.keys() == same.keys()
            assert any(other[k] != same[k] for k in same)


def test_one_repetition_keeps_the_order_given():
    assert _blocks(1, policies=["send", "cached"], aa=True)[(16, "pickle")] == [
        ["send", "send'", "cached", "cached'"]]
    assert _blocks(1, policies=["cached"], async_scheduling=True,
                   sync_counterpart=True)[(4, "msgpack")] == [["cached", "cached+async"]]


def test_williams_rows():
    assert williams_rows(1) == [(0,)]
    assert williams_rows(2) == [(0, 1), (1, 0)]
    assert williams_rows(4) == [(0, 1, 3, 2), (1, 2, 0, 3), (2, 3, 1, 0), (3, 0, 2, 1)]
    assert williams_rows(3) == [(0, 1, 2), (1, 2, 0), (2, 0, 1),
                                (2, 1, 0), (0, 2, 1), (1, 0, 2)]
    for k in range(2, 9):
        rows = williams_rows(k)
        assert len(rows) == (k if k % 2 == 0 else 2 * k)
        per = len(rows) // k
        for place in range(k):  # each arm in each place equally often
            assert Counter(r[place] for r in rows) == {a: per for a in range(k)}
        # each arm directly followed by each other one equally often (carry-over)
        follows = Counter((r[i], r[i + 1]) for r in rows for i in range(k - 1))
        assert set(follows.values()) == {per} and len(follows) == k * (k - 1)
        assert all(r[::-1] in rows for r in rows)
    with pytest.raises(ValueError, match="^a Latin square needs at least one arm, not 0$"):
        williams_rows(0)


@pytest.mark.parametrize("k", [2, 3, 4, 5, 6])
def test_balanced_orders_of_any_number_of_arms(k):
    arms = [f"arm{i}" for i in range(k)]
    for repeat in range(2, 3 * k + 2):
        for seed in range(5):
            orders = balanced_orders(arms, repeat, arm_order_rng(seed))
            assert len(orders) == repeat and all(sorted(o) == arms for o in orders)
            for place in range(k):
                counts = Counter(o[place] for o in orders)
                assert all(counts[a] in (repeat // k, -(-repeat // k)) for a in arms)
            if k % 2 == 0:
                for a, b in combinations(arms, 2):
                    first = sum(o.index(a) < o.index(b) for o in orders)
                    assert first in (repeat // 2, -(-repeat // 2))
            assert orders == balanced_orders(arms, repeat, arm_order_rng(seed))


def test_one_arm_or_one_repetition_draws_nothing():
    rng = random.Random(1)
    state = rng.getstate()
    assert balanced_orders(["send"], 3, rng) == [["send"]] * 3
    assert balanced_orders(["send", "cached"], 1, rng) == [["send", "cached"]]
    assert rng.getstate() == state
