"""Packaging: every package is installed, and ``scenarios/`` installs as
``ipc_bench.scenarios``, never as a top-level ``scenarios`` package."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_pyproject_lists_every_package():
    tomllib = pytest.importorskip("tomllib")
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    tree = {".".join(p.parent.relative_to(REPO).parts)
            for p in (REPO / "ipc_bench").rglob("__init__.py")}
    assert sorted(setuptools["packages"]) == sorted(tree | {"ipc_bench.scenarios"})
    assert setuptools["package-dir"] == {"ipc_bench.scenarios": "scenarios"}


def test_non_editable_install(tmp_path):
    # found, not imported: setuptools' import swaps in its own distutils and asserts
    # where a test before it in this worker imported the standard library's
    if importlib.util.find_spec("setuptools") is None:
        pytest.skip("setuptools is not installed: pip cannot build the project")
    source = tmp_path / "source"  # a build writes build/ and *.egg-info beside the sources
    for name in ("ipc_bench", "scenarios"):
        shutil.copytree(REPO / name, source / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    target = tmp_path / "site"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", str(target), str(source)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    if build.returncode != 0:
        pytest.skip(f"pip could not build the project here: {build.stderr.strip()[-300:]}")
    assert sorted(p.name for p in target.iterdir() if not p.name.endswith(".dist-info")) \
        == ["ipc_bench"]
    installed = {p.stem for p in (target / "ipc_bench" / "scenarios").glob("*.py")}
    assert installed == {p.stem for p in (REPO / "scenarios").glob("*.py")}
    assert (target / "ipc_bench" / "engine" / "gpu_figures.json").read_bytes() == (
        REPO / "ipc_bench" / "engine" / "gpu_figures.json").read_bytes()
    # From outside the checkout, with the installed copy first on the path.
    code = ("import sys; from ipc_bench.cli import main; code = main(['--list']); "
            "print(sys.modules['ipc_bench.scenarios'].__file__); sys.exit(code)")
    env = dict(os.environ, PYTHONPATH=str(target))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    *listing, package = proc.stdout.splitlines()
    assert package == str(target / "ipc_bench" / "scenarios" / "__init__.py")
    assert "decode-steady" in {line.split()[0] for line in listing}
