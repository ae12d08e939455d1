"""The scheduler's end of the ``--tp`` broadcast (``wire.tp.TpSchedulerChannel``),
driven in one process against connected PAIR / SUB sockets standing in for the ranks.

- ``recv_control`` gathers one answer per rank and returns rank 0's; an ``ErrorReport``
  from any rank comes back at once with its rank; a rank that answered and then exited
  (as every rank does after its report) is no fault, one that exited without
  answering is named; a silent rank is named after the timeout.
- Over XPUB one ``send`` reaches every subscriber with the same bytes.
"""

from __future__ import annotations

import threading

import pytest
import zmq

from ipc_bench.wire.control import ErrorReport, RunnerReport, decode_control, encode_control
from ipc_bench.wire.tp import TpSchedulerChannel, TpSchedulerSockets, check_tp
from ipc_bench.wire.transport import (EndpointDir, PeerError, PeerTimeout, destroy_context,
                                      open_socket)

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def two_ranks():
    """``(channel, ctl sockets of rank 0 and 1, SUB sockets of rank 0 and 1, gone)``:
    ``gone`` is the set of ranks whose process ``rank_problem`` reports as exited."""
    endpoint_dir, ctx = EndpointDir(), zmq.Context()
    gone: set[int] = set()
    try:
        socks = TpSchedulerSockets(ctx, "ipc", endpoint_dir, 2)
        ctls = [open_socket(ctx, zmq.PAIR, e, bind=False) for e in socks.endpoints["ctls"]]
        subs = [open_socket(ctx, zmq.SUB, socks.endpoints["s2r"], bind=False) for _ in range(2)]
        for sub in subs:
            sub.setsockopt(zmq.SUBSCRIBE, b"")
        socks.wait_for_subscribers(5.0, lambda: None)
        channel = TpSchedulerChannel(
            socks, None, 1.0, lambda: None,
            rank_problem=lambda r: f"runner process {100 + r} exited with code 0"
            if r in gone else None)
        yield channel, ctls, subs, gone
    finally:
        destroy_context(ctx)
        endpoint_dir.cleanup()


def report(value: int) -> bytes:
    return encode_control(RunnerReport(columns={"x": [value]}))


def test_answers_are_gathered_and_rank_0s_returned(two_ranks):
    channel, ctls, _, _ = two_ranks
    ctls[1].send(report(1))
    ctls[0].send(report(0))
    assert channel.recv_control("report").columns == {"x": [0]}
    assert [m.columns["x"] for m in channel.per_rank] == [[0], [1]]


def test_an_error_report_comes_back_at_once_naming_its_rank(two_ranks):
    channel, ctls, _, _ = two_ranks
    ctls[1].send(encode_control(ErrorReport("boom", 7)))
    msg = channel.recv_control("report")
    assert msg == ErrorReport("rank 1: boom", 7)


def test_a_rank_that_answered_and_exited_is_no_fault(two_ranks):
    channel, ctls, _, gone = two_ranks
    ctls[0].send(report(0))
    gone.add(0)
    late = threading.Timer(0.3, lambda: ctls[1].send(report(1)))
    late.start()
    try:
        assert channel.recv_control("report").columns == {"x": [0]}
    finally:
        late.join()
    assert channel.per_rank[1].columns == {"x": [1]}


def test_a_rank_that_exited_without_answering_is_named(two_ranks):
    channel, ctls, _, gone = two_ranks
    ctls[0].send(report(0))
    gone.add(1)
    with pytest.raises(PeerError, match=r"^rank 1: runner process 101 exited with code 0, "
                                        r"noticed while waiting for report$"):
        channel.recv_control("report")


def test_a_silent_rank_is_named_after_the_timeout(two_ranks):
    channel, ctls, _, _ = two_ranks
    ctls[1].send(report(1))
    with pytest.raises(PeerTimeout) as err:  # the harness's words ("from the runner")
        channel.recv_control("report from the runner", timeout_s=0.3)
    assert str(err.value) == ("no report from the runner within 0.3 s (rank(s) 0 did not "
                              "answer)")  # was "... from the runner from rank(s) 0 ..."


def test_one_send_reaches_every_subscriber_with_the_same_bytes(two_ranks):
    channel, ctls, subs, _ = two_ranks
    frame = bytes(range(256)) * 40
    channel.send(frame, 0)
    assert channel.in_flight == 1 and len(channel.sent_ns) == 1
    for sub in subs:
        assert sub.poll(5000) and sub.recv() == frame
    channel.send_marker()
    for sub in subs:
        assert sub.poll(5000) and sub.recv() == b""
    ctls[0].send(b"\x00")  # not a control message: the rank is named
    with pytest.raises(PeerError, match=r"rank 0"):
        channel.recv_control("report")


@pytest.mark.parametrize("value", [0, 3, 8])
def test_check_tp_refuses_other_rank_counts(value):
    with pytest.raises(ValueError, match=rf"^--tp must be one of 1, 2, 4, got {value}$"):
        check_tp(value)
    assert check_tp(4) == 4


def test_decode_control_is_the_channels_codec():
    assert decode_control(report(3), "x") == RunnerReport(columns={"x": [3]})
