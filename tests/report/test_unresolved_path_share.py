"""A SchedulerOutput path share whose interval holds 0 and stays within 1.1x either
way but reaches beyond 1 % of the step is not called "within noise" (which reads as "no
cost"): it is "not resolved", with its interval in µs per step. The figures of an
emulated 8B run at 256 running (pickle): +157.16 µs per step, +1.34 % of an 11.69 ms
step, [-0.42, +3.10] %, which is [-49, +363] µs."""
from ipc_bench.analysis.send_cost import path_difference, unresolved


def test_a_path_share_reaching_past_1_pct_is_not_resolved_and_gives_its_us():
    assert path_difference(157_160.0, 0.0134, (-0.0042, 0.0310), "cached's step", "t", 3,
                           11_694_800.0) == (
        "is not resolved from cached's: +157.16 µs per step, +1.34 % of cached's step "
        "(send - cached: [-0.42, +3.10] %, 95 % Student-t interval), [-49, +363] µs per "
        "step: the interval holds 0 but reaches beyond 1 % of the step, so it does not "
        "show the cost is small")
    assert unresolved((-0.0042, 0.0310))
    # within 1 % either way: within noise, as before
    assert path_difference(1_960.0, 0.0003, (-0.004, 0.009), "cached's step", "t", 3,
                           765_300.0) == (
        "is within noise of cached's: +1.96 µs per step, +0.03 % of cached's step (send - "
        "cached: [-0.40, +0.90] %, 95 % Student-t interval)")
    assert not unresolved((-0.004, 0.009))
    # beyond 1.1x either way: inconclusive, as before
    assert not unresolved((-0.12, 0.03))
    assert path_difference(1_000.0, 0.01, (-0.12, 0.03), "cached's step").startswith(
        "differs from cached's by +1.00 µs per step")
