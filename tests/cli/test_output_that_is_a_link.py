"""An output that is itself a symbolic link to something of the wrong kind was refused
as if it were that thing: an output folder given as a link to a file read ``output path
lnk exists and is not a folder``, and an output file given as a link to a folder ``lnk:
is a directory``, hiding the link. The run, the report, microbench and the scripts now
share one sentence (``errors.output_kind_text``) that names the link as typed and where
it points, a chain of links link by link: ``output path lnk is a symbolic link to
TARGET, which is not a folder``, ``lnk is a symbolic link to TARGET, which is a
folder``; a plain file or folder keeps its words."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from ipc_bench import cli
from ipc_bench.cli.options import output_problem, writable_file, writable_folder
from ipc_bench.errors import output_kind_text
from microbench_runs import FRAME_RUN, PYPERF, finished_run
from tests.script_module import run_script

QUICK = ["--codecs", "msgpack", "--directions", "s2r", "--ops", "encode", *PYPERF]


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory, "output-that-is-a-link", FRAME_RUN)


@pytest.fixture
def links(tmp_path, monkeypatch) -> Path:
    """``data/host`` (a file), ``data/sub`` (a folder); ``lnk`` -> data/host's absolute
    path; ``hop`` -> lnk; ``dirlink`` -> data/sub; ``dirhop`` -> dirlink."""
    (tmp_path / "data" / "sub").mkdir(parents=True)
    (tmp_path / "data" / "host").write_text("x")
    os.symlink(tmp_path / "data" / "host", tmp_path / "lnk")
    os.symlink("lnk", tmp_path / "hop")
    os.symlink("data/sub", tmp_path / "dirlink")
    os.symlink("dirlink", tmp_path / "dirhop")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _folder_cases(root: Path) -> list[tuple[str, str]]:
    """(output folder, its refusal) under ``root``."""
    return [
        ("lnk", f"output path lnk is a symbolic link to {root}/data/host, which is not a "
                "folder"),
        ("hop", f"output path hop is a symbolic link to lnk, itself a symbolic link to "
                f"{root}/data/host, which is not a folder"),
        ("data/host", "output path data/host exists and is not a folder")]


def test_run_report_and_microbench_name_an_output_that_is_a_link(finished, links, capsys):
    for output, why in _folder_cases(links):
        assert cli.main(["--scenario", "decode-steady", "--output", output]) == 2
        assert capsys.readouterr() == ("", f"bench.py: error: {why}\n")
        assert cli.main(["report", str(finished), "--no-figures", "--output", output]) == 2
        assert capsys.readouterr() == ("", f"bench.py report: error: {why}\n")
        assert cli.main(["microbench", str(finished), "--output", output, *QUICK]) == 2
        assert capsys.readouterr() == ("", f"bench.py microbench: error: {why}\n")
    assert sorted(os.listdir(links)) == ["data", "dirhop", "dirlink", "hop", "lnk"]
    assert sorted(os.listdir(links / "data")) == ["host", "sub"]
    assert (links / "data" / "host").read_text() == "x"
    assert os.listdir(links / "data" / "sub") == []


def test_a_script_s_output_folder_and_file(links):
    for output, why in _folder_cases(links):
        with pytest.raises(argparse.ArgumentTypeError) as info:
            writable_folder(output)
        assert str(info.value) == why
    files = [("dirlink", "dirlink is a symbolic link to data/sub, which is a folder"),
             ("dirhop", "dirhop is a symbolic link to dirlink, itself a symbolic link to "
                        "data/sub, which is a folder")]
    for output, why in files:
        with pytest.raises(argparse.ArgumentTypeError) as info:
            writable_file(output)
        assert str(info.value) == why
        assert output_problem(output) == why  # pyperf's -o, --figure: read whole
    with pytest.raises(argparse.ArgumentTypeError) as info:
        writable_file("data/sub")
    assert str(info.value) == "data/sub: is a directory"
    assert output_problem("data/sub") == "cannot write data/sub: is a directory"


def test_the_shared_words(links):
    assert output_kind_text(Path("lnk"), "./lnk") == (
        f"output path ./lnk is a symbolic link to {links}/data/host, which is not a folder")
    assert output_kind_text(Path("dirlink")) is None  # a link to a folder is followed
    assert output_kind_text(Path("lnk"), folder=False) is None
    assert output_kind_text(Path("missing")) is None
    assert output_kind_text(Path("/dev/null")) == ("output path /dev/null exists and is "
                                                   "not a folder")


def test_scripts_say_it_on_one_line(links):
    proc = run_script("gpu_check", "--output", str(links / "hop"))
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", f"gpu_check.py: error: argument --output: output path {links}/hop is a "
               f"symbolic link to lnk, itself a symbolic link to {links}/data/host, which "
               "is not a folder\n")
    proc = run_script("byte_sweep", "--json", str(links / "dirhop"))
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", f"byte_sweep.py: error: argument --json: {links}/dirhop is a symbolic link "
               "to dirlink, itself a symbolic link to data/sub, which is a folder\n")


def test_a_target_with_a_line_break_stays_on_one_line(links, capsys):
    (links / "data" / "a\nb").write_text("x")
    os.symlink("data/a\nb", links / "odd")
    assert cli.main(["--scenario", "decode-steady", "--output", "odd"]) == 2
    assert capsys.readouterr() == (
        "", "bench.py: error: output path odd is a symbolic link to data/a\\nb, which is "
            "not a folder\n")
