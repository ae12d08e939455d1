"""A run folder named in any script keeps its letters and digits in the file names of
its report (``names.file_slug``): ``ü日本 x`` gives ``ü日本_x.summary.json``, not
``x.summary.json``; runs named ``日本`` and ``ü`` give ``日本.summary.json`` and
``ü.summary.json``, not ``run.summary.json`` and ``run-2.summary.json``. What is unsafe
in a file name or a Markdown link target is still replaced."""

from __future__ import annotations

import os
import re
import shutil
import unicodedata

import pytest

from analysis_run import copy_as_another_run, shared_run
from ipc_bench import cli


def test_letters_and_digits_of_any_script_are_kept():
    from ipc_bench.report.names import file_slug, file_slugs

    names = ("ü日本 x", "日本", "ü", "हिन्दी", "Ⅻ²", "x/run")
    assert [file_slug(t) for t in names] == ["ü日本_x", "日本", "ü", "हिन्दी", "Ⅻ²", "x_run"]
    # a letter written with its accent apart is one letter, as written together
    assert file_slug("u\u0308ber") == "über"
    # separators, spaces, brackets, control and format characters, undecodable bytes
    assert [file_slug(t) for t in ("a\\b", "a (b) [c]", "a\tb\x00c", "\u202eevil",
                                   os.fsdecode(b"tr\xff"), "a\u3000b", "\u0301x")] == [
        "a_b", "a_b_c_", "a_b_c", "_evil", "tr_", "a_b", "_x"]
    assert file_slug("/ \u200b") == "_"
    assert file_slugs(["日本", "ü", "日本/ü", "日本_ü"]) == {
        "日本": "日本", "ü": "ü", "日本/ü": "日本_ü", "日本_ü": "日本_ü-2"}


def test_a_long_name_is_cut_to_whole_characters():
    from ipc_bench.report.names import file_slug, file_slugs

    assert file_slug("日" * 85) == "日" * 74  # 222 bytes of UTF-8, 225 would cut one
    assert file_slug("a" * 300) == "a" * 224
    assert file_slug("a" * 223 + "_b") == "a" * 223 + "_"
    assert file_slugs(["日" * 85, "日" * 80 + "x"]) == {
        "日" * 85: "日" * 74, "日" * 80 + "x": "日" * 74 + "-2"}


def test_ascii_names_are_unchanged():
    from ipc_bench.report.names import file_slug

    # but one that would start with a dot, hidden: _ before it (test_hidden_run_name)
    assert [file_slug(t) for t in ("x run", "a_ b", "_a.b-c_", "..", "", "A(1)")] == [
        "x_run", "a__b", "_a.b-c_", "_..", "run", "A_1_"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One small run (a copy of the session's, ``shared_run``) copied as ``ü日本 x``,
    ``日本`` and ``ü``."""
    base = tmp_path_factory.mktemp("names")
    shutil.copytree(shared_run(tmp_path_factory, [
        "--scenario", "decode-steady", "--num-running", "4", "--steps", "30",
        "--warmup-steps", "5", "--codecs", "msgpack", "--no-floor", "--no-single-process"]),
        base / "first")
    for i, name in enumerate(("ü日本 x", "日本", "ü"), 1):
        copy_as_another_run(base / "first", base / name, seconds=30.0 * i)
    return base


def _summaries(folder):
    return sorted(unicodedata.normalize("NFC", n) for n in os.listdir(folder)
                  if n.endswith(".summary.json"))


def test_one_run_keeps_its_name(runs, capsys):
    assert cli.main(["report", str(runs / "ü日本 x"), "--no-figures"]) == 0
    out = runs / "ü日本 x" / "report"
    assert capsys.readouterr() == (f"report: {out / 'report.html'}\n", "")
    assert _summaries(out) == ["ü日本_x.summary.json"]
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "(raw data: `ü日本_x.summary.json` beside this file)." in md
    assert (out / "ü日本_x.summary.json").read_bytes() == \
        (runs / "ü日本 x" / "summary.json").read_bytes()


def test_a_run_whose_name_takes_255_bytes_is_reported(runs, capsys):
    """85 CJK characters, 255 bytes of UTF-8: its copy is ``日 x 74.summary.json``
    (235 bytes), not a name too long to write."""
    long = copy_as_another_run(runs / "first", runs / ("日" * 85), seconds=300.0)
    out = runs / "long"
    assert cli.main(["report", str(long), str(runs / "ü"), "--output", str(out)]) == 0
    capsys.readouterr()
    assert _summaries(out) == ["ü.summary.json", "日" * 74 + ".summary.json"]
    md = (out / "report.md").read_text(encoding="utf-8")
    assert f"![Bytes per step]({'日' * 74}-bytes_per_step.png)" in md


def test_runs_named_in_other_scripts_keep_their_names(runs, capsys):
    out = runs / "rep"
    assert cli.main(["report", str(runs / "日本"), str(runs / "ü"), str(runs / "ü日本 x"),
                     "--output", str(out)]) == 0
    assert capsys.readouterr() == (f"report: {out / 'report.html'}\n", "")
    assert _summaries(out) == ["ü.summary.json", "ü日本_x.summary.json", "日本.summary.json"]
    md = (out / "report.md").read_text(encoding="utf-8")
    # each run's figures are linked by their names, and each link names a file written
    links = re.findall(r"!\[[^\]]*\]\(([^)]*)\)", md)
    per_run = [ln for ln in links if ln.endswith("-bytes_per_step.png")]
    assert per_run == ["日本-bytes_per_step.png", "ü-bytes_per_step.png",
                       "ü日本_x-bytes_per_step.png"]
    assert links and all((out / name).is_file() for name in links)
    # a report written again over it knows its figures: none is left behind or doubled
    assert cli.main(["report", str(runs / "日本"), str(runs / "ü"), str(runs / "ü日本 x"),
                     "--output", str(out)]) == 0
    capsys.readouterr()
    assert sorted(n for n in os.listdir(out) if n.endswith(".png")) == sorted(links)
