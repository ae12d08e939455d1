"""A script's ``main`` that routes SIGINT / SIGTERM / SIGHUP itself (``signals.install``
directly, or ``signals.run_command``) gives them back as ``cli.main`` does: called in
process (``exiting=False``, the default) the caller's handlers are back after an
interrupt, where ``restore``'s exit path left them ``SIG_IGN`` and no later call or
Ctrl-C could interrupt; run as a command (``if __name__ == "__main__"``: ``exiting=True``)
further signals stay ignored on its way out, as ``bench.py``'s."""

from __future__ import annotations

import argparse
import ast
import os
import signal

import pytest

from ipc_bench.harness import signals
from script_module import ROOT, load_script

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _sigterm(*_args, **_kwargs):
    """A script's work that SIGTERM ends at once."""
    os.kill(os.getpid(), signal.SIGTERM)
    raise AssertionError("SIGTERM did not interrupt")


@pytest.fixture
def handlers():
    """The test's own handler on each of ``HANDLED`` (returned), put back after it."""
    before = {s: signal.getsignal(s) for s in signals.HANDLED}  # all, put back

    def mine(signum, frame):  # never runs: the script's handlers are in meanwhile
        raise AssertionError(signum)

    for s in HANDLED:
        signal.signal(s, mine)
    yield mine
    for s, h in before.items():
        signal.signal(s, h)


def _direct(name: str, monkeypatch):
    """``scripts/NAME.py``'s ``main`` with its work replaced by ``_sigterm``."""
    module = load_script(name)
    if name == "decode_step_check":
        monkeypatch.setattr(module, "_check", _sigterm)
        return lambda **kw: module.main(["--device", "cpu"], **kw)
    if name == "gpu_check":
        monkeypatch.setattr(module, "_end_with_parent", _sigterm)
        return lambda **kw: module.main(["--output", "unused"], **kw)
    if name == "aa_false_positive":
        monkeypatch.setattr(module, "parse_args", lambda argv: argparse.Namespace(
            from_run="unused"))
        monkeypatch.setattr(module, "_analyse", _sigterm)
        return lambda **kw: module.main([], **kw)
    works = {"byte_sweep": "_sweep", "ring_bench": "_bench", "codec_fit": "_fit",
             "oracle_cost": "_measure"}
    monkeypatch.setattr(module, "parse_args", lambda argv: argparse.Namespace(
        made=[], removed_root=False, bench=True))
    monkeypatch.setattr(module, works[name], _sigterm)
    return lambda **kw: module.main([], **kw)


SCRIPTS = ["decode_step_check", "gpu_check", "aa_false_positive", "byte_sweep",
           "ring_bench", "codec_fit", "oracle_cost"]


@pytest.mark.parametrize("name", SCRIPTS)
def test_main_called_in_process_gives_the_handlers_back(name, monkeypatch, handlers,
                                                        capsys):
    main = _direct(name, monkeypatch)
    assert main() == 143
    assert "interrupted by SIGTERM" in capsys.readouterr().err
    assert [signal.getsignal(s) for s in HANDLED] == [handlers] * 3
    assert main() == 143  # and the next call is interrupted as the first was
    assert [signal.getsignal(s) for s in HANDLED] == [handlers] * 3


@pytest.mark.parametrize("name", SCRIPTS)
def test_main_run_as_a_command_leaves_them_ignored_on_its_way_out(name, monkeypatch,
                                                                 handlers, capsys):
    main = _direct(name, monkeypatch)
    assert main(exiting=True) == 143
    capsys.readouterr()
    assert [signal.getsignal(s) for s in HANDLED] == [signal.SIG_IGN] * 3


def test_run_command_gives_them_back_unless_exiting(handlers, capsys):
    def run(exiting: bool) -> int:
        return signals.run_command(lambda: None, _sigterm,
                                   lambda exc, _: f"p: interrupted by {exc.signal_name}",
                                   exiting=exiting)

    assert run(False) == 143
    assert [signal.getsignal(s) for s in HANDLED] == [handlers] * 3
    assert run(True) == 143
    assert [signal.getsignal(s) for s in HANDLED] == [signal.SIG_IGN] * 3
    assert capsys.readouterr().err == "p: interrupted by SIGTERM\n" * 2


def _main_block_calls(path) -> list[str]:
    """The calls of ``main`` in ``path``'s last ``if __name__ == "__main__":`` block,
    as source text."""
    tree = ast.parse(path.read_text())
    block = [n for n in tree.body if isinstance(n, ast.If)
             and ast.unparse(n.test) == "__name__ == '__main__'"][-1]
    return [ast.unparse(n) for n in ast.walk(block) if isinstance(n, ast.Call)
            and ast.unparse(n.func) == "main"]


@pytest.mark.parametrize("name", SCRIPTS)
def test_each_script_run_as_a_command_says_it_exits(name):
    assert _main_block_calls(ROOT / "scripts" / f"{name}.py") == ["main(exiting=True)"]
