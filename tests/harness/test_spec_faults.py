"""Speculative decoding under the oracles, end to end, and the kind of vLLM #20530.

- Correct runs with draft tokens pass the input oracle in one process and in two,
  under both policies, and both policies produce one token digest.
- The injected fault (accepted draft tokens not written into the runner's token
  buffer under ``cached``: only the target's last token is written, at the first free
  position, through a ``sitecustomize`` module that only these tests write) fails the
  input oracle at the next step, naming the step, the request, the position and the
  id the scheduler holds; ``bench.py --policies cached`` exits 1 with that one line
  (both cases of such a run would agree on their tokens, so nothing else sees it).
- The same with the torch model (a verification forward over every drafted position,
  the target's own forward run ahead as the drafter).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import msgspec
import pytest

from analysis_run import bench_in_process
from fault_helpers import fault_arming, steady_case
from ipc_bench.engine.config import ModelConfig
from ipc_bench.engine.workloads import SteadyDecodeWorkload
from ipc_bench.harness.spec import CaseError, CaseResult
from ipc_bench.harness.supervisor import run_case

# After the runner verified step IPC_BENCH_TEST_SPEC_FAULT_AT's drafts under cached, the
# first request with at least one accepted draft (and tokens left to decode) gets only
# its last id written, at num_tokens_no_spec: its accepted drafts are dropped. One line
# "seq req_id start id id ..." (the ids it should have written) goes to
# IPC_BENCH_TEST_SPEC_FAULT_LOG.
FAULT = '''
import os
if os.environ.get("IPC_BENCH_TEST_SPEC_FAULT_AT"):
    from ipc_bench.engine import model_runner as _mr
    _at = int(os.environ["IPC_BENCH_TEST_SPEC_FAULT_AT"])
    _real_back = _mr.ModelRunner.write_back_spec
    _real_write = _mr.ModelRunner.write_token_ids
    _state = {"calls": 0, "armed": False, "done": False}

    def write_token_ids(self, state, row, start, token_ids):
        left = state.sampling_params.max_tokens - len(state.output_token_ids)
        if (_state["armed"] and not _state["done"] and len(token_ids) > 1
                and left > self.num_spec_tokens + 2):
            _state["done"] = True
            with open(os.environ["IPC_BENCH_TEST_SPEC_FAULT_LOG"], "a") as f:
                f.write(f"{_state['calls']} {state.req_id} {start} "
                        + " ".join(map(str, token_ids)) + "\\n")
            return _real_write(self, state, row, start, token_ids[-1:])
        return _real_write(self, state, row, start, token_ids)

    def write_back_spec(self, inputs, sampled):
        _state["armed"] = _state["calls"] >= _at
        try:
            return _real_back(self, inputs, sampled)
        finally:
            _state["armed"] = False
            _state["calls"] += 1

    _mr.ModelRunner.write_token_ids = write_token_ids
    _mr.ModelRunner.write_back_spec = write_back_spec
'''


@pytest.fixture
def fault(monkeypatch, tmp_path):
    """``fault(seq)``: arm the injected runner bug from step ``seq`` on for every process
    started from now on (and this one, ``here``); returns the log file's path."""
    return fault_arming(monkeypatch, tmp_path, FAULT, "IPC_BENCH_TEST_SPEC_FAULT", "fault.txt",
                        ("write_back_spec", "write_token_ids"))


def faulted(log: Path) -> tuple[int, str, int, list[int]]:
    """The one fault the injected bug made: (seq, req_id, start, ids it dropped + kept)."""
    lines = log.read_text().split("\n")[:-1]
    assert len(lines) == 1, lines
    seq, req_id, start, *ids = lines[0].split()
    return int(seq), req_id, int(start), [int(i) for i in ids]


def expected_error(log: Path) -> str:
    """The oracle's line, as a regex: at the next step the runner feeds, at the
    position of the last id it should have written, whatever its row holds there."""
    seq, req_id, start, ids = faulted(log)
    return (rf"input oracle: step {seq + 1}: request {re.escape(req_id)}: the runner fed "
            rf"token id \d+ at position {start + len(ids) - 1}, the scheduler's "
            rf"all_token_ids hold {ids[-1]}")

def fails_at_the_step_after_the_fault(result: CaseResult, log) -> None:
    """Run ``result.spec`` with the fault of ``log`` armed (``fault``): the case fails
    with ``expected_error`` at the step after the first faulted one, found as soon as
    that step was applied (its record is the last)."""
    with pytest.raises(CaseError) as err:
        run_case(result.spec, result=result)
    seq = faulted(log)[0]
    assert seq >= 20
    assert re.fullmatch(expected_error(log), str(err.value)), str(err.value)
    assert err.value.step == seq + 1
    assert len(result.sched_rows) == seq + 2



def spec_case(k: int = 2, **kw):
    case = steady_case(8, max_steps=200, **kw)
    return replace(case, labels={**case.labels, "num_spec_tokens": k},
                   scheduler=msgspec.structs.replace(case.scheduler, num_spec_tokens=k))


def torch_spec_case(k: int = 2, **kw):
    """``spec_case`` with the torch model (tiny preset, float32 on CPU, a vocabulary of
    512) and the lookahead slots its drafter writes (``num_lookahead_tokens``)."""
    case = spec_case(k, **kw)
    return replace(
        case, model=ModelConfig(name="torch", preset="tiny", device="cpu", vocab_size=512),
        scheduler=msgspec.structs.replace(case.scheduler, num_lookahead_tokens=k),
        make_workload=lambda: SteadyDecodeWorkload(8, seed=3, vocab_size=512,
                                                   prompt_len_range=(8, 64),
                                                   output_len_range=(16, 200)))


def test_torch_draft_tokens_give_send_and_cached_one_digest():
    """The torch model's verification and drafter under both policies, two processes:
    the same schedule and bitwise the same tokens, the input oracle checking every
    16 steps."""
    digests = set()
    for policy in ("send", "cached"):
        result = run_case(torch_spec_case(2, policy=policy, input_oracle_interval=16))
        assert result.error is None and len(result.sched_rows) == 200
        assert len(result.runner_columns["draft_ns"]) == 200
        digests.add((result.token_digest, result.schedule_digest))
    assert len(digests) == 1


def test_torch_accepted_drafts_not_written_fail_the_input_oracle(fault):
    log = fault(20)
    result = CaseResult(spec=torch_spec_case(2, policy="cached", input_oracle_interval=1))
    fails_at_the_step_after_the_fault(result, log)


@pytest.mark.parametrize("transport", ["ipc", "inproc"])
def test_draft_tokens_pass_both_oracles(transport):
    kw = dict(codec="none", transport="inproc") if transport == "inproc" else {}
    digests = set()
    for policy in ("send", "cached"):
        result = run_case(spec_case(2, policy=policy, input_oracle_interval=16, **kw))
        assert result.error is None and len(result.sched_rows) == 200
        digests.add((result.token_digest, result.schedule_digest))
    assert len(digests) == 1  # the same schedule and the same tokens


@pytest.mark.parametrize("transport", ["ipc", "inproc"])
def test_accepted_drafts_not_written_fail_the_input_oracle(fault, transport):
    log = fault(20, here=transport == "inproc")
    kw = dict(codec="none", transport="inproc") if transport == "inproc" else {}
    result = CaseResult(spec=spec_case(2, policy="cached", input_oracle_interval=1, **kw))
    fails_at_the_step_after_the_fault(result, log)


def test_bench_cached_alone_exits_1_naming_the_step(fault, tmp_path):
    log = fault(12)
    out = tmp_path / "run"
    proc = bench_in_process(
        ["--scenario", "decode-steady", "--policies", "cached", "--num-running", "4",
         "--steps", "40", "--warmup-steps", "5", "--codecs", "msgpack", "--no-floor",
         "--no-single-process", "--quiet", "--output", out, "--num-spec-tokens", "2"])
    assert proc.returncode == 1, proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("bench.py: error:")]
    assert len(errors) == 1, proc.stderr
    assert re.fullmatch("bench.py: error: num_running=4,num_spec_tokens=2/cached/msgpack#0: "
                        + expected_error(log) + re.escape(f"; partial results: {out}"),
                        errors[0]), errors[0]
    assert "Traceback" not in proc.stderr


def test_token_streams_across_k_equal_and_compared_only_within_one_k(tmp_path):
    """A drained replay (every request finished) with K = 0 and 3: each K is its own
    workload, so the token oracle pairs only cases of one K (equal schedules), while
    the streams themselves are equal across K (different schedules); the K = 3 cases
    count every step (mixed prefill), so they report no acceptance figures."""
    import json

    from fault_helpers import TRACES

    out = tmp_path / "run"
    proc = bench_in_process(
        ["--scenario", "azure-conv", "--trace", TRACES / "AzureLLMInferenceTrace_conv.csv",
         "--max-requests", "12", "--num-spec-tokens", "0,3", "--codecs", "msgpack",
         "--no-single-process", "--no-floor", "--quiet", "--output", out])
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    cases = {(c["num_spec_tokens"], c["policy"]): c for c in summary["cases"]}
    assert summary["problems"] == []
    assert all(c["num_finished"] == c["num_requests"] == 12 for c in cases.values())
    assert len({c["token_digest"] for c in cases.values()}) == 1
    assert cases[0, "send"]["schedule_digest"] == cases[0, "cached"]["schedule_digest"]
    assert cases[3, "send"]["schedule_digest"] == cases[3, "cached"]["schedule_digest"]
    assert cases[0, "send"]["schedule_digest"] != cases[3, "send"]["schedule_digest"]
    for (k, policy), c in cases.items():
        other = "cached" if policy == "send" else "send"
        assert c["token_streams_compared_with"] == [cases[k, other]["case_id"]]
        assert c["token_streams_not_compared_with"] == []
    assert cases[3, "cached"]["spec_acceptance"] == 0.7
    assert "spec_draft_acceptance_rate" not in cases[3, "cached"]


def test_bench_runs_the_torch_model_with_drafts(tmp_path):
    """``bench.py --model torch --num-spec-tokens 0,2``: no refusal; within each K both
    policies share one schedule and one token digest, the K = 2 cases report the
    drafter's time apart from the verification forward and an acceptance rate."""
    import json

    out = tmp_path / "run"
    proc = bench_in_process(
        ["--scenario", "decode-steady", "--model", "torch", "--model-preset", "tiny",
         "--device", "cpu", "--vocab-size", "512", "--num-running", "4", "--steps", "30",
         "--warmup-steps", "5", "--codecs", "msgpack", "--no-floor", "--no-single-process",
         "--quiet", "--output", out, "--num-spec-tokens", "0,2", "--spec-acceptance", "0.7"])
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["problems"] == []
    cases = {(c["num_spec_tokens"], c["policy"]): c for c in summary["cases"]}
    assert sorted(cases) == [(0, "cached"), (0, "send"), (2, "cached"), (2, "send")]
    for k in (0, 2):
        assert cases[k, "send"]["token_digest"] == cases[k, "cached"]["token_digest"]
        assert cases[k, "send"]["schedule_digest"] == cases[k, "cached"]["schedule_digest"]
    assert "draft_ns_per_step" not in cases[0, "send"]
    for policy in ("send", "cached"):
        c = cases[2, policy]
        assert c["draft_ns_per_step"] > 0
        assert c["runner_writeback_ns_per_step"] >= c["draft_ns_per_step"]
        assert 0 < c["spec_draft_acceptance_rate"] < 1
