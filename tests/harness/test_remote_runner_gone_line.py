"""A runner started by hand whose scheduler goes away says so in one shape wherever it
waits: ``bench.py runner: the scheduler at tcp://... closed the connection, noticed
while ...`` (no ``error:``, as docs/remote-runners.md shows it), exit 5."""

from __future__ import annotations

import zmq

from ipc_bench.harness.remote_runner import PREFIX, _serve_cases
from ipc_bench.harness.runner_loop import EXIT_SCHEDULER_GONE, say, scheduler_gone, speak_as

GONE = "the scheduler at tcp://127.0.0.1:6450 closed the connection"


class _Socks:
    """The control socket of ``_serve_cases``: a DEALER that nothing ever answers."""

    def __init__(self, ctx: zmq.Context):
        self.ctl = ctx.socket(zmq.DEALER)
        self.ctl.setsockopt(zmq.RCVTIMEO, 10)

    def close_data(self) -> None:
        pass


def test_between_cases_the_line_has_no_error_word(capsys):
    ctx = zmq.Context()
    socks = _Socks(ctx)
    before = speak_as(PREFIX)
    try:
        code = _serve_cases(socks, lambda: GONE, lambda c: c)
    finally:
        speak_as(before)
        socks.ctl.close(linger=0)
        ctx.term()
    assert (code, capsys.readouterr().err.splitlines()) == (5, [
        "bench.py runner: the scheduler at tcp://127.0.0.1:6450 closed the connection, "
        "noticed while waiting for the next case or the end of the run"])


def test_scheduler_gone_says_the_line_and_returns_5(capsys):
    before = speak_as(PREFIX)
    try:
        code = scheduler_gone(f"{GONE}, noticed while joining the stages' store at "
                              f"tcp://127.0.0.1:6454")
        say("next")
    finally:
        speak_as(before)
    assert (code, EXIT_SCHEDULER_GONE) == (5, 5)
    assert capsys.readouterr().err.splitlines() == [
        "bench.py runner: the scheduler at tcp://127.0.0.1:6450 closed the connection, "
        "noticed while joining the stages' store at tcp://127.0.0.1:6454",
        "bench.py runner: next"]
