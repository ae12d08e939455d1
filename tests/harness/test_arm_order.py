"""The order in which ``scenario.grid`` runs the arms of each repetition."""

from __future__ import annotations

from ipc_bench.harness.scenario import ScenarioOptions, steady_cases


def _order(seed: int, repeat: int = 200, aa: bool = False, **kw) -> list[tuple]:
    opts = ScenarioOptions(seed=seed, repeat=repeat, aa=aa, codecs=["msgpack"],
                           policies=["send"] if aa else ["send", "cached"], **kw)
    return [(c.repetition, c.labels["num_running"], c.arm_label)
            for c in steady_cases(opts, "decode-steady", [4, 16])]


def test_each_repetition_runs_its_arms_back_to_back_in_a_seeded_random_order():
    cases = _order(seed=0)
    assert len(cases) == 200 * 2 * 2
    pairs = list(zip(cases[::2], cases[1::2]))
    for (rep_a, b_a, arm_a), (rep_b, b_b, arm_b) in pairs:
        assert (rep_a, b_a) == (rep_b, b_b) and {arm_a, arm_b} == {"send", "cached"}
    firsts = [a[2] for a, _ in pairs]
    # both orders occur, about half each (binomial, 400 draws: 3 sd is 30)
    assert 170 <= firsts.count("send") <= 230
    # the same arm opens consecutive pairs about half the time: no A B, B A pattern
    same = sum(x == y for x, y in zip(firsts, firsts[1:]))
    assert 170 <= same <= 230
    assert _order(seed=0) == cases  # same seed, same order
    assert _order(seed=1) != cases


def test_aa_order_is_random_too():
    cases = _order(seed=3, repeat=50, aa=True)
    firsts = [a[2] for a in cases[::2]]
    assert set(firsts) == {"send", "send'"}
    assert all({a[2], b[2]} == {"send", "send'"} for a, b in zip(cases[::2], cases[1::2]))


def test_one_repetition_keeps_the_order_given():
    assert [c[2] for c in _order(seed=5, repeat=1)] == ["send", "cached"] * 2
    assert [c[2] for c in _order(seed=5, repeat=1, aa=True)] == ["send", "send'"] * 2
