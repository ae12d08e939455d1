"""The throughput figure's legends cover no data point: in an --async-scheduling run's
figure the tokens/s panel, narrower beside the ratio panel, put its legend in the upper
right over the cached / single process point (geomean sqrt(110,073.6 x 88,862.3) =
98,900 tok/s)."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt

from ipc_bench.report import plots
from test_withheld_figures import results_of

#: an emulated decode-steady --async-scheduling run at 16 running requests, 2
#: repetitions: (codec, async, [tokens/s of repetition 0, 1])
TOKENS = [("msgpack", False, [70654.923151, 65335.012080]),
          ("msgpack", True, [56880.592918, 42258.686656]),
          ("pickle", True, [65986.784662, 67441.223498]),
          ("pickle", False, [36543.446732, 72531.735959]),
          ("none", True, [53438.244482, 120176.960574]),
          ("none", False, [110073.636511, 88862.315765])]


def _cases() -> list[dict]:
    return [dict(scenario="decode-steady", workload="num_running=16", num_running=16,
                 case_id=f"{codec}-{a}-{rep}", policy="cached+async" if a else "cached",
                 codec=codec,
                 transport="ipc", repetition=rep, complete=True, num_steps=150,
                 async_scheduling=a, output_tokens_per_s=v)
            for codec, a, vals in TOKENS for rep, v in enumerate(vals)]


def _points(ax) -> list[tuple[float, float]]:
    """Every series' data points of ``ax`` (error bar data lines, labelled lines)."""
    from matplotlib.container import ErrorbarContainer

    lines = [c.lines[0] for c in ax.containers if isinstance(c, ErrorbarContainer)]
    lines += [ln for ln in ax.lines if not ln.get_label().startswith("_")]
    return [(float(x), float(y)) for ln in lines for x, y in ln.get_xydata()]


def test_no_point_lies_under_a_legend():
    with plots.report_style():
        fig = plots.throughput(results_of(_cases()))
    assert plots.drawn(fig)["panels"] == ["tokens/s", "cached+async/cached"]
    fig.canvas.draw()
    tokens = fig.axes[0]
    points = _points(tokens)
    ys = sorted(round(y, 1) for _, y in points)
    assert round(math.sqrt(110073.636511 * 88862.315765), 1) in ys
    assert len(points) == 6
    for ax in fig.axes[:2]:
        leg = ax.get_legend()
        assert leg is not None
        box = leg.get_window_extent()
        inside = [(x, y) for (x, y), (px, py) in zip(
            _points(ax), ax.transData.transform(_points(ax)))
            if box.x0 <= px <= box.x1 and box.y0 <= py <= box.y1]
        assert inside == [], (ax.get_title(), inside)
        # and the legend stays inside the figure
        outer = fig.get_window_extent()
        assert outer.x0 <= box.x0 and box.x1 <= outer.x1 and outer.y0 <= box.y0 \
            and box.y1 <= outer.y1
    plt.close(fig)
