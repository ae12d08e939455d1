"""A script that writes its ``--json`` file as it goes (decode_step_check.py, after each
configuration) writes a stream or device once, at the end: ``--json /dev/stdout >
out.txt`` held one JSON document per configuration and one more, since a descriptor
keeps every write where a file is replaced whole (``console.replaced_whole``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from ipc_bench.cli.console import replaced_whole
from script_module import ROOT


def test_only_a_regular_file_or_a_new_path_is_replaced_whole(tmp_path):
    new = tmp_path / "new.json"
    assert replaced_whole(str(new))
    new.write_text("{}")
    assert replaced_whole(str(new))
    assert not replaced_whole("/dev/stdout")
    assert not replaced_whole("/dev/stderr")
    assert not replaced_whole("/proc/self/fd/1")
    assert not replaced_whole("/dev/null")
    assert not replaced_whole("/dev/full")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert not replaced_whole(str(fifo))


def test_decode_step_check_json_to_dev_stdout_is_one_document(tmp_path):
    out = tmp_path / "out.txt"
    with open(out, "w") as f:
        done = subprocess.run(
            [sys.executable, "scripts/decode_step_check.py", "--configs", "gather",
             "--num-running", "2", "--steps", "2", "--warmup", "1", "--json", "/dev/stdout"],
            stdout=f, stderr=subprocess.PIPE, text=True, timeout=240, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert text.count('"complete"') == 1
    start = text.index('{\n "complete"')
    assert text[:start].startswith("device ")  # the table, printed first, is kept
    record = json.loads(text[start:])
    assert record["complete"] is True and record["not_run"] == []
    assert [(r["config"], r["num_running"]) for r in record["rows"]] == [
        ("gather", 2), ("gather", 3)]
