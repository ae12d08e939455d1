"""``bench.py microbench RUN`` on a run of ``--vllm-layout 1d37eb37`` says that the
run's layout keeps no messages and that microbench times the 7f280d69c layout only
(``capture.build_captures`` keeps none for another layout: a capture file does not
record its layout). It said ``none of the run's 8 finished cases that could keep
messages kept any (its 4 single-process cases keep none); repetition 0 of each case
keeps ...``, as if some of them could have kept messages."""

from __future__ import annotations

import json

import pytest

from ipc_bench import cli
from ipc_bench.analysis.capture import why_no_captures
from ipc_bench.harness.run_folder import FORMAT_VERSION
from microbench_runs import ERROR, finished_run

LATER = ("the run's cases used --vllm-layout 1d37eb37, whose cases keep no messages "
         "(bench.py microbench times the 7f280d69c layout only)")
RULE = ("repetition 0 of each case keeps its counted steps' messages when it finishes, "
        "except the streamed cases of soak")
TWO = {"codec": "msgpack", "repetition": 0, "num_steps": 20, "complete": True}
SINGLE = {"codec": "none", "repetition": 0, "num_steps": 20, "complete": True}


def _summary(tmp_path, options, cases, status="complete"):
    (tmp_path / "summary.json").write_text(json.dumps({
        "format_version": FORMAT_VERSION, "status": status,
        "metadata": {"scenario": "decode-steady", "options": options},
        "cases": cases}))


@pytest.mark.parametrize("options,cases,why", [
    # the run's option, as bench.py records it
    ({"vllm_layout": "1d37eb37"}, [TWO, SINGLE, TWO, SINGLE], LATER),
    # no option recorded: the layout its cases record
    ({}, [dict(TWO, vllm_layout="1d37eb37"), dict(SINGLE, vllm_layout="1d37eb37")], LATER),
    # stopped before any case finished: its layout keeps none either
    ({"vllm_layout": "1d37eb37"}, [], LATER),
    # the default layout (or none recorded): as it was
    ({"vllm_layout": "7f280d69c"}, [TWO, SINGLE],
     "none of the run's 1 finished case that could keep messages kept any (its 1 "
     "single-process case keeps none); " + RULE),
    ({"vllm_layout": None}, [TWO, TWO],
     "none of the run's 2 finished cases kept messages; " + RULE),
    ({}, [dict(TWO, vllm_layout="7f280d69c")],
     "none of the run's 1 finished case kept messages; " + RULE),
])
def test_a_later_layout_run_says_its_layout_keeps_none(tmp_path, options, cases, why):
    _summary(tmp_path, options, cases)
    assert why_no_captures(tmp_path) == why


def test_a_real_later_layout_run(tmp_path_factory, capsys):
    run = finished_run(tmp_path_factory, "later-layout", [
        "--scenario", "decode-steady", "--num-running", "1", "--steps", "20",
        "--warmup-steps", "2", "--policies", "send", "--codecs", "msgpack",
        "--vllm-layout", "1d37eb37", "--no-floor", "--quiet"])
    assert not list((run / "messages").glob("*.msgpack"))
    assert cli.main(["microbench", str(run), "--fast"]) == 2
    assert capsys.readouterr() == (
        "", f"{ERROR}no captured messages in {run / 'messages'}: {LATER}\n")
    assert not (run / "microbench").exists()
