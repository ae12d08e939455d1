"""The step breakdown's transport band is send + wait - runner busy, and its legend says
so; a bar whose mean transport is negative is marked the same way whether its case ran
async scheduling (the runner's work hidden by the overlap of steps) or not (the scheduler
waits for each reply, so no overlap: noise of the means), and the caption and legend say
which."""

from __future__ import annotations

import pytest

from ipc_bench.report import blocks, plots
from test_step_breakdown_overlap import ASYNC_STEP, async_run, with_steps

#: cached+async (ASYNC_STEP, tests/report/test_step_breakdown_overlap.py): runner busy
#: 288 µs, send + wait 120 µs, transport -168 µs; cached, synchronous: send + wait 283 µs
#: against runner busy 288 µs, transport -5 µs.
SYNC_STEP = dict(ASYNC_STEP, wait_ns=263_000)

FIXED = ("Where a scheduler step's time goes, mean µs per counted step (repetitions "
         "pooled): each stack sums to the mean step time, unless marked in red (below); "
         "transport is the send call plus the wait for the reply minus the runner's busy "
         "time. The hatched bar beside each stack is the runner's idle time (waiting for "
         "work), which overlaps the scheduler's parts. Where the runner's mean busy time "
         "exceeds the scheduler's mean send + wait, the mean transport is negative; its "
         "band is drawn at 0, so that bar's stack sums to the mean step plus the "
         "difference: the red line marks the mean step and the red-hatched part above it "
         "is the difference, means over counted steps.")
ASYNC_WORDS = (" With async scheduling the steps overlap (the runner computes step n while "
               "the scheduler schedules step n + 1): the difference is the runner's work "
               "hidden by the overlap (cached+async / msgpack: send + wait 120.0 µs, runner "
               "busy 288.0 µs, 168.0 µs hidden).")
SYNC_WORDS = (" A synchronous step does not overlap (the scheduler waits for the runner's "
              "reply), so the difference there is noise of the means, not overlap (cached / "
              "msgpack: send + wait 283.0 µs, runner busy 288.0 µs, 5.0 µs above the mean "
              "step).")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("excess") / "async"
    async_run(out)
    return out


def _drawn(res):
    with plots.report_style():
        fig = plots.step_breakdown(res)
    return fig, plots.drawn(fig)


def test_the_transport_band_is_labelled_with_what_it_draws(run):
    fig, _ = _drawn(with_steps(run, {}))
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "send + transport, both ways (send + wait - runner busy)" in labels
    assert not any("(wait - runner busy)" in lb for lb in labels)


def test_a_synchronous_negative_transport_is_noise_not_overlap(run):
    fig, d = _drawn(with_steps(run, {"cached+async": ASYNC_STEP, "cached": SYNC_STEP}))
    [wl] = d["panels"]
    assert d["overlap"] == [("cached", "msgpack", wl, 283.0, 288.0, False),
                            ("cached+async", "msgpack", wl, 120.0, 288.0, True)]
    assert blocks.caption("step_breakdown", d) == FIXED + ASYNC_WORDS + SYNC_WORDS
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "runner busy beyond send + wait (above the red line: the mean step)" in labels
    assert "hidden by overlap (above the red line: the mean step)" not in labels


def test_an_async_negative_transport_alone_is_overlap(run):
    fig, d = _drawn(with_steps(run, {"cached+async": ASYNC_STEP,
                                "cached": dict(ASYNC_STEP, wait_ns=400_000)}))
    [wl] = d["panels"]
    assert d["overlap"] == [("cached+async", "msgpack", wl, 120.0, 288.0, True)]
    assert blocks.caption("step_breakdown", d) == FIXED + ASYNC_WORDS
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "hidden by overlap (above the red line: the mean step)" in labels
    assert "runner busy beyond send + wait (above the red line: the mean step)" not in labels


def test_without_a_negative_transport_the_stack_is_the_step(run):
    _, d = _drawn(with_steps(run, {"cached+async": dict(ASYNC_STEP, wait_ns=400_000),
                              "cached": dict(ASYNC_STEP, wait_ns=400_000)}))
    assert d["overlap"] == []
    assert blocks.caption("step_breakdown", d).startswith(
        "Where a scheduler step's time goes, mean µs per counted step (repetitions "
        "pooled): the stack sums to the mean step time; transport is the send call plus "
        "the wait for the reply minus the runner's busy time.")
