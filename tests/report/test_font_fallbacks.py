"""A font cache built by another matplotlib (without the bundled fonts) made every
report print about 20 ``findfont: ... Falling back to DejaVu Sans.`` lines; figures keep
the font manager's log to errors (``plots._quiet_font_fallbacks``)."""

from __future__ import annotations

import logging

from ipc_bench.report import plots


def test_a_missing_font_family_is_not_logged_once_a_figure_is_made(caplog):
    from matplotlib import font_manager

    plots._figure()
    with caplog.at_level(logging.WARNING):
        font_manager.fontManager.findfont(
            font_manager.FontProperties(family="NoSuchFamilyAnywhere"))
    assert [r for r in caplog.records if r.name == "matplotlib.font_manager"] == []
    assert logging.getLogger("matplotlib.font_manager").level == logging.ERROR
