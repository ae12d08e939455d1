"""A script's ``--json`` that is its own stdout or stderr, once that stream failed.

``byte_sweep.py --json /dev/stdout > /dev/full`` (``/dev/fd/1``, ``/proc/self/fd/1``)
writes its rows nowhere: stdout's line must not say they are in ``/dev/stdout``
(``console.write_output``: ``the rows were not written either (--json is stdout)``).
``--json /dev/stderr 2> /dev/full`` loses them too: exit 1, not 0.
"""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from script_module import ROOT
from test_script_outputs import BYTE_SWEEP, BYTE_SWEEP_PROGRESS, FULL, _codec_fit_runs

from ipc_bench.cli import console


def _run(script: str, argv: list[str], stdout, stderr=subprocess.PIPE
         ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / f"{script}.py"), *argv],
                          stdout=stdout, stderr=stderr, text=True, timeout=120, cwd=ROOT)


@pytest.mark.parametrize("path", ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"])
def test_byte_sweep_json_to_its_own_failed_stdout_says_the_rows_were_not_written(path):
    with open("/dev/full", "w") as full:
        out = _run("byte_sweep", BYTE_SWEEP + ["--json", path], full)
    assert (out.returncode, out.stderr) == (
        1, f"{BYTE_SWEEP_PROGRESS}byte_sweep.py: error: cannot write to stdout: {FULL}; "
           "the rows were not written either (--json is stdout)\n")


def test_codec_fit_json_to_its_own_failed_stdout_says_the_fits_were_not_written(tmp_path):
    with open("/dev/full", "w") as full:
        out = _run("codec_fit", _codec_fit_runs(tmp_path) + ["--json", "/dev/stdout"], full)
    assert (out.returncode, out.stderr) == (
        1, f"codec_fit.py: error: cannot write to stdout: {FULL}; "
           "the fits were not written either (--json is stdout)\n")


def test_byte_sweep_json_to_its_own_failed_stderr_exits_1():
    with open("/dev/full", "w") as full:
        out = _run("byte_sweep", BYTE_SWEEP + ["--json", "/dev/stderr"], subprocess.DEVNULL,
                   full)
    assert out.returncode == 1


def test_write_output_to_a_failed_stderr_is_refused(monkeypatch):
    err = console.GuardedStream(io.StringIO(), 2)
    err.error = OSError(28, FULL)
    monkeypatch.setattr(sys, "stderr", err)
    with pytest.raises(SystemExit) as exc:
        console.write_output("/dev/stderr", "[]\n", "byte_sweep.py",
                             "the rows are in /dev/stderr")
    assert exc.value.code == (f"byte_sweep.py: error: cannot write /dev/stderr: {FULL} "
                              "(--json is stderr, which failed)")


def test_write_output_to_a_failed_stdout_notes_the_rows_were_not_written(monkeypatch):
    out = console.GuardedStream(io.StringIO(), 1)
    out.error = OSError(28, FULL)
    monkeypatch.setattr(sys, "stdout", out)
    console.write_output("/dev/stdout", "[]\n", "codec_fit.py", "the fits are in /dev/stdout")
    console.write_output("/dev/fd/1", "[]\n", "x.py", "the study is in DIR")
    assert out.written == ("the fits were not written either (--json is stdout); "
                           "the study was not written either (--json is stdout)")
