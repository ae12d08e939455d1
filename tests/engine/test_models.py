"""Runner models: fixed-step and torch (ipc_bench.engine.models), their CLI options and the
step-time scenario's report. The torch tests use the ``cpu`` and ``tiny`` presets on
CPU (float32), small workloads, and chunked prefill."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import numpy as np
import pytest

from ipc_bench.harness.spec import CaseSpec
from ipc_bench.cli import main as cli_main
from ipc_bench.wire.codecs import messages_of, model_runner_output_codec, scheduler_output_codec
from ipc_bench.engine.config import (
    MAX_MODEL_LEN,
    TORCH_PRESETS,
    ConfigError,
    ModelConfig,
    SchedulerConfig,
    TorchPreset,
    check_max_position,
    check_model_memory,
    kv_cache_bytes,
    weight_bytes,
    weight_count,
)
from ipc_bench.engine.models import FixedStepModel, TorchModel, make_model
from ipc_bench.engine.model_runner import ModelRunner
from ipc_bench.harness.spec import CaseError
from ipc_bench.analysis.summary import summarize_case
from ipc_bench.harness.supervisor import run_case
from ipc_bench.harness.recording import token_digest
from ipc_bench.harness.scenario import ScenarioOptions
from ipc_bench.engine.scheduler import Scheduler
from ipc_bench.engine.traces import Trace
from ipc_bench.engine.workloads import SteadyDecodeWorkload, TraceWorkload

REPO = Path(__file__).resolve().parents[2]
VOCAB = 128_256

# Small steady workload: 3 running requests, prompts of 40-90 tokens against a 48-token
# step budget (so prompts are prefilled in chunks, next to other requests' decodes).
SCHED = SchedulerConfig(max_num_seqs=3, max_num_batched_tokens=48, max_model_len=256,
                        block_size=16, num_blocks=64)


def _workload(vocab_size: int = VOCAB) -> SteadyDecodeWorkload:
    return SteadyDecodeWorkload(3, seed=7, vocab_size=vocab_size, prompt_len_range=(40, 90),
                                output_len_range=(4, 24))


def _drained_workload(vocab_size: int = VOCAB) -> TraceWorkload:
    """Six requests (prompts 30-90, outputs 6-25) over the first steps, then none."""
    trace = Trace(path="synthetic", arrival_s=np.array([0, 0, 1, 2, 5, 9], dtype=np.float64),
                  prompt_lens=np.array([90, 30, 64, 41, 77, 33], dtype=np.int64),
                  output_lens=np.array([20, 25, 6, 17, 12, 9], dtype=np.int64))
    return TraceWorkload(trace, name="six", seed=5, vocab_size=vocab_size, logical_step_s=1.0)


def drive(sched_cfg: SchedulerConfig, model_cfg: ModelConfig, policy: str, codec: str,
          max_steps: int, workload=None):
    """Scheduler and runner in one process, messages through the codec, for
    ``max_steps`` steps or until ``workload`` (default: ``_workload()``) drains; returns
    (token digest, number of steps with a partial prefill, scheduler)."""
    sched = Scheduler(sched_cfg, policy, messages_of(codec))
    runner = ModelRunner(sched_cfg, model_cfg, policy, messages_of(codec))
    s_codec, o_codec = scheduler_output_codec(codec), model_runner_output_codec(codec)
    workload = workload or _workload()
    partial_steps = 0
    while sched.step < max_steps:
        for r in workload.arrivals(sched.step):
            sched.add_request(r.req_id, r.index, r.prompt_token_ids, r.max_tokens)
        if not sched.has_unfinished_requests():
            nxt = workload.next_arrival_step()
            if nxt is None:
                break
            sched.step = max(nxt, sched.step + 1)
            continue
        plan = sched.schedule()
        so = s_codec.decode(s_codec.encode(sched.build_scheduler_output(plan)))
        out = o_codec.decode(o_codec.encode(runner.execute_model(so)))
        partial_steps += any(not ids for ids in out.sampled_token_ids)
        finished = sched.update_from_output(plan, out)
        if finished:
            workload.on_finished(len(finished), plan.step)
    return token_digest(sched.requests.values()), partial_steps, sched


# ---------------------------------------------------------------------- null


def _splitmix_reference(token_ids, rows, positions, window, seed, vocab_size):
    """NullModel's documented hash in plain Python ints: per request, start from
    ``position * 0x9E3779B97F4A7C15 + seed``, then for each of the ``window`` tokens
    ending at ``position`` (last first; before position 0: 0) xor it in and apply the
    splitmix64 finaliser; reduce modulo ``vocab_size``."""
    mask = 2**64 - 1
    out = []
    for row, pos in zip(rows, positions):
        h = (pos * 0x9E3779B97F4A7C15 + seed) & mask
        for j in range(window):
            p = pos - j
            h ^= int(token_ids[row][p]) if p >= 0 else 0
            h ^= h >> 30
            h = (h * 0xBF58476D1CE4E5B9) & mask
            h ^= h >> 27
            h = (h * 0x94D049BB133111EB) & mask
            h ^= h >> 31
        out.append(h % vocab_size)
    return out


@pytest.mark.parametrize("window", [1, 4, 7])
def test_null_model_is_the_documented_hash(window):
    """Rows in any order, positions near the start of a row (window reads before 0),
    ids up to 2**31 - 1, a seed over 32 bits."""
    rng = np.random.default_rng(window)
    token_ids = rng.integers(0, 2**31 - 1, size=(9, 40)).astype(np.int32)
    rows = np.array([8, 0, 3, 5, 1, 2], dtype=np.int64)
    positions = np.array([0, 1, 2, 39, 17, 5], dtype=np.int64)
    cfg = ModelConfig(seed=2**40 + 7, hash_window=window, vocab_size=VOCAB)
    got = make_model(cfg).sample(token_ids, rows, positions)
    assert got.dtype == np.int64
    assert got.tolist() == _splitmix_reference(token_ids, rows.tolist(), positions.tolist(),
                                               window, cfg.seed, VOCAB)
    assert make_model(cfg).sample(token_ids, rows[:0], positions[:0]).tolist() == []


# ---------------------------------------------------------------------- fixed-step


def test_fixed_step_gives_the_null_models_digests():
    null = ModelConfig(name="null", seed=3)
    fixed = ModelConfig(name="fixed-step", seed=3, step_time_ms=0.2)
    digests = {drive(SCHED, cfg, policy, "msgpack", 60)[0]
               for cfg in (null, fixed) for policy in ("send", "cached")}
    assert len(digests) == 1


def _fixed_step_runner(step_time_ms: float, wait: str):
    """A fixed-step ``ModelRunner`` with one request scheduled, and that step's inputs."""
    cfg = SchedulerConfig(max_num_seqs=2, max_num_batched_tokens=64, max_model_len=64)
    runner = ModelRunner(cfg, ModelConfig(name="fixed-step", step_time_ms=step_time_ms,
                                          step_wait=wait), "cached")
    sched = Scheduler(cfg, "cached")
    sched.add_request("a", 0, [5, 6, 7], 4)
    so = sched.build_scheduler_output(sched.schedule())
    runner.update_states(so)
    return runner, runner.prepare_inputs(so)


@pytest.mark.parametrize("wait", ["sleep", "spin"])
def test_fixed_step_waits_at_least_its_step_time(wait):
    runner, inputs = _fixed_step_runner(3.0, wait)
    assert isinstance(runner.model, FixedStepModel)
    assert runner.model.step_ns == 3_000_000 and runner.model.wait == wait
    assert runner.model.device == f"cpu (fixed step: {wait} wait)"
    t0 = time.perf_counter_ns()
    runner.sample(inputs)
    assert time.perf_counter_ns() - t0 >= 3_000_000


def test_a_sleeping_fixed_step_leaves_the_core_free():
    """Process CPU time over wall time of ten 20 ms steps: a sleep spins only its last
    150 us, so the share is a few per cent; the bound leaves a wide margin for load."""
    runner, inputs = _fixed_step_runner(20.0, "sleep")
    cpu0, t0 = time.process_time(), time.perf_counter()
    for _ in range(10):
        runner.sample(inputs)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    assert wall >= 0.2
    assert cpu / wall < 0.5, (cpu, wall)


@pytest.mark.parametrize("scenario, opts, wait", [
    ("step-time", {}, "spin"),  # as its published figures were measured
    ("step-time", {"step_wait": "sleep"}, "sleep"),
    ("decode-steady", {"model": "fixed-step"}, "sleep"),
    ("decode-steady", {"model": "fixed-step", "step_wait": "spin"}, "spin"),
])
def test_fixed_step_wait_defaults_per_scenario(scenario, opts, wait):
    from ipc_bench.harness.scenario import discover

    cases = discover()[scenario].cases(ScenarioOptions(num_running=[2], **opts))
    assert {c.model.step_wait for c in cases} == {wait}


def test_both_waits_give_the_same_tokens_through_run_case():
    results = {}
    for wait in ("sleep", "spin"):
        spec = CaseSpec(scenario="test", labels={"w": 1}, policy="cached", codec="msgpack",
                        scheduler=SCHED, model=ModelConfig(name="fixed-step", seed=3,
                                                           step_time_ms=0.3, step_wait=wait),
                        make_workload=_workload, warmup_steps=5, max_steps=60, floor=False)
        result = run_case(spec)
        summary = summarize_case(result)
        assert result.runner_device == f"cpu (fixed step: {wait} wait)"
        assert summary["step_wait"] == wait and summary["runner_device"] == result.runner_device
        results[wait] = result.token_digest
    assert results["sleep"] == results["spin"]
    null = ModelConfig(name="null", seed=3)
    assert results["sleep"] == drive(SCHED, null, "cached", "msgpack", 60, _workload())[0]


# ---------------------------------------------------------------------- torch


def test_prepare_inputs_gives_the_torch_model_its_tokens_and_positions():
    sched = Scheduler(SCHED, "send")
    runner = ModelRunner(SCHED, ModelConfig(), "send")
    sched.add_request("a", 0, list(range(100, 140)), 4)
    sched.add_request("b", 1, list(range(200, 205)), 4)
    so = sched.build_scheduler_output(sched.schedule())
    runner.update_states(so)
    inputs = runner.prepare_inputs(so)
    assert inputs.query_start_loc.tolist() == [0, 40, 45]
    assert inputs.seq_lens.tolist() == [40, 5]
    assert inputs.input_ids.tolist() == list(range(100, 140)) + list(range(200, 205))
    assert inputs.token_positions.tolist() == list(range(40)) + list(range(5))


def _paged_vs_reference(model: TorchModel, block_table: np.ndarray, seqs, steps):
    """Runs ``steps`` (tokens scheduled per sequence per step) through the paged forward;
    returns the largest |logit - reference logit| at every scheduled last position."""
    refs = [model.reference_logits(s) for s in seqs]
    done = [0] * len(seqs)
    worst = 0.0
    for ns in steps:
        rows = [i for i, n in enumerate(ns) if n]
        ids, pos, qsl, lens = [], [], [0], []
        for i in rows:
            ids += seqs[i][done[i]:done[i] + ns[i]]
            pos += range(done[i], done[i] + ns[i])
            done[i] += ns[i]
            qsl.append(qsl[-1] + ns[i])
            lens.append(done[i])
        logits = model.forward_logits(np.array(ids, np.int32), np.array(pos), np.array(qsl),
                                      np.array(lens), block_table[rows])
        for j, i in enumerate(rows):
            worst = max(worst, float((logits[j] - refs[i][done[i] - 1]).abs().max()))
    assert done == [len(s) for s in seqs]
    return worst


# Two sequences: chunked prefill (7 + 9 + 1 ... tokens), a decode next to a prefill
# chunk in the same step, a 1-token step, then decodes.
_STEPS = [(7, 1), (9, 5), (1, 17), (1, 0), (20, 0), (1, 0), (1, 0)]


@pytest.mark.parametrize("preset", ["tiny", "cpu"])
def test_paged_forward_matches_a_full_sequence_forward(preset):
    sched = SchedulerConfig(max_num_seqs=4, max_model_len=128, block_size=4, num_blocks=80)
    model = TorchModel(ModelConfig(name="torch", preset=preset, vocab_size=5000, seed=3,
                                   device="cpu"), sched)
    rng = np.random.default_rng(0)
    seqs = [rng.integers(0, 5000, 40).tolist(), rng.integers(0, 5000, 23).tolist()]
    blocks = rng.permutation(80)  # scattered, as after many allocations and frees
    table = np.zeros((2, 32), np.int32)
    table[0, :10], table[1, :6] = blocks[:10], blocks[10:16]
    assert _paged_vs_reference(model, table, seqs, _STEPS) < 1e-4


def test_paged_forward_reads_the_block_table():
    """Negative control: the same run with one block of sequence 0 swapped halfway
    (its cached K/V left behind) no longer matches the reference."""
    sched = SchedulerConfig(max_num_seqs=4, max_model_len=128, block_size=4, num_blocks=80)
    model = TorchModel(ModelConfig(name="torch", preset="tiny", vocab_size=5000, seed=3,
                                   device="cpu"), sched)
    rng = np.random.default_rng(0)
    seqs = [rng.integers(0, 5000, 40).tolist(), rng.integers(0, 5000, 23).tolist()]
    table = np.zeros((2, 32), np.int32)
    table[0, :10], table[1, :6] = np.arange(10), np.arange(10, 16)
    _paged_vs_reference(model, table, [seqs[0][:16], seqs[1][:8]], [(7, 1), (9, 7)])
    table[0, 1] = 70  # block of tokens 4..7 now points at an unwritten block
    refs = model.reference_logits(seqs[0][:17])
    logits = model.forward_logits(np.array([seqs[0][16]], np.int32), np.array([16]),
                                  np.array([0, 1]), np.array([17]), table[:1])
    assert float((logits[0] - refs[16]).abs().max()) > 1e-2


# tiny, not cpu: the equality is the same at either shape; cpu's 256-wide embedding and
# LM head over 128,256 tokens made the digest tests below 2-3x slower
TINY_TORCH = ModelConfig(name="torch", preset="tiny", seed=1, device="cpu")


@pytest.fixture(scope="module")
def torch_in_process():
    """``drive``'s results (digest, partial prefill steps) of the tiny torch model, 50
    steps, per (policy, codec): made once for the in-process test and the run_case
    tests, which compare their runners' digests with cached and msgpack's."""
    return {(policy, codec): drive(SCHED, TINY_TORCH, policy, codec, 50)[:2]
            for policy in ("send", "cached") for codec in ("msgpack", "pickle")}


def test_torch_digests_equal_across_policies_and_codecs_in_process(torch_in_process):
    results = torch_in_process
    digests = {d for d, _ in results.values()}
    assert len(digests) == 1
    assert all(partial > 0 for _, partial in results.values())  # chunked prefill ran
    null_digest = drive(SCHED, ModelConfig(seed=1), "send", "msgpack", 50)[0]
    assert digests != {null_digest}


def test_torch_digests_survive_preemption():
    """A KV cache of 10 blocks for requests of up to 8 blocks each: requests are
    preempted and recomputed into other blocks; the tokens equal those of a run with
    room for all."""
    cfg = ModelConfig(name="torch", preset="tiny", seed=2, device="cpu")
    roomy, _, sched = drive(SCHED, cfg, "cached", "msgpack", 1000, _drained_workload())
    assert sched.num_preemptions == 0 and not sched.has_unfinished_requests()
    tight = SchedulerConfig(max_num_seqs=3, max_num_batched_tokens=48, max_model_len=256,
                            block_size=16, num_blocks=10)
    for policy in ("send", "cached"):
        digest, _, sched = drive(tight, cfg, policy, "msgpack", 1000, _drained_workload())
        assert sched.num_preemptions > 0 and not sched.has_unfinished_requests()
        assert digest == roomy


#: The default run takes each policy and each codec once through ``run_case`` (a torch
#: runner process each, about 2 s); the other two pairs, which the in-process test above
#: already checks for equal digests, run with ``-m slow``.
_THROUGH_RUN_CASE = [
    pytest.param([("send", "msgpack"), ("cached", "pickle")], id="each-policy-and-codec"),
    pytest.param([("send", "pickle"), ("cached", "msgpack")], id="other-pairs",
                 marks=pytest.mark.slow)]


@pytest.mark.parametrize("pairs", _THROUGH_RUN_CASE)
def test_torch_digests_equal_through_run_case(pairs, torch_in_process):
    in_process = torch_in_process[("cached", "msgpack")][0]
    digests = set()
    for policy, codec in pairs:
        spec = CaseSpec(scenario="test", labels={"w": 1}, policy=policy, codec=codec,
                        scheduler=SCHED, model=TINY_TORCH, make_workload=_workload,
                        warmup_steps=5, max_steps=50, floor=False)
        result = run_case(spec)
        assert result.runner_device == "cpu (attention gather)"
        # some step scheduled a prompt chunk that sampled nothing (partial prefill)
        assert any(row[7] < row[4] for row in result.sched_rows)
        digests.add(result.token_digest)
    assert digests == {in_process}


def test_runner_refuses_a_kv_cache_too_large_for_the_device():
    big = SchedulerConfig(max_num_seqs=2, max_model_len=256, num_blocks=2_000_000)
    spec = CaseSpec(scenario="test", labels={}, policy="send", codec="msgpack", scheduler=big,
                    model=ModelConfig(name="torch", preset="cpu", device="cpu"),
                    make_workload=_workload, warmup_steps=0, max_steps=3, floor=False)
    with pytest.raises(CaseError, match=r"^runner refused the handshake: cpu needs 0\.3 GiB of "
                                        r"weights \+ 61\.0 GiB of KV cache .* lower --num-blocks"):
        run_case(spec)


def test_null_model_does_not_import_torch():
    code = ("import sys; from ipc_bench.engine.config import *; from ipc_bench.engine.model_runner import "
            "ModelRunner; ModelRunner(SchedulerConfig(), ModelConfig(name='fixed-step'), 'send');"
            " ModelRunner(SchedulerConfig(), ModelConfig(), 'send');"
            " import ipc_bench.cli, ipc_bench.harness.supervisor;"
            # a checkout not installed has ipc_bench.scenarios only once this loads it
            " from ipc_bench.harness.scenario import scenarios_package; scenarios_package();"
            " import ipc_bench.scenarios.step_time; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------------- validation


@pytest.mark.parametrize("kwargs, message", [
    (dict(name="gpt"), "unknown model 'gpt'; choose from null, fixed-step, torch, emulated"),
    (dict(step_time_ms=0.0), "step_time_ms (--step-time-ms) must be in [0.001, 10000], got "
                             "0.0"),
    (dict(step_time_ms=1e-300), "step_time_ms (--step-time-ms) must be in [0.001, 10000], "
                                "got 1e-300"),
    (dict(step_time_ms=20000.0), "step_time_ms (--step-time-ms) must be in [0.001, 10000], "
                                 "got 20000.0"),
    (dict(step_wait="nap"), "unknown step wait 'nap' (--step-wait); choose from sleep, spin"),
    (dict(preset="huge"), "unknown model preset 'huge' (--model-preset); choose from tiny, "
                          "cpu, qwen2.5-0.5b, llama-3.2-1b, llama-3.1-8b"),
    (dict(preset="gpu-1b"), "model preset 'gpu-1b' was retired: use llama-3.2-1b (the same "
                            "layer shapes, with Llama 3.2 1B's tied embeddings and vocabulary)"),
    (dict(preset="gpu-small"), "model preset 'gpu-small' was retired: use qwen2.5-0.5b (the "
                               "smallest public shape)"),
    (dict(name="torch", preset="qwen2.5-0.5b"),
     "--vocab-size 128256 differs from preset qwen2.5-0.5b's vocabulary of 151,936 ids, which "
     "sets the torch model's sampled-id range: leave --vocab-size out, or use preset tiny or "
     "cpu"),
    (dict(num_threads=0), "num_threads (--torch-threads) must be in [1, 1024], got 0"),
    (dict(device="tpu"), "unknown device 'tpu'; choose from auto, cpu, cuda"),
])
def test_model_config_errors(kwargs, message):
    with pytest.raises(ConfigError) as exc:
        ModelConfig(**kwargs).validate()
    assert str(exc.value) == message


def test_model_memory_check_gives_the_figures():
    model = ModelConfig(name="torch", preset="cpu")
    # cpu preset: 2 layers x K/V x 2 kv heads x 64 dims x 4 bytes = 2 KiB per token
    assert kv_cache_bytes(SchedulerConfig(num_blocks=1), model, "cpu") == 16 * 2048
    assert kv_cache_bytes(SchedulerConfig(num_blocks=1), model, "cuda") == 16 * 1024
    # 67,241,216 float32 weights (268,964,864 B) + 32 KiB per block <= 6 GiB
    # (6,442,450,944 B): at most 188,399 blocks
    check_model_memory(SchedulerConfig(num_blocks=188_399), model, "cpu")
    with pytest.raises(ConfigError) as exc:
        check_model_memory(SchedulerConfig(num_blocks=188_400), model, "cpu")
    assert str(exc.value) == (
        "cpu needs 0.3 GiB of weights + 5.7 GiB of KV cache (num_blocks 188,400 x block_size "
        "16), 6.000005 GiB in all, on cpu; the CPU limit is 6.000000 GiB: lower --num-blocks (at most 188,399) or use a "
        "smaller --model-preset")
    # Llama 3.1 8B in bf16: 15.0 GiB of weights; 64 running x 256 + 256 blocks of 16
    # tokens x 32 layers x K/V x 8 heads x 128 dims x 2 B = 34.9 GB (32.5 GiB) of KV cache
    big = ModelConfig(name="torch", preset="llama-3.1-8b")
    with pytest.raises(ConfigError) as exc:
        check_model_memory(SchedulerConfig(num_blocks=16_640), big, "cuda", 40 * 10**9)
    assert str(exc.value) == (
        "llama-3.1-8b needs 15.0 GiB of weights + 32.5 GiB of KV cache (num_blocks 16,640 x "
        "block_size 16), 47.5 GiB in all, on cuda; it has 37.3 GiB free, of which the model may take 90 % "
        "(33.5 GiB): lower --num-blocks (at most 9,507) or use a smaller --model-preset")
    check_model_memory(SchedulerConfig(num_blocks=9_507), big, "cuda", 40 * 10**9)
    with pytest.raises(ConfigError, match=r"the weights alone do not fit: use a smaller"):
        check_model_memory(SchedulerConfig(num_blocks=1), big, "cuda", 16 * 10**9)
    with pytest.raises(ConfigError, match=r"^llama-3.1-8b needs 29.9 GiB of weights .* the "
                                          r"CPU limit is 6.0 GiB: the weights alone"):
        check_model_memory(SchedulerConfig(num_blocks=1), big, "cpu")
    # other models allocate nothing
    check_model_memory(SchedulerConfig(num_blocks=2**30), ModelConfig(), "cpu")


@pytest.mark.parametrize("args, message", [
    (["--scenario", "decode-steady", "--model", "torch", "--device", "cpu",
      "--num-blocks", "1000000"],
     "bench.py: error: cpu needs 0.3 GiB of weights + 30.5 GiB of KV cache (num_blocks "
     "1,000,000 x block_size 16), 30.8 GiB in all, on cpu; the CPU limit is 6.0 GiB: give "
     "--num-blocks from 25,856 (the most --num-running 256's requests hold in its steps, "
     "the largest need of the run) to 188,399, or a smaller --model-preset"),
    (["--scenario", "decode-steady", "--model", "emulated", "--model-preset", "llama-3.1-8b",
      "--num-running", "256"],
     "bench.py: error: llama-3.1-8b needs 15.0 GiB of weights + 128.5 GiB of KV cache "
     "(num_blocks 65,792 x block_size 16), 143.5 GiB in all, on an emulated NVIDIA H200; it "
     "has 140.4 GiB, of which the model may take 90 % (126.4 GiB): give --num-blocks from "
     "25,856 (the most this case's requests hold in its steps) to 57,038, or --num-running "
     "221 or fewer (it sizes the KV cache here), or a smaller --model-preset"),
    (["--scenario", "decode-steady", "--model", "emulated", "--model-preset", "llama-3.1-8b",
      "--num-running", "1024"],
     "bench.py: error: llama-3.1-8b needs 15.0 GiB of weights + 512.5 GiB of KV cache "
     "(num_blocks 262,400 x block_size 16), 527.5 GiB in all, on an emulated NVIDIA H200; "
     "it has 140.4 GiB, of which the model may take 90 % (126.4 GiB): no --num-blocks fits "
     "this workload on this device: it needs 147,456 blocks (the most this case's requests "
     "hold in its steps), and at most 57,038 fit beside the weights: lower --num-running (at "
     "most 221 where it sizes the KV cache; at most 487 with --num-blocks 57,038 given) or "
     "use a smaller --model-preset"),
    # the default cache holds the same tokens in blocks of 4, and fits the same batch
    (["--scenario", "decode-steady", "--model", "emulated", "--model-preset", "llama-3.1-8b",
      "--num-running", "256", "--block-size", "4"],
     "bench.py: error: llama-3.1-8b needs 15.0 GiB of weights + 128.5 GiB of KV cache "
     "(num_blocks 263,168 x block_size 4), 143.5 GiB in all, on an emulated NVIDIA H200; it "
     "has 140.4 GiB, of which the model may take 90 % (126.4 GiB): give --num-blocks from "
     "102,656 (the most this case's requests hold in its steps) to 228,154, or "
     "--num-running 221 or fewer (it sizes the KV cache here), or a smaller --model-preset"),
    (["--scenario", "decode-steady", "--model", "emulated", "--model-preset", "llama-3.1-8b",
      "--num-running", "1024", "--num-blocks", "300000"],
     "bench.py: error: llama-3.1-8b needs 15.0 GiB of weights + 585.9 GiB of KV cache "
     "(num_blocks 300,000 x block_size 16), 600.9 GiB in all, on an emulated NVIDIA H200; "
     "it has 140.4 GiB, of which the model may take 90 % (126.4 GiB): no --num-blocks fits "
     "this workload on this device: it needs 147,456 blocks (the most this case's requests "
     "hold in its steps), and at most 57,038 fit beside the weights: lower --num-running (at "
     "most 487 with --num-blocks 57,038 given) or use a smaller --model-preset"),
    (["--scenario", "decode-steady", "--model", "torch", "--model-preset", "llama-3.2-1b",
      "--vocab-size", "5000"],
     "bench.py: error: --vocab-size 5000 differs from preset llama-3.2-1b's vocabulary of "
     "128,256 ids, which sets the torch model's sampled-id range: leave --vocab-size out, "
     "or use preset tiny or cpu"),
    (["--scenario", "decode-steady", "--model", "torch", "--model-preset", "gpu-1b"],
     "bench.py: error: model preset 'gpu-1b' was retired: use llama-3.2-1b (the same layer "
     "shapes, with Llama 3.2 1B's tied embeddings and vocabulary)"),
    (["--scenario", "decode-steady", "--model", "fixed-step", "--step-time-ms", "2,5"],
     "bench.py: error: --step-time-ms takes one value here (a list only in the step-time "
     "scenario)"),
    (["--scenario", "step-time", "--model", "torch"],
     "bench.py: error: scenario step-time uses the fixed-step model; drop --model torch"),
    (["--scenario", "decode-steady", "--step-time-ms", "0"],
     "bench.py: error: argument --step-time-ms: must be at least 0.001 (a shorter step "
     "measures the model's own sampling and timer reads), got 0"),
    # a step far below the model's own sampling is refused, not warned of in 300 digits
    (["--scenario", "decode-steady", "--model", "fixed-step", "--step-time-ms", "1e-300"],
     "bench.py: error: argument --step-time-ms: must be at least 0.001 (a shorter step "
     "measures the model's own sampling and timer reads), got 1e-300"),
    (["--scenario", "step-time", "--step-time-ms", "1,0.0005"],
     "bench.py: error: argument --step-time-ms: must be at least 0.001 (a shorter step "
     "measures the model's own sampling and timer reads), got 0.0005"),
    # as every option of one number words it (it read "step_time_ms (--step-time-ms)
    # must be in [0.001, 10000], got 1000000000.0" and "expected positive numbers")
    (["--scenario", "step-time", "--step-time-ms", "1e9"],
     "bench.py: error: argument --step-time-ms: must be at most 10000, got 1e9"),
    (["--scenario", "step-time", "--step-time-ms", "2,inf"],
     "bench.py: error: argument --step-time-ms: must be a finite number, got inf"),
    (["--scenario", "decode-steady", "--model", "torch", "--model-preset", "big"],
     "bench.py: error: unknown model preset 'big' (--model-preset); choose from tiny, cpu, "
     "qwen2.5-0.5b, llama-3.2-1b, llama-3.1-8b"),
    # an empty value is refused, not read as the default
    (["--scenario", "decode-steady", "--model", "emulated", "--model-preset", ""],
     "bench.py: error: unknown model preset '' (--model-preset); choose from tiny, cpu, "
     "qwen2.5-0.5b, llama-3.2-1b, llama-3.1-8b"),
    # model options the case's model does not use
    (["--scenario", "decode-steady", "--step-time-ms", "2"],
     "bench.py: error: model null does not take --step-time-ms (the fixed-step model's step)"),
    (["--scenario", "decode-steady", "--model", "emulated", "--step-time-ms", "2"],
     "bench.py: error: model emulated does not take --step-time-ms (the fixed-step model's "
     "step)"),
    (["--scenario", "decode-steady", "--model-preset", "tiny"],
     "bench.py: error: model null does not take --model-preset (the shape of the torch and "
     "emulated models)"),
    (["--scenario", "step-time", "--model-preset", "tiny"],
     "bench.py: error: model fixed-step does not take --model-preset (the shape of the torch "
     "and emulated models)"),
    (["--scenario", "decode-steady", "--model", "fixed-step", "--torch-threads", "2"],
     "bench.py: error: model fixed-step does not take --torch-threads (the torch model's "
     "threads)"),
    (["--scenario", "decode-steady", "--model", "emulated", "--model-preset", "tiny",
      "--torch-threads", "2"],
     "bench.py: error: model emulated does not take --torch-threads (the torch model's "
     "threads)"),
    (["--scenario", "decode-steady", "--torch-threads", "1"],
     "bench.py: error: model null does not take --torch-threads (the torch model's threads)"),
    (["--scenario", "decode-steady", "--step-wait", "spin"],
     "bench.py: error: model null does not take --step-wait (the fixed-step model's wait)"),
    (["--scenario", "decode-steady", "--model", "fixed-step", "--step-wait", "nap"],
     "bench.py: error: argument --step-wait: invalid choice: 'nap' (choose from 'sleep', "
     "'spin')"),
])
def test_cli_rejects_bad_model_settings(args, message, capsys, tmp_path):
    assert cli_main(args + ["--output", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert err == message
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("args", [
    ["--scenario", "step-time"],  # the scenario's own fixed-step model and step times
    ["--scenario", "step-time", "--step-time-ms", "1,2"],
    ["--scenario", "decode-steady", "--model", "fixed-step", "--step-time-ms", "2"],
    ["--scenario", "decode-steady", "--model", "fixed-step", "--step-wait", "spin"],
    ["--scenario", "step-time", "--step-wait", "sleep"],
    ["--scenario", "decode-steady", "--model", "emulated", "--model-preset", "tiny"],
    ["--scenario", "decode-steady"],
])
def test_cli_accepts_the_model_options_a_model_uses(args):
    from ipc_bench.cli import run as cli_run
    from ipc_bench.cli.options import build_parser
    from ipc_bench.harness.scenario import discover

    parsed = build_parser().parse_args(args)
    cases = discover()[parsed.scenario].cases(cli_run._scenario_options(parsed))
    cli_run._check_cases(parsed, cases)  # raises on a refused option
    assert cases


# ---------------------------------------------------------------------- step-time


def test_step_time_grid():
    from ipc_bench.scenarios import step_time

    cases = step_time.cases(ScenarioOptions())
    assert len(cases) == 3 * 3 * 2 * 2
    assert {(c.labels["step_time_ms"], c.model.name, c.model.step_time_ms) for c in cases} == {
        (2.0, "fixed-step", 2.0), (5.0, "fixed-step", 5.0), (20.0, "fixed-step", 20.0)}
    assert [c.policy for c in cases[:4]] == ["send", "cached", "send", "cached"]


def test_step_time_crossing():
    from ipc_bench.scenarios.step_time import crossing

    assert crossing([(16, 0.002), (64, 0.006), (256, 0.02)]) == "~119 (interpolated)"
    assert crossing([(64, 0.004), (16, 0.001), (256, 0.008)]) == "~352 (extrapolated)"
    assert crossing([(16, 0.02), (64, 0.03)]) == "<= 16 (already at the smallest B)"
    assert crossing([(16, 0.005), (64, 0.004)]) == "n/a (the cost does not grow with B here)"


def test_step_time_report_adds_send_costs():
    from ipc_bench.scenarios.step_time import report

    def summary(policy, b, step_ns, build, encode, decode):
        return dict(scenario="step-time", complete=True, num_steps=10, step_time_ms=2.0,
                    num_running=b, codec="msgpack", repetition=0, policy=policy,
                    step_ns_median=step_ns,
                    s2r_build_encode_decode_ns_median=build + encode + decode)

    summaries = [summary("send", 16, 2_010_000, 8_000, 5_000, 7_000),
                 summary("cached", 16, 2_004_000, 4_000, 4_000, 6_000),
                 summary("send", 256, 2_060_000, 40_000, 20_000, 30_000),
                 summary("cached", 256, 2_020_000, 10_000, 15_000, 25_000)]
    text = report(summaries)
    send16, send256 = summaries[0], summaries[2]
    assert send16["send_cost_step_ns"] == 6_000
    assert send16["send_cost_s2r_ns"] == 6_000
    # Shares of the measured step: the cached case's median step_ns, not the nominal 2 ms.
    assert send16["send_cost_measured_step_ns"] == 2_004_000
    assert send16["send_cost_share_of_step"] == pytest.approx(6_000 / 2_004_000)
    assert send256["send_cost_s2r_ns"] == 40_000
    assert send256["send_cost_s2r_share_of_step"] == pytest.approx(40_000 / 2_020_000)
    assert send16["send_cost_off_nominal"] == []
    assert "send_cost_step_ns" not in summaries[1]
    assert ("      2  256  msgpack              2.02          40.0                1.98"
            "        40.00                1.98") in text
    # one repetition: the whole step's crossing is marked unreliable (one draw), s2r's is not
    assert ("  2 ms, msgpack: whole step ~116 (interpolated) (unreliable: at B = 16, 256 one "
            "repetition, no interval: one draw of the noisy whole-step difference; at B = 16 "
            "send's whole step is 6 µs (0.30 %) longer than cached's, its SchedulerOutput "
            "path 6 µs (0.30 %) longer); s2r ~116 (interpolated)" in text)


def test_step_time_runs_end_to_end(tmp_path, capsys):
    out = tmp_path / "run"
    assert cli_main(["--scenario", "step-time", "--step-time-ms", "1", "--num-running", "2",
                     "--steps", "5", "--warmup-steps", "2", "--codecs", "msgpack",
                     "--no-floor", "--quiet", "--output", str(out)]) == 0
    text = capsys.readouterr().out
    assert "send's cost per step" in text
    # read, or withheld when the loaded machine stretched the step (whole_step_warning)
    assert ("1 ms, msgpack: whole step" in text
            or "1 ms, msgpack: not read (unreliable)" in text)
    cases = json.loads((out / "summary.json").read_text())["cases"]
    assert [c["model"] for c in cases] == ["fixed-step", "fixed-step"]
    assert "send_cost_s2r_ns" in cases[0] and "send_cost_s2r_ns" not in cases[1]
    # The share's denominator is the cached case's measured median step; the runner's
    # median model step is recorded beside its nominal step for the off-nominal check.
    assert cases[0]["send_cost_measured_step_ns"] == cases[1]["step_ns_median"]
    assert [c["fixed_step_ms"] for c in cases] == [1.0, 1.0]
    assert all(c["runner_forward_ns_median"] >= 1e6 for c in cases)  # a spin of >= 1 ms
    assert cases[0]["token_digest"] == cases[1]["token_digest"]


# ---------------------------------------------------------------------- public presets


@pytest.mark.parametrize("name, shape, vocab, tied, weights", [
    # (layers, hidden, heads, KV heads, head dim, intermediate, max_position_embeddings):
    # config.json of each model card (TorchPreset.source); weight counts as on the model
    # cards (0.49 B less Qwen2.5's 27,648 QKV biases, 1.24 B, 8.03 B).
    ("qwen2.5-0.5b", (24, 896, 14, 2, 64, 4864, 32_768), 151_936, True, 494_005_120),
    ("llama-3.2-1b", (16, 2048, 32, 8, 64, 8192, 131_072), 128_256, True, 1_235_814_400),
    ("llama-3.1-8b", (32, 4096, 32, 8, 128, 14336, 131_072), 128_256, False,
     8_030_261_248),
])
def test_public_presets_have_their_published_shapes(name, shape, vocab, tied, weights):
    p = TORCH_PRESETS[name]
    assert (p.num_layers, p.hidden_size, p.num_heads, p.num_kv_heads, p.head_dim,
            p.intermediate_size, p.max_position_embeddings) == shape
    assert (p.vocab_size, p.tie_word_embeddings, p.cuda_dtype) == (vocab, tied, "bfloat16")
    assert p.source.startswith("https://huggingface.co/") and p.source.endswith("config.json")
    model = ModelConfig(name="torch", preset=name, vocab_size=vocab)
    model.validate()
    assert weight_count(model) == weights
    assert weight_bytes(model, "cuda") == 2 * weights


@pytest.mark.parametrize("model", ["torch", "emulated"])
def test_a_max_model_len_above_the_presets_published_context_is_refused(model, tmp_path,
                                                                        capsys):
    """As vLLM's ModelConfig refuses it (``_get_and_verify_max_len``): exit 2, one line,
    before any case runs; the preset's own limit is taken, and the test shapes have
    none."""
    from ipc_bench.cli import main

    args = ["--scenario", "decode-steady", "--model", model, "--num-running", "2",
            "--steps", "5", "--policies", "cached", "--codecs", "msgpack"]
    assert main(args + ["--model-preset", "qwen2.5-0.5b", "--max-model-len", "32769",
                        "--output", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err == (
        "bench.py: error: max_model_len 32,769 is above qwen2.5-0.5b's "
        "max_position_embeddings (32,768, its config.json), which vLLM refuses too: set "
        "--max-model-len 32,768 or lower\n")
    assert not (tmp_path / "r").exists()
    sched = SchedulerConfig(max_num_seqs=2, max_num_batched_tokens=64, max_model_len=32_768,
                            num_blocks=64)
    check_max_position(sched, ModelConfig(name=model, preset="qwen2.5-0.5b"))
    long = msgspec.structs.replace(sched, max_model_len=MAX_MODEL_LEN)
    check_max_position(long, ModelConfig(name=model, preset="tiny"))
    check_max_position(long, ModelConfig(name="null", preset="qwen2.5-0.5b"))
    with pytest.raises(ConfigError, match=r"^max_model_len 1,048,576 is above llama-3\.1-8b's "
                       r"max_position_embeddings \(131,072,"):
        check_max_position(long, ModelConfig(name=model, preset="llama-3.1-8b"))


def test_a_presets_vocabulary_sets_the_sampled_id_range():
    """The rule: --vocab-size when given (refused if it contradicts a public preset),
    else the preset's published vocabulary for the torch and emulated models, else
    128,256; the prompts use the same vocabulary."""
    def model(**kw):
        return ScenarioOptions(**kw).model_config()

    assert model(model="torch", model_preset="qwen2.5-0.5b").vocab_size == 151_936
    assert model(model="emulated", model_preset="llama-3.1-8b").vocab_size == 128_256
    assert model(model="torch", model_preset="tiny").vocab_size == 128_256
    assert model(model="torch", model_preset="tiny", vocab_size=5000).vocab_size == 5000
    # the null and fixed-step models ignore the preset
    assert model(model_preset="qwen2.5-0.5b").vocab_size == 128_256
    from ipc_bench.scenarios import decode_steady

    case = decode_steady.cases(
        ScenarioOptions(model="emulated", model_preset="qwen2.5-0.5b", num_running=[2]))[0]
    prompts = [r.prompt_token_ids for r in case.make_workload().arrivals(0)]
    assert max(max(p) for p in prompts) >= 128_256  # ids past Llama's vocabulary occur
    assert max(max(p) for p in prompts) < 151_936


def test_tied_embeddings_share_the_lm_head(monkeypatch):
    """A tied preset's LM head is the embedding's transpose (one tensor), and the paged
    forward still matches the full-sequence reference."""
    monkeypatch.setitem(TORCH_PRESETS, "tied-test", TorchPreset(
        2, 64, 4, 2, 16, 128, vocab_size=500, tie_word_embeddings=True, rope_theta=1e6,
        rms_norm_eps=1e-6))
    sched = SchedulerConfig(max_num_seqs=4, max_model_len=128, block_size=4, num_blocks=80)
    model = TorchModel(ModelConfig(name="torch", preset="tied-test", vocab_size=500, seed=3,
                                   device="cpu"), sched)
    assert model.lm_head.shape == (64, 500)
    assert model.lm_head.data_ptr() == model.embed.data_ptr()
    assert model.rms_eps == 1e-6
    assert model.step_columns() == {}  # CPU: no CUDA event columns at all
    rng = np.random.default_rng(1)
    seqs = [rng.integers(0, 500, 40).tolist(), rng.integers(0, 500, 23).tolist()]
    table = np.zeros((2, 32), np.int32)
    table[0, :10], table[1, :6] = np.arange(10), np.arange(10, 16)
    assert _paged_vs_reference(model, table, seqs, _STEPS) < 1e-4


# ---------------------------------------------------------------------- device probe
@pytest.mark.parametrize("probe,message", [
    ("import os, signal, sys\nsys.stderr.write('loading\\n'); sys.stderr.flush()\n"
     "os.kill(os.getpid(), signal.SIGKILL)\n",
     "the process probing torch's device (python -c 'import torch; "
     "torch.cuda.is_available() ...') was killed by SIGKILL; its last stderr line: loading"),
    ("import sys\nsys.stderr.write('first\\nCUDA driver error\\n')\nsys.exit(5)\n",
     "the process probing torch's device (python -c 'import torch; "
     "torch.cuda.is_available() ...') exited with code 5; its last stderr line: CUDA "
     "driver error"),
    ("import sys\nsys.exit(3)\n",
     "the process probing torch's device (python -c 'import torch; "
     "torch.cuda.is_available() ...') exited with code 3; it wrote no stderr"),
])
def test_a_probe_that_dies_says_how_not_that_torch_is_missing(probe, message, monkeypatch):
    from ipc_bench.engine import models

    monkeypatch.setattr(models, "_PROBE", probe)
    with pytest.raises(ConfigError) as info:
        models.probe_torch_device("auto")
    assert str(info.value) == message


def test_a_probe_that_cannot_import_torch_says_torch_is_needed(monkeypatch):
    from ipc_bench.engine import models

    monkeypatch.setattr(models, "_PROBE", "import sys\nsys.modules['torch'] = None\n"
                        + models._PROBE)
    with pytest.raises(ConfigError) as info:
        models.probe_torch_device("auto")
    assert str(info.value) == ("the torch model needs torch: importing it failed: "
                               "ModuleNotFoundError: import of torch halted; None in "
                               "sys.modules")



def test_release_model_hands_a_cuda_models_memory_back_once_it_is_freed():
    """The single-process case's model lives in the scheduler process: after the case
    its memory must be freed (a model with decode graphs is a cycle) and returned to
    the device before the next case's runner checks the free memory."""
    import gc
    import types
    import weakref

    from ipc_bench.engine.models import release_model

    seen = []
    torch = types.SimpleNamespace(cuda=types.SimpleNamespace(
        empty_cache=lambda: seen.append(("empty_cache", model_ref() is None))))
    class Model:  # a TorchModel's attributes release_model reads
        torch_device = types.SimpleNamespace(type="cuda")

    model = Model()
    model.torch = torch
    model.graphs = types.SimpleNamespace(model=model)  # DecodeGraphs.model: a cycle
    model_ref = weakref.ref(model)
    runner = types.SimpleNamespace(model=model)
    del model
    gc.disable()
    try:
        release_model(runner)
    finally:
        gc.enable()
    assert (runner.model, seen) == (None, [("empty_cache", True)])
    cpu = types.SimpleNamespace(model=types.SimpleNamespace(
        torch=torch, torch_device=types.SimpleNamespace(type="cpu")))
    release_model(cpu)
    assert (cpu.model, len(seen)) == (None, 1)  # nothing to hand back on CPU
