"""Work between the measured loop and the floor, and before the runner's report, grows
with the step count while the other end waits under its peer timeout: each end keeps the
other waiting (``KeepAlive``, ``wire.control.Heartbeat``) however long it takes.

The preparations are made slow per step (a sleep per decoded frame or digested output),
as a very long run's are: 95 counted steps of 60 ms each are 5.7 s, over 1.4 times the
4 s peer timeout (not 1 s: on a loaded machine a step was seen to wait over 1 s for its
frame, and 2 s left the whole run's steps no room for a 2 s stall; a busy machine only
makes the preparations longer). The single calls over the
whole heap (a collection, a heap report) are made 5 s long in one piece; they sleep, so the thread of ``wire.control.beating`` can run
(a real collection's walk holds the interpreter lock and keeps it out).
"""

from __future__ import annotations

import gc
import math
import sys
import time

import numpy as np
import pytest

from fault_helpers import FAKE_RUNNER, SlowDecode, steady_case
from ipc_bench.analysis.summary import summarize_case
from ipc_bench.harness import floor, frontend_hop, memory, recording, scheduler_loop
from ipc_bench.harness.memory import HEAP_REPORT_ENV
from ipc_bench.harness.scheduler_loop import ChannelExchange
from ipc_bench.harness.spec import RUNNER_COLUMNS, SCHED_COLUMNS, CaseResult
from ipc_bench.harness.supervisor import run_case
from ipc_bench.wire import channel as channel_module
from ipc_bench.wire import tp as tp_module
from ipc_bench.wire.control import Heartbeat, KeepAlive
from ipc_bench.wire.tp import OUTPUT_DIGEST_COLUMN

STEPS, WARMUP = 100, 5  # steady_case's warm-up
TIMEOUT_S = 4.0
DELAY_S = 0.06
#: Fewest KeepAlive a 5.7 s preparation sends: one per quarter timeout (1 s) after the
#: first, each at most one 60 ms piece late.
MIN_KEEPALIVES = int((STEPS - WARMUP) * DELAY_S // (TIMEOUT_S / 4 + DELAY_S))


def _spec(peer_timeout_s: float = TIMEOUT_S, **kw):
    spec = steady_case(max_steps=STEPS, peer_timeout_s=peer_timeout_s, **kw)
    spec.floor = True
    return spec


def _assert_complete(result: CaseResult) -> None:
    """Every step ran, the runner reported every step, the floor replayed every
    counted step, and the summary has the floor's figures."""
    assert result.counted_seqs == list(range(WARMUP, STEPS))
    assert len(result.sched_rows) == STEPS
    assert {name: len(result.runner_columns[name]) for name in RUNNER_COLUMNS} == {
        name: STEPS for name in RUNNER_COLUMNS}
    assert len(result.floor_step_ns) == STEPS - WARMUP
    assert min(result.floor_step_ns) > 0
    summary = summarize_case(result)
    assert math.isfinite(summary["step_to_floor_ratio"]) and summary["step_to_floor_ratio"] > 0


def _count_runner_keepalives(monkeypatch) -> list[int]:
    """Counts the ``KeepAlive`` messages the scheduler's control waits read (and skip)."""
    count = [0]
    real = channel_module.decode_control

    def decode_control(frame, what="a control message"):
        msg = real(frame, what)
        count[0] += isinstance(msg, KeepAlive)
        return msg

    monkeypatch.setattr(channel_module, "decode_control", decode_control)
    monkeypatch.setattr(tp_module, "decode_control", decode_control)
    return count


def _count_scheduler_keepalives(monkeypatch) -> list[Heartbeat]:
    """The ``Heartbeat`` objects of the scheduler's exchanges (``KeepAlive`` markers to
    the runner: ``sum(h.sent for h in ...)``), each with the ``fresh`` it was made with."""
    heartbeats: list[Heartbeat] = []
    real_heartbeat = ChannelExchange.heartbeat

    def heartbeat(self, fresh=True):
        heartbeats.append(real_heartbeat(self, fresh))
        heartbeats[-1].fresh = fresh
        return heartbeats[-1]

    monkeypatch.setattr(ChannelExchange, "heartbeat", heartbeat)
    return heartbeats


def test_heartbeat_sends_once_a_quarter_of_the_timeout_has_passed():
    ms = 1_000_000
    now = [1_000 * ms]
    sent = []
    hb = Heartbeat(lambda: sent.append(now[0] // ms), timeout_s=2.0, clock=lambda: now[0])
    for t in (1_100, 1_499, 1_500, 1_700, 1_999, 2_000, 2_600):
        now[0] = t * ms
        hb.beat()
    assert sent == [1_500, 2_000, 2_600] and hb.sent == 3


@pytest.mark.parametrize("scheduling", ["sync", "async"])
def test_the_runner_waits_while_the_scheduler_decodes_the_floor_frames(monkeypatch,
                                                                        scheduling):
    # Before the floor's marker the scheduler decodes every counted frame; the runner
    # waits for its next frame under the peer timeout (async scheduling: the same floor
    # after the async loop's end).
    real = floor.scheduler_output_codec
    monkeypatch.setattr(floor, "scheduler_output_codec",
                        lambda name: SlowDecode(real(name), DELAY_S))
    heartbeats = _count_scheduler_keepalives(monkeypatch)
    result = run_case(_spec(policy="cached", async_scheduling=scheduling == "async"))
    _assert_complete(result)
    keepalives = sum(h.sent for h in heartbeats)
    assert keepalives >= MIN_KEEPALIVES == 5
    # Empty frames: the end of warm-up (EndWarmup), the input oracle's check at the
    # end, the floor's start, the stop and one per KeepAlive.
    assert result.s2r_marker_frames == 4 + keepalives


def test_the_scheduler_waits_while_the_runner_decodes_the_floor_replies(monkeypatch):
    # Before FloorReady the runner decodes the recorded reply of every counted step; the
    # scheduler waits for FloorReady under the peer timeout.
    monkeypatch.setenv("FAKE_RUNNER_MODE", "slow-floor")
    monkeypatch.setenv("FAKE_RUNNER_DELAY_S", str(DELAY_S))
    keepalives = _count_runner_keepalives(monkeypatch)
    result = run_case(_spec(), runner_command=[sys.executable, str(FAKE_RUNNER)])
    _assert_complete(result)
    assert keepalives[0] >= MIN_KEEPALIVES


@pytest.mark.parametrize("mode", ["slow-floor", "slow-report"])
def test_tp_ranks_keep_the_scheduler_waiting_through_their_preparations(monkeypatch, mode):
    # --tp 2: each rank decodes the floor's replies (slow-floor), and digests every output
    # for its report (slow-report), while the scheduler waits for all of them.
    monkeypatch.setenv("FAKE_RUNNER_MODE", mode)
    monkeypatch.setenv("FAKE_RUNNER_DELAY_S", str(DELAY_S))
    keepalives = _count_runner_keepalives(monkeypatch)
    result = run_case(_spec(tp=2), runner_command=[sys.executable, str(FAKE_RUNNER)])
    _assert_complete(result)
    assert [len(c[OUTPUT_DIGEST_COLUMN]) for c in result.tp_rank_columns] == [STEPS, STEPS]
    assert keepalives[0] >= 2 * MIN_KEEPALIVES  # from each rank


def _time_rank_messages(monkeypatch) -> list[tuple[float, str, str]]:
    """``(time.monotonic(), what, message type)`` of every control message the
    scheduler sends to the ``--tp`` ranks (``what``: ``"sent"``) and reads from them
    (``what`` names the rank: ``"... (rank R)"``), in order."""
    events = []
    real_decode, real_encode = tp_module.decode_control, tp_module.encode_control

    def decode_control(frame, what="a control message"):
        msg = real_decode(frame, what)
        events.append((time.monotonic(), what, type(msg).__name__))
        return msg

    def encode_control(msg):
        events.append((time.monotonic(), "sent", type(msg).__name__))
        return real_encode(msg)

    monkeypatch.setattr(tp_module, "decode_control", decode_control)
    monkeypatch.setattr(tp_module, "encode_control", encode_control)
    return events


#: This test's peer timeout: 6 s, whose quarter (1.5 s) and the columns' delay below
#: leave a second of this machine's scheduling between the silence it checks and the
#: one the old count gave (with a 2 s timeout, 0.5 s against 0.9 s, a loaded 2-core
#: machine stretched a silence to 0.74 s and failed a bound of a quarter plus 0.2 s).
REPORT_TIMEOUT_S = 6.0
#: The model's columns, the last piece of a rank's report before its output digest,
#: made this long: under a quarter of the peer timeout, so no KeepAlive follows it.
COLUMNS_DELAY_S = 1.2
#: Fewest KeepAlive the digest (95 outputs of 60 ms) sends under that timeout.
MIN_REPORT_KEEPALIVES = int((STEPS - WARMUP) * DELAY_S // (REPORT_TIMEOUT_S / 4 + DELAY_S))


def test_tp_ranks_digest_within_the_quarter_of_their_report(monkeypatch):
    # --tp 2: on Stop each rank builds its report (here its model's columns take 1.2 s,
    # under the 1.5 s quarter of the 6 s peer timeout), then digests every output
    # (0.06 s each). The digest goes on counting the report's quarter: the scheduler
    # hears from each rank 1.5 s after the Stop (one 60 ms piece late at most), not
    # 1.2 + 1.5 s after it, and then every quarter.
    monkeypatch.setenv("FAKE_RUNNER_MODE", "slow-report")
    monkeypatch.setenv("FAKE_RUNNER_DELAY_S", str(DELAY_S))
    monkeypatch.setenv("FAKE_RUNNER_COLUMNS_DELAY_S", str(COLUMNS_DELAY_S))
    events = _time_rank_messages(monkeypatch)
    spec = steady_case(max_steps=STEPS, peer_timeout_s=REPORT_TIMEOUT_S, tp=2)
    spec.floor = True
    result = run_case(spec, runner_command=[sys.executable, str(FAKE_RUNNER)])
    _assert_complete(result)
    [stop_t] = [t for t, what, kind in events if (what, kind) == ("sent", "Stop")]
    for rank in (0, 1):
        heard = [(t, kind) for t, what, kind in events
                 if t > stop_t and what.endswith(f"(rank {rank})")]
        assert [kind for _, kind in heard] == ["KeepAlive"] * (len(heard) - 1) + [
            "RunnerReport"]
        assert len(heard) - 1 >= MIN_REPORT_KEEPALIVES == 3
        times = [stop_t] + [t for t, _ in heard]
        silences = [b - a for a, b in zip(times, times[1:])]
        # a quarter, one piece and this machine's scheduling (up to a second), under the
        # 1.2 + 1.5 s that counting the quarter from the columns' end gives at the least
        assert max(silences) < COLUMNS_DELAY_S + REPORT_TIMEOUT_S / 4 - 0.1, (
            rank, silences[:3])


#: A single call of the end of a case (a collection, a heap report) made this long:
#: 1.25 times the peer timeout, in one piece that no ``Heartbeat.beat`` between pieces
#: can split.
LONG_CALL_S = 5.0
#: Fewest KeepAlive sent while such a call runs: one per quarter timeout.
MIN_LONG_CALL_KEEPALIVES = int(LONG_CALL_S // (TIMEOUT_S / 4)) - 1


class _SlowCollect:
    """The ``gc`` module as one module sees it, with ``collect`` ``delay_s`` longer
    (sleeping first: a collection of a very large heap)."""

    def __init__(self, delay_s: float):
        self.delay_s = delay_s

    def __getattr__(self, name):
        return getattr(gc, name)

    def collect(self, *args):
        time.sleep(self.delay_s)
        return gc.collect(*args)


@pytest.mark.parametrize("module,scheduling", [(scheduler_loop, "sync"),
                                               (scheduler_loop, "async"), (floor, "sync")],
                         ids=["warm-up", "warm-up-async", "floor"])
def test_the_runner_waits_while_the_scheduler_collects_its_heap(monkeypatch, module,
                                                                scheduling):
    # The scheduler collects its heap at the end of warm-up (the runner waits for the
    # next step) and before it decodes the floor's frames (the runner waits
    # for the floor's marker): one call each, here 5 s under a 4 s peer timeout.
    monkeypatch.setattr(module, "gc", _SlowCollect(LONG_CALL_S))
    heartbeats = _count_scheduler_keepalives(monkeypatch)
    result = run_case(_spec(policy="cached", async_scheduling=scheduling == "async"))
    _assert_complete(result)
    keepalives = sum(h.sent for h in heartbeats)
    assert keepalives >= MIN_LONG_CALL_KEEPALIVES == 4
    assert result.s2r_marker_frames == 4 + keepalives  # as above


@pytest.mark.parametrize("instrumentation", ["steps", "totals"])
def test_the_runner_waits_while_the_scheduler_digests_the_tokens(monkeypatch,
                                                                 instrumentation):
    # At the end of the case the scheduler digests every request's output ids (24
    # requests here, 0.24 s each: 5.76 s), the measured loop and the bare loop alike,
    # while the runner waits for its next frame.
    real = recording._digest_bytes

    def slow_digest_bytes(index, out):
        time.sleep(0.24)
        return real(index, out)

    monkeypatch.setattr(recording, "_digest_bytes", slow_digest_bytes)
    heartbeats = _count_scheduler_keepalives(monkeypatch)
    spec = _spec(instrumentation=instrumentation)
    spec.floor = instrumentation == "steps"
    result = run_case(spec)
    assert len(result.token_digest) == 64
    if instrumentation == "steps":
        _assert_complete(result)
        assert len(result.requests) == 24
    else:
        assert result.loop_totals["loop_steps"] == STEPS - WARMUP
    keepalives = sum(h.sent for h in heartbeats)
    assert keepalives >= int(24 * 0.24 // (TIMEOUT_S / 4 + 0.24)) == 4


def test_the_runner_waits_while_the_scheduler_writes_its_heap_report(monkeypatch):
    # IPC_BENCH_HEAP_REPORT: after the request records the scheduler collects its heap
    # and writes its heap report, one call each, while the runner waits for the
    # floor's marker.
    monkeypatch.setenv(HEAP_REPORT_ENV, "stats")
    real = memory.HeapReport.report

    def slow_report(self, title):
        time.sleep(LONG_CALL_S)
        return real(self, title)

    monkeypatch.setattr(memory.HeapReport, "report", slow_report)
    heartbeats = _count_scheduler_keepalives(monkeypatch)
    result = run_case(_spec())
    _assert_complete(result)
    assert result.heap_reports["scheduler"].startswith(
        "== scheduler num_running=16/send/msgpack#0: heap report (stats)\n")
    assert sum(h.sent for h in heartbeats) >= MIN_LONG_CALL_KEEPALIVES


def test_the_scheduler_waits_while_the_runner_writes_its_heap_report(monkeypatch):
    # IPC_BENCH_HEAP_REPORT: on Stop the runner writes its heap report (one call, 5 s
    # here) before it builds its RunnerReport; the scheduler waits for that report
    # under the 4 s peer timeout.
    monkeypatch.setenv(HEAP_REPORT_ENV, "stats")
    monkeypatch.setenv("FAKE_RUNNER_MODE", "slow-heap-report")
    monkeypatch.setenv("FAKE_RUNNER_DELAY_S", str(LONG_CALL_S))
    keepalives = _count_runner_keepalives(monkeypatch)
    result = run_case(_spec(), runner_command=[sys.executable, str(FAKE_RUNNER)])
    _assert_complete(result)
    [runner_key] = [k for k in result.heap_reports if k != "scheduler"]
    assert result.heap_reports[runner_key].startswith("== runner (pid ")
    assert keepalives[0] >= MIN_LONG_CALL_KEEPALIVES


def test_the_step_end_times_are_read_in_chunks_with_a_beat_after_each():
    # A timed replay's request latencies need every step's end time: one numpy call over
    # all rows cost about 1 us per step, so it reads 4,096 rows between two beats.
    width = len(SCHED_COLUMNS)
    step, end = SCHED_COLUMNS.index("step"), SCHED_COLUMNS.index("t_end_ns")
    rows = []
    for i in range(10_000):
        row = [0] * width
        row[step], row[end] = 2 * i, 1_000_000 * i
        rows.append(tuple(row))
    beats = []
    for given in (rows, np.asarray(rows, dtype=np.int64)):
        ends = recording.StepEnds.of_rows(given, lambda: beats.append(1))
        assert len(ends) == 10_000
        assert ends.steps.tolist() == list(range(0, 20_000, 2))
        assert ends.times([0, 2, 19_998, 3]) == [0.0, 0.001, 9.999]
    assert len(beats) == 2 * 3  # chunks of 4,096, 4,096 and 1,808 rows
    assert len(recording.StepEnds.of_rows([])) == 0


def test_the_runner_waits_while_the_scheduler_reads_the_frontends_report(monkeypatch):
    # After the request records the scheduler stops the frontend and checks its report
    # (every request's token stream: grows with the case) while the runner waits for
    # the floor's marker; the check here takes 5 s under a 4 s peer timeout.
    real = frontend_hop.check_report

    def slow_check(*args):
        time.sleep(LONG_CALL_S)
        return real(*args)

    monkeypatch.setattr(frontend_hop, "check_report", slow_check)
    heartbeats = _count_scheduler_keepalives(monkeypatch)
    result = run_case(_spec(frontend=True))
    _assert_complete(result)
    assert len(result.frontend_token_digest) == 64
    assert sum(h.sent for h in heartbeats) >= MIN_LONG_CALL_KEEPALIVES


class _MarkerChannel:
    """A ``SchedulerChannel`` that takes markers and control messages and sends
    nothing."""

    def send_marker(self, what: str = "a phase marker") -> None:
        pass

    def send_control(self, msg) -> None:
        pass


def test_a_later_phase_counts_its_first_quarter_from_the_last_keepalive():
    # The end of the records sends a KeepAlive at 0.6 s; the floor's preparation starts
    # at 0.9 s: its first KeepAlive is due at 1.1 s (a quarter of the 2 s timeout after
    # the last one), not at 1.4 s, so the runner never waits a quarter more per phase.
    spec = _spec(peer_timeout_s=2.0)  # no run: no step waits under it
    result = CaseResult(spec)
    exchange = ChannelExchange(spec, _MarkerChannel(), result)
    records = exchange.heartbeat()  # fresh: the loop's last exchange has just ended
    time.sleep(0.6)
    records.beat()
    assert records.sent == 1
    time.sleep(0.3)
    floor_prep = exchange.heartbeat(fresh=False)
    time.sleep(0.3)
    floor_prep.beat()
    assert floor_prep.sent == 1 and result.s2r_marker_frames == 2
    loop_end = exchange.heartbeat()  # a new loop's end: from now
    loop_end.beat()
    assert loop_end.sent == 0


def test_pp_stages_wait_while_the_scheduler_collects_at_the_end_of_warm_up(monkeypatch):
    # --pp 2: at the end of warm-up the scheduler collects its heap (5 s here, under a
    # 4 s peer timeout) while both stages wait for the next micro-batch.
    monkeypatch.setattr(scheduler_loop, "gc", _SlowCollect(LONG_CALL_S))
    heartbeats = _count_scheduler_keepalives(monkeypatch)
    result = run_case(steady_case(8, max_steps=STEPS, pp=2, peer_timeout_s=TIMEOUT_S))
    assert result.counted_seqs == list(range(WARMUP, STEPS))
    keepalives = sum(h.sent for h in heartbeats)
    assert keepalives >= MIN_LONG_CALL_KEEPALIVES == 4
    # Empty frames: the end of warm-up (EndWarmup), the input oracle's check at the
    # end, the stop and one per KeepAlive.
    assert result.s2r_marker_frames == 3 + keepalives
    # Each stage collected its own heap meanwhile and said how long it took.
    assert len(result.runner_warmup_collect_ns) == 2
    assert all(0 < ns < result.warmup_pause_ns for ns in result.runner_warmup_collect_ns)
    # The end of warm-up and the end of the loop count from the last frame sent.
    assert [h.fresh for h in heartbeats] == [False, False]


def test_pp_stages_count_the_quarter_from_the_last_frame_sent():
    # --pp: the first stage waits for the next frame from the end of its share of the
    # last one, while the last stage still computes it. The last frame went out 0.4 s
    # before the end of warm-up: the first KeepAlive is due 0.1 s after it (a quarter
    # of the 2 s timeout after that frame), not 0.5 s.
    spec = _spec(peer_timeout_s=2.0)  # no run: no step waits under it
    result = CaseResult(spec)
    channel = _MarkerChannel()
    channel.sent_ns = [time.perf_counter_ns()]  # a TpSchedulerChannel's data frames
    exchange = ChannelExchange(spec, channel, result)
    time.sleep(0.4)
    warmup_end = exchange.heartbeat(fresh=False)
    time.sleep(0.15)
    warmup_end.beat()
    assert warmup_end.sent == 1 and result.s2r_marker_frames == 1


class _Signalled(Exception):
    pass


def test_a_signal_as_the_keepalive_thread_starts_stops_it_before_leaving(monkeypatch):
    """SIGINT at the end of ``Thread.start`` (where an exception breaks ``threading``'s
    locks: ``RuntimeError: release unlocked lock``): held until the thread has started,
    then raised with the thread stopped and joined. (Python runs the handler at its next
    check for signals once they are let through, which may come as the block begins: the
    block may have started.)"""
    import os
    import signal
    import threading

    from ipc_bench.wire import control

    start = threading.Thread.start

    def start_then_signal(self):
        start(self)
        if self.name == "keepalive":
            os.kill(os.getpid(), signal.SIGINT)

    def handler(signum, frame):
        raise _Signalled()

    monkeypatch.setattr(threading.Thread, "start", start_then_signal)
    old = signal.signal(signal.SIGINT, handler)
    try:
        with pytest.raises(_Signalled):
            with control.beating(lambda: None):
                time.sleep(1.0)  # the handler's exception ends it at once
    finally:
        signal.signal(signal.SIGINT, old)
    assert not [t for t in threading.enumerate() if t.name == "keepalive"]
