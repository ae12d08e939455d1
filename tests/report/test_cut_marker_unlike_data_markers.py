"""An interval end the throughput figure cuts at an axis edge is marked by an open arrow
on its bar, a shape no series draws: it was a caret, which matplotlib fills, so the
cut end read as one more point, the filled triangle down of pickle at the bottom edge
of the cached/send panel, and a triangle up, as the single process's, at the top of
the tokens/s panel."""

from __future__ import annotations

import matplotlib
import pandas as pd

from ipc_bench.analysis.results import Results
from ipc_bench.report import plots

matplotlib.use("Agg")
from matplotlib.colors import to_rgba  # noqa: E402
from matplotlib.container import ErrorbarContainer  # noqa: E402
from matplotlib.markers import MarkerStyle  # noqa: E402

RUNNING = (1, 16, 64, 256)
CODECS = ("msgpack", "pickle", "none")
#: send / pickle at 16 running, repetition by repetition: an interval decades wide in
#: both panels, cut at both edges of each.
SPREAD = (1.0, 1e4, 1e-4)


def _results() -> Results:
    rows = []
    for n in RUNNING:
        for codec in CODECS:
            for policy in ("send", "cached"):
                for rep in range(3):
                    wide = n == 16 and codec == "pickle" and policy == "send"
                    rows.append(dict(
                        run_id="run", scenario="decode-steady", workload=f"num_running={n}",
                        num_running=n, case_id=f"num_running={n}/{policy}/{codec}#{rep}",
                        policy=policy, arm=policy, codec=codec, transport="ipc",
                        model="null", repetition=rep, complete=True, num_steps=300,
                        output_tokens_per_s=(1_000.0 * n * (1.2 if policy == "cached" else 1)
                                             + 37.0 * rep) * (SPREAD[rep] if wide else 1.0)))
    empty = pd.DataFrame(columns=["run_id", "case_id"])
    return Results(cases=pd.DataFrame(rows), steps=empty, requests=empty, floor=empty,
                   itl=empty, metadata={"run": {}}, status={"run": "complete"},
                   problems={"run": []}, paths={"run": "run"})


def _look(line) -> tuple[bool, frozenset]:
    """What ``line``'s marker draws, whatever its size or aspect: whether it is filled
    (a face colour that is not transparent: matplotlib fills a caret unless its
    fillstyle is ``none``), and its outline's segments, each end scaled into the unit
    square of the outline's extent, a filled shape's outline closed."""
    style = MarkerStyle(line.get_marker(), line.get_fillstyle())
    path = style.get_path().transformed(style.get_transform())
    filled = to_rgba(line.get_markerfacecolor())[3] > 0
    polys = path.to_polygons(closed_only=False)
    xs = [x for poly in polys for x, _ in poly]
    ys = [y for poly in polys for _, y in poly]

    def unit(x, y):
        return (round(float((x - min(xs)) / ((max(xs) - min(xs)) or 1)), 2),
                round(float((y - min(ys)) / ((max(ys) - min(ys)) or 1)), 2))
    segments = set()
    for poly in polys:
        pts = [unit(x, y) for x, y in poly]
        if filled:
            pts.append(pts[0])
        segments |= {frozenset((a, b)) for a, b in zip(pts, pts[1:]) if a != b}
    return filled, frozenset(segments)


def _series_lines(ax) -> list:
    """The line of points behind each of ``ax``'s legend entries."""
    return [h.lines[0] if isinstance(h, ErrorbarContainer) else h
            for h in ax.get_legend_handles_labels()[0]]


def test_a_cut_interval_end_is_marked_by_a_shape_no_series_draws():
    fig = plots.throughput(_results())
    d = plots.drawn(fig)
    assert (d["cut"], d["ratio_cut"]) == (2, 2)  # both ends, in each panel
    for ax in fig.axes[:2]:
        cuts = [ln for ln in ax.lines if ln.get_gid() == plots.CUT_GID]
        series = _series_lines(ax)
        assert series and sum(len(ln.get_xdata()) for ln in cuts) == 2
        legend = {_look(ln) for ln in series}
        assert len(legend) == len({ln.get_marker() for ln in series})  # each its own
        for cut in cuts:
            filled, segments = _look(cut)
            assert (filled, segments) not in legend
            # an open arrow: never filled, a stem and two strokes meeting at its tip
            assert not filled and len(segments) == 3
            # in its series' colour: the pickle line of send (left) or the grey one
            assert cut.get_color() in {ln.get_color() for ln in series}


def test_the_old_caret_reads_as_a_data_triangle():
    """The check above tells a filled caret (the old cut marker) from no triangle: the
    caret down and pickle's triangle down look alike to it."""
    fig = plots.throughput(_results())
    ratio = fig.axes[1]
    labels = ratio.get_legend_handles_labels()[1]
    pickle = _series_lines(ratio)[labels.index("pickle")]
    caret, = ratio.plot([0], [1], marker=7, color=pickle.get_color(), linestyle="none")
    assert _look(caret) == _look(pickle)
