"""Every script of ``scripts/`` blocks SIGINT / SIGTERM / SIGHUP in its first statement,
as ``bench.py`` does, so that one arriving while it imports (before its handlers are
in) ends it with its one line and exit code, never a ``KeyboardInterrupt`` traceback
or a silent death by the signal; and every interrupt line ends ``(exit N)``
(``signals.Interrupted.line``), as ``bench.py``'s does."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

import pytest

from ipc_bench.harness import signals
from script_module import ROOT, load_script

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

#: Arguments each script takes to start work (it never gets to it: the signal comes
#: first), and what its interrupt line adds after ``(exit N)``.
SCRIPTS = {
    "aa_false_positive": ([], ""),
    "byte_sweep": ([], ""),
    "codec_fit": ([], ""),
    "decode_step_check": (["--device", "cpu", "--num-running", "4", "--steps", "2000"], ""),
    "divergence_check": (["--device", "cpu"], ""),
    "gpu_check": (["--device", "cpu", "--budget-s", "60", "--output", "{tmp}/check"], ""),
    "hot_path_bench": ([], ""),
    "null_sample_bench": ([], ""),
    "oracle_cost": ([], "; no row printed (0 of 3 B values measured)"),
    "ring_bench": ([], ""),
    "variant_table": ([], ""),
    "verify_step_bench": ([], ""),
}


def test_every_script_is_listed():
    assert sorted(p.stem for p in (ROOT / "scripts").glob("*.py")) == sorted(SCRIPTS)


def _mask(pid: int, field: str):
    """The signal mask ``field`` (``SigBlk``, ``SigCgt``) of process ``pid`` as an int;
    ``None`` once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1], 16)
    except OSError:
        return None
    return None


def _while_starting(proc: subprocess.Popen, sig: int = signal.SIGTERM,
                    limit_s: float = 10.0) -> bool:
    """Wait until ``proc`` blocks ``sig`` with no handler of its own for it yet: its
    first statement has run and its imports are under way. ``False`` if that is not
    seen within ``limit_s`` or the process ends first."""
    bit = 1 << (sig - 1)
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        blocked, caught = _mask(proc.pid, "SigBlk"), _mask(proc.pid, "SigCgt")
        if blocked is None or caught is None:
            return False
        if blocked & bit and not caught & bit:
            return True
        time.sleep(0.002)
    return False


CASES = ([(name, "SIGINT") for name in SCRIPTS]
         + [(name, sig) for name in ("decode_step_check", "gpu_check")
            for sig in ("SIGTERM", "SIGHUP")])


@pytest.mark.parametrize("name,sig", CASES)
def test_a_signal_while_the_script_imports_is_one_line_and_its_code(name, sig, tmp_path):
    args, tail = SCRIPTS[name]
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    proc = subprocess.Popen([sys.executable, f"scripts/{name}.py", *args], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        started = _while_starting(proc)
        proc.send_signal(getattr(signal, sig))
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert started, "the script never blocked the signals before installing its handlers"
    code = 128 + getattr(signal, sig)
    assert (proc.returncode, err) == (
        code, f"{name}.py: interrupted by {sig}{tail} (exit {code})\n")


def test_interrupted_line():
    assert signals.Interrupted(130).line("byte_sweep.py") == (
        "byte_sweep.py: interrupted by SIGINT (exit 130)")
    assert signals.Interrupted(129).line("gpu_check.py") == (
        "gpu_check.py: interrupted by SIGHUP (exit 129)")


def _sigterm(*_args, **_kwargs):
    os.kill(os.getpid(), signal.SIGTERM)
    raise AssertionError("SIGTERM did not interrupt")


def test_gpu_check_names_its_folder_after_the_code(monkeypatch, tmp_path, capsys):
    gpu_check = load_script("gpu_check")
    monkeypatch.setattr(gpu_check, "_end_with_parent", lambda: None)

    def check(args, out):
        out.mkdir()
        _sigterm()

    monkeypatch.setattr(gpu_check, "_check", check)
    out = tmp_path / "check"
    assert gpu_check.main(["--device", "cpu", "--output", str(out)]) == 143
    assert capsys.readouterr().err == (
        f"gpu_check.py: interrupted by SIGTERM; results so far in {out} (exit 143)\n")


@pytest.mark.parametrize("name,work", [("null_sample_bench", "_table"),
                                       ("verify_step_bench", "_table")])
def test_table_scripts_called_in_process_give_the_handlers_back(name, work, monkeypatch,
                                                               capsys):
    """The two table scripts now route the signals as the others do: called in process
    the caller's handlers are back after an interrupt; as a command, left ignored."""
    module = load_script(name)
    monkeypatch.setattr(module, "_parse", lambda argv: argparse.Namespace())
    monkeypatch.setattr(module, work, _sigterm)
    before = {s: signal.getsignal(s) for s in signals.HANDLED}  # all, put back

    def mine(signum, frame):  # never runs: the script's handlers are in meanwhile
        raise AssertionError(signum)

    try:
        for s in HANDLED:
            signal.signal(s, mine)
        assert module.main([]) == 143
        assert [signal.getsignal(s) for s in HANDLED] == [mine] * 3
        assert module.main([], exiting=True) == 143
        assert [signal.getsignal(s) for s in HANDLED] == [signal.SIG_IGN] * 3
    finally:
        for s, h in before.items():
            signal.signal(s, h)
    assert capsys.readouterr().err == f"{name}.py: interrupted by SIGTERM (exit 143)\n" * 2
