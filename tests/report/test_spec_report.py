"""The report's and the terminal's speculative-decoding tables (``--num-spec-tokens``)."""

from __future__ import annotations

import types

import pandas as pd

from ipc_bench.report.blocks import _spec_blocks
from ipc_bench.report.tables import spec_decode_lines


def case(k, policy, s2r, **kw):
    return dict(workload=f"num_running=4,num_spec_tokens={k}", policy=policy, codec="msgpack",
                transport="ipc", repetition=0, num_spec_tokens=k,
                spec_acceptance=0.7 if k else None,
                sched_to_runner_payload_bytes_per_step=s2r, **kw)


def test_spec_block_gives_send_minus_cached_and_its_share():
    spec = dict(scheduled_tokens_per_step=12.0, output_tokens_per_step=8.76,
                spec_accepted_tokens_per_step=4.76, spec_draft_acceptance_rate=0.595)
    cases = pd.DataFrame([case(0, "send", 500.0), case(0, "cached", 480.0),
                          case(2, "send", 700.0, **spec), case(2, "cached", 680.0, **spec)])
    blocks = _spec_blocks(types.SimpleNamespace(cases=cases), 2)
    assert blocks[0] == ("h", 2, "Speculative decoding")
    _, head, rows = blocks[1]
    assert head[-2:] == ["send - cached B/step", "send's share"]
    assert rows[0][-3:] == ["500", "20.0", "4.0 %"]
    assert rows[2][4:] == ["2", "0.70", "12.00", "8.76", "4.76", "0.59", "700", "20.0",
                           "2.9 %"]
    assert rows[3][-2:] == ["-", "-"]
    lines = spec_decode_lines(cases.to_dict("records"))
    assert lines[0].startswith("  speculative decoding per counted step")
    assert lines[1].split() == ["policy", "codec", "transport", "K", "P", "sched", "tok/step",
                                "out", "tok/step", "accepted/step", "accepted/drafted", "s2r",
                                "B/step", "tok", "B/step"]
    assert lines[5].split() == ["send", "msgpack", "ipc", "2", "0.7", "12.0", "8.76", "4.76",
                                "0.59", "700.0", "-"]
    # the single process sends no bytes: '-', as in the case table, not 0
    inproc = dict(case(2, "send", 0.0, **spec), codec="none", transport="inproc",
                  decode_token_bytes_per_step=0.0)
    (row,) = spec_decode_lines([inproc])[3:]
    assert row.split()[-2:] == ["-", "-"]


def test_no_spec_block_without_draft_tokens():
    cases = pd.DataFrame([case(0, "send", 500.0), case(0, "cached", 480.0)])
    assert _spec_blocks(types.SimpleNamespace(cases=cases), 2) == []
    assert spec_decode_lines(cases.to_dict("records")) == []
