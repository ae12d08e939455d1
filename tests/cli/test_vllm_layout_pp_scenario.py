"""``--vllm-layout 1d37eb37`` with the pp scenario: without ``--pp`` the refusal
names the scenario's own pipeline stages (it said ``does not run --pp stages: drop
--pp`` of a command line that gave no ``--pp``); with ``--pp`` given it names ``--pp``
as before. One line, exit 2, nothing on stdout."""

from __future__ import annotations

import pytest

from ipc_bench import cli
from run_notes import without_nice_note

PP = ["--scenario", "pp", "--vllm-layout", "1d37eb37", "--num-running", "4",
      "--steps", "100"]


@pytest.mark.parametrize("extra,message", [
    ([], "--vllm-layout 1d37eb37 does not run scenario pp's pipeline stages: drop "
         "--vllm-layout or run another scenario"),
    (["--pp", "2"], "--vllm-layout 1d37eb37 does not run --pp stages: drop --pp"),
    (["--pp", "1,2"], "--vllm-layout 1d37eb37 does not run --pp stages: drop --pp"),
], ids=["scenario", "pp-2", "pp-1-2"])
def test_the_refusal_names_where_the_stages_come_from(extra, message, capsys):
    code = cli.main(PP + extra)
    out, err = capsys.readouterr()
    assert (code, without_nice_note(err.splitlines()), out) == (
        2, [f"bench.py: error: {message}"], "")
