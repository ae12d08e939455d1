"""The passes that keep a figure's x tick labels readable lay it out without drawing it
(``plots._lay_out``), and ``figure_png`` draws a figure once: the labels end as full
draws left them (thinned on a log axis, turned on a crowded one, flat where they fit),
and the PNG is the bytes ``savefig`` writes."""

from __future__ import annotations

import io

import matplotlib
import pytest
from matplotlib.figure import Figure

from figure_calls import dpi_calls
from ipc_bench.report import plots


@pytest.fixture
def draws(monkeypatch):
    """The dots per inch of every ``Figure.draw`` call from here on, drawing or not."""
    return dpi_calls(monkeypatch, Figure, "draw")


def _two_panels(width: float, labels=(), log: bool = False, fontsize: int = 10):
    fig, axes = plots._figure(1, 2, width=width, height=2.5)
    for ax in axes[0]:
        if log:  # over a decade: the 2 and 5 minor labels as well as the powers of ten
            ax.plot([1.5, 90.0], [0, 1])
            ax.set_xscale("log")
            plots._plain_log_ticks(ax)
            ax.tick_params(axis="x", which="both", labelsize=fontsize)
        else:
            ax.plot(range(len(labels)), range(len(labels)))
            ax.set_xticks(range(len(labels)))
            ax.set_xticklabels(labels)
    return fig, [ax for row in axes for ax in row]


def _labels(fig):
    return [[(t.get_text(), t.get_rotation(), t.get_horizontalalignment())
             for t in plots._shown_labels(ax)] for ax in fig.axes]


def test_crowded_labels_end_as_before_with_no_figure_drawn(draws):
    with plots.report_style():
        crowded, axes = _two_panels(5, [f"num_running={i}" for i in range(9)])
        plots._readable_ticks(crowded, axes)
        thinned, axes = _two_panels(4.4, log=True, fontsize=14)
        plots._readable_ticks(thinned, axes)
        kept, axes = _two_panels(5, log=True)
        plots._readable_ticks(kept, axes)
    assert draws == []
    assert _labels(crowded) == [[(f"num_running={i}", 90.0, "center") for i in range(9)]] * 2
    assert _labels(thinned) == [[("10", 0.0, "center"), ("100", 0.0, "center")]] * 2
    assert [type(ax.xaxis.get_minor_formatter()).__name__ for ax in thinned.axes] == [
        "NullFormatter"] * 2
    assert _labels(kept) == [[(v, 0.0, "center")
                              for v in ("10", "100", "2", "5", "20", "50")]] * 2
    for fig in (crowded, thinned, kept):  # a full draw finds none of them overlapping
        fig.canvas.draw()
        assert [plots._overlapping(plots._shown_labels(ax), fig) for ax in fig.axes] == [
            False, False]


def test_figure_png_draws_once_and_writes_savefigs_bytes(draws):
    with plots.report_style():
        fig, axes = _two_panels(5, [f"num_running={i}" for i in range(9)])
        plots._readable_ticks(fig, axes)
        png = plots.figure_png(fig)
        assert draws == [110]
        assert fig.dpi == 100
        saved = io.BytesIO()
        fig.savefig(saved, format="png", dpi=110)
    assert png == saved.getvalue()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_figure_png_under_a_callers_tight_bbox_writes_what_savefig_does(draws):
    with matplotlib.rc_context({"savefig.bbox": "tight"}):
        fig, axes = _two_panels(5, ["a", "b", "c"])
        png = plots.figure_png(fig)
        saved = io.BytesIO()
        fig.savefig(saved, format="png", dpi=110)
    assert png == saved.getvalue()
    assert len(draws) == 4  # savefig's: a layout draw and the drawing, each time
