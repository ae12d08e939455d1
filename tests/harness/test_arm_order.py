"""The order in which ``scenario.grid`` runs the arms of each repetition."""

from __future__ import annotations

from dataclasses import replace

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
    # both orders occur, counterbalanced: each arm first in 100 of each workload's 200
    assert [firsts[i::2].count("send") for i in (0, 1)] == [100, 100]
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


def _async_cases(aa: bool = False, counterpart: bool = False) -> list[tuple]:
    opts = ScenarioOptions(seed=0, repeat=1, aa=aa, codecs=["msgpack"], policies=["cached"],
                           async_scheduling=True, sync_counterpart=counterpart)
    return [(c.case_id, c.arm_label, c.async_scheduling)
            for c in steady_cases(opts, "decode-steady", [4])]


def test_every_async_case_is_labelled_as_the_async_arm():
    """Async cases are ``cached+async`` (an A/A copy ``cached+async'``) whether or not
    their synchronous twin runs beside them, never a synchronous ``cached``."""
    assert _async_cases() == [("num_running=4/cached+async/msgpack#0", "cached+async", True)]
    assert _async_cases(aa=True) == [
        ("num_running=4/cached+async/msgpack#0", "cached+async", True),
        ("num_running=4/cached+async'/msgpack#0", "cached+async'", True)]
    assert _async_cases(counterpart=True) == [
        ("num_running=4/cached/msgpack#0", "cached", False),
        ("num_running=4/cached+async/msgpack#0", "cached+async", True)]


def test_an_async_case_without_an_arm_is_labelled_as_the_async_arm():
    """A case built outside ``grid`` (the soak scenario's) with async scheduling and no
    arm is labelled ``cached+async`` too."""
    opts = ScenarioOptions(seed=0, repeat=1, codecs=["msgpack"], policies=["cached"],
                           async_scheduling=True)
    case = replace(steady_cases(opts, "decode-steady", [4])[0], arm="")
    assert (case.arm_label, case.case_id) == ("cached+async",
                                              "num_running=4/cached+async/msgpack#0")
    assert replace(case, async_scheduling=False).arm_label == "cached"


def _firsts(**kw) -> list[str]:
    """The arm that opens each of 5 repetitions of one workload, send against cached."""
    opts = ScenarioOptions(repeat=5, codecs=["msgpack"], policies=["send", "cached"], **kw)
    return [c.arm_label for c in steady_cases(opts, "decode-steady", [4])][::2]


def test_the_order_seed_draws_the_orders_and_defaults_to_the_seed():
    # --seed 0 alone: the orders every such run draws (counterbalanced: each arm first
    # in 2 or 3 of the 5)
    assert _firsts(seed=0) == ["cached", "cached", "cached", "send", "send"]
    assert _firsts(seed=0, order_seed=0) == _firsts(seed=0)
    assert _firsts(seed=0, order_seed=2) == ["send", "send", "cached", "cached", "send"]
    assert _firsts(seed=0, order_seed=1) == ["send", "send", "cached", "send", "cached"] \
        == _firsts(seed=1)
    # the order seed follows no other seed: --seed 1 --order-seed 0 orders as --seed 0
    assert _firsts(seed=1, order_seed=0) == _firsts(seed=0)


def test_another_order_seed_reorders_the_same_cases():
    def cases(**kw):
        opts = ScenarioOptions(seed=0, repeat=5, codecs=["msgpack"], **kw)
        return steady_cases(opts, "decode-steady", [4, 16])

    def key(c):
        return (c.case_id, c.max_steps, c.model, c.scheduler, c.warmup_steps,
                c.counted_steps, c.floor)

    first, other = cases(), cases(order_seed=2)
    assert [c.case_id for c in first] != [c.case_id for c in other]
    assert sorted(map(key, first), key=str) == sorted(map(key, other), key=str)
