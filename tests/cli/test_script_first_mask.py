"""``bench.py`` and every script of ``scripts/`` block, in their first statement, the
signals the handlers take (``signals.HANDLED``: SIGINT, SIGTERM, SIGHUP and the
others whose default action ends a process at once, ``signals.WHERE_DEFAULT``). That
statement runs before ``ipc_bench`` can be imported, so each spells the set out, and
this test compares each with ``HANDLED``. A SIGUSR1 while a script imports its modules
then ends it with its one line and exit 138, where it ended it at once, silently (the
scripts blocked SIGINT, SIGTERM and SIGHUP only)."""

from __future__ import annotations

import ast
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ipc_bench.harness import signals
from script_module import ROOT
from test_script_start_signals import SCRIPTS, _while_starting

ENTRY_POINTS = [ROOT / "bench.py"] + sorted((ROOT / "scripts").glob("*.py"))


def _first_mask(path: Path) -> tuple[list[str], list[str]]:
    """The signals named in ``path``'s first ``signal.pthread_sigmask`` call, in order,
    and the modules imported before that call (in source order)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = sorted((n for n in ast.walk(tree) if hasattr(n, "lineno")),
                   key=lambda n: (n.lineno, n.col_offset))
    imported: list[str] = []
    for node in nodes:
        if isinstance(node, ast.Import):
            imported += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            imported.append(node.module or "")
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == \
                "signal.pthread_sigmask":
            how, which = node.args
            assert ast.unparse(how) == "signal.SIG_BLOCK", path
            return [ast.unparse(e).removeprefix("signal.") for e in which.elts], imported
    raise AssertionError(f"{path.name} blocks no signal")


@pytest.mark.parametrize("path", ENTRY_POINTS, ids=lambda p: p.name)
def test_the_first_statement_blocks_the_handled_signals(path):
    names, imported = _first_mask(path)
    assert names == [signal.Signals(s).name for s in signals.HANDLED]
    assert set(imported) <= {"__future__", "signal"}, imported


def _defaults() -> None:
    """SIGUSR1 at its default action in the script, as a terminal starts a command."""
    signal.signal(signal.SIGUSR1, signal.SIG_DFL)


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_a_sigusr1_while_the_script_imports_is_its_line_and_exit_138(name, tmp_path):
    args, tail = SCRIPTS[name]
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    proc = subprocess.Popen([sys.executable, f"scripts/{name}.py", *args], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_defaults)
    try:
        started = _while_starting(proc, signal.SIGUSR1)
        proc.send_signal(signal.SIGUSR1)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert started, "the script never blocked SIGUSR1 before installing its handlers"
    assert (proc.returncode, err) == (138, f"{name}.py: interrupted by SIGUSR1{tail} (exit 138)\n")
