"""A second signal that arrives while ``signals.restore`` gives the caller's handlers
back (``cli.main``, a script's ``main(exiting=False)``, both through ``restore``) is
dropped, as one during the clean-up is: the call returns the first signal's exit code
after its one line, the caller's handlers and mask back, where the caller's own SIGINT
handler raised ``KeyboardInterrupt`` out of the call once the mask was put back.

Each case runs in a process of its own, so that the signals never reach pytest's; the
second signal is sent from ``signals.block``, which ``restore`` calls first, patched
once the command runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PRELUDE = """
import os, signal, sys, _thread
from ipc_bench import cli
from ipc_bench.harness import signals

real_block = signals.block

def second(how):
    def block():  # once
        signals.block = real_block
        mask = real_block()
        if how == "kill":  # blocked here: pending until the mask is put back
            os.kill(os.getpid(), signal.SIGINT)
        else:  # as when the kernel hands it to another thread
            _thread.interrupt_main(signal.SIGINT)
        return mask
    signals.block = block

def state():
    known = {signal.default_int_handler: "default_int_handler", signal.SIG_DFL: "SIG_DFL",
             signal.SIG_IGN: "SIG_IGN"}
    # SIGINT, SIGTERM, SIGHUP; the others of HANDLED (signals.WHERE_DEFAULT) are put
    # back alike (tests/harness/test_other_terminating_signals.py)
    handlers = [known.get(signal.getsignal(s), "other") for s in signals.HANDLED[:3]]
    mask = sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, ())
                  if s not in signals.WHERE_DEFAULT)
    return f"handlers {handlers} mask {mask}"

def call(f, *a, **kw):
    try:
        return f(*a, **kw)
    except BaseException as exc:
        return f"raised {type(exc).__name__}"
"""

BACK = "handlers ['default_int_handler', 'SIG_DFL', 'SIG_DFL'] mask []"


def _run(body: str) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-c", PRELUDE + body], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    return proc.returncode, proc.stdout, proc.stderr


def _script_main(how: str) -> str:
    return f"""
def work(args):
    second({how!r})
    signal.raise_signal(signal.SIGTERM)
    return 0

print(call(signals.run_command, lambda: [], work, lambda exc, _: exc.line("probe.py")),
      state())
"""


def test_a_second_signal_pending_while_a_scripts_main_gives_the_handlers_back():
    assert _run(_script_main("kill")) == (
        0, f"143 {BACK}\n", "probe.py: interrupted by SIGTERM (exit 143)\n")


def test_a_second_signal_taken_by_another_thread_then():
    assert _run(_script_main("interrupt_main")) == (
        0, f"143 {BACK}\n", "probe.py: interrupted by SIGTERM (exit 143)\n")


def test_a_second_signal_while_cli_main_gives_the_handlers_back():
    body = """
def probe(argv):
    second("kill")
    signal.raise_signal(signal.SIGTERM)
    return 0

cli.COMMANDS["probe"] = lambda: probe
print(call(cli.main, ["probe"]), state())
print(call(cli.main, ["probe"]), state())
"""
    assert _run(body) == (0, f"143 {BACK}\n143 {BACK}\n",
                          "bench.py probe: interrupted by SIGTERM (exit 143)\n" * 2)
