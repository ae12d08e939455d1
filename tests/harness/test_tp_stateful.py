"""``--codecs slots`` and ``replicated`` with ``--tp N``: every rank keeps its own end
of the codec session (its slot table, or its replica scheduler) and decodes the one
broadcast; rank 0 replies.

- N = 2 over XPUB/SUB and the ring (block wait) gives msgpack's token stream and
  schedule, both policies; every rank of a replicated case reports its replica's
  columns, and the summary its per-rank scheduling CPU and N times that.
- Exact bytes at N = 2: a replicated pure-decode step with no arrival is an 18-byte
  payload, written once on the ring as its chunk head and payload, over XPUB as one
  20-byte ZMTP frame per rank.
- The tp-broadcast scenario takes ``--codecs slots,replicated``: its per-case table
  and figure show the bytes written once per step and the replica scheduler per rank
  and over the N ranks (its times only where N + 2 cores publish them).
- A rank whose state drifts fails the case naming the rank and the step: rank 1's
  replica fed one arrival with one ``max_tokens`` less (its schedule digest check), rank
  1's slot table one token ahead for one request (its input oracle under ``cached``,
  the output oracle under ``send``).
"""

from __future__ import annotations

import json

import pytest

from analysis_run import bench_in_process
from fault_helpers import inject, steady_case
from harness.test_e2e import assert_clean
from harness.test_tp import spy_on, assert_no_segment
from ipc_bench.analysis.summary import summarize_case
from ipc_bench.errors import STEP_NUMBERING
from ipc_bench.harness.spec import SCHED_COLUMNS, CaseError
from ipc_bench.harness.supervisor import run_case
from ipc_bench.wire.shm_ring import ring_message_bytes

pytestmark = pytest.mark.timeout(180)

#: Rank 1 only (its control endpoint ``.../ctl1`` ends its command line): its replica
#: gets request IPC_BENCH_TEST_PERTURB_INDEX with one max_token less than the
#: scheduler's copy (``test_replicated_run.PERTURB``'s fault, in one rank).
PERTURB_RANK_1 = '''
import os, sys
if os.environ.get("IPC_BENCH_TEST_PERTURB_INDEX") and sys.argv[-1].endswith("/ctl1"):
    from ipc_bench.wire import replicated as _r
    _index = int(os.environ["IPC_BENCH_TEST_PERTURB_INDEX"])
    _init = _r.ReplicatedRunnerSide.__init__

    def __init__(self, *args, **kwargs):
        _init(self, *args, **kwargs)
        real = self.replica.add_request

        def add_request(req_id, index, prompt_token_ids, max_tokens):
            return real(req_id, index, prompt_token_ids,
                        max_tokens - 1 if index == _index else max_tokens)
        self.replica.add_request = add_request

    _r.ReplicatedRunnerSide.__init__ = __init__
'''

#: Rank 1 only: before it decodes step IPC_BENCH_TEST_SLIP_AT (counted from 0), the
#: inferred ``num_computed_tokens`` of the first request of its slot table's last
#: order is one ahead (a table that drifted by one token).
SLIP_RANK_1 = '''
import os, sys
if os.environ.get("IPC_BENCH_TEST_SLIP_AT") and sys.argv[-1].endswith("/ctl1"):
    from ipc_bench.wire import slots as _s
    _at = int(os.environ["IPC_BENCH_TEST_SLIP_AT"])
    _real = _s.SlotsRunnerSide.decode
    _calls = [0]

    def decode(self, frame):
        if _calls[0] == _at:
            self.t.expect[self.t.prev[0]] += 1
        _calls[0] += 1
        return _real(self, frame)

    _s.SlotsRunnerSide.decode = decode
'''


@pytest.mark.parametrize("policy", ["send", "cached"])
def test_two_ranks_with_stateful_codecs_compute_msgpacks_tokens(monkeypatch, policy):
    ref = run_case(steady_case(16, policy=policy, max_steps=120, transport="ipc", tp=1))
    for codec in ("slots", "replicated"):
        for transport in ("ipc", "shm-block"):
            spy = spy_on(monkeypatch)
            result = run_case(steady_case(16, policy=policy, codec=codec, max_steps=120,
                                          transport=transport, tp=2,
                                          input_oracle_interval=1))
            assert result.token_digest == ref.token_digest, (codec, transport)
            assert result.schedule_digest == ref.schedule_digest
            assert len(result.tp_rank_columns) == 2
            assert [p.returncode for p in spy.procs] == [0, 0]
            assert_clean(spy)
            assert_no_segment(spy)
            s = summarize_case(result)
            if codec == "replicated":
                for cols in result.tp_rank_columns:
                    assert len(cols["replica_schedule_ns"]) == 120
                per_rank = s["tp_replica_scheduler_ns_per_rank"]
                assert len(per_rank) == 2 and all(v > 0 for v in per_rank)
                assert s["tp_replica_scheduler_ns_all_ranks_per_step"] == pytest.approx(
                    sum(per_rank))
                assert s["replica_scheduler_ns_per_step"] == pytest.approx(per_rank[0])
            else:
                assert "tp_replica_scheduler_ns_per_rank" not in s


def long_case(codec: str, transport: str):
    """16 requests that all arrive before the first step and none of which finishes in
    the 120 counted steps (300 tokens each): every counted step is a pure decode."""
    from dataclasses import replace

    from ipc_bench.engine.workloads import SteadyDecodeWorkload

    spec = steady_case(16, policy="cached", codec=codec, max_steps=120, transport=transport,
                       tp=2)
    return replace(spec, make_workload=lambda: SteadyDecodeWorkload(
        16, seed=3, vocab_size=128_256, prompt_len_range=(8, 64),
        output_len_range=(300, 300)))


@pytest.mark.parametrize("transport", ["ipc", "shm-block"])
def test_exact_bytes_of_a_replicated_step_at_n_2(transport):
    """Nothing arrives after the first step: every counted step's payload is the
    18-byte ``ReplicatedStep`` (``test_replicated``'s exact step), written once per
    step as the ring's 5-byte chunk head and the payload (23 B, read by both ranks), or
    over XPUB as one ZMTP frame of a 2-byte head and the payload (20 B), which
    reaches each of the 2 ranks (40 B)."""
    s = summarize_case(run_case(long_case("replicated", transport)))
    assert s["num_steps"] == 115  # 120 steps, 5 of warm-up
    assert s["sched_to_runner_payload_bytes_per_step"] == 18
    if transport == "shm-block":
        assert ring_message_bytes(18) == 23
        assert s["tp_s2r_bytes_written_per_step"] == 23
        assert s["tp_s2r_wire_bytes_all_ranks_per_step"] == 23
    else:
        assert s["tp_s2r_bytes_written_per_step"] == 20
        assert s["tp_s2r_wire_bytes_all_ranks_per_step"] == 40


@pytest.mark.parametrize("transport", ["ipc", "shm-block"])
def test_exact_bytes_of_slots_steps_at_n_2(transport):
    """The same pure decode under ``slots``: a step where no request got a new block is
    the 28-byte frame (``test_slots``), 33 B written on the ring, 30 B over XPUB (60 B
    to both ranks); the summary's figures are the per-step sums' means, exactly."""
    result = run_case(long_case("slots", transport))
    s = summarize_case(result)
    payload = [row[SCHED_COLUMNS.index("s2r_payload_bytes")] for row in result.sched_rows]
    n = s["num_steps"]
    assert n == 115
    counted = payload[-n:]
    assert 28 in counted and max(counted) <= 255
    written = [p + (5 if transport == "shm-block" else 2) for p in counted]
    assert s["tp_s2r_bytes_written_per_step"] == pytest.approx(sum(written) / n, abs=1e-9)
    assert s["tp_s2r_wire_bytes_all_ranks_per_step"] == pytest.approx(
        (1 if transport == "shm-block" else 2) * sum(written) / n, abs=1e-9)


@pytest.mark.parametrize("transport", ["ipc", "shm-block"])
def test_a_rank_whose_replica_drifts_fails_the_case_naming_it(monkeypatch, tmp_path,
                                                               transport):
    # request 3 of the steady workload arrives before the first step; rank 1's replica
    # finishes it one token early
    clean = run_case(steady_case(8, policy="cached", codec="replicated", max_steps=300,
                                 transport=transport, tp=2))
    target = next(r for r in clean.requests if r["index"] == 3)
    inject(monkeypatch, tmp_path, PERTURB_RANK_1, IPC_BENCH_TEST_PERTURB_INDEX="3")
    spy = spy_on(monkeypatch)
    with pytest.raises(CaseError) as err:
        run_case(steady_case(8, policy="cached", codec="replicated", max_steps=300,
                             transport=transport, tp=2))
    message = str(err.value)
    # the error is rank 1's report: the case's step, then the rank, then its message
    # (the scheduler's step number: its logical clock)
    assert message.startswith(f"runner failed at step {err.value.step} ({STEP_NUMBERING}): rank 1: "
                              f"DecodeError: scheduler step {target['finish_step']}: the "
                              "replica's schedule differs from the scheduler's"), message
    assert err.value.step is not None and err.value.step <= target["finish_step"]
    assert_clean(spy)


@pytest.mark.parametrize("transport", ["ipc", "shm-block"])
def test_a_rank_whose_slot_table_drifts_fails_the_case_naming_it(monkeypatch, tmp_path,
                                                                  transport):
    inject(monkeypatch, tmp_path, SLIP_RANK_1, IPC_BENCH_TEST_SLIP_AT="20")
    spy = spy_on(monkeypatch)
    with pytest.raises(CaseError) as err:
        run_case(steady_case(8, policy="cached", codec="slots", max_steps=300,
                             transport=transport, tp=2, input_oracle_interval=1))
    message = str(err.value)
    # rank 1 feeds its model the token at a position one past the request's last one
    # (not yet sampled: its buffer holds 0 there) on the step it decoded wrong
    assert message.startswith("rank 1: input oracle: step 20: request "), message
    assert "the runner fed token id 0 at position" in message, message
    assert err.value.step == 20, message
    assert_clean(spy)


def test_the_scenario_runs_slots_and_replicated(tmp_path, bench_tmpdir, monkeypatch):
    # bench.py in this process (analysis_run.bench_in_process: its ranks are processes
    # as ever); what is checked is the run's folder, tables and figure, not the process
    import tempfile

    run_dir = tmp_path / "run"
    monkeypatch.setenv("TMPDIR", str(bench_tmpdir))
    monkeypatch.setattr(tempfile, "tempdir", str(bench_tmpdir))
    proc = bench_in_process(
        ["--scenario", "tp-broadcast", "--tp", "1,2", "--tp-transports", "shm-block",
         "--num-running", "8", "--steps", "30", "--warmup-steps", "5", "--codecs",
         "slots,replicated", "--output", run_dir, "--quiet"])
    assert proc.returncode == 0, proc.stderr
    cases = json.loads((run_dir / "summary.json").read_text())["cases"]
    assert sorted((c["codec"], c["tp"], c["policy"]) for c in cases) == sorted(
        (k, n, p) for k in ("slots", "replicated") for n in (1, 2) for p in ("send", "cached"))
    assert len({c["token_digest"] for c in cases}) == 1
    for c in cases:
        if c["codec"] == "replicated":
            assert len(c["tp_replica_scheduler_ns_per_rank"]) == c["tp"]
            assert c["tp_replica_scheduler_ns_all_ranks_per_step"] == pytest.approx(
                sum(c["tp_replica_scheduler_ns_per_rank"]))
    assert "replica sched us/rank" in proc.stdout and "x N ranks us" in proc.stdout
    from ipc_bench.analysis.cores import is_withheld

    by = {(c["codec"], c["policy"], c["tp"]): c for c in cases}
    two = by["replicated", "cached", 2]
    withheld = is_withheld(two)  # fewer than N + 2 cores: times left out, bytes kept
    rep = next(line for line in proc.stdout.splitlines()
               if line.split()[:4] == ["shm-block*" if withheld else "shm-block",
                                       "replicated", "cached", "2"])
    cells = rep.split()
    assert cells[6] == f"{two['tp_s2r_bytes_written_per_step']:,.1f}"
    assert cells[10] == ("-" if withheld else
                         f"{two['tp_replica_scheduler_ns_all_ranks_per_step'] / 1e3:,.1f}")
    from ipc_bench.analysis.results import load
    from ipc_bench.report import plots

    fig = plots.tp_per_step_figure(load(run_dir))
    lines = {ln.get_label(): ln for ln in fig.axes[0].lines}
    assert list(lines["shm-block / slots / cached"].get_xdata()) == [1, 2]
    assert list(lines["shm-block / slots / cached"].get_ydata()) == pytest.approx(
        [by["slots", "cached", n]["tp_s2r_bytes_written_per_step"] for n in (1, 2)])
    right = {ln.get_label(): ln for ln in fig.axes[1].lines}
    timed = [n for n in (1, 2) if not is_withheld(by["replicated", "cached", n])]
    if timed:  # the replica times of cases whose timings are withheld are not drawn
        assert list(right["shm-block / cached: N ranks"].get_ydata()) == pytest.approx(
            [by["replicated", "cached", n]["tp_replica_scheduler_ns_all_ranks_per_step"]
             / 1e3 for n in timed])
    else:
        assert right == {} and [t.get_text() for t in fig.axes[1].texts] == [
            "timings left out\n(why: above)"]
    assert all(y for _, y in plots.axis_labels(fig))


def test_under_send_a_drifted_slot_table_is_seen_by_the_output_oracle(monkeypatch, tmp_path):
    # under send the fed ids come from the frame, so the one-token slip shows as rank 1
    # sampling other tokens at that step
    inject(monkeypatch, tmp_path, SLIP_RANK_1, IPC_BENCH_TEST_SLIP_AT="20")
    spy = spy_on(monkeypatch)
    with pytest.raises(CaseError) as err:
        run_case(steady_case(8, policy="send", codec="slots", max_steps=300,
                             transport="shm-block", tp=2))
    assert str(err.value) == ("rank 1: step 20: its ModelRunnerOutput differs from rank 0's "
                              "(the one the scheduler received): it sampled other tokens")
    assert err.value.step == 20
    assert_clean(spy)


def test_ranks_started_by_hand_run_slots_and_replicated(tmp_path):
    # a runner started by hand serves every case of the run: each case builds its own
    # codec session end in that process
    from fault_helpers import free_base_port
    from remote_launch import Launcher

    port = free_base_port(4)
    with Launcher() as launch:
        sched = launch.scheduler(["--scenario", "tp-broadcast", "--tp", "2", "--transport",
                                  "tcp", "--num-running", "8", "--steps", "30", "--codecs",
                                  "slots,replicated", "--remote-runners", "--port",
                                  str(port), "--quiet"], tmp_path / "r")
        runners = [launch.runner(port), launch.runner(port + 1)]
        ended = launch.finish(*runners)
        [(code, _, err)] = launch.finish(sched)
    assert (code, err) == (0, ""), err
    assert [r_code for r_code, _, _ in ended] == [0, 0]
    cases = json.loads((tmp_path / "r" / "summary.json").read_text())["cases"]
    assert sorted((c["codec"], c["policy"]) for c in cases) == sorted(
        (k, p) for k in ("slots", "replicated") for p in ("send", "cached"))
    assert len({c["token_digest"] for c in cases}) == 1
    for c in cases:
        assert c["tp"] == 2
        assert (len(c.get("tp_replica_scheduler_ns_per_rank") or []) == 2) == (
            c["codec"] == "replicated")
