"""Runs whose folders share a name are labelled by the shortest end of their paths
that tells them apart (``results.run_labels``), in every table, heading, figure and
file name of a report, whatever the order they are given in."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from analysis_run import copy_as_another_run, run_bench
from ipc_bench import cli


def test_labels_are_the_shortest_distinguishing_ends(tmp_path):
    from ipc_bench.analysis.results import run_labels

    paths = [tmp_path / p for p in ("r/x/run", "r/y/run", "q/x/run", "q/solo")]
    assert run_labels(paths) == ["r/x/run", "y/run", "q/x/run", "solo"]
    assert run_labels(paths[::-1]) == ["solo", "q/x/run", "y/run", "r/x/run"]
    assert run_labels([tmp_path / "a", tmp_path / "b"]) == ["a", "b"]


def test_file_names_stay_unique():
    from ipc_bench.report.names import file_slugs

    assert file_slugs(["x/run", "y/run", "x_run", "x run"]) == {
        "x/run": "x_run", "y/run": "y_run", "x_run": "x_run-2", "x run": "x_run-3"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``x/run``, ``y/run`` (another run) and ``x_run``, whose file names would clash."""
    base = tmp_path_factory.mktemp("same")
    run_bench(base / "x" / "run", ["--scenario", "decode-steady", "--num-running", "4",
                                   "--steps", "40", "--warmup-steps", "5", "--codecs",
                                   "msgpack", "--no-floor", "--no-single-process"])
    copy_as_another_run(base / "x" / "run", base / "y" / "run")
    copy_as_another_run(base / "x" / "run", base / "x_run", seconds=30.0)
    return base


def test_a_report_tells_same_named_runs_apart(runs, capsys):
    out = runs / "rep"
    assert cli.main(["report", str(runs / "y" / "run"), str(runs / "x" / "run"),
                     str(runs / "x_run"), "--output", str(out)]) == 0
    assert capsys.readouterr() == (f"report: {out / 'report.html'}\n", "")
    md = (out / "report.md").read_text()
    assert [ln.split(" | ")[0] for ln in md.splitlines()
            if ln.startswith("| ") and " | decode-steady | " in ln] == [
        "| y/run", "| x/run", "| x_run"]
    # every side-by-side table heads and names its ratio columns with ÷: `x/run / y/run`
    # would not tell which run divides which
    header = "| workload | arm | codec | y/run | x/run | x_run | x/run ÷ y/run | x_run ÷ y/run |"
    captions = [ln for ln in md.splitlines()
                if "(geometric mean over repetitions; the ratio" in ln]
    assert len(captions) == 3 and md.count(header) == 3
    assert all("the ratio columns, `x/run ÷ y/run`, `x_run ÷ y/run`, divide each run's "
               "geometric mean by that of run `y/run`, the first loaded)" in ln for ln in captions)
    assert " / y/run" not in md
    assert re.findall(r"^## Run .*$", md, re.M) == [
        "## Run y/run (decode-steady)", "## Run x/run (decode-steady)",
        "## Run x_run (decode-steady)"]
    assert sorted(p for p in os.listdir(out) if p.endswith(".summary.json")) == [
        "x_run-2.summary.json", "x_run.summary.json", "y_run.summary.json"]
    assert "![Bytes per step](x_run-bytes_per_step.png)" in md
    assert "![Bytes per step](x_run-2-bytes_per_step.png)" in md
    assert (out / "x_run.summary.json").read_bytes() == \
        (runs / "x" / "run" / "summary.json").read_bytes()
    assert (out / "x_run-2.summary.json").read_bytes() == \
        (runs / "x_run" / "summary.json").read_bytes()


def test_a_run_folder_and_trace_whose_names_are_not_utf8_are_reported(tmp_path, capsys):
    """A path byte that is not UTF-8 (``\\xff``, held as a lone surrogate) is written
    as its escape in report.md and report.html, not a UnicodeEncodeError."""
    odd = os.fsdecode(b"tr\xff")
    trace = tmp_path / f"{odd}.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                     "2023-11-16 18:15:46.6805900,30,4\n")
    run = tmp_path / f"{odd}-run"
    run_bench(run, ["--scenario", "azure-conv", "--trace", str(trace), "--codecs",
                    "msgpack", "--warmup-steps", "2", "--no-single-process"])
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep")]) == 0
    md = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    html = (tmp_path / "rep" / "report.html").read_text(encoding="utf-8")
    assert f"--trace $'{tmp_path}/tr\\xff.csv'" in md  # quoted: a shell line to paste
    assert "tr\\xff-run" in md and "tr\\xff-run" in html
    # with another run: the label, escaped, in every table and figure (drawn by matplotlib)
    other = copy_as_another_run(run, tmp_path / "other")
    assert cli.main(["report", str(run), str(other), "--output", str(tmp_path / "both")]) == 0
    md = (tmp_path / "both" / "report.md").read_text(encoding="utf-8")
    assert "| workload | arm | codec | tr\\xff-run | other | other ÷ tr\\xff-run |" in md
    assert (tmp_path / "both" / "compare-throughput.png").stat().st_size > 0
    # a control character (ESC) in a name: its escape, never the raw byte
    esc = copy_as_another_run(run, tmp_path / "e\x1bsc")
    assert cli.main(["report", str(esc), "--output", str(tmp_path / "esc"),
                     "--no-figures"]) == 0
    for name in ("report.md", "report.html"):
        text = (tmp_path / "esc" / name).read_text(encoding="utf-8")
        assert "e\\x1bsc" in text and "\x1b" not in text


def test_the_command_of_a_run_is_quoted_as_a_shell_line():
    from ipc_bench.errors import command_shell_line

    assert command_shell_line(["bench.py", "--scenario", "soak", "--output", "/r/int run é"]) == \
        "python bench.py --scenario soak --output '/r/int run é'"
    assert command_shell_line(None) == "?"


def test_a_word_with_a_byte_or_character_a_terminal_cannot_show_is_quoted_to_paste():
    """A path byte that is not UTF-8 and a control character are quoted as bash's
    ``$'...'``, which gives the same bytes back; a shell really reads them so."""
    from ipc_bench.errors import one_line, shell_line

    odd = os.fsdecode(b"/r/bad\xffname")
    words = ["bench.py", "--output", odd, "--trace", "a\nb'c\\d", "--x", "é e"]
    line = shell_line(words)
    assert line == ("bench.py --output $'/r/bad\\xffname' --trace $'a\\x0ab\\'c\\\\d' "
                    "--x 'é e'")
    assert one_line(odd) == "/r/bad\\xffname"
    out = subprocess.run(["bash", "-c", f"printf '%s\\0' {line}"], capture_output=True,
                         check=True).stdout
    assert out.split(b"\0")[:-1] == [os.fsencode(w) for w in words]


def test_a_name_that_reads_as_an_html_tag_is_escaped_in_markdown():
    """``<x>`` in a run folder's name would be taken for a tag by a Markdown viewer and
    vanish; escaped outside code spans, left as it is inside them (a backslash would
    show there), and ``<0.001`` of an interval is no tag."""
    from ipc_bench.report.render import render_markdown

    md = render_markdown([("h", 2, "run <x>"), ("p", "see `<x>/report.md`, [<0.001, 2]"),
                          ("table", ["run"], [["<x>|y"]])])
    assert md == ("## run \\<x>\n\nsee `<x>/report.md`, [<0.001, 2]\n\n| run |\n|---|\n"
                  "| \\<x>\\|y |\n")


def test_a_backtick_in_user_text_stays_in_one_code_span():
    """A command, run folder or path with backticks is fenced by a longer run of them
    (CommonMark), a space inside where it starts or ends with one; the HTML page reads
    each such span back as one ``<code>``, and a plain name keeps single backticks."""
    from ipc_bench.report.render import code_span, render_html, render_markdown

    assert [code_span(t) for t in ("x/run", "x|*`md`", "a``b", "`q", " s ")] == [
        "`x/run`", "`` x|*`md` ``", "```a``b```", "`` `q ``", "`  s  `"]
    block = ("p", f"by {code_span('bench.py --output x|*`md`')} from {code_span('x|*`md`')}")
    assert render_markdown([block]) == \
        "by `` bench.py --output x|*`md` `` from `` x|*`md` ``\n"
    assert ("<p>by <code>bench.py --output x|*`md`</code> from <code>x|*`md`</code></p>"
            in render_html([block], "t"))
    assert "<p><code> s </code> <code>a``b</code></p>" in render_html(
        [("p", f"{code_span(' s ')} {code_span('a``b')}")], "t")


def test_a_report_of_a_run_folder_named_with_backticks(runs, capsys):
    from ipc_bench.cli.command_line import SCRIPT

    run = copy_as_another_run(runs / "x" / "run", runs / "b6" / "x|*`md`")
    out = runs / "rep-b6"
    assert cli.main(["report", str(run), "--output", str(out), "--no-figures"]) == 0
    capsys.readouterr()
    md = (out / "report.md").read_text()
    assert md.splitlines()[0] == "# ipc-bench report: decode-steady (`` x|*`md` ``)"
    # the page title shows no Markdown: the name as it is (HTML-escaped)
    assert "<title>ipc-bench report: decode-steady (x|*`md`)</title>" in (
        out / "report.html").read_text()
    line = next(ln for ln in md.splitlines() if ln.startswith("Rendered "))
    assert line.split(" by ", 1)[1] == (
        f"``cd {os.getcwd()} && python {SCRIPT} report '{run}' --output {out} --no-figures`` "
        "from run folder "
        "`` x|*`md` `` (raw data: `x_md_.summary.json` beside this file).")
    html = (out / "report.html").read_text()
    assert (f"by <code>cd {os.getcwd()} &amp;&amp; python {SCRIPT} report &#x27;{run}&#x27; "
            f"--output {out} "
            "--no-figures</code> from run folder <code>x|*`md`</code> (raw data: "
            "<code>x_md_.summary.json</code> beside this file).</p>") in html


def test_bold_marks_inside_a_code_span_stay_as_they_are_in_html():
    from ipc_bench.report.render import code_span, render_html

    page = render_html([("p", f"run {code_span('a**b**c')} and **bold**")], "t")
    assert "<p>run <code>a**b**c</code> and <strong>bold</strong></p>" in page
