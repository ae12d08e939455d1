"""``bench.py microbench RUN`` on a run still going (a process holds its lock, no end
recorded: as ``bench.py report`` tells it) that has finished some cases is refused in
one line, exit 2, nothing timed and no folder made (``microbench.still_running_refusal``):
pyperf's workers would compete with the run for the CPU, and the cases not finished
yet would be left out, where it timed the finished cases and said nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ipc_bench import cli
from ipc_bench.harness.run_folder import _hold_claim
from microbench_runs import FRAME_RUN, PYPERF, copy_run, finished_run

QUICK = ["--codecs", "msgpack", "--directions", "s2r", "--ops", "encode", *PYPERF]


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory, "still-running", FRAME_RUN)


def _going(run: Path) -> None:
    """Make ``run``'s ``summary.json`` what a run writes while it runs its second case:
    status incomplete, no end recorded, its first case alone recorded."""
    path = run / "summary.json"
    summary = json.loads(path.read_text())
    assert len(summary["metadata"]["cases"]) == 3
    summary.update(status="incomplete", running_case=summary["cases"][1]["case_id"],
                   cases=summary["cases"][:1], comparisons=[], byte_model=[])
    del summary["metadata"]["end_time_utc"]
    path.write_text(json.dumps(summary))


def test_a_run_holding_its_lock_is_refused(finished, tmp_path, capsys):
    run = copy_run(finished, tmp_path)
    _going(run)
    claim = _hold_claim(run)
    assert claim is not None
    try:
        assert cli.main(["microbench", str(run), *QUICK]) == 2
        assert capsys.readouterr() == ("", (
            f"bench.py microbench: error: {run} is still running (it holds its lock; 1 of "
            "3 cases recorded): timed now, pyperf's workers would compete with it for the "
            "CPU and the cases it has not finished would be left out; run microbench once "
            "the run ends\n"))
        assert not (run / "microbench").exists()
    finally:
        claim.close()


def test_the_same_run_once_its_lock_is_let_go_is_timed(finished, tmp_path, capsys):
    """No process holds the lock: the run was stopped (killed), and its finished cases
    are timed as they were."""
    run = copy_run(finished, tmp_path)
    _going(run)
    assert cli.main(["microbench", str(run), *QUICK]) == 0
    err = capsys.readouterr().err
    assert err.splitlines()[0].startswith(f"microbench: 1 benchmarks (send: 1) -> "
                                          f"{run / 'microbench'}; ")
    assert sorted(p.name for p in (run / "microbench").iterdir()) == [
        "in_loop_vs_pyperf.json", "send.json"]
