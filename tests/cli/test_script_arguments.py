"""Bad input to the scripts of scripts/ (hot_path_bench, verify_step_bench, codec_fit,
ring_bench, oracle_cost, aa_false_positive): one line on stderr, no usage banner, no
traceback, exit 2, before any run, benchmark or model; codec_fit's checks of the run
folders it is given, on synthetic summaries (no runs)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _script(name: str, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / f"{name}.py"), *argv],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


#: (script, its arguments, the one line it writes on stderr before exiting 2)
BAD_INPUT = [
    ("hot_path_bench", ["--only", "nonexistent bench"], "hot_path_bench.py: error: argument "
     "--only: 'nonexistent bench' is in no benchmark's name (the names: python "
     "scripts/hot_path_bench.py --list)"),
    ("hot_path_bench", ["--only", "oracle,inproc,zz"], "hot_path_bench.py: error: argument "
     "--only: 'inproc', 'zz' are in no benchmark's name (the names: python "
     "scripts/hot_path_bench.py --list)"),
    ("hot_path_bench", ["--bogus"], "hot_path_bench.py: error: unrecognized arguments: "
     "--bogus"),
    ("verify_step_bench", ["--vocab-size", "0"],
     "verify_step_bench: --vocab-size: must be at least 2, got 0"),
    ("verify_step_bench", ["--threads", "0"],
     "verify_step_bench: --threads: must be at least 1, got 0"),
    ("verify_step_bench", ["--threads", "2000"],
     "verify_step_bench: --threads: must be at most 1,024, got 2,000"),
    ("verify_step_bench", ["--seed", "-1"], "verify_step_bench: --seed: must be at least 0, "
     "got -1"),
    ("verify_step_bench", ["--preset", "x"], "verify_step_bench: --preset: invalid choice: "
     "'x' (choose from 'cpu', 'llama-3.1-8b', 'llama-3.2-1b', 'qwen2.5-0.5b', 'tiny')"),
    ("verify_step_bench", ["--context-min", "2"], "verify_step_bench: --context-min: must "
     "be at least --num-spec-tokens + 1 (3) for a row of 3 query tokens, got 2"),
    ("verify_step_bench", ["--context-max", "32"], "verify_step_bench: --context-max: must "
     "be at least --context-min (64), got 32"),
    ("verify_step_bench", ["--num-running", "65536", "--context-max", "40000"],
     "verify_step_bench: --num-running 65536: max_num_seqs x max_model_len (2621505536) "
     "exceeds the runner's 2**31-token buffer"),
]


@pytest.mark.parametrize("script,argv,line", BAD_INPUT,
                         ids=[f"{s} {' '.join(a)}" for s, a, _ in BAD_INPUT])
def test_bad_input_is_one_line_and_exit_2(script, argv, line):
    out = _script(script, *argv)
    assert (out.returncode, out.stderr, out.stdout) == (2, line + "\n", "")


def test_hot_path_bench_lists_the_names_its_only_checks_and_its_examples_match():
    hot = _load("hot_path_bench")
    names = hot.benchmark_names()
    out = _script("hot_path_bench", "--list")
    assert (out.returncode, out.stdout.splitlines(), out.stderr) == (0, names, "")
    # every --only example of the docstrings selects something (oracle_cost's too)
    docs = hot.__doc__ + (ROOT / "scripts" / "oracle_cost.py").read_text()
    examples = re.findall(r'--only\s+"([^"]+)"', docs)
    assert "oracle,schedule" in examples
    for text in examples:
        assert hot._only(text) == text
    with pytest.raises(Exception, match="'inproc' is in no benchmark's name"):
        hot._only("oracle,schedule,inproc")


def test_hot_path_bench_runs_the_benchmarks_it_names(monkeypatch):
    """``run_benchmarks`` times exactly ``benchmark_names()``, in that order, so that
    ``--only`` is checked against the names that run (messages and time functions
    stubbed: nothing is timed)."""
    hot = _load("hot_path_bench")
    small = {codec: hot.decode_messages(1, codec) for codec in hot.PLAIN_CODECS}
    monkeypatch.setattr(hot, "decode_messages", lambda b, codec="msgpack": small[codec])
    monkeypatch.setattr(hot, "oracle_benchmarks",
                        lambda b: [(n, None) for n in hot.oracle_names(b)])
    monkeypatch.setattr(hot, "check_round_trip", lambda: None)
    ran = []

    class Bench:
        def bench_func(self, name, *args):
            ran.append(name)

        bench_time_func = bench_func

    class Everything:
        def __contains__(self, name):
            return True

    hot.run_benchmarks(Bench(), Everything())
    assert ran == hot.benchmark_names()
