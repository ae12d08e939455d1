"""A --tp pair's findings line says where its bytes go: to the runner at N = 1, into
the broadcast the scheduler writes once for the N ranks at N > 1 (the line after gives
what reaches them in all); the --pp send/direct line gives the payload all stages
receive per step under each arm and their difference."""

from __future__ import annotations

import pytest

from ipc_bench.analysis.pp import send_direct_lines
from fault_helpers import one_runner_mark
from ipc_bench.analysis.results import load
from ipc_bench.cli import main as cli_main
from ipc_bench.report import findings
from ipc_bench.report.findings import _saving_clauses

from tests.report.test_withheld_timings import _pp_pair

SHARE = "(5.4 % of send's scheduler → runner payload)"


def _tables(send: float, cached: float) -> dict:
    return {"s2r": {("w", "msgpack"): {"send": send, "cached": cached, "diff": send - cached}},
            "enc": {}, "dec": {}, "build": {}, "tput": {}}


def _pairs(tp) -> list[tuple[dict, dict]]:
    return [({"policy": "send", "tp": tp}, {"policy": "cached", "tp": tp})]


def test_tp_above_one_writes_into_the_broadcast_to_its_ranks():
    assert _saving_clauses(_tables(23_804.0, 22_525.0), ("w", "msgpack"), _pairs(4)) == [
        "writes 1,279 fewer bytes per step into the broadcast to the 4 ranks, once for all "
        f"of them {SHARE}"]
    assert _saving_clauses(_tables(100.0, 100.0), ("w", "msgpack"), _pairs(2)) == [
        "writes as many bytes per step into the broadcast to the 2 ranks as send, once "
        "for all of them"]


@pytest.mark.parametrize("tp", [1, None, float("nan")])
def test_tp_of_one_and_other_cases_send_to_the_runner(tp):
    assert _saving_clauses(_tables(23_804.0, 22_525.0), ("w", "msgpack"), _pairs(tp)) == [
        f"sends 1,279 fewer bytes per step to the runner {SHARE}"]


def test_a_tp_run_s_findings_word_each_n(tmp_path):
    out = tmp_path / "tp"
    assert cli_main(["--scenario", "tp-broadcast", "--tp", "1,2", "--tp-transports", "ipc",
                     "--codecs", "msgpack", "--steps", "8", "--warmup-steps", "2",
                     "--num-running", "16", "--no-floor", "--output", str(out)]) == 0
    lines = [line for line in findings.findings(load(out).by_arm())
             if "bytes per step" in line]
    one = [line for line in lines  # tp=1 on 2 cores: marked ° (analysis.cores)
           if f"tp=1 (msgpack{one_runner_mark()}), cached " in line]
    two = [line for line in lines if "tp=2 (msgpack), cached " in line]
    assert len(one) == 1 and len(two) == 1
    assert "cached sends " in one[0] and " fewer bytes per step to the runner (" in one[0]
    assert "cached writes " in two[0] and (" fewer bytes per step into the broadcast to the 2 "
                                           "ranks, once for all of them (") in two[0]
    assert "to the runner" not in two[0]


def test_pp_line_gives_the_all_stage_difference():
    [line] = send_direct_lines(_pp_pair(2))
    assert ("payload all stages receive per step: send 782 B (2 x 391), direct 758 B "
            "(2 x 371 + 16), send - direct 24 B; hidden states") in line
