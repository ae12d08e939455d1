"""The note on a whole step's share far over its SchedulerOutput path's, with no
interval, says why there is none: one repetition (run --repeat 5), or fewer pairs than
the run's --ci-method needs, where it advised `--repeat 5` to a 5-repetition bootstrap
run (whose cells say `a percentile-bootstrap interval needs >= 34 pairs`)."""

from __future__ import annotations

from ipc_bench.analysis.send_cost import step_shares
from ipc_bench.report import findings

HEAD = ("azure (msgpack): the whole step's share (+59.19 %) is over 10 times its "
        "SchedulerOutput path's (+3.11 %): the two arms run the same batches, so the rest "
        "is not send's work but a difference between the two cases that ")


def _far(n: int, method: str):
    shared = step_shares([9_280.0] * n, [176_600.0] * n, [298_350.0] * n, method, "median")
    assert (round(shared.s2r.share, 4), round(shared.whole.share, 4)) == (0.0311, 0.5919)
    assert shared.whole.low is None and shared.whole.pairs == n
    return shared


def test_one_repetition_is_told_to_repeat():
    assert findings._whole_path_note(("azure", "msgpack"), _far(1, "t")) == HEAD + (
        "one repetition cannot tell from the machine's noise (no interval): quote the "
        "path's share, or run --repeat 5.")


def test_repetitions_too_few_for_the_method_are_told_what_it_needs():
    assert findings._whole_path_note(("azure", "msgpack"), _far(5, "bootstrap")) == HEAD + (
        "5 repetitions cannot tell from the machine's noise without an interval (a "
        "percentile-bootstrap interval needs >= 34 pairs): quote the path's share, or run "
        "--repeat 34 (or --ci-method t).")
    assert findings._whole_path_note(("azure", "msgpack"), _far(3, "sign")) == HEAD + (
        "3 repetitions cannot tell from the machine's noise without an interval (a "
        "sign-test interval needs >= 6 pairs): quote the path's share, or run --repeat 6 "
        "(or --ci-method t).")
