"""The step breakdown's legend lies inside its figure at every width the report draws it:
the transport label "send + transport, both ways (send + wait - runner busy)" made three
columns wider than a 9.5-inch figure, cutting both of the legend's edges."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

from ipc_bench.analysis.results import load
from ipc_bench.cli import main as cli_main
from ipc_bench.report import plots


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("legend") / "one"
    assert cli_main(["--scenario", "decode-steady", "--steps", "12", "--warmup-steps", "3",
                     "--codecs", "msgpack", "--no-floor", "--num-running", "16",
                     "--output", str(out)]) == 0
    return out


def _inside(fig, leg) -> tuple[bool, tuple, tuple]:
    fig.canvas.draw()
    box = leg.get_window_extent()
    outer = fig.get_window_extent()
    return (box.x0 >= outer.x0 and box.x1 <= outer.x1 and box.y0 >= outer.y0
            and box.y1 <= outer.y1), tuple(box.extents), tuple(outer.extents)


def test_a_one_workload_breakdown_legend_fits_its_figure(run):
    with plots.report_style():
        fig = plots.step_breakdown(load(run))
    assert tuple(fig.get_size_inches()) == (9.5, 5.5)
    [leg] = fig.legends
    assert "send + transport, both ways (send + wait - runner busy)" in [
        t.get_text() for t in leg.get_texts()]
    ok, box, outer = _inside(fig, leg)
    assert ok, (box, outer)
    assert leg._ncols == 2
    plt.close(fig)


@pytest.mark.parametrize("width,ncols", [(9.5, 2), (12.0, 3), (20.0, 3), (6.0, 1)])
def test_the_legend_takes_as_many_columns_as_fit(width, ncols):
    labels = [label for _, label, _ in plots.STEP_COMPONENTS] + [
        "runner idle (beside: overlaps the step)"]
    with plots.report_style():
        fig, axes = plots._figure(1, 1, width=width, height=5.5)
        handles = [axes[0][0].bar([0], [1], label=lb) for lb in labels]
        leg = plots._fitted_fig_legend(fig, handles, labels, ncols=3)
    ok, box, outer = _inside(fig, leg)
    assert ok, (box, outer)
    assert leg._ncols == ncols
    plt.close(fig)
