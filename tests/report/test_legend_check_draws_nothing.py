"""The throughput figure finds the data points under a panel's legend from a layout
pass (``plots._lay_out``), not a full draw of the figure: ``plots.draw`` of it draws the
figure once, at the PNG's 110 dots per inch, where each panel's check drew it at 100
first; the legend that covered a point still moves to the panel's right."""

from __future__ import annotations

import pytest
from matplotlib.figure import Figure

from figure_calls import dpi_calls
from ipc_bench.report import plots
from test_throughput_legend_clear import _cases
from test_withheld_figures import results_of


@pytest.fixture
def draws(monkeypatch):
    """The dots per inch of every ``Figure.draw`` call from here on."""
    return dpi_calls(monkeypatch, Figure, "draw")


def test_the_legend_check_draws_no_figure(draws):
    png, what = plots.draw(plots.throughput, results_of(_cases()))
    assert draws == [110]
    assert what["panels"] == ["tokens/s", "cached+async/cached"]
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_legend_over_a_point_still_moves_out(draws):
    with plots.report_style():
        fig = plots.throughput(results_of(_cases()))
    assert draws == []
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    right_of_panel = [(ax.get_legend()._loc, ax.get_legend().get_window_extent(renderer).x0
                       > ax.get_window_extent(renderer).x1) for ax in fig.axes[:2]]
    # tokens/s: "upper left" of a box right of the panel; the ratio panel's: "best", inside
    assert right_of_panel == [(2, True), (0, False)]
