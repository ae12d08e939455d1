"""The exit codes docs/remote-runners.md lists for a runner started by hand
(``bench.py runner``) are the codes its code returns, 4 (a step failed, a ``--pp``
stage whose neighbour died in the middle of a case included) among them, and 130 / 143 /
129, the runner interrupted by SIGINT / SIGTERM / SIGHUP; its 5 says the runner's
timeout waiting for the scheduler in a case, in the line the runner leaves on."""

from __future__ import annotations

import re
import signal
from pathlib import Path

from ipc_bench.cli import runner as runner_cli
from ipc_bench.harness import remote_runner, runner_loop
from ipc_bench.harness.signals import Interrupted
from ipc_bench.wire.transport import PeerTimeout

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
        m = re.match(r"  - (\d+(?: / \d+)*): (.*)", ln)
        if m:
            out.update((int(code), m.group(2)) for code in m.group(1).split(" / "))
    return out


def _item(code: int) -> str:
    """The doc's item of ``code``, its lines joined by one space."""
    lines = DOC.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(HEAD))
    items, current = [], None
    for ln in lines[start + 1:]:
        if ln.startswith("- ") or not ln.strip():
            break
        if ln.startswith("  - "):
            current = [ln[4:]]
            items.append(current)
        elif current is not None:
            current.append(ln.strip())
    return next(" ".join(i) for i in items
                if re.match(rf"(\d+ / )*{code}( / \d+)*: ", i[0]))


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
        130: "the runner was interrupted by SIGINT / SIGTERM / SIGHUP (Ctrl-C",
        143: "the runner was interrupted by SIGINT / SIGTERM / SIGHUP (Ctrl-C",
        129: "the runner was interrupted by SIGINT / SIGTERM / SIGHUP (Ctrl-C",
    }


def test_the_interrupt_codes_are_128_and_the_signals():
    codes = [Interrupted(128 + s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)]
    assert [(e.code, e.signal_name) for e in codes] == [
        (130, "SIGINT"), (143, "SIGTERM"), (129, "SIGHUP")]
    assert codes[0].line("bench.py runner") == "bench.py runner: interrupted by SIGINT (exit 130)"
    assert "(`bench.py runner: interrupted by SIGINT (exit 130)`;" in _item(130)


def test_exit_5_names_the_timeout_waiting_for_the_scheduler():
    line = runner_loop.peer_line(PeerTimeout("no SchedulerOutput for step 7 within 10 s"), 7)
    assert line == "no SchedulerOutput for step 7 within 10 s (raise --peer-timeout)"
    assert runner_loop.peer_line(PeerTimeout("no SchedulerOutput for step 0 within 120 s"),
                                 0).endswith("(raise --startup-timeout)")
    assert (f"(`harness.runner_loop.peer_line`: `bench.py runner: {line}`)"
            ) in _item(5)
    assert ("the runner timed out waiting for the scheduler in the middle of a case, the "
            "scheduler's `--startup-timeout` for step 0 (its `--peer-timeout` where that "
            "is longer) and its `--peer-timeout` after") in _item(5)
