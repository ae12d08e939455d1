"""With data parallelism alone (DP > 1, TP = PP = 1) vLLM's ParallelConfig.__post_init__
picks the multiprocess executor (world_size_across_dp > 1), so each engine core's
executor has one worker: the harness's one-runner, two-process configuration. README.md
and docs/comparisons.md say so, where the comparisons said that configuration is one
vLLM does not run by default."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _flat(name: str) -> str:
    return re.sub(r"\s+", " ", (ROOT / name).read_text())


def test_data_parallelism_is_the_one_runner_configuration():
    readme, docs = _flat("README.md"), _flat("docs/comparisons.md")
    assert ("the default with TP > 1, PP > 1 or data parallelism (with DP > 1 and TP = PP = "
            "1 each engine core's executor has one worker: the harness's one-runner, "
            "two-process configuration); a single-GPU engine without data parallelism runs "
            "the in-process `UniProcExecutor`, which serializes nothing.") in readme
    assert ("(with DP > 1 and TP = PP = 1 each engine core's executor has one worker: the "
            "two-process, one-runner case here); a single-GPU engine without data "
            "parallelism runs the in-process `UniProcExecutor` and has no hop") in readme
    assert ("With data parallelism alone (DP > 1, TP = PP = 1) each engine core's executor "
            "is therefore a multiprocess one with one worker: the harness's one-runner, "
            "two-process configuration, which vLLM runs by default there") in docs
    assert "configuration vLLM does not run by default" not in docs
    assert "(or data parallelism)" not in readme
