"""An output path that is a chain of links ending at nothing (``dl2 -> dl1 ->
missing``): the refusal names each link up to the missing end. It read ``a symbolic
link to dl1, which does not exist``, though dl1 exists (a dangling link itself)."""

from __future__ import annotations

import argparse
import os

import pytest

from ipc_bench import cli
from ipc_bench.cli.options import writable_file
from ipc_bench.errors import broken_link_text


@pytest.fixture
def chain(tmp_path, monkeypatch):
    os.symlink("missing", tmp_path / "dl1")
    os.symlink("dl1", tmp_path / "dl2")
    os.symlink(tmp_path / "dl2", tmp_path / "dl3")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_run_names_each_link_of_the_chain(chain, capsys):
    assert cli.main(["--scenario", "decode-steady", "--output", "dl2"]) == 2
    assert capsys.readouterr() == ("", "bench.py: error: output folder dl2 is a symbolic "
                                       "link to dl1, itself a symbolic link to missing, "
                                       "which does not exist\n")
    assert cli.main(["--scenario", "decode-steady", "--output", "dl3/sub"]) == 2
    assert capsys.readouterr() == ("", f"bench.py: error: cannot write results to dl3/sub: "
                                       f"dl3 is a symbolic link to {chain}/dl2, itself a "
                                       "symbolic link to dl1, itself a symbolic link to "
                                       "missing, which does not exist\n")
    assert sorted(os.listdir(chain)) == ["dl1", "dl2", "dl3"]


def test_one_link_still_reads_as_before(chain):
    assert broken_link_text(chain / "dl1", "results") == (
        f"output folder {chain}/dl1 is a symbolic link to missing, which does not exist")


def test_an_output_file_names_the_chain_too(chain):
    with pytest.raises(argparse.ArgumentTypeError) as err:
        writable_file("dl2")
    assert str(err.value) == ("dl2 is a symbolic link to dl1, itself a symbolic link to "
                              "missing, which does not exist")
    assert sorted(os.listdir(chain)) == ["dl1", "dl2", "dl3"]


def test_the_report_names_each_link_of_the_chain(chain, capsys):
    assert cli.main(["--scenario", "decode-steady", "--num-running", "4", "--steps", "10",
                     "--warmup-steps", "2", "--quiet", "--output", "run"]) == 0
    capsys.readouterr()
    assert cli.main(["report", "run", "--no-figures", "--output", "dl2/sub"]) == 2
    assert capsys.readouterr() == ("", "bench.py report: error: cannot write the report to "
                                       "dl2/sub: dl2 is a symbolic link to dl1, itself a "
                                       "symbolic link to missing, which does not exist\n")
