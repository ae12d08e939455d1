"""Where the runner is busy longer than the scheduler's send and wait (async scheduling:
steps overlap), the step breakdown's transport band (send + wait - runner busy) would be
negative: it is drawn at 0, the mean step marked by a line and the work hidden by the
overlap hatched above it, and the caption gives the figures to recompute it."""

from __future__ import annotations

import pytest

from ipc_bench.analysis.results import load
from ipc_bench.cli import main as cli_main
from ipc_bench.report import blocks, plots

#: Every counted step of cached+async, in ns: runner busy = 12 + 20 + 30 + 200 + 10 +
#: 10 + 6 = 288 µs, send + wait = 120 µs, so transport -168 µs; the mean step is
#: 10 + 5 + 4 + 20 + 100 + 8 + 9 = 156 µs, the stack without transport 324 µs.
ASYNC_STEP = dict(sched_ns=10_000, build_ns=5_000, encode_ns=4_000, runner_encode_ns=6_000,
                  send_ns=20_000, wait_ns=100_000, decode_ns=8_000, runner_decode_ns=12_000,
                  update_ns=9_000, runner_update_ns=20_000, runner_writeback_ns=10_000,
                  runner_build_ns=10_000, runner_prepare_ns=30_000,
                  runner_forward_ns=200_000, runner_idle_ns=0)
#: ... and of cached: send + wait 420 µs, so transport +132 µs.
SYNC_STEP = dict(ASYNC_STEP, wait_ns=400_000)


def async_run(out) -> None:
    """A small ``--async-scheduling`` run of the emulated model into ``out``: its
    cached+async and cached arms, msgpack, 12 counted steps each."""
    assert cli_main(["--scenario", "decode-steady", "--steps", "12", "--warmup-steps", "3",
                     "--codecs", "msgpack", "--no-floor", "--no-single-process",
                     "--model", "emulated", "--model-preset", "llama-3.2-1b",
                     "--num-running", "3", "--async-scheduling",
                     "--output", str(out)]) == 0


def with_steps(run, steps: dict):
    """``run`` loaded by arm, every counted step of each policy in ``steps`` given its
    values (column -> value)."""
    res = load(run).by_arm()
    for policy, values in steps.items():
        mask = res.steps["policy"] == policy
        assert mask.any()
        for col, v in values.items():
            res.steps.loc[mask, col] = v
    return res


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("overlap") / "async"
    async_run(out)
    return with_steps(out, {"cached+async": ASYNC_STEP, "cached": SYNC_STEP})


def test_a_negative_transport_is_drawn_as_overlap_above_the_mean_step(results):
    with plots.report_style():
        fig = plots.step_breakdown(results)
    what = plots.drawn(fig)
    [wl] = what["panels"]
    assert what["series"] == [("cached", "msgpack"), ("cached+async", "msgpack")]
    assert what["overlap"] == [("cached+async", "msgpack", wl, 120.0, 288.0, True)]
    ax = fig.axes[0]
    # no band below 0 nor drawn downwards over the others
    assert min(p.get_y() for p in ax.patches) == 0.0
    assert all(p.get_height() >= 0 for p in ax.patches)
    [hatched] = [p for p in ax.patches if p.get_hatch() == "xxx"]
    assert (hatched.get_y(), hatched.get_height()) == pytest.approx((156.0, 168.0))
    [line] = ax.collections
    [[(_, y0), (_, y1)]] = line.get_segments()
    assert (y0, y1) == pytest.approx((156.0, 156.0))
    # the stack's top is the mean step plus the hidden work, inside the axis
    tops = [p.get_y() + p.get_height() for p in ax.patches if abs(p.get_x() + 0.28 - 0.88) < 1e-9]
    assert max(tops) == pytest.approx(324.0)
    assert ax.get_ylim()[1] > 324.0
    # cached's transport is positive: its stack is its mean step, 456 µs, unmarked
    sync_tops = [p.get_y() + p.get_height() for p in ax.patches
                 if abs(p.get_x() + 0.28 - (-0.12)) < 1e-9]
    assert max(sync_tops) == pytest.approx(456.0)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[-1] == "hidden by overlap (above the red line: the mean step)"


def test_the_caption_says_what_the_overlap_is_with_its_figures(results):
    with plots.report_style():
        fig = plots.step_breakdown(results)
    text = blocks.caption("step_breakdown", plots.drawn(fig))
    assert text == (
        "Where a scheduler step's time goes, mean µs per counted step (repetitions "
        "pooled): each stack sums to the mean step time, unless marked in red (below); "
        "transport is the send call plus the wait for the reply minus the runner's busy "
        "time. The hatched bar beside each stack is the runner's idle time (waiting for "
        "work), which overlaps the scheduler's parts. Where the runner's mean busy time "
        "exceeds the scheduler's mean send + wait, the mean transport is negative; its "
        "band is drawn at 0, so that bar's stack sums to the mean step plus the "
        "difference: the red line marks the mean step and the red-hatched part above it "
        "is the difference, means over counted steps. With async scheduling the steps "
        "overlap (the runner computes step n while the scheduler schedules step n + 1): "
        "the difference is the runner's work hidden by the overlap (cached+async / "
        "msgpack: send + wait 120.0 µs, runner busy 288.0 µs, 168.0 µs hidden).")
