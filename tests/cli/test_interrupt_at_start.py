"""A SIGINT in ``bench.py``'s first statements, before it blocks the signals, ends every
command (the run, ``report``, ``microbench``, ``runner``) with the line the command
itself prints for an interrupt at its start, ``PROG: interrupted by SIGINT (exit 130)``
with ``PROG`` as ``ipc_bench.cli.main`` names it (``bench.py report`` ...), and exit 130:
no traceback, nothing on stdout. The interrupt is made deterministic by an import hook
(this test's own, run through ``python -c``) that raises ``KeyboardInterrupt`` as
Python's SIGINT handler raises it: at ``bench.py``'s ``import signal`` (before the
mask), and at its imports after the mask, where a SIGINT that landed just before the
mask has its handler run. Before ``bench.py``'s first statement the interpreter itself
is starting, where a SIGINT is Python's own (docs/faults.md, Interrupts)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fault_helpers import INTERRUPT_AT_IMPORT
from ipc_bench.cli import COMMANDS

REPO = Path(__file__).resolve().parents[2]


#: ``bench.py``'s imports up to ``main``: ``import signal`` before its mask, the others
#: after it.
IMPORTS = ("signal", "ipc_bench.errors", "ipc_bench.cli")


def interrupted_at(at: str, args: list[str]) -> tuple[int, str, str]:
    """Exit code, stderr and stdout of ``bench.py ARGS`` interrupted at module ``at``."""
    proc = subprocess.run([sys.executable, "-c", INTERRUPT_AT_IMPORT, at, *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stderr, proc.stdout


@pytest.mark.parametrize("at", IMPORTS)
@pytest.mark.parametrize("word", sorted(COMMANDS))
def test_a_command_interrupted_in_bench_py_s_first_statements_names_itself(word, at):
    assert interrupted_at(at, [word, "--help"]) == (
        130, f"bench.py {word}: interrupted by SIGINT (exit 130)\n", "")


@pytest.mark.parametrize("at", IMPORTS)
def test_a_report_interrupted_there_names_itself_with_its_run_folders(at, tmp_path):
    assert interrupted_at(at, ["report", str(tmp_path), "--output", str(tmp_path / "r")]) == (
        130, "bench.py report: interrupted by SIGINT (exit 130)\n", "")


@pytest.mark.parametrize("at", IMPORTS)
def test_a_run_interrupted_there_is_bench_py_s_line(at, tmp_path):
    """The run has no command word; one of the commands' words as an option's value is
    not a command."""
    args = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "50",
            "--output", str(tmp_path / "run")]
    assert interrupted_at(at, args) == (130, "bench.py: interrupted by SIGINT (exit 130)\n", "")
    assert interrupted_at(at, ["--output", "report"]) == (
        130, "bench.py: interrupted by SIGINT (exit 130)\n", "")
    assert not (tmp_path / "run").exists()
