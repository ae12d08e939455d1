"""The pyperf commands ``bench.py microbench`` prints after a run are shell lines to
paste (``microbench.pyperf_command_lines``, ``errors.shell_line``): an output folder
with a space (``--output '/r/mb dir'``) gives ``python -m pyperf stats '/r/mb
dir/send.json'``, where it printed ``python -m pyperf stats /r/mb dir/send.json``,
which a shell splits in two."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ipc_bench.analysis import microbench
from microbench_runs import FRAME_RUN, PYPERF, finished_run

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory, "pyperf-commands", FRAME_RUN)


def test_the_commands_quote_a_path_a_shell_would_split():
    assert microbench.pyperf_command_lines(["/r/mb dir/send.json", "/r/mb dir/cached.json"]) \
        == ["\ncompare: python -m pyperf compare_to '/r/mb dir/send.json' "
            "'/r/mb dir/cached.json' --table",
            "stats:   python -m pyperf stats '/r/mb dir/send.json'",
            "check:   python -m pyperf check '/r/mb dir/send.json'"]
    assert microbench.pyperf_command_lines(["/r/a\nb/send.json"]) == [
        "stats:   python -m pyperf stats $'/r/a\\x0ab/send.json'",
        "check:   python -m pyperf check $'/r/a\\x0ab/send.json'"]
    assert microbench.pyperf_command_lines(["/r/mb/send.json"]) == [
        "stats:   python -m pyperf stats /r/mb/send.json",
        "check:   python -m pyperf check /r/mb/send.json"]


def test_a_run_into_a_folder_with_a_space_prints_quoted_commands(finished, tmp_path):
    out = tmp_path / "mb dir"
    proc = subprocess.run([sys.executable, "bench.py", "microbench", str(finished),
                           "--codecs", "msgpack", "--directions", "s2r", "--ops", "encode",
                           *PYPERF, "--output", str(out)], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-2:] == [
        f"stats:   python -m pyperf stats '{out}/send.json'",
        f"check:   python -m pyperf check '{out}/send.json'"]
    check = subprocess.run(proc.stdout.splitlines()[-1].split(":", 1)[1], shell=True,
                           cwd=REPO, capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stderr
