"""A figure's title, its notes and the emulated mark are drawn whole inside the figure
at any width the report draws (``plots.fit_title``: a 6.4-inch throughput figure cut
the mark at both edges), its panels' titles too; the codec time axes hold their points
with room above; an ``--async-scheduling`` run's throughput figure draws the
cached+async / cached panel its report's comparison gives."""

from __future__ import annotations

import pytest

from ipc_bench.analysis.results import load
from ipc_bench.cli import main as cli_main
from ipc_bench.report import blocks, plots

MARK = ("EMULATED steps: llama-3.2-1b on NVIDIA H200 roofline, UNCALIBRATED (at assumed "
        "rates); no GPU computed them")


@pytest.fixture(scope="module")
def async_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("titles") / "async"
    assert cli_main(["--scenario", "decode-steady", "--steps", "12", "--warmup-steps", "3",
                     "--codecs", "msgpack", "--no-floor", "--model", "emulated",
                     "--model-preset", "llama-3.2-1b", "--num-running", "3",
                     "--async-scheduling", "--repeat", "2", "--output", str(out)]) == 0
    return out


def _inside(fig, dpi: int = 110) -> list[tuple[str, float, float]]:
    """The titles of ``fig`` (its own and its visible panels') drawn at ``dpi`` that
    run past its left or right edge: ``(text, x0, x1)`` in pixels."""
    fig.set_dpi(dpi)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = [fig._suptitle] + [ax.title for ax in fig.axes if ax.get_visible()]
    out = []
    for t in texts:
        if t is None or not t.get_text():
            continue
        box = t.get_window_extent(renderer)
        if box.x0 < 0 or box.x1 > fig.bbox.width:
            out.append((t.get_text(), round(box.x0), round(box.x1)))
    return out


def test_the_async_throughput_figure_draws_its_ratio_whole(async_run):
    with plots.report_style():
        fig = plots.throughput(load(async_run))
        assert plots.drawn(fig)["panels"] == ["tokens/s", "cached+async/cached"]
        ratio = fig.axes[1]
        assert ratio.get_ylabel() == "cached+async / cached output tokens/s (ratio)"
        assert ratio.get_title().replace("\n", " ") == (
            "cached+async / cached (> 1: cached+async faster)")
        assert fig.get_suptitle().replace("\n", " ") == MARK
        assert _inside(fig) == []
        # the ratio panel's point is the report's comparison: cached+async over cached
        res = load(async_run).by_arm()
        rows, arms = plots.throughput_ratio_rows(res.cases)
        assert arms == ("cached+async", "cached")
        [row] = [r for r in rows if r["codec"] == "msgpack"]
        [bars] = [c for c in ratio.containers if c.get_label() == "msgpack"]
        assert list(bars.lines[0].get_ydata()) == [row["ratio"]]
        caption = blocks.caption("throughput", plots.drawn(fig))
        assert (" Right: cached+async/cached, paired by repetition: geometric mean of the "
                "per-repetition ratios [95 % Student-t interval] (above 1: cached+async "
                "faster).") in caption


def test_the_codec_time_figure_holds_its_points_and_title(async_run):
    with plots.report_style():
        fig = plots.codec_time_per_step(load(async_run).by_arm())
        assert fig.get_suptitle().replace("\n", " ") == (
            "Serializer time per step against running requests " + MARK)
        assert _inside(fig) == []
        for ax in fig.axes:
            top = max(float(y) for ln in ax.lines for y in ln.get_ydata())
            assert ax.get_ylim() == pytest.approx((0.0, top * 1.12))
            looks = {ln.get_label(): (ln.get_markerfacecolor(), ln.get_zorder())
                     for ln in ax.lines}
            # no send arm here: both arms hollow, so equal points show both
            assert looks == {"cached": ("white", 2), "cached+async": ("white", 2)}


@pytest.mark.parametrize("width", [3.0, 4.6, 6.4, 9.5])
def test_a_long_title_is_broken_to_the_figure_width(width):
    with plots.report_style():
        fig, axes = plots._figure(1, 1, width=width)
        axes[0][0].set_title("cached+async / cached (> 1: cached+async faster; timed "
                             "replays: wall tok/s, arrival-bound)")
        fig.suptitle(plots._with_note("Serializer time per step against running requests",
                                      MARK))
        plots.fit_title(fig)
        assert _inside(fig) == []
        # the words are all there, in order; the title's own line is kept apart where
        # it fits on one
        assert fig.get_suptitle().replace("\n", " ") == (
            "Serializer time per step against running requests " + MARK)
        if width >= 6.4:
            assert fig.get_suptitle().split("\n")[0] == (
                "Serializer time per step against running requests")


def test_a_title_that_fits_is_left_as_it_is():
    with plots.report_style():
        fig, _ = plots._figure(1, 1, width=9.5)
        fig.suptitle("Where a step's time goes\nEMULATED steps")
        plots.fit_title(fig)
        assert fig.get_suptitle() == "Where a step's time goes\nEMULATED steps"
