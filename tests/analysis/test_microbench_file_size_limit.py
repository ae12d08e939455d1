"""``microbench`` under a file-size limit (``ulimit -f``) its pyperf files cannot fit
timed every benchmark, then failed (``cannot write DIR/send.json: File too large;
nothing was written``). It is refused before anything is measured or made, where the
limit is below the fewest bytes an arm's file can take
(``microbench.least_arm_file_bytes``): one line, exit 2, as bad input."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

from test_microbench import (ROOT, _earlier_results, _files,  # noqa: F401
                             earlier_dir, run_dir)


def _limited(args, limit: int):
    def set_limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    # no bytecode written: CPython writes a .pyc cut short at the limit, unnoticed
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "bench.py", "microbench", *map(str, args)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          preexec_fn=set_limit, env=env)


@pytest.mark.parametrize("limit, words", [
    (1024, "ulimit -f 1: 1 KiB a file"),
    (1000, "1,000 bytes a file"),
])
def test_a_limit_the_files_cannot_fit_is_refused_before_measuring(
        run_dir, tmp_path, limit, words):  # noqa: F811 (fixture)
    out = tmp_path / "mb"
    proc = _limited([run_dir, "--output", out], limit)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", f"bench.py microbench: error: the file-size limit ({words}) is below what "
               "send.json needs (at least 3,765 bytes for its 8 benchmarks); raise it (e.g. "
               "ulimit -f unlimited), or time fewer benchmarks\n")
    assert not out.exists()


def test_earlier_results_stay_as_they_were(run_dir, earlier_dir,
                                           tmp_path):  # noqa: F811 (fixture)
    out = tmp_path / "mb"
    before = _earlier_results(earlier_dir, out)
    proc = _limited([run_dir, "--output", out], 1024)
    assert (proc.returncode, proc.stderr) == (
        2, "bench.py microbench: error: the file-size limit (ulimit -f 1: 1 KiB a file) is "
           "below what send.json needs (at least 3,765 bytes for its 8 benchmarks); raise it "
           "(e.g. ulimit -f unlimited), or time fewer benchmarks\n")
    assert _files(out) == before


def test_the_least_size_is_below_a_file_pyperf_wrote(run_dir, earlier_dir):  # noqa: F811
    from ipc_bench.analysis.microbench import (Selection, arm_benchmarks,
                                               least_arm_file_bytes, select_captures)

    selection = Selection(num_running=(4,), directions=("s2r",))
    items = arm_benchmarks(select_captures(str(run_dir), selection), "send", selection)
    least = least_arm_file_bytes(str(run_dir), "send", items, {"processes": 1, "values": 1})
    assert (len(items), least) == (2, 525)
    assert least < (earlier_dir / "send.json").stat().st_size
