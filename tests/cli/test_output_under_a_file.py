"""An output under a file (``afile/sub``, or ``tofile/sub`` where ``tofile`` is a link
to a file) is refused in one sentence by the run, the report and microbench (``cannot
write results to afile/sub: afile is not a folder``, ``... tofile is a symbolic link to
afile, which is not a folder``; ``the report``, ``the pyperf files``), where they read
three ways (``cannot write results to X: Not a directory``, ``cannot write X: ...``,
``cannot write to X: ...``). A script's output file under a
link that cannot be followed, or under a file, is refused in the run's sentence
(``cannot write dl2/x.json: dl2 is a symbolic link to dl1, ...``), where it read the
system's bare reason (``dl2/x.json: No such file or directory``)."""

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
    return finished_run(tmp_path_factory, "under-a-file", FRAME_RUN)


@pytest.fixture
def links(tmp_path, monkeypatch) -> Path:
    """``afile``; ``tofile`` -> afile; ``dl2`` -> dl1 -> missing; ``loop`` -> loop."""
    (tmp_path / "afile").write_text("x")
    os.symlink("afile", tmp_path / "tofile")
    os.symlink("missing", tmp_path / "dl1")
    os.symlink("dl1", tmp_path / "dl2")
    os.symlink("loop", tmp_path / "loop")
    monkeypatch.chdir(tmp_path)
    return tmp_path


NAMES = ["afile", "dl1", "dl2", "loop", "tofile"]


TOFILE = "tofile is a symbolic link to afile, which is not a folder"


@pytest.mark.parametrize("output, above", [("tofile/sub", TOFILE),
                                           ("afile/sub/deeper", "afile is not a folder")])
def test_run_report_and_microbench_say_it_in_one_sentence(output, above, finished, links,
                                                          capsys):
    assert cli.main(["--scenario", "decode-steady", "--output", output]) == 2
    assert capsys.readouterr() == (
        "", f"bench.py: error: cannot write results to {output}: {above}\n")
    assert cli.main(["report", str(finished), "--no-figures", "--output", output]) == 2
    assert capsys.readouterr() == (
        "", f"bench.py report: error: cannot write the report to {output}: {above}\n")
    assert cli.main(["microbench", str(finished), "--output", output, *QUICK]) == 2
    assert capsys.readouterr() == (
        "", f"bench.py microbench: error: cannot write the pyperf files to {output}: "
            f"{above}\n")
    assert sorted(os.listdir(links)) == NAMES
    assert (links / "afile").read_text() == "x"


CHAIN = "dl2 is a symbolic link to dl1, itself a symbolic link to missing, which does not exist"
LOOP = "loop is a symbolic link to loop, which cannot be followed (Too many levels of " \
       "symbolic links)"


@pytest.mark.parametrize("path, why", [
    ("dl2/x.json", CHAIN), ("loop/x.json", LOOP), ("tofile/x.json", TOFILE),
    ("afile/a/x.json", "afile is not a folder"),
])
def test_an_output_file_under_them_reads_the_run_s_sentence(path, why, links):
    with pytest.raises(argparse.ArgumentTypeError) as info:
        writable_file(path)
    assert str(info.value) == f"cannot write {path}: {why}"
    assert output_problem(path) == f"cannot write {path}: {why}"  # pyperf's -o, --figure
    assert output_problem("dl1") == ("dl1 is a symbolic link to missing, which does not "
                                     "exist")
    assert output_problem("/proc/x.json") == ("cannot write /proc/x.json: No such file or "
                                              "directory")
    assert sorted(os.listdir(links)) == NAMES


@pytest.mark.parametrize("path, message", [
    ("dl2/sub", f"cannot write results to dl2/sub: {CHAIN}"),
    ("tofile/sub", f"cannot write results to tofile/sub: {TOFILE}"),
    ("afile", "output path afile exists and is not a folder"),
])
def test_a_script_s_output_folder_reads_the_run_s_sentence(path, message, links):
    with pytest.raises(argparse.ArgumentTypeError) as info:
        writable_folder(path)
    assert str(info.value) == message


def test_a_script_s_json_under_a_dangling_link(links):
    proc = run_script("byte_sweep", "--json", str(links / "dl2" / "x.json"))
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", f"byte_sweep.py: error: argument --json: cannot write {links}/dl2/x.json: "
               f"{links}/dl2 is a symbolic link to dl1, itself a symbolic link to missing, "
               "which does not exist\n")
