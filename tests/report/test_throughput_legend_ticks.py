"""The throughput figure's legend shows error-bar glyphs only for series drawn with
error bars (a run of one repetition draws none: its entries are markers alone), and
the cached/send panel's tick labels stay horizontal where they fit."""

from __future__ import annotations

import matplotlib
import pandas as pd

from ipc_bench.analysis.results import Results
from ipc_bench.report import plots

matplotlib.use("Agg")
from matplotlib.container import ErrorbarContainer  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

RUNNING = (1, 16, 64, 256)
CODECS = ("msgpack", "pickle", "none")


def _results(repeat: int) -> Results:
    """A decode-steady run at 1, 16, 64 and 256 running requests of 3 codecs, both
    policies, ``repeat`` repetitions (the trial's figure)."""
    rows = []
    for n in RUNNING:
        for codec in CODECS:
            for policy in ("send", "cached"):
                for rep in range(repeat):
                    rows.append(dict(
                        run_id="run", scenario="decode-steady", workload=f"num_running={n}",
                        num_running=n, case_id=f"num_running={n}/{policy}/{codec}#{rep}",
                        policy=policy, arm=policy, codec=codec, transport="ipc",
                        model="null", repetition=rep, complete=True, num_steps=300,
                        output_tokens_per_s=1_000.0 * n * (1.2 if policy == "cached" else 1)
                        + 37.0 * rep))
    empty = pd.DataFrame(columns=["run_id", "case_id"])
    return Results(cases=pd.DataFrame(rows), steps=empty, requests=empty, floor=empty,
                   itl=empty, metadata={"run": {}}, status={"run": "complete"},
                   problems={"run": []}, paths={"run": "run"})


def _legend_handles(ax) -> list:
    return ax.get_legend().legend_handles


def test_one_repetition_draws_no_error_bar_glyph_in_either_legend():
    fig = plots.throughput(_results(1))
    tput, ratio = fig.axes[:2]
    assert plots.drawn(fig)["repeated"] is False
    for ax in (tput, ratio):
        assert ax.containers == []  # no error bars drawn
        handles, labels = ax.get_legend_handles_labels()
        assert [type(h) for h in handles] == [Line2D] * len(labels)
        # the legend's own artists: one marker each, no bar, no cap
        assert [type(h) for h in _legend_handles(ax)] == [Line2D] * len(labels)
    assert [t.get_text() for t in ratio.get_legend().get_texts()] == [
        "msgpack", "pickle", "single process"]


def test_repetitions_keep_their_error_bars_in_the_legend():
    fig = plots.throughput(_results(3))
    tput = fig.axes[0]
    handles, _ = tput.get_legend_handles_labels()
    assert {type(h) for h in handles} == {ErrorbarContainer}
    assert all(h.has_yerr for h in handles)


def test_the_ratio_panels_four_labels_stay_horizontal():
    fig = plots.throughput(_results(1))
    ratio = fig.axes[1]
    labels = ratio.get_xticklabels()
    assert [t.get_text() for t in labels] == [f"num_running={n}" for n in RUNNING]
    assert [t.get_rotation() for t in labels] == [0.0] * 4
    assert [t.get_rotation() for t in fig.axes[0].get_xticklabels()] == [0.0] * 4
    fig.canvas.draw()
    assert not plots._overlapping(plots._shown_labels(ratio), fig)


def _points(ax) -> list:
    """The line of points behind each of ``ax``'s legend entries (an error-bar
    series' own line of markers)."""
    return [h.lines[0] if isinstance(h, ErrorbarContainer) else h
            for h in ax.get_legend_handles_labels()[0]]


def test_each_codec_has_its_own_marker_and_each_policy_its_colour_in_both_panels():
    """send / msgpack and send / pickle were the same orange circle: only their place
    told them apart. Each codec has the cached/send panel's marker (the single process
    hollow), each policy its colour, so no two legend entries look alike."""
    for repeat in (1, 3):
        fig = plots.throughput(_results(repeat))
        tput, ratio = fig.axes[:2]
        labels = [t.get_text() for t in tput.get_legend().get_texts()]
        assert labels == ["send / msgpack", "cached / msgpack", "send / pickle",
                          "cached / pickle", "send / single process", "cached / single process"]
        looks = [(h.get_marker(), h.get_color(), h.get_markerfacecolor())
                 for h in _points(tput)]
        orange, blue = plots.POLICY_COLORS["send"], plots.POLICY_COLORS["cached"]
        assert looks == [("D", orange, orange), ("D", blue, blue), ("v", orange, orange),
                         ("v", blue, blue), ("^", orange, "white"), ("^", blue, "white")]
        assert [(h.get_marker(), h.get_markerfacecolor())
                for h in _points(ratio)] \
            == [("D", "#444444"), ("v", "#444444"), ("^", "white")]
