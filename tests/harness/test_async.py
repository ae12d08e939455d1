"""Async scheduling (``--async-scheduling``): two steps in flight, output placeholders.

- By hand, in one process (``AsyncScheduler`` and ``ModelRunner``, no sockets): step
  n+1 is scheduled before step n's output is applied; with chunked prefill and a KV
  cache too small for the workload, requests are preempted while a step that holds
  them is in flight and finish while the next step is in flight, and every token
  equals the synchronous scheduler's.
- Whole cases (two processes and the single-process case with its runner thread):
  async and sync ``cached`` give equal token streams for the null and fixed-step
  models, the input oracle checks every step, and an injected runner bug still fails
  the case naming the step, request, position and ids.
- The command line: ``send`` with ``--async-scheduling`` is refused (exit 2, one line);
  without ``--policies`` only ``cached`` runs; the table shows the runner's gap.
"""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
from dataclasses import replace

import numpy as np
import pytest

from analysis_run import bench_in_process
from by_hand import admit
from fault_helpers import one_runner_mark, steady_case
from ipc_bench.analysis.summary import summarize_case
from ipc_bench.engine.config import ModelConfig, SchedulerConfig
from ipc_bench.engine.model_runner import ModelRunner
from ipc_bench.engine.traces import Trace
from ipc_bench.engine.workloads import TraceWorkload
from ipc_bench.engine.scheduler import PLACEHOLDER, AsyncScheduler, RequestStatus, Scheduler
from ipc_bench.harness.recording import token_digest
from ipc_bench.harness.spec import CaseError, CaseResult, CaseSpec
from ipc_bench.harness.supervisor import run_case
from test_oracle import (corrupt, expected_error, oracle_steps,  # noqa: F401 (fixture)
                         preempting_spec)

MODEL = ModelConfig(seed=0)
# (arrival step, prompt tokens, max_tokens): prompts up to 33 tokens in 16-token chunks.
MIXED = [(0, 10, 30), (0, 20, 25), (1, 7, 40), (2, 33, 12), (2, 5, 50), (5, 16, 16)]


def mixed_workload(vocab_size: int = MODEL.vocab_size) -> TraceWorkload:
    trace = Trace(path="synthetic", arrival_s=np.array([r[0] for r in MIXED], dtype=float),
                  prompt_lens=np.array([r[1] for r in MIXED]),
                  output_lens=np.array([r[2] for r in MIXED]))
    return TraceWorkload(trace, name="mixed", seed=0, vocab_size=vocab_size,
                         logical_step_s=1.0)


def mixed_config(num_blocks: int) -> SchedulerConfig:
    return SchedulerConfig(max_num_seqs=8, max_num_batched_tokens=16, max_model_len=128,
                           block_size=4, num_blocks=num_blocks)


class Drive:
    """``MIXED`` run by hand with ``scheduler_class``: under ``AsyncScheduler`` each
    step is scheduled, built and executed by the runner (which serves steps in
    order, as the runner process does) before the output of the step before it is
    applied. Counts what happened while a step was in flight."""

    def __init__(self, scheduler_class, num_blocks: int):
        cfg = mixed_config(num_blocks)
        self.sched = scheduler_class(cfg, "cached")
        self.runner = ModelRunner(cfg, MODEL, "cached")
        self.preempted_in_flight = 0   # preempted while a step holding them was in flight
        self.preempted_sampling = 0    # ... a step that samples a token for them
        self.finished_in_flight = 0    # finished while the next step was in flight
        self.chunks = 0                # partial prefill chunks scheduled
        self.sos = []
        self._run()

    def _run(self) -> None:
        wl = mixed_workload()
        sched, runner = self.sched, self.runner
        window = 2 if isinstance(sched, AsyncScheduler) else 1
        pending: collections.deque = collections.deque()
        for _ in range(5000):
            if len(pending) < window and admit(self.sched, wl):
                plan = sched.schedule()
                if plan is not None:
                    in_flight = {r.req_id for p, _ in pending for r in p.scheduled_reqs}
                    sampling = {r.req_id for p, _ in pending
                                for r, pos in zip(p.scheduled_reqs, p.sample_positions)
                                if pos >= 0}
                    self.preempted_in_flight += sum(r.req_id in in_flight for r in plan.preempted)
                    self.preempted_sampling += sum(r.req_id in sampling for r in plan.preempted)
                    self.chunks += sum(p < 0 for p in plan.sample_positions)
                    so = sched.build_scheduler_output(plan)
                    self.sos.append(so)
                    pending.append((plan, runner.execute_model(so)))
                    if len(pending) < window:
                        continue
            if not pending:
                if sched.has_unfinished_requests() or wl.next_arrival_step() is not None:
                    continue
                return
            plan, out = pending.popleft()
            finished = sched.update_from_output(plan, out)
            if pending:
                nxt = {r.req_id for r in pending[0][0].scheduled_reqs}
                assert not nxt & {r.req_id for r in finished}  # no step past the last token
                self.finished_in_flight += len(finished)
        raise AssertionError("not finished after 5000 steps")


@pytest.fixture(scope="module")
def sync_reference() -> Drive:
    return Drive(Scheduler, 100_000)


@pytest.mark.parametrize("num_blocks", [100_000, 24])
def test_by_hand_async_keeps_every_token(sync_reference, num_blocks):
    run = Drive(AsyncScheduler, num_blocks)
    sched = run.sched
    assert token_digest(sched.requests.values()) == token_digest(
        sync_reference.sched.requests.values())
    for req in sched.requests.values():
        assert req.status == RequestStatus.FINISHED
        assert len(req.output_token_ids) == req.max_tokens
        assert PLACEHOLDER not in req.all_token_ids
    assert sched.kv_cache.num_free_blocks == num_blocks
    # The runner's outputs are the scheduler's for every request it still holds.
    for req_id, state in run.runner.requests.items():
        assert state.output_token_ids == sched.requests[req_id].output_token_ids
    assert run.chunks >= 4                # chunked prefill (33-token prompt, 16-token budget)
    # Every request but the last finished while the next step was in flight.
    assert run.finished_in_flight == 5
    if num_blocks == 24:
        # Observed: 12 preemptions (the sync scheduler: 11), each of a request in the
        # step in flight; 5 of them while that step sampled its next token, which
        # arrived after the preemption and was kept.
        assert sched.num_preemptions == 12
        assert run.preempted_in_flight == 12
        assert run.preempted_sampling == 5
    else:
        assert sched.num_preemptions == 0


def test_by_hand_async_keeps_two_steps_in_flight_with_placeholders():
    """After step 0 (a 10-token prompt) is scheduled, step 1 feeds its placeholder:
    ``num_computed_tokens`` is 11 before step 0's token is known."""
    sched = AsyncScheduler(mixed_config(100), "cached")
    req = sched.add_request("a", 0, list(range(1, 11)), 3)
    p0 = sched.schedule()
    assert p0.sample_positions == [10] and req.all_token_ids[10:] == [PLACEHOLDER]
    p1 = sched.schedule()
    assert p1.num_scheduled_tokens == {"a": 1} and req.num_computed_tokens == 11
    assert p1.sample_positions == [11] and req.all_token_ids[10:] == [PLACEHOLDER] * 2
    # The third token is the last (max_tokens 3): it gets no placeholder, so nothing
    # schedules the request while it is in flight.
    sched.update_from_output(p0, _output(["a"], [[500]]))
    p2 = sched.schedule()
    assert p2.sample_positions == [12] and req.all_token_ids[10:] == [500, PLACEHOLDER]
    assert sched.schedule() is None
    sched.update_from_output(p1, _output(["a"], [[501]]))
    assert sched.update_from_output(p2, _output(["a"], [[502]])) == [req]
    assert req.output_token_ids == [500, 501, 502]
    assert sched.schedule() is None  # nothing to schedule: the plan is held ...
    sched.add_request("b", 1, [7, 8], 2)
    p3 = sched.schedule()  # ... and its finished id goes with the next step that is sent
    assert p3.finished_req_ids == {"a"} and p3.num_scheduled_tokens == {"b": 2}
    assert p3.step == 5 and p3.sample_positions == [2]  # steps 3 and 4 scheduled nothing


def _output(req_ids, sampled):
    from ipc_bench.engine.messages import STRUCTS

    return STRUCTS.model_runner_output(req_ids, {r: i for i, r in enumerate(req_ids)},
                                       sampled)


def test_async_scheduler_refuses_send():
    with pytest.raises(ValueError, match="async scheduling needs the cached policy"):
        AsyncScheduler(mixed_config(100), "send")


# ======================================================================================
# Whole cases


def queued_spec(model: ModelConfig, async_scheduling: bool) -> CaseSpec:
    """24 requests at step 0, 4 running at most, 32-token budget (chunked prefill): a
    finished request's slot goes to the next waiting one."""
    rng = np.random.default_rng(7)
    n = 24
    trace = Trace(path="synthetic", arrival_s=np.zeros(n),
                  prompt_lens=rng.integers(5, 60, n), output_lens=rng.integers(5, 30, n))
    return CaseSpec(
        scenario="t", labels={"trace": "queued"}, policy="cached", codec="msgpack",
        scheduler=SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=32,
                                  max_model_len=128, num_blocks=1000),
        model=model,
        make_workload=lambda: TraceWorkload(trace, name="queued", seed=0,
                                            vocab_size=128_256, logical_step_s=1.0),
        warmup_steps=5, count="all", floor=False, input_oracle_interval=32,
        async_scheduling=async_scheduling)


@pytest.mark.parametrize("model", [ModelConfig(), ModelConfig(name="fixed-step",
                                                             step_time_ms=0.3)])
def test_two_process_async_equals_sync_tokens(model):
    sync, asyn = (run_case(queued_spec(model, flag)) for flag in (False, True))
    assert sync.error is None and asyn.error is None
    assert asyn.token_digest == sync.token_digest
    assert [r["num_output_tokens"] for r in asyn.requests] == [
        r["num_output_tokens"] for r in sync.requests]
    # A finished request's slot is known to be free one step later under async
    # scheduling (step n+1 was scheduled before step n's output): other batches.
    assert asyn.schedule_digest != sync.schedule_digest
    assert len(asyn.sched_rows) > len(sync.sched_rows)
    s = summarize_case(asyn)
    assert s["async_scheduling"] is True and summarize_case(sync)["async_scheduling"] is False
    assert 0 <= s["runner_gap_share_median"] <= s["runner_gap_share_p99"] < 1
    assert s["runner_gap_ns_median"] > 0


@pytest.mark.parametrize("transport", ["ipc", "inproc"])
def test_async_chunked_prefill_and_preemption_pass_both_oracles(monkeypatch, transport):
    compared = oracle_steps(monkeypatch)
    spec = replace(preempting_spec(transport), input_oracle_interval=16)
    sync = run_case(spec)
    compared.clear()
    asyn = run_case(replace(spec, async_scheduling=True))
    assert asyn.error is None
    assert asyn.token_digest == sync.token_digest
    assert sum(r["preemptions"] for r in asyn.requests) == 12
    steps = len(asyn.sched_rows)
    assert compared == list(range(steps))  # the input oracle checked every step
    assert sum(row[9] for row in asyn.sched_rows) == 12  # num_preempted per row
    # Frames are kept for the byte analysis in two processes only, as under sync.
    assert len(asyn.s2r_frames) == (0 if transport == "inproc" else len(asyn.counted_seqs))


@pytest.mark.parametrize("interval", [128, 1])
@pytest.mark.parametrize("transport", ["ipc", "inproc"])
def test_async_input_oracle_catches_a_runner_bug(corrupt, transport, interval):  # noqa: F811
    log = corrupt(20, here=transport == "inproc")
    kw = dict(codec="none", transport="inproc") if transport == "inproc" else {}
    result = CaseResult(spec=steady_case(8, policy="cached", max_steps=400,
                                         async_scheduling=True,
                                         input_oracle_interval=interval, **kw))
    with pytest.raises(CaseError) as err:
        run_case(result.spec, result=result)
    assert str(err.value) == expected_error(log)
    assert err.value.step == 21
    # Found by the first check after it (not at the end of the 400 steps); with
    # interval 1 every step's digests are asked for while the next step is in flight.
    assert len(result.sched_rows) == (128 if interval == 128 else 22)


@pytest.mark.parametrize("transport", ["ipc", "inproc"])
def test_async_checks_every_step_with_interval_1(transport):
    spec = replace(preempting_spec(transport), input_oracle_interval=1,
                   async_scheduling=True)
    result = run_case(spec)
    assert result.error is None and len(result.sched_rows) > 64


# ======================================================================================
# Command line


def _bench(*args: str, tmp_path) -> subprocess.CompletedProcess:
    """``python bench.py`` of a 4-running steady run and ``ARGS``, as ``cli.main`` in this
    process (``analysis_run.bench_in_process``: its runners are processes)."""
    return bench_in_process(
        ["--scenario", "decode-steady", "--num-running", "4", "--steps", "60",
         "--warmup-steps", "5", "--codecs", "msgpack", "--no-floor", "--output",
         str(tmp_path / "run"), *args])


def test_bench_refuses_send_with_async_scheduling(tmp_path):
    proc = _bench("--async-scheduling", "--policies", "send,cached", tmp_path=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "bench.py: error: --async-scheduling runs the cached policy only (under send the "
        "ids sampled at step n are unknown when step n+1 is scheduled): use --policies cached"]
    assert not (tmp_path / "run").exists()


def test_bench_async_alone_pairs_each_case_with_its_sync_twin(tmp_path):
    proc = _bench("--async-scheduling", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    cases = json.loads((tmp_path / "run" / "summary.json").read_text())["cases"]
    assert [(c["arm"], c["policy"], c["transport"], c["async_scheduling"],
             c["async_scheduling_mode"]) for c in cases] == [
        ("cached", "cached", "ipc", False, None),
        ("cached+async", "cached", "ipc", True, "process pipelining"),
        ("cached", "cached", "inproc", False, None),
        ("cached+async", "cached", "inproc", True, "runner thread")]
    assert re.search(r"  scheduling +gap us p50  gap us p99  gap % p50  gap % p99", proc.stdout)
    ipc = re.escape("ipc" + one_runner_mark())
    assert re.search(rf"\n  cached\+async +msgpack +{ipc} +async \(process pipelining\) ",
                     proc.stdout)
    assert re.search(r"\n  cached\+async +none +inproc +async \(runner thread\) ", proc.stdout)
    assert re.search(rf"\n  cached +msgpack +{ipc} +sync ", proc.stdout)
    assert re.search(rf"\ncached\+async +msgpack +{ipc} +60 ", proc.stdout)  # the case table: --steps


def test_bench_async_with_policies_cached_runs_the_async_cases_only(tmp_path):
    proc = _bench("--async-scheduling", "--policies", "cached", "--no-single-process",
                  tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    cases = json.loads((tmp_path / "run" / "summary.json").read_text())["cases"]
    assert [(c["case_id"], c["arm"], c["async_scheduling"]) for c in cases] == [
        ("num_running=4/cached+async/msgpack#0", "cached+async", True)]
    assert "[1/1] num_running=4/cached+async/msgpack#0: 60 steps" in proc.stderr


def test_report_shows_the_runner_gap_and_names_the_async_mode(tmp_path):
    proc = _bench("--async-scheduling", "--no-single-process", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # the tables alone: an async run's figures are tests/report/test_other_comparisons's
    report = bench_in_process(["report", str(tmp_path / "run"), "--output",
                               str(tmp_path / "report"), "--no-figures"])
    assert report.returncode == 0, report.stderr
    md = (tmp_path / "report" / "report.md").read_text()
    assert "### Runner gap" in md or "## Runner gap" in md
    row = next(ln for ln in md.splitlines() if "| async (process pipelining) |" in ln)
    ipc = "ipc" + one_runner_mark()
    assert row.startswith(f"| 0 | num_running=4 | cached+async | msgpack | {ipc} |")
    assert f"| 0 | num_running=4 | cached | msgpack | {ipc} | sync |" in md
    assert "'process pipelining' (and 'runner thread', the single process)" in md.replace("\n", " ")


@pytest.mark.parametrize("fail_at", [0, 10])
def test_async_runner_failure_is_reported_with_a_step_in_flight(monkeypatch, tmp_path,
                                                                fail_at):
    """The runner fails at a step while the next one is already queued for it: the
    scheduler reports the runner's line and step, and every process and folder goes."""
    from test_e2e import INJECT, Spy, assert_clean, steady_spec

    (tmp_path / "sitecustomize.py").write_text(INJECT)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("IPC_BENCH_TEST_FAIL_AT", str(fail_at))
    spy = Spy(monkeypatch)
    with pytest.raises(CaseError) as info:
        run_case(steady_spec("cached", "msgpack", async_scheduling=True))
    assert str(info.value) == (f"runner failed at step {fail_at} (steps.csv seq: warm-up and "
                                "uncounted steps included): RunnerError: injected failure")
    assert spy.procs[0].returncode == 4
    assert_clean(spy)


class _GoneRunnerChannel:
    """A channel whose runner has exited with ``queued`` control messages unread."""

    def __init__(self, queued):
        self.queued = list(queued)

    def recv_control(self, what, timeout_s=None):
        from ipc_bench.wire.transport import PeerError

        if not self.queued:
            raise PeerError(f"runner process 1 exited with code 4, noticed while waiting for "
                            f"{what}")
        return self.queued.pop(0)


def test_an_error_report_queued_behind_the_runners_exit_names_its_step():
    """The runner reports its failure and exits while the scheduler sends the next step:
    the scheduler finds the report behind the exit (other queued messages dropped), and
    finds none where the runner sent none."""
    from ipc_bench.harness.scheduler_loop import ChannelExchange
    from ipc_bench.wire.control import ErrorReport, InputDigests

    exchange = ChannelExchange.__new__(ChannelExchange)
    exchange.runner_exiting = False
    exchange.channel = _GoneRunnerChannel([
        InputDigests(first_seq=3, digests=[1]),
        ErrorReport("RunnerError: injected failure", 10)])
    error = exchange.queued_runner_error()
    assert (str(error), error.step) == ("runner failed at step 10 (steps.csv seq: warm-up and "
                                        "uncounted steps included): RunnerError: "
                                        "injected failure", 10)
    assert exchange.runner_exiting
    exchange.channel = _GoneRunnerChannel([InputDigests(first_seq=3, digests=[1])])
    assert exchange.queued_runner_error() is None
    exchange.channel = _GoneRunnerChannel([ErrorReport("x", 1)] * 3)
    assert exchange.queued_runner_error(max_messages=0) is None


def _drained(case_id: str, schedule: str, tokens: str, model: str = "null",
             num_finished: int = 9) -> dict:
    """A summary with 10 requests, 1 rejected: drained when 9 finished."""
    return dict(case_id=case_id, scenario="s", workload="trace=x", complete=True,
                schedule_digest=schedule, token_digest=tokens, model=model,
                num_requests=10, num_finished=num_finished, num_rejected=1)


def test_drained_row_only_cases_are_compared_across_schedules():
    from ipc_bench.analysis.summary import check_digests

    cases = [_drained("sync", "S1", "T1"), _drained("async", "S2", "T1")]
    assert check_digests(cases) == ([], [])
    assert [c["token_streams_compared_with"] for c in cases] == [["async"], ["sync"]]
    assert [c["token_streams_not_compared_with"] for c in cases] == [[], []]
    problems, notes = check_digests([_drained("sync", "S1", "T1"),
                                     _drained("async", "S2", "T2")])
    assert problems == ["token streams differ in s [trace=x] (every request finished and "
                        "the model computes each token from its request's row, so the "
                        "schedule cannot change them): T1: sync; T2: async"]
    # A torch case, or one cut short by max_steps, is not compared across schedules.
    for other in (_drained("async", "S2", "T2", model="torch"),
                  _drained("async", "S2", "T2", num_finished=8)):
        problems, notes = check_digests([_drained("sync", "S1", "T1"), other])
        assert problems == [] and notes == [
            "token streams not compared in s [trace=x]: schedules differ between sync "
            "and async"]


def test_gap_table_rows_name_the_scheduling_and_the_repetition():
    from ipc_bench.report.tables import runner_gap_lines

    c = dict(policy="cached", codec="msgpack", transport="ipc", runner_gap_ns_median=1000.0,
             runner_gap_ns_p99=25_000.0, runner_gap_share_median=0.1,
             runner_gap_share_p99=0.2, runner_step_ns_median=5e6,
             step_ns_median=9e6)
    lines = runner_gap_lines([dict(c, repetition=0),
                              dict(c, repetition=1, async_scheduling=True, arm="cached+async",
                                   async_scheduling_mode="process pipelining")])
    assert [ln.split() for ln in lines[1:]] == [
        ["rep", "policy", "codec", "transport", "scheduling", "gap", "us", "p50", "gap", "us",
         "p99", "gap", "%", "p50", "gap", "%", "p99", "runner", "step", "us", "p50"],
        ["---", "------------", "-------", "---------", "-" * 26, "-" * 10, "-" * 10, "-" * 9,
         "-" * 9, "-" * 18],
        ["0", "cached", "msgpack", "ipc", "sync", "1.00", "25.0", "10.0", "20.0", "5,000"],
        ["1", "cached+async", "msgpack", "ipc", "async", "(process", "pipelining)", "1.00",
         "25.0", "10.0", "20.0", "5,000"]]
    assert runner_gap_lines([dict(c, runner_gap_ns_median=None)]) == []


@pytest.mark.parametrize("transport", ["ipc", "inproc"])
def test_async_stops_at_max_model_len_without_a_step_past_it(transport):
    """Requests that would sample 50 tokens stop at max_model_len 32: the last token
    gets no placeholder, so no step is scheduled past it (the runner would refuse to
    write it: "Sampled token IDs exceed the max model length")."""
    n = 6
    trace = Trace(path="synthetic", arrival_s=np.zeros(n),
                  prompt_lens=np.array([10, 12, 14, 16, 18, 20]),
                  output_lens=np.full(n, 50))
    spec = CaseSpec(
        scenario="t", labels={"trace": "long"}, policy="cached",
        codec="none" if transport == "inproc" else "msgpack", transport=transport,
        scheduler=SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=16,
                                  max_model_len=32, num_blocks=100),
        model=MODEL,
        make_workload=lambda: TraceWorkload(trace, name="long", seed=0,
                                            vocab_size=128_256, logical_step_s=1.0),
        warmup_steps=2, count="all", floor=False, input_oracle_interval=8)
    sync, asyn = run_case(spec), run_case(replace(spec, async_scheduling=True))
    assert asyn.error is None and asyn.token_digest == sync.token_digest
    assert [(r["num_prompt_tokens"] + r["num_output_tokens"], r["finish_reason"])
            for r in asyn.requests] == [(32, "length")] * n
