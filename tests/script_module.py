"""``scripts/NAME.py`` for the tests: imported as a module (its functions and ``main``
called in this process) or run as a command."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_script(name: str):
    """``scripts/NAME.py`` as a module, registered in ``sys.modules`` under ``name``
    (dataclasses look their module up there)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def run_script(name: str, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``python scripts/NAME.py ARGV...`` from the repository root, its output as text."""
    return subprocess.run([sys.executable, str(ROOT / "scripts" / f"{name}.py"), *argv],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


#: The process groups ``start_script`` made in the running test (``kill_started``).
_STARTED: list[subprocess.Popen] = []


def start_script(name: str, *argv: str, env=None) -> subprocess.Popen:
    """``python scripts/NAME.py ARGV...`` from the repository root in its own process
    group (a test can signal the group, as a terminal's Ctrl-C does), its output as
    text; ``kill_started`` kills the group after the test."""
    proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / f"{name}.py"), *argv],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, start_new_session=True)
    _STARTED.append(proc)
    return proc


def kill_started() -> None:
    """Kill and reap each process group ``start_script`` made, passed or not: a test
    that failed (a script that ignored its signal) leaves no process behind to load the
    machine for the tests after it."""
    while _STARTED:
        proc = _STARTED.pop()
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass  # the group is gone
        proc.communicate()
