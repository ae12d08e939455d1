"""scripts/null_sample_bench.py: bad input is one line and exit 2 before anything is
timed; a run prints its header and one row per size, the samplers checked equal first."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "null_sample_bench.py"


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("argv, line", [
    (["--small-batch", "-1"], "--small-batch: must be at least 0, got -1"),
    (["--small-batch", "257"], "--small-batch: must be at most 256, got 257"),
    (["--sizes", "1,2,2"], "--sizes: 2 given more than once"),
    (["--sizes", "0"], "--sizes: must be at least 1, got 0"),
    (["--sizes", "1,,2"], "--sizes: expected comma-separated integers, got '1,,2' (an item "
                          "is empty)"),
    (["--repeat", "0"], "--repeat: must be at least 1, got 0"),
    (["--token-ids", "nope"], "--token-ids: invalid choice: 'nope' (choose from 'uniform', "
                              "'zipf', 'hist')"),
])
def test_bad_input_is_one_line_and_exit_2(argv, line):
    out = _run(*argv)
    assert (out.returncode, out.stdout, out.stderr) == (
        2, "", f"null_sample_bench.py: error: {line}\n")


def test_a_run_prints_one_row_per_size():
    out = _run("--sizes", "1,9", "--repeat", "1", "--token-ids", "zipf")
    assert (out.returncode, out.stderr) == (0, "")
    head, columns, *rows = out.stdout.splitlines()
    assert head == "token ids zipf, SMALL_BATCH 8, median of 1 run, us per call"
    assert columns == "    n      old      new  old/new"
    assert [row.split()[0] for row in rows] == ["1", "9"]
    assert all(re.fullmatch(r"\s+\d+\s+\d+\.\d\s+\d+\.\d\s+\d+\.\dx", row) for row in rows)
