"""``bench.py microbench RUN`` on a run that failed as it wrote a finished case's
captured messages (a full disk: ``cannot write results to RUN/messages: No space left
on device``, the partial file removed) names the failure the run recorded in its
``summary.json`` (``capture._why_ended``), where it said only that no finished case
kept messages."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ipc_bench import cli
from ipc_bench.analysis.capture import why_no_captures
from microbench_runs import FRAME_RUN, copy_run, finished_run

RULE = ("repetition 0 of each case keeps its counted steps' messages when it finishes, "
        "except the streamed cases of soak")
CASE = "num_running=1/send/msgpack#0"


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory, "failed-reason", FRAME_RUN)


def _disk_filled(run: Path) -> str:
    """Make ``run`` what a run whose disk filled as it wrote its first case's messages
    leaves (``cli.execute``'s ``write_failed``): that case listed complete, the others
    not run, no capture file, status failed, the failed case and the problem recorded.
    Returns the problem."""
    problem = f"cannot write results to {run / 'messages'}: No space left on device"
    shutil.rmtree(run / "messages")
    (run / "messages").mkdir()
    path = run / "summary.json"
    summary = json.loads(path.read_text())
    assert summary["cases"][0]["case_id"] == CASE
    summary.update(status="failed", failed_case=CASE, running_case=None,
                   cases=summary["cases"][:1], comparisons=[], byte_model=[],
                   problems=[problem])
    path.write_text(json.dumps(summary))
    return problem


def test_a_run_whose_disk_filled_as_it_wrote_the_messages_names_it(finished, tmp_path,
                                                                    capsys):
    run = copy_run(finished, tmp_path)
    problem = _disk_filled(run)
    assert cli.main(["microbench", str(run), "--fast"]) == 2
    assert capsys.readouterr() == ("", (
        f"bench.py microbench: error: no captured messages in {run / 'messages'}: none of "
        f"the run's 1 finished case kept messages, and the run failed ({CASE}: {problem}); "
        f"{RULE}\n"))
    assert not (run / "microbench").exists()


def _summary(status: str, cases: list, failed_case=None, problems=()) -> dict:
    return {"status": status, "failed_case": failed_case, "problems": list(problems),
            "metadata": {"scenario": "decode-steady"}, "cases": cases}


@pytest.mark.parametrize("summary,why", [
    # a case failed after one finished: its error
    (_summary("failed", [{"case_id": "a#0", "complete": True},
                         {"case_id": "b#0", "complete": False, "error": "x"}], "b#0",
              ["b#0: x"]),
     f"none of the run's 1 finished case kept messages, and the run failed (b#0: x); "
     f"{RULE}"),
    # stopped after one finished, with no case error: the problem, named by its case
    (_summary("incomplete", [{"case_id": "a#0", "complete": True}], "b#0",
              ["interrupted by SIGINT"]),
     f"none of the run's 1 finished case kept messages, and the run was stopped (b#0: "
     f"interrupted by SIGINT); {RULE}"),
    # a problem that names its case already is not named twice
    (_summary("failed", [{"case_id": "a#0", "complete": True}], "a#0", ["a#0: gone"]),
     f"none of the run's 1 finished case kept messages, and the run failed (a#0: gone); "
     f"{RULE}"),
    # failed with nothing recorded: said without a reason
    (_summary("failed", [{"case_id": "a#0", "complete": True}]),
     f"none of the run's 1 finished case kept messages, and the run failed; {RULE}"),
    # a complete run: nothing ended it
    (_summary("complete", [{"case_id": "a#0", "complete": True}], None, ["p"]),
     f"none of the run's 1 finished case kept messages; {RULE}"),
    # no case finished: the failed case's problem where the case has no error
    (_summary("failed", [{"case_id": "a#0", "complete": False}], "a#0",
              ["cannot write results to R: No space left on device"]),
     "the run failed before any case finished (a#0: cannot write results to R: No space "
     f"left on device); {RULE}"),
])
def test_why_no_captures_names_what_ended_the_run(tmp_path, summary, why):
    from ipc_bench.harness.run_folder import FORMAT_VERSION

    (tmp_path / "summary.json").write_text(json.dumps({"format_version": FORMAT_VERSION,
                                                       **summary}))
    assert why_no_captures(tmp_path) == why
