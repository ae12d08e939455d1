"""``bench.py microbench`` whose stdout fails after its files are written: one line on
stderr that says where the results are (``console.written_elsewhere``), exit 1, no
traceback; and ``Console``'s line itself, with and without such a note."""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ipc_bench.cli import console as console_mod
from ipc_bench.cli.console import Console, written_elsewhere
from microbench_runs import finished_run

REPO = Path(__file__).resolve().parents[2]
TINY = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "20", "--warmup-steps",
        "2", "--policies", "send,cached", "--codecs", "msgpack", "--no-single-process",
        "--no-floor", "--quiet"]
#: 2 benchmarks per arm, one worker process and one value each: about 3 s.
QUICK = ["--directions", "s2r", "-p", "1", "-n", "1", "-w", "0", "-l", "1"]
FILES = ["cached.json", "in_loop_vs_pyperf.json", "send.json"]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A finished two-case run folder (send and cached, msgpack), with captures."""
    return finished_run(tmp_path_factory, "mbout", TINY)


def _microbench(run: Path, stdout, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "bench.py", "microbench", str(run), *QUICK,
                           *args], cwd=REPO, stdout=stdout, stderr=subprocess.PIPE,
                          text=True, timeout=300)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_full_stdout_says_the_files_replacing_the_earlier_ones_are_written(run):
    out = run / "microbench"
    first = _microbench(run, subprocess.DEVNULL)
    assert first.returncode == 0, first.stderr
    earlier = _files(out)
    assert sorted(earlier) == FILES
    with open("/dev/full", "w") as full:
        proc = _microbench(run, full)
    lines = proc.stderr.splitlines()
    assert (proc.returncode, lines[-2:]) == (1, [
        f"microbench: replaced the earlier send.json, cached.json, in_loop_vs_pyperf.json "
        f"in {out}",
        f"bench.py microbench: error: cannot write to stdout: No space left on device; the "
        f"results are in {out} (send.json, cached.json, in_loop_vs_pyperf.json)"])
    assert "Traceback" not in proc.stderr and proc.stderr.count("error") == 1
    now = _files(out)
    assert sorted(now) == FILES  # no new or temporary file left
    assert all(now[name] != earlier[name] for name in FILES)  # the new results, whole
    for name in ("send.json", "cached.json"):
        assert now[name].rstrip().endswith(b"}")


def test_stdout_closed_at_start_is_refused_first_and_a_closed_pipe_says_nothing(
        run, tmp_path):
    out = tmp_path / "mb"
    out.mkdir()
    (out / "send.json").write_text("earlier")
    proc = subprocess.run([sys.executable, "bench.py", "microbench", str(run), *QUICK,
                           "--output", str(out)], cwd=REPO, capture_output=True, text=True,
                          timeout=300, preexec_fn=lambda: os.close(1))
    # refused before any benchmark, as a run and a report are: the earlier file kept
    assert (proc.returncode, proc.stderr) == (
        2, "bench.py microbench: error: stdout is closed (>&-): the comparison table would "
           "go nowhere; send it to a file, or to /dev/null to keep the pyperf files alone\n")
    assert [p.name for p in out.iterdir()] == ["send.json"]
    assert (out / "send.json").read_text() == "earlier"
    read_end, write_end = os.pipe()
    os.close(read_end)  # | head -0: the reader is gone before the table is printed
    try:
        piped = _microbench(run, write_end, "--output", str(tmp_path / "mb2"))
    finally:
        os.close(write_end)
    assert piped.returncode == 141
    assert "error" not in piped.stderr
    assert sorted(_files(tmp_path / "mb2")) == FILES


class _Full(io.StringIO):
    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


class _Gone(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


@pytest.mark.parametrize("stdout, note, code, line", [
    (_Full, None, 1, "prog: error: cannot write to stdout: No space left on device\n"),
    (_Full, "the results are in D (a.json)", 1,
     "prog: error: cannot write to stdout: No space left on device; the results are in D "
     "(a.json)\n"),
    (_Gone, "the results are in D (a.json)", 141, ""),  # a broken pipe costs nothing
    (io.StringIO, "the results are in D (a.json)", 0, ""),  # stdout written: no line
])
def test_the_console_line_ends_with_what_was_written_elsewhere(monkeypatch, stdout, note,
                                                               code, line):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stdout", stdout())
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(console_mod, "_open_std_fds", lambda: None)
    console = Console.install()
    if note is not None:
        written_elsewhere(note)
    print("table")
    assert console.restore(0, "prog") == code
    assert err.getvalue() == line


def test_written_elsewhere_without_a_guarded_stdout_does_nothing(monkeypatch):
    plain = io.StringIO()
    monkeypatch.setattr(sys, "stdout", plain)
    written_elsewhere("the results are in D")
    assert not hasattr(plain, "written")
