"""Under ``python -OO`` (or ``PYTHONOPTIMIZE=2``), which strips docstrings, the CLI still
finds every scenario, lists it with its summary, runs it, and the scripts still print
their help: the docstrings are read from the source files (``errors.module_doc``). A
module that truly has no docstring is still left out with the same warning."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: The scripts whose --help description is their module docstring's opening.
DOC_SCRIPTS = ("aa_false_positive", "byte_sweep", "codec_fit", "decode_step_check",
               "divergence_check", "gpu_check", "oracle_cost", "ring_bench",
               "verify_step_bench")


def python(*args: str, optimize: bool = True, env=None) -> subprocess.CompletedProcess:
    flags = ["-OO"] if optimize else []
    return subprocess.run([sys.executable, *flags, *args], cwd=REPO, capture_output=True,
                          text=True, timeout=120, env=env)


def test_list_under_OO_is_the_list_without_it():
    plain = python("bench.py", "--list", optimize=False)
    optimized = python("bench.py", "--list")
    assert (plain.returncode, plain.stderr) == (0, "")
    assert (optimized.returncode, optimized.stdout, optimized.stderr) == (0, plain.stdout, "")
    assert len(optimized.stdout.splitlines()) == 10
    assert ("decode-steady     Steady decode: exactly B requests decoding at all times, B in "
            "1, 16, 64, 256.") in optimized.stdout.splitlines()


def test_list_under_PYTHONOPTIMIZE_2():
    env = {**os.environ, "PYTHONOPTIMIZE": "2"}
    proc = python("bench.py", "--list", optimize=False, env=env)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.splitlines()[0] == ("azure-code        Azure code trace, replayed on the "
                                           "logical clock (needs --trace): long prompts, "
                                           "short outputs.")


def test_a_tiny_run_under_OO(tmp_path):
    run = tmp_path / "run"
    proc = python("bench.py", "--scenario", "decode-steady", "--num-running", "4", "--steps",
                  "20", "--policies", "cached", "--codecs", "msgpack", "--output", str(run))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines()[0] == f"ipc-bench: decode-steady, 2 cases -> {run}"
    assert "left out" not in proc.stderr and "docstring" not in proc.stderr
    assert proc.stdout.splitlines()[-1] == f"results: {run}"
    assert (run / "summary.json").is_file()


def test_a_module_without_a_docstring_is_still_named_under_OO(tmp_path):
    (tmp_path / "no_doc.py").write_text('NAME = "no-doc"\ndef cases(opts):\n    return []\n')
    (tmp_path / "with_doc.py").write_text(
        '"""First line.\n\nMore."""\nNAME = "with-doc"\ndef cases(opts):\n    return []\n')
    code = ("import importlib.util, sys\n"
            "from ipc_bench.harness.scenario import missing_parts, summary_line\n"
            "for name in sys.argv[1:]:\n"
            "    spec = importlib.util.spec_from_file_location(name, f'{name}.py')\n"
            "    module = importlib.util.module_from_spec(spec)\n"
            "    spec.loader.exec_module(module)\n"
            "    print(module.__doc__, missing_parts(module), repr(summary_line(module)))\n")
    proc = subprocess.run([sys.executable, "-OO", "-c", code, "no_doc", "with_doc"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == ("None has no docstring (its first line is the --list summary) ''\n"
                           "None None 'First line.'\n")


@pytest.mark.parametrize("script", DOC_SCRIPTS)
def test_script_help_under_OO_is_the_help_without_it(script):
    plain = python(f"scripts/{script}.py", "--help", optimize=False)
    optimized = python(f"scripts/{script}.py", "--help")
    assert (plain.returncode, plain.stderr) == (0, "")
    assert (optimized.returncode, optimized.stdout, optimized.stderr) == (0, plain.stdout, "")
