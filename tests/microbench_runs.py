"""Run folders for the ``bench.py microbench`` tests: a small finished run with its
captures, made once a session and copied to each test module (``finished_run``), and
what the frame tests do to its capture files (``copy_run``, ``capture_path``,
``edit_frames``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import msgspec

from analysis_run import shared_run

REPO = Path(__file__).resolve().parents[1]
#: One worker process of one value per benchmark, the loops not calibrated.
PYPERF = ["-p", "1", "-n", "1", "-w", "0", "-l", "1"]
#: How every microbench refusal begins.
ERROR = "bench.py microbench: error: "
#: A one-request run of send with the three codecs whose frames microbench checks (msgpack,
#: pickle, packed).
FRAME_RUN = ["--scenario", "decode-steady", "--num-running", "1", "--steps", "20",
             "--warmup-steps", "2", "--policies", "send", "--codecs", "msgpack,pickle,packed",
             "--no-single-process", "--no-floor", "--quiet"]


def finished_run(tmp_path_factory, name: str, args: list[str]) -> Path:
    """A run folder ``bench.py ARGS --output`` under a fresh ``name`` folder of the
    session's temporary folder: a copy of the session's run of ``args``
    (``analysis_run.shared_run``: made once, modules that ask for the same ``args``
    share it); fails the test (with bench.py's stderr) unless that run exits 0 within
    120 s."""
    folder = tmp_path_factory.mktemp(name) / "run"
    shutil.copytree(shared_run(tmp_path_factory, args, _make), folder)
    return folder


def _make(folder: Path, args: list[str]) -> None:
    proc = subprocess.run([sys.executable, "bench.py", *args, "--output", str(folder)],
                          cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def copy_run(run: Path, tmp_path: Path) -> Path:
    """A copy of the run folder ``run`` as ``tmp_path/run``, for a test to damage."""
    return Path(shutil.copytree(run, tmp_path / "run"))


def capture_path(run: Path, codec: str, direction: str) -> Path:
    """The repetition-0 capture file of the send case at 1 running request of ``run``
    with ``codec`` in ``direction`` (``s2r`` or ``r2s``)."""
    return run / "messages" / f"num_running=1.send.{codec}.r0.{direction}.msgpack"


def edit_frames(path: Path, edit) -> None:
    """Rewrite the capture file ``path`` with ``edit(frames)`` applied to its frames
    (a list of bytes, edited in place)."""
    data = msgspec.msgpack.decode(path.read_bytes())
    edit(data["frames"])
    path.write_bytes(msgspec.msgpack.encode(data))
