"""``bench.py report --no-figures``: no figure is drawn and no PNG written; each place a
figure would be (a run's Figures section, the figure of every run's tokens/s) holds
``blocks.NO_FIGURES_NOTE`` instead, and every other line of report.md is the full
report's."""

from __future__ import annotations

import pytest

from analysis_run import send_and_both_runs
from ipc_bench import cli

NOTE = "> **Note:** Figures: not drawn (`--no-figures`)."


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run ``a`` (send and cached) and run ``b`` (send alone): copies of the session's
    (``analysis_run.send_and_both_runs``)."""
    return send_and_both_runs(tmp_path_factory, tmp_path_factory.mktemp("nofig"), "a", "b")


def _render(runs, out, *extra: str) -> list[str]:
    """report.md of ``runs`` a and b rendered into ``out`` with ``extra``, as lines, the
    ``Rendered ... by`` line (the time and command) left out."""
    assert cli.main(["report", str(runs / "a"), str(runs / "b"), "--output", str(out),
                     *extra]) == 0
    return [ln for ln in (out / "report.md").read_text().splitlines()
            if not ln.startswith("Rendered ")]


def _figures_noted(lines: list[str]) -> list[str]:
    """The full report's ``lines`` with what ``--no-figures`` replaces by ``NOTE``: the
    body of each Figures section (its figures and their ``not shown`` notes) and the
    figure of every run's tokens/s (its title, image and caption)."""
    out: list[str] = []
    skip = 0
    for ln in lines:
        if ln.startswith("#"):
            skip = 0
            out.append(ln)
            if ln.endswith(" Figures"):
                out += ["", NOTE, ""]
                skip = -1  # to the next heading
        elif skip:
            skip -= 1
        elif ln == "**Output tokens/s, all runs**":
            out.append(NOTE)
            skip = 4  # blank, image, blank, caption
        else:
            out.append(ln)
    return out


def test_no_figure_is_drawn_and_the_rest_is_the_full_report(runs, tmp_path, capsys):
    full = _render(runs, tmp_path / "full")
    bare = _render(runs, tmp_path / "bare", "--no-figures")
    assert capsys.readouterr().out.splitlines()[-1] == \
        f"report: {tmp_path / 'bare' / 'report.html'}"
    assert sorted(p.name for p in (tmp_path / "bare").iterdir()) == [
        "a.summary.json", "b.summary.json", "report.html", "report.md"]
    assert any(p.suffix == ".png" for p in (tmp_path / "full").iterdir())
    # the note in each run's Figures section and in place of the tokens/s figure
    assert bare.count(NOTE) == 3
    assert bare == _figures_noted(full)
    assert "Figures: not drawn" in (tmp_path / "bare" / "report.html").read_text()
    assert "<img" not in (tmp_path / "bare" / "report.html").read_text()
