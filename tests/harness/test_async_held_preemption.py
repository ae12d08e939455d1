"""Async scheduling with a request preempted in a step that is never sent.

Under ``--async-scheduling`` a step that schedules nothing (every running request
waits for its last token) is not sent; its preemptions go with the next step sent.
A request preempted there can resume in that next step, still in the runner's
persistent batch: the runner takes it out and re-adds it from its kept state, as
vLLM's ``_update_states`` removes ``cached_req_ids - (scheduled_req_ids -
resumed_req_ids)``. Before that, the two small traces below stopped
their async case: without drafts with ``ProtocolError: request ... resumed from
preemption is still in the persistent batch`` at step 44, with 3 drafts with
``cached request ...: num_computed_tokens 0, the runner computed 35 (0 drafts
rejected)`` at step 17. Both now run through: every case complete, the input oracle
checking every step, and equal token streams for async and sync scheduling, both
policies and both codecs (the null model's tokens depend on the request's own row
only, so once every request has finished the streams must be equal whatever the
schedule: docs/oracles.md).
"""

from __future__ import annotations

import json

from analysis_run import bench_in_process

#: "arrival_ms:prompt:output" rows of the two traces.
NO_DRAFTS = "5:37:44 10:68:78 30:5:72 30:15:33 30:34:21"
DRAFTS = "500:13:50 505:2:47"
NO_DRAFTS_ARGS = ("--block-size", "4", "--max-model-len", "128", "--num-blocks", "40",
                  "--max-num-batched-tokens", "64")
DRAFTS_ARGS = ("--block-size", "4", "--max-model-len", "48", "--num-blocks", "21",
               "--max-num-batched-tokens", "32", "--max-num-seqs", "2")


def write_trace(path, rows: str) -> None:
    """An Azure trace CSV of ``rows`` ("arrival_ms:prompt:output", space-separated)."""
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    for row in rows.split():
        ms, prompt, output = (int(v) for v in row.split(":"))
        lines.append(f"2023-11-16 18:00:{ms // 1000:02d}.{ms % 1000:03d}0000,{prompt},{output}")
    path.write_text("\n".join(lines) + "\n")


def bench(tmp_path, name: str, rows: str, *args: str) -> list[dict]:
    """Run ``rows`` as an azure-conv replay (null model, both codecs, no floor, the
    input oracle at every step); returns the summary's cases (exit 0 asserted)."""
    trace = tmp_path / f"{name}.csv"
    if not trace.exists():
        write_trace(trace, rows)
    out = tmp_path / name
    proc = bench_in_process(  # cli.main in this process, its runners processes
        ["--scenario", "azure-conv", "--trace", str(trace), "--warmup-steps", "0",
         "--codecs", "msgpack,pickle", "--no-floor", "--input-oracle-interval", "1",
         "--output", str(out), *args])
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "complete" and summary["problems"] == []
    for case in summary["cases"]:
        assert case["complete"] and case["error"] is None, case["case_id"]
        assert case["input_oracle_interval"] == 1
        assert case["token_streams_not_compared_with"] == []
    return summary["cases"]


def arms(cases: list[dict]) -> list[tuple]:
    return [(c["arm"], c["codec"], c["num_steps"], c["num_preemptions"], c["num_finished"])
            for c in cases]


def test_a_request_preempted_in_a_held_step_resumes_in_the_next_one(tmp_path):
    cases = bench(tmp_path, "no-drafts", NO_DRAFTS, "--async-scheduling", *NO_DRAFTS_ARGS)
    assert arms(cases) == [("cached", "msgpack", 111, 14, 5),
                           ("cached+async", "msgpack", 112, 15, 5),
                           ("cached", "pickle", 111, 14, 5),
                           ("cached+async", "pickle", 112, 15, 5)]
    digests = {c["token_digest"] for c in cases}
    assert len(digests) == 1
    for case in cases:  # compared with the 3 others, across schedules
        assert len(case["token_streams_compared_with"]) == 3
    sync = bench(tmp_path, "no-drafts-sync", NO_DRAFTS, "--policies", "send,cached",
                 *NO_DRAFTS_ARGS)
    assert [(c["policy"], c["codec"], c["num_preemptions"]) for c in sync] == [
        ("send", "msgpack", 14), ("cached", "msgpack", 14),
        ("send", "pickle", 14), ("cached", "pickle", 14)]
    assert {c["token_digest"] for c in sync} == digests


def test_with_drafts_a_request_preempted_in_a_held_step_resumes(tmp_path):
    cases = bench(tmp_path, "drafts", DRAFTS, "--async-scheduling", "--num-spec-tokens",
                  "0,3", *DRAFTS_ARGS)
    k3 = [c for c in cases if c["num_spec_tokens"] == 3]
    assert arms(k3) == [("cached", "msgpack", 24, 1, 2), ("cached+async", "msgpack", 25, 2, 2),
                        ("cached", "pickle", 24, 1, 2), ("cached+async", "pickle", 25, 2, 2)]
    # every K, schedule and codec gives the same tokens (the run compares within a K)
    assert len(cases) == 8 and len({c["token_digest"] for c in cases}) == 1
    sync = bench(tmp_path, "drafts-sync", DRAFTS, "--policies", "send,cached",
                 "--num-spec-tokens", "3", *DRAFTS_ARGS)
    assert [(c["policy"], c["codec"], c["num_preemptions"]) for c in sync] == [
        ("send", "msgpack", 1), ("cached", "msgpack", 1),
        ("send", "pickle", 1), ("cached", "pickle", 1)]
    assert {c["token_digest"] for c in sync} == {c["token_digest"] for c in cases}
