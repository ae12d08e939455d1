"""A case stopped by a resource limit (a thread that cannot start, no memory) is said
in one line naming the limit, exit 1, with no traceback: it is the machine's limit, not
a bug (a thread limit or ``ulimit -v`` once printed a traceback and "internal error")."""

from __future__ import annotations

import json

import pytest

from ipc_bench import cli
from ipc_bench.cli import execute
from ipc_bench.errors import resource_shortage_text

ARGS = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "20",
        "--warmup-steps", "2", "--codecs", "msgpack", "--policies", "send",
        "--no-single-process", "--quiet"]


@pytest.mark.parametrize("exc, words", [
    (RuntimeError("can't start new thread"),
     "cannot start a thread: the process is at a resource limit (ulimit -u, a "
     "container's pids limit, or ulimit -v leaving no room for its stack)"),
    (MemoryError(),
     "out of memory (MemoryError): a memory limit (ulimit -v, a container's) or the "
     "machine's memory is too small for this case")])
def test_a_case_stopped_by_a_resource_limit_says_so_in_one_line(exc, words, tmp_path,
                                                                 monkeypatch, capsys):
    def limited(*args, **kwargs):
        raise exc

    monkeypatch.setattr(execute, "run_case", limited)
    run = tmp_path / "r"
    assert cli.main(ARGS + ["--output", str(run)]) == 1
    err = capsys.readouterr().err
    assert err == (f"bench.py: error: num_running=4/send/msgpack#0: {words}; run folder "
                   f"(nothing measured): {run}\n")
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["status"], summary["problems"]) == (
        "failed", [f"num_running=4/send/msgpack#0: {words}"])


def test_other_errors_are_not_called_a_limit():
    assert resource_shortage_text(RuntimeError("dictionary changed size")) is None
    assert resource_shortage_text(ValueError("can't start new thread")) is None
