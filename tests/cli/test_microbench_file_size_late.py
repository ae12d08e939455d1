"""``bench.py microbench`` under a file-size limit (``ulimit -f``) that passes the check
before measuring (``microbench.file_size_refusal``: a lower bound of each file's size)
but not the files as written: the write that fails is one line naming the file, its
size and the limit in bytes, exit 1, no traceback, the benchmarks finished before it
kept as an interrupted run keeps them (or the earlier results, where there were some).
The check counts ``in_loop_vs_pyperf.json`` too, the last file written, after every
benchmark has been timed."""

from __future__ import annotations

import errno
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pyperf
import pytest

from ipc_bench.analysis import microbench as mb
from ipc_bench.analysis.capture import arms_in, load_capture
from microbench_runs import finished_run

REPO = Path(__file__).resolve().parents[2]
TINY = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "20",
        "--warmup-steps", "2", "--policies", "send,cached", "--codecs", "msgpack",
        "--no-single-process", "--no-floor", "--quiet"]
#: One worker process of one value per benchmark, the loops not calibrated.
PYPERF = ["-p", "1", "-n", "1", "-w", "0", "-l", "1"]
#: One benchmark per arm: its pyperf file (about 1,400 bytes, most of it pyperf's
#: metadata of the machine) is the first write over the least limit the check passes.
ONE = ["--directions", "s2r", "--ops", "decode"]
NAMES = ["num_running=2/s2r/msgpack/encode", "num_running=2/s2r/msgpack/decode",
         "num_running=2/r2s/msgpack/encode", "num_running=2/r2s/msgpack/decode"]
FIRST_LINE = ("microbench: {n} benchmarks (send: {k}, cached: {k}; the arms interleaved) -> "
              "{out}; 1 process x (0 warm-ups + 1 value) of >= 50 ms; pyperf options: -p 1 "
              "-n 1 -w 0 -l 1")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A finished two-case run folder (send and cached, msgpack), with captures."""
    return finished_run(tmp_path_factory, "mbsize", TINY)


def _least_limit(run: Path, args: list[str]) -> int:
    """The least file-size limit (bytes) the check before measuring passes for
    ``args``: the largest of its lower bounds."""
    sel = mb.Selection(directions=("s2r",) if "--directions" in args else None,
                       ops=("decode",) if "--ops" in args else None)
    selected = mb.select_captures(str(run), sel)
    plan = {a: mb.arm_benchmarks(selected, a, sel)
            for a in arms_in(i for _, i in selected)}
    settings = mb.effective_settings(False, PYPERF)
    arms = [mb.least_arm_file_bytes(str(run), a, items, settings)
            for a, items in plan.items()]
    return max(*arms, mb.least_in_loop_file_bytes(str(run), plan)[0])


def _microbench(run: Path, out: Path, args: list[str], limit: int):
    def set_limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    # no bytecode written: CPython writes a .pyc cut short at the limit, unnoticed
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "bench.py", "microbench", str(run), "--output",
                           str(out), *args, *PYPERF], cwd=REPO, capture_output=True,
                          text=True, timeout=120, preexec_fn=set_limit, env=env)


def _limit_words(limit: int) -> str:
    return (f"{limit:,} bytes a file" if limit % 1024 else
            f"ulimit -f {limit // 1024}: {limit:,} bytes a file")


@pytest.mark.parametrize("whole_kib", [False, True])
def test_an_arm_file_over_the_limit_is_one_line_naming_it(run, tmp_path, whole_kib):
    out = tmp_path / "mb"
    limit = _least_limit(run, ONE)
    if whole_kib:  # as the shell's ulimit -f sets it
        limit = -(-limit // 1024) * 1024
    proc = _microbench(run, out, ONE, limit)
    lines = proc.stderr.splitlines()
    prefix = f"bench.py microbench: error: cannot write {out / 'send.json'}: File too large: "
    suffix = (f" bytes, above the file-size limit ({_limit_words(limit)}); nothing was "
              "written")
    assert (proc.returncode, proc.stdout, len(lines), lines[0]) == (
        1, "", 2, FIRST_LINE.format(n=2, k=1, out=out))
    assert lines[1].startswith(prefix) and lines[1].endswith(suffix), lines[1]
    size = int(lines[1][len(prefix):-len(suffix)].replace(",", ""))
    assert size > limit
    assert not out.exists()  # made by the run, left empty, removed


def test_the_earlier_results_stay_as_they_were(run, tmp_path):
    out = tmp_path / "mb"
    first = _microbench(run, out, ONE, resource.RLIM_INFINITY)
    assert first.returncode == 0, first.stderr
    earlier = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    limit = _least_limit(run, ONE)
    proc = _microbench(run, out, ONE, limit)
    last = proc.stderr.splitlines()[-1]
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert last.startswith(f"bench.py microbench: error: cannot write {out / 'send.json'}: "
                           "File too large: ")
    assert last.endswith(f" bytes, above the file-size limit ({_limit_words(limit)}); "
                         f"nothing was written, the earlier results in {out} are kept")
    assert {p.name: p.read_bytes() for p in sorted(out.iterdir())} == earlier


def test_in_loop_vs_pyperf_over_the_limit_keeps_every_benchmark(run, tmp_path):
    out = tmp_path / "mb"
    # 4 benchmarks per arm: in_loop_vs_pyperf.json's 8 rows (its least size) outgrow
    # the arms' files, so every benchmark is timed and the last write fails
    limit = _least_limit(run, [])
    proc = _microbench(run, out, [], limit)
    kept = [out / "send.json", out / "cached.json"]
    caps = [load_capture(p) for p, _ in mb.select_captures(str(run), mb.Selection())]
    rows = mb.in_loop_vs_pyperf(caps, {"send": kept[0], "cached": kept[1]},
                                mb.run_cases(str(run)))
    size = len(json.dumps(rows, indent=1)) + 1
    assert (proc.returncode, proc.stdout, proc.stderr.splitlines()[::9]) == (1, "", [
        FIRST_LINE.format(n=8, k=4, out=out),
        f"bench.py microbench: error: cannot write {out / 'in_loop_vs_pyperf.json'}: File "
        f"too large: {size:,} bytes, above the file-size limit ({_limit_words(limit)}); the "
        f"benchmarks finished until then are kept in {kept[0]}, {kept[1]}"])
    assert len(proc.stderr.splitlines()) == 10  # the first line, 8 benchmarks, the error
    assert (size > limit, sorted(os.listdir(out))) == (True, ["cached.json", "send.json"])
    for path in kept:
        assert pyperf.BenchmarkSuite.load(str(path)).get_benchmark_names() == NAMES


def test_a_limit_below_in_loop_vs_pyperf_is_refused_before_measuring(run, tmp_path):
    out = tmp_path / "mb"
    proc = _microbench(run, out, [], 3000)  # above both arms' files' least size
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", "bench.py microbench: error: the file-size limit (3,000 bytes a file) is "
               "below what in_loop_vs_pyperf.json needs (at least 3,659 bytes for its 8 "
               "rows); raise it (e.g. ulimit -f unlimited), or time fewer benchmarks\n")
    assert not out.exists()


def test_the_least_sizes(run):
    sel = mb.Selection()
    selected = mb.select_captures(str(run), sel)
    plan = {a: mb.arm_benchmarks(selected, a, sel) for a in ("send", "cached")}
    quick = mb.effective_settings(False, PYPERF)
    default = mb.effective_settings(False, [])
    assert (quick["loops"], default["loops"]) == (1, 0)  # 0: pyperf calibrates them
    assert [mb.least_arm_file_bytes(str(run), "send", plan["send"], s)
            for s in (quick, default)] == [747, 1863]
    assert mb.least_in_loop_file_bytes(str(run), plan) == (3659, 8)


def test_the_reason_of_a_failed_write(monkeypatch):
    def efbig() -> OSError:
        return OSError(errno.EFBIG, os.strerror(errno.EFBIG))

    assert mb.write_failure_reason(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)),
                                   100) == "No space left on device"
    monkeypatch.setattr(resource, "getrlimit", lambda _which: (resource.RLIM_INFINITY,) * 2)
    assert mb.write_failure_reason(efbig(), 100) == "File too large"  # the file system's
    monkeypatch.setattr(resource, "getrlimit", lambda _which: (2048, 2048))
    assert mb.write_failure_reason(efbig(), 4321) == (
        "File too large: 4,321 bytes, above the file-size limit (ulimit -f 2: 2,048 bytes "
        "a file)")
    monkeypatch.setattr(resource, "getrlimit", lambda _which: (1000, 1000))
    assert mb.write_failure_reason(efbig()) == (
        "File too large: above the file-size limit (1,000 bytes a file)")

