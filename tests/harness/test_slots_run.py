"""The slots protocol through two processes: the same tokens as msgpack and pickle,
through chunked prefill, finishes, preemption and async scheduling; its summary."""

from __future__ import annotations

from dataclasses import replace

from harness.test_e2e import trace_spec

from ipc_bench.analysis.summary import attach_token_bytes, summarize_case
from ipc_bench.engine.config import SchedulerConfig
from ipc_bench.harness.supervisor import run_case


def test_two_process_runs_give_msgpacks_and_pickles_tokens():
    """Both policies with slots, msgpack and pickle on 40 trace requests (prompts
    chunked by a 512-token budget, every request finishes, slots reused): one token
    digest and one schedule digest; slots sends fewer bytes both ways."""
    digests, schedules, summaries = set(), set(), {}
    for codec in ("msgpack", "pickle", "slots"):
        for policy in ("send", "cached"):
            result = run_case(trace_spec(policy, codec))
            attach_token_bytes(result)
            summary = summarize_case(result)
            digests.add(result.token_digest)
            schedules.add(summary["schedule_digest"])
            summaries[policy, codec] = summary
    assert len(digests) == 1 and len(schedules) == 1
    key = "sched_to_runner_payload_bytes_per_step"
    for policy in ("send", "cached"):
        assert summaries[policy, "slots"][key] < summaries[policy, "msgpack"][key] / 2, (
            policy, summaries[policy, "slots"][key], summaries[policy, "msgpack"][key])
        assert (summaries[policy, "slots"]["runner_to_sched_payload_bytes_per_step"]
                < summaries[policy, "msgpack"]["runner_to_sched_payload_bytes_per_step"] / 4)
    assert summaries["send", "slots"]["decode_token_bytes_per_step"] > 0


def test_preemption_and_async_scheduling_keep_tokens():
    """A cache of 24 blocks of 16 tokens for 40 requests: preemptions by recompute
    (resumes and skips travel as changes); sync and async slots give msgpack's tokens
    (the input oracle checks every step)."""
    tiny = SchedulerConfig(max_num_seqs=32, max_num_batched_tokens=512,
                           max_model_len=4096, num_blocks=400)
    digests, preempted = set(), []
    for codec in ("msgpack", "slots"):
        spec = replace(trace_spec("cached", codec), scheduler=tiny, input_oracle_interval=1)
        for s in (spec, replace(spec, async_scheduling=True)):
            result = run_case(s)
            digests.add(result.token_digest)
            preempted.append(summarize_case(result)["num_preemptions"])
    assert len(digests) == 1 and min(preempted) > 0, preempted
