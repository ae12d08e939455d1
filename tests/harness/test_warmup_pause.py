"""Where the end-of-warm-up pause falls (``scheduler_loop.warmup_pause_seq``): one step
before warm-up ends, so that the first step after it, which runs on caches the pause
cooled (a median 2.0x the median step when it was the first counted one), is a warm-up
step; the loop totals start after it, just before step ``--warmup-steps`` (with steps
in flight, once the last warm-up step's output is applied), and count the tokens of the
counted steps' rows alone. With one warm-up step the pause stays before step 1, with
none before step 0."""

from __future__ import annotations

import pytest

from fault_helpers import steady_case
from ipc_bench.harness.scheduler_loop import _LoopRun, warmup_pause_seq
from ipc_bench.harness.spec import SCHED_COLUMNS
from ipc_bench.harness.supervisor import run_case

STEPS = 12


def test_the_pause_comes_one_step_before_warm_up_ends():
    assert [warmup_pause_seq(w) for w in range(6)] == [0, 1, 1, 2, 3, 4]


def _watch(monkeypatch) -> dict[str, list[int]]:
    """The scheduler's steps scheduled when the pause began and when the loop totals
    started, and the output tokens then (``Scheduler.step``: one per step here)."""
    seen: dict[str, list[int]] = {"pause": [], "totals": [], "totals_tokens": []}
    end_warmup, start_totals = _LoopRun.end_warmup, _LoopRun.start_totals

    def pause(self, *args, **kw):
        seen["pause"].append(self.sched.step)
        return end_warmup(self, *args, **kw)

    def totals(self):
        seen["totals"].append(self.sched.step)
        seen["totals_tokens"].append(self.sched.num_output_tokens)
        return start_totals(self)

    monkeypatch.setattr(_LoopRun, "end_warmup", pause)
    monkeypatch.setattr(_LoopRun, "start_totals", totals)
    return seen


#: The steps in flight of each loop (``async_loop``: two, or one per pp stage).
DEPTH = {"sync": 1, "bare": 1, "async": 2, "pp": 2, "pp4": 4}


#: Every loop at 0, 1, 2 and 5 warm-up steps (the pause before step 0, before step 1,
#: one step before warm-up ends; the in-flight loops with fewer, as many and more
#: warm-up steps than steps in flight), but two pp stages at 2 alone: its loop and
#: depth are async's (async_loop, two in flight) and its stages' pause is pp4's, each
#: run at every count; each stage costs a torch import (about 1.4 s of CPU).
CASES = [(loop, warmup) for loop in ("sync", "async", "pp4", "bare") for warmup in (0, 1, 2, 5)
         ] + [("pp", 2)]


@pytest.mark.parametrize("loop,warmup", CASES)
def test_the_pause_and_the_loop_totals_start(monkeypatch, loop, warmup):
    seen = _watch(monkeypatch)
    pp = {"pp": 2, "pp4": 4}.get(loop)
    spec = steady_case(max_steps=warmup + STEPS, policy="cached" if loop == "async" else "send",
                       async_scheduling=loop == "async", pp=pp,
                       instrumentation="totals" if loop == "bare" else "steps")
    spec.warmup_steps = warmup
    result = run_case(spec)
    assert result.error is None
    pause = warmup - 1 if warmup >= 2 else warmup
    assert seen["pause"] == [pause]  # before step `pause` was scheduled
    # sync: before step `warmup`, after the pause; with steps in flight: once step
    # `warmup` - 1's output is applied, the steps after it up to the depth sent
    depth = DEPTH[loop]
    assert seen["totals"] == [warmup + depth - 1 if warmup else 0]
    assert result.warmup_pause_ns > 0
    assert len(result.runner_warmup_collect_ns) == (pp or 1)
    totals = result.loop_totals
    assert totals["loop_steps"] == STEPS
    assert totals["loop_output_tokens"] > 0
    if loop != "bare":
        col = {name: i for i, name in enumerate(SCHED_COLUMNS)}
        rows = result.sched_rows
        assert [r[col["warmup"]] for r in rows] == [1] * warmup + [0] * STEPS
        assert [r[col["seq"]] for r in rows] == list(range(warmup + STEPS))
        # The loop totals' tokens: those of the counted steps' rows, exactly (the last
        # warm-up step's, in flight when step `warmup` is sent, were counted too)
        tokens = [r[col["num_output_tokens"]] for r in rows]
        assert seen["totals_tokens"] == [sum(tokens[:warmup])]
        assert totals["loop_output_tokens"] == sum(tokens[warmup:])
        if depth > 1 and warmup:  # the window: the counted rows' step_ns (and flushes)
            step_ns = sum(r[col["step_ns"]] for r in rows[warmup:])
            assert step_ns <= totals["loop_ns"]
