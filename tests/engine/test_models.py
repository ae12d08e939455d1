"""Runner models: fixed-step and torch (ipc_bench.engine.models), their CLI options and the
step-time scenario's report. The torch tests use the ``cpu`` and ``tiny`` presets on
CPU (float32), small workloads, and chunked prefill."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ipc_bench.harness.spec import CaseSpec
from ipc_bench.cli import main as cli_main
from ipc_bench.wire.codecs import messages_of, model_runner_output_codec, scheduler_output_codec
from ipc_bench.engine.config import (
    ConfigError,
    ModelConfig,
    SchedulerConfig,
    check_kv_cache_memory,
    kv_cache_bytes,
)
from ipc_bench.engine.models import FixedStepModel, TorchModel, make_model
from ipc_bench.engine.model_runner import ModelRunner
from ipc_bench.harness.spec import CaseError
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


def test_fixed_step_busy_waits_at_least_its_step_time():
    cfg = SchedulerConfig(max_num_seqs=2, max_num_batched_tokens=64, max_model_len=64)
    runner = ModelRunner(cfg, ModelConfig(name="fixed-step", step_time_ms=3.0), "cached")
    assert isinstance(runner.model, FixedStepModel)
    assert runner.model.step_ns == 3_000_000
    sched = Scheduler(cfg, "cached")
    sched.add_request("a", 0, [5, 6, 7], 4)
    so = sched.build_scheduler_output(sched.schedule())
    runner.update_states(so)
    inputs = runner.prepare_inputs(so)
    t0 = time.perf_counter_ns()
    runner.sample(inputs)
    assert time.perf_counter_ns() - t0 >= 3_000_000


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


def test_torch_digests_equal_across_policies_and_codecs_in_process():
    cfg = ModelConfig(name="torch", preset="cpu", seed=1, device="cpu")
    results = {(policy, codec): drive(SCHED, cfg, policy, codec, 50)
               for policy in ("send", "cached") for codec in ("msgpack", "pickle")}
    digests = {d for d, _, _ in results.values()}
    assert len(digests) == 1
    assert all(partial > 0 for _, partial, _ in results.values())  # chunked prefill ran
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


def test_torch_digests_equal_through_run_case():
    cfg = ModelConfig(name="torch", preset="cpu", seed=1, device="cpu")
    in_process = drive(SCHED, cfg, "cached", "msgpack", 50)[0]
    digests = set()
    for policy in ("send", "cached"):
        for codec in ("msgpack", "pickle"):
            spec = CaseSpec(scenario="test", labels={"w": 1}, policy=policy, codec=codec,
                            scheduler=SCHED, model=cfg, make_workload=_workload,
                            warmup_steps=5, max_steps=50, floor=False)
            result = run_case(spec)
            assert result.runner_device == "cpu"
            # some step scheduled a prompt chunk that sampled nothing (partial prefill)
            assert any(row[7] < row[4] for row in result.sched_rows)
            digests.add(result.token_digest)
    assert digests == {in_process}


def test_runner_refuses_a_kv_cache_too_large_for_the_device():
    big = SchedulerConfig(max_num_seqs=2, max_model_len=256, num_blocks=2_000_000)
    spec = CaseSpec(scenario="test", labels={}, policy="send", codec="msgpack", scheduler=big,
                    model=ModelConfig(name="torch", preset="cpu", device="cpu"),
                    make_workload=_workload, warmup_steps=0, max_steps=3, floor=False)
    with pytest.raises(CaseError, match=r"^runner refused the handshake: the torch model's "
                                        r"KV cache .* lower --num-blocks"):
        run_case(spec)


def test_null_model_does_not_import_torch():
    code = ("import sys; from ipc_bench.engine.config import *; from ipc_bench.engine.model_runner import "
            "ModelRunner; ModelRunner(SchedulerConfig(), ModelConfig(name='fixed-step'), 'send');"
            " ModelRunner(SchedulerConfig(), ModelConfig(), 'send');"
            " import ipc_bench.cli, ipc_bench.harness.supervisor, ipc_bench.scenarios.step_time;"
            " print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------------- validation


@pytest.mark.parametrize("kwargs, message", [
    (dict(name="gpt"), "unknown model 'gpt'; choose from null, fixed-step, torch"),
    (dict(step_time_ms=0.0), "step_time_ms (--step-time-ms) must be in (0, 10000], got 0.0"),
    (dict(preset="huge"), "unknown model preset 'huge' (--model-preset); choose from tiny, "
                          "cpu, gpu-small, gpu-1b"),
    (dict(num_threads=0), "num_threads (--torch-threads) must be in [1, 1024], got 0"),
    (dict(device="tpu"), "unknown device 'tpu'; choose from auto, cpu, cuda"),
])
def test_model_config_errors(kwargs, message):
    with pytest.raises(ConfigError) as exc:
        ModelConfig(**kwargs).validate()
    assert str(exc.value) == message


def test_kv_cache_memory_check():
    model = ModelConfig(name="torch", preset="cpu")
    # cpu preset: 2 layers x K/V x 2 kv heads x 64 dims x 4 bytes = 2 KiB per token
    assert kv_cache_bytes(SchedulerConfig(num_blocks=1), model, "cpu") == 16 * 2048
    assert kv_cache_bytes(SchedulerConfig(num_blocks=1), model, "cuda") == 16 * 1024
    check_kv_cache_memory(SchedulerConfig(num_blocks=131072), model, "cpu")  # 4.0 GiB: ok
    with pytest.raises(ConfigError) as exc:
        check_kv_cache_memory(SchedulerConfig(num_blocks=131073), model, "cpu")
    assert str(exc.value) == (
        "the torch model's KV cache (preset cpu, num_blocks 131073 x block_size 16) needs "
        "4.0 GiB on cpu, over the 4.0 GiB limit: lower --num-blocks (at most 131072) or use "
        "a smaller --model-preset")
    with pytest.raises(ConfigError, match="needs 32.0 GiB on cuda, over the 25.6 GiB limit"):
        check_kv_cache_memory(SchedulerConfig(num_blocks=2**21), model, "cuda", 32 * 2**30)
    # other models allocate nothing
    check_kv_cache_memory(SchedulerConfig(num_blocks=2**30), ModelConfig(), "cpu")


@pytest.mark.parametrize("args, message", [
    (["--scenario", "decode-steady", "--model", "torch", "--device", "cpu",
      "--num-blocks", "1000000"],
     "bench.py: error: the torch model's KV cache (preset cpu, num_blocks 1000000 x "
     "block_size 16) needs 30.5 GiB on cpu, over the 4.0 GiB limit: lower --num-blocks "
     "(at most 131072) or use a smaller --model-preset"),
    (["--scenario", "decode-steady", "--model", "fixed-step", "--step-time-ms", "2,5"],
     "bench.py: error: --step-time-ms takes one value here (a list only in the step-time "
     "scenario)"),
    (["--scenario", "step-time", "--model", "torch"],
     "bench.py: error: scenario step-time uses the fixed-step model; drop --model torch"),
    (["--scenario", "decode-steady", "--step-time-ms", "0"],
     "bench.py: error: argument --step-time-ms: expected positive numbers, got '0'"),
    (["--scenario", "decode-steady", "--model-preset", "big"],
     "bench.py: error: argument --model-preset: invalid choice: 'big' (choose from "),
])
def test_cli_rejects_bad_model_settings(args, message, capsys, tmp_path):
    assert cli_main(args + ["--output", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    # argparse quotes the choices or not depending on the Python version
    assert err == message or (message.endswith("(choose from ") and err.startswith(message))
    assert not (tmp_path / "run").exists()


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
    assert send16["send_cost_share_of_step"] == pytest.approx(0.003)
    assert send256["send_cost_s2r_ns"] == 40_000
    assert send256["send_cost_s2r_share_of_step"] == pytest.approx(0.02)
    assert "send_cost_step_ns" not in summaries[1]
    assert "      2  256  msgpack          40.0       2.00         40.0       2.00" in text
    assert ("  2 ms, msgpack: whole step ~115 (interpolated); s2r ~115 (interpolated)"
            in text)


def test_step_time_runs_end_to_end(tmp_path, capsys):
    out = tmp_path / "run"
    assert cli_main(["--scenario", "step-time", "--step-time-ms", "1", "--num-running", "2",
                     "--steps", "5", "--warmup-steps", "2", "--codecs", "msgpack",
                     "--no-floor", "--quiet", "--output", str(out)]) == 0
    text = capsys.readouterr().out
    assert "send's cost per step" in text
    assert "1 ms, msgpack: whole step" in text
    cases = json.loads((out / "summary.json").read_text())["cases"]
    assert [c["model"] for c in cases] == ["fixed-step", "fixed-step"]
    assert "send_cost_s2r_ns" in cases[0] and "send_cost_s2r_ns" not in cases[1]
    assert cases[0]["token_digest"] == cases[1]["token_digest"]


# ---------------------------------------------------------------------- GPU check


def test_gpu_check_without_cuda_runs_the_cpu_preset():
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA present: the check would run the GPU preset")
    out = subprocess.run([sys.executable, "scripts/gpu_check.py"], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == ("gpu_check: no CUDA device (torch.cuda.is_available() is False): "
                        "running the cpu preset briefly instead")
    table = lines[lines.index("    B  policy   out tok/s   step ms  device") + 1:]
    assert [line.split()[:2] for line in table] == [["1", "send"], ["1", "cached"],
                                                   ["4", "send"], ["4", "cached"]]
    assert all(line.split()[-1] == "cpu" for line in table)
