"""A figure laid out (``plots._lay_out``) and not changed since is not laid out again:
``plots.draw`` of a figure runs its constrained layout twice, once for its tick labels
(``_readable_ticks``) and once in the PNG's draw, where the title check (``fit_title``)
and the throughput figure's legend checks each ran one more pass of the same layout.
A change to the figure after a pass (a text, a legend, a formatter, its size) is laid
out anew."""

from __future__ import annotations

import pytest
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.ticker import NullFormatter

from figure_calls import dpi_calls
from ipc_bench.report import plots
from test_throughput_legend_clear import _cases
from test_withheld_figures import results_of
from test_withheld_timings import tp_summary


@pytest.fixture
def passes(monkeypatch):
    """The dots per inch of every constrained layout run from here on."""
    return dpi_calls(monkeypatch, ConstrainedLayoutEngine, "execute")


def test_a_throughput_figure_is_laid_out_once_before_its_png(passes):
    kept = [tp_summary(p, 1, 16, case_id=f"{p}-1",
                       workload="broadcast=ipc,num_running=8,tp=1") for p in ("send", "cached")]
    png, what = plots.draw(plots.throughput, results_of(kept))
    assert passes == [100, 110]
    assert what["panels"] == ["tokens/s", "cached/send"]
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_legend_moved_off_a_point_is_laid_out_again(passes):
    plots.draw(plots.throughput, results_of(_cases()))
    # the tokens/s legend moved right of its panel: the ratio panel's check lays it out
    # again, and the title check finds that layout current
    assert passes == [100, 100, 110]


def test_a_figure_with_a_note_in_its_title_is_laid_out_again_for_it(passes):
    withheld = [tp_summary(p, 2, 2, output_tokens_per_s=70_000.0) for p in ("send", "cached")]
    kept = [tp_summary(p, 1, 16, case_id=f"{p}-1",
                       workload="broadcast=ipc,num_running=8,tp=1") for p in ("send", "cached")]
    plots.draw(plots.throughput, results_of(withheld + kept))
    # the note set after the tick labels' pass: the title check lays it out again
    assert passes == [100, 100, 110]


def test_each_change_after_a_pass_is_laid_out_anew(passes):
    with plots.report_style():
        fig, axes = plots._figure(1, 2)
        ax = axes[0][0]
        ax.plot([1, 2], [3, 4], label="a line")
        changes = [lambda: None, lambda: ax.set_title("a title"), lambda: None,
                   lambda: ax.legend(), lambda: ax.xaxis.set_minor_formatter(NullFormatter()),
                   lambda: fig.suptitle("a figure"), lambda: fig.set_size_inches(7, 4),
                   lambda: [t.set_rotation(30) for t in ax.get_xticklabels()],
                   lambda: ax.get_window_extent()]
        counts = []
        plots._lay_out(fig)
        for change in changes:
            change()
            plots._lay_out(fig)
            counts.append(len(passes))
    # reading the tick labels (get_xticklabels) places them anew: laid out again
    assert counts == [1, 2, 2, 3, 4, 5, 6, 7, 7]
