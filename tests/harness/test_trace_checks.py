"""A replay's rejected prompts and its steps inside the warm-up, found before the first
case runs (``harness.trace_checks``), against what the run then records."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest

from ipc_bench.analysis.summary import no_request_served
from ipc_bench.cli import main
from ipc_bench.engine.config import CACHED, SchedulerConfig
from ipc_bench.engine.scheduler import Scheduler, SchedulerError
from ipc_bench.engine.traces import load_azure_trace
from ipc_bench.engine.workloads import TraceWorkload
from ipc_bench.harness import trace_checks
from ipc_bench.harness.trace_checks import (ReplayRows, cache_overflow, last_step_slots,
                                            overflow_problem, overflow_warning,
                                            rejection_warning, replay_steps, step_bounds,
                                            trace_rejections, warmup_problem)

HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens"
#: max_model_len 512, 40 blocks of 16 tokens (640): prompts of 511 (served), 512 (too
#: long), 639 and 640 (longer than max_model_len too), and with --num-blocks 31 (496
#: tokens) 495 fits (496 with one token) and 496 does not (497: 32 blocks).
ROWS = [("18:15:46.0000000", 100, 20), ("18:15:46.0100000", 511, 5),
        ("18:15:46.0200000", 512, 5), ("18:15:46.5000000", 495, 1),
        ("18:15:47.0000000", 496, 3), ("18:15:47.0100000", 30, 400),
        ("18:15:47.0200000", 700, 4), ("18:15:48.0000000", 7, 9)]


def _csv(tmp_path, rows=ROWS, name="trace.csv"):
    path = tmp_path / name
    path.write_text("\r\n".join([HEADER] + [f"2023-11-16 {t},{p},{g}" for t, p, g in rows]))
    return path


def _bench(tmp_path, *args: str) -> tuple[int, list[str], dict | None]:
    """``bench.py`` in this process, one cached msgpack case without floor; returns the
    exit code, stderr's lines and summary.json (``None`` where no run folder was made)."""
    out = tmp_path / "run"
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["--policies", "cached", "--codecs", "msgpack", "--no-single-process",
                     "--no-floor", "--quiet", "--output", str(out), *args])
    summary = json.loads((out / "summary.json").read_text()) if out.exists() else None
    return code, err.getvalue().splitlines(), summary


def test_the_rejected_count_said_first_is_the_runs_num_rejected(tmp_path):
    trace = _csv(tmp_path)
    cfg = SchedulerConfig(max_num_seqs=256, max_num_batched_tokens=2048, max_model_len=512,
                          num_blocks=31)
    rej = trace_rejections(load_azure_trace(trace), cfg)
    assert (rej.count, rej.total, rej.longest, rej.by_len, rej.by_blocks) == (
        4, 8, 700, True, True)
    assert rej.mask.tolist() == [False, True, True, False, True, False, True, False]
    code, err, summary = _bench(tmp_path, "--scenario", "azure-conv", "--trace", str(trace),
                                "--max-model-len", "512", "--num-blocks", "31",
                                "--warmup-steps", "0")
    assert code == 0, err
    assert [c["num_rejected"] for c in summary["cases"]] == [rej.count]
    assert err[0] == (
        "bench.py: warning: 4 of 8 requests replayed will be rejected on arrival in every "
        "case (a prompt of max_model_len 512 tokens or more, or one needing more KV blocks "
        "than the cache's 31 (16 tokens each) for itself and one token; the longest has 700 "
        "tokens) (vLLM would refuse to start with a KV cache smaller than max_model_len) and "
        "counted in num_rejected: raise --max-model-len to 701 or more and --num-blocks to 44 "
        "or more to serve them")
    assert sum(ln.startswith("bench.py: warning: ") for ln in err) == 1


def test_only_rejections_by_max_model_len_are_said_to_be_vllms(tmp_path):
    """A cache that holds max_model_len: every rejected prompt is one vLLM rejects too."""
    cfg = SchedulerConfig(max_num_seqs=256, max_num_batched_tokens=2048, max_model_len=512,
                          num_blocks=40)
    rej = trace_rejections(load_azure_trace(_csv(tmp_path)), cfg)
    assert (rej.count, rej.by_len, rej.by_blocks, rej.blocks) == (2, True, True, 44)
    assert rejection_warning(rej, cfg) == (
        "2 of 8 requests replayed will be rejected on arrival in every case (a prompt of "
        "max_model_len 512 tokens or more, or one needing more KV blocks than the cache's 40 "
        "(16 tokens each) for itself and one token; the longest has 700 tokens), as vLLM "
        "rejects them, and counted in num_rejected: raise --max-model-len to 701 or more and "
        "--num-blocks to 44 or more to serve them")
    # blocks only: 495 + 1 (served) and 496 + 3 (rejected) in 31 blocks, max_model_len 4096
    cfg = SchedulerConfig(max_num_batched_tokens=2048, num_blocks=31)
    rej = trace_rejections(load_azure_trace(_csv(tmp_path, [ROWS[3], ROWS[4]])), cfg)
    assert (rej.count, rej.by_len, rej.by_blocks, rej.blocks) == (1, False, True, 32)
    assert rejection_warning(rej, cfg) == (
        "1 of 2 requests replayed will be rejected on arrival in every case (a prompt needing "
        "more KV blocks than the cache's 31 (16 tokens each) for itself and one token; the "
        "longest has 496 tokens) (vLLM would refuse to start with a KV cache smaller than "
        "max_model_len) and counted in num_rejected: raise --num-blocks to 32 or more to "
        "serve them")


def test_the_simulated_steps_are_the_runs(tmp_path):
    """Chunked prefill (a 256-token budget), preemption (a cache of 40 blocks) and
    rejections: the scheduler run before the case takes the case's steps."""
    trace = _csv(tmp_path)
    cfg = SchedulerConfig(max_num_seqs=256, max_num_batched_tokens=256, max_model_len=1024,
                          num_blocks=40)
    loaded = load_azure_trace(trace)
    arrivals = TraceWorkload(loaded, name="t", seed=0, vocab_size=100,
                             logical_step_s=0.02).arrival_steps
    steps = replay_steps(loaded, arrivals, cfg, 10_000)
    assert replay_steps(loaded, arrivals, cfg, steps - 1) is None  # it stops past its limit
    served = ~trace_rejections(loaded, cfg).mask
    bounds = step_bounds(loaded, served, cfg)
    assert bounds.high is None  # blocks for every request at once: more than 40
    code, err, summary = _bench(tmp_path, "--scenario", "azure-conv", "--trace", str(trace),
                                "--max-num-batched-tokens", "256", "--max-model-len", "1024",
                                "--num-blocks", "40", "--warmup-steps", "0")
    assert code == 0, err
    case = summary["cases"][0]
    assert case["num_total_steps"] == steps and bounds.low <= steps
    assert case["num_preemptions"] > 0 and case["num_rejected"] == 1


def test_a_replay_inside_the_warmup_is_refused_with_its_steps(tmp_path):
    # 100 + 20 tokens: 1 prefill step and 19 decodes; then 7 + 9: 9 steps, 29 in all
    trace = _csv(tmp_path, [ROWS[0], ROWS[-1]])
    code, err, summary = _bench(tmp_path, "--scenario", "azure-conv", "--trace", str(trace))
    assert (code, summary) == (2, None)
    assert err == [
        "bench.py: error: no step would be counted: the replay of the trace's 2 rows takes "
        "29 steps, all within the default --warmup-steps 50: set --warmup-steps below 29 "
        "(e.g. --warmup-steps 14) or replay a longer trace"]
    code, err, _ = _bench(tmp_path, "--scenario", "azure-code", "--trace", str(trace),
                          "--max-requests", "1", "--warmup-steps", "20")
    assert err == [
        "bench.py: error: no step would be counted: the replay of the first row "
        "(--max-requests 1) takes 20 steps, all within --warmup-steps 20: set "
        "--warmup-steps below 20 (e.g. --warmup-steps 10) or raise --max-requests"]
    code, err, summary = _bench(tmp_path, "--scenario", "azure-conv", "--trace", str(trace),
                                "--warmup-steps", "28")
    assert code == 0, err
    assert (summary["cases"][0]["num_total_steps"], summary["cases"][0]["num_steps"]) == (29, 1)


def test_a_trace_of_exactly_max_requests_rows_is_not_called_cut(tmp_path):
    trace = _csv(tmp_path, [ROWS[0], ROWS[-1]])
    assert [load_azure_trace(trace, n).rows_after for n in (1, 2, 3, None)] == [
        True, False, False, False]
    code, err, _ = _bench(tmp_path, "--scenario", "azure-conv", "--trace", str(trace),
                          "--max-requests", "2")
    assert (code, err) == (2, [
        "bench.py: error: no step would be counted: the replay of the trace's 2 rows takes "
        "29 steps, all within the default --warmup-steps 50: set --warmup-steps below 29 "
        "(e.g. --warmup-steps 14) or replay a longer trace"])
    # where whether rows follow is not known (a trace built by hand)
    assert warmup_problem(ReplayRows(2, 2, True), 29, 29, 50, False, False) == (
        "no step would be counted: the replay of the first 2 rows (--max-requests 2) takes "
        "29 steps, all within the default --warmup-steps 50: set --warmup-steps below 29 "
        "(e.g. --warmup-steps 14) or raise --max-requests (if the trace has more rows)")


def test_an_async_replay_is_refused_on_its_bounds(tmp_path):
    trace = _csv(tmp_path, [ROWS[0], ROWS[-1]])
    code, err, _ = _bench(tmp_path, "--scenario", "azure-conv", "--trace", str(trace),
                          "--async-scheduling")
    assert code == 2
    assert err == [
        "bench.py: error: no step would be counted: the replay of the trace's 2 rows takes "
        "20 to 29 steps, all within the default --warmup-steps 50: set --warmup-steps below "
        "20 (e.g. --warmup-steps 10) or replay a longer trace"]


def test_a_replay_whose_every_prompt_the_cache_refuses_names_num_blocks(tmp_path):
    trace = _csv(tmp_path, [ROWS[0]])
    code, err, summary = _bench(tmp_path, "--scenario", "azure-conv-timed", "--trace",
                                str(trace), "--num-blocks", "4")
    assert (code, summary) == (2, None)
    assert err == [
        "bench.py: error: the only request replayed would be rejected on arrival in every "
        "case (a prompt needing more KV blocks than the cache's 4 (16 tokens each) for "
        "itself and one token; the longest has 100 tokens), so the run would measure "
        "nothing: raise --num-blocks to 8 or more"]
    # 7 blocks admit the prompt (101 tokens) but not its last step (119 tokens)
    code, err, _ = _bench(tmp_path, "--scenario", "azure-conv", "--trace", str(trace),
                          "--num-blocks", "7", "--warmup-steps", "0")
    assert (code, err) == (2, [
        "bench.py: error: the only request served would stop every case mid-run when it "
        "outgrows the KV cache: the longest (a prompt of 100 tokens, 20 output tokens) needs "
        "8 KV blocks (16 tokens each) for the 119 tokens of its last step, more than the "
        "cache's 7, which preempting every other request does not free: raise --num-blocks "
        "to 8 or more, or lower --max-model-len to 113 or less"])
    code, err, summary = _bench(tmp_path, "--scenario", "azure-conv", "--trace", str(trace),
                                "--num-blocks", "8", "--warmup-steps", "0")
    assert (code, err) == (0, [])
    assert (summary["cases"][0]["num_rejected"], summary["cases"][0]["output_tokens"]) == (
        0, 20)


def test_a_run_that_got_past_the_checks_says_no_request_was_served():
    case = dict(complete=True, scenario="azure-conv", workload="trace=azure-conv:3",
                num_requests=3, num_rejected=3)
    assert no_request_served([case]) == [
        "no request was served in azure-conv [trace=azure-conv:3]: all 3 were rejected on "
        "arrival (prompt >= max_model_len, or more KV blocks than the cache has)"]
    assert no_request_served([dict(case, num_rejected=2)]) == []


def _one_request(tmp_path, prompt, output, name="one.csv"):
    """A trace of one ``prompt``-token request with ``output`` tokens and a 7-token one."""
    return _csv(tmp_path, [("18:15:46.0000000", prompt, output), ROWS[-1]], name)


def test_a_request_filling_the_cache_runs_and_one_a_block_past_it_is_refused(tmp_path):
    # 8 blocks of 16 (128 tokens): 40 + 89 computes 128 tokens at its last step
    code, err, summary = _bench(tmp_path, "--scenario", "azure-conv", "--trace",
                                str(_one_request(tmp_path, 40, 89)), "--num-blocks", "8",
                                "--warmup-steps", "0")
    assert code == 0, err
    case = summary["cases"][0]
    assert (case["num_rejected"], case["num_requests"]) == (0, 2)
    (tmp_path / "refused").mkdir()
    code, err, summary = _bench(tmp_path / "refused", "--scenario", "azure-conv", "--trace",
                                str(_one_request(tmp_path, 40, 90)), "--num-blocks", "8",
                                "--warmup-steps", "0")
    assert (code, summary) == (2, None)
    assert err == [
        "bench.py: error: 1 of 2 requests served would stop every case mid-run when it "
        "outgrows the KV cache: the longest (a prompt of 40 tokens, 90 output tokens) needs "
        "9 KV blocks (16 tokens each) for the 129 tokens of its last step, more than the "
        "cache's 8, which preempting every other request does not free: raise --num-blocks "
        "to 9 or more, or lower --max-model-len to 129 or less"]


def test_the_scheduler_stops_where_the_check_refuses(tmp_path):
    """Without the check the scheduler itself gets past 128 tokens at 40 + 90 alone."""
    cfg = SchedulerConfig(max_num_batched_tokens=2048, num_blocks=8)
    for output, need in ((89, None), (90, 9)):
        loaded = load_azure_trace(_one_request(tmp_path, 40, output))
        over = cache_overflow(loaded, np.ones(2, bool), cfg)
        assert (over and over.blocks) == need
        arrivals = np.zeros(2, np.int64)
        if need is None:
            assert replay_steps(loaded, arrivals, cfg, 1000) == 89
            continue
        with pytest.raises(SchedulerError) as err:
            replay_steps(loaded, arrivals, cfg, 1000)
        assert str(err.value) == ("request 0 needs 9 KV blocks for 129 tokens at step 89 "
                                  "and the cache has only 8 (block_size 16); raise num_blocks")


def test_a_request_cut_at_max_model_len_needs_max_model_len_less_one(tmp_path):
    trace = _one_request(tmp_path, 40, 1000)
    code, err, summary = _bench(tmp_path, "--scenario", "azure-code", "--trace", str(trace),
                                "--num-blocks", "8", "--max-model-len", "129",
                                "--warmup-steps", "0")
    assert code == 0, err
    case = summary["cases"][0]
    assert (case["output_tokens"], case["num_cut_at_max_model_len"]) == (89 + 9, 1)
    code, err, _ = _bench(tmp_path, "--scenario", "azure-code", "--trace", str(trace),
                          "--num-blocks", "8", "--max-model-len", "200")
    assert err == [
        "bench.py: error: 1 of 2 requests served would stop every case mid-run when it "
        "outgrows the KV cache: the longest (a prompt of 40 tokens, 1,000 output tokens; cut "
        "at max_model_len 200) needs 13 KV blocks (16 tokens each) for the 199 tokens of its "
        "last step, more than the cache's 8, which preempting every other request does not "
        "free: raise --num-blocks to 13 or more, or lower --max-model-len to 129 or less"]


def test_lookahead_slots_count_as_the_scheduler_allocates_them(tmp_path):
    """Lookahead 2 with no drafts proposed: 40 + 87 computes 126 tokens, 128 slots; with
    2 drafts it could hold 130."""
    cfg = SchedulerConfig(max_num_batched_tokens=2048, num_blocks=8, num_spec_tokens=2,
                          num_lookahead_tokens=2)
    for output, fits, slots in ((87, True, [128, 130]), (88, False, [129, 131])):
        loaded = load_azure_trace(_one_request(tmp_path, 40, output))
        fewest, most = last_step_slots(loaded, np.array([True, False]), cfg)
        assert fewest.tolist() + most.tolist() == slots
        sched = Scheduler(SchedulerConfig(max_num_batched_tokens=2048, num_blocks=8,
                                          num_spec_tokens=2, num_lookahead_tokens=2), CACHED)
        sched.add_request("0", 0, [0] * 40, output)
        try:
            while sched.has_unfinished_requests():
                plan = sched.schedule()
                sched.update_from_output(plan, _NoDrafts(plan))
        except SchedulerError as e:
            assert not fits and str(e).startswith("request 0 needs 9 KV blocks for 129 tokens")
        else:
            assert fits
    over = cache_overflow(loaded, np.array([True, False]), cfg)
    assert (over.count, over.total, over.tokens, over.blocks, over.drafts) == (
        1, 1, 131, 9, False)
    assert overflow_problem(over, cfg) == (
        "the only request served would stop every case mid-run when it outgrows the KV "
        "cache: the longest (a prompt of 40 tokens, 88 output tokens; 2 lookahead slots) "
        "needs 9 KV blocks (16 tokens each) for the 129 tokens of its last step (131 with "
        "the 2 drafts it can schedule there), more than the cache's 8, which preempting every other request does not free: raise "
        "--num-blocks to 9 or more, or lower --max-model-len to 128 or less")


class _NoDrafts:
    """A ``ModelRunnerOutput`` with one sampled id per finished prefill and no drafts."""

    def __init__(self, plan) -> None:
        reqs = plan.scheduled_reqs
        self.req_id_to_index = {r.req_id: i for i, r in enumerate(reqs)}
        self.sampled_token_ids = [[0] if r.num_computed_tokens >= len(r.all_token_ids)
                                  else [] for r in reqs]
        self.spec_token_ids = None


def _drafts_run(tmp_path, name, trace, *extra):
    """``_bench`` of ``trace`` in 8 blocks with 3 drafts, in its own folder ``name``."""
    out = tmp_path / name
    out.mkdir()
    return _bench(out, "--scenario", "azure-conv", "--trace", str(trace), "--num-blocks", "8",
                  "--num-spec-tokens", "3", "--warmup-steps", "0", *extra)


def test_drafts_that_may_pass_the_cache_are_warned_about(tmp_path, monkeypatch):
    """40 + 87 fits alone (126 tokens at its last step); with 3 drafts it can hold 129,
    a slot past the cache's 128. Whether it gets there depends on the drafts accepted:
    at --spec-acceptance 0.7 and 1, sync or async, it runs through; at 0 every draft is
    rejected, the request takes one token a step and its last step schedules all 3:
    refused where it is the only request, as the run without the check stops there."""
    one = _csv(tmp_path, [("18:15:46.0000000", 40, 87)], "one.csv")
    cfg = SchedulerConfig(max_num_batched_tokens=2048, num_blocks=8, num_spec_tokens=3)
    over = cache_overflow(load_azure_trace(one), np.ones(1, bool), cfg)
    assert (over.count, over.sure, over.total, over.fewest, over.tokens, over.blocks,
            over.need, over.drafts) == (1, 0, 1, 126, 129, 9, 9, True)
    warning = (
        "bench.py: warning: the only request served can stop a case mid-run if its last step "
        "schedules all 3 drafts, as the drafts accepted before it decide: the longest (a "
        "prompt of 40 tokens, 87 output tokens) then needs 9 KV blocks (16 tokens each) for "
        "the 129 tokens of its last step, more than the cache's 8 (without drafts 8 for 126 "
        "tokens), which preempting every other request does not free: raise --num-blocks to "
        "9 or more, or lower --max-model-len to 129 or less")
    for name, extra in (("a07", ()), ("a1", ("--spec-acceptance", "1")),
                        ("async", ("--async-scheduling",)),
                        ("a1-async", ("--spec-acceptance", "1", "--async-scheduling"))):
        code, err, summary = _drafts_run(tmp_path, name, one, *extra)
        assert (code, err) == (0, [warning])
        assert summary["cases"][0]["output_tokens"] == 87
    code, err, summary = _drafts_run(tmp_path, "a0", one, "--spec-acceptance", "0")
    assert (code, summary) == (2, None)
    assert err == [
        "bench.py: error: the only request served would stop every case mid-run when it "
        "outgrows the KV cache: the longest (a prompt of 40 tokens, 87 output tokens; all 3 "
        "drafts scheduled at its last step, as --spec-acceptance 0 rejects every draft) needs "
        "9 KV blocks (16 tokens each) for the 129 tokens of its last step, more than the "
        "cache's 8, which preempting every other request does not free: raise --num-blocks "
        "to 9 or more, or lower --max-model-len to 129 or less"]
    assert overflow_warning(over, cfg, 0.0) is None
    monkeypatch.setattr(trace_checks, "overflow_problem",
                        lambda over, cfg, acceptance, rej=None: None)
    for name, extra in (("a0-sync", ()), ("a0-async", ("--async-scheduling",))):
        code, err, _ = _drafts_run(tmp_path, name, one, "--spec-acceptance", "0", *extra)
        assert code == 1
        assert "needs 9 KV blocks for 129 tokens" in err[-1], err


def test_drafts_that_may_pass_the_cache_can_stop_the_run(tmp_path):
    """40 + 89 with a later 7-token request: warned (a second request, so not certain
    even at --spec-acceptance 0), and at 0.7 the run stops at its last step, sync at
    130 tokens and async at 131."""
    trace = _one_request(tmp_path, 40, 89)
    for extra, tokens in (((), 130), (("--async-scheduling",), 131)):
        code, err, _ = _drafts_run(tmp_path, f"run{tokens}", trace, *extra)
        assert code == 1
        assert err[0] == (
            "bench.py: warning: 1 of 2 requests served can stop a case mid-run if its last "
            "step schedules all 3 drafts, as the drafts accepted before it decide: the "
            "longest (a prompt of 40 tokens, 89 output tokens) then needs 9 KV blocks (16 "
            "tokens each) for the 131 tokens of its last step, more than the cache's 8 "
            "(without drafts 8 for 128 tokens), which preempting every other request does not "
            "free: raise --num-blocks to 9 or more, or lower --max-model-len to 129 or less")
        assert f"needs 9 KV blocks for {tokens} tokens" in err[-1], err
    code, err, _ = _drafts_run(tmp_path, "a0", trace, "--spec-acceptance", "0")
    assert code == 1 and err[0].startswith("bench.py: warning: 1 of 2 requests served can")


def test_a_request_of_one_output_token_schedules_no_draft(tmp_path):
    """Its last step is its prefill: 126 + 1 in 8 blocks holds 126 slots with 3 drafts;
    127 + 2 can hold 131 (stop 129, less one, and 3 drafts)."""
    cfg = SchedulerConfig(max_num_batched_tokens=2048, num_blocks=8, num_spec_tokens=3)
    trace = load_azure_trace(_csv(tmp_path, [("18:15:46.0000000", 126, 1),
                                             ("18:15:47.0000000", 127, 2)]))
    fewest, most = last_step_slots(trace, np.ones(2, bool), cfg)
    assert (fewest.tolist(), most.tolist()) == ([126, 128], [126, 131])
    # a budget of 3 tokens schedules 2 drafts at most
    fewest, most = last_step_slots(trace, np.ones(2, bool),
                                   SchedulerConfig(max_num_batched_tokens=3, num_blocks=8,
                                                   num_spec_tokens=3, max_model_len=2048))
    assert most.tolist() == [126, 130]


def test_a_request_past_the_cache_with_its_drafts_too_names_both(tmp_path):
    cfg = SchedulerConfig(max_num_batched_tokens=2048, num_blocks=8, num_spec_tokens=3)
    trace = load_azure_trace(_one_request(tmp_path, 40, 90))
    over = cache_overflow(trace, np.ones(2, bool), cfg)
    assert (over.count, over.sure, over.fewest, over.tokens, over.need) == (1, 1, 129, 132, 9)
    assert overflow_warning(over, cfg, 0.7) is None
    assert overflow_problem(over, cfg, 0.7) == (
        "1 of 2 requests served would stop every case mid-run when it outgrows the KV cache: "
        "the longest (a prompt of 40 tokens, 90 output tokens) needs 9 KV blocks (16 tokens "
        "each) for the 129 tokens of its last step (132 with the 3 drafts it can schedule "
        "there), more than the cache's 8, which preempting every other request does not "
        "free: raise --num-blocks to 9 or more, or lower --max-model-len to 129 or less")


def test_one_change_of_num_blocks_serves_a_request_rejected_behind_the_overflow(tmp_path):
    # a 40-token prompt (90 output) rejected in 2 blocks and a 30-token one (10 output)
    # that outgrows them: the refusal named --num-blocks 3 for the second, and 3 then
    # met the first's refusal (9); it names 9, which serves both
    rows = [("18:15:46.0000000", 40, 90), ("18:15:46.0100000", 30, 10)]
    trace = _csv(tmp_path, rows)
    code, err, _ = _bench(tmp_path, "--scenario", "azure-conv", "--trace", str(trace),
                          "--warmup-steps", "0", "--num-blocks", "2")
    assert (code, err) == (2, [
        "bench.py: error: the only request served would stop every case mid-run when it "
        "outgrows the KV cache: the longest (a prompt of 30 tokens, 10 output tokens) "
        "needs 3 KV blocks (16 tokens each) for the 39 tokens of its last step, more than "
        "the cache's 2, which preempting every other request does not free: raise "
        "--num-blocks to 9 or more (which serves the request rejected on arrival too), "
        "or lower --max-model-len to 33 or less"])
    code, err, summary = _bench(tmp_path, "--scenario", "azure-conv", "--trace",
                                str(trace), "--warmup-steps", "0", "--num-blocks", "9")
    assert (code, err, summary["cases"][0]["num_rejected"]) == (0, [], 0)


def test_a_prompt_past_every_max_model_len_is_said_to_be_unservable(tmp_path):
    # the advice named --max-model-len 4,000,001, which the option refuses (1,048,576)
    rows = [("18:15:46.0000000", 4_000_000, 5), ("18:15:46.0100000", 30, 10)]
    code, err, summary = _bench(tmp_path, "--scenario", "azure-conv", "--trace",
                                str(_csv(tmp_path, rows)), "--warmup-steps", "0")
    assert code == 0 and summary["cases"][0]["num_rejected"] == 1
    assert err == [
        "bench.py: warning: 1 of 2 requests replayed will be rejected on arrival in every "
        "case (a prompt of max_model_len 16,384 tokens or more, or one needing more KV "
        "blocks than the cache's 131,072 (16 tokens each) for itself and one token; the "
        "longest has 4,000,000 tokens), as vLLM rejects them, and counted in "
        "num_rejected: no --max-model-len "
        "serves the longest (4,000,001 tokens with its first sampled one, 1,048,576 at "
        "most)"]



def test_the_drafts_named_are_those_max_model_len_leaves_room_for(tmp_path):
    # 40 + 89 tokens with 3 drafts under max_model_len 130: its last step computes 128
    # tokens' K/V and has room for one draft (129 = max_model_len - 1), not 3
    trace = _csv(tmp_path, [("18:15:46.0000000", 40, 89)])
    args = ("--scenario", "azure-conv", "--trace", str(trace), "--warmup-steps", "0",
            "--max-model-len", "130", "--num-spec-tokens", "3", "--model", "fixed-step")
    code, err, _ = _bench(tmp_path, *args, "--num-blocks", "7")
    assert code == 2 and err[0].endswith(
        "needs 8 KV blocks (16 tokens each) for the 128 tokens of its last step (129 with "
        "the 1 draft it can schedule there), more than the cache's 7, which preempting "
        "every other request does not free: raise --num-blocks to 9 or more, or lower "
        "--max-model-len to 113 or less")
    code, err, _ = _bench(tmp_path, *args, "--num-blocks", "8", "--spec-acceptance", "0")
    assert code == 2 and "its one draft scheduled at its last step, as --spec-acceptance 0 " \
        "rejects every draft" in err[0]
