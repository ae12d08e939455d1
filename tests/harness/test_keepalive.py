"""Work between the measured loop and the floor, and before the runner's report, grows
with the step count while the other end waits under its peer timeout: each end keeps the
other waiting (``KeepAlive``, ``wire.control.Heartbeat``) however long it takes.

The preparations are made slow per step (a sleep per decoded frame or digested output),
as a very long run's are: 95 counted steps of 40 ms each are 3.8 s, almost twice the
2 s peer timeout (not 1 s: on a loaded machine a step was seen to wait over 1 s for its
frame).
"""

from __future__ import annotations

import math
import sys

import pytest

from fault_helpers import FAKE_RUNNER, SlowDecode, steady_case
from ipc_bench.analysis.summary import summarize_case
from ipc_bench.harness import floor
from ipc_bench.harness.scheduler_loop import ChannelExchange
from ipc_bench.harness.spec import RUNNER_COLUMNS, CaseResult
from ipc_bench.harness.supervisor import run_case
from ipc_bench.wire import channel as channel_module
from ipc_bench.wire import tp as tp_module
from ipc_bench.wire.control import Heartbeat, KeepAlive
from ipc_bench.wire.tp import OUTPUT_DIGEST_COLUMN

STEPS, WARMUP = 100, 5  # steady_case's warm-up
TIMEOUT_S = 2.0
DELAY_S = 0.04
#: Fewest KeepAlive a 3.8 s preparation sends: one per quarter timeout (0.5 s) after the
#: first, each at most one 40 ms piece late.
MIN_KEEPALIVES = int((STEPS - WARMUP) * DELAY_S // (TIMEOUT_S / 4 + DELAY_S))


def _spec(**kw):
    spec = steady_case(max_steps=STEPS, peer_timeout_s=TIMEOUT_S, **kw)
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
    heartbeats: list[Heartbeat] = []
    real_heartbeat = ChannelExchange.heartbeat

    def heartbeat(self):
        heartbeats.append(real_heartbeat(self))
        return heartbeats[-1]

    monkeypatch.setattr(ChannelExchange, "heartbeat", heartbeat)
    result = run_case(_spec(policy="cached", async_scheduling=scheduling == "async"))
    _assert_complete(result)
    keepalives = sum(h.sent for h in heartbeats)
    assert keepalives >= MIN_KEEPALIVES == 7
    # Empty frames: the input oracle's check at the end, the floor's start, the stop
    # and one per KeepAlive.
    assert result.s2r_marker_frames == 3 + keepalives


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
