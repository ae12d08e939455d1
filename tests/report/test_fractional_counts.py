"""A hand-edited fractional count of steps or requests (``num_steps`` 1.5) is one
warning, ``not a whole number``, and its case left out, as for the other whole-number
fields; it read as 1 counted step in one warning (floor.csv's rows) and as 1.5 in
another (steps.csv's)."""

from __future__ import annotations

import json
import shutil

import pytest

from analysis_run import bench_in_process


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    where = tmp_path_factory.mktemp("fracrun") / "run"
    assert bench_in_process(["--scenario", "decode-steady", "--num-running", "4", "--steps",
                             "20", "--warmup-steps", "2", "--codecs", "msgpack",
                             "--no-single-process", "--quiet", "--output",
                             str(where)]).returncode == 0
    return where


@pytest.mark.parametrize("field", ["num_steps", "num_requests", "loop_steps",
                                   "num_warmup_steps", "num_total_steps"])
def test_a_fractional_count_is_one_line_and_its_case_left_out(run_dir, tmp_path, field):
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    summary = json.loads((copy / "summary.json").read_text())
    case = summary["cases"][1]
    case[field] = case[field] + 0.5
    (copy / "summary.json").write_text(json.dumps(summary))
    done = bench_in_process(["report", str(copy), "--no-figures", "--output",
                             str(tmp_path / "rep")])  # cli.main, in this process
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"bench.py report: warning: {copy}/summary.json: case {case['case_id']!r} has "
        f"{field} {case[field]:g}, not a whole number (left out)"]
