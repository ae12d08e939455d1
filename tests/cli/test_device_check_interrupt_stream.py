"""``scripts/device_check.sh``'s interrupt line goes to stderr (and the log) wherever the
signal lands: during the CUDA tests and during ``gpu_check.py`` it went to stdout, while
one between two steps went to stderr, so a wrapper reading stderr for the reason found
nothing."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

from device_check_repo import CHECK_HEAD, script_copy, script_env, stand_in_python

# A gpu_check.py that writes a run folder, then waits (the signal lands there).
_CHECK = CHECK_HEAD + '''\
    out = Path(build_parser().parse_args().output)
    (out / "1-smoke").mkdir(parents=True)
    Path(__file__).with_name("wrote").write_text("")
    time.sleep(30)
'''


def _repo(tmp_path: Path, tests_sleep: bool) -> tuple[Path, Path]:
    repo = script_copy(tmp_path, _CHECK)
    # torch's line and the CUDA tests stood in for
    python = stand_in_python(tmp_path, f"touch {tmp_path}/tests-started; "
                                       f"{'exec sleep 30' if tests_sleep else 'exit 0'}")
    return repo, python


def _interrupt(tmp_path: Path, tests_sleep: bool, ready: Path):
    repo, python = _repo(tmp_path, tests_sleep)
    env = script_env(python, tmp_path)
    proc = subprocess.Popen(["bash", str(repo / "scripts" / "device_check.sh"),
                             str(tmp_path / "out")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / ready).exists():
            assert time.monotonic() < deadline and proc.poll() is None, proc.poll()
            time.sleep(0.05)
        time.sleep(0.3)  # the step's command is running
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err


def test_a_signal_during_the_cuda_tests_says_so_on_stderr(tmp_path):
    code, out, err = _interrupt(tmp_path, True, Path("tests-started"))
    assert (code, out, err) == (
        143, "== CUDA tests (at most 60 s)\n== CUDA tests: exit 143\n",
        "device_check.sh: interrupted during the CUDA tests (exit 143)\n")
    assert (tmp_path / "out" / "device-check.log").read_text() == out + err


def test_a_signal_during_the_check_says_so_on_stderr(tmp_path):
    code, out, err = _interrupt(tmp_path, False, Path("repo/scripts/wrote"))
    assert code == 143
    assert err == "device_check.sh: interrupted during scripts/gpu_check.py (exit 143)\n"
    assert out.splitlines()[-2] == "== scripts/gpu_check.py: exit 143"
    assert out.splitlines()[-1].endswith(
        f"packed as {tmp_path / 'out'}/gpu-check.tar.gz; {tmp_path}/"
        f"{out.splitlines()[-1].split(str(tmp_path) + '/')[1].split('/')[0]} is removed")
    assert "interrupted" not in out
    assert (tmp_path / "out" / "device-check.log").read_text() == out + err
