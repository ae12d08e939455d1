"""An output under a symbolic link to a file (``lnk/run``, ``lnk`` -> a file) was refused
as ``cannot write results to lnk/run: lnk is not a folder``: the link, as typed, read as
if it were the file, and where it pointed was not said. The run, the report, microbench
and the scripts' outputs now name the link as typed and what it points to, a chain of
links link by link, in one line: ``lnk is a symbolic link to TARGET, which is not a
folder``; a file above the output still reads ``FILE is not a folder``."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from ipc_bench import cli
from ipc_bench.cli.options import output_problem, writable_file, writable_folder
from microbench_runs import FRAME_RUN, PYPERF, finished_run
from tests.script_module import run_script

QUICK = ["--codecs", "msgpack", "--directions", "s2r", "--ops", "encode", *PYPERF]


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory, "under-a-link-to-a-file", FRAME_RUN)


@pytest.fixture
def links(tmp_path, monkeypatch) -> Path:
    """``data/host`` (a file); ``lnk`` -> its absolute path; ``hop`` -> lnk; ``rel`` ->
    data/host; ``dirlink`` -> data (a folder, followed)."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "host").write_text("x")
    os.symlink(tmp_path / "data" / "host", tmp_path / "lnk")
    os.symlink("lnk", tmp_path / "hop")
    os.symlink("data/host", tmp_path / "rel")
    os.symlink("data", tmp_path / "dirlink")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _cases(root: Path) -> list[tuple[str, str]]:
    """(output, the words after ``cannot write ... to OUTPUT: ``) under ``root``."""
    return [
        (f"{root}/lnk/run", f"{root}/lnk is a symbolic link to {root}/data/host, which is "
                            "not a folder"),
        ("lnk/a/b/run", f"lnk is a symbolic link to {root}/data/host, which is not a folder"),
        ("hop/run", f"hop is a symbolic link to lnk, itself a symbolic link to "
                    f"{root}/data/host, which is not a folder"),
        ("rel/run", "rel is a symbolic link to data/host, which is not a folder"),
        # a link to a folder is followed: the file in it is named as reached
        ("dirlink/host/run", "dirlink/host is not a folder")]


def test_run_report_and_microbench_name_the_link_and_its_target(finished, links, capsys):
    for output, why in _cases(links):
        assert cli.main(["--scenario", "decode-steady", "--output", output]) == 2
        assert capsys.readouterr() == (
            "", f"bench.py: error: cannot write results to {output}: {why}\n")
        assert cli.main(["report", str(finished), "--no-figures", "--output", output]) == 2
        assert capsys.readouterr() == (
            "", f"bench.py report: error: cannot write the report to {output}: {why}\n")
        assert cli.main(["microbench", str(finished), "--output", output, *QUICK]) == 2
        assert capsys.readouterr() == (
            "", f"bench.py microbench: error: cannot write the pyperf files to {output}: "
                f"{why}\n")
    assert sorted(os.listdir(links)) == ["data", "dirlink", "hop", "lnk", "rel"]
    assert os.listdir(links / "data") == ["host"]
    assert (links / "data" / "host").read_text() == "x"


def test_a_script_s_output_file_and_folder(links):
    for output, why in _cases(links):
        with pytest.raises(argparse.ArgumentTypeError) as info:
            writable_folder(output)
        assert str(info.value) == f"cannot write results to {output}: {why}"
        with pytest.raises(argparse.ArgumentTypeError) as info:
            writable_file(f"{output}.json")
        assert str(info.value) == f"cannot write {output}.json: {why}"
        assert output_problem(f"{output}.json") == f"cannot write {output}.json: {why}"


def test_a_script_says_it_on_one_line(links):
    proc = run_script("byte_sweep", "--json", str(links / "hop" / "x.json"))
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", f"byte_sweep.py: error: argument --json: cannot write {links}/hop/x.json: "
               f"{links}/hop is a symbolic link to lnk, itself a symbolic link to "
               f"{links}/data/host, which is not a folder\n")


def test_a_target_with_a_line_break_stays_on_one_line(links, capsys):
    (links / "data" / "a\nb").write_text("x")
    os.symlink("data/a\nb", links / "odd")
    assert cli.main(["--scenario", "decode-steady", "--output", "odd/run"]) == 2
    assert capsys.readouterr() == (
        "", "bench.py: error: cannot write results to odd/run: odd is a symbolic link to "
            "data/a\\nb, which is not a folder\n")
