"""The loader recomputes the ``--tp`` and ``--pp`` figures that ``steps.csv`` holds the
inputs of (``row_checks.HOP_FIGURES``: the broadcast's bytes and encode, rank 0's decode,
the pp ZeroMQ hops' bytes) with the functions that wrote them, and leaves out a case
whose summary disagrees, with one warning naming the figure and both values. The
per-rank and per-stage times and the roofline's figures have no inputs in any file:
they are not checked."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from analysis_run import load_with_warnings, run_bench
from ipc_bench.wire.shm_ring import ring_message_bytes
from ipc_bench.wire.transport import zmtp_frame_bytes

COMMON = ["--num-running", "4", "--steps", "20", "--warmup-steps", "5", "--codecs", "msgpack"]
TP_IPC = "num_running=4,tp=2,broadcast=ipc/send/msgpack#0"
TP_RING = "num_running=4,tp=2,broadcast=shm-block/send/msgpack#0"
PP_SEND = "num_running=4,pp=2/send/msgpack#0"


@pytest.fixture(scope="module")
def runs(tmp_path_factory, shared_pp_run):
    """``tp``: send over 2 ranks, over ipc and over the shm-block ring; ``pp``: send and
    direct over 1 and 2 stages (the shared ``--pp 1,2`` run, ``analysis_run.PP_RUN_ARGS``:
    ``COMMON``'s options; its stages import torch, so one run serves every test that
    reads one)."""
    base = tmp_path_factory.mktemp("hops")
    run_bench(base / "tp", ["--scenario", "tp-broadcast", "--tp", "2", "--tp-transports",
                            "ipc,shm-block", "--policies", "send"] + COMMON)
    (base / "pp").symlink_to(shared_pp_run)
    return base


#: Cases of each run.
NUM_CASES = {"tp": 2, "pp": 4}


_loaded = load_with_warnings


def _edited(run, path, case_id: str, figure: str, value):
    """A copy of ``run`` at ``path`` whose case ``case_id`` has ``figure`` ``value``."""
    shutil.copytree(run, path)
    summary = json.loads((path / "summary.json").read_text())
    case = next(c for c in summary["cases"] if c["case_id"] == case_id)
    case[figure] = value
    (path / "summary.json").write_text(json.dumps(summary))
    return path


def _counted(run, case_id: str) -> pd.DataFrame:
    steps = pd.read_csv(run / "steps.csv")
    return steps[(steps["case_id"] == case_id) & (steps["counted"] == 1)]


def test_unedited_tp_and_pp_runs_load_without_a_warning(runs):
    for run, n in NUM_CASES.items():
        results, lines = _loaded(runs / run)
        assert lines == [] and len(results.cases) == n


def _tp_expected(run, case_id: str) -> dict[str, float]:
    rows = _counted(run, case_id)
    payload = rows["s2r_payload_bytes"]
    if "shm-block" in case_id:
        written = payload.map(ring_message_bytes)
        all_ranks = written
    else:
        written = payload + payload.map(lambda b: 2 if b <= 255 else 9)
        all_ranks = written * 2
    return {"tp_s2r_bytes_written_per_step": written.mean(),
            "tp_s2r_wire_bytes_all_ranks_per_step": all_ranks.mean(),
            "tp_encode_ns_per_step": rows["encode_ns"].mean(),
            "tp_rank_decode_ns_per_step[0]": rows["runner_decode_ns"].mean()}


@pytest.mark.parametrize("case_id,figure,column", [
    (TP_IPC, "tp_s2r_bytes_written_per_step", "s2r_payload_bytes"),
    (TP_IPC, "tp_s2r_wire_bytes_all_ranks_per_step", "s2r_payload_bytes"),
    (TP_RING, "tp_s2r_wire_bytes_all_ranks_per_step", "s2r_payload_bytes"),
    (TP_RING, "tp_encode_ns_per_step", "encode_ns"),
], ids=["written-ipc", "all-ranks-ipc", "all-ranks-ring", "encode"])
def test_an_edited_tp_figure_leaves_the_case_out(runs, tmp_path, case_id, figure, column):
    want = _tp_expected(runs / "tp", case_id)[figure]
    edited = _edited(runs / "tp", tmp_path / "tp", case_id, figure, 12345.5)
    results, lines = _loaded(edited)
    assert lines == [
        f"{edited / 'steps.csv'}: case {case_id!r} has a {figure} of {want:,.6g} from its 20 "
        f"counted rows' {column}, but summary.json has {figure} 12,345.5 (left out)"]
    assert list(results.cases["case_id"]) == [c for c in (TP_IPC, TP_RING) if c != case_id]


def test_an_edited_rank_0_decode_leaves_the_case_out(runs, tmp_path):
    summary = json.loads((runs / "tp" / "summary.json").read_text())
    ranks = next(c for c in summary["cases"] if c["case_id"] == TP_IPC)[
        "tp_rank_decode_ns_per_step"]
    want = _tp_expected(runs / "tp", TP_IPC)["tp_rank_decode_ns_per_step[0]"]
    assert ranks[0] == pytest.approx(want, rel=1e-12)
    edited = _edited(runs / "tp", tmp_path / "tp", TP_IPC, "tp_rank_decode_ns_per_step",
                     [ranks[0] + 1000, ranks[1]])
    _, lines = _loaded(edited)
    assert lines == [
        f"{edited / 'steps.csv'}: case {TP_IPC!r} has a tp_rank_decode_ns_per_step[0] of "
        f"{want:,.6g} from its 20 counted rows' runner_decode_ns (rank 0's), but "
        f"summary.json has tp_rank_decode_ns_per_step[0] {ranks[0] + 1000:,.6g} (left out)"]
    # rank 1's decode is in no file: an edit of it is not seen
    edited = _edited(runs / "tp", tmp_path / "tp1", TP_IPC, "tp_rank_decode_ns_per_step",
                     [ranks[0], ranks[1] + 1000])
    assert _loaded(edited)[1] == []


@pytest.mark.parametrize("run,case_id,figure,column", [
    ("tp", TP_IPC, "sched_to_runner_wire_bytes_per_step", "s2r_payload_bytes"),
    ("tp", TP_RING, "sched_to_runner_wire_bytes_per_step", "s2r_payload_bytes"),
    ("tp", TP_RING, "runner_to_sched_wire_bytes_per_step", "r2s_payload_bytes"),
    ("pp", PP_SEND, "sched_to_runner_wire_bytes_per_step", "s2r_payload_bytes"),
    ("pp", PP_SEND, "runner_to_sched_wire_bytes_per_step", "r2s_payload_bytes"),
], ids=["tp-ipc-s2r", "tp-ring-s2r", "tp-ring-r2s", "pp-s2r", "pp-r2s"])
def test_an_edited_wire_figure_of_a_tp_or_pp_case_leaves_it_out(runs, tmp_path, run,
                                                                 case_id, figure, column):
    """As for one runner: per counted step, one frame of the payload with its head, the
    ring's chunk head and payload for the scheduler -> runner figure over the shm-block
    ring, a ZMTP frame otherwise (one subscriber's; the ranks' and stages' together are
    ``tp_s2r_wire_bytes_all_ranks_per_step``, ``pp_s2r_wire_bytes_all_stages_per_step``)."""
    payload = _counted(runs / run, case_id)[column]
    ring = case_id == TP_RING and column == "s2r_payload_bytes"
    want = (payload.map(ring_message_bytes) if ring
            else payload.map(lambda b: zmtp_frame_bytes(int(b)))).mean()
    summary = json.loads((runs / run / "summary.json").read_text())
    assert next(c for c in summary["cases"] if c["case_id"] == case_id)[figure] == \
        pytest.approx(want, rel=1e-12)
    edited = _edited(runs / run, tmp_path / run, case_id, figure, 1.0)
    _, lines = _loaded(edited)
    assert lines == [
        f"{edited / 'steps.csv'}: case {case_id!r} has a {figure} of {want:,.6g} from its 20 "
        f"counted rows' {column}, but summary.json has {figure} 1 (left out)"]


def _heads(values: pd.Series) -> pd.Series:
    return values.map(lambda b: zmtp_frame_bytes(int(b)) - int(b))


@pytest.mark.parametrize("figure,column", [
    ("pp_s2r_bytes_per_step", "s2r_payload_bytes"),
    ("pp_s2r_wire_bytes_all_stages_per_step", "s2r_payload_bytes"),
    ("pp_r2s_bytes_per_step", "r2s_payload_bytes"),
    ("pp_zmq_frame_head_bytes_per_step", "s2r_payload_bytes and r2s_payload_bytes"),
], ids=["s2r", "s2r-wire", "r2s", "frame-heads"])
def test_an_edited_pp_hop_figure_leaves_the_case_out(runs, tmp_path, figure, column):
    rows = _counted(runs / "pp", PP_SEND)
    s2r, r2s = rows["s2r_payload_bytes"], rows["r2s_payload_bytes"]
    want = {"pp_s2r_bytes_per_step": s2r.mean(),
            "pp_s2r_wire_bytes_all_stages_per_step": (s2r + _heads(s2r)).mean() * 2,
            "pp_r2s_bytes_per_step": r2s.mean(),
            "pp_zmq_frame_head_bytes_per_step": (_heads(s2r) * 2 + _heads(r2s)).mean()}[figure]
    edited = _edited(runs / "pp", tmp_path / "pp", PP_SEND, figure, 999.0)
    results, lines = _loaded(edited)
    assert lines == [
        f"{edited / 'steps.csv'}: case {PP_SEND!r} has a {figure} of {want:,.6g} from its 20 "
        f"counted rows' {column}, but summary.json has {figure} 999 (left out)"]
    assert list(results.cases["case_id"]) == [
        c["case_id"] for c in json.loads((edited / "summary.json").read_text())["cases"]
        if c["case_id"] != PP_SEND]


def test_direct_bytes_of_a_case_without_direct_ids_must_be_0(runs, tmp_path):
    edited = _edited(runs / "pp", tmp_path / "pp", PP_SEND, "pp_direct_bytes_per_step", 8.0)
    _, lines = _loaded(edited)
    assert lines == [
        f"{edited / 'steps.csv'}: case {PP_SEND!r} has a pp_direct_bytes_per_step of 0 from "
        "its pp_direct false (no ids sent between stages), but summary.json has "
        "pp_direct_bytes_per_step 8 (left out)"]


@pytest.mark.parametrize("run,case_id,figure", [
    ("tp", TP_IPC, "tp_ready_ns_median"), ("tp", TP_IPC, "tp_lag_ns_median"),
    ("tp", TP_IPC, "tp_decode_ns_all_ranks_per_step"),
    ("pp", PP_SEND, "pp_hidden_bytes_per_step"), ("pp", PP_SEND, "pp_s2r_ready_ns_median"),
    ("pp", "num_running=4,pp=2/direct/msgpack#0", "pp_direct_bytes_per_step"),
])
def test_figures_no_file_records_the_inputs_of_are_not_checked(runs, tmp_path, run, case_id,
                                                              figure):
    """docs/faults.md's list (loader section): an edit of one loads without a warning."""
    edited = _edited(runs / run, tmp_path / run, case_id, figure, 7.0)
    results, lines = _loaded(edited)
    assert lines == [] and len(results.cases) == NUM_CASES[run]
