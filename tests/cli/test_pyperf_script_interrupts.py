"""SIGINT / SIGTERM to the pyperf scripts (hot_path_bench, variant_table): one line on
stderr, ``NAME.py: interrupted by SIGINT (exit 130)``, the ``--append`` file byte for
byte as it was, no ``-o`` file and no temporary file beside either, pyperf's worker
processes gone; a run that finishes renames its results into place. Each interrupt
comes once pyperf has written a benchmark's results (to the temporary file)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from fault_helpers import children

ROOT = Path(__file__).resolve().parents[2]
START_S = 60
#: pyperf's smallest settings: one worker, one value, no warmup, one loop.
FAST = ("-p", "1", "-n", "1", "-w", "0", "-l", "1")
#: Slow enough that the run is still going when the first benchmark is in the file.
SLOWER = ("-p", "3", "-n", "1", "-w", "0", "-l", "1")
HOT_ONE = "encode SchedulerOutput msgpack B=1"


def _script(name: str, *argv: str) -> list[str]:
    return [sys.executable, str(ROOT / "scripts" / f"{name}.py"), *argv]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _names(path: Path) -> list[str]:
    return [b["metadata"]["name"] for b in json.loads(path.read_text())["benchmarks"]]


def _grown(folder: Path, pattern: str, size: int):
    """A ``ready`` test: a file matching ``pattern`` in ``folder`` is over ``size``
    bytes (pyperf added a benchmark to the --append file or the copy it writes to)."""
    def ready() -> bool:
        for p in folder.glob(pattern):
            try:
                if p.stat().st_size > size:
                    return True
            except FileNotFoundError:
                pass
        return False
    return ready


def _tmp_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


#: How long the workers of an interrupted script may take to be gone, in seconds: a
#: worker started as the signal came is killed by its parent's death, not waited for,
#: and a loaded machine can take seconds to run its exit.
GONE_WITHIN_S = 30


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command name (the state at index 0,
    the start time at index 19: proc(5)'s fields 3 and 22); ``[]`` once ``pid`` is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _interrupt(cmd: list[str], ready, sig: int) -> tuple[int, str, list[tuple[int, str]]]:
    """Run ``cmd`` in its own process group, send ``sig`` to the group (as a
    terminal's Ctrl-C does) once ``ready()``; (exit code, stderr, the children seen
    while it ran: pid and start time, so that a pid used again is not taken for one)."""
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    seen: set[tuple[int, str]] = set()

    def look() -> None:
        seen.update((pid, fields[19]) for pid in children(proc.pid)
                    if len(fields := _stat(pid)) > 19)

    deadline = time.monotonic() + START_S
    while not ready():
        look()
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError(f"not ready (exit {proc.returncode}):\n{out}\n{err}")
        time.sleep(0.02)
    look()
    os.killpg(proc.pid, sig)
    _, err = proc.communicate(timeout=START_S)
    return proc.returncode, err, sorted(seen)


def _running(child: tuple[int, str]) -> bool:
    """Whether ``child`` (pid, start time) is a process that is not a zombie."""
    fields = _stat(child[0])
    return len(fields) > 19 and fields[0] != "Z" and fields[19] == child[1]


def _gone(pids: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Those of ``pids`` (pid, start time) still running after up to ``GONE_WITHIN_S``."""
    deadline = time.monotonic() + GONE_WITHIN_S
    while any(map(_running, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [pid for pid in pids if _running(pid)]


def _first_suite(path: Path) -> str:
    subprocess.run(_script("hot_path_bench", "--only", HOT_ONE, *FAST, "-q", "-o", str(path)),
                   cwd=ROOT, check=True, capture_output=True)
    return _sha(path)


def test_hot_path_bench_append_finished_run_adds_its_benchmarks(tmp_path):
    path = tmp_path / "hot.json"
    _first_suite(path)
    subprocess.run(_script("hot_path_bench", "--only", "decode SchedulerOutput msgpack B=1",
                           *FAST, "-q", "--append", str(path)),
                   cwd=ROOT, check=True, capture_output=True)
    assert _names(path) == [HOT_ONE, "decode SchedulerOutput msgpack B=1"]
    assert _tmp_files(tmp_path) == []


def test_hot_path_bench_sigint_leaves_append_file_as_it_was(tmp_path):
    path = tmp_path / "hot.json"
    before = _first_suite(path)
    code, err, pids = _interrupt(
        _script("hot_path_bench", "--only", "msgpack", *SLOWER, "-q", "--append", str(path)),
        _grown(tmp_path, "*hot.json*", path.stat().st_size), signal.SIGINT)
    assert (code, err) == (130, "hot_path_bench.py: interrupted by SIGINT (exit 130)\n")
    assert _sha(path) == before
    assert _tmp_files(tmp_path) == []
    assert pids and _gone(pids) == []  # pyperf started workers; none is left


def test_hot_path_bench_sigterm_leaves_no_output_file(tmp_path):
    path = tmp_path / "new.json"
    code, err, pids = _interrupt(
        _script("hot_path_bench", "--only", "msgpack", *SLOWER, "-q", "-o", str(path)),
        _grown(tmp_path, "*new.json*", 0), signal.SIGTERM)
    assert (code, err) == (143, "hot_path_bench.py: interrupted by SIGTERM (exit 143)\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    assert pids and _gone(pids) == []  # pyperf started workers; none is left


def test_variant_table_sigint_leaves_append_file_as_it_was(tmp_path):
    path = tmp_path / "vt.json"
    before = _first_suite(path)
    code, err, pids = _interrupt(
        _script("variant_table", "--batch-sizes", "1", "--only", "msgpack uniform", *SLOWER,
                "-q", "--append", str(path)),
        _grown(tmp_path, "*vt.json*", path.stat().st_size), signal.SIGINT)
    assert (code, err) == (130, "variant_table.py: interrupted by SIGINT (exit 130)\n")
    assert _sha(path) == before
    assert _tmp_files(tmp_path) == []
    assert pids and _gone(pids) == []  # pyperf started workers; none is left
