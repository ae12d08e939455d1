"""A timed replay's request and total-token rates over its wall time
(``summary.served_rates``), as benchmark_serving's "Request throughput" and "Total
Token throughput": served requests (those with an E2E) and their prompt + output
tokens over ``wall_s``; a rejected prompt counts in neither."""

from __future__ import annotations

from ipc_bench.analysis.summary import served_rates


def _req(prompt: int, output: int, e2e_s):
    return dict(num_prompt_tokens=prompt, num_output_tokens=output, e2e_s=e2e_s)


def test_served_requests_and_their_tokens_over_wall_time():
    requests = [_req(100, 20, 0.5), _req(300, 10, 1.0), _req(5000, 0, None)]
    assert served_rates(requests, 2.0) == dict(requests_per_s=1.0,
                                               total_tokens_per_s=215.0)


def test_no_wall_time_gives_no_rates():
    assert served_rates([_req(100, 20, 0.5)], 0.0) == {}
    assert served_rates([_req(100, 20, 0.5)], None) == {}


def test_a_replay_with_nothing_served_serves_zero_per_second():
    assert served_rates([_req(5000, 0, None)], 4.0) == dict(requests_per_s=0.0,
                                                            total_tokens_per_s=0.0)
