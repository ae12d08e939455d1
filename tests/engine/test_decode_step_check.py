"""scripts/decode_step_check.py on CPU: every configuration it can run here gives the
first one's tokens at every batch size, padded or not, and bad input exits 2; and
scripts/gpu_check.py's CPU path, whose stage 0 it is (every stage, shrunk)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ipc_bench.engine.config import ConfigError
from script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("decode_step_check",
                                               ROOT / "scripts" / "decode_step_check.py")
dsc = importlib.util.module_from_spec(_spec)
sys.modules["decode_step_check"] = dsc
_spec.loader.exec_module(dsc)
gpu_check = load_script("gpu_check")


def test_configurations_parse_and_refuse_graphs_on_gather():
    assert dsc.parse_configs("gather, flex+graphs,varlen") == [
        ("gather", False), ("flex", True), ("varlen", False)]
    with pytest.raises(ConfigError, match="^gather\\+graphs: the gather backend's shapes "
                       "change every step, so it cannot be captured$"):
        dsc.parse_configs("gather+graphs")
    with pytest.raises(ConfigError, match="^unknown configuration 'paged': use BACKEND or "
                       "BACKEND\\+graphs, BACKEND one of gather, flex, varlen$"):
        dsc.parse_configs("paged")


@pytest.mark.slow  # compiles flex attention (TorchInductor, CPU)
def test_cpu_run_gives_equal_tokens_across_backends_and_padding(tmp_path, capsys):
    out = tmp_path / "rows.json"
    # gpu_check's stage 0 on CPU (the test after this one) runs these sizes and contexts
    # too: the session's inductor cache then has this run's flex kernels (about 15 s to
    # compile)
    code = dsc.main(["--device", "cpu", "--num-running", "2", "--steps", "3", "--warmup", "1",
                     "--configs", "gather,flex,flex+graphs,varlen", "--json", str(out)])
    text = capsys.readouterr().out
    assert code == 0
    assert "  varlen: skipped (varlen needs CUDA: no CPU kernel)" in text
    rows = json.loads(out.read_text())["rows"]
    assert [(r["config"], r["num_running"], r["bucket"]) for r in rows] == [
        ("gather", 2, 2), ("gather", 3, 3), ("flex", 2, 2), ("flex", 3, 4),
        ("flex+graphs", 2, 2), ("flex+graphs", 3, 4)]
    assert rows[-1]["device"] == "cpu (attention flex; graphs replayed eagerly)"
    table = [ln.split() for ln in text.splitlines() if ln.startswith(("gather ", "flex"))]
    assert len(table) == 6 and all(line[-1] == "100.0%" for line in table)
    assert all(r["roofline_ns"] > 0 and r["x_roofline"] > 0 and r["gpu_busy_ns"] is None
               for r in rows)


# scripts/gpu_check.py's CPU path. Its stage 0 is this script at the sizes and contexts of
# the test above, whose flex kernels the session's inductor cache then holds: the test is
# here, after it, and not in tests/cli/test_scripts.py, which another worker may run at
# the same time (--dist loadfile) and compile them again (about 12 s of CPU).


#: The CPU path's budget in the test: twice the default, so that a busy machine (stage
#: 0's flex compile took 138 s of its 150 s limit at a load of 6-9; about 54 s quiet)
#: does not cut a stage; the stages' own limits stretch with it (``limit_scale``).
CPU_CHECK_BUDGET_S = 2 * gpu_check.BUDGET_S


@pytest.mark.slow
@pytest.mark.timeout(CPU_CHECK_BUDGET_S + 240)  # 66 s to 180 s measured; its budget, then ours
def test_gpu_check_without_cuda_runs_every_stage_shrunk(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA present: the check would run the GPU stages")
    out = subprocess.run([sys.executable, "scripts/gpu_check.py", "--output",
                          str(tmp_path), "--budget-s", f"{CPU_CHECK_BUDGET_S:g}"],
                         cwd=ROOT, capture_output=True, text=True,
                         timeout=CPU_CHECK_BUDGET_S + 120)  # its own budget, then ours
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == ("gpu_check: no CUDA device (torch.cuda.is_available() is False): "
                        "running the stages shrunk on the CPU (tiny and cpu presets) instead")
    ends = [ln for ln in lines if "] passed (" in ln or "] SKIPPED" in ln]
    names = ["smoke", "tiny-preset", "aa", "cpu-preset", "azure-conv", "async"]
    assert [ln.split("[")[1].split("]")[0] for ln in ends] == names
    trace = next((str(t) for t in gpu_check.TRACE_CANDIDATES if t.is_file()), None)
    stages = [s for s in gpu_check.build_stages(False, trace) if not s.skip]
    assert all(f"gpu_check: [{s.name}] {s.stand_in}" in lines for s in stages)
    assert lines.count(stages[0].note) == 1
    assert lines[-1].startswith(f"gpu_check: results in {tmp_path} (")
    assert sum(ln.startswith("workload ") and "GPU busy ms" in ln for ln in lines) == \
        len(stages)
    assert "gpu_check: [decode-step] passed; later stages use --attention gather" in lines
    step_rows = json.loads((tmp_path / "0-decode-step.json").read_text())["rows"]
    assert [r["config"] for r in step_rows] == ["gather"] * 2 + ["flex"] * 2 + ["flex+graphs"] * 2
    runs = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    # named after what ran: 2-tiny-preset, 3-cpu-preset
    assert runs == [f"{i}-{s.name}" for i, s in
                    enumerate(gpu_check.build_stages(False, trace), 1) if not s.skip]
    assert sorted(p.name for p in tmp_path.glob("*.log")) == sorted(
        ["0-decode-step.log"] + [f"{run}.log" for run in runs])
    assert (tmp_path / "1-smoke.log").read_text().endswith(f"results: {tmp_path / '1-smoke'}\n")
    for run in runs:
        cases = json.loads((tmp_path / run / "summary.json").read_text())["cases"]
        assert all(c["complete"] and c["runner_device"].startswith("cpu (attention gather")
                   for c in cases)
        assert all("gpu_busy_ns_per_step" not in c for c in cases)  # no CUDA: absent
    smoke = json.loads((tmp_path / "1-smoke" / "summary.json").read_text())["cases"]
    assert [(c["policy"], c["codec"]) for c in smoke] == [("send", "msgpack"),
                                                          ("cached", "msgpack")]
    assert any(ln.startswith("  send's share [num_running=4] msgpack: send's "
                             "build+encode+decode over cached's: ") for ln in lines)
    # Stage 6 on the CPU (tiny preset, 4 running, 8 counted steps): sync and async
    # cached, both tokens/s, the gap and the mode the summary names.
    line = next(ln for ln in lines if ln.startswith("  async ["))
    assert re.match(r"  async \[num_running=4\]: tok/s sync [\d,]+ -> async [\d,]+ = x[\d.]+; "
                    r"runner gap p50 sync [\d,]+ us \([\d.]+%\) -> async [\d,]+ us "
                    r"\([\d.]+%\); GPU idle ms/step sync - -> async -; launched ahead \d+%; "
                    r"mode: device-input path \(CPU: process overlap only\)$", line), line
    cases = json.loads((tmp_path / "6-async" / "summary.json").read_text())["cases"]
    assert sorted(c["arm"] for c in cases) == ["cached", "cached+async"]


def test_backends_that_cannot_run_on_this_gpu_are_skipped_not_failed(monkeypatch, capsys):
    """On CUDA, a varlen kernel that refuses the run's 16-token blocks (PyTorch's
    FlashAttention-2) skips the varlen configurations with the probe's line, and flex
    without Triton's toolchain the flex ones: not a failure, so gpu_check's stage 0 passes
    on the others (GPU-only path: the probes are faked here, and nothing else is asked
    for, so nothing runs on the device)."""
    import torch

    from ipc_bench.engine import paged_attention
    from ipc_bench.engine.config import SchedulerConfig

    probed = []
    line = "--attention varlen: this torch's kernel refuses ... (words): use flex or gather"

    def refusing(torch_, device, block_size, dtype):
        probed.append((device, block_size, dtype))
        return line

    no_cc = "--attention flex on CUDA compiles Triton kernels, which need a C compiler ..."
    monkeypatch.setattr(paged_attention, "varlen_unsupported", lambda: None)  # paged KV, whatever torch runs this
    monkeypatch.setattr(paged_attention, "varlen_kernel_problem", refusing)
    monkeypatch.setattr(paged_attention, "flex_unsupported",
                        lambda device, block_size: no_cc if device == "cuda" else None)
    sched = SchedulerConfig(max_num_seqs=2, max_model_len=64, block_size=16, num_blocks=8)
    rows, failed = dsc._run_configs(torch, "llama-3.2-1b", "cuda",
                                    [("varlen", False), ("varlen", True), ("flex", True)],
                                    [2], sched, None, 8, 16, None)
    assert (rows, failed) == ([], 0)
    assert probed == [("cuda", 16, torch.bfloat16)]
    assert capsys.readouterr().out == (f"  varlen: skipped ({line})\n"
                                       f"  varlen+graphs: skipped ({line})\n"
                                       f"  flex+graphs: skipped ({no_cc})\n")


def test_a_run_whose_every_configuration_was_skipped_fails(monkeypatch, capsys):
    from ipc_bench.engine import paged_attention

    monkeypatch.setattr(paged_attention, "flex_unsupported",
                        lambda device, block_size: "no toolchain here")
    assert dsc.main(["--device", "cpu", "--num-running", "2", "--steps", "1", "--warmup",
                     "0", "--configs", "flex,flex+graphs"]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines()[1:] == ["  flex: skipped (no toolchain here)",
                                    "  flex+graphs: skipped (no toolchain here)"]
    assert err == "decode_step_check.py: error: every configuration was skipped: nothing measured\n"


def test_help_says_each_size_also_runs_one_row_larger(capsys):
    """``--num-running`` runs B + 1 beside each B: the help says so, and why."""
    with pytest.raises(SystemExit) as exit_:
        dsc.build_parser().parse_args(["--help"])
    assert exit_.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert ("--num-running B[,B...] batch sizes, e.g. 16,256 (default 16,256 on CUDA, 4,8 "
            "on CPU); each B also runs at B + 1 rows, which flex and varlen pad to the next "
            "bucket (the powers of two: 2B where B is one; gather does not pad), so the two "
            "rows show what one row past a bucket costs; the KV cache is sized for the "
            "largest B + 1 --configs") in text


def test_bad_sizes_exit_2(capsys):
    assert dsc.main(["--device", "cpu", "--num-running", "0"]) == 2
    assert capsys.readouterr() == (
        "", "decode_step_check.py: error: argument --num-running: must be at least 1, got 0\n")


def _steady(top: int, max_len: int):
    """The cache decode_step_check sizes for ``top`` rows (its largest --num-running
    plus one) of ``max_len`` tokens."""
    return dsc.SchedulerConfig(max_num_seqs=top, max_model_len=max_len,
                               block_size=dsc.BLOCK_SIZE,
                               num_blocks=top * -(-max_len // dsc.BLOCK_SIZE))


def test_memory_refusal_advises_this_scripts_options_from_the_figures():
    """The Llama-3.2-1B shape at --num-running 16,256 (257 rows) and --context-max 2000
    (+ 36 tokens of warm-up and counted steps) on a GPU with 8 GiB free: 10,031 blocks
    of 128 KiB fit beside 2.3 GiB of weights, so 77 running (78 rows of 128 blocks) or a
    --context-max of 588 (257 rows of 39 blocks); each bound fits and one more does
    not. Without a block that fits beside the weights, the advice is the preset."""
    model = dsc.ModelConfig(name="torch", preset="llama-3.2-1b", device="cuda")
    free = 8 * 2**30
    assert dsc.memory_refusal(_steady(257, 2036), model, "cuda", free, 2000, 36, 300) == (
        "llama-3.2-1b needs 2.3 GiB of weights + 16.1 GiB of KV cache (num_blocks 32,896 x "
        "block_size 16), 18.4 GiB in all, on cuda; it has 8.0 GiB free, of which the model "
        "may take 90 % (7.2 GiB): lower --num-running (at most 77 at this --context-max) "
        "or --context-max (at most 588 at this --num-running), or use a smaller --preset")
    assert dsc.memory_refusal(_steady(78, 2036), model, "cuda", free, 2000, 36, 300) is None
    assert dsc.memory_refusal(_steady(79, 2036), model, "cuda", free, 2000, 36, 300)
    assert dsc.memory_refusal(_steady(257, 624), model, "cuda", free, 588, 36, 300) is None
    assert dsc.memory_refusal(_steady(257, 625), model, "cuda", free, 589, 36, 300)
    # 4.5 GiB allowed: 4,501 blocks, 17 per row at 257 rows: 272 tokens, below
    # --context-min 300, so only --num-running is advised
    assert dsc.memory_refusal(_steady(257, 2036), model, "cuda", 5 * 2**30, 2000, 36,
                              300).endswith(
        "(4.5 GiB): lower --num-running (at most 34 at this --context-max), or use a "
        "smaller --preset")
    big = dsc.ModelConfig(name="torch", preset="llama-3.1-8b", device="cpu")
    assert dsc.memory_refusal(_steady(9, 136), big, "cpu", None, 100, 36, 30) == (
        "llama-3.1-8b needs 29.9 GiB of weights + 0.3 GiB of KV cache (num_blocks 81 x "
        "block_size 16), 30.2 GiB in all, on cpu; the CPU limit is 6.0 GiB: the weights "
        "alone do not fit: use a smaller --preset")


def test_memory_refusal_does_not_depend_on_the_engines_words(monkeypatch, capsys):
    """The engine decides that the model does not fit and gives its figures
    (``ModelMemoryError``); the advice is made from the blocks that fit, whatever the
    engine's advice says (here its advice for a steady case of bench.py, which names
    --num-blocks and --model-preset)."""
    from ipc_bench.engine.config import ModelMemoryError

    def refuse(*args, **kwargs):
        raise ModelMemoryError("tiny needs X; the CPU limit is 6.0 GiB",
                               "give --num-blocks from 10 to 20, or --num-running 3 or "
                               "fewer (it sizes the KV cache here), or a smaller "
                               "--model-preset", blocks_that_fit=130)

    monkeypatch.setattr(dsc, "check_model_memory", refuse)
    assert dsc.main(["--device", "cpu", "--num-running", "4", "--context-max", "100"]) == 2
    # 130 blocks, rows of ceil(136 / 16) = 9 blocks: 14 rows, so B + 1 <= 14; 5 rows of
    # 26 blocks: 416 tokens, less the 36 of warm-up and counted steps
    assert capsys.readouterr() == ("", (
        "decode_step_check.py: error: tiny needs X; the CPU limit is 6.0 GiB: lower "
        "--num-running (at most 13 at this --context-max) or --context-max (at most 380 "
        "at this --num-running), or use a smaller --preset\n"))


def test_memory_is_checked_for_the_model_the_run_builds(monkeypatch, capsys):
    """The check weighs the vocabulary the run's model has (the preset's published one,
    151,936 for Qwen2.5-0.5B; 32,000 for tiny), not the harness's default 128,256,
    which would understate Qwen's weights by 0.08 GiB on CPU; --context-max 20,156 fits
    (9 rows: --num-running 4,8 and 5, 9: 11,358 blocks fit beside the weights, 1,262 per
    row), 20,157 does not."""
    seen = []

    def refusal(sched, model, device, *rest):
        seen.append((model.preset, model.vocab_size, device, sched.max_num_seqs,
                     sched.num_blocks))
        return "refused"

    monkeypatch.setattr(dsc, "memory_refusal", refusal)
    for preset in ("qwen2.5-0.5b", "tiny"):
        assert dsc.main(["--device", "cpu", "--preset", preset, "--num-running", "4",
                         "--context-max", "100"]) == 2
    assert seen == [("qwen2.5-0.5b", 151_936, "cpu", 5, 45), ("tiny", 32_000, "cpu", 5, 45)]
    assert capsys.readouterr().err == "decode_step_check.py: error: refused\n" * 2
    monkeypatch.undo()
    qwen = dsc.model_config("qwen2.5-0.5b", "cpu")
    assert dsc.memory_refusal(_steady(9, 20_192), qwen, "cpu", None, 20_156, 36, 30) is None
    assert dsc.memory_refusal(_steady(9, 20_193), qwen, "cpu", None, 20_157, 36, 30) == (
        "qwen2.5-0.5b needs 1.8 GiB of weights + 4.2 GiB of KV cache (num_blocks 11,367 x "
        "block_size 16), 6.003 GiB in all, on cpu; the CPU limit is 6.000 GiB: lower "
        "--num-running (at most 7 at this --context-max) or --context-max (at most 20,156 "
        "at this --num-running), or use a smaller --preset")
    # at most 7 running: 8 rows of 1,263 blocks fit in the 11,358 beside the weights
    assert dsc.memory_refusal(_steady(8, 20_193), qwen, "cpu", None, 20_157, 36, 30) is None


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_interrupted_is_one_line(sig):
    """Ctrl-C (or SIGTERM, as gpu_check passes it on) while the steps run: one line on
    stderr, exit 130 / 143, no traceback."""
    import signal
    import subprocess
    import time

    proc = subprocess.Popen([sys.executable, "scripts/decode_step_check.py", "--device", "cpu",
                             "--configs", "gather", "--num-running", "2", "--steps", "1000000"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().startswith("device ")  # the steps are about to run
    time.sleep(0.3)
    proc.send_signal(getattr(signal, sig))
    _, err = proc.communicate(timeout=60)
    code = 128 + getattr(signal, sig)
    # torch's own log lines are not the script's: a CUDA build of torch on a machine
    # without a GPU but with nvcc (torch 2.11+cu130 here) logs "W1201 12:00:00.000000
    # 123 torch/utils/cpp_extension.py:140] No CUDA runtime is found, ..." when
    # torch.utils.benchmark (the roofline's timer) is imported
    err = "".join(line for line in err.splitlines(keepends=True)
                  if not re.match(r"[IWEF]\d{4} [\d:.]+ +\d+ torch/", line))
    assert (proc.returncode, err) == (code, f"decode_step_check.py: interrupted by {sig} (exit {code})\n")


def test_an_interrupted_run_keeps_the_rows_of_finished_configurations(tmp_path, monkeypatch,
                                                                       capsys):
    """An interrupt (here SIGINT; gpu_check cuts stage 0 at its limit with SIGTERM):
    the JSON it reads for the later stages' --attention holds the configurations that
    finished before the signal."""
    from ipc_bench.harness import signals

    def run_config(torch, preset, device, backend, graphs, runs, *rest):
        if backend == "flex":
            raise signals.Interrupted(130)  # SIGINT while flex compiles
        return [dict(config=backend, num_running=b, bucket=b, step_ns=2e6, gpu_busy_ns=None,
                     host_ns=None, roofline_ns=1e6, x_roofline=2.0, tokens=[7] * b,
                     device="cpu (attention gather)") for b in runs]

    monkeypatch.setattr(dsc, "run_config", run_config)
    out = tmp_path / "rows.json"
    code = dsc.main(["--device", "cpu", "--num-running", "2", "--configs", "gather,flex",
                     "--json", str(out)])
    assert (code, capsys.readouterr().err) == (130, "decode_step_check.py: interrupted by SIGINT (exit 130)\n")
    rows = json.loads(out.read_text())["rows"]
    assert [(r["config"], r["num_running"], r["step_ns"]) for r in rows] == [
        ("gather", 2, 2e6), ("gather", 3, 2e6)]

@pytest.mark.slow  # compiles flex attention (TorchInductor, CPU)
def test_run_config_frees_its_model_before_it_returns(monkeypatch):
    """A configuration's model (weights, KV cache, on CUDA its graphs' memory pool) is
    freed before the next configuration builds its own and checks the free memory: a
    model with decode graphs holds itself in a cycle (``DecodeGraphs.model``), which
    ``del`` alone does not free."""
    import gc
    import weakref

    import torch

    from ipc_bench.engine import models
    from ipc_bench.engine.roofline import measure_device_figures

    built = []

    class Recorded(models.TorchModel):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            built.append(weakref.ref(self))

    monkeypatch.setattr(models, "TorchModel", Recorded)
    figures = measure_device_figures(torch, "cpu", torch.float32, copy_bytes=2**20,
                                     matmul_n=64, min_run_time_s=0.01)
    # the cache shape of test_cpu_run_gives_equal_tokens_across_backends_and_padding's
    # run (--num-running 2: 2 and 3 rows, contexts to 100 + 5 steps), whose flex kernels
    # the session's inductor cache then holds: this model compiles none of its own
    sched = dsc.SchedulerConfig(max_num_seqs=3, max_model_len=105, block_size=dsc.BLOCK_SIZE,
                                num_blocks=21)
    gc.disable()  # no collection by chance: only what run_config does itself
    try:
        rows = dsc.run_config(torch, "tiny", "cpu", "flex", True, [3], sched, 2, 1, 10, 20,
                              0, figures)
        assert [r["config"] for r in rows] == ["flex+graphs"]
        assert len(built) == 1 and built[0]() is None
    finally:
        gc.enable()


def _row(config, b, x, host_ms, busy=1.0):
    """A row whose host launch time is ``host_ms`` (and whose step minus GPU busy,
    ``host_ns``, is far under the goal: the goal is not judged on it)."""
    return dict(config=config, num_running=b, x_roofline=x, host_ns=1e4,
                host_launch_ns=host_ms * 1e6, gpu_busy_ns=busy)


def test_goals_are_judged_per_configuration_at_16_and_256_running():
    rows = [_row("gather", 16, 5.2, 1.8), _row("gather", 17, 9.0, 2.0),
            _row("gather", 256, 7.94, 0.9), _row("flex+graphs", 16, 2.999, 0.12),
            _row("flex+graphs", 256, 2.01, 1.0), _row("varlen", 256, 2.004, 1.0004),
            _row("varlen", 16, 3.006, 1.0006)]
    assert dsc.goal_lines(rows, "llama-3.2-1b", 300, 2000, "NVIDIA H200") == [
        "goals (stated for one H200; this device: NVIDIA H200): GPU busy at most 2x its "
        "roofline at 256 running, 3x its roofline at 16 running; host at most 1 ms per "
        "decode step (host launch: from the step's start until its last launch returns)",
        "  gather: 16 running: 5.20x roofline (NOT met), host launch 1.800 ms (NOT met); "
        "256 running: 7.94x roofline (NOT met), host launch 0.900 ms (met)",
        "  flex+graphs: 16 running: 3.00x roofline (met), host launch 0.120 ms (met); "
        "256 running: 2.01x roofline (NOT met), host launch 1.000 ms (met)",
        # judged as printed: 2.00x at a goal of 2 is met; 3.01x at 3 and 1.001 ms are not
        "  varlen: 16 running: 3.01x roofline (NOT met), host launch 1.001 ms (NOT met); "
        "256 running: 2.00x roofline (met), host launch 1.000 ms (met)"]


@pytest.mark.parametrize("preset,lo,hi,busy,line", [
    ("tiny", 30, 100, None, "goals: not judged: they are stated for llama-3.2-1b at "
     "contexts uniform in [300, 2000]; this run is tiny at [30, 100]"),
    ("llama-3.2-1b", 300, 1000, 1.0, "goals: not judged: they are stated for llama-3.2-1b "
     "at contexts uniform in [300, 2000]; this run is llama-3.2-1b at [300, 1000]"),
    ("llama-3.2-1b", 300, 2000, None, "goals: not judged: no GPU busy time (CUDA events) "
     "was measured at 16 or 256 running"),
])
def test_goals_say_why_a_run_is_not_judged(preset, lo, hi, busy, line):
    rows = [_row("gather", 16, 2.0, 0.5, busy=busy)]
    assert dsc.goal_lines(rows, preset, lo, hi, "cpu") == [line]
