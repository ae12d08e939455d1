"""The frontend-hop table (the terminal's ``frontend_lines``, the report's "Frontend
hop") printed ``fe enc us``, ``fe dec us`` and ``codec us all`` for a case whose
timings are withheld (``analysis.cores``: a ``--frontend`` two-process case, N = 2, on
2 cores) and marked no row; the terminal's, which did leave them out, also left out the
case's ``fe %``, a share of bytes. A withheld case's µs are ``-`` and its transport
``*``, a case shown on N + 1 cores (N = 1) is marked ``°``, and the bytes stay; the
report's table carries the case tables' footnotes under it."""

from __future__ import annotations

import types

import pandas as pd

from ipc_bench.report.blocks import _frontend_blocks
from ipc_bench.report.tables import frontend_lines

BASE = dict(scenario="decode-steady", workload="num_running=1", policy="send",
            codec="msgpack", transport="ipc", frontend=True,
            sched_to_runner_payload_bytes_per_step=113.0,
            runner_to_sched_payload_bytes_per_step=98.0, frontend_bytes_per_step=206.0,
            control_plane_bytes_per_step=417.0, frontend_share_of_control_plane=206 / 417,
            frontend_encode_ns_per_step=1400.0, frontend_decode_ns_per_step=2400.0,
            control_plane_codec_ns_per_step=11500.0)
#: runner + frontend (N = 2) on 2 cores: withheld.
WITHHELD = dict(BASE, runner_readers=2, runner_cores=2, runner_timings_withheld=True,
                runner_timings_marked=False)
#: the single process with its frontend (N = 1) on 2 cores: shown, marked.
MARKED = dict(BASE, transport="inproc", codec="none",
              sched_to_runner_payload_bytes_per_step=None,
              runner_to_sched_payload_bytes_per_step=None,
              control_plane_bytes_per_step=206.0, frontend_share_of_control_plane=1.0,
              control_plane_codec_ns_per_step=1600.0, runner_readers=1, runner_cores=2,
              runner_timings_withheld=False, runner_timings_marked=True)
#: runner + frontend on 4 cores: shown.
SHOWN = dict(BASE, runner_readers=2, runner_cores=4, runner_timings_withheld=False,
             runner_timings_marked=False)


def test_the_terminal_table_withholds_the_timings_and_marks_the_rows():
    assert frontend_lines([WITHHELD, MARKED, SHOWN])[1:] == [
        "  policy  codec    transport  s2r B  r2s B   fe B  control B   fe %  fe enc us  fe dec us  codec us all  send - cached B  send - cached % send control",
        "  ------  -------  ---------  -----  -----  -----  ---------  -----  ---------  ---------  ------------  ---------------  ----------------------------",
        "  send    msgpack  ipc*       113.0   98.0  206.0      417.0   49.4          -          -             -                -                             -",
        "  send    none     inproc°        -      -  206.0      206.0  100.0       1.40       2.40          1.60                -                             -",
        "  send    msgpack  ipc        113.0   98.0  206.0      417.0   49.4       1.40       2.40          11.5                -                             -",
        "  ° 2 cores: the scheduler and its frontend had a core each and none was spare for "
        "the kernel and the harness's threads; no A/A pair in this table measures the "
        "noise this leaves."]


def test_the_reports_table_withholds_the_timings_marks_the_rows_and_says_why():
    results = types.SimpleNamespace(cases=pd.DataFrame(
        [dict(s, repetition=0) for s in (WITHHELD, MARKED, SHOWN)]))
    heading, table, held, shared, _ = _frontend_blocks(results, 3)
    assert heading == ("h", 3, "Frontend hop")
    assert table[2] == [
        ["0", "num_running=1", "send", "msgpack", "ipc*", "113", "98.0", "206", "417",
         "49.4", "-", "-", "-", "-", "-"],
        ["0", "num_running=1", "send", "none", "inproc\u00b0", "-", "-", "206", "206",
         "100", "1.4", "2.4", "1.6", "-", "-"],
        ["0", "num_running=1", "send", "msgpack", "ipc", "113", "98.0", "206", "417",
         "49.4", "1.4", "2.4", "11.5", "-", "-"]]
    assert held == ("p", "`*` timings left out: the scheduler, its runner and its "
                         "frontend need a core each and a spare for the kernel and the "
                         "harness's threads, 4 in all; the run's machine had 2. Bytes and "
                         "the oracles hold.")
    assert shared == ("p", "`\u00b0` 2 cores: the scheduler and its frontend had a core "
                           "each and none was spare for the kernel and the harness's "
                           "threads; no A/A pair in this table measures the noise this "
                           "leaves.")


def test_a_table_of_shown_cases_has_no_footnote():
    results = types.SimpleNamespace(cases=pd.DataFrame([dict(SHOWN, repetition=0)]))
    blocks = _frontend_blocks(results, 3)
    assert [b[0] for b in blocks] == ["h", "table", "p"]
    assert blocks[1][2] == [
        ["0", "num_running=1", "send", "msgpack", "ipc", "113", "98.0", "206", "417",
         "49.4", "1.4", "2.4", "11.5", "-", "-"]]
