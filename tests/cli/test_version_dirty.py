"""``bench.py --version`` says ``, dirty`` after the commit where a tracked file of the
checkout differs from it, as a run's metadata records ``dirty`` and a report writes
``(dirty)``; an untracked file leaves the line as it is (it does not make a run dirty)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def checkout(tmp_path):
    """A checkout of HEAD's ipc_bench package and bench.py, committed in a fresh
    repository (so that the test does not depend on this tree's state)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    for name in ("bench.py", "pyproject.toml", ".gitignore"):
        (repo / name).write_bytes((ROOT / name).read_bytes())
    subprocess.run(["cp", "-r", str(ROOT / "ipc_bench"), str(repo / "ipc_bench")],
                   check=True)
    _git(repo, "add", "bench.py", "pyproject.toml", ".gitignore", "ipc_bench")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c")
    return repo


def _version(repo: Path) -> str:
    proc = subprocess.run([sys.executable, "-c",
                           "from ipc_bench.cli.options import version_line; "
                           "print(version_line())"],
                          cwd=repo, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(repo)})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_clean_then_dirty_then_untracked_only(checkout):
    commit = _git(checkout, "rev-parse", "HEAD")[:12]
    version = _version(checkout).split(" (")[0]
    assert _version(checkout) == f"{version} (commit {commit})"
    (checkout / "bench.py").write_text((checkout / "bench.py").read_text() + "\n# edit\n")
    assert _version(checkout) == f"{version} (commit {commit}, dirty)"
    _git(checkout, "checkout", "--", "bench.py")
    (checkout / "notes.txt").write_text("untracked\n")
    assert _version(checkout) == f"{version} (commit {commit})"
