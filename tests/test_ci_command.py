"""README's test command is the one ``.ci/run`` runs, and the default run leaves out
exactly the tests marked slow, which that command runs with it (``-m ''``)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _readme_block_after(heading: str) -> str:
    text = (REPO / "README.md").read_text()
    start = text.index(heading)
    return re.search(r"```bash\n(.*?)\n```", text[start:], re.S).group(1)


def test_readme_gives_the_ci_test_command():
    readme = _readme_block_after("Run the tests (the same command CI runs")
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    (command,) = [line for line in ci if "pytest" in line and not line.startswith("#")]
    # README shows pip's progress (.ci/run's -q keeps CI's log short)
    assert readme == ("python3 -m venv .venv && . .venv/bin/activate && "
                      + command.replace("pip install -q ", "pip install "))
    assert command.endswith("python -m pytest -n 3 -m ''")  # the slow tests too


def test_the_default_run_leaves_out_the_slow_tests_only():
    toml = (REPO / "pyproject.toml").read_text()
    (addopts,) = re.findall(r"^addopts = (.*)$", toml, re.M)
    assert addopts == "\"-ra --durations=25 -m 'not slow' --dist loadfile\""
    assert re.findall(r'^    "(\w+): ', toml, re.M) == ["slow"]  # the only marker
