"""``bench.py microbench RUN --output LINK`` where LINK, or a folder on the way to it,
is a symbolic link to nothing (or a loop of links): refused before anything is timed
in the words of a run's and a report's ``--output`` (``errors.broken_link_text``),
exit 2, nothing made. It read ``cannot write to LINK: No such file or directory``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ipc_bench import cli
from microbench_runs import ERROR, FRAME_RUN, PYPERF, finished_run

QUICK = ["--codecs", "msgpack", "--directions", "s2r", "--ops", "encode", *PYPERF]


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory, "dangling-output", FRAME_RUN)


@pytest.mark.parametrize("output, message", [
    ("dl1", "output folder dl1 is a symbolic link to missing, which does not exist"),
    ("dl2/sub", "cannot write the pyperf files to dl2/sub: dl2 is a symbolic link to dl1, "
                "itself a symbolic link to missing, which does not exist"),
    ("loop", "output folder loop is a symbolic link to loop, which cannot be followed "
             "(Too many levels of symbolic links)"),
])
def test_a_dangling_output_link_is_refused_in_the_run_s_words(output, message, finished,
                                                              tmp_path, monkeypatch,
                                                              capsys):
    os.symlink("missing", tmp_path / "dl1")
    os.symlink("dl1", tmp_path / "dl2")
    os.symlink("loop", tmp_path / "loop")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["microbench", str(finished), "--output", output, *QUICK]) == 2
    assert capsys.readouterr() == ("", f"{ERROR}{message}\n")
    assert sorted(os.listdir(tmp_path)) == ["dl1", "dl2", "loop"]
    assert cli.main(["--scenario", "decode-steady", "--output", output]) == 2
    run_words = message.replace("the pyperf files", "results")
    assert capsys.readouterr() == ("", f"bench.py: error: {run_words}\n")
