"""``bench.py microbench``'s end text (the comparison table, then the pyperf commands)
reaches stdout in one write call, as a run's end does (``console.one_write``, which
the command hands to ``coordinate``), so ``| head -1`` takes it whole and the command
exits 0."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ipc_bench import cli
from microbench_runs import PYPERF, finished_run
from stdout_calls import WriteCalls

TINY = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "20", "--warmup-steps",
        "2", "--policies", "send,cached", "--codecs", "msgpack", "--no-single-process",
        "--no-floor", "--quiet"]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A finished two-case run folder (send and cached, msgpack), with captures."""
    return finished_run(tmp_path_factory, "mbend", TINY)


def test_the_table_and_the_pyperf_commands_are_one_write(run, monkeypatch):
    out = run / "microbench"
    calls = WriteCalls()
    monkeypatch.setattr(sys, "stdout", calls)
    assert cli.main(["microbench", str(run), "--directions", "s2r", *PYPERF]) == 0
    assert len(calls.writes) == 1, calls.writes
    text = calls.writes[0]
    assert text.startswith(
        "in-loop (the run's own timing of these messages) vs pyperf (isolated)\n"
        "arm     workload       dir  codec    op      bytes  in-loop mean us")
    send, cached = out / "send.json", out / "cached.json"
    assert text.endswith(
        f"\n\ncompare: python -m pyperf compare_to {send} {cached} --table\n"
        f"stats:   python -m pyperf stats {send}\n"
        f"check:   python -m pyperf check {send}\n"), text
