"""Output paths of the scripts of scripts/ checked before any work and without blocking:
a named FIFO, a socket or a block device given as ``--json`` (``options.writable_file``)
or pyperf's ``-o`` / ``--append`` is one line and exit 2, where a FIFO with no reader
hung the script at its start (signals held until its handlers were installed: only
SIGKILL ended it); a character device (``/dev/null``, ``/dev/full``) and a pipe of the
process's own (``/dev/stdout`` piped on, ``/dev/fd/N``) are taken, and ``write_output``
writes the latter (it resolved ``/dev/stdout`` to ``/proc/PID/fd/pipe:[N]`` and failed)."""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys

import pytest

from script_module import ROOT, load_script

from ipc_bench.cli.console import write_output
from ipc_bench.cli.options import output_problem, special_file_problem

FIFO_WHY = "not a regular file (a FIFO: writing it waits for a reader; give a file, or /dev/stdout)"


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return str(path)


def test_a_fifo_a_socket_and_a_block_device_are_refused(fifo, tmp_path):
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "sock"))
        # the words after "argument -o: " (pyperf's -o, --append, --figure)
        assert output_problem(fifo) == f"cannot write {fifo}: {FIFO_WHY}"
        assert output_problem(str(tmp_path / "sock")) == (
            f"cannot write {tmp_path / 'sock'}: not a regular file (a socket)")
    finally:
        sock.close()
    block = next((f"/dev/{n}" for n in ("loop0", "sda", "vda", "nvme0n1")
                  if os.path.exists(f"/dev/{n}")), None)
    if block is not None:
        assert special_file_problem(block) == f"{block}: not a regular file (a block device)"


def test_character_devices_files_and_own_pipes_are_taken(tmp_path):
    read, write = os.pipe()
    try:
        assert [output_problem(p) for p in ("/dev/null", "/dev/full", f"/dev/fd/{write}",
                                            str(tmp_path / "new.json"))] == [None] * 4
    finally:
        os.close(read)
        os.close(write)
    assert not (tmp_path / "new.json").exists()  # the check leaves no file behind


def test_json_to_a_fifo_is_refused_at_once_as_a_command(fifo):
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "byte_sweep.py"),
                           "--num-running", "4", "--steps", "1", "--json", fifo],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", f"byte_sweep.py: error: argument --json: {fifo}: {FIFO_WHY}\n")


def test_write_output_writes_an_own_pipe():
    read, write = os.pipe()
    try:
        write_output(f"/dev/fd/{write}", '{"rows": []}\n', "byte_sweep.py", "the rows")
        assert os.read(read, 100) == b'{"rows": []}\n'
    finally:
        os.close(read)
        os.close(write)


def _decode_step_check():
    module = sys.modules.get("decode_step_check")
    if getattr(module, "__file__", None) == str(ROOT / "scripts" / "decode_step_check.py"):
        return module
    return load_script("decode_step_check")


def test_decode_step_check_json_to_a_fifo_is_refused(fifo):
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        _decode_step_check().writable_file(fifo)
    assert str(refused.value) == f"{fifo}: {FIFO_WHY}"


def test_decode_step_check_json_that_fails_keeps_the_earlier_file(tmp_path):
    dsc = _decode_step_check()
    rows = tmp_path / "rows.json"
    rows.write_text("earlier\n")
    progress = dsc.Progress(configs=["gather"])
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (10, hard))  # ulimit -f: EFBIG at 10 bytes
    try:
        error = dsc.write_json(str(rows), progress)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert error == f"decode_step_check.py: error: cannot write {rows}: File too large"
    assert rows.read_text() == "earlier\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.json"]
    assert dsc.write_json("/dev/full", progress) == (
        "decode_step_check.py: error: cannot write /dev/full: No space left on device")
    assert dsc.write_json(str(rows), progress) is None
    assert json.loads(rows.read_text())["not_run"] == ["gather"]


def test_new_output_problem(tmp_path):
    from ipc_bench.cli.options import new_output_problem

    earlier = tmp_path / "earlier.json"
    earlier.write_text("{}")
    assert [new_output_problem(p) for p in (str(earlier), os.devnull,
                                            str(tmp_path / "new.json"))] == [
        f"{earlier}: already exists (pyperf's -o writes only a new file: give another "
        f"path, or add to it with --append {earlier})",
        "/dev/null: already exists (pyperf's -o writes only a new file: give another path)",
        None]


@pytest.mark.parametrize("name", ["hot_path_bench", "variant_table"])
def test_pyperf_output_that_exists_is_refused_on_stderr(name, tmp_path):
    earlier = tmp_path / "earlier.json"
    earlier.write_text("{}")
    with open("/dev/full", "w") as full:  # pyperf's own refusal went to stdout: lost
        done = subprocess.run([sys.executable, str(ROOT / "scripts" / f"{name}.py"), "-o",
                               str(earlier)], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=60, cwd=ROOT)
    assert (done.returncode, done.stderr) == (
        2, f"{name}.py: error: argument -o: {earlier}: already exists (pyperf's -o writes "
        f"only a new file: give another path, or add to it with --append {earlier})\n")
    assert earlier.read_text() == "{}"
