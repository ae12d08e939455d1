"""The replicated baseline through two processes: the runner's replica schedules what
the scheduler scheduled (its digest checked every step), tokens equal msgpack's, and a
replica fed a perturbed arrival fails the case naming the step where it diverged."""

from __future__ import annotations

import os

import pytest

from harness.test_e2e import trace_spec

from ipc_bench.analysis.summary import summarize_case
from ipc_bench.harness.spec import CaseError
from ipc_bench.harness.supervisor import run_case

# Loaded by every process started with its folder on PYTHONPATH; only the runner builds
# a ReplicatedRunnerSide: its replica gets request IPC_BENCH_TEST_PERTURB_INDEX with one
# max_token less than the scheduler's copy.
PERTURB = '''
import os
if os.environ.get("IPC_BENCH_TEST_PERTURB_INDEX"):
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


@pytest.fixture(scope="module")
def clean():
    """Both policies, replicated and msgpack, on 40 trace requests (chunked prompts)."""
    return {(p, c): run_case(trace_spec(p, c)) for c in ("msgpack", "replicated")
            for p in ("send", "cached")}


def test_replica_agrees_and_tokens_equal(clean):
    digests = {r.token_digest for r in clean.values()}
    assert len(digests) == 1
    summaries = {k: summarize_case(r) for k, r in clean.items()}
    assert len({s["schedule_digest"] for s in summaries.values()}) == 1
    for policy in ("send", "cached"):
        rep, mp = summaries[policy, "replicated"], summaries[policy, "msgpack"]
        assert rep["replica_scheduler_ns_per_step"] > 0
        assert "replica_scheduler_ns_per_step" not in mp
        # only arrivals and a 14-byte step message travel (and the tokens back)
        assert (rep["sched_to_runner_payload_bytes_per_step"]
                < mp["sched_to_runner_payload_bytes_per_step"] / 2)


def test_perturbed_replica_fails_the_case_naming_the_step(clean, tmp_path, monkeypatch):
    recs = [r for r in clean["cached", "replicated"].requests
            if r["max_tokens"] >= 3 and r["finish_reason"] == "length"
            and r["num_output_tokens"] == r["max_tokens"]]
    target = recs[len(recs) // 2]
    (tmp_path / "sitecustomize.py").write_text(PERTURB)
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.setenv("IPC_BENCH_TEST_PERTURB_INDEX", str(target["index"]))
    with pytest.raises(CaseError) as err:
        run_case(trace_spec("cached", "replicated"))
    # the replica finished the request one token early: at the step that gives the
    # scheduler's copy its last token, the replica does not schedule it (the scheduler's
    # step number: its logical clock, which skips idle steps that the case's count does not)
    step = target["finish_step"]
    assert (f"DecodeError: scheduler step {step}: the replica's schedule differs from the "
            f"scheduler's") in str(err.value), str(err.value)
    assert err.value.step is not None and err.value.step <= step
