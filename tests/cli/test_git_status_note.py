"""A run whose ``git status`` child is killed or fails goes on: exit 0, ``metadata.git``
without ``dirty`` and ``untracked``, and a note, printed and in ``metadata.notes``,
saying why."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from ipc_bench import cli
from ipc_bench.harness import environment

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")

NOTE = "git status failed (killed by SIGKILL): whether the checkout had changes is unknown"


def _git(root, *args: str) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    clean.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
                 GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com",
                 GIT_CONFIG_NOSYSTEM="1", HOME=str(root))
    subprocess.run(["git", *args], cwd=root, env=clean, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_a_killed_git_status_is_a_note_of_the_run(tmp_path, monkeypatch, capsys):
    root = tmp_path / "checkout"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    (root / "code.py").write_text("x = 1\n")
    _git(root, "add", "code.py")
    _git(root, "commit", "-q", "-m", "init")
    monkeypatch.setattr(environment, "_repo_root", lambda: root)
    # a git that kills itself for `status` and is the real one otherwise
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "git").write_text(
        f'#!/bin/sh\nfor a in "$@"; do [ "$a" = status ] && kill -s KILL $$; done\n'
        f'exec {shutil.which("git")} "$@"\n')
    (folder / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    run = tmp_path / "run"
    code = cli.main(["--scenario", "decode-steady", "--num-running", "2", "--steps", "5",
                     "--policies", "cached", "--codecs", "msgpack", "--no-single-process",
                     "--no-floor", "--output", str(run)])
    out, err = capsys.readouterr()
    assert code == 0, err
    md = json.loads((run / "summary.json").read_text())["metadata"]
    assert set(md["git"]) == {"commit", "branch"}
    assert md["notes"][-1] == NOTE
    assert md["notes"].count(NOTE) == 1
    lines = err.splitlines()  # the run's first line and its notes go to stderr
    assert lines[0] == f"ipc-bench: decode-steady, 1 case -> {run}"
    assert lines[1:1 + len(md["notes"])] == [f"note: {n}" for n in md["notes"]]
