"""``--vllm-layout 1d37eb37`` with the pp scenario, with or without ``--pp``: the
refusal names the scenario's own pipeline stages and the ways out (it said ``does not
run --pp stages: drop --pp``, of a command line that gave no ``--pp`` too, and only the
pp scenario takes ``--pp``). One line, exit 2, nothing on stdout."""

from __future__ import annotations

import pytest

from ipc_bench import cli
from run_notes import without_nice_note

PP = ["--scenario", "pp", "--vllm-layout", "1d37eb37", "--num-running", "4",
      "--steps", "100"]


MESSAGE = ("--vllm-layout 1d37eb37 does not run scenario pp's pipeline stages: drop "
           "--vllm-layout or run another scenario")


@pytest.mark.parametrize("extra", [[], ["--pp", "2"], ["--pp", "1,2"]],
                         ids=["scenario", "pp-2", "pp-1-2"])
def test_the_refusal_names_the_scenario_s_stages(extra, capsys):
    code = cli.main(PP + extra)
    out, err = capsys.readouterr()
    assert (code, without_nice_note(err.splitlines()), out) == (
        2, [f"bench.py: error: {MESSAGE}"], "")
