"""``scripts/device_check.sh``: a signal that lands between two steps (after one
command ended, before the next is started) ends the script there, with its one line
and the signal's code; the next step is never started.

The signal is sent by a stand-in of a command the script runs between two steps
(``date`` before the environment is read, ``mktemp`` between the CUDA tests and
``gpu_check.py``), put first on ``PATH``: it SIGTERMs the script and then runs the real
command, so the signal is there before the script starts its next step, every run."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from device_check_repo import CHECK_HEAD, script_copy, script_env, stand_in_python

# A gpu_check.py that says it ran (the file ``ran`` beside it) and writes a run folder.
_CHECK = CHECK_HEAD + '''\
    Path(__file__).with_name("ran").write_text("ran")
    out = Path(build_parser().parse_args().output)
    (out / "1-smoke").mkdir(parents=True)
    (out / "1-smoke.log").write_text("smoke log\\n")
    print("gpu_check: results in", out)
'''


def _signalling(tmp_path: Path, name: str, when: str, pid_file: Path, sig: str) -> Path:
    """A folder holding a stand-in ``name`` that, where its arguments hold ``when``,
    sends ``sig`` (``TERM``, ...) to the pid written to ``pid_file`` (waiting for it,
    at most 60 s) before it runs the real ``name`` with them."""
    real = shutil.which(name)
    assert real, f"no {name} on PATH"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / name).write_text(f"""#!/bin/sh
case "$*" in *'{when}'*)
    tries=0  # at most 60 s
    while [ ! -s '{pid_file}' ] && [ "$tries" -lt 1200 ]; do
        sleep 0.05; tries=$((tries + 1))
    done
    kill -{sig} "$(cat '{pid_file}')" ;;
esac
exec '{real}' "$@"
""")
    (bin_dir / name).chmod(0o755)
    return bin_dir


def _run_signalled(tmp_path: Path, name: str, when: str, sig: str = "TERM"):
    repo = script_copy(tmp_path, _CHECK)
    pid_file = tmp_path / "script.pid"
    bin_dir = _signalling(tmp_path, name, when, pid_file, sig)
    # the CUDA tests pass at once without pytest
    python = stand_in_python(tmp_path, 'echo "2 passed (stand-in)"; exit 0')
    env = script_env(python, tmp_path, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.Popen(["bash", str(repo / "scripts" / "device_check.sh"),
                             str(tmp_path / "out")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env,
                            restore_signals=True)
    try:
        (tmp_path / "pid.tmp").write_text(str(proc.pid))
        (tmp_path / "pid.tmp").rename(pid_file)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    return repo, proc.returncode, out, err


def test_a_signal_after_the_tests_never_starts_the_check(tmp_path):
    """SIGTERM after the CUDA tests ended and their exit was said, as the check's
    temporary folder is made: exit 143 with one line; gpu_check.py is not started,
    nothing is packed."""
    repo, rc, out, err = _run_signalled(tmp_path, "mktemp", "device-check-XXXXXX")
    assert (rc, out, err) == (
        143,
        "== CUDA tests (at most 60 s)\n2 passed (stand-in)\n== CUDA tests: exit 0\n",
        "device_check.sh: interrupted after the CUDA tests, before scripts/gpu_check.py "
        "(exit 143)\n")
    assert not (repo / "scripts" / "ran").exists()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "device-check.log", "environment.txt"]
    assert (tmp_path / "out" / "device-check.log").read_text() == out + err
    assert [p.name for p in tmp_path.glob("device-check-*")] == []  # removed


def test_a_signal_before_the_environment_is_read_starts_nothing_more(tmp_path):
    """SIGTERM as environment.txt's first line (the date) is written: exit 143 with one
    line; neither Python nor the tests are started."""
    _, rc, out, err = _run_signalled(tmp_path, "date", "+%Y-%m-%dT")
    assert (rc, out, err) == (
        143, "", "device_check.sh: interrupted while reading the environment (exit 143)\n")
    env_lines = (tmp_path / "out" / "environment.txt").read_text().splitlines()
    assert len(env_lines) == 1 and env_lines[0].endswith("Z"), env_lines
    assert (tmp_path / "out" / "device-check.log").read_text() == err


@pytest.mark.parametrize("code,name", [(130, "SIGINT"), (129, "SIGHUP")])
def test_the_other_signals_end_it_between_steps_too(code, name, tmp_path):
    """SIGINT and SIGHUP between the tests and the check: their own codes, the same
    line, the check not started."""
    repo, rc, out, err = _run_signalled(tmp_path, "mktemp", "device-check-XXXXXX",
                                        name[3:])
    assert (rc, err) == (
        code, "device_check.sh: interrupted after the CUDA tests, before "
        f"scripts/gpu_check.py (exit {code})\n"), name
    assert out.endswith("== CUDA tests: exit 0\n")
    assert not (repo / "scripts" / "ran").exists()
