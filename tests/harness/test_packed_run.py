"""The packed codec (vLLM PR #54406) through two processes: the same tokens as pickle."""

from __future__ import annotations

from harness.test_e2e import trace_spec

from ipc_bench.analysis import bytemodel
from ipc_bench.harness.supervisor import run_case
from ipc_bench.wire.codecs import scheduler_output_codec


def test_two_process_runs_give_pickles_tokens_and_exact_model_bytes():
    """Both policies over ZeroMQ with packed and pickle (trace prompts chunked, so new
    requests, prompt chunks and finishes travel packed): one token digest, and the byte
    model holds on every captured pure-decode frame."""
    digests, checked = set(), 0
    for codec in ("pickle", "packed"):
        for policy in ("send", "cached"):
            result = run_case(trace_spec(policy, codec))
            digests.add(result.token_digest)
            s_codec = scheduler_output_codec(codec)
            for frame in result.s2r_frames:
                so = s_codec.decode(frame)
                try:
                    predicted = bytemodel.predict_scheduler_output(codec, so)
                except ValueError:  # not a pure-decode step
                    continue
                assert predicted == len(frame)
                checked += 1
    assert len(digests) == 1 and checked > 0
