"""Requests preempted when the KV cache ran out of blocks: the terminal, the report's
case notes and its findings say how often, as they say rejected and cut requests."""

from __future__ import annotations

from ipc_bench.report.blocks import _request_notes
from ipc_bench.report.tables import PREEMPTED_MEANING, preempted_note

W = "trace=azure-conv-timed:30"


def _cases(*counts: int) -> list[dict]:
    return [dict(case_id=f"{W}/{p}/msgpack#0", workload=W, num_requests=30,
                 num_preemptions=n) for p, n in zip(("send", "cached"), counts)]


def test_no_preemption_gives_no_note():
    assert preempted_note(_cases(0, 0)) is None
    assert preempted_note([dict(case_id="x")]) is None  # a summary written before it
    assert _request_notes(_cases(0, 0)) == []


def test_equal_counts_are_said_once_with_what_they_mean():
    note = preempted_note(_cases(63, 63))
    assert note == (
        "preempted: 63 times in each case (the KV cache ran out of blocks: the last "
        "running request gave its blocks back and was recomputed from its first token "
        "when resumed; --num-blocks sets the cache)")
    assert _request_notes(_cases(63, 63)) == [(
        "p", "Preempted: 63 times in each case (the KV cache ran out of blocks: the last "
             "running request gave its blocks back and was recomputed from its first token "
             "when resumed; `--num-blocks` sets the cache). " + PREEMPTED_MEANING)]


def test_unequal_counts_name_each_case():
    assert preempted_note(_cases(1_200, 7)) == (
        f"preempted: 1,200 times at most (per case: {W}/send/msgpack#0 1,200, "
        f"{W}/cached/msgpack#0 7) (the KV cache ran out of blocks: the last running "
        "request gave its blocks back and was recomputed from its first token when "
        "resumed; --num-blocks sets the cache)")
    ((_, text),) = _request_notes(_cases(1_200, 7))
    assert text.endswith("do not compare.")


def test_one_case_is_not_said_as_each():
    (one,) = _cases(78)[:1]
    assert preempted_note([one]).startswith("preempted: 78 times (the KV cache ran out")
