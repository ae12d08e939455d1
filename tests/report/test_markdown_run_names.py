"""A run folder's name is shown as typed in report.md's headings and table cells
(``render.verbatim``): the characters a Markdown viewer reads as emphasis, code, a
link, an entity or an HTML tag are backslash-escaped there (``*a*`` was shown in
italics, ``_b_`` too), ``|`` in a cell as before; ``_`` between two letters or digits
(``x_run``) is left as it is, as no viewer reads it. The HTML page shows the same
names, escaped as all its text, without a backslash."""

from __future__ import annotations

import pytest

from analysis_run import copy_as_another_run
from ipc_bench import cli
from ipc_bench.report.render import render_html, render_markdown, verbatim

NAME = "<i>|*a*`x`[l](u)&amp;~~s~~\\"
SHOWN = "\\<i\\>|\\*a\\*\\`x\\`\\[l\\](u)\\&amp;\\~\\~s\\~\\~\\\\"


def test_verbatim_parts_are_escaped_in_markdown_only():
    heading = verbatim("Run ", verbatim(NAME), " (decode-steady) *as is*")
    assert heading == f"Run {NAME} (decode-steady) *as is*"  # blocks compare as text
    blocks = [("h", 2, heading),
              ("table", ["run", verbatim("x_run")], [[verbatim(NAME), verbatim("_b_")]])]
    assert render_markdown(blocks) == (
        f"## Run {SHOWN} (decode-steady) *as is*\n\n"
        "| run | x_run |\n|---|---|\n"
        f"| {SHOWN.replace('|', chr(92) + '|')} | \\_b\\_ |\n")
    html = render_html(blocks, "t")
    assert ("<h2>Run &lt;i&gt;|*a*`x`[l](u)&amp;amp;~~s~~\\ (decode-steady) *as is*</h2>"
            in html)
    assert "<td>_b_</td>" in html


@pytest.fixture(scope="module")
def runs(shared_two_case_run, tmp_path_factory):
    base = tmp_path_factory.mktemp("names")
    copy_as_another_run(shared_two_case_run, base / "<i>|*a*")
    copy_as_another_run(shared_two_case_run, base / "_b_", seconds=30.0)
    return base


def test_a_report_shows_run_names_as_typed(runs, capsys):
    out = runs / "rep"
    assert cli.main(["report", str(runs / "<i>|*a*"), str(runs / "_b_"), "--output",
                     str(out), "--no-figures"]) == 0
    capsys.readouterr()
    md = (out / "report.md").read_text().splitlines()
    a, b = "\\<i\\>|\\*a\\*", "\\_b\\_"
    assert [ln for ln in md if ln.startswith("## Run ")] == [
        f"## Run {a} (decode-steady)", f"## Run {b} (decode-steady)"]
    cell = a.replace("|", "\\|")
    assert [ln.split(" | ")[0] for ln in md if " | decode-steady | " in ln] == [
        f"| {cell}", f"| {b}"]
    assert f"| workload | arm | codec | {cell} | {b} | {b} ÷ {cell} |" in md
    html = (out / "report.html").read_text()
    assert "<h2>Run &lt;i&gt;|*a* (decode-steady)</h2>" in html
    assert "\\*" not in html and "\\_b" not in html
