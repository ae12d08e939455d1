"""A script's ``bench.py`` child starts with SIGINT / SIGTERM / SIGHUP blocked
(``signals.child_start``), so a signal the script passes on to it while the child's
interpreter is still starting (``site`` importing the installed packages, before
bench.py's first statement blocks them) waits for its handlers: the script ends with its
one line and exit 130, never the child's ``KeyboardInterrupt`` traceback and ``bench.py
exited 1``; ``scripts/gpu_check.py``'s stage child the same (its log held the
traceback). The child is held in its start-up by a ``sitecustomize`` module (imported by
``site``) until the signal passed on is pending in it, or it has exited."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: Held in ``site`` (a bench.py process only): writes its pid to HOLD_DIR/pid, then
#: sleeps until HOLD_DIR/go exists (at most 60 s: the test's waits for the script's
#: start and the signal's passing on take seconds on a loaded machine), as an
#: interpreter slow to start.
SITECUSTOMIZE = """
import os, time
if b"bench.py" in open("/proc/self/cmdline", "rb").read():
    hold = os.environ["HOLD_DIR"]
    with open(os.path.join(hold, "pid.tmp"), "w") as f:
        f.write(str(os.getpid()))
    os.rename(os.path.join(hold, "pid.tmp"), os.path.join(hold, "pid"))
    end = time.monotonic() + 60
    while not os.path.exists(os.path.join(hold, "go")) and time.monotonic() < end:
        time.sleep(0.01)
"""


def _pending(pid: int) -> int | None:
    """The signals pending for process ``pid`` (``SigPnd`` | ``ShdPnd``); ``None``
    once it has exited (gone or a zombie)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    if fields["State"].split()[0] in ("Z", "X"):
        return None
    return int(fields["SigPnd"], 16) | int(fields["ShdPnd"], 16)


def _wait(cond, limit_s: float = 60.0):
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        value = cond()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError("timed out")


def _interrupt_starting_child(tmp_path: Path, script: str, args: list[str]):
    """Run ``scripts/SCRIPT.py ARGS`` with its ``bench.py`` child held in start-up,
    SIGINT it once the child is there, release the child once the signal passed on is
    pending in it (or it has exited); (exit code, stdout, stderr)."""
    hold = tmp_path / "hold"
    hold.mkdir()
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = dict(os.environ, HOLD_DIR=str(hold), PYTHONPATH=str(tmp_path / "site"))
    proc = subprocess.Popen([sys.executable, str(REPO / "scripts" / f"{script}.py"), *args],
                            cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        child = int(_wait(lambda: (hold / "pid").is_file() and (hold / "pid").read_text()))
        proc.send_signal(signal.SIGINT)
        bit = 1 << (signal.SIGINT - 1)
        # passed on: pending in the child (blocked), or the child died of it (old code)
        _wait(lambda: (p := _pending(child)) is None or p & bit)
        (hold / "go").touch()
        out, err = proc.communicate(timeout=30)
    finally:
        (hold / "go").touch()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err


def test_sigint_passed_on_to_a_starting_child_is_one_line_and_exit_130(tmp_path):
    study = tmp_path / "study"
    code, out, err = _interrupt_starting_child(
        tmp_path, "aa_false_positive",
        ["--pairs", "6", "--steps", "50", "--load", "idle", "--output", str(study)])
    cmd = (f"{REPO / 'bench.py'} --scenario decode-steady --no-floor --no-single-process "
           f"--quiet --output {study / 'idle' / 'aa'} --aa --policies send --codecs "
           f"msgpack --seed 0 --num-running 64 --steps 50 --repeat 6")
    assert (code, out, err) == (130, "", (
        f"running: {cmd}\n"
        f"aa_false_positive.py: interrupted by SIGINT; the study so far is in "
        f"{study} (0 bench.py runs complete) (exit 130)\n"))


def test_gpu_check_stage_child_interrupted_while_starting_exits_130(tmp_path):
    check = tmp_path / "check"
    code, out, err = _interrupt_starting_child(
        tmp_path, "gpu_check", ["--device", "cpu", "--stages", "1", "--budget-s", "60",
                                "--output", str(check)])
    assert (code, err) == (130, f"gpu_check.py: interrupted by SIGINT; results "
                                f"so far in {check} (exit 130)\n")
    assert re.fullmatch(r"gpu_check: \[smoke\] stopped: SIGINT passed on; \d+\.\d s later "
                        r"it exited 130", out.splitlines()[-1])
    assert (check / "1-smoke.log").read_text() == "bench.py: interrupted by SIGINT (exit 130)\n"
