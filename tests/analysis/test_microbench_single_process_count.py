"""``bench.py microbench RUN`` on a run without captured messages counts the finished
cases that could keep messages (two processes, repetition 0) and names the others
apart: single-process cases, whose scheduler and runner exchange no message, and later
repetitions never keep any. It said ``none of the run's 4 finished cases kept
messages`` of a run two of whose four were single-process cases."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ipc_bench import cli
from ipc_bench.analysis.capture import why_no_captures
from ipc_bench.harness.run_folder import FORMAT_VERSION
from microbench_runs import ERROR, finished_run

RULE = ("repetition 0 of each case keeps its counted steps' messages when it finishes, "
        "except the streamed cases of soak")
#: A one-request run of send and msgpack with its single-process case.
WITH_SINGLE = ["--scenario", "decode-steady", "--num-running", "1", "--steps", "20",
               "--warmup-steps", "2", "--policies", "send", "--codecs", "msgpack",
               "--no-floor", "--quiet"]
TWO = {"codec": "msgpack", "repetition": 0, "num_steps": 20}
SINGLE = {"codec": "none", "repetition": 0, "num_steps": 20}
LATER = {"codec": "msgpack", "repetition": 1, "num_steps": 20}


@pytest.mark.parametrize("status,cases,why", [
    # the run the line was found on: two cases of each kind
    ("complete", [TWO, SINGLE, TWO, SINGLE],
     "none of the run's 2 finished cases that could keep messages kept any (its 2 "
     "single-process cases keep none); " + RULE),
    ("complete", [TWO, SINGLE, LATER, LATER],
     "none of the run's 1 finished case that could keep messages kept any (its 1 "
     "single-process case and 2 later repetitions keep none); " + RULE),
    ("failed", [SINGLE],
     "none of the run's 1 finished case could keep messages (its 1 single-process case "
     "keeps none), and the run failed; " + RULE),
    ("complete", [dict(TWO, num_steps=0), SINGLE],
     "the run's 1 finished case that could keep messages counted no step (num_steps 0), "
     "and a case keeps only its counted steps' messages (its 1 single-process case keeps "
     "none)"),
    # only cases that could keep messages: as it was
    ("complete", [TWO, TWO], "none of the run's 2 finished cases kept messages; " + RULE),
])
def test_the_count_is_of_the_cases_that_could_keep_messages(tmp_path, status, cases, why):
    (tmp_path / "summary.json").write_text(json.dumps({
        "format_version": FORMAT_VERSION, "status": status,
        "metadata": {"scenario": "decode-steady"},
        "cases": [dict(c, complete=True) for c in cases]}))
    assert why_no_captures(tmp_path) == why


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory, "single-process-count", WITH_SINGLE)


def test_a_real_run_names_its_single_process_case_apart(finished, tmp_path, capsys):
    """The messages of a real run with its single-process case, gone (as a full disk
    as they were written leaves them; the summary left as it was)."""
    run = Path(shutil.copytree(finished, tmp_path / "run"))
    cases = json.loads((run / "summary.json").read_text())["cases"]
    assert [c["codec"] for c in cases] == ["msgpack", "none"]
    shutil.rmtree(run / "messages")
    (run / "messages").mkdir()
    assert cli.main(["microbench", str(run), "--fast"]) == 2
    assert capsys.readouterr() == ("", (
        f"{ERROR}no captured messages in {run / 'messages'}: none of the run's 1 finished "
        f"case that could keep messages kept any (its 1 single-process case keeps none); "
        f"{RULE}\n"))
    assert not (run / "microbench").exists()
