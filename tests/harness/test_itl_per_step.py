"""ITL with drafts (``--num-spec-tokens``): one gap per step that gave a request tokens.

vLLM streams the tokens one step accepted for a request as one chunk and
benchmark_serving records one ITL entry per chunk, so a step that gave a request
several tokens is one gap, not one gap plus a 0-s gap per extra token
(``recording.request_record``). TTFT, E2E and TPOT ((e2e - ttft) / (n - 1)) stay per
token. The times are binary fractions, so every value is exact.
"""

from __future__ import annotations

from types import SimpleNamespace

from ipc_bench.harness.recording import FinishedRequest, StepEnds, request_record

#: Steps 3 to 8 and their ends (s since the case's start).
STEP_ENDS = StepEnds([3, 4, 5, 6, 7, 8], [0.5, 0.625, 0.75, 1.0, 1.25, 1.5])


def _request(token_steps):
    return SimpleNamespace(
        index=7, req_id="r7", num_prompt_tokens=16,
        num_tokens=16 + len(token_steps), max_tokens=32, arrival_step=1,
        first_scheduled_step=2, first_token_step=token_steps[0],
        finish_step=token_steps[-1], finish_reason="length", num_preemptions=0,
        token_steps=list(token_steps))


def test_a_step_that_accepted_drafts_is_one_gap():
    # 9 tokens: 1 at step 3 (the prefill), 3 at step 5, 1 at step 6, 4 at step 8;
    # steps 4 and 7 gave it none. Arrival at trace time 0.5 s, speedup 2: 0.25 s.
    rec = request_record(_request([3, 5, 5, 5, 6, 8, 8, 8, 8]), STEP_ENDS,
                         {7: 0.5}, speedup=2.0)
    assert rec["num_output_tokens"] == 9
    assert rec["arrival_s"] == 0.25
    assert rec["ttft_s"] == 0.25        # 0.5 - 0.25
    assert rec["e2e_s"] == 1.25         # 1.5 - 0.25
    assert rec["tpot_s"] == 0.125       # (1.25 - 0.25) / 8: per token, as before
    # Ends of steps 3, 5, 6, 8: 0.5, 0.75, 1.0, 1.5. Per token it was
    # [0.25, 0, 0, 0.25, 0.5, 0, 0, 0].
    assert rec["itl_s"] == [0.25, 0.25, 0.5]


def test_without_drafts_a_gap_per_token():
    rec = request_record(_request([3, 4, 5, 6]), STEP_ENDS, {7: 0.5}, speedup=2.0)
    assert (rec["ttft_s"], rec["e2e_s"], rec["tpot_s"]) == (0.25, 0.75, 0.5 / 3)
    assert rec["itl_s"] == [0.125, 0.125, 0.25]


def test_a_finished_request_one_step_one_gap():
    # A streamed case records a FinishedRequest; two steps that each gave two tokens.
    rec = request_record(FinishedRequest(_request([6, 6, 7, 7])), STEP_ENDS, {7: 0.5},
                         speedup=2.0)
    assert (rec["ttft_s"], rec["e2e_s"], rec["tpot_s"]) == (0.75, 1.0, 0.25 / 3)
    assert rec["itl_s"] == [0.25]


def test_a_one_token_request_has_no_gap():
    rec = request_record(_request([5]), STEP_ENDS, {7: 0.5}, speedup=2.0)
    assert (rec["ttft_s"], rec["e2e_s"], rec["tpot_s"]) == (0.5, 0.5, None)
    assert rec["itl_s"] == []
