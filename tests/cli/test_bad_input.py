"""Bad input: each kind gets exactly one line on stderr naming the problem (and the
row for traces), exit code 2, no traceback, and nothing started.

``main()`` runs in this process (it returns the exit code and restores the signal
handlers), so the whole table costs well under a second; one case goes through a real
``python bench.py`` to check the same holds for the process.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from fault_helpers import REPO, children
from remote_launch import bench_run
from run_notes import without_nice_note
from script_module import load_script
from ipc_bench import cli
from ipc_bench.cli import run as cli_run
from ipc_bench.harness.scenario import discover

DS = ["--scenario", "decode-steady"]
#: CPUs this process may run on (the tp-broadcast refusals name them)
CORES = len(os.sched_getaffinity(0))

#: (argv, the exact error after "bench.py: error: ")
OPTION_CASES = [
    (["--scenario", "nope"],
     "unknown scenario 'nope'; choose from " + ", ".join(discover())),
    ([], "give --scenario NAME (or --list)"),
    (["--list"] + DS, "--list takes no other option (it runs nothing): got --scenario"),
    (DS + ["--steps", "5", "--list"],
     "--list takes no other option (it runs nothing): got --scenario, --steps"),
    (["--frobnicate"], "unrecognized arguments: --frobnicate"),
    # whole names only (argparse would take --codec for --codecs), the closest named
    (DS + ["--num-runing", "4"],
     "unrecognized arguments: --num-runing 4 (did you mean --num-running?)"),
    (DS + ["--codec=msgpack"], "unrecognized arguments: --codec=msgpack (did you mean "
                               "--codecs?)"),
    # a scenario or command word mistyped: the closest named, case aside
    (["--scenario", "decode-stedy"], "unknown scenario 'decode-stedy' (did you mean "
                                     "decode-steady?); choose from " + ", ".join(discover())),
    (["reprot", "results/x"], "unrecognized arguments: reprot results/x (did you mean "
                              "report?)"),
    (["Report", "results/x"], "unrecognized arguments: Report results/x (did you mean "
                              "report?)"),
    (["microbnech", "results/x"], "unrecognized arguments: microbnech results/x (did you "
                                  "mean microbench?)"),
    (["xyz", "--num-runing", "4"], "unrecognized arguments: xyz --num-runing 4 (did you "
                                   "mean --num-running?)"),
    (DS + ["--transport", "udp"],
     "argument --transport: invalid choice: 'udp' (choose from 'ipc', 'tcp', 'shm', 'shm-block')"),
    (DS + ["--policies", "foo"], "argument --policies: 'foo': choose from send, cached"),
    (DS + ["--codecs", "msgpack,json"],
     "argument --codecs: 'json': choose from msgpack, pickle, packed, slots, replicated"),
    (DS + ["--steps", "-5"], "argument --steps: must be at least 1, got -5"),
    (DS + ["--steps", "0"], "argument --steps: must be at least 1, got 0"),
    (DS + ["--steps", "abc"], "argument --steps: expected an integer, got 'abc'"),
    (DS + ["--steps", "99999999999"],
     "argument --steps: must be at most 1,000,000,000, got 99,999,999,999"),
    (DS + ["--warmup-steps", "-1"], "argument --warmup-steps: must be at least 0, got -1"),
    (DS + ["--num-running", "0"], "argument --num-running: must be at least 1, got 0"),
    (DS + ["--num-running", "1,x"], "argument --num-running: expected an integer, got 'x'"),
    # digits 0-9 only, as the trace reader: not Python's other digits or 1_000
    (DS + ["--steps", "١٠"], "argument --steps: expected an integer, got '١٠'"),
    (DS + ["--num-running", "４"], "argument --num-running: expected an integer, got '４'"),
    (DS + ["--steps", "1_000"], "argument --steps: expected an integer, got '1_000'"),
    (DS + ["--peer-timeout", "1_0"], "argument --peer-timeout: expected a number, got '1_0'"),
    (DS + ["--seed", "-1"], "argument --seed: must be at least 0, got -1"),
    (DS + ["--seed", str(2**63)], "argument --seed: must be at most "
     "9,223,372,036,854,775,807, got 9,223,372,036,854,775,808"),
    (DS + ["--order-seed", "-1"], "argument --order-seed: must be at least 0, got -1"),
    (DS + ["--order-seed", str(2**63)], "argument --order-seed: must be at most "
     "9,223,372,036,854,775,807, got 9,223,372,036,854,775,808"),
    (DS + ["--order-seed", "1_0"], "argument --order-seed: expected an integer, got '1_0'"),
    (DS + ["--peer-timeout", "0"],
     "argument --peer-timeout: must be at least 0.1 (the waits check for a reply and the "
     "peer in 0.1 s slices, so a shorter timeout cannot be honoured), got 0"),
    (DS + ["--startup-timeout", "0.001"],
     "argument --startup-timeout: must be at least 0.1 (the waits check for the runner in "
     "0.1 s slices, so a shorter timeout cannot be honoured), got 0.001"),
    (DS + ["--peer-timeout", "nan"],
     "argument --peer-timeout: must be a finite number, got nan"),
    (DS + ["--peer-timeout", "inf"],
     "argument --peer-timeout: must be a finite number, got inf"),
    (DS + ["--peer-timeout", "1e9"], "argument --peer-timeout: must be at most 86400, got 1e9"),
    (DS + ["--startup-timeout", "86401"],
     "argument --startup-timeout: must be at most 86400, got 86401"),
    (DS + ["--peer-timeout", "0.001"],
     "argument --peer-timeout: must be at least 0.1 (the waits check for a reply and the "
     "peer in 0.1 s slices, so a shorter timeout cannot be honoured), got 0.001"),
    (DS + ["--trace-speedup", "-2"],
     "argument --trace-speedup: must be a positive number, got -2"),
    (DS + ["--logical-step-ms", "0"],
     "argument --logical-step-ms: must be at least 0.001 (1 us: the step numbers of a "
     "trace spanning the 10,000 years its timestamps can cover must fit in 64 bits), got 0"),
    (["--scenario", "azure-conv", "--trace", "x.csv", "--logical-step-ms", "1e-300"],
     "argument --logical-step-ms: must be at least 0.001 (1 us: the step numbers of a "
     "trace spanning the 10,000 years its timestamps can cover must fit in 64 bits), got "
     "1e-300"),
    (DS + ["--repeat", "0"], "argument --repeat: must be at least 1, got 0"),
    (DS + ["--input-oracle-interval", "-1"],
     "argument --input-oracle-interval: must be at least 0, got -1"),
    (["--scenario", "azure-conv", "--max-requests", "0"],
     "argument --max-requests: must be at least 1, got 0"),
    # runners started by hand on other hosts
    (DS + ["--remote-runners"],
     "--remote-runners needs --transport tcp, not ipc: runners on other hosts reach the "
     "scheduler over tcp only (the shared-memory ring and ipc sockets are local)"),
    (DS + ["--transport", "shm", "--remote-runners"],
     "--remote-runners needs --transport tcp, not shm: runners on other hosts reach the "
     "scheduler over tcp only (the shared-memory ring and ipc sockets are local)"),
    (DS + ["--port", "5600"],
     "--port applies to --remote-runners only (the spawned runner's tcp ports are ephemeral)"),
    (DS + ["--transport", "tcp", "--remote-runners", "--port", "0"],
     "argument --port: must be at least 1, got 0"),
    (DS + ["--transport", "tcp", "--remote-runners", "--port", "65534"],
     "--port 65534 with 1 remote runner(s) needs ports 65534 to 65536: the first must be at "
     "least 1, the last at most 65535"),
    (["--scenario", "tp-broadcast", "--transport", "tcp", "--remote-runners",
      "--tp-transports", "shm"],
     "--remote-runners broadcasts to the ranks over tcp (XPUB/SUB): drop --tp-transports"),
    # scheduler limits
    (DS + ["--num-blocks", "0"], "argument --num-blocks: must be at least 1, got 0"),
    (DS + ["--max-model-len", "1"], "argument --max-model-len: must be at least 2, got 1"),
    (DS + ["--num-blocks", "99999999"],
     "argument --num-blocks: must be at most 4,194,304, got 99,999,999"),
    (DS + ["--max-num-seqs", "70000"],
     "argument --max-num-seqs: must be at most 65,536, got 70,000"),
    (DS + ["--block-size", "-16"], "argument --block-size: must be at least 1, got -16"),
    (DS + ["--max-model-len", "8", "--block-size", "16"],
     "max_model_len (8) is smaller than one block (block_size 16)"),
    (DS + ["--block-size", "5000"],
     "max_model_len (4096) is smaller than one block (block_size 5000); max_model_len 4096 "
     "is the scenario's default (--max-model-len sets it)"),
    (DS + ["--num-running", "10000"],
     "max_num_batched_tokens 8192 is smaller than --num-running 10000: not every request "
     "can decode each step; max_num_batched_tokens 8192 is the scenario's default "
     "(--max-num-batched-tokens sets it)"),
    (DS + ["--num-running", "64", "--max-num-seqs", "16"],
     "--num-running 64 is larger than max_num_seqs 16: a steady batch of 64 cannot run"),
    (DS + ["--max-model-len", "100"],
     "max_model_len 100 must exceed the workload's longest prompt (256 tokens)"),
    # a steady batch's KV cache holds all of its requests at the most each reaches in
    # the case (up to max_steps = max(warm-up, prefill) + steps + 2 * (mixed steps +
    # 10), the mixed steps simulated: scenario.steady_max_steps), or it is refused; 256
    # prompt tokens + 1 a step (+ K with drafts), 2,303 at most. 16 requests, 1,000
    # counted steps after 100 warm-up: 1,005 steps in all, 5 mixed
    (DS + ["--num-running", "16", "--num-blocks", "10"],
     "--num-running 16 needs 1,392 KV blocks (16 requests x 87 blocks of 16 tokens: each "
     "reaches up to 1,385 tokens in up to 1,130 steps, warm-up included) and the cache has "
     "10: a steady batch holds every request at once, and one that must preempt runs fewer "
     "requests than asked; give --num-blocks 1,392 or more"),
    (DS + ["--num-running", "256", "--num-blocks", "1000", "--steps", "200", "--codecs",
           "msgpack", "--no-floor"],
     "--num-running 256 needs 9,216 KV blocks (256 requests x 36 blocks of 16 tokens: "
     "each reaches up to 575 tokens in up to 320 steps, warm-up included) and the cache has "
     "1,000: a steady batch holds every request at once, and one that must preempt runs "
     "fewer requests than asked; give --num-blocks 9,216 or more, or --num-running 27 or "
     "fewer"),
    # one block short of the cache test_steady_cache.py runs (80)
    (DS + ["--num-running", "4", "--steps", "30", "--warmup-steps", "5", "--num-blocks",
           "79"],
     "--num-running 4 needs 80 KV blocks (4 requests x 20 blocks of 16 tokens: each "
     "reaches up to 310 tokens in up to 55 steps, warm-up included) and the cache has 79: "
     "a steady batch holds every request at once, and one that must preempt runs fewer "
     "requests than asked; give --num-blocks 80 or more, or --num-running 3 or fewer"),
    # a cache given in blocks of 4 tokens (the default one holds the batch:
    # test_steady_cache.py)
    (DS + ["--num-running", "4", "--block-size", "4", "--num-blocks", "1280"],
     "--num-running 4 needs 1,384 KV blocks (4 requests x 346 blocks of 4 tokens: each "
     "reaches up to 1,381 tokens in up to 1,126 steps, warm-up included) and the cache has "
     "1,280: a steady batch holds every request at once, and one that must preempt runs "
     "fewer requests than asked; give --num-blocks 1,384 or more, or --num-running 3 or "
     "fewer"),
    # one request, in blocks of one token
    (DS + ["--num-running", "1", "--block-size", "1", "--num-blocks", "10"],
     "--num-running 1 needs 1,377 KV blocks (1 request x 1,377 blocks of 1 token: each "
     "reaches up to 1,377 tokens in up to 1,122 steps, warm-up included) and the cache has "
     "10: a steady batch holds every request at once, and one that must preempt runs fewer "
     "requests than asked; give --num-blocks 1,377 or more"),
    # drafts past the last token and the torch drafter's lookahead slots
    (DS + ["--num-running", "4", "--num-blocks", "500", "--num-spec-tokens", "2", "--model",
           "torch", "--model-preset", "tiny", "--device", "cpu"],
     "--num-running 4 needs 580 KV blocks (4 requests x 145 blocks of 16 tokens: each "
     "reaches up to 2,307 KV slots (2 drafts a step, 2 lookahead slots) in up to 1,130 "
     "steps, warm-up included) and the cache has 500: a steady batch holds every request "
     "at once, and one that must preempt runs fewer requests than asked; give --num-blocks "
     "580 or more, or --num-running 3 or fewer"),
    (DS + ["--num-running", "16", "--max-num-batched-tokens", "8"],
     "max_num_batched_tokens 8 is smaller than --num-running 16: not every request can "
     "decode each step"),
    # a steady batch that would count its steps in more than 10 steps each past the
    # warm-up and the first prefill (scenario.check_steady_steps), from a simulation
    # of its schedule: at 8,192 requests the decodes take the whole 8,192-token budget,
    # the replacements' prompts get none, and no step is pure decode; a budget that
    # leaves room for them lets the case count its steps (was "lower --num-running to
    # 4,096 or less ..., or give fewer --steps")
    (DS + ["--num-running", "8192", "--steps", "20"],
     "--max-num-batched-tokens 8192 leaves 0 tokens a step past the decodes of "
     "--num-running 8192 for the prompts of the requests that replace those that finish "
     "(32 to 256 tokens each), so no step of the 200 simulated past the first prompts' "
     "prefill is pure decode: 20 counted steps would need more steps in all than the cap "
     "of 861 (the warm-up or the first prompts' prefill, whichever ends later: 661 steps, "
     "then 10 steps per counted step); raise --max-num-batched-tokens to 8,450 or more "
     "(about 520 steps in all at 8,450)"),
    # a budget equal to B, a few steps asked: no fewer --steps would pass (was "...;
    # lower --num-running to 1,000 or less ..., or give fewer --steps")
    (DS + ["--num-running", "2000", "--steps", "30", "--warmup-steps", "5",
           "--max-num-batched-tokens", "2000", "--codecs", "msgpack", "--no-single-process"],
     "--max-num-batched-tokens 2000 leaves 0 tokens a step past the decodes of "
     "--num-running 2000 for the prompts of the requests that replace those that finish "
     "(32 to 256 tokens each), so no step of the 300 simulated past the first prompts' "
     "prefill is pure decode: 30 counted steps would need more steps in all than the cap "
     "of 967 (the warm-up or the first prompts' prefill, whichever ends later: 667 steps, "
     "then 10 steps per counted step); raise --max-num-batched-tokens to 2,100 or more "
     "(about 470 steps in all at 2,100)"),
    # drafts whose decodes alone overrun the budget (was "leaves -256 tokens a step")
    (DS + ["--num-running", "256", "--num-spec-tokens", "32", "--num-blocks", "1000"],
     "the decodes of --num-running 256 take 8,448 tokens a step (33 each: 1 + 32 "
     "drafts), more than --max-num-batched-tokens 8192 (each step leaves some of them to "
     "a later one), so "
     "about 0.1 % of steps are pure decode: 1,000 counted steps would need about 690,000 "
     "steps in all, more than the cap of 10,176 (the warm-up or the first prompts' "
     "prefill, whichever ends later: 176 steps, then 10 steps per counted step); raise "
     "--max-num-batched-tokens to 8,500 or more (about 5,900 steps in all at 8,500), or "
     "give --steps 31 or fewer"),
    # finishes, not the budget: fewer requests, or fewer steps (the first 511 steps
    # past the first prefill see no finish)
    (DS + ["--num-running", "4096", "--steps", "1000"],
     "--num-running 4096: about 3.2 requests finish a step (outputs average 1,280 tokens) "
     "and the step after each prefills its replacement, so about 4.7 % of steps are pure "
     "decode: 1,000 counted steps would need about 12,000 steps in all, more than the cap "
     "of 10,101 (the warm-up or the first prompts' prefill, whichever ends later: 101 "
     "steps, then 10 steps per counted step); lower --num-running to 2048 or less (about "
     "3,100 steps in all at 2,048), or give --steps 500 or fewer"),
    # more running requests than the simulation draws (MAX_SIMULATED_REQUESTS) are
    # refused as --num-running is parsed (tests/cli/test_num_running_limit.py); 20,000
    # runs
    # the draws run out before the first prefill ends: no cap to tell (was "no step of
    # the 0 simulated past the first prompts' prefill is pure decode ... the cap of 305
    # (the warm-up or the first prompts' prefill, whichever ends later: 5 steps, ...)")
    (DS + ["--num-running", "19900", "--max-num-batched-tokens", "19900", "--steps", "30",
           "--warmup-steps", "5", "--codecs", "msgpack", "--no-single-process"],
     "--max-num-batched-tokens 19900 leaves 0 tokens a step past the decodes of "
     "--num-running 19900 for the prompts of the requests that replace those that finish "
     "(32 to 256 tokens each), so the first prompts' prefill had not ended after the 562 "
     "steps simulated (the simulation draws at most 20,000 requests, replacements "
     "included): none of 30 counted steps came in them (at most 10 steps per counted step "
     "past the warm-up and that prefill); raise --max-num-batched-tokens to 20,450 or "
     "more (about 630 steps in all at 20,450)"),
    (["--scenario", "azure-conv", "--trace", "x.csv", "--max-num-seqs", "0"],
     "argument --max-num-seqs: must be at least 1, got 0"),
    # async scheduling: cached only, no bare loops
    (DS + ["--async-scheduling", "--policies", "send"],
     "--async-scheduling runs the cached policy only (under send the ids sampled at step n "
     "are unknown when step n+1 is scheduled): use --policies cached"),
    (["--scenario", "tp-broadcast", "--tp", "2", "--async-scheduling"],
     "scenario tp-broadcast broadcasts to --tp runner ranks, which run synchronously "
     "only: drop --async-scheduling"),
    (["--scenario", "pp", "--pp", "1", "--async-scheduling"],
     "scenario pp keeps --pp micro-batches in flight with its own batch queue: drop "
     "--async-scheduling"),
    # pipeline stages
    (["--scenario", "pp", "--pp", "3"],
     "argument --pp: each value must be one of 1, 2, 4, got 3"),
    (["--scenario", "pp", "--pp", "2,x"], "argument --pp: expected an integer, got 'x'"),
    (["--scenario", "pp", "--pp", "2", "--num-running", "1"],
     "--num-running 1 is not a multiple of --pp 2: the scheduler splits the batch into 2 "
     "micro-batches of B / 2 requests, and with a remainder some steps schedule nothing, "
     "count against the cap on the steps in all and leave fewer counted steps than --steps"),
    (["--scenario", "pp", "--pp", "2,4", "--num-running", "8,6"],
     "--num-running 6 is not a multiple of --pp 4: the scheduler splits the batch into 4 "
     "micro-batches of B / 4 requests, and with a remainder some steps schedule nothing, "
     "count against the cap on the steps in all and leave fewer counted steps than --steps"),
    (["--scenario", "overhead", "--aa"],
     "scenario overhead compares per-step recording on and off (arms steps and totals), not "
     "a policy against itself: drop --aa"),
    (["--scenario", "overhead", "--order-seed", "3"],
     "scenario overhead alternates its arms (steps, totals) from one repetition to the "
     "next, in no random order: drop --order-seed 3"),
    (DS + ["--order-seed", "3"],  # one repetition: the order given, nothing drawn
     "--order-seed draws the arms' order of each repetition, and one repetition keeps the "
     "order given (--policies): give --repeat 2 or more, or drop --order-seed 3"),
    (DS + ["--order-seed", "3", "--repeat", "1"],
     "--order-seed draws the arms' order of each repetition, and one repetition keeps the "
     "order given (--policies): give --repeat 2 or more, or drop --order-seed 3"),
    (DS + ["--order-seed", "3", "--repeat", "2", "--policies", "send"],
     "--order-seed draws the order of the arms of each repetition, and this run has one "
     "arm per workload and codec (send): nothing to order; drop --order-seed 3"),
    # one arm and one repetition: the arm's line, not advice to give --repeat 2 first
    (DS + ["--order-seed", "3", "--policies", "send"],
     "--order-seed draws the order of the arms of each repetition, and this run has one "
     "arm per workload and codec (send): nothing to order; drop --order-seed 3"),
    # overhead's own refusal first, not the advice to give --repeat 2 it would then refuse
    (["--scenario", "overhead", "--repeat", "1", "--order-seed", "3"],
     "scenario overhead alternates its arms (steps, totals) from one repetition to the "
     "next, in no random order: drop --order-seed 3"),
    (["--scenario", "overhead", "--repeat", "1"],
     "--repeat 1: scenario overhead gives steps/totals a paired interval, which needs 2 or "
     "more repetitions (default 8)"),
    (["--scenario", "pp", "--model", "emulated"],
     "scenario pp runs the null, fixed-step, torch models; --model emulated is not split "
     "by layers here"),
    (["--scenario", "pp", "--model", "torch", "--cuda-graphs"],
     "--pp runs each stage's share of the torch model's layers eagerly: drop --cuda-graphs"),
    (DS + ["--async-scheduling", "--policies", "cached", "--codecs", "replicated"],
     "--codecs replicated runs synchronously only (the runner's replica applies step n's "
     "output before it schedules n+1): drop --async-scheduling"),
    # --tp ranks run slots and replicated (each keeps its own table or replica), and
    # synchronously only, whatever the codec
    (["--scenario", "tp-broadcast", "--tp", "2", "--codecs", "replicated",
      "--async-scheduling"],
     "scenario tp-broadcast broadcasts to --tp runner ranks, which run synchronously "
     "only: drop --async-scheduling"),
    (DS + ["--num-spec-tokens", "2", "--codecs", "slots"],
     "--codecs slots does not carry draft tokens (scheduled_spec_decode_tokens): use "
     "--codecs msgpack,pickle,packed with --num-spec-tokens"),
    (["--scenario", "pp", "--pp", "1", "--codecs", "replicated"],
     "--codecs replicated does not run with --pp stages: use --codecs msgpack,pickle,packed"),
    (["--scenario", "overhead", "--async-scheduling"],
     "scenario overhead measures the bare loop, which has no async-scheduling form: drop "
     "--async-scheduling"),
    # speculative decoding: K and P in range, models that verify drafts, sync loops only
    (DS + ["--num-spec-tokens", "-1"], "argument --num-spec-tokens: must be at least 0, got -1"),
    (DS + ["--num-spec-tokens", "33"], "argument --num-spec-tokens: must be at most 32, got 33"),
    (DS + ["--num-spec-tokens", "2,x"],
     "argument --num-spec-tokens: expected an integer, got 'x'"),
    (DS + ["--num-spec-tokens", "2", "--spec-acceptance", "1.5"],
     "argument --spec-acceptance: must be in [0, 1], got 1.5"),
    (DS + ["--num-spec-tokens", "2", "--spec-acceptance", "-0.1"],
     "argument --spec-acceptance: must be in [0, 1], got -0.1"),
    (DS + ["--num-spec-tokens", "2", "--spec-acceptance", "nan"],
     "argument --spec-acceptance: must be a finite number, got nan"),
    (DS + ["--spec-acceptance", "0.5"],
     "--spec-acceptance applies to speculative decoding: give --num-spec-tokens K with K "
     "above 0"),
    (DS + ["--num-spec-tokens", "0", "--spec-acceptance", "0.5"],
     "--spec-acceptance applies to speculative decoding: give --num-spec-tokens K with K "
     "above 0"),
    (["--scenario", "overhead", "--num-spec-tokens", "2"],
     "scenario overhead measures the bare loop, which has no speculative decoding: drop "
     "--num-spec-tokens"),
    (["--scenario", "tp-broadcast", "--tp", "2", "--num-spec-tokens", "2", "--codecs",
      "replicated"],
     "--codecs replicated does not carry draft tokens (scheduled_spec_decode_tokens): use "
     "--codecs msgpack,pickle,packed with --num-spec-tokens"),
    (["--scenario", "tp-broadcast", "--tp", "2", "--frontend"],
     "scenario tp-broadcast broadcasts to --tp runner ranks, whose cases do not run a "
     "frontend: drop --frontend"),
    (["--scenario", "pp", "--pp", "1", "--num-spec-tokens", "2"],
     "scenario pp runs --pp pipeline stages without speculative decoding: vLLM does not "
     "run speculative decoding with pipeline parallelism at the commits mirrored here (its "
     "docs: \"not composable ... as of vllm<=0.15.0\"; added later by PR #50514): drop "
     "--num-spec-tokens"),
    (["--scenario", "pp", "--pp", "1", "--frontend"],
     "scenario pp runs --pp pipeline stages, whose cases do not run a frontend: drop "
     "--frontend"),
    # stages started by hand: 2 control ports, 2 data ports and the stages' store port
    (["--scenario", "pp", "--pp", "2", "--transport", "tcp", "--remote-runners", "--port",
      "65532"],
     "--port 65532 with 2 remote runner(s) needs ports 65532 to 65536: the first must be at "
     "least 1, the last at most 65535"),
    (["--scenario", "pp", "--pp", "1", "--transport", "tcp"],
     "scenario pp broadcasts each SchedulerOutput to its stages over ipc and passes hidden "
     "states over gloo: drop --transport tcp"),
    (["--scenario", "tp-broadcast", "--tp", "2", "--transport", "shm"],
     "scenario tp-broadcast broadcasts each SchedulerOutput to its ranks over each transport "
     f"of --tp-transports (default ipc and shm-block, and shm for --tp N where N + 1 cores "
     f"are available: {CORES} here): drop --transport shm (--tp-transports "
     "shm runs that broadcast alone)"),
    (["--scenario", "tp-broadcast", "--transport", "shm-block", "--tp-transports", "ipc"],
     "scenario tp-broadcast broadcasts each SchedulerOutput to its ranks over each transport "
     f"of --tp-transports (default ipc and shm-block, and shm for --tp N where N + 1 cores "
     f"are available: {CORES} here): drop --transport shm-block "
     "(--tp-transports shm-block runs that broadcast alone)"),
    (["--scenario", "tp-broadcast", "--tp", "2", "--transport", "tcp"],
     "scenario tp-broadcast broadcasts each SchedulerOutput to its ranks over each transport "
     f"of --tp-transports (default ipc and shm-block, and shm for --tp N where N + 1 cores "
     f"are available: {CORES} here), over tcp only to ranks started by "
     "hand (--remote-runners): drop --transport tcp"),
    (["--scenario", "pp", "--model", "torch", "--model-preset", "tiny", "--pp", "1,4"],
     "--pp 4: the tiny preset has 2 layers, fewer than the stages (each stage holds at "
     "least one)"),
    (["--scenario", "overhead", "--frontend"],
     "scenario overhead measures the bare loop, which sends nothing to a frontend: drop "
     "--frontend"),
    (DS + ["--frontend=yes"], "argument --frontend: ignored explicit argument 'yes'"),
    # transport and security
    (DS + ["--host", "0.0.0.0"], "--host applies to --transport tcp only"),
    (DS + ["--allow-pickle-over-tcp"], "--allow-pickle-over-tcp applies to --transport tcp only"),
    (DS + ["--transport", "shm", "--allow-pickle-over-tcp"],
     "--allow-pickle-over-tcp applies to --transport tcp only"),
    (DS + ["--transport", "tcp", "--host", "scheduler.local"],
     "argument --host: --host must be an IP address such as 127.0.0.1 or ::1 (or localhost), "
     "got 'scheduler.local'"),
    (DS + ["--transport", "tcp", "--codecs", "pickle"],
     "refusing to decode pickle from a TCP peer (--codecs pickle is pickled): pickle runs code "
     "on load and any local user "
     "can connect to a TCP port; use --codecs msgpack or --transport ipc, or pass "
     "--allow-pickle-over-tcp if every host that can reach the port is trusted"),
    (DS + ["--transport", "tcp", "--codecs", "msgpack,packed"],
     "refusing to decode pickle from a TCP peer (--codecs packed is pickled): pickle runs code "
     "on load and any local user can connect to a TCP port; use --codecs msgpack or "
     "--transport ipc, or pass --allow-pickle-over-tcp if every host that can reach the port "
     "is trusted"),
    (DS + ["--transport", "tcp", "--codecs", "packed,msgpack,pickle"],
     "refusing to decode pickle from a TCP peer (--codecs packed, pickle are pickled): pickle "
     "runs code on load and any local user can connect to a TCP port; use --codecs msgpack or "
     "--transport ipc, or pass --allow-pickle-over-tcp if every host that can reach the port "
     "is trusted"),
    # scenarios that need a trace
    (["--scenario", "azure-conv"],
     "scenario azure-conv needs --trace PATH (the AzureLLMInferenceTrace_conv.csv file)"),
    (["--scenario", "soak"],
     "scenario soak needs --trace PATH (the AzureLLMInferenceTrace_conv.csv file)"),
    # options a scenario does not take (its OPTIONS), empty paths
    (DS + ["--trace", "x.csv"], "scenario decode-steady does not take --trace (the trace of a "
     "replay)"),
    (["--scenario", "azure-conv", "--num-running", "4"],
     "scenario azure-conv does not take --num-running (the size of a steady batch)"),
    (["--scenario", "azure-conv", "--trace", "x.csv", "--trace-speedup", "2"],
     "scenario azure-conv does not take --trace-speedup (the speed of a replay on the wall "
     "clock)"),
    (["--scenario", "azure-code-timed", "--trace", "x.csv", "--logical-step-ms", "5"],
     "scenario azure-code-timed does not take --logical-step-ms (the step of a replay on the "
     "logical clock)"),
    (["--scenario", "step-time", "--max-requests", "5"],
     "scenario step-time does not take --max-requests (how much of a trace is replayed)"),
    (["--scenario", "soak", "--trace", "x.csv", "--model", "torch"],
     "scenario soak does not take --model (the runner's model)"),
    (["--scenario", "soak", "--trace", "x.csv", "--req-id-format", "numeric"],
     "scenario soak does not take --req-id-format (the request ids of a generated workload)"),
    (DS + ["--output", ""], "argument --output: expected the path of a folder, got ''"),
    # every list option refuses a value given twice, as --cuda-graph-sizes does
    (DS + ["--num-running", "4,16,4"], "argument --num-running: 4 given more than once"),
    (["--scenario", "tp-broadcast", "--tp", "2,2"], "argument --tp: 2 given more than once"),
    (["--scenario", "pp", "--pp", "1,2,2,1"], "argument --pp: 1, 2 given more than once"),
    (DS + ["--codecs", "packed,packed"], "argument --codecs: packed given more than once"),
    (DS + ["--policies", "cached,send,cached"],
     "argument --policies: cached given more than once"),
    (DS + ["--num-spec-tokens", "2,2"], "argument --num-spec-tokens: 2 given more than once"),
    (["--scenario", "step-time", "--step-time-ms", "5,2.5,5.0"],
     "argument --step-time-ms: 5 given more than once"),
    (["--scenario", "tp-broadcast", "--tp-transports", "shm,shm"],
     "argument --tp-transports: shm given more than once"),
    # an option given twice is refused, not its last value kept
    (DS + ["--num-running", "1", "--num-running", "4"],
     "--num-running given twice (1, then 4): give it once"),
    (DS + ["--codecs", "msgpack", "--transport", "tcp", "--codecs", "pickle"],
     "--codecs given twice (msgpack, then pickle): give it once"),
    (DS + ["--num-running", "4", "--num-running=4"],  # the same value
     "--num-running given twice (4, then 4): give it once"),
    (DS + ["--quiet", "--quiet"], "--quiet given twice: give it once"),
    (DS + ["--roofline", "--roofline", "off"],
     "--roofline given twice (on, then off): give it once"),
    # --cuda-graph-sizes: whole numbers, each once; only where the attention pads
    (DS + ["--cuda-graph-sizes", "1,2,2,4,4"],
     "argument --cuda-graph-sizes: 2, 4 given more than once"),
    (DS + ["--cuda-graph-sizes", "1,,2"],
     "argument --cuda-graph-sizes: expected comma-separated whole numbers, got '1,,2' "
     "(an item is empty)"),
    (DS + ["--cuda-graph-sizes", "1,2,"],
     "argument --cuda-graph-sizes: expected comma-separated whole numbers, got '1,2,' "
     "(an item is empty)"),
    (DS + ["--cuda-graph-sizes", "+2"], "argument --cuda-graph-sizes: expected whole numbers, "
                                        "got '+2'"),
    (DS + ["--cuda-graph-sizes", "1_6"], "argument --cuda-graph-sizes: expected whole "
                                         "numbers, got '1_6'"),
    (DS + ["--cuda-graph-sizes", "0,4"], "argument --cuda-graph-sizes: must be at least 1, "
                                         "got 0"),
    (DS + ["--model", "torch", "--model-preset", "tiny", "--device", "cpu", "--num-running",
           "4", "--cuda-graph-sizes", "4"],
     "--cuda-graph-sizes sets the decode batch buckets of the flex and varlen attention "
     "(padding, compiles, CUDA graphs); this run's is gather (--attention auto on cpu), "
     "which does not pad, so the sizes would go unused: leave them out or use --attention "
     "flex or varlen"),
    (DS + ["--model", "torch", "--model-preset", "tiny", "--device", "cpu", "--num-running",
           "4", "--attention", "gather", "--cuda-graphs", "--cuda-graph-sizes", "1,4"],
     "--cuda-graph-sizes sets the decode batch buckets of the flex and varlen attention "
     "(padding, compiles, CUDA graphs); this run's is gather, which does not pad, so the "
     "sizes would go unused: leave them out or use --attention flex or varlen"),
    (DS + ["--cuda-graph-sizes", "4"],
     "model null does not take --cuda-graph-sizes (the torch model's decode batch buckets)"),
    # every list option refuses an empty item, rather than dropping it
    (DS + ["--num-running", "1,,2"],
     "argument --num-running: expected comma-separated integers, got '1,,2' (an item is "
     "empty)"),
    (DS + ["--num-running", "1,"],
     "argument --num-running: expected comma-separated integers, got '1,' (an item is empty)"),
    (DS + ["--num-running", ",1"],
     "argument --num-running: expected comma-separated integers, got ',1' (an item is empty)"),
    (DS + ["--num-running", ","],
     "argument --num-running: expected comma-separated integers, got ',' (an item is empty)"),
    (DS + ["--num-running", "1, ,2"],
     "argument --num-running: expected comma-separated integers, got '1, ,2' (an item is "
     "empty)"),
    (DS + ["--policies", "send,"],
     "argument --policies: expected comma-separated names, got 'send,' (an item is empty)"),
    (DS + ["--policies", ""],
     "argument --policies: expected comma-separated names, got '' (an item is empty)"),
    (DS + ["--codecs", "msgpack,,pickle"],
     "argument --codecs: expected comma-separated names, got 'msgpack,,pickle' (an item is "
     "empty)"),
    (DS + ["--num-spec-tokens", "2,"],
     "argument --num-spec-tokens: expected comma-separated integers, got '2,' (an item is "
     "empty)"),
    (["--scenario", "step-time", "--step-time-ms", "2,,5"],
     "argument --step-time-ms: expected comma-separated numbers, got '2,,5' (an item is "
     "empty)"),
    (["--scenario", "tp-broadcast", "--tp", ",2"],
     "argument --tp: expected comma-separated integers, got ',2' (an item is empty)"),
    (["--scenario", "tp-broadcast", "--tp-transports", "ipc,"],
     "argument --tp-transports: expected comma-separated names, got 'ipc,' (an item is "
     "empty)"),
    (["--scenario", "pp", "--pp", "1,,2"],
     "argument --pp: expected comma-separated integers, got '1,,2' (an item is empty)"),
    (["--scenario", "azure-conv", "--trace", " "],
     "argument --trace: expected the path of a file, got ' '"),
]


def _run_main(argv, capsys) -> tuple[int, list[str], str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, without_nice_note(err.splitlines()), out  # nice's note: the suite's


@pytest.mark.parametrize("argv,message", OPTION_CASES,
                         ids=[" ".join(a) or "no-args" for a, _ in OPTION_CASES])
def test_bad_option_is_one_line_and_exit_2(argv, message, capsys):
    code, lines, out = _run_main(argv, capsys)
    assert (code, lines, out) == (2, [f"bench.py: error: {message}"], "")


def test_the_command_words_named_after_a_typo_are_the_commands():
    from ipc_bench.cli.once import COMMAND_WORDS

    assert sorted(COMMAND_WORDS) == sorted(cli.COMMANDS) == ["microbench", "report", "runner"]


HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens"
ROW = "2023-11-16 18:15:46.6805900,374,44"

#: name -> (file bytes, the error after "bench.py: error: {path}")
TRACE_CASES = {
    "empty": (b"", f" line 1: empty file; expected header '{HEADER}'"),
    "header-only": (f"{HEADER}\r\n".encode(), " line 2: no data rows after the header"),
    "missing-column": (b"TIMESTAMP,ContextTokens\n2023-11-16 18:15:46.6805900,374\n",
                       f" line 1: bad header: expected '{HEADER}', found "
                       "'TIMESTAMP,ContextTokens' (missing GeneratedTokens)"),
    "no-header": (f"{ROW}\n".encode(),
                  f" line 1: header missing: expected '{HEADER}', found a data row '{ROW}'"),
    "non-numeric": (f"{HEADER}\n2023-11-16 18:15:46.6805900,abc,44\n".encode(),
                    " line 2: ContextTokens is not a positive integer (digits only): 'abc'"),
    "negative": (f"{HEADER}\n{ROW}\n2023-11-16 18:15:47.0,374,-4\n".encode(),
                 " line 3: GeneratedTokens is not a positive integer (digits only): '-4'"),
    "negative-prompt": (f"{HEADER}\n2023-11-16 18:15:47.0,-5,4\n".encode(),
                        " line 2: ContextTokens is not a positive integer (digits only): '-5'"),
    "zero": (f"{HEADER}\n2023-11-16 18:15:47.0,0,4\n".encode(),
             " line 2: ContextTokens is 0; a request needs at least one prompt token"),
    "float": (f"{HEADER}\n2023-11-16 18:15:47.0,12.5,4\n".encode(),
              " line 2: ContextTokens is not a positive integer (digits only): '12.5'"),
    "unsorted": (f"{HEADER}\n2023-11-16 18:15:47.0000000,374,44\n"
                 "2023-11-16 18:15:46.0000000,10,4\n".encode(),
                 " line 3: timestamps are unsorted: TIMESTAMP '2023-11-16 18:15:46.0000000' is "
                 "earlier than '2023-11-16 18:15:47.0000000' on line 2"),
    "bad-timestamp": (f"{HEADER}\n2023-13-16 18:15:47.0,1,4\n".encode(),
                      " line 2: TIMESTAMP is not a valid date and time: '2023-13-16 "
                      "18:15:47.0' (month must be in 1..12)"),
    "huge-row": (f"{HEADER}\n2023-11-16 18:15:46.6805900,{'9' * 5000},4\n".encode(),
                 " line 2: huge row: line is longer than 1024 bytes"),
    "huge-field": (f"{HEADER}\n2023-11-16 18:15:46.6805900,{'9' * 100},4\n".encode(),
                   " line 2: huge row: ContextTokens is 100 characters long (limit 64): "
                   f"'{'9' * 40}'... (100 characters)"),
    "extra-field": (f"{HEADER}\n{ROW},7\n".encode(),
                    f" line 2: expected 3 fields ({HEADER}), found 4: '{ROW},7'"),
    "blank-line": (f"{HEADER}\n{ROW}\n\n{ROW}\n".encode(),
                   " line 3: blank line; expected a data row"),
    "binary": (f"{HEADER}\n".encode() + b"\xff\xfe,1,2\n",
               " line 2: not UTF-8 text (byte 1 of the line)"),
}


@pytest.mark.parametrize("kind", list(TRACE_CASES))
def test_bad_trace_is_one_line_naming_the_row_and_exit_2(kind, tmp_path, capsys):
    data, message = TRACE_CASES[kind]
    path = tmp_path / f"{kind}.csv"
    path.write_bytes(data)
    code, lines, out = _run_main(["--scenario", "azure-conv", "--trace", str(path),
                                  "--output", str(tmp_path / "run")], capsys)
    assert (code, lines, out) == (2, [f"bench.py: error: {path}{message}"], "")
    assert not (tmp_path / "run").exists()  # refused before anything was written


@pytest.mark.parametrize("kind,argv,message", [
    ("missing", ["--trace", "{tmp}/nope.csv"], "no such trace file: {tmp}/nope.csv"),
    ("directory", ["--trace", "{tmp}"], "{tmp}: is a directory, not a trace file"),
    ("output-not-empty", ["--output", "{tmp}"], "output folder {tmp} exists and is not empty "
     "(it holds f); give --output a new or empty folder"),
    ("output-is-a-file", ["--output", "{tmp}/f"], "output path {tmp}/f exists and is not a folder"),
    ("output-under-a-file", ["--output", "{tmp}/f/sub"],
     "cannot write results to {tmp}/f/sub: {tmp}/f is not a folder"),
    ("output-where-no-folder-can-be", ["--output", "/proc/ipc-bench-test/run"],
     "cannot write results to /proc/ipc-bench-test/run: No such file or directory"),
    ("output-name-too-long", ["--output", "{tmp}/" + "w" * 300],
     "cannot write results to {tmp}/" + "w" * 300 + ": File name too long"),
    ("output-under-a-name-too-long", ["--output", "{tmp}/" + "w" * 300 + "/sub"],
     "cannot write results to {tmp}/" + "w" * 300 + "/sub: File name too long"),
    ("output-under-a-file-deeper", ["--output", "{tmp}/f/sub/run"],
     "cannot write results to {tmp}/f/sub/run: {tmp}/f is not a folder"),
])
def test_bad_paths(kind, argv, message, tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    scenario = ["--scenario", "azure-conv"] if "--trace" in argv else DS
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code, lines, out = _run_main(scenario + argv, capsys)
    assert (code, lines, out) == (2, [f"bench.py: error: {message.replace('{tmp}', str(tmp_path))}"],
                                  "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]  # nothing left behind


def test_an_output_that_holds_a_run_says_so(tmp_path, capsys):
    """A killed run's folder given again: its status and the way out."""
    killed = tmp_path / "killed"
    killed.mkdir()
    (killed / "summary.json").write_text('{"status": "incomplete", "cases": []}')
    code, lines, out = _run_main(DS + ["--output", str(killed)], capsys)
    assert (code, lines, out) == (2, [
        f"bench.py: error: output folder {killed} exists and is not empty: it holds a run "
        "(summary.json, status incomplete); give another --output, or remove that run "
        "first"], "")
    (killed / "summary.json").write_text("{cut")  # a summary cut short: no status
    code, lines, out = _run_main(DS + ["--output", str(killed)], capsys)
    assert lines == [f"bench.py: error: output folder {killed} exists and is not empty: it "
                     "holds a run (summary.json); give another --output, or remove that "
                     "run first"]
    import fcntl  # a run still going holds its claim: never "remove that run"

    with open(killed / ".claimed", "wb") as claim:
        fcntl.flock(claim, fcntl.LOCK_EX)
        code, lines, out = _run_main(DS + ["--output", str(killed)], capsys)
    assert lines == [f"bench.py: error: output folder {killed} exists and is not empty: it "
                     "holds a run still going (summary.json); give another --output"]


def test_an_output_that_is_a_dangling_symbolic_link_is_refused_as_one(tmp_path, capsys):
    (tmp_path / "link").symlink_to(tmp_path / "nonexistent_target")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    run = DS + ["--num-running", "1", "--output"]
    for output, message in [
            ("link", "output folder {tmp}/link is a symbolic link to "
                     "{tmp}/nonexistent_target, which does not exist"),
            ("link/sub", "cannot write results to {tmp}/link/sub: {tmp}/link is a symbolic "
                         "link to {tmp}/nonexistent_target, which does not exist"),
            ("loop", "output folder {tmp}/loop is a symbolic link to {tmp}/loop, which "
                     "cannot be followed (Too many levels of symbolic links)"),
            ("loop/a/b", "cannot write results to {tmp}/loop/a/b: {tmp}/loop is a symbolic "
                         "link to {tmp}/loop, which cannot be followed (Too many levels of "
                         "symbolic links)")]:
        code, lines, out = _run_main(run + [f"{tmp_path}/{output}"], capsys)
        assert (code, lines, out) == (
            2, [f"bench.py: error: {message.replace('{tmp}', str(tmp_path))}"], "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "loop"]  # nothing created


def test_an_output_folder_that_cannot_be_listed_is_refused_in_one_line(tmp_path, monkeypatch,
                                                                        capsys):
    # root reads any folder: the refusal of a folder without read permission is simulated
    run = tmp_path / "run"
    run.mkdir()
    listing = Path.iterdir

    def refused(self):
        if self == run:
            raise PermissionError(13, "Permission denied", str(self))
        return listing(self)

    monkeypatch.setattr(Path, "iterdir", refused)
    code, lines, out = _run_main(DS + ["--num-running", "1", "--output", str(run)], capsys)
    assert (code, lines, out) == (
        2, [f"bench.py: error: cannot write results to {run}: Permission denied"], "")
    assert [p.name for p in tmp_path.iterdir()] == ["run"] and not any(listing(run))


def test_an_output_folder_on_a_read_only_mount_is_bad_input(tmp_path, monkeypatch, capsys):
    """A folder that cannot be made before any case runs is exit 2, as docs/usage.md
    says (1 is for a write failing once cases ran); nothing is left."""
    run = tmp_path / "ro" / "run"
    mkdir = Path.mkdir

    def read_only(self, *args, **kwargs):
        if self == run:
            raise OSError(30, "Read-only file system", str(self))
        return mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", read_only)
    code, lines, out = _run_main(DS + ["--num-running", "1", "--output", str(run)], capsys)
    assert (code, lines, out) == (
        2, [f"bench.py: error: cannot write results to {run}: Read-only file system"], "")
    assert list(tmp_path.iterdir()) == []


def test_an_output_that_links_to_a_folder_is_written_through_the_link(tmp_path):
    from argparse import Namespace

    from ipc_bench.cli.execute import claim_run_dir

    (tmp_path / "target").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "target")
    run_dir, created = claim_run_dir(Namespace(output=str(tmp_path / "link"), scenario="x"))
    assert (run_dir, created) == (tmp_path / "link", None)
    assert [p.name for p in (tmp_path / "target").iterdir()] == [".claimed"]


def test_a_failed_start_removes_the_folders_it_created(tmp_path, monkeypatch, capsys):
    from ipc_bench.cli import execute
    from ipc_bench.harness.run_folder import RunFolderError

    class FullDisk(execute.RunWriter):
        def __init__(self, run_dir, metadata):
            raise RunFolderError(run_dir, OSError(28, "No space left on device"))

    monkeypatch.setattr(execute, "RunWriter", FullDisk)
    run = tmp_path / "new" / "parents" / "run"
    code, lines, out = _run_main(DS + ["--num-running", "1", "--output", str(run)], capsys)
    assert (code, lines, out) == (
        2, [f"bench.py: error: cannot write results to {run}: No space left on device"], "")
    assert list(tmp_path.iterdir()) == []


def test_runner_buffers_larger_than_memory_are_refused(monkeypatch, capsys):
    # 256 x (4096 tokens + 256 block-table entries) x 4 bytes = 4.25 MiB > 50 % of 1 MiB
    monkeypatch.setattr(cli_run, "available_memory_bytes", lambda: 2**20)
    code, lines, out = _run_main(DS + ["--num-running", "256"], capsys)
    assert (code, lines, out) == (2, ["bench.py: error: max_num_seqs 256 x max_model_len 4096 "
                                      "needs 4 MiB of runner buffers, more than 50% of the 1 "
                                      "MiB available"], "")


def test_the_shortest_logical_step_numbers_the_longest_trace_in_64_bits(tmp_path):
    """At ``--logical-step-ms 0.001`` a trace spanning every year its timestamps can
    name has exact step numbers, and a step too short for a trace is refused, never
    cast with a numpy warning (warnings are errors here)."""
    import warnings

    from ipc_bench.cli.options import MIN_LOGICAL_STEP_MS
    from ipc_bench.engine.traces import load_azure_trace
    from ipc_bench.engine.workloads import TraceWorkload

    path = tmp_path / "t.csv"
    path.write_text(f"{HEADER}\n0001-01-01 00:00:00,5,1\n9999-12-31 23:59:59.9999999,5,1\n")
    trace = load_azure_trace(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w = TraceWorkload(trace, name="t", seed=0, vocab_size=100,
                          logical_step_s=MIN_LOGICAL_STEP_MS / 1e3)
        assert list(w.arrival_steps) == [0, 315_537_897_600_000_000]  # float64-rounded
        with pytest.raises(ValueError, match=r"past the largest step number \(2\*\*63 - 1\)"):
            TraceWorkload(trace, name="t", seed=0, vocab_size=100, logical_step_s=1e-300)


def test_line_endings_lf_cr_and_crlf_are_all_accepted(tmp_path):
    from ipc_bench.engine.traces import load_azure_trace

    rows = [HEADER, ROW, "2023-11-16 18:15:47.6805900,30,4"]
    for name, sep in (("lf", "\n"), ("cr", "\r"), ("crlf", "\r\n")):
        path = tmp_path / f"{name}.csv"
        path.write_text(sep.join(rows) + sep, newline="")
        trace = load_azure_trace(path)
        assert list(trace.prompt_lens) == [374, 30] and list(trace.output_lens) == [44, 4]


def _replay_at_max_model_len_64(tmp_path, capsys, rows: list[str]) -> tuple[list[str], Path]:
    """Replay a trace of ``rows`` with azure-conv at max_model_len 64 (64 blocks):
    (stdout's lines, the run folder); asserts exit 0."""
    path = tmp_path / "t.csv"
    path.write_text("\r\n".join([HEADER] + rows), newline="")
    run = tmp_path / "run"
    code = cli.main(["--scenario", "azure-conv", "--trace", str(path), "--max-model-len", "64",
                     "--num-blocks", "64", "--warmup-steps", "0", "--codecs", "msgpack",
                     "--output", str(run), "--quiet"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out.splitlines(), run


def test_requests_that_can_never_fit_are_rejected_and_counted(tmp_path, capsys):
    # max_model_len 64: the 374-token prompt can never run (admission rule: rejected on
    # arrival, counted); the 30- and 20-token prompts run.
    lines, run = _replay_at_max_model_len_64(tmp_path, capsys, [
        ROW, "2023-11-16 18:15:46.7805900,30,4", "2023-11-16 18:15:46.8805900,20,5"])
    assert ("  rejected on arrival: 1 of 3 requests could never fit (prompt >= max_model_len, "
            "or more KV blocks than the cache has)") in lines
    summary = json.loads((run / "summary.json").read_text())
    assert [c["num_rejected"] for c in summary["cases"]] == [1, 1]
    requests = pd.read_csv(run / "requests.csv")
    assert list(requests.sort_values(["case_id", "index"]).finish_reason) == [
        "rejected", "length", "length"] * 2


def test_outputs_cut_at_max_model_len_are_counted(tmp_path, capsys):
    # max_model_len 64: the 30-token prompt asks 40 tokens and is cut after 34 (30 + 34
    # = 64); the 20-token prompt's 5 fit.
    lines, run = _replay_at_max_model_len_64(tmp_path, capsys, [
        "2023-11-16 18:15:46.7805900,30,40", "2023-11-16 18:15:46.8805900,20,5"])
    assert ("  cut at max_model_len: 1 of 2 requests stopped before their output length "
            "(prompt + output > max_model_len; --max-model-len sets it)") in lines
    summary = json.loads((run / "summary.json").read_text())
    assert [c["num_cut_at_max_model_len"] for c in summary["cases"]] == [1, 1]
    requests = pd.read_csv(run / "requests.csv").sort_values(["case_id", "index"])
    assert list(requests.num_output_tokens) == [34, 5] * 2
    assert list(requests.max_tokens) == [40, 5] * 2


def test_bench_process_bad_input_has_no_traceback():
    proc = bench_run(["--scenario", "decode-steady", "--num-running", "64", "--max-num-seqs",
                      "16"])
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", "bench.py: error: --num-running 64 is larger than max_num_seqs 16: a steady "
               "batch of 64 cannot run\n")
    assert children(os.getpid()) == []


def test_every_scenario_refuses_the_options_it_does_not_take(capsys):
    from ipc_bench.harness.scenario import SCENARIO_OPTIONS, options_taken

    values = {"num_running": "2", "steps": "5", "trace": "x.csv", "max_requests": "5",
              "logical_step_ms": "5", "trace_speedup": "2", "model": "torch",
              "step_time_ms": "3", "step_wait": "spin", "model_preset": "tiny",
              "torch_threads": "2", "device": "cpu", "roofline": "on", "vocab_size": "1000",
              "req_id_format": "numeric", "attention": "flex", "cuda_graphs": None,
              "cuda_graph_sizes": "1,2", "tp": "2", "tp_transports": "ipc", "pp": "2",
              "token_ids": "zipf"}  # None: a flag
    assert set(values) == set(SCENARIO_OPTIONS)
    refused = {}
    for name, module in discover().items():
        for field in sorted(set(SCENARIO_OPTIONS) - options_taken(module)):
            option = "--" + field.replace("_", "-")
            value = [] if values[field] is None else [values[field]]
            code, lines, out = _run_main(["--scenario", name, option, *value], capsys)
            assert (code, lines, out) == (2, [f"bench.py: error: scenario {name} does not take "
                                              f"{option} ({SCENARIO_OPTIONS[field]})"], "")
            refused.setdefault(name, []).append(option)
    logical = ["--logical-step-ms"]
    tp = ["--tp", "--tp-transports"]
    assert refused == {
        "azure-code": ["--num-running", "--pp", "--steps", "--tp", "--tp-transports",
                       "--trace-speedup"],
        "azure-conv": ["--num-running", "--pp", "--steps", "--tp", "--tp-transports",
                       "--trace-speedup"],
        "azure-code-timed": logical + ["--num-running", "--pp", "--steps"] + tp,
        "azure-conv-timed": logical + ["--num-running", "--pp", "--steps"] + tp,
        "decode-steady": logical + ["--max-requests", "--pp"] + tp
        + ["--trace", "--trace-speedup"],
        "overhead": logical + ["--max-requests", "--pp"] + tp + ["--trace", "--trace-speedup"],
        "step-time": logical + ["--max-requests", "--pp"] + tp + ["--trace", "--trace-speedup"],
        "tp-broadcast": logical + ["--max-requests", "--pp", "--trace", "--trace-speedup"],
        "pp": logical + ["--max-requests"] + tp + ["--trace", "--trace-speedup"],
        "soak": ["--attention", "--cuda-graph-sizes", "--cuda-graphs", "--device",
                 "--logical-step-ms", "--model", "--model-preset",
                 "--num-running", "--pp", "--req-id-format", "--roofline", "--step-time-ms",
                 "--step-wait", "--steps", "--token-ids",
                 "--torch-threads", "--tp", "--tp-transports", "--vocab-size"],
    }


@pytest.mark.parametrize("scenario", ["azure-conv-timed", "soak"])
def test_a_trace_speedup_that_would_replay_for_days_is_refused(scenario, tmp_path, capsys):
    path = tmp_path / "t.csv"  # two requests 100 s apart
    path.write_text(f"{HEADER}\n{ROW}\n2023-11-16 18:17:26.6805900,30,4\n")
    argv = ["--scenario", scenario, "--trace", str(path), "--output", str(tmp_path / "run")]
    if scenario == "azure-conv-timed":  # one case, as soak's: one replay
        argv += ["--policies", "cached", "--codecs", "msgpack"]
    code, lines, out = _run_main(argv + ["--trace-speedup", "1e-9"], capsys)
    assert (code, lines, out) == (2, [
        "bench.py: error: --trace-speedup 1e-09 would make the replay of 2 requests last "
        "100,000,000,000 s; at most 86,400 s (24 h): --trace-speedup 0.0012 or more "
        "fits"], "")
    code, lines, out = _run_main(argv + ["--trace-speedup", "0.001"], capsys)
    assert lines == ["bench.py: error: --trace-speedup 0.001 would make the replay of 2 "
                     "requests last 100,000 s; at most 86,400 s (24 h): --trace-speedup 0.0012 or "
                     "more fits"]
    code, lines, out = _run_main(argv + ["--trace-speedup", "1e-300"], capsys)
    assert lines == ["bench.py: error: --trace-speedup 1e-300 would make the replay of 2 "
                     "requests last 1e+302 s; at most 86,400 s (24 h): --trace-speedup 0.0012 or "
                     "more fits"]
    # past the largest float, a subnormal speedup: no "inf", no 9.99989e-321
    code, lines, out = _run_main(argv + ["--trace-speedup", "1e-320"], capsys)
    assert lines == ["bench.py: error: --trace-speedup 1e-320 would make the replay of 2 "
                     "requests last more than 1.8e+308 s; at most 86,400 s (24 h): --trace-speedup "
                     "0.0012 or more fits"]
    assert not (tmp_path / "run").exists()


def test_a_default_trace_speedup_that_would_replay_for_days_says_it_is_the_default(
        tmp_path, capsys):
    """Without --trace-speedup, the line names the speedup as the default (10), which
    the user never gave."""
    path = tmp_path / "t.csv"  # two requests 11 days apart
    path.write_text(f"{HEADER}\n{ROW}\n2023-11-27 18:15:46.6805900,30,4\n")
    code, lines, out = _run_main(["--scenario", "azure-conv-timed", "--trace", str(path),
                                  "--output", str(tmp_path / "run")], capsys)
    assert (code, lines, out) == (2, [
        "bench.py: error: the default --trace-speedup 10 would make the 4 replays of 2 "
        "requests last 380,160 s in all (95,040 s each); at most 86,400 s (24 h): "
        "--trace-speedup 44 or more fits"], "")


#: Three requests over 4.5 s of trace time.
SHORT_TRACE = f"{HEADER}\n{ROW}\n2023-11-16 18:15:48.6805900,30,4\n2023-11-16 18:15:51.1805900,30,4\n"


@pytest.mark.parametrize("extra,message,fits", [
    ([], "the 4 replays of 3 requests last 180,000 s in all (45,000 s each)", "0.00021"),
    (["--policies", "cached", "--codecs", "msgpack", "--repeat", "2"],
     "the 2 replays of 3 requests last 90,000 s in all (45,000 s each)", "0.00011"),
], ids=["4-cases", "2-repetitions"])
def test_the_replay_cap_is_the_whole_runs_not_each_replays(extra, message, fits, tmp_path,
                                                           capsys):
    """At 0.0001x each replay of 4.5 s of trace lasts 45,000 s, under the 24 h cap;
    the run's 4 cases (2 policies x 2 codecs), or 2 repetitions of one, are over it."""
    path = tmp_path / "t.csv"
    path.write_text(SHORT_TRACE)
    code, lines, out = _run_main(["--scenario", "azure-conv-timed", "--trace", str(path),
                                  "--trace-speedup", "0.0001", "--output",
                                  str(tmp_path / "run")] + extra, capsys)
    assert (code, lines, out) == (2, [
        f"bench.py: error: --trace-speedup 0.0001 would make {message}; at most 86,400 s "
        f"(24 h): --trace-speedup {fits} or more fits"], "")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("speedup,note", [
    ("0.0004", "note: the timed replays will take about 12 h 30 min (4 cases of 3 requests "
               "at 0.0004x)"),
    ("0.1", "note: the timed replays will take about 3 min 0 s (4 cases of 3 requests at "
            "0.1x)"),
    ("0.3", None),  # 60 s in all: no note
])
def test_a_timed_replay_over_a_minute_says_how_long_in_the_runs_first_lines(
        speedup, note, tmp_path, capsys, monkeypatch):
    from ipc_bench.cli import execute

    monkeypatch.setattr(execute._Run, "case", lambda self, i, case: 1)  # stop at once
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # no load note
    path = tmp_path / "t.csv"
    path.write_text(SHORT_TRACE)
    run = tmp_path / "run"
    code, lines, out = _run_main(["--scenario", "azure-conv-timed", "--trace", str(path),
                                  "--trace-speedup", speedup, "--output", str(run)], capsys)
    assert (code, lines, out) == (
        1, [f"ipc-bench: azure-conv-timed, 4 cases -> {run}"] + ([note] if note else []), "")


@pytest.mark.parametrize("share,loaded", [(0.5, True), (0.49, False)])
def test_a_run_started_on_a_loaded_machine_says_so_in_its_first_lines(
        share, loaded, tmp_path, capsys, monkeypatch):
    from ipc_bench.cli import execute

    monkeypatch.setattr(execute._Run, "case", lambda self, i, case: 1)  # stop at once
    cpus = os.cpu_count()
    load = share * cpus  # at or above half the CPUs: loaded
    monkeypatch.setattr(os, "getloadavg", lambda: (load, 1.0, 1.0))
    run = tmp_path / "run"
    code, lines, out = _run_main(["--scenario", "decode-steady", "--num-running", "4",
                                  "--output", str(run)], capsys)
    note = (f"note: the machine is loaded as this run starts (1-minute load average "
            f"{load:.1f} on {cpus} CPUs): times and tokens/s will be noisy; bytes are "
            "exact whatever the load")
    assert (code, lines, out) == (
        1, [f"ipc-bench: decode-steady, 6 cases -> {run}"] + ([note] if loaded else []), "")
    # --quiet prints no note: line
    code, lines, out = _run_main(["--scenario", "decode-steady", "--num-running", "4",
                                  "--output", str(tmp_path / "quiet"), "--quiet"], capsys)
    assert (code, lines) == (1, [])


def test_replay_duration_limit_is_inclusive():
    from ipc_bench.engine.config import ConfigError
    from ipc_bench.harness.scenario import MAX_REPLAY_S, check_replay_duration

    check_replay_duration(MAX_REPLAY_S, 1.0, 10)
    with pytest.raises(ConfigError):
        check_replay_duration(MAX_REPLAY_S * 1.001, 1.0, 10)


# ------------------------------------------------------------------ broken scenario modules

BROKEN = {
    "bad_syntax.py": '"""Broken."""\nNAME = "bad-syntax"\ndef cases(opts:\n',
    "needs_missing.py": '"""Imports what is not there."""\nimport no_such_module_xyz\n',
    "twin_a.py": '"""Twin A."""\nNAME = "twin"\ndef cases(opts):\n    return []\n',
    "twin_b.py": '"""Twin B."""\nNAME = "twin"\ndef cases(opts):\n    return []\n',
    # a required part missing: named by NAME, else by the file (as is one whose NAME a
    # usable module has)
    "bad_nocases.py": '"""No cases."""\nNAME = "bad-nocases"\n',
    "bare.py": "x = 1\n",
    "no_doc.py": 'NAME = "no-doc"\ndef cases(opts):\n    return []\n',
    "no_name.py": '"""No NAME."""\nNAME = ""\ndef cases(opts):\n    return []\n',
    "shadow.py": '"""Shadows decode-steady."""\nNAME = "decode-steady"\ncases = None\n',
}
#: The names the broken modules are left out under, in --list's order.
BROKEN_NAMES = ("bad-syntax", "needs-missing", "twin", "bad-nocases", "bare", "no-doc",
                "no-name", "shadow")


@pytest.fixture
def broken_scenarios(tmp_path, monkeypatch):
    """A user's scenarios folder with broken modules, searched after the shipped ones."""
    from ipc_bench.harness.scenario import PACKAGE, scenarios_package

    user = tmp_path / "scenarios"
    user.mkdir()
    for name, source in BROKEN.items():
        (user / name).write_text(source)
    package = scenarios_package()
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(user)])
    yield user
    for name in BROKEN:
        sys.modules.pop(f"{PACKAGE}.{name[:-3]}", None)


def _broken_lines(user) -> list[str]:
    return [
        f"bench.py: warning: scenario bad-syntax is left out: {user}/bad_syntax.py cannot be "
        "imported: SyntaxError: '(' was never closed (bad_syntax.py, line 3)",
        f"bench.py: warning: scenario needs-missing is left out: {user}/needs_missing.py "
        "cannot be imported: ModuleNotFoundError: No module named 'no_such_module_xyz'",
        f"bench.py: warning: scenario twin is left out: {user}/twin_a.py and "
        f"{user}/twin_b.py both declare NAME 'twin'",
        f"bench.py: warning: scenario bad-nocases is left out: {user}/bad_nocases.py "
        "declares no cases(opts) function",
        f"bench.py: warning: scenario bare is left out: {user}/bare.py declares no NAME "
        "(the --scenario value, a non-empty str), has no docstring (its first line is the "
        "--list summary) and declares no cases(opts) function",
        f"bench.py: warning: scenario no-doc is left out: {user}/no_doc.py has no "
        "docstring (its first line is the --list summary)",
        f"bench.py: warning: scenario no-name is left out: {user}/no_name.py declares "
        "NAME '', not a non-empty str (the --scenario value)",
        f"bench.py: warning: scenario shadow is left out: {user}/shadow.py declares no "
        "cases(opts) function",
    ]


def test_list_names_the_broken_scenario_modules_and_lists_the_others(broken_scenarios, capsys):
    code, lines, out = _run_main(["--list"], capsys)
    assert (code, lines) == (0, _broken_lines(broken_scenarios))
    assert [line.split()[0] for line in out.splitlines()] == sorted(discover())
    assert "decode-steady" in discover() and "twin" not in discover()
    assert not {"bad-nocases", "no-doc", ""} & set(discover())
    assert discover()["decode-steady"].__file__.endswith("scenarios/decode_steady.py")


def test_a_broken_scenario_is_refused_in_one_line(broken_scenarios, capsys):
    for name, line in zip(BROKEN_NAMES, _broken_lines(broken_scenarios), strict=True):
        code, lines, out = _run_main(["--scenario", name], capsys)
        reason = line.split(" is left out: ", 1)[1]
        assert (code, lines, out) == (
            2, [f"bench.py: error: scenario {name} cannot be used: {reason}"], "")
    code, lines, _ = _run_main(["--scenario", "nope"], capsys)
    assert lines == ["bench.py: error: unknown scenario 'nope'; choose from "
                     f"{', '.join(discover())} ({', '.join(BROKEN_NAMES)} left out: "
                     "see --list)"]
    # the other scenarios still work: this error comes after the scenario was found
    code, lines, _ = _run_main(DS + ["--trace", "x.csv"], capsys)
    assert lines == ["bench.py: error: scenario decode-steady does not take --trace (the "
                     "trace of a replay)"]


def test_a_scenario_whose_cases_raise_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    """An exception raised while a scenario module builds its cases is reported as a
    module that cannot be imported is: one line naming the file and the exception,
    exit 2, no traceback; the scenario's own refusals (ConfigError) pass through. So
    is a result that is not a list of CaseSpec: one line naming the file and what it
    returned, and an exception a steady case's make_workload raises when it is called
    before the run: one line naming the file, the case and the exception."""
    from ipc_bench.harness.scenario import PACKAGE, scenarios_package

    user = tmp_path / "scenarios"
    user.mkdir()
    modules = {
        "raises_in_cases": ("raises-in-cases", "raise RuntimeError('kaput\\nsecond line')"),
        "raises_bare": ("raises-bare", "raise KeyError"),
        "refuses": ("refuses", "raise ConfigError('scenario refuses needs a flag')"),
        "returns_items": ("returns-items", "return [1, 'x']"),
        "returns_none": ("returns-none", "return None"),
        "returns_text": ("returns-text", "return 'x' * 100"),
        # a steady case's make_workload is called before the run, to size its cap
        "workload_raises": ("workload-raises", "from dataclasses import replace\n"
                            "    from ipc_bench.harness.scenario import steady_cases\n"
                            "    def boom():\n        raise RuntimeError('no workload')\n"
                            "    return [replace(c, make_workload=boom)\n"
                            "            for c in steady_cases(opts, NAME, [2])]"),
    }
    for module, (name, body) in modules.items():
        (user / f"{module}.py").write_text(
            f'"""Builds no cases."""\nfrom ipc_bench.engine.config import ConfigError\n'
            f'NAME = "{name}"\ndef cases(opts):\n    {body}\n')
    package = scenarios_package()
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(user)])
    try:
        for name, message in [
                ("raises-in-cases", f"scenario raises-in-cases cannot be used: "
                 f"{user}/raises_in_cases.py cases() raised RuntimeError: kaput\\nsecond line"),
                ("raises-bare", f"scenario raises-bare cannot be used: {user}/raises_bare.py "
                 "cases() raised KeyError"),
                ("refuses", "scenario refuses needs a flag"),
                ("returns-items", f"scenario returns-items cannot be used: "
                 f"{user}/returns_items.py cases() returned [1, 'x'] (item 0 is an int, "
                 "not a CaseSpec)"),
                ("returns-none", f"scenario returns-none cannot be used: "
                 f"{user}/returns_none.py cases() returned None (a NoneType, not a list "
                 "of CaseSpec)"),
                ("returns-text", f"scenario returns-text cannot be used: "
                 f"{user}/returns_text.py cases() returned '{'x' * 27}...{'x' * 28}' (a "
                 "str, not a list of CaseSpec)"),
                ("workload-raises", f"scenario workload-raises cannot be used: "
                 f"{user}/workload_raises.py case num_running=2/send/msgpack#0: "
                 "make_workload() raised RuntimeError: no workload")]:
            code, lines, out = _run_main(["--scenario", name], capsys)
            assert (code, lines, out) == (2, [f"bench.py: error: {message}"], "")
    finally:
        for module in modules:
            sys.modules.pop(f"{PACKAGE}.{module}", None)


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
def test_a_wildcard_host_is_warned_about(host, capsys):
    # pickle over tcp is then refused, so nothing binds: the warning comes first
    code, err, _ = _run_main(["--scenario", "decode-steady", "--transport", "tcp", "--host",
                              host, "--codecs", "pickle"], capsys)
    assert code == 2
    assert err[0] == (f"bench.py: warning: --host {host} binds every interface of this "
                      "machine: the case's sockets can be reached from the network")


EXPECTED_TCP = ("argument --connect: expected tcp://ADDR:PORT (the scheduler's address and "
                "control port; IPv6 in brackets)")
#: (--connect value, the exact error after "bench.py runner: error: ")
CONNECT_CASES = [
    ("scheduler:5600", f"{EXPECTED_TCP}, got 'scheduler:5600'"),
    ("ipc:///tmp/x", f"{EXPECTED_TCP}, got 'ipc:///tmp/x'"),
    ("tcp://sched.example:5600", "argument --connect: tcp://sched.example:5600: "
     "'sched.example' is not an IP address"),
    ("tcp://127.0.0.1", f"{EXPECTED_TCP}, got 'tcp://127.0.0.1'"),
    ("tcp://127.0.0.1:0", "argument --connect: tcp://127.0.0.1:0: the port must be 1 to 65535"),
    ("tcp://127.0.0.1:70000",
     "argument --connect: tcp://127.0.0.1:70000: the port must be 1 to 65535"),
    ("tcp://::1:5600", f"{EXPECTED_TCP}, got 'tcp://::1:5600'"),
    ("tcp://[127.0.0.1]:5600", "argument --connect: tcp://[127.0.0.1]:5600: an IPv6 address "
     "goes in brackets, an IPv4 one does not"),
    ("tcp://0.0.0.0:5600", "argument --connect: tcp://0.0.0.0:5600: 0.0.0.0 is not an "
     "address to connect to; give the scheduler's address"),
    ("tcp://[::]:5600", "argument --connect: tcp://[::]:5600: :: is not an address to "
     "connect to; give the scheduler's address"),
    ("tcp://224.0.0.1:5600", "argument --connect: tcp://224.0.0.1:5600: 224.0.0.1 is not an "
     "address to connect to; give the scheduler's address"),
]


@pytest.mark.parametrize("value,message", CONNECT_CASES, ids=[v for v, _ in CONNECT_CASES])
def test_a_bad_connect_address_is_one_line_and_exit_2(value, message, capsys):
    code, lines, out = _run_main(["runner", "--connect", value], capsys)
    assert (code, lines, out) == (2, [f"bench.py runner: error: {message}"], "")


def test_a_runner_without_connect_or_with_nobody_listening_is_one_line_and_exit_2(capsys):
    code, lines, out = _run_main(["runner"], capsys)
    assert (code, lines, out) == (
        2, ["bench.py runner: error: the following arguments are required: --connect"], "")
    import socket

    with socket.socket() as s:  # a port nobody listens on: bound, never listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        code, lines, out = _run_main(["runner", "--connect", f"tcp://127.0.0.1:{port}"], capsys)
    assert (code, lines, out) == (
        2, [f"bench.py runner: error: cannot connect to tcp://127.0.0.1:{port}: connection "
            f"refused or address unreachable (start the scheduler first, with "
            f"--remote-runners; it prints the command with the port to connect to)"], "")


def test_frontend_with_a_streamed_scenario_is_refused(tmp_path, capsys):
    # soak streams its records (finished requests leave memory): the frontend's
    # streams could not be compared with the scheduler's, so --frontend is refused.
    path = tmp_path / "t.csv"
    path.write_text(f"{HEADER}\n{ROW}\n")
    code, lines, out = _run_main(["--scenario", "soak", "--trace", str(path), "--frontend",
                                  "--output", str(tmp_path / "run")], capsys)
    assert (code, lines, out) == (2, [
        "bench.py: error: scenario soak streams its records (finished requests leave "
        "memory), so the frontend's token streams could not be checked: drop --frontend"], "")
    assert not (tmp_path / "run").exists()


# ---------------------------------------------------------------------- scripts/


STAGES = ("the stages are 0 decode-step, 1 smoke, 2 llama-3.2-1b, 3 llama-3.1-8b, 4 aa, "
          "5 azure-conv, 6 async")

#: (gpu_check arguments, the exact error after "gpu_check.py: error: "); {tmp}: tmp_path
GPU_CHECK_CASES = [
    (["--stages", "9"], f"argument --stages: unknown stage '9'; {STAGES}"),
    (["--stages", "1,-1"], f"argument --stages: unknown stage '-1'; {STAGES}"),
    (["--stages", "1,1"], "argument --stages: 1 given more than once"),
    (["--stages", ","], "argument --stages: expected comma-separated stage numbers, got ',' "
                        "(an item is empty)"),
    (["--budget-s", "0"],
     "argument --budget-s: must be a positive, finite number of seconds, got '0'"),
    (["--budget-s", "-5"],
     "argument --budget-s: must be a positive, finite number of seconds, got '-5'"),
    (["--budget-s", "nan"],
     "argument --budget-s: must be a positive, finite number of seconds, got 'nan'"),
    (["--budget-s", "inf"],
     "argument --budget-s: must be a positive, finite number of seconds, got 'inf'"),
    (["--budget-s", "5m"], "argument --budget-s: expected a number of seconds, got '5m'"),
    (["--budget-s", "1e30"], "argument --budget-s: must be at most 86400, got 1e30"),
    (["--trace", "{tmp}/nope.csv"], "argument --trace: no such trace file: {tmp}/nope.csv"),
    (["--trace", "{tmp}"], "argument --trace: {tmp} is not a file"),
    (["--output", "{tmp}/f/sub"], "argument --output: cannot write results to {tmp}/f/sub: "
                                  "{tmp}/f is not a folder"),
    (["--output", "{tmp}/f"], "argument --output: output path {tmp}/f exists and is not a "
                              "folder"),
    (["--output", "/proc/ipc-bench-test/run"], "argument --output: cannot write to "
     "/proc/ipc-bench-test/run: No such file or directory"),
    (["--output", ""], "argument --output: expected the path of a folder, got ''"),
]


@pytest.mark.parametrize("argv,message", GPU_CHECK_CASES,
                         ids=[" ".join(a) for a, _ in GPU_CHECK_CASES])
def test_gpu_check_bad_input_is_one_line_before_any_stage(argv, message, tmp_path,
                                                          monkeypatch, capsys):
    gpu_check = load_script("gpu_check")
    started = []
    monkeypatch.setattr(gpu_check, "_preflight", lambda device: started.append(device))
    monkeypatch.setattr(gpu_check, "run_child", lambda *a: started.append(a))
    (tmp_path / "f").write_text("x")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert gpu_check.main(argv) == 2
    assert capsys.readouterr() == ("", f"gpu_check.py: error: "
                                       f"{message.replace('{tmp}', str(tmp_path))}\n")
    assert started == [] and sorted(p.name for p in tmp_path.iterdir()) == ["f"]


def test_gpu_check_bad_input_in_its_own_process_has_no_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "scripts/gpu_check.py", "--budget-s", "nan",
                           "--output", str(tmp_path / "out")], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", "gpu_check.py: error: argument --budget-s: must be a positive, finite number "
               "of seconds, got 'nan'\n")
    assert not (tmp_path / "out").exists()


#: (decode_step_check arguments, the exact error after "decode_step_check.py: error: ")
DECODE_STEP_CASES = [
    (["--device", "cpu", "--preset", "llama-3.1-8b"],  # once, not once per configuration
     "llama-3.1-8b needs 29.9 GiB of weights + 0.3 GiB of KV cache (num_blocks 81 x "
     "block_size 16), 30.2 GiB in all, on cpu; the CPU limit is 6.0 GiB: the weights alone do not fit: use a "
     "smaller --preset"),
    (["--device", "cuda"], "--device cuda: no CUDA device here (torch.cuda.is_available() "
                           "is False); use --device cpu or auto"),
    (["--json", "{tmp}/no/rows.json"],
     "argument --json: {tmp}/no/rows.json: No such file or directory"),
    (["--json", "{tmp}"], "argument --json: {tmp}: is a directory"),
    (["--preset", "llama-9"], "argument --preset: unknown preset 'llama-9'; choose from tiny, "
                              "cpu, qwen2.5-0.5b, llama-3.2-1b, llama-3.1-8b"),
    (["--configs", "varlen"], "varlen needs CUDA (FlashAttention's paged kernel has no CPU "
     "version) and --configs has nothing else to run here; on CPU use gather, flex or "
     "flex+graphs"),
    (["--configs", "varlen+graphs,varlen"], "varlen needs CUDA (FlashAttention's paged kernel "
     "has no CPU version) and --configs has nothing else to run here; on CPU use gather, "
     "flex or flex+graphs"),
    (["--configs", "paged"], "argument --configs: unknown configuration 'paged': use BACKEND "
                             "or BACKEND+graphs, BACKEND one of gather, flex, varlen"),
    (["--context-min", "0"], "argument --context-min: must be at least 1, got 0"),
    (["--context-max", "-3"], "argument --context-max: must be at least 1, got -3"),
    (["--context-min", "50", "--context-max", "40"],
     "--context-min 50 is larger than --context-max 40"),
    (["--context-min", "150"], "--context-min 150 is larger than --context-max 100 (the CPU "
                               "default)"),
    (["--num-running", "4,x"], "argument --num-running: expected a whole number, got 'x'"),
    (["--steps", "0"], "argument --steps: must be at least 1, got 0"),
    (["--warmup", "-1"], "argument --warmup: must be at least 0, got -1"),
]


@pytest.mark.parametrize("argv,message", DECODE_STEP_CASES,
                         ids=[" ".join(a) for a, _ in DECODE_STEP_CASES])
def test_decode_step_check_bad_input_is_one_line_before_it_runs(argv, message, tmp_path,
                                                                monkeypatch, capsys):
    """Checked before any configuration runs (the --json path too, not after the run); on
    a machine without CUDA, as torch reports it here."""
    import torch

    dsc = load_script("decode_step_check")
    ran = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(dsc, "run_config", lambda *a: ran.append(a))
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert dsc.main(argv) == 2
    assert capsys.readouterr() == ("", f"decode_step_check.py: error: "
                                       f"{message.replace('{tmp}', str(tmp_path))}\n")
    assert ran == [] and list(tmp_path.iterdir()) == []


def test_cuda_graph_sizes_are_stored_sorted():
    from ipc_bench.cli.options import build_parser
    from ipc_bench.harness.scenario import ScenarioOptions

    args = build_parser().parse_args(DS + ["--cuda-graph-sizes", "16, 1,4"])
    assert args.cuda_graph_sizes == [1, 4, 16]
    opts = ScenarioOptions(model="torch", cuda_graph_sizes=[8, 2, 2, 1])
    assert opts.model_config().cuda_graph_sizes == (1, 2, 8)


def test_a_trace_that_is_not_a_file_or_a_pipe_is_refused_and_a_fifo_does_not_hang(
        tmp_path, capsys):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    code, lines, out = _run_main(["--scenario", "azure-conv", "--trace", str(fifo),
                                  "--output", str(tmp_path / "run")], capsys)
    assert (code, lines, out) == (2, [f"bench.py: error: {fifo}: a pipe with nothing written "
                                      "to it (a named FIFO needs its writer started first)"],
                                  "")
    empty = tmp_path / "empty.csv"  # a regular file with nothing in it is an empty file
    empty.write_text("")
    code, lines, out = _run_main(["--scenario", "azure-conv", "--trace", str(empty),
                                  "--output", str(tmp_path / "run")], capsys)
    assert (code, lines, out) == (2, [f"bench.py: error: {empty} line 1: empty file; "
                                      f"expected header '{HEADER}'"], "")
    code, lines, out = _run_main(["--scenario", "azure-conv", "--trace", "/dev/null"], capsys)
    assert (code, lines, out) == (2, ["bench.py: error: cannot read trace file: /dev/null "
                                      "(not a regular file or a pipe)"], "")


def test_a_100m_token_trace_row_is_rejected_without_building_its_prompt(
        tmp_path, capsys, monkeypatch):
    """A row whose prompt can never fit is counted as rejected on arrival, exactly as
    before, and its ids are never drawn: the scheduler's memory stays small (a 100M-id
    prompt is 800 MB as int64 alone)."""
    import tracemalloc

    from ipc_bench.engine import workloads

    real, drawn = workloads.make_prompt, []

    def make_prompt(seed, index, num_tokens, vocab_size, token_ids="uniform"):
        drawn.append(num_tokens)
        assert num_tokens < 10**6, f"a prompt of {num_tokens} tokens was built"
        return real(seed, index, num_tokens, vocab_size, token_ids)

    monkeypatch.setattr(workloads, "make_prompt", make_prompt)
    path = tmp_path / "t.csv"
    path.write_text(f"{HEADER}\n{ROW}\n2023-11-16 18:15:46.7805900,100000000,4\n"
                    "2023-11-16 18:15:46.8805900,20,5\n"
                    "2023-11-16 18:15:46.9805900,8000,5\n")
    run = tmp_path / "run"
    tracemalloc.start()
    try:
        code = cli.main(["--scenario", "azure-conv", "--trace", str(path),
                         "--max-model-len", "4096", "--warmup-steps", "0",
                         "--codecs", "msgpack", "--no-single-process", "--output", str(run),
                         "--quiet"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    out, err = capsys.readouterr()
    assert code == 0, err
    assert ("  rejected on arrival: 2 of 4 requests could never fit (prompt >= max_model_len, "
            "or more KV blocks than the cache has)") in out.splitlines()
    assert peak < 64 * 2**20, peak
    assert sorted(set(drawn)) == [1, 20, 374]  # 1: each case's warm build (Workload.warm)
    summary = json.loads((run / "summary.json").read_text())
    assert [c["num_rejected"] for c in summary["cases"]] == [2, 2]
    requests = pd.read_csv(run / "requests.csv").sort_values(["case_id", "index"])
    assert list(requests.finish_reason) == ["length", "rejected", "length", "rejected"] * 2
    assert list(requests.num_prompt_tokens) == [374, 100_000_000, 20, 8000] * 2
    assert list(requests.num_output_tokens) == [44, 0, 5, 0] * 2


@pytest.mark.parametrize("repeat,expected", [([], 8), (["--repeat", "3"], 3)])
def test_overhead_runs_its_default_8_repetitions_only_when_repeat_is_not_given(
        repeat, expected, monkeypatch, capsys):
    from ipc_bench.cli import execute

    ran = []
    monkeypatch.setattr(execute, "run_cases",
                        lambda args, cases, report, notes, trace_sha256, trace_resolved_path,
                        swept: ran.extend(cases) or 0)
    assert cli.main(["--scenario", "overhead", "--policies", "send", *repeat]) == 0
    assert sorted({c.repetition for c in ran}) == list(range(expected))
    assert len(ran) == 2 * expected  # arms steps and totals


def test_the_claim_file_every_run_folder_gets_is_documented(tmp_path):
    from argparse import Namespace

    from ipc_bench.cli.execute import claim_run_dir

    run_dir, _ = claim_run_dir(Namespace(output=str(tmp_path / "run"), scenario="x"))
    assert [p.name for p in run_dir.iterdir()] == [".claimed"]
    assert (run_dir / ".claimed").stat().st_size == 0
    readme = " ".join((REPO / "docs" / "metrics.md").read_text().split())
    assert ("The run folder also holds an empty `.claimed` file, created first "
            "(exclusively) to claim the folder: of two runs given the same `--output`, the "
            "second is refused: `output folder DIR exists and is not empty`, or, when both "
            "claim it at the same moment, `output folder DIR is in use by another run`.") in readme


def test_int_items_refuses_an_empty_item_and_a_non_integer():
    import argparse

    from ipc_bench.cli.options import int_items

    assert int_items("1, 64,256") == [1, 64, 256]
    for text, line in (("1,,2", "expected comma-separated integers, got '1,,2' (an item is "
                                "empty)"),
                       ("1,x", "expected comma-separated integers, got '1,x'")):
        with pytest.raises(argparse.ArgumentTypeError) as info:
            int_items(text)
        assert str(info.value) == line


@pytest.mark.parametrize("argv,message", [
    (["report", "a", "--output", "x", "--output", "y"],
     "bench.py report: error: --output given twice (x, then y): give it once"),
    (["microbench", "run", "--ops", "encode", "--ops", "decode"],
     "bench.py microbench: error: --ops given twice (encode, then decode): give it once"),
    (["runner", "--connect", "tcp://127.0.0.1:5600", "--connect", "tcp://127.0.0.1:5601"],
     "bench.py runner: error: --connect given twice (tcp://127.0.0.1:5600, then "
     "tcp://127.0.0.1:5601): give it once"),
], ids=["report", "microbench", "runner"])
def test_each_command_refuses_an_option_given_twice(argv, message, capsys):
    code, lines, out = _run_main(argv, capsys)
    assert (code, lines, out) == (2, [message], "")


def test_a_tmpdir_that_is_not_a_folder_is_said_with_where_the_sockets_go(tmp_path,
                                                                          monkeypatch):
    """Python's ``tempfile`` passes over a ``TMPDIR`` it cannot use; the run says so
    in a note, naming the folder it used instead; a usable one gives no note."""
    import tempfile

    missing = tmp_path / "no-such-folder"
    monkeypatch.setenv("TMPDIR", str(missing))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    used = tempfile.gettempdir()
    assert used != str(missing)
    assert cli_run.tmpdir_note() == (f"TMPDIR={missing} is not a folder this user can "
                                     f"write to: the socket folders go to {used}")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    assert cli_run.tmpdir_note() is None


def test_the_trace_speedup_named_to_fit_is_one_the_option_and_the_check_take():
    # 8,424.0000001 s of trace x 4 replays needs 0.39000000000463: 0.39 itself is
    # refused, so 0.4 is named; 1,300 without a separator (the option refuses
    # '1,300'); past the option's 1,000,000 none fits; below 1e-4 as a float literal
    from ipc_bench.harness.scenario import MAX_REPLAY_S, _speedup_that_fits

    assert [_speedup_that_fits(span, n) for span, n in (
        (8424.0000001, 4), (MAX_REPLAY_S * 1234.5, 1), (2.4e9, 40), (1e-6, 1),
        (MAX_REPLAY_S, 1), (float("inf"), 1))] == [
        ": --trace-speedup 0.4 or more fits", ": --trace-speedup 1300 or more fits",
        ": no --trace-speedup fits (1,000,000 at most)",
        ": --trace-speedup 1.2e-11 or more fits", ": --trace-speedup 1 or more fits", ""]


def test_a_one_value_integer_option_takes_the_grouped_form_the_advice_prints():
    # "give --num-blocks 25,856 or more": pasted, it was refused as no integer; a list
    # option keeps its commas as separators (--num-running 4,16), so the advice names
    # its values ungrouped (--num-running 1821 or fewer)
    from ipc_bench.cli.options import _int_in, _int_list

    assert [_int_in(1, 2**22)(v) for v in ("25,856", " 1,048,576 ", "25856")] == [
        25856, 1048576, 25856]
    for bad in ("25,85", "2,5856", ",256", "256,", "-25,856"):
        with pytest.raises(argparse.ArgumentTypeError, match="expected an integer"):
            _int_in(1, 2**22)(bad)
    assert _int_list(65536)("1,024") == [1, 24]
