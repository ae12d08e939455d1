"""The frontend table repeated a send / cached pair's saving (``send saves B 81.8``,
``saving % control 2.05``) on both rows, as if each case had one, and its ``saving %
control`` did not say whose control plane it divides by (send's: 81.8 / 3,992). The
pair's figures are shown once, on the send row; the column is ``saving % send
control``, and the head line says what the saving is where a pair is shown."""

from __future__ import annotations

from ipc_bench.report.tables import frontend_lines

BASE = dict(scenario="decode-steady", workload="num_running=16", codec="msgpack",
            transport="ipc", runner_to_sched_payload_bytes_per_step=1424.0,
            frontend_bytes_per_step=1033.0, frontend_encode_ns_per_step=4200.0,
            frontend_decode_ns_per_step=10400.0, control_plane_codec_ns_per_step=30000.0,
            send_saving_bytes_per_step=81.8, send_saving_share_of_control_plane=81.8 / 3992)
SEND = dict(BASE, policy="send", sched_to_runner_payload_bytes_per_step=1535.0,
            control_plane_bytes_per_step=3992.0, frontend_share_of_control_plane=1033 / 3992)
CACHED = dict(BASE, policy="cached", sched_to_runner_payload_bytes_per_step=1453.2,
              control_plane_bytes_per_step=3910.2,
              frontend_share_of_control_plane=1033 / 3910.2)

HEAD = ("  frontend hop (EngineCoreOutputs, msgpack) beside the scheduler <-> runner hop, "
        "payload bytes and µs per counted step (fe enc: scheduler, fe dec: frontend; "
        "control = s2r + r2s + fe")
COLUMNS = """\
  policy  codec    transport  s2r B  r2s B   fe B  control B  fe %  fe enc us  fe dec us  codec us all  send - cached B  send - cached % send control
  ------  -------  ---------  -----  -----  -----  ---------  ----  ---------  ---------  ------------  ---------------  ----------------------------"""


def test_a_pairs_saving_is_shown_once_on_the_send_row():
    assert "\n".join(frontend_lines([SEND, CACHED])) == (
        HEAD + "; send - cached B: send's s2r B less cached's (what cached saves), of a "
        "pair that scheduled the same batches, on the send row, and as a share of send's "
        "control B):\n" + COLUMNS + """
  send    msgpack  ipc        1,535  1,424  1,033      3,992  25.9       4.20       10.4          30.0             81.8                          2.05
  cached  msgpack  ipc        1,453  1,424  1,033      3,910  26.4       4.20       10.4          30.0                -                             -""")


def test_a_case_without_a_pair_says_nothing_of_a_saving():
    alone = {k: v for k, v in SEND.items() if not k.startswith("send_saving")}
    assert "\n".join(frontend_lines([alone])) == HEAD + "):\n" + COLUMNS + """
  send    msgpack  ipc        1,535  1,424  1,033      3,992  25.9       4.20       10.4          30.0                -                             -"""


def test_the_reports_frontend_table_shows_the_saving_once_too():
    import types

    import pandas as pd

    from ipc_bench.report.blocks import _frontend_blocks

    results = types.SimpleNamespace(cases=pd.DataFrame(
        [dict(SEND, repetition=0), dict(CACHED, repetition=0)]))
    _, table, text = _frontend_blocks(results, 3)
    assert table == ("table", [
        "rep", "workload", "policy", "codec", "transport", "s2r B", "r2s B", "fe B",
        "control B", "fe %", "fe enc us", "fe dec us", "codec us all", "send - cached B",
        "send - cached % send control"], [
        ["0", "num_running=16", "send", "msgpack", "ipc", "1,535", "1,424", "1,033",
         "3,992", "25.9", "4.2", "10.4", "30.0", "81.8", "2.0"],
        ["0", "num_running=16", "cached", "msgpack", "ipc", "1,453", "1,424", "1,033",
         "3,910", "26.4", "4.2", "10.4", "30.0", "-", "-"]])
    assert ("and send - cached, the bytes cached saves, in bytes and as a share of send's "
            "whole control plane (send's s2r bytes less cached's, of a pair that scheduled "
            "the same batches, over send's `control`), a figure of the pair shown once, on "
            "its send row. The single-process cases") in text[1]
