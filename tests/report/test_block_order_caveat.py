"""A run whose single-process block (codec ``none``) ran after every two-process case of
its workload in each of 3 or more repetitions, as every run did before the codec blocks
were counterbalanced (``scenario.codec_block_orders``), gets a line in the findings
saying so; a counterbalanced run does not. Which case ran when is read from the order
of the summary's cases."""

from __future__ import annotations

import json
import shutil

import pytest

from analysis_run import run_bench
from ipc_bench import cli
from ipc_bench.analysis.results import load
from ipc_bench.report.findings import _where_of, block_order_findings

GRID = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "10",
        "--warmup-steps", "2", "--codecs", "msgpack,pickle", "--no-floor", "--repeat", "3"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("blockorder") / "run"
    run_bench(out, GRID)
    return out


def _lines(run) -> list[str]:
    results = load(run)
    return block_order_findings(results, _where_of(results.cases, results.labels))


def _with_single_process(src, dst, last: bool):
    """A copy of run ``src`` whose summary lists each repetition's single-process cases
    after (``last``) or before its two-process ones, as if they had run there."""
    shutil.copytree(src, dst)
    summary = json.loads((dst / "summary.json").read_text())
    summary["cases"].sort(key=lambda c: (c["repetition"], (c["codec"] == "none") == last))
    (dst / "summary.json").write_text(json.dumps(summary))
    return dst


def test_a_counterbalanced_run_gets_no_line(run):
    codecs = [json.loads((run / "summary.json").read_text())["cases"][i]["codec"]
              for i in (0, 6, 12)]
    assert sorted(codecs) == ["msgpack", "none", "pickle"]  # each block first once
    assert _lines(run) == []


@pytest.mark.parametrize("last, side, words", [(True, "after", "earlier"),
                                               (False, "before", "later")])
def test_a_single_process_always_on_one_side_is_said(run, tmp_path, last, side, words):
    edited = _with_single_process(run, tmp_path / "edited", last)
    line = (f"At 4 running requests, the single process ran {side} its two-process cases "
            f"(msgpack, pickle) in each of its 3 repetitions, where a balanced order of "
            f"the codec blocks runs it {words} in some: whatever favours running earlier "
            "or later (a drift, a warmer parent process) leans the single-process ratio "
            "to one side, and its intervals do not allow for it.")
    assert _lines(edited) == [line]
    assert cli.main(["report", str(edited), "--output", str(tmp_path / "r"),
                     "--no-figures"]) == 0
    assert (tmp_path / "r" / "report.md").read_text().splitlines().count(f"- {line}") == 1
