"""``scripts/gpu_check.py`` builds its Azure replay stage's cases as that stage's
``bench.py`` builds them (``cli.run.trace_replay_problem`` on the stage's own command
line, ``replay_args``) right after the device probe, and refuses a trace that
``bench.py`` refuses only once its cases are built (every request rejected as longer
than ``max_model_len``, every step in the warm-up, a served request that outgrows the
KV cache) in one line with ``bench.py``'s words, exit 2, before any stage runs and with
nothing created: it ran every other stage first and failed only at stage 5."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ipc_bench.cli.run import trace_replay_problem
from script_module import ROOT, load_script

HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
#: ``prompt, output`` tokens of one request, all arriving at the same time.
ROW = "2023-11-16 18:15:46.6805900,{},{}\n"
ERROR = "gpu_check.py: error: argument --trace: "
WARM = ("no step would be counted: the replay of the trace's 4 rows takes 1 step, all "
        "within --warmup-steps {warmup}: set --warmup-steps below 1 (e.g. --warmup-steps 0) "
        "or replay a longer trace")
#: gpu_check.py's words where bench.py's advice names options it does not take
#: (``stage_words``): the same refusal, then what kind of trace the stage takes.
STAGE_LONG = ("all 4 requests replayed would be rejected on arrival in every case (a prompt "
              "of max_model_len 16,384 tokens or more{cache}; the longest has 200,000 "
              "tokens), so the run would measure nothing: stage 5 sets its max_model_len "
              "and KV cache itself (gpu_check.py has no option for them), so this trace "
              "cannot be used there: it takes one with a request among its first {rows} "
              "rows (those the stage replays) whose prompt they admit")
STAGE_WARM = ("no step would be counted: the replay of the trace's 4 rows takes 1 step, all "
              "within --warmup-steps {warmup}: stage 5 sets its warm-up and replays at most "
              "{rows} rows (gpu_check.py has no option for them), so this trace cannot be "
              "used there: it takes one whose first {rows} rows take more steps than that "
              "warm-up (longer outputs, or more rows where it has fewer than {rows})")


def _trace(path, prompt: int, output: int, rows: int = 4):
    path.write_text(HEADER + ROW.format(prompt, output) * rows)
    return path


@pytest.fixture
def gpu_check(monkeypatch):
    """The script with its device probe answering ``module.probe_result`` (CPU unless
    set) and its stages recorded, not run: ``module.started`` lists the probe
    (``"probe"``) and each stage's name."""
    module = load_script("gpu_check")
    module.started = []
    module.probe_result = (False, 0)

    def probe(device):
        module.started.append("probe")
        return module.probe_result

    def stage(stage, base, out, timeout_s):
        module.started.append(stage.name)
        return 0, "passed"

    monkeypatch.setattr(module, "_preflight", probe)
    monkeypatch.setattr(module, "run_decode_step", lambda cuda, out, t: ("gather", []))
    monkeypatch.setattr(module, "run_stage", stage)
    return module


def _bench_says(args: list[str], folder) -> str:
    """What ``bench.py ARGS`` prints refusing to start (after ``bench.py: error: ``)."""
    proc = subprocess.run([sys.executable, "bench.py", *args, "--output",
                           str(folder / "bench-run")], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and not (folder / "bench-run").exists()
    assert proc.stderr.startswith("bench.py: error: ")
    return proc.stderr.removeprefix("bench.py: error: ").rstrip("\n")


@pytest.mark.parametrize("cuda, reason", [
    (False, STAGE_LONG.format(cache=", or one needing more KV blocks than the cache's 2,048 "
                              "(16 tokens each) for itself and one token", rows=4)),
    (True, STAGE_LONG.format(cache=", or one needing more KV blocks than the cache's 4,096 "
                             "(16 tokens each) for itself and one token", rows=100)),
])
def test_every_request_longer_than_max_model_len_is_refused_before_any_stage(
        gpu_check, tmp_path, capsys, cuda, reason):
    trace = _trace(tmp_path / "long.csv", 200_000, 10)
    gpu_check.probe_result = (cuda, 0)
    out = tmp_path / "out"
    assert gpu_check.main(["--output", str(out), "--trace", str(trace)]) == 2
    assert capsys.readouterr().err == f"{ERROR}{reason}\n"
    assert gpu_check.started == ["probe"] and not out.exists()


@pytest.mark.parametrize("cuda, warmup, rows", [(False, 2, 4), (True, 10, 100)])
def test_a_replay_whose_every_step_is_warm_up_is_refused_before_any_stage(
        gpu_check, tmp_path, capsys, cuda, warmup, rows):
    trace = _trace(tmp_path / "warm.csv", 10, 1)
    gpu_check.probe_result = (cuda, 0)
    out = tmp_path / "out"
    assert gpu_check.main(["--output", str(out), "--trace", str(trace), "--stages",
                           "1,5"]) == 2
    assert capsys.readouterr().err == f"{ERROR}{STAGE_WARM.format(warmup=warmup, rows=rows)}\n"
    assert gpu_check.started == ["probe"] and not out.exists()


def test_the_words_are_the_stage_s_bench_py_s(gpu_check, tmp_path):
    trace = _trace(tmp_path / "warm.csv", 10, 1)
    args = gpu_check.replay_args(False, str(trace))
    assert args == ["--scenario", "azure-conv", "--model-preset", "tiny", "--trace",
                    str(trace), "--max-requests", "4", "--codecs", "msgpack",
                    "--warmup-steps", "2", "--logical-step-ms", "100", "--num-blocks",
                    "2048", "--model", "torch", "--device", "cpu", "--quiet",
                    "--no-hostname"]
    assert gpu_check.trace_problem(str(trace), False) == WARM.format(warmup=2)
    assert _bench_says(args, tmp_path) == WARM.format(warmup=2)


def test_a_bad_default_trace_is_refused_by_name(gpu_check, tmp_path, capsys, monkeypatch):
    trace = _trace(tmp_path / "AzureLLMInferenceTrace_conv.csv", 10, 1)
    monkeypatch.setattr(gpu_check, "TRACE_CANDIDATES", (trace,))
    assert gpu_check.main(["--output", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == (
        f"gpu_check.py: error: the default --trace, {trace}, cannot be replayed: "
        f"{STAGE_WARM.format(warmup=2, rows=4)}; give --trace PATH, or leave stage 5 out "
        "(--stages)\n")
    assert gpu_check.started == ["probe"]


def test_some_requests_rejected_is_the_stage_s_warning_not_a_refusal(gpu_check, tmp_path):
    trace = tmp_path / "some.csv"
    trace.write_text(HEADER + ROW.format(30, 4) * 3 + ROW.format(200_000, 4))
    assert gpu_check.trace_problem(str(trace), False) is None
    assert gpu_check.main(["--output", str(tmp_path / "out"), "--trace", str(trace),
                           "--stages", "5"]) == 0
    assert gpu_check.started == ["probe", "azure-conv"]


def test_a_trace_no_stage_replays_builds_no_case(gpu_check, tmp_path):
    trace = _trace(tmp_path / "warm.csv", 10, 1)
    assert gpu_check.main(["--output", str(tmp_path / "out"), "--trace", str(trace),
                           "--stages", "1"]) == 0
    assert gpu_check.started == ["probe", "smoke"]


def test_a_served_request_that_outgrows_the_cache_is_bench_py_s_refusal(gpu_check,
                                                                        tmp_path):
    """The stages' caches (2,048 blocks on the CPU, 65,536 on CUDA, of 16 tokens) hold
    more than max_model_len, so no trace outgrows them: the same check with 8 blocks."""
    trace = _trace(tmp_path / "over.csv", 40, 200)
    args = gpu_check.replay_args(False, str(trace))
    args[args.index("--num-blocks") + 1] = "8"
    reason = ("all 4 requests served would stop every case mid-run when each outgrows the "
              "KV cache: the longest (a prompt of 40 tokens, 200 output tokens) needs 15 KV "
              "blocks (16 tokens each) for the 239 tokens of its last step, more than the "
              "cache's 8, which preempting every other request does not free: raise "
              "--num-blocks to 15 or more, or lower --max-model-len to 129 or less")
    assert trace_replay_problem(args) == reason
    assert _bench_says(args, tmp_path) == reason


def test_a_command_line_bench_py_takes_has_no_problem(tmp_path):
    trace = _trace(tmp_path / "ok.csv", 100, 20)
    assert trace_replay_problem(["--scenario", "azure-conv", "--trace", str(trace),
                                 "--max-requests", "4", "--warmup-steps", "2"]) is None
    assert trace_replay_problem(["--scenario", "nope"]).startswith(
        "unknown scenario 'nope'; choose from ")
