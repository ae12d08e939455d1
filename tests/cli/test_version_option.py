"""``bench.py --version``: one line on stdout, ``bench.py VERSION (commit 12-HEX)``
(``, dirty`` after the commit where a tracked file differs from it), the installed
package's version (pyproject.toml's where it is not installed) and the checkout's
commit, exit 0, unwrapped whatever the terminal's width."""
from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from ipc_bench.cli import main as cli_main
from ipc_bench.cli import options
from ipc_bench.harness import environment

ROOT = Path(__file__).resolve().parents[2]


def _head() -> str:
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()


def _commit_text() -> str:
    """What the line gives in its parentheses for this checkout as it is now."""
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain",
                            "--untracked-files=no"], check=True, capture_output=True,
                           text=True).stdout.strip()
    return f"commit {_head()[:12]}" + (", dirty" if dirty else "")


def test_bench_py_version_prints_one_line_and_exits_0():
    env = dict(os.environ, COLUMNS="20")  # argparse's own would wrap the line here
    proc = subprocess.run([sys.executable, str(ROOT / "bench.py"), "--version"],
                          capture_output=True, text=True, env=env, timeout=120)
    version = importlib.metadata.version("ipc-bench")
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        0, f"bench.py {version} ({_commit_text()})\n", "")


def test_main_returns_0_after_the_line(capsys):
    assert cli_main(["--version"]) == 0
    out, err = capsys.readouterr()
    assert (out, err) == (f"bench.py {options.package_version()} ({_commit_text()})\n",
                          "")


def test_the_version_falls_back_to_pyproject_when_not_installed(monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(options.importlib.metadata, "version", missing)
    with open(ROOT / "pyproject.toml", "rb") as f:
        declared = tomllib.load(f)["project"]["version"]
    assert options.package_version() == declared == "0.1.0"


def test_outside_a_checkout_the_line_ends_after_the_version(monkeypatch):
    monkeypatch.setattr(environment, "_repo_root", lambda: None)
    monkeypatch.setattr(options, "package_version", lambda: "0.1.0")
    assert options.version_line() == "bench.py 0.1.0"


def test_the_commit_is_the_one_a_run_records():
    assert environment.checkout_commit() == environment._git_info()["commit"] == _head()
