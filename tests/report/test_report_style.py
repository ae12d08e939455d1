"""A report's figures do not depend on the matplotlib style of whoever renders it: a
notebook or script that set ``plt.style.use("ggplot")`` (grey axes, larger fonts) and
then calls ``cli.main(["report", ...])`` gets the same PNG bytes as ``bench.py
report`` (``plots.report_style``), and its own style back after. The notebook's figures
are the report's (its ``show`` helper draws through ``plots.draw_png``)."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib
import matplotlib.style
import pytest

from analysis_run import four_case_copy
from ipc_bench import cli
from ipc_bench.analysis.results import load
from ipc_bench.report import plots

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return four_case_copy(tmp_path_factory, tmp_path_factory.mktemp("style") / "run")


def _caller_style():
    """A caller's own style: ggplot, and a font size of its own."""
    context = matplotlib.rc_context()
    context.__enter__()
    matplotlib.style.use("ggplot")
    matplotlib.rcParams["font.size"] = 17
    return context


def _pngs(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.png"))}


def test_a_report_rendered_under_a_caller_style_has_the_same_figures(run, tmp_path,
                                                                     capsys):
    assert cli.main(["report", str(run), "--output", str(tmp_path / "plain")]) == 0
    context = _caller_style()
    try:
        assert cli.main(["report", str(run), "--output", str(tmp_path / "styled")]) == 0
        # the caller's style is its own again
        assert matplotlib.rcParams["axes.facecolor"] == "#E5E5E5"
        assert matplotlib.rcParams["font.size"] == 17.0
    finally:
        context.__exit__(None, None, None)
    capsys.readouterr()
    plain = _pngs(tmp_path / "plain")
    assert sorted(plain) == ["bytes_per_step.png", "codec_time_per_step.png",
                             "send_cost_share.png", "step_breakdown.png", "throughput.png"]
    assert _pngs(tmp_path / "styled") == plain


def test_a_figure_is_drawn_and_saved_in_matplotlibs_defaults(run):
    seen = []

    def figure(results):
        fig = plots.bytes_per_step(results)
        seen.append({k: matplotlib.rcParams[k] for k in
                     ("axes.facecolor", "font.size", "axes.grid", "savefig.facecolor")})
        return fig

    res = load(run)
    plain = plots.draw_png(figure, res)
    context = _caller_style()
    try:
        styled = plots.draw_png(figure, res)
        after = (matplotlib.rcParams["axes.facecolor"], matplotlib.rcParams["font.size"])
    finally:
        context.__exit__(None, None, None)
    defaults = {"axes.facecolor": "white", "font.size": 10.0, "axes.grid": False,
                "savefig.facecolor": "auto"}
    assert seen == [defaults, defaults]
    assert styled == plain
    assert after == ("#E5E5E5", 17.0)


def test_an_error_in_a_figure_gives_the_caller_its_style_back(run):
    def broken(results):
        raise plots.NoData("no rows")

    context = _caller_style()
    try:
        with pytest.raises(plots.NoData, match="^no rows$"):
            plots.draw_png(broken, load(run))
        assert matplotlib.rcParams["axes.facecolor"] == "#E5E5E5"
    finally:
        context.__exit__(None, None, None)


def _notebook_show():
    """The notebook's ``show`` helper (its setup cell), with ``display`` and ``Image``
    collecting the PNG bytes it shows."""
    nb = json.loads((ROOT / "notebooks" / "analysis.ipynb").read_text())
    cell = next("".join(c["source"]) for c in nb["cells"]
                if c["cell_type"] == "code" and "def show(" in "".join(c["source"]))
    source = cell[cell.index("def show("):cell.index("def each_run(")]
    shown: list[bytes] = []
    space = {"plots": plots, "display": shown.append, "Image": lambda data: data}
    exec(source, space)
    return space["show"], shown


def test_the_notebooks_figures_are_the_reports_whatever_its_style(run):
    show, shown = _notebook_show()
    res = load(run)
    context = _caller_style()
    try:
        show(plots.bytes_per_step, res)
    finally:
        context.__exit__(None, None, None)
    assert shown == [plots.draw_png(plots.bytes_per_step, res)]
