"""The exit codes docs/remote-runners.md lists for a runner started by hand
(``bench.py runner``) are the codes its code returns, 4 (a step failed, a ``--pp``
stage whose neighbour died in the middle of a case included) among them."""

from __future__ import annotations

import re
from pathlib import Path

from ipc_bench.cli import runner as runner_cli
from ipc_bench.harness import remote_runner, runner_loop

DOC = Path(__file__).resolve().parent.parent / "docs" / "remote-runners.md"
HEAD = "- **Exit codes of a runner started by hand** (`harness.remote_runner`)"


def _listed() -> dict[int, str]:
    """Each code of the doc's list -> its first line's words."""
    lines = DOC.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(HEAD))
    out = {}
    for ln in lines[start + 1:]:
        if ln.startswith("- ") or not ln.strip():
            break
        m = re.match(r"  - (\d+): (.*)", ln)
        if m:
            out[int(m.group(1))] = m.group(2)
    return out


def test_the_docs_list_is_the_codes_of_the_code():
    codes = {
        0: runner_loop.EXIT_OK,
        1: remote_runner.EXIT_RUN_FAILED,
        2: runner_loop.EXIT_USAGE,
        3: runner_loop.EXIT_HANDSHAKE,
        4: runner_loop.EXIT_STEP_FAILED,
        5: runner_loop.EXIT_SCHEDULER_GONE,
    }
    assert list(codes) == list(codes.values())
    assert runner_cli.EXIT_USAGE == runner_loop.EXIT_USAGE
    assert {n: words.split(",")[0].split(":")[0] for n, words in _listed().items()} == {
        0: "the `Goodbye` of a run whose cases it all served cleanly.",
        1: "a `Goodbye` between cases said the run failed (`the run failed",
        2: "the scheduler cannot be reached",
        3: "a handshake refused",
        4: "a step failed on this runner",
        5: "the scheduler went away (`bench.py runner",
    }
