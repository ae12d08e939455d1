"""The input oracle and the schedule digest (``ipc_bench.harness.oracle``).

- The digest's layout, computed independently; the runner's and the scheduler's digests
  agree on every step of runs with chunked prefill and preemption, in one process and
  in two.
- A runner bug (one sampled id corrupted in the runner's token buffer under
  ``cached``, injected through a ``sitecustomize`` module that only these tests write)
  fails the case naming the step, the request, the position and both ids, at most
  ``CHECK_INTERVAL_STEPS`` steps late; through ``bench.py --policies cached`` alone it
  exits 1 for the null, fixed-step and torch models (nothing else would see it: both
  cases of the run feed the same wrong id, so their token streams agree).
- Schedule digests: equal for every case of a logical-clock workload (decode-steady and
  azure-conv), and the token oracle compares only cases whose schedules are equal.
"""

from __future__ import annotations

import hashlib
import struct
import types
from array import array
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from analysis_run import bench_in_process
from fault_helpers import TRACES, fault_arming, steady_case
from ipc_bench.analysis.summary import check_digests, summarize_case
from ipc_bench.engine.config import ModelConfig, SchedulerConfig
from ipc_bench.engine.traces import Trace
from ipc_bench.engine.workloads import TraceWorkload
from ipc_bench.harness import oracle
from ipc_bench.harness.oracle import InputOracle, ScheduleDigest, input_digest
from ipc_bench.harness.scenario import ScenarioOptions, discover
from ipc_bench.harness.spec import CaseError, CaseResult, CaseSpec
from ipc_bench.harness.supervisor import run_case

# Loaded by every Python process started with its folder on PYTHONPATH (the scheduler
# and the runner): after write_back of step IPC_BENCH_TEST_CORRUPT_AT, under cached,
# the id just written for one row that will decode again is replaced by another id, and
# "seq req_id position good bad" is appended to IPC_BENCH_TEST_CORRUPT_LOG.
CORRUPT = '''
import os
if os.environ.get("IPC_BENCH_TEST_CORRUPT_AT"):
    from ipc_bench.engine import model_runner as _mr
    _at = int(os.environ["IPC_BENCH_TEST_CORRUPT_AT"])
    _real = _mr.ModelRunner.write_back
    _calls = [0]

    def write_back(self, inputs, sampled):
        valid = _real(self, inputs, sampled)
        seq = _calls[0]
        _calls[0] += 1
        if seq != _at or self.tokens_from_scheduler:
            return valid
        batch = self.input_batch
        for row, req_id in enumerate(inputs.req_ids):
            state = self.requests[req_id]
            if valid[row] and len(state.output_token_ids) < state.sampling_params.max_tokens - 1:
                pos = int(batch.num_tokens[row]) - 1
                good = int(batch.token_ids_cpu[row, pos])
                bad = good - 1 if good > 0 else 1
                batch.token_ids_cpu[row, pos] = bad
                with open(os.environ["IPC_BENCH_TEST_CORRUPT_LOG"], "a") as f:
                    f.write(f"{seq} {req_id} {pos} {good} {bad}\\n")
                break
        return valid

    _mr.ModelRunner.write_back = write_back
'''


@pytest.fixture
def corrupt(monkeypatch, tmp_path):
    """``corrupt(seq)``: arm the injected runner bug at step ``seq`` for every process
    started from now on (and this one); returns the log file's path."""
    return fault_arming(monkeypatch, tmp_path, CORRUPT, "IPC_BENCH_TEST_CORRUPT",
                        "corrupted.txt", ("write_back",))


def corrupted(log: Path) -> tuple[int, str, int, int, int]:
    """The one corruption the injected bug made: (seq, req_id, position, good, bad)."""
    lines = log.read_text().split("\n")[:-1]
    assert len(lines) == 1, lines
    seq, req_id, pos, good, bad = lines[0].split()
    return int(seq), req_id, int(pos), int(good), int(bad)


def expected_error(log: Path) -> str:
    seq, req_id, pos, good, bad = corrupted(log)
    return (f"input oracle: step {seq + 1}: request {req_id}: the runner fed token id {bad} "
            f"at position {pos}, the scheduler's all_token_ids hold {good}")


# ======================================================================================
# The digest and its agreement on correct runs


def test_input_digest_layout():
    counts = np.array([1, 3], dtype=np.int32)
    ids = np.array([7, 128_255, 3, 0], dtype=np.int32)
    want = int.from_bytes(hashlib.blake2b(
        struct.pack("<qq", 2, 4) + struct.pack("<2i", 1, 3) + struct.pack("<4i", 7, 128_255, 3, 0),
        digest_size=8).digest(), "little")
    assert input_digest(2, 4, counts, ids) == want
    assert input_digest(2, 4, array("i", [1, 3]), array("i", [7, 128_255, 3, 0])) == want
    # The boundaries count: the same ids split 3 + 1 differ.
    assert input_digest(2, 4, np.array([3, 1], dtype=np.int32), ids) != want
    # One token per request: no counts.
    one = hashlib.blake2b(struct.pack("<qqii", 2, 2, 7, 9), digest_size=8).digest()
    assert input_digest(2, 2, None, array("i", [7, 9])) == int.from_bytes(one, "little")


def test_runner_side_takes_rows_in_the_schedules_order():
    """Rows [B, A, C] of a step that scheduled A (2 tokens), B (1), C (3)."""
    class Inputs:
        query_start_loc = np.array([0, 1, 3, 6], dtype=np.int64)  # rows B, A, C
        input_ids = np.array([20, 10, 11, 30, 31, 32], dtype=np.int32)

    counts, ids = oracle.fed_in_schedule_order({"A": 2, "B": 1, "C": 3},
                                               {"B": 0, "A": 1, "C": 2}, Inputs())
    assert counts.tolist() == [2, 1, 3] and counts.dtype == np.int32
    assert ids.tolist() == [10, 11, 20, 30, 31, 32] and ids.dtype == np.int32

    class Decode:
        query_start_loc = np.arange(4, dtype=np.int64)
        input_ids = np.array([20, 10, 30], dtype=np.int32)

    counts, ids = oracle.fed_in_schedule_order({"A": 1, "B": 1, "C": 1},
                                               {"B": 0, "A": 1, "C": 2}, Decode())
    assert counts is None and ids.tolist() == [10, 20, 30]


def oracle_steps(monkeypatch) -> list:
    """The steps the input oracle compares from now on, appended as it compares them
    (``clear()`` the list to count afresh)."""
    compared = []
    real = InputOracle._compare

    def compare(self, got):
        compared.extend(s[0] for s in self.pending)
        real(self, got)

    monkeypatch.setattr(InputOracle, "_compare", compare)
    return compared


def preempting_spec(transport: str = "ipc", policy: str = "cached") -> CaseSpec:
    """Six staggered requests with 16-token chunked prefill and a cache that holds a
    third of what they need: prefill chunks, preemptions and resumptions."""
    reqs = [(0, 10, 30), (0, 20, 25), (1, 7, 40), (2, 33, 12), (2, 5, 50), (5, 16, 16)]
    trace = Trace(path="synthetic", arrival_s=np.array([r[0] for r in reqs], dtype=float),
                  prompt_lens=np.array([r[1] for r in reqs]),
                  output_lens=np.array([r[2] for r in reqs]))
    return CaseSpec(
        scenario="t", labels={"trace": "mixed"}, policy=policy,
        codec="none" if transport == "inproc" else "msgpack",
        scheduler=SchedulerConfig(max_num_seqs=8, max_num_batched_tokens=16, max_model_len=128,
                                  block_size=4, num_blocks=24),
        model=ModelConfig(seed=0),
        make_workload=lambda: TraceWorkload(trace, name="mixed", seed=0, vocab_size=128_256,
                                            logical_step_s=1.0),
        warmup_steps=2, count="all", floor=False, transport=transport)


@pytest.mark.parametrize("transport", ["ipc", "inproc"])
@pytest.mark.parametrize("policy", ["send", "cached"])
def test_digests_agree_through_chunked_prefill_and_preemption(monkeypatch, transport, policy):
    checked, batches = [], []
    real_check = InputOracle.check

    def check(self):
        checked.extend(s[0] for s in self.pending)
        batches.append(len(self.pending))
        real_check(self)

    monkeypatch.setattr(InputOracle, "check", check)
    result = run_case(replace(preempting_spec(transport, policy), input_oracle_interval=16))
    steps = len(result.sched_rows)
    assert steps > 64 and sum(r["preemptions"] for r in result.requests) == 11
    assert checked == list(range(steps))  # every step, checked in batches of 16 and at the end
    assert batches == [16] * (steps // 16) + [steps % 16]


def test_a_check_compares_every_step_since_the_last(monkeypatch):
    """The runner's digests of steps 0..N-1 against the scheduler's: a runner that
    answers for fewer steps fails the case, whatever the digests say."""
    class Link:
        def runner_input_digests(self, next_seq=None):
            from ipc_bench.wire.control import InputDigests
            return InputDigests(first_seq=1, digests=[5])

    o = InputOracle({}, Link())
    o.pending = [(0, 5, None, None, None), (1, 6, None, None, None)]
    with pytest.raises(CaseError, match=r"^input oracle: the runner reports input digests of "
                                        r"1 steps from step 1, the scheduler ran 2 from step 0$"):
        o.check()


# ======================================================================================
# A runner bug, caught


@pytest.mark.parametrize("transport", ["ipc", "inproc"])
def test_a_corrupted_token_fails_the_case_naming_step_and_request(corrupt, transport):
    log = corrupt(20, here=transport == "inproc")
    kw = dict(codec="none", transport="inproc") if transport == "inproc" else {}
    result = CaseResult(spec=steady_case(8, policy="cached", max_steps=400, **kw))
    with pytest.raises(CaseError) as err:
        run_case(result.spec, result=result)
    assert str(err.value) == expected_error(log)
    assert err.value.step == 21
    # Found by the check after 128 steps, not at the end of the 400.
    assert len(result.sched_rows) == oracle.CHECK_INTERVAL_STEPS


@pytest.mark.parametrize("transport", ["ipc", "inproc"])
def test_interval_1_fails_the_case_at_the_step_that_fed_the_bad_id(corrupt, transport):
    log = corrupt(20, here=transport == "inproc")
    kw = dict(codec="none", transport="inproc") if transport == "inproc" else {}
    result = CaseResult(spec=steady_case(8, policy="cached", max_steps=400,
                                         input_oracle_interval=1, **kw))
    with pytest.raises(CaseError) as err:
        run_case(result.spec, result=result)
    assert str(err.value) == expected_error(log)
    assert err.value.step == 21
    assert len(result.sched_rows) == 22  # checked right after step 21, the first bad one


@pytest.mark.parametrize("transport", ["ipc", "inproc"])
def test_interval_0_leaves_the_same_bug_uncaught(corrupt, transport):
    log = corrupt(20, here=transport == "inproc")
    kw = dict(codec="none", transport="inproc") if transport == "inproc" else {}
    spec = steady_case(8, policy="cached", max_steps=200, input_oracle_interval=0, **kw)
    checks = []
    real_check = InputOracle.check
    InputOracle.check = lambda self: checks.append(self) or real_check(self)
    try:
        result = run_case(spec)
    finally:
        InputOracle.check = real_check
    assert corrupted(log)[0] == 20  # the bug was injected ...
    assert result.error is None and len(result.sched_rows) == 200  # ... and ran to the end
    assert checks == []
    assert summarize_case(result)["input_oracle_interval"] == 0


MODELS = {
    "null": [],
    "fixed-step": ["--model", "fixed-step", "--step-time-ms", "0.2"],
    "torch": ["--model", "torch", "--model-preset", "tiny"],
}


@pytest.mark.parametrize("model", list(MODELS))
def test_bench_cached_alone_exits_1_on_a_runner_bug(corrupt, tmp_path, model):
    log = corrupt(12)
    out = tmp_path / "run"
    proc = bench_in_process(
        ["--scenario", "decode-steady", "--policies", "cached", "--num-running", "4",
         "--steps", "40", "--warmup-steps", "5", "--codecs", "msgpack", "--no-floor",
         "--no-single-process", "--quiet", "--output", out, *MODELS[model]])
    assert proc.returncode == 1, proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("bench.py: error:")]
    assert errors == [f"bench.py: error: num_running=4/cached/msgpack#0: {expected_error(log)}"
                      f"; partial results: {out}"]
    assert "Traceback" not in proc.stderr


def test_bench_with_the_oracle_off_says_so_and_misses_the_bug(corrupt, tmp_path):
    import json

    log = corrupt(12)
    out = tmp_path / "run"
    proc = bench_in_process(
        ["--scenario", "decode-steady", "--policies", "cached", "--num-running", "4",
         "--steps", "40", "--warmup-steps", "5", "--codecs", "msgpack", "--no-floor",
         "--no-single-process", "--quiet", "--output", out, "--input-oracle-interval", "0"])
    assert proc.returncode == 0, proc.stderr
    assert corrupted(log)[0] == 12
    assert proc.stderr.splitlines()[0] == (
        "bench.py: warning: --input-oracle-interval 0: the input oracle is off, the token "
        "ids the runner feeds are not checked (the summary and tables say so)")
    assert ("  INPUT ORACLE OFF: 1 of 1 cases did not check the token ids their runner fed "
            "(input_oracle_interval 0)") in proc.stdout.splitlines()
    summary = json.loads((out / "summary.json").read_text())
    assert [c["input_oracle_interval"] for c in summary["cases"]] == [0]
    assert [c["input_oracle_interval"] for c in summary["metadata"]["cases"]] == [0]


# ======================================================================================
# Schedule digests and the token oracle


def _plan(reqs: list[str], counts: list[int], objects: dict):
    """A ``SchedulePlan``'s fields for ``ScheduleDigest`` (one object per request id)."""
    return types.SimpleNamespace(scheduled_reqs=[objects.setdefault(r, object()) for r in reqs],
                                 num_scheduled_tokens=dict(zip(reqs, counts)),
                                 total_num_scheduled_tokens=sum(counts))


def test_schedule_digest_layout():
    d, objects = ScheduleDigest(), {}
    for reqs, counts in ((["a", "b"], [1, 16]), (["a", "b"], [1, 1]), (["a", "b"], [1, 1]),
                         (["b", "a"], [1, 1]), (["b", "a"], [2, 3]), (["b", "a"], [2, 3]),
                         (["b", "a"], [3, 2]), ([], []), ([], [])):
        d.add(_plan(reqs, counts, objects))
    want = hashlib.sha256(
        b"\x82\xa1a\x01\xa1b\x10" + b"\x82\xa1a\x01\xa1b\x01" + b"\xc1"  # repeat
        + b"\x82\xa1b\x01\xa1a\x01"  # another order
        + b"\x82\xa1b\x02\xa1a\x03" + b"\xc1" + b"\x82\xa1b\x03\xa1a\x02"  # counts
        + b"\x80\x80").hexdigest()
    assert d.hexdigest() == want


def _run_scenario(name: str, **opts) -> list[dict]:
    cases = discover()[name].cases(ScenarioOptions(**opts))
    return [summarize_case(run_case(c)) for c in cases]


@pytest.mark.parametrize("name,opts", [
    ("decode-steady", dict(num_running=[4], steps=30, warmup_steps=5, floor=False)),
    ("azure-conv", dict(trace=str(TRACES / "AzureLLMInferenceTrace_conv.csv"),
                        max_requests=25, warmup_steps=5, floor=False)),
])
def test_logical_clock_cases_share_one_schedule(name, opts):
    if "trace" in opts and not Path(opts["trace"]).is_file():
        pytest.skip(f"trace not found at {opts['trace']}")
    summaries = _run_scenario(name, **opts)
    assert {(s["policy"], s["codec"]) for s in summaries} >= {
        ("send", "msgpack"), ("cached", "msgpack"), ("send", "pickle"), ("cached", "pickle")}
    assert len({s["schedule_digest"] for s in summaries}) == 1
    assert len(summaries[0]["schedule_digest"]) == 64
    problems, notes = check_digests(summaries)
    assert problems == [] and notes == []
    for s in summaries:
        assert sorted(s["token_streams_compared_with"]) == sorted(
            c["case_id"] for c in summaries if c is not s)
        assert s["token_streams_not_compared_with"] == []


def _summary(case_id: str, schedule, tokens: str) -> dict:
    return dict(case_id=case_id, scenario="s", workload="trace=x", complete=True,
                schedule_digest=schedule, token_digest=tokens)


def test_token_streams_are_compared_only_between_equal_schedules():
    cases = [_summary("a", "S1", "T1"), _summary("b", "S1", "T2"),
             _summary("c", "S2", "T3"), _summary("d", None, "T1")]
    problems, notes = check_digests(cases)
    assert problems == ["token streams differ in s [trace=x]: T1: a; T2: b"]
    assert notes == [
        "token streams not compared in s [trace=x]: no schedule digest for d",
        "token streams not compared in s [trace=x]: schedules differ between (a, b) and c"]
    assert [(c["token_streams_compared_with"], c["token_streams_not_compared_with"])
            for c in cases] == [(["b"], ["c", "d"]), (["a"], ["c", "d"]),
                                ([], ["a", "b", "d"]), ([], ["a", "b", "c"])]
    # overhead's bare loop keeps no schedule by design: said as such, not listed by id
    bare = [dict(_summary(x, None, "T"), instrumentation="totals") for x in ("e", "f")]
    assert check_digests([_summary("a", "S1", "T1"), *bare])[1] == [
        "token streams not compared in s [trace=x] for the 2 bare-loop case(s) "
        "(instrumentation totals): they keep no schedule digest, by design"]
    # Different schedules, different tokens: not a problem, only a note.
    problems, notes = check_digests([_summary("a", "S1", "T1"), _summary("c", "S2", "T3")])
    assert problems == [] and notes == [
        "token streams not compared in s [trace=x]: schedules differ between a and c"]
