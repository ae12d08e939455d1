"""Whole cases in the 1d37eb37 layout (``--vllm-layout 1d37eb37``): both policies and
both codecs produce the same token streams and pass the input oracle, in a steady
decode run and in a replay whose small KV cache preempts, and the layout leaves the
schedule and the tokens of the 7f280d69c layout's run unchanged (only the messages
differ)."""

from __future__ import annotations

from dataclasses import replace

import msgspec
import numpy as np
import pytest

from ipc_bench.analysis.summary import attach_token_bytes, summarize_case
from ipc_bench.engine.config import LAYOUT_1D37EB37, ModelConfig, SchedulerConfig
from ipc_bench.engine.traces import Trace
from ipc_bench.engine.workloads import SteadyDecodeWorkload, TraceWorkload
from ipc_bench.harness.spec import CaseSpec
from ipc_bench.harness.supervisor import run_case
from ipc_bench.wire.codecs import scheduler_output_codec

CASES = [(p, c) for c in ("msgpack", "pickle") for p in ("send", "cached")]


def steady_spec(policy: str, codec: str, layout: str = LAYOUT_1D37EB37) -> CaseSpec:
    """Four running requests whose short outputs finish and are replaced."""
    return CaseSpec(
        scenario="test-steady", labels={"num_running": 4}, policy=policy, codec=codec,
        scheduler=SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=512,
                                  max_model_len=512, num_blocks=4 * 32 + 32,
                                  vllm_layout=layout),
        model=ModelConfig(seed=0),
        make_workload=lambda: SteadyDecodeWorkload(4, seed=0, vocab_size=128_256,
                                                   prompt_len_range=(8, 40),
                                                   output_len_range=(5, 30)),
        warmup_steps=5, max_steps=60, count="decode_only", peer_timeout_s=20.0,
        input_oracle_interval=16)


def preempting_spec(policy: str, codec: str, layout: str = LAYOUT_1D37EB37) -> CaseSpec:
    """Six staggered requests, 16-token chunked prefill and a cache that holds a third
    of what they need: prefill chunks, preemptions and resumptions (as
    ``tests/harness/test_oracle.py``'s)."""
    reqs = [(0, 10, 30), (0, 20, 25), (1, 7, 40), (2, 33, 12), (2, 5, 50), (5, 16, 16)]
    trace = Trace(path="synthetic", arrival_s=np.array([r[0] for r in reqs], dtype=float),
                  prompt_lens=np.array([r[1] for r in reqs]),
                  output_lens=np.array([r[2] for r in reqs]))
    return CaseSpec(
        scenario="t", labels={"trace": "mixed"}, policy=policy, codec=codec,
        scheduler=SchedulerConfig(max_num_seqs=8, max_num_batched_tokens=16, max_model_len=128,
                                  block_size=4, num_blocks=24, vllm_layout=layout),
        model=ModelConfig(seed=0),
        make_workload=lambda: TraceWorkload(trace, name="mixed", seed=0, vocab_size=128_256,
                                            logical_step_s=1.0),
        warmup_steps=2, count="all", transport="ipc", input_oracle_interval=16)


def _run_four(make) -> dict:
    out = {}
    for policy, codec in CASES:
        result = run_case(make(policy, codec))
        attach_token_bytes(result)
        out[policy, codec] = (result, summarize_case(result))
    return out


@pytest.fixture(scope="module")
def steady():
    return _run_four(steady_spec)


@pytest.fixture(scope="module")
def preempting():
    return _run_four(preempting_spec)


def _histories(result, codec: str) -> tuple[int, int]:
    """(messages with resumed requests, requests whose history rode in all_token_ids)
    over the case's recorded frames."""
    decode = scheduler_output_codec(codec, LAYOUT_1D37EB37).decode
    sos = [decode(f) for f in result.s2r_frames]
    return (sum(1 for so in sos if so.scheduled_cached_reqs.resumed_req_ids),
            sum(len(so.scheduled_cached_reqs.all_token_ids) for so in sos))


@pytest.mark.parametrize("which", ["steady", "preempting"])
def test_both_policies_and_codecs_agree_on_tokens_and_schedule(which, request):
    results = request.getfixturevalue(which)
    summaries = [s for _, s in results.values()]
    assert {s["token_digest"] for s in summaries} == {summaries[0]["token_digest"]}
    assert {s["schedule_digest"] for s in summaries} == {summaries[0]["schedule_digest"]}
    assert all(s["complete"] and s["vllm_layout"] == "1d37eb37" for s in summaries)
    assert summaries[0]["output_tokens"] > 0
    for codec in ("msgpack", "pickle"):
        send, cached = results["send", codec][1], results["cached", codec][1]
        assert (cached["sched_to_runner_payload_bytes_per_step"]
                < send["sched_to_runner_payload_bytes_per_step"])


def test_the_preempting_replay_ships_whole_histories_under_both_policies(preempting):
    for (policy, codec), (result, summary) in preempting.items():
        assert summary["num_preemptions"] == 11, (policy, codec)
        resumed_steps, histories = _histories(result, codec)
        # every resumption carries its request's whole history, whatever the policy
        assert resumed_steps >= 1 and histories >= 11, (policy, codec, histories)


def test_the_steady_run_ships_no_history(steady):
    for (policy, codec), (result, _) in steady.items():
        assert _histories(result, codec) == (0, 0), (policy, codec)


@pytest.mark.parametrize("make", [steady_spec, preempting_spec])
def test_the_layout_changes_the_messages_not_the_tokens(make, steady, preempting):
    """The 7f280d69c layout's run of the same case: same tokens, same schedule."""
    later = (steady if make is steady_spec else preempting)["cached", "msgpack"][1]
    spec = make("cached", "msgpack", layout="7f280d69c")
    old = summarize_case(run_case(replace(spec, scheduler=msgspec.structs.replace(
        spec.scheduler, vllm_layout="7f280d69c"))))
    assert old["vllm_layout"] == "7f280d69c"
    assert (old["token_digest"], old["schedule_digest"]) == (later["token_digest"],
                                                             later["schedule_digest"])


def test_a_run_from_before_the_option_compares_as_the_default_layout():
    """A recorded case without ``scheduler.vllm_layout`` ran 7f280d69c: the settings of
    a run from before the option equal a default run's, and differ from 1d37eb37's."""
    from ipc_bench.harness.environment import _workload_settings

    def run(**layout) -> dict:
        return {"cases": [{"labels": {"num_running": 4}, "policy": "send", "codec": "msgpack",
                           "scheduler": {"max_num_seqs": 4, **layout}}]}

    before = _workload_settings(run())
    assert before == _workload_settings(run(vllm_layout="7f280d69c"))
    assert before["num_running=4"]["scheduler.vllm_layout"] == ["7f280d69c"]
    assert before != _workload_settings(run(vllm_layout="1d37eb37"))
