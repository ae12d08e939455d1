"""A label with a lone surrogate (``"\\ud800"``, valid JSON in a hand-edited
``summary.json``) in a figure's text: matplotlib's font code refused it with a
``TypeError`` (``set_text(): incompatible function arguments``), a traceback out of
``report``. The figures draw it as its escape (``errors.utf8_text``), as the report's
files write it; a figure whose text has none draws as before."""

from __future__ import annotations

import warnings

import pytest

from test_hand_edited_summary import SEND, _edit, _report, good_run  # noqa: F401 (fixture)

ODD = "num_running=4 \ud800"


def _odd_workloads(results):
    """``results`` with every case's and row's workload relabelled ``ODD``."""
    for name in ("cases", "steps", "requests"):
        table = getattr(results, name)
        if "workload" in table.columns:
            setattr(results, name, table.assign(workload=ODD))
    return results


def _loaded(run):
    from ipc_bench.analysis.results import load
    from ipc_bench.analysis.run_files import ResultsWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResultsWarning)
        return load(run)


@pytest.mark.parametrize("name", ["throughput", "step_breakdown", "bytes_per_step"])
def test_a_figure_with_a_lone_surrogate_in_its_text_draws_it_as_its_escape(
        good_run, name):  # noqa: F811 (fixture)
    import matplotlib.pyplot as plt
    from matplotlib.text import Text

    from ipc_bench.report import plots

    results = _odd_workloads(_loaded(good_run))
    fig = getattr(plots, name)(results)
    try:
        png = plots.figure_png(fig)
        texts = [t.get_text() for t in fig.findobj(Text)]
        ticks = [t.get_text() for ax in fig.axes for t in ax.get_xticklabels()]
    finally:
        plt.close(fig)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert not any("\ud800" in t for t in texts + ticks)
    if name != "bytes_per_step":  # its x axis is the running count, not the workload
        assert any("num_running=4 \\ud800" in t.replace("\n", " ") for t in texts + ticks)


def test_a_report_whose_workload_label_has_a_lone_surrogate_draws_its_figures(
        good_run, tmp_path, capsys, monkeypatch):  # noqa: F811 (fixture)
    """Every figure the unedited run's report draws is drawn (``load`` made to give the
    label, as a notebook's edit of its tables would: the loader's own checks keep such
    a workload out of a run folder's CSV files)."""
    from ipc_bench import cli
    from ipc_bench.analysis import results as loader

    run = _edit(good_run, tmp_path, lambda s: None)
    assert cli.main(["report", str(run), "--output", str(tmp_path / "plain")]) == 0
    real = loader.load
    monkeypatch.setattr(loader, "load", lambda paths: _odd_workloads(real(paths)))
    capsys.readouterr()
    code, err = _report(run, tmp_path, capsys)
    assert (code, err) == (0, [])
    rep = tmp_path / "rep"
    drawn = sorted(p.name for p in rep.glob("*.png"))
    assert drawn == sorted(p.name for p in (tmp_path / "plain").glob("*.png"))
    assert {"throughput.png", "step_breakdown.png"} <= set(drawn)
    assert "num_running=4 \\ud800" in (rep / "report.md").read_text()


def test_a_figure_without_a_surrogate_keeps_its_text(good_run):  # noqa: F811 (fixture)
    import matplotlib.pyplot as plt
    from matplotlib.text import Text

    from ipc_bench.report import plots

    fig = plots.throughput(_loaded(good_run))
    try:
        before = [t.get_text() for t in fig.findobj(Text)]
        plots.utf8_figure_text(fig)
        assert [t.get_text() for t in fig.findobj(Text)] == before
        assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["num_running=4"]
    finally:
        plt.close(fig)
    assert SEND.startswith("num_running=4/")
