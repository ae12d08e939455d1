"""A timed replay's frontend table (``--frontend``) showed ``-`` for send - cached on
its send row with no word of why: its send and cached cases scheduled other batches
(unequal schedule digests), so ``frontend.pair_send_savings`` gives the pair no saving.
The terminal's head line and the report's caption say so, in one sentence
(``tables.schedules_apart_text``); a pair that scheduled the same batches, or a send
case alone, reads as before."""

from __future__ import annotations

import types

import pandas as pd

from ipc_bench.report.blocks import _frontend_blocks
from ipc_bench.report.tables import frontend_lines

BASE = dict(scenario="azure-conv-timed", workload="trace=azure-conv-timed:40",
            codec="msgpack", transport="ipc", repetition=0, trace_speedup=10.0,
            runner_to_sched_payload_bytes_per_step=168.2, frontend_bytes_per_step=249.9,
            frontend_encode_ns_per_step=1380.0, frontend_decode_ns_per_step=3000.0,
            control_plane_codec_ns_per_step=13300.0)
SEND = dict(BASE, policy="send", schedule_digest="b857",
            sched_to_runner_payload_bytes_per_step=219.3, control_plane_bytes_per_step=637.4,
            frontend_share_of_control_plane=249.9 / 637.4)
CACHED = dict(BASE, policy="cached", schedule_digest="6dd1",
              sched_to_runner_payload_bytes_per_step=202.6,
              control_plane_bytes_per_step=620.4, frontend_share_of_control_plane=249.9 / 620.4)
WHY = ("on a send row whose cached case scheduled other batches (schedules differ, as a "
       "timed replay's arms do), where send - cached would be no like-for-like saving")
HEAD = ("  frontend hop (EngineCoreOutputs, msgpack) beside the scheduler <-> runner hop, "
        "payload bytes and µs per counted step (fe enc: scheduler, fe dec: frontend; "
        "control = s2r + r2s + fe")
SAVING = ("; send - cached B: send's s2r B less cached's (what cached saves), of a pair "
          "that scheduled the same batches, on the send row, and as a share of send's "
          "control B")
COLUMNS = """\
  policy  codec    transport  s2r B  r2s B   fe B  control B  fe %  fe enc us  fe dec us  codec us all  send - cached B  send - cached % send control
  ------  -------  ---------  -----  -----  -----  ---------  ----  ---------  ---------  ------------  ---------------  ----------------------------
  send    msgpack  ipc        219.3  168.2  249.9      637.4  39.2       1.38       3.00          13.3                -                             -
  cached  msgpack  ipc        202.6  168.2  249.9      620.4  40.3       1.38       3.00          13.3                -                             -"""
CAPTION_END = ("a figure of the pair shown once, on its send row{}. The single-process "
               "cases serialize only the frontend hop. The frontend's token streams "
               "equalled the scheduler's in every case shown (a difference fails the "
               "case).")


def test_the_terminal_says_why_the_send_row_has_no_saving():
    assert "\n".join(frontend_lines([SEND, CACHED])) == (
        HEAD + SAVING + f"; - {WHY}):\n" + COLUMNS)


def test_the_report_says_why_under_its_table():
    cases = pd.DataFrame([SEND, CACHED])
    _, table, (kind, text) = _frontend_blocks(types.SimpleNamespace(cases=cases), 2)
    assert [row[-2:] for row in table[2]] == [["-", "-"], ["-", "-"]]
    assert kind == "p" and text.endswith(CAPTION_END.format(f"; `-` {WHY}"))


def test_a_pair_of_equal_schedules_or_a_case_alone_reads_as_before():
    same = dict(CACHED, schedule_digest="b857")
    alone = "\n".join(frontend_lines([SEND]))
    assert alone == HEAD + "):\n" + COLUMNS.rsplit("\n", 1)[0]
    cases = pd.DataFrame([SEND])
    _, _, (_, text) = _frontend_blocks(types.SimpleNamespace(cases=cases), 2)
    assert text.endswith(CAPTION_END.format(""))
    assert WHY not in "\n".join(frontend_lines([SEND, same]))
