"""A ``results`` beside ``bench.py`` that is a symbolic link to nothing (a scratch disk
not mounted) is refused naming the link and its target, as an ``--output`` that is
such a link is (``errors.dangling_link_text``), with the hint a refused default folder
gets, one line, exit 2; the link is left as it was and its target is not made. A chain
of links is named link by link."""
from __future__ import annotations

import os

from ipc_bench.cli import execute, run

ARGS = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "5"]


def test_a_dangling_results_link_is_named(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(execute, "REPO_ROOT", tmp_path)
    target = tmp_path / "scratch" / "r"
    (tmp_path / "results").symlink_to(target)
    code = run.main(ARGS)
    assert (code, capsys.readouterr().err) == (2, (
        f"bench.py: error: cannot create a results folder under {tmp_path / 'results'}: "
        f"it is a symbolic link to {target}, which does not exist; write it elsewhere "
        "with --output DIR\n"))
    assert os.readlink(tmp_path / "results") == str(target)
    assert not (tmp_path / "scratch").exists()


def test_a_chain_of_links_is_named_link_by_link(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(execute, "REPO_ROOT", tmp_path)
    (tmp_path / "dl1").symlink_to("missing")
    (tmp_path / "results").symlink_to("dl1")
    code = run.main(ARGS)
    assert (code, capsys.readouterr().err) == (2, (
        f"bench.py: error: cannot create a results folder under {tmp_path / 'results'}: "
        "it is a symbolic link to dl1, itself a symbolic link to missing, which does not "
        "exist; write it elsewhere with --output DIR\n"))
