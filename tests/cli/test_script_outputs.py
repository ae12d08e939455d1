"""The scripts of scripts/ on stdout or a file that fails (``console.script_main``): as
``bench.py``, stdout on a full disk (``> /dev/full``) is one line on stderr and exit 1,
naming a file written all the same; a reader that went away (``| head``) exit 141 and
no line; an output file that cannot be written (``--json /dev/full``) one line
(``PROG: error: cannot write PATH: REASON``) and exit 1; never a traceback. Each script
by its ``--help``, and the cheapest real run of those that have one (no bench.py run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from script_module import ROOT

FULL = "No space left on device"

#: script -> the PROG its error lines start with
PROGS = {"aa_false_positive": "aa_false_positive.py", "byte_sweep": "byte_sweep.py",
         "codec_fit": "codec_fit.py", "decode_step_check": "decode_step_check",
         "gpu_check": "gpu_check", "hot_path_bench": "hot_path_bench.py",
         "oracle_cost": "oracle_cost.py", "ring_bench": "ring_bench.py",
         "variant_table": "variant_table.py", "verify_step_bench": "verify_step_bench"}

PUBLISHED = str(ROOT / "results" / "published" / "variants" / "variants.json.gz")
BYTE_SWEEP = ["--num-running", "1", "--steps", "1", "--formats", "numeric",
              "--vocab-sizes", "2", "--codecs", "msgpack"]
BYTE_SWEEP_PROGRESS = "... numeric ids, vocabulary 2, uniform token ids\n"
VARIANT_TABLE = ["--table-from", PUBLISHED, "--only", "send packed zipf", "--compact",
                 "--batch-sizes", "1"]


def _run(script: str, argv: list[str], stdout) -> subprocess.CompletedProcess:
    """``python scripts/SCRIPT.py ARGV...`` with ``stdout`` (a descriptor or file)."""
    return subprocess.run([sys.executable, str(ROOT / "scripts" / f"{script}.py"), *argv],
                          stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120,
                          cwd=ROOT)


def to_full(script: str, *argv: str) -> subprocess.CompletedProcess:
    """The script with stdout on a full disk (``> /dev/full``)."""
    with open("/dev/full", "w") as full:
        return _run(script, list(argv), full)


def to_closed_pipe(script: str, *argv: str) -> subprocess.CompletedProcess:
    """The script with stdout a pipe whose reader has gone (every write: EPIPE)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return _run(script, list(argv), write)
    finally:
        os.close(write)


def stdout_line(script: str, written: str = "") -> str:
    return f"{PROGS[script]}: error: cannot write to stdout: {FULL}{written}\n"


def test_every_script_is_covered():
    assert sorted(PROGS) == sorted(p.stem for p in (ROOT / "scripts").glob("*.py"))


@pytest.mark.parametrize("script", sorted(PROGS))
def test_help_to_a_full_disk_is_one_line_and_exit_1(script):
    out = to_full(script, "--help")
    assert (out.returncode, out.stderr) == (1, stdout_line(script))


@pytest.mark.parametrize("script", sorted(PROGS))
def test_help_to_a_closed_pipe_is_quiet_and_exit_141(script):
    out = to_closed_pipe(script, "--help")
    assert (out.returncode, out.stderr) == (141, "")


#: (script, arguments of a cheap real run that prints to stdout, stderr's lines before
#: the error line)
RUNS = [
    ("byte_sweep", BYTE_SWEEP, BYTE_SWEEP_PROGRESS),
    ("ring_bench", ["--iterations", "1", "--sizes", "64", "--transports", "zmq-ipc"], ""),
    ("oracle_cost", ["--num-running", "1", "--pairs", "1"], ""),
    ("hot_path_bench", ["--list"], ""),
    ("variant_table", VARIANT_TABLE, ""),
]


@pytest.mark.parametrize("script,argv,before", RUNS, ids=[r[0] for r in RUNS])
def test_a_run_to_a_full_disk_is_one_line_and_exit_1(script, argv, before):
    out = to_full(script, *argv)
    assert (out.returncode, out.stderr) == (1, before + stdout_line(script))


@pytest.mark.parametrize("script,argv,before", RUNS, ids=[r[0] for r in RUNS])
def test_a_run_to_a_closed_pipe_is_quiet_and_exit_141(script, argv, before):
    out = to_closed_pipe(script, *argv)
    assert (out.returncode, out.stderr) == (141, before)


def _codec_fit_runs(tmp_path: Path) -> list[str]:
    """``--fit-run`` and ``--check-run`` folders of synthetic summaries (no run)."""
    from test_script_arguments import _case, _fit_run, _run as summary_run

    check = summary_run(tmp_path / "check", [_case(p, "msgpack", 1024, 36000.0)
                                             for p in ("send", "cached")])
    return ["--fit-run", _fit_run(tmp_path / "fit"), "--check-run", check, "--stat", "mean"]


#: (script, arguments whose output file is FILE, what the stdout line says of it,
#: stderr's lines before the error line)
FILES = [
    ("byte_sweep", BYTE_SWEEP + ["--json", "FILE"], "the rows are in FILE",
     BYTE_SWEEP_PROGRESS),
    ("codec_fit", ["CODEC_FIT_RUNS", "--json", "FILE"], "the fits are in FILE", ""),
    ("variant_table", VARIANT_TABLE + ["--figure", "FILE"], "the figure is in FILE", ""),
    ("hot_path_bench", ["--only", "schedule digest repeat B=1", "-p", "1", "-n", "1", "-w",
                        "0", "-l", "1", "-o", "FILE"], "the results are in FILE", ""),
]


def _argv(argv: list[str], file: str, tmp_path: Path) -> list[str]:
    out = []
    for a in argv:
        out += _codec_fit_runs(tmp_path) if a == "CODEC_FIT_RUNS" else [a.replace("FILE",
                                                                               file)]
    return out


@pytest.mark.parametrize("script,argv,note,before", FILES[:3], ids=[f[0] for f in FILES[:3]])
def test_an_output_file_on_a_full_disk_is_one_line_and_exit_1(script, argv, note, before,
                                                              tmp_path):
    out = _run(script, _argv(argv, "/dev/full", tmp_path), subprocess.DEVNULL)
    assert (out.returncode, out.stderr) == (
        1, f"{before}{PROGS[script]}: error: cannot write /dev/full: {FULL}\n")


@pytest.mark.parametrize("script,argv,note,before", FILES, ids=[f[0] for f in FILES])
def test_stdout_that_fails_names_the_file_written(script, argv, note, before, tmp_path):
    file = str(tmp_path / "out.file")
    out = to_full(script, *_argv(argv, file, tmp_path))
    assert (out.returncode, out.stderr) == (
        1, before + stdout_line(script, "; " + note.replace("FILE", file)))
    assert Path(file).stat().st_size > 0
