"""A runner that refuses a model whose weights + KV cache do not fit its device, where no
--num-blocks serves the run's steady workload, names the most --num-running that runs
with the blocks that fit given, found as the scheduler's own check finds it
(``scenario.steady_running_that_fits``, a bisection over the run's checks): the
scheduler sends the steady case that needs the most blocks in the handshake
(``RunnerConfig.steady_shape``), where the runner named the blocks that fit over the
blocks one request of the batch asked holds, "--num-running 396 runs, a few more may",
while the scheduler named 487 for the same question."""

from __future__ import annotations

from remote_launch import refused_by_hand
from ipc_bench.cli import main as cli_main
from ipc_bench.cli.run import _give_runners_the_need, _memory_need
from ipc_bench.engine.config import ModelConfig, ModelMemoryError, check_model_memory
from ipc_bench.engine.roofline import EMULATED_GPU, load_gpu_figures
from ipc_bench.harness.runner_loop import memory_refusal
from ipc_bench.harness.scenario import (ScenarioOptions, steady_case,
                                        steady_running_that_fits, steady_shape)
from ipc_bench.wire.handshake import RunnerConfig, decode_runner_config, encode_config

#: llama-3.1-8b's 1,024 running on the emulated H200 (``python bench.py --scenario
#: decode-steady --model emulated --model-preset llama-3.1-8b --num-running 1024``)
EMULATED = ("llama-3.1-8b needs 15.0 GiB of weights + 512.5 GiB of KV cache (num_blocks "
            "262,400 x block_size 16), 527.5 GiB in all, on an emulated NVIDIA H200; it has "
            "140.4 GiB, of which the model may take 90 % (126.4 GiB): no --num-blocks fits "
            "this workload on this device: it needs 147,456 blocks (the most this case's "
            "requests hold in its steps), and at most 57,038 fit beside the weights: lower "
            "--num-running (at most 221 where it sizes the KV cache; at most 487 with "
            "--num-blocks 57,038 given) or use a smaller --model-preset")


def _runner_config(case) -> RunnerConfig:
    """The case's ``RunnerConfig`` with what ``cli.run`` gives its runner, through the
    handshake's encoding."""
    _give_runners_the_need([case], _memory_need([case]))
    config = RunnerConfig(scheduler=case.scheduler, model=case.model, policy="send",
                          codec="msgpack", warmup_steps=0, peer_timeout_s=10.0,
                          s2r_endpoint="ipc:///x/s2r", r2s_endpoint="ipc:///x/r2s",
                          **case.runner_need)
    assert decode_runner_config(encode_config(config)) == config
    return config


def test_the_runner_names_the_figure_the_schedulers_check_names(tmp_path, capsys):
    model = ModelConfig(name="emulated", preset="llama-3.1-8b")
    case = steady_case(ScenarioOptions(), "decode-steady", {"num_running": 1024}, "send",
                       "msgpack", 0, model=model, steps=1000, warmup=100)
    config = _runner_config(case)
    assert config.steady_shape == steady_shape(case)
    gpu = load_gpu_figures(EMULATED_GPU)
    try:
        check_model_memory(case.scheduler, model, EMULATED_GPU, gpu.memory_bytes,
                           f"an emulated {gpu.name}")
    except ModelMemoryError as exc:
        refused = exc
    assert str(memory_refusal(refused, config)) == EMULATED
    assert steady_running_that_fits(case, 57_038) == (487, True)
    # the scheduler's check, before the run
    assert cli_main(["--scenario", "decode-steady", "--model", "emulated", "--model-preset",
                     "llama-3.1-8b", "--num-running", "1024", "--codecs", "msgpack",
                     "--no-single-process", "--no-floor", "--quiet",
                     "--output", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.strip() == "bench.py: error: " + EMULATED


def test_a_runner_on_a_smaller_device_names_the_most_for_its_blocks():
    # llama-3.1-8b in bf16 with 40 GB free: 9,507 blocks fit, where 104 of the 1,024
    # run (the quotient 9,507 // 144 named 66)
    model = ModelConfig(name="torch", preset="llama-3.1-8b")
    case = steady_case(ScenarioOptions(), "decode-steady", {"num_running": 1024}, "send",
                       "msgpack", 0, model=model, steps=1000, warmup=100)
    try:
        check_model_memory(case.scheduler, model, "cuda", 40 * 10**9)
    except ModelMemoryError as exc:
        refused = exc
    assert str(memory_refusal(refused, _runner_config(case))).endswith(
        "and at most 9,507 fit beside the weights: lower --num-running (at most 36 where "
        "it sizes the KV cache; at most 104 with --num-blocks 9,507 given) or use a "
        "smaller --model-preset")
    assert steady_running_that_fits(case, 9_507) == (104, True)


#: qwen2.5-0.5b's 1,024 running on the CPU: 11,358 blocks fit beside its float32 weights
QWEN = ("qwen2.5-0.5b needs 1.8 GiB of weights + 96.1 GiB of KV cache (num_blocks 262,400 x "
        "block_size 16), 97.9 GiB in all, on cpu; the CPU limit is 6.0 GiB: no --num-blocks "
        "fits this workload on this device: it needs 147,456 blocks (the most this case's "
        "requests hold in its steps), and at most 11,358 fit beside the weights: lower "
        "--num-running (at most 43 where it sizes the KV cache; at most 123 with "
        "--num-blocks 11,358 given) or use a smaller --model-preset")
RUN = ["--scenario", "decode-steady", "--num-running", "1024", "--model", "torch",
       "--model-preset", "qwen2.5-0.5b", "--policies", "send", "--codecs", "msgpack",
       "--no-single-process", "--no-floor", "--quiet"]


def test_a_runner_started_by_hand_and_the_scheduler_name_the_same_figure(tmp_path, capsys):
    """The scheduler does not check a model that a runner started by hand runs: that
    runner refuses it, naming the figure the scheduler's own check names when the model
    runs on its host."""
    refused_by_hand(RUN, tmp_path / "run", "num_running=1024/send/msgpack#0", QWEN)
    assert cli_main(RUN + ["--output", str(tmp_path / "here")]) == 2
    assert capsys.readouterr().err.strip() == "bench.py: error: " + QWEN
