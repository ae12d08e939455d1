"""A case that fails under byte_sweep names the case as bench.py names a failed case
(``num_running=64/cached/pickle#0``) and the sweep point it ran at (request-id format,
vocabulary, token-id distribution), then the reason, in one line (``run_case`` stubbed:
the runner killed mid-case is ``test_script_failures``'s)."""

from __future__ import annotations

import io
import sys
from types import SimpleNamespace

import pytest

from script_module import load_script

from ipc_bench.cli.console import script_main
from ipc_bench.harness.spec import SCHED_COLUMNS, CaseError
from ipc_bench.wire.transport import EndpointError

KILLED = ("runner process 4242 was killed by SIGKILL, noticed while waiting for "
          "ModelRunnerOutput for step 1185")


def _measured() -> SimpleNamespace:
    """What ``run_case`` returns, as far as ``byte_sweep.measure`` reads it: one
    counted step, no frames."""
    row = [0] * len(SCHED_COLUMNS)
    row[SCHED_COLUMNS.index("counted")] = 1
    return SimpleNamespace(sched_rows=[row], s2r_frames=[], r2s_frames=[],
                           requests=[{"req_id": "0"}], token_digest="")


def _sweep(monkeypatch, argv: list[str], fail) -> tuple[int, str, list[str]]:
    """(exit code, stderr, case ids run) of ``byte_sweep.py ARGV`` in this process,
    ``run_case`` stubbed: ``fail(case)`` is the exception a case raises, ``None`` for one
    that runs."""
    byte_sweep = load_script("byte_sweep")
    ran = []

    def run_case(case):
        ran.append(case.case_id)
        exc = fail(case)
        if exc is not None:
            raise exc
        return _measured()

    monkeypatch.setattr(byte_sweep, "run_case", run_case)
    err = io.StringIO()
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    monkeypatch.setattr(sys, "stderr", err)
    code = script_main("byte_sweep.py", lambda: byte_sweep.main(argv))
    return code, err.getvalue(), ran


def test_byte_sweep_names_the_case_and_sweep_point_that_failed(monkeypatch):
    argv = ["--formats", "cmpl,numeric", "--vocab-sizes", "151936", "--token-ids", "zipf",
            "--codecs", "pickle", "--num-running", "64", "--steps", "5"]
    runs = []  # the fourth case, numeric ids' cached one, fails
    code, err, ran = _sweep(monkeypatch, argv, lambda case: CaseError(KILLED, 1185) if (
        runs.append(case) or len(runs) == 4) else None)
    assert ran == ["num_running=64/send/pickle#0", "num_running=64/cached/pickle#0"] * 2
    assert (code, err) == (1, "... cmpl ids, vocabulary 151,936, zipf token ids\n"
                           "... numeric ids, vocabulary 151,936, zipf token ids\n"
                           "byte_sweep.py: error: num_running=64/cached/pickle#0 (numeric "
                           "ids, vocabulary 151,936, zipf token ids): " + KILLED + "\n")


def test_byte_sweep_names_the_case_whose_sockets_failed_and_exits_2(monkeypatch):
    argv = ["--formats", "cmpl", "--vocab-sizes", "32000", "--codecs", "msgpack",
            "--num-running", "16", "--steps", "5"]
    code, err, ran = _sweep(monkeypatch, argv, lambda case: EndpointError(
        "cannot bind ipc:///tmp/x/s2r: Address already in use"))
    assert ran == ["num_running=16/send/msgpack#0"]
    assert (code, err) == (2, "... cmpl ids, vocabulary 32,000, uniform token ids\n"
                           "byte_sweep.py: error: num_running=16/send/msgpack#0 (cmpl ids, "
                           "vocabulary 32,000, uniform token ids): cannot bind "
                           "ipc:///tmp/x/s2r: Address already in use\n")


def test_byte_sweep_keeps_the_traceback_of_a_bug_in_a_case(monkeypatch):
    argv = ["--formats", "cmpl", "--vocab-sizes", "32000", "--codecs", "msgpack",
            "--num-running", "16", "--steps", "5"]
    with pytest.raises(ValueError, match="^a bug$"):
        _sweep(monkeypatch, argv, lambda case: ValueError("a bug"))
    assert sys.stderr.getvalue() == "... cmpl ids, vocabulary 32,000, uniform token ids\n"
