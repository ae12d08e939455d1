"""``scripts/NAME.py`` for the tests: imported as a module (its functions and ``main``
called in this process) or run as a command."""

from __future__ import annotations

import importlib.util
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
