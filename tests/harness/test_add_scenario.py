"""The manual's "Adding a scenario" recipes (docs/adding-a-scenario.md), followed
literally: the modules in the recipes (decode-small, and decode-mix of "Changing the
request mix") are written into ``scenarios/`` of a copy of the repository, ``--list``
there shows them and they run end to end (discovered, not registered anywhere)."""

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


def recipes() -> dict[str, str]:
    """File name -> source of each scenario module in docs/adding-a-scenario.md's
    recipes (``Write `scenarios/NAME.py`:`` and the Python block after it)."""
    return dict(re.findall(r"Write\s+`scenarios/(\w+\.py)`:\s*```python\n(.*?)```",
                           page("adding-a-scenario.md"), re.S))


def test_the_manual_has_both_recipes():
    assert sorted(recipes()) == ["decode_mix.py", "decode_small.py"]


@pytest.fixture(scope="module")
def copy_with_recipe(tmp_path_factory) -> Path:
    """A copy of the repository's code with the recipe's module added."""
    root = tmp_path_factory.mktemp("repo")
    ignore = shutil.ignore_patterns("__pycache__")
    for folder in ("ipc_bench", "scenarios"):
        shutil.copytree(REPO / folder, root / folder, ignore=ignore)
    shutil.copy(REPO / "bench.py", root / "bench.py")
    for name, source in recipes().items():
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
    mix = [line.split(None, 1)[1] for line in lines if line.split()[0] == "decode-mix"]
    assert mix == ["Steady decode of short outputs: 16 to 64 tokens, so requests finish "
                   "every few steps."]
    assert proc.stderr == ""  # no module left out
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


def test_the_request_mix_recipe_counts_every_step_within_its_own_cap(copy_with_recipe,
                                                                      tmp_path):
    """decode-mix at --steps 300, B = 8: outputs of 16 to 64 tokens finish a request
    every few steps; the cap sized from those lengths (548, where the default outputs
    give 420) lets the case count all 300 steps, and the summary records their mean."""
    run = tmp_path / "run"
    proc = bench(copy_with_recipe, "--scenario", "decode-mix", "--steps", "300",
                 "--codecs", "msgpack", "--policies", "cached", "--no-floor",
                 "--no-single-process", "--quiet", "--output", str(run))
    assert proc.returncode == 0, proc.stderr
    (case,) = json.loads((run / "summary.json").read_text())["cases"]
    assert (case["num_running"], case["num_steps"], case["max_steps"],
            case["output_len_mean"]) == (8, 300, 548, 40.0)
    assert case["num_finished"] > 50  # short outputs: many replaced
    assert not [w for w in case["warnings"] if "asked for" in w]
