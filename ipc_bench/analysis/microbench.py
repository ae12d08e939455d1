"""pyperf micro-benchmarks of captured messages: ``python bench.py microbench RUN_DIR``.

For every captured case (``ipc_bench.analysis.capture``: up to 200 real frames per direction
from repetition 0 of each case), every direction and the case's codec, pyperf times
``encode`` of the decoded messages and ``decode`` of the frames, cycling through all
captured messages in each loop (not one hot message), with pyperf's worker processes,
loop calibration and warm-ups. One pyperf JSON file per arm (policy) is written to
``--output DIR`` (default ``RUN_DIR/microbench``): ``send.json``, ``cached.json``
(an A/A run gives ``send.json`` and ``send-prime.json``), each benchmark named
``<workload>/<direction>/<codec>/<encode|decode>``, so that::

    python -m pyperf compare_to send.json cached.json --table
    python -m pyperf stats send.json

work on them unchanged. Values are seconds per message (``inner_loops`` = messages).

Then the in-loop figures the run measured for the very same messages (the
``encode_ns`` / ``decode_ns`` of those steps) are printed next to pyperf's, and saved
as ``in_loop_vs_pyperf.json``. They are not expected to agree: in the loop each call
meets caches and branch predictors cooled by a whole scheduler or runner step, and
pays two ``perf_counter_ns`` calls; pyperf's loop runs the serializer back to back
over a working set of up to 200 messages (several MiB at 256 requests, more than
the L2 cache). Both run with the garbage collector on and the set-up heap frozen.
The ratio is reported as a finding.

How the processes fit: this command (the coordinator) starts, per arm,
``bench.py microbench RUN_DIR --policy ARM [pyperf options] -o ARM.json``; that
process creates the ``pyperf.Runner``, which spawns its workers by re-running
``bench.py microbench RUN_DIR --policy ARM --worker ...`` (``program_args``). Options
not listed by ``--help`` here are pyperf's (``--fast``, ``--rigorous``, ``-p``,
``-n``, ``-w``, ``-l``, ``--min-time``, ``--affinity``, ...), passed through.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any, Callable, Optional

from ipc_bench.analysis.capture import CaptureFile, arms_in, load_captures

BENCH_PY = str(Path(__file__).resolve().parents[2] / "bench.py")
#: pyperf options the coordinator sets itself.
RESERVED = ("-o", "--output", "--append", "--worker", "--pipe", "--worker-task",
            "--compare-to")


class MicrobenchError(Exception):
    """Bad input to ``microbench``; one line, exit code 2."""


def arm_file_name(arm: str) -> str:
    """``send`` -> ``send.json``; ``send'`` -> ``send-prime.json``."""
    return arm.replace("'", "-prime") + ".json"


def bench_name(cap: CaptureFile, op: str) -> str:
    """pyperf benchmark name: ``<workload>/<direction>/<codec>/<op>``."""
    return f"{cap.workload}/{cap.direction}/{cap.codec}/{op}"


def _captures_of(run_dir: str, arm: Optional[str] = None) -> list[CaptureFile]:
    caps = [c for c in load_captures(run_dir) if c.repetition == 0]
    if arm is not None:
        caps = [c for c in caps if c.arm == arm]
        if not caps:
            raise MicrobenchError(f"no captured messages of arm {arm!r} in {run_dir}")
    return caps


# ------------------------------------------------------------------ one arm (pyperf)


class _TimedOp:
    """``pyperf`` time function: ``op`` (``encode`` or ``decode``) over every captured
    message per loop; returns seconds.

    Set-up happens on the first call, before the clock starts, so only the worker that
    runs this benchmark pays it (pyperf re-runs every ``bench_time_func`` call in each
    worker but times one): decoding the frames into message objects for ``encode``,
    then ``gc.collect(); gc.freeze()``, as the harness freezes its heap after warm-up,
    so collections during timing see the same small young heap as in the loop.
    """

    def __init__(self, codec, frames: list[bytes], op: str):
        self.codec = codec
        self.frames = frames
        self.op = op
        self.items: Optional[list] = None

    def __call__(self, loops: int) -> float:
        import gc

        if self.items is None:
            codec = self.codec
            self.items = ([codec.decode(f) for f in self.frames] if self.op == "encode"
                          else self.frames)
            gc.collect()
            gc.freeze()
        fn = self.codec.encode if self.op == "encode" else self.codec.decode
        items = self.items
        perf = time.perf_counter
        sink = deque(maxlen=0).extend
        t0 = perf()
        for _ in range(loops):
            sink(map(fn, items))
        return perf() - t0


def run_arm(ns: argparse.Namespace, rest: list[str]) -> int:
    import pyperf

    from ipc_bench.wire.codecs import model_runner_output_codec, scheduler_output_codec

    caps = _captures_of(ns.run_dir, ns.policy)
    runner = pyperf.Runner(
        program_args=(BENCH_PY, "microbench", ns.run_dir, "--policy", ns.policy),
        metadata={"description": f"ipc-bench captured messages, arm {ns.policy}",
                  "ipc_bench_run": os.path.basename(os.path.abspath(ns.run_dir)),
                  "ipc_bench_arm": ns.policy})
    runner.parse_args(rest)
    make = {"s2r": scheduler_output_codec, "r2s": model_runner_output_codec}
    for cap in sorted(caps, key=lambda c: (c.workload, c.direction, c.codec)):
        codec = make[cap.direction](cap.codec)
        frames = [bytes(f) for f in cap.frames]
        meta = {"ipc_bench_case": cap.case_id,
                "ipc_bench_messages": len(frames),
                "ipc_bench_mean_payload_bytes": sum(map(len, frames)) / len(frames)}
        for op in ("encode", "decode"):
            runner.bench_time_func(bench_name(cap, op), _TimedOp(codec, frames, op),
                                   inner_loops=len(frames), metadata=dict(meta))
    return 0


# ------------------------------------------------------------------ coordinator


def output_dir(ns: argparse.Namespace) -> Path:
    """Where the pyperf files go: ``--output``, else ``RUN_DIR/microbench``."""
    return Path(ns.output) if ns.output else Path(ns.run_dir) / "microbench"


def _run_arm_process(cmd: list[str]) -> int:
    """Run one arm's pyperf process in a session of its own (a Ctrl-C reaches this
    process only, never a worker still starting up); its exit code. Interrupted (any
    exception while waiting), it gets SIGTERM, on which pyperf kills its worker, and
    is reaped (SIGKILL after 5 s)."""
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        return proc.wait()
    except BaseException:
        proc.terminate()
        try:
            proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise


def coordinate(ns: argparse.Namespace, rest: list[str],
                format_rows: Callable[[list[dict[str, Any]]], str]) -> int:
    """Run pyperf once per arm, then save and print ``in_loop_vs_pyperf``'s rows,
    made text by ``format_rows`` (the command line passes
    ``ipc_bench.report.microbench.format_in_loop_vs_pyperf``)."""
    caps = _captures_of(ns.run_dir)
    if not caps:
        raise MicrobenchError(f"no captured messages of repetition 0 in {ns.run_dir}")
    out_dir = output_dir(ns)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MicrobenchError(f"cannot create {out_dir}: {exc.strerror}") from None
    files = {}
    for arm in arms_in(caps):
        target = out_dir / arm_file_name(arm)
        if target.exists():
            target.unlink()  # pyperf refuses to overwrite; these are our own outputs
        cmd = [sys.executable, BENCH_PY, "microbench", ns.run_dir, "--policy", arm,
               *rest, "-o", str(target)]
        print(f"microbench: {arm}: {len(caps)} captures -> {target}", file=sys.stderr,
              flush=True)
        code = _run_arm_process(cmd)
        if code != 0:
            print(f"bench.py microbench: error: pyperf run of arm {arm} exited with "
                  f"{code}", file=sys.stderr)
            return 1
        files[arm] = target
    rows = in_loop_vs_pyperf(caps, files)
    (out_dir / "in_loop_vs_pyperf.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(format_rows(rows))
    names = [str(files[a]) for a in files]
    if len(names) >= 2:
        print(f"\ncompare: python -m pyperf compare_to {' '.join(names)} --table")
    print(f"stats:   python -m pyperf stats {names[0]}")
    return 0


def in_loop_vs_pyperf(caps: list[CaptureFile], files: dict[str, Path]) -> list[dict[str, Any]]:
    """One row per (arm, workload, direction, codec, op): the run's in-loop ns per
    message (mean, median) over the captured steps and pyperf's (mean, stdev, median)
    for the same messages, with ``in_loop_to_pyperf`` = in-loop mean / pyperf mean."""
    import statistics

    import pyperf

    rows = []
    for arm, path in files.items():
        suite = pyperf.BenchmarkSuite.load(str(path))
        benches = {b.get_name(): b for b in suite.get_benchmarks()}
        for cap in caps:
            if cap.arm != arm:
                continue
            for op, in_loop in (("encode", cap.in_loop_encode_ns),
                                ("decode", cap.in_loop_decode_ns)):
                bench = benches.get(bench_name(cap, op))
                if bench is None or not in_loop:
                    continue
                py_mean = bench.mean() * 1e9
                py_stdev = bench.stdev() * 1e9 if bench.get_nvalue() > 1 else 0.0
                loop_mean = statistics.fmean(in_loop)
                rows.append(dict(
                    arm=arm, workload=cap.workload, direction=cap.direction,
                    codec=cap.codec, op=op, case_id=cap.case_id, messages=len(cap.frames),
                    mean_payload_bytes=sum(map(len, cap.frames)) / len(cap.frames),
                    in_loop_mean_ns=loop_mean, in_loop_median_ns=statistics.median(in_loop),
                    pyperf_mean_ns=py_mean, pyperf_stdev_ns=py_stdev,
                    pyperf_median_ns=bench.median() * 1e9,
                    in_loop_to_pyperf=loop_mean / py_mean if py_mean else None))
    return rows
