"""The frontend table headed send's s2r bytes less cached's ``send saves B`` (19.9 at 4
running), though it is how many more bytes send ships, and showed ``0.0`` there on the
single-process rows, which send no scheduler -> runner message at all. The columns
read ``send - cached B`` and ``send - cached % send control``, as the rest of the
report reads a difference, and a single-process row shows ``-``, said under the
table."""

from __future__ import annotations

import types

import pandas as pd

from ipc_bench.report.blocks import _frontend_blocks
from ipc_bench.report.tables import frontend_lines

BASE = dict(scenario="decode-steady", workload="num_running=4", repetition=0,
            frontend_bytes_per_step=371.0, frontend_encode_ns_per_step=1500.0,
            frontend_decode_ns_per_step=3300.0, control_plane_codec_ns_per_step=17000.0)
TWO = dict(BASE, codec="msgpack", transport="ipc",
           runner_to_sched_payload_bytes_per_step=362.0,
           send_saving_bytes_per_step=19.9, send_saving_share_of_control_plane=19.9 / 1126)
SEND = dict(TWO, policy="send", sched_to_runner_payload_bytes_per_step=393.0,
            control_plane_bytes_per_step=1126.0, frontend_share_of_control_plane=371 / 1126)
CACHED = dict(TWO, policy="cached", sched_to_runner_payload_bytes_per_step=373.1,
              control_plane_bytes_per_step=1106.1,
              frontend_share_of_control_plane=371 / 1106.1)
# the single process: no s2r or r2s message, and a pair's difference of 0 in its summary
ONE = dict(BASE, codec="none", transport="inproc", sched_to_runner_payload_bytes_per_step=0.0,
           runner_to_sched_payload_bytes_per_step=0.0, control_plane_bytes_per_step=371.0,
           frontend_share_of_control_plane=1.0, control_plane_codec_ns_per_step=3100.0,
           send_saving_bytes_per_step=0.0, send_saving_share_of_control_plane=0.0)


def test_the_reports_frontend_table_reads_send_minus_cached_and_dashes_the_single_process():
    cases = pd.DataFrame([SEND, CACHED, dict(ONE, policy="send"), dict(ONE, policy="cached")])
    for col in ("sched_to_runner_payload_bytes_per_step",
                "runner_to_sched_payload_bytes_per_step"):  # NaN as loading leaves them
        cases.loc[cases.codec == "none", col] = float("nan")
    _, table, text = _frontend_blocks(types.SimpleNamespace(cases=cases), 2)
    assert table == ("table", [
        "rep", "workload", "policy", "codec", "transport", "s2r B", "r2s B", "fe B",
        "control B", "fe %", "fe enc us", "fe dec us", "codec us all", "send - cached B",
        "send - cached % send control"], [
        ["0", "num_running=4", "send", "msgpack", "ipc", "393", "362", "371", "1,126",
         "32.9", "1.5", "3.3", "17.0", "19.9", "1.8"],
        ["0", "num_running=4", "cached", "msgpack", "ipc", "373", "362", "371", "1,106",
         "33.5", "1.5", "3.3", "17.0", "-", "-"],
        ["0", "num_running=4", "send", "none", "inproc", "-", "-", "371", "371", "100",
         "1.5", "3.3", "3.1", "-", "-"],
        ["0", "num_running=4", "cached", "none", "inproc", "-", "-", "371", "371", "100",
         "1.5", "3.3", "3.1", "-", "-"]])
    assert text == ("p", (
        "The engine core -> frontend hop (`EngineCoreOutputs`, msgspec msgpack over "
        "ZeroMQ PUSH/PULL, as vLLM V1) beside the scheduler <-> runner hop: payload bytes "
        "per counted step of each hop (`s2r`, `r2s`, `fe`) and of the whole control plane "
        "(`control`), the frontend hop's encode (in the scheduler) and decode (in the "
        "frontend) µs per step, the encode + decode µs of all three messages, and send - "
        "cached, the bytes cached saves, in bytes and as a share of send's whole control "
        "plane (send's s2r bytes less cached's, of a pair that scheduled the same batches, "
        "over send's `control`), a figure of the pair shown once, on its send row. The "
        "single-process cases serialize only the frontend hop (no s2r message: `-` for "
        "send - cached). The frontend's token streams equalled the scheduler's in every "
        "case shown (a difference fails the case)."))


def test_without_a_single_process_row_the_caption_says_nothing_of_one():
    _, _, text = _frontend_blocks(types.SimpleNamespace(cases=pd.DataFrame([SEND, CACHED])), 2)
    assert ("on its send row. The single-process cases serialize only the frontend hop. "
            "The frontend's token streams") in text[1]


def test_the_terminal_table_reads_send_minus_cached_and_dashes_the_single_process():
    assert "\n".join(frontend_lines([SEND, CACHED, dict(ONE, policy="send")])) == """\
  frontend hop (EngineCoreOutputs, msgpack) beside the scheduler <-> runner hop, payload \
bytes and µs per counted step (fe enc: scheduler, fe dec: frontend; control = s2r + r2s + \
fe; send - cached B: send's s2r B less cached's (what cached saves), of a pair that \
scheduled the same batches, on the send row, and as a share of send's control B; - on a \
single-process row, which has no s2r or r2s message):
  policy  codec    transport  s2r B  r2s B   fe B  control B   fe %  fe enc us  fe dec us  codec us all  send - cached B  send - cached % send control
  ------  -------  ---------  -----  -----  -----  ---------  -----  ---------  ---------  ------------  ---------------  ----------------------------
  send    msgpack  ipc        393.0  362.0  371.0      1,126   32.9       1.50       3.30          17.0             19.9                          1.77
  cached  msgpack  ipc        373.1  362.0  371.0      1,106   33.5       1.50       3.30          17.0                -                             -
  send    none     inproc         -      -  371.0      371.0  100.0       1.50       3.30          3.10                -                             -"""
