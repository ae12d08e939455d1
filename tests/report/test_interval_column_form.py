"""The comparison table's ``diff CI`` column changed form from row to row: ``[29.6,
76.7]`` on the step rows and ``[-22,475 to -4,077]`` on the tokens/s row of one table,
each interval joined by `` to `` only where its own ends had thousands separators. One
column now holds one form: where any of its intervals needs `` to ``, all of them take
it, in the terminal's comparison block and the report's Markdown and HTML tables alike;
a column with no separator keeps ``[29.6, 76.7]``, and a one-row table reads as its one
interval needs (``tables.diff_column_joined``)."""

from __future__ import annotations

from ipc_bench.analysis import stats
from ipc_bench.report import blocks, findings, tables
from ipc_bench.report.render import render_html, render_markdown
from test_metrics import SUMMARIES  # tokens/s of 56,000 to 70,000, steps of 230 to 285 µs

#: The diff CI column's index in a comparison row (``tables.comparison_parts``).
DIFF_CI = 7


def _comparison(*keys: str) -> dict:
    """The comparison of ``SUMMARIES``, its metrics ``keys`` alone where given."""
    [c] = stats.compare_cases(SUMMARIES)
    return dict(c, metrics={k: m for k, m in c["metrics"].items() if not keys or k in keys})


def _diff_cis(c: dict) -> list[str]:
    _, _, rows, _ = tables.comparison_parts(c)
    return [row[DIFF_CI] for row in rows]


def test_a_column_with_one_separated_interval_joins_every_interval_by_to():
    """Before: ``[29.6, 76.7]`` twice, ``[-22,475 to -4,077]``, ``[4.90, 4.90]``..."""
    assert _diff_cis(_comparison()) == [
        "[29.6 to 76.7]", "[29.6 to 76.7]", "[-22,475 to -4,077]", "[4.90 to 4.90]",
        "[0 to 0]", "[0 to 0]", "[14.8 to 38.3]", "[81.0 to 81.0]", "[0 to 0]"]


def test_a_column_without_separators_keeps_the_comma():
    assert _diff_cis(_comparison("step_ns_mean", "build_ns_per_step")) == [
        "[29.6, 76.7]", "[4.90, 4.90]"]


def test_a_one_row_table_reads_as_its_interval_needs():
    assert _diff_cis(_comparison("step_ns_mean")) == ["[29.6, 76.7]"]
    assert _diff_cis(_comparison("output_tokens_per_s")) == ["[-22,475 to -4,077]"]


def test_the_column_form_counts_only_rows_with_an_interval():
    assert not tables.diff_column_joined([(None, None, 1.0), (29.6, 76.7, 1.0)])
    assert tables.diff_column_joined([(None, None, 1.0), (29.6, 76.7, 1.0),
                                      (-1714.2, 4187.4, 1.0)])
    assert not tables.diff_column_joined([])
    assert tables._diff_interval(29.6, 76.7, 1.0, joined=True) == "[29.6 to 76.7]"
    assert tables._diff_interval(-1714.2, 4187.4, 1.0, joined=None) == "[-1,714 to 4,187]"


def test_the_terminal_block_prints_one_form_per_column():
    lines = tables.format_comparisons([_comparison()]).splitlines()
    assert lines[4] == (
        "step mean    us     283.8 [1.15]                                  230.7 [0.70]"
        "                           0.813  [0.743, 0.889]                         53.1"
        "       [29.6 to 76.7]    0.022 [0.130]    inconclusive: not significant after Holm")
    assert lines[6] == (
        "out tok/s    tok/s  56,300 [301.0]                              69,576 [423.0]"
        "                           1.236  [1.069, 1.429]                      -13,276"
        "  [-22,475 to -4,077]    0.034 [0.130]    inconclusive: not significant after Holm")


def test_the_report_tables_print_one_form_per_column(monkeypatch):
    monkeypatch.setattr(findings, "other_comparisons", lambda results: [_comparison()])
    sections = blocks._comparison_sections(None, 2)
    [table] = [b for b in sections if b[0] == "table"]
    assert [row[DIFF_CI] for row in table[2]] == _diff_cis(_comparison())
    md = render_markdown(sections)
    assert "| [29.6 to 76.7] |" in md and "| [-22,475 to -4,077] |" in md
    assert "[29.6, 76.7]" not in md
    html = render_html(sections, "t")
    assert "<td>[29.6 to 76.7]</td>" in html and "<td>[-22,475 to -4,077]</td>" in html
    assert "[29.6, 76.7]" not in html
