"""The manual's "Adding a scenario" recipe (docs/adding-a-scenario.md), followed
literally: the module in the recipe is written into ``scenarios/`` of a copy of the repository, ``--list`` there shows it and
it runs end to end (discovered, not registered anywhere)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from manual import page

REPO = Path(__file__).resolve().parents[2]


def recipe() -> tuple[str, str]:
    """(file name, source) of the scenario module in docs/adding-a-scenario.md's recipe."""
    section = page("adding-a-scenario.md")
    name = re.search(r"`scenarios/(\w+\.py)`", section).group(1)
    source = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    return name, source


@pytest.fixture(scope="module")
def copy_with_recipe(tmp_path_factory) -> Path:
    """A copy of the repository's code with the recipe's module added."""
    root = tmp_path_factory.mktemp("repo")
    ignore = shutil.ignore_patterns("__pycache__")
    for folder in ("ipc_bench", "scenarios"):
        shutil.copytree(REPO / folder, root / folder, ignore=ignore)
    shutil.copy(REPO / "bench.py", root / "bench.py")
    name, source = recipe()
    (root / "scenarios" / name).write_text(source)  # also over a user's copy of it
    return root


def bench(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "bench.py", *args], cwd=root, capture_output=True,
                          text=True, timeout=300)


def test_new_scenario_is_listed(copy_with_recipe):
    proc = bench(copy_with_recipe, "--list")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    mine = [line for line in lines if line.split()[0] == "decode-small"]
    assert len(mine) == 1
    assert mine[0].split(None, 1)[1] == ("Steady decode at B = 2 and 8: the first docstring "
                                         "line is the --list summary.")
    assert "decode-steady" in {line.split()[0] for line in lines}  # the others still there


def test_new_scenario_runs_end_to_end(copy_with_recipe, tmp_path):
    run = tmp_path / "run"
    proc = bench(copy_with_recipe, "--scenario", "decode-small", "--num-running", "1",
                 "--steps", "20", "--warmup-steps", "5", "--codecs", "msgpack", "--no-floor",
                 "--no-single-process", "--quiet", "--output", str(run))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "complete"
    assert summary["metadata"]["scenario"] == "decode-small"
    cases = summary["cases"]
    assert [(c["scenario"], c["policy"], c["codec"]) for c in cases] == [
        ("decode-small", "send", "msgpack"), ("decode-small", "cached", "msgpack")]
    assert all(c["complete"] and c["num_steps"] >= 20 for c in cases)
    assert cases[0]["token_digest"] == cases[1]["token_digest"]
