"""A failure's reason that ends in a period (a peer's or the system's own message,
``Connection reset by peer.``) is joined to ``; partial results: DIR`` without it:
``peer; partial results``, never ``peer.; partial results`` (``execute.with_pointer``).
``summary.json`` keeps the reason as it came."""

from __future__ import annotations

import json

import pytest

from ipc_bench.cli.execute import with_pointer
from ipc_bench.harness.spec import CaseError


_TINY = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "50",
         "--warmup-steps", "2", "--policies", "send,cached", "--codecs", "msgpack",
         "--no-single-process", "--quiet"]

#: What a pp stage killed with SIGKILL left its neighbour to say (ZeroMQ's words).
PEER = "stage 1: Read error [127.0.0.1]:45754: Connection reset by peer."


@pytest.mark.parametrize("reason, joined", [
    ("Connection reset by peer.", "Connection reset by peer; partial results: /r"),
    ("Connection reset by peer. \n", "Connection reset by peer; partial results: /r"),
    ("the runner broke (injected)", "the runner broke (injected); partial results: /r"),
    ("waited 30 s...", "waited 30 s...; partial results: /r"),
    ("ends in a space ", "ends in a space; partial results: /r"),
])
def test_with_pointer_drops_the_reasons_final_period(reason, joined):
    assert with_pointer(reason, "; partial results: /r") == joined


def test_with_pointer_leaves_a_reason_with_no_pointer_as_it_is():
    assert with_pointer("Connection reset by peer.", "") == "Connection reset by peer."
    assert with_pointer("no folder.", "; run folder (nothing measured): /r") == \
        "no folder; run folder (nothing measured): /r"


@pytest.mark.parametrize("failing, pointer", [(2, "partial results"),
                                              (1, "run folder (nothing measured)")])
def test_a_failed_cases_line_has_no_period_before_its_pointer(
        failing, pointer, tmp_path, monkeypatch, capsys, handlers_restored):
    """The second case fails (the first was measured: ``partial results``), or the
    first one does before any step (``run folder (nothing measured)``)."""
    from ipc_bench import cli
    from ipc_bench.cli import execute

    real, calls = execute.run_case, []

    def run_case(case, **kw):
        calls.append(case.case_id)
        if len(calls) == failing:
            raise CaseError(PEER)
        return real(case, **kw)

    monkeypatch.setattr(execute, "run_case", run_case)
    run_dir = tmp_path / "run"
    assert cli.main(_TINY + ["--output", str(run_dir)]) == 1
    case_id = calls[-1]
    assert capsys.readouterr().err == (
        f"bench.py: error: {case_id}: stage 1: Read error [127.0.0.1]:45754: Connection "
        f"reset by peer; {pointer}: {run_dir}\n")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["status"], summary["problems"]) == ("failed", [f"{case_id}: {PEER}"])
