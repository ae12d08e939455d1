"""A signal that arrives once a command's work has returned (its output written and
printed) leaves its exit code alone, in ``bench.py`` and every script alike
(``signals.finish``; docs/faults.md, "Interrupts"): the script run as a command ends 0
with no interrupt line, and called in process (``main(exiting=False)``) it returns 0
and the caller's own handler gets the signal once it is back. ``verify_step_bench.py``
gave 143 and its interrupt line for one that came just after its table, before its
handlers were put back, and 0 for one a moment later.

Each case runs in a process of its own (the signals never reach pytest's). The signal
is sent from ``signals.raise_pending``, patched, the first time it is called after the
work returned: the last thing the command does before it gives its handlers back."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PRELUDE = """
import os, signal, sys
from ipc_bench.harness import signals

done = []
real_raise_pending = signals.raise_pending

def raise_pending():
    real_raise_pending()
    if done == [1]:  # once: the work has returned
        done.append(2)
        os.kill(os.getpid(), signal.SIGTERM)

signals.raise_pending = raise_pending
"""

SCRIPT = PRELUDE + """
from tests.script_module import load_script

vsb = load_script("verify_step_bench")
vsb.run_size = lambda torch, args, n: {"running": n, "batched_ms": 1.5, "serial_ms": 3.0,
                                       "ratio": 2.0, "same_ids": True, "max_diff": 0.0}
table = vsb._table

def table_then_done(args):
    code = table(args)
    done.append(1)
    return code

vsb._table = table_then_done
got = []
if sys.argv[1] == "caller":
    signal.signal(signal.SIGTERM, lambda signum, frame: got.append(signum))
code = vsb.main(["--device", "cpu", "--preset", "cpu", "--num-running", "4"],
                exiting=sys.argv[1] == "command")
print(code, got)
"""

TABLE = ("preset cpu, vocab 512, cpu, attention gather, K = 2, contexts 64-512, 21 "
         "alternated reps, 1 thread(s)\n"
         " running  batched ms  one-by-one ms  ratio  same ids  max |dlogit|\n"
         "       4        1.50           3.00   2.00      True      0.00e+00\n")


def _run(program: str, *argv: str) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-c", program, *argv], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def test_verify_step_bench_run_as_a_command_ends_0_after_its_table():
    assert _run(SCRIPT, "command") == (0, TABLE + "0 []\n", "")


def test_verify_step_bench_in_process_returns_0_and_the_caller_gets_the_signal():
    assert _run(SCRIPT, "caller") == (0, TABLE + "0 [15]\n", "")


def test_bench_py_ends_0_alike():
    program = PRELUDE + """
from ipc_bench import cli

def probe(argv):
    print("done")
    done.append(1)
    return 0

cli.COMMANDS["probe"] = lambda: probe
print(cli.main(["probe"], exiting=True))
"""
    assert _run(program) == (0, "done\n0\n", "")
