"""``scripts/gpu_check.py`` refuses a trace its Azure replay stage's ``bench.py`` would
refuse in that ``bench.py``'s words up to their advice, whose options
(``--max-model-len``, ``--num-blocks``, ``--warmup-steps``, ``--max-requests``) the
stage sets itself and the script does not take: in their place it says what kind of
trace the stage takes (``stage_words``). ``bench.py``'s own words stay as they were."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ipc_bench.cli.run import trace_replay_problem
from script_module import ROOT, load_script

HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
ROW = "2023-11-16 18:15:46.6805900,{},{}\n"
#: bench.py's refusal of 4 rows of 200,000-token prompts on the CPU stage's command line.
BENCH_LONG = ("all 4 requests replayed would be rejected on arrival in every case (a prompt "
              "of max_model_len 16,384 tokens or more, or one needing more KV blocks than "
              "the cache's 2,048 (16 tokens each) for itself and one token; the longest has "
              "200,000 tokens), so the run would measure nothing: raise --max-model-len to "
              "200,001 or more and --num-blocks to 12,501 or more")
STAGE_LONG = ("all 4 requests replayed would be rejected on arrival in every case (a prompt "
              "of max_model_len 16,384 tokens or more, or one needing more KV blocks than "
              "the cache's 2,048 (16 tokens each) for itself and one token; the longest has "
              "200,000 tokens), so the run would measure nothing: stage 5 sets its "
              "max_model_len and KV cache itself (gpu_check.py has no option for them), so "
              "this trace cannot be used there: it takes one with a request among its first "
              "4 rows (those the stage replays) whose prompt they admit")


def _trace(path, prompt: int, output: int, rows: int = 4):
    path.write_text(HEADER + ROW.format(prompt, output) * rows)
    return path


@pytest.fixture
def gpu_check(monkeypatch):
    """The script with a CPU device probe and its stages recorded, not run."""
    module = load_script("gpu_check")
    module.started = []
    monkeypatch.setattr(module, "_preflight",
                        lambda device: module.started.append("probe") or (False, 0))
    monkeypatch.setattr(module, "run_decode_step", lambda cuda, out, t: ("gather", []))
    monkeypatch.setattr(module, "run_stage",
                        lambda stage, base, out, t: module.started.append(stage.name)
                        or (0, "passed"))
    return module


def _bench_says(args: list[str], folder) -> str:
    """What ``bench.py ARGS`` prints refusing to start (after ``bench.py: error: ``)."""
    proc = subprocess.run([sys.executable, "bench.py", *args, "--output",
                           str(folder / "bench-run")], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith("bench.py: error: ")
    return proc.stderr.removeprefix("bench.py: error: ").rstrip("\n")


def test_rejected_requests_get_the_stage_s_advice_bench_py_keeps_its_own(
        gpu_check, tmp_path, capsys):
    trace = _trace(tmp_path / "long.csv", 200_000, 10)
    args = gpu_check.replay_args(False, str(trace))
    assert _bench_says(args, tmp_path) == BENCH_LONG
    assert gpu_check.trace_problem(str(trace), False) == BENCH_LONG
    assert gpu_check.stage_words(BENCH_LONG, False) == STAGE_LONG
    assert gpu_check.main(["--output", str(tmp_path / "out"), "--trace", str(trace)]) == 2
    assert capsys.readouterr().err == f"gpu_check.py: error: argument --trace: {STAGE_LONG}\n"
    assert gpu_check.started == ["probe"]


def test_a_warm_up_cut_by_the_stage_s_rows_names_no_max_requests(gpu_check, tmp_path,
                                                                  capsys):
    trace = _trace(tmp_path / "many.csv", 10, 1, rows=6)
    bench = ("no step would be counted: the replay of the first 4 rows (--max-requests 4) "
             "takes 1 step, all within --warmup-steps 2: set --warmup-steps below 1 (e.g. "
             "--warmup-steps 0) or raise --max-requests")
    assert trace_replay_problem(gpu_check.replay_args(False, str(trace))) == bench
    assert gpu_check.main(["--output", str(tmp_path / "out"), "--trace", str(trace),
                           "--stages", "5"]) == 2
    assert capsys.readouterr().err == (
        "gpu_check.py: error: argument --trace: no step would be counted: the replay of the "
        "first 4 rows (--max-requests 4) takes 1 step, all within --warmup-steps 2: stage 5 "
        "sets its warm-up and replays at most 4 rows (gpu_check.py has no option for them), "
        "so this trace cannot be used there: it takes one whose first 4 rows take more "
        "steps than that warm-up (longer outputs, or more rows where it has fewer than 4)\n")
    assert gpu_check.started == ["probe"]


def test_a_request_that_outgrows_the_cache_gets_the_stage_s_advice(gpu_check, tmp_path):
    """The stages' caches hold more than max_model_len, so no trace outgrows them: the
    same refusal with 8 blocks, put in the stage's words."""
    trace = _trace(tmp_path / "over.csv", 40, 200)
    args = gpu_check.replay_args(False, str(trace))
    args[args.index("--num-blocks") + 1] = "8"
    head = ("all 4 requests served would stop every case mid-run when each outgrows the KV "
            "cache: the longest (a prompt of 40 tokens, 200 output tokens) needs 15 KV "
            "blocks (16 tokens each) for the 239 tokens of its last step, more than the "
            "cache's 8, which preempting every other request does not free: ")
    bench = trace_replay_problem(args)
    assert bench == head + ("raise --num-blocks to 15 or more, or lower --max-model-len to "
                            "129 or less")
    assert gpu_check.stage_words(bench, True) == head + (
        "stage 5 sets its KV cache and max_model_len itself (gpu_check.py has no option "
        "for them), so this trace cannot be used there: it takes one whose requests among "
        "its first 100 rows (those the stage replays) fit that cache to their last step")


@pytest.mark.parametrize("problem", [
    "/tmp/garbage.csv line 1: not UTF-8 text (byte 1 of the line)",
    "/tmp/t.csv line 2: GeneratedTokens 'x' is not a whole number",
])
def test_a_refusal_without_option_advice_is_kept_as_it_is(gpu_check, problem):
    assert gpu_check.stage_words(problem, False) == problem
