"""Every metadata value ``bench.py microbench`` gives pyperf is one line that pyperf
keeps as it is (``microbench.metadata_text``): a run folder named with a newline or a
carriage return (``t_nl<newline>x y``), and a capture whose case, workload or arm
holds one, are timed, their names escaped as ``errors.one_line`` escapes them, where
the arm failed (``pyperf run of arm send exited with 1: ... ValueError: newline
characters are not allowed in metadata values: 't_nl\\nx y'; nothing was written``,
exit 1)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import pyperf
import pytest

from ipc_bench.analysis import microbench
from microbench_runs import FRAME_RUN, PYPERF, capture_path, finished_run

REPO = Path(__file__).resolve().parents[2]
#: One benchmark: the msgpack SchedulerOutput frames' encode.
ONE = ["--codecs", "msgpack", "--directions", "s2r", "--ops", "encode"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory, "metadata-one-line", FRAME_RUN)


def _microbench(run: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "bench.py", "microbench", str(run), *ONE,
                           *PYPERF, "--output", str(out)], cwd=REPO, capture_output=True,
                          text=True, timeout=120)


def _metadata(path: Path) -> tuple[dict, list[dict]]:
    """The metadata of the pyperf file ``path`` common to its benchmarks, and each
    benchmark's (the common included), as pyperf reads them."""
    suite = pyperf.BenchmarkSuite.load(str(path))
    return suite.get_metadata(), [b.get_metadata() for b in suite.get_benchmarks()]


def test_metadata_text_keeps_a_value_pyperf_would_change_as_it_is():
    assert [microbench.metadata_text(t) for t in
            ("num_running=1", "t_nl\nx y", "a\rb", " x", "x ", "", "\t")] == [
        "num_running=1", "t_nl\\nx y", "a\\rb", "' x'", "'x '", "''", "\\t"]


def test_a_run_folder_named_with_a_newline_and_a_carriage_return_is_timed(finished,
                                                                          tmp_path):
    run = Path(shutil.copytree(finished, tmp_path / "t_nl\nx y\r"))
    proc = _microbench(run, tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    common, benches = _metadata(tmp_path / "out" / "send.json")
    assert (common["ipc_bench_run"], common["ipc_bench_arm"], common["description"]) == (
        "t_nl\\nx y\\r", "send", "ipc-bench captured messages, arm send")
    assert [b["name"] for b in benches] == ["num_running=1/s2r/msgpack/encode"]


def test_a_capture_whose_case_workload_and_arm_hold_a_newline_is_timed(finished,
                                                                      tmp_path):
    run = Path(shutil.copytree(finished, tmp_path / "run"))
    path = capture_path(run, "msgpack", "s2r")
    data = msgspec.msgpack.decode(path.read_bytes())
    data.update(case_id="c\nd/send/msgpack#0", workload="w\nx", arm="send\n2")
    path.write_bytes(msgspec.msgpack.encode(data))
    proc = _microbench(run, tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    common, benches = _metadata(tmp_path / "out" / "send\n2.json")
    assert (common["ipc_bench_arm"], common["description"]) == (
        "send\\n2", "ipc-bench captured messages, arm send\\n2")
    assert [(b["name"], b["ipc_bench_case"]) for b in benches] == [
        ("w\\nx/s2r/msgpack/encode", "c\\nd/send/msgpack#0")]
    rows = json.loads((tmp_path / "out" / "in_loop_vs_pyperf.json").read_text())
    assert [(r["arm"], r["workload"], r["op"]) for r in rows] == [("send\n2", "w\nx",
                                                                   "encode")]
