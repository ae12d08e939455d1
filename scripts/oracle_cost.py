#!/usr/bin/env python3
"""What the input oracle and the schedule digest cost per step: off and on, side by side
in one run.

Two single-process steady-decode engines (``hot_path_bench.SteadyEngine``: ``cached``,
the same seed, so the same schedule step for step), one bare and one with everything
the measured loop adds for the checks (the schedule digest, both sides of the input
oracle, the in-process check every ``CHECK_INTERVAL_STEPS`` steps), are stepped in
alternating blocks of ``CHECK_INTERVAL_STEPS`` steps (off on, on off, ...), so that the
machine's drift and other jobs hit both alike. Each step is timed on its own and a
block counts by its median step (a step that the operating system descheduled does not
swamp it). Per running-request count it prints the median of the block medians of
each and the median of the paired differences (on - off) with their interquartile
range. ``scripts/hot_path_bench.py --only
"oracle,schedule"`` times the pieces one by one with pyperf.

    python scripts/oracle_cost.py                          # B = 1, 64, 256; 30 pairs
    python scripts/oracle_cost.py --num-running 256 --pairs 60

``--bench`` measures whole runs instead: ``python bench.py --scenario decode-steady
--num-running B --steps N`` with ``--input-oracle-interval 0`` and with the default,
alternating (off on, on off, ...) for ``--pairs`` pairs, each run into its own folder
under a temporary one. Per case it prints the medians over the pairs of the case's
wall time (``wall_s``: the whole loop, which includes the checks) and of its median
step (``step_ns_median``: the timed region, which does not), and the ratio on / off of
each median:

    python scripts/oracle_cost.py --bench --num-running 256 --steps 2000 --pairs 5

Exit 0; 1 when a ``--bench`` run fails, which ends the rest: one line quoting
``bench.py``'s error (``oracle_cost.py: error: the oracle-off run of pair 1 failed:
bench.py exited 1: bench.py: error: num_running=4/send/msgpack#0: runner process 4242
was killed by SIGKILL, noticed while waiting for ModelRunnerOutput for step 1185; the
runs' temporary folder is removed``); 2 for bad input (one line, before anything runs);
130 / 143 / 129 when interrupted by SIGINT / SIGTERM / SIGHUP: with ``--bench`` the
running ``bench.py`` gets the same signal and is reaped and the runs' temporary folder
removed; one line on stderr says what was printed (``oracle_cost.py: interrupted by
SIGINT; rows printed for 1 of 3 B values (1) (exit 130)``).
"""

from __future__ import annotations

import signal

if __name__ == "__main__":
    # As bench.py: the signals of ipc_bench.harness.signals.HANDLED, spelt out
    # (tests/cli/test_script_first_mask.py compares), stay pending until main() has
    # installed its handlers (ipc_bench.harness.signals), so none lands in an import.
    signal.pthread_sigmask(signal.SIG_BLOCK, (
        signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2,
        signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF, signal.SIGXCPU))

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hot_path_bench import STEPS, SteadyEngine  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
#: The per-case figures ``--bench`` compares: summary key, heading, scale to print.
BENCH_FIGURES = (("wall_s", "wall s", 1.0), ("step_ns_median", "step us", 1e-3))
from ipc_bench.cli.console import script_main  # noqa: E402
from ipc_bench.cli.once import OnceParser  # noqa: E402
from ipc_bench.cli.options import (MAX_NUM_SEQS, MAX_STEPS, _int_in,  # noqa: E402
                                   _parse_int, int_items, list_items, no_repeats)
from ipc_bench.errors import module_doc, one_line  # noqa: E402
from ipc_bench.harness.oracle import CHECK_INTERVAL_STEPS  # noqa: E402
from ipc_bench.harness import signals  # noqa: E402


def block_ns(engine: SteadyEngine, steps: int) -> float:
    """Median ns of ``steps`` steps of ``engine``, each timed on its own."""
    perf = time.perf_counter_ns
    out = np.empty(steps, dtype=np.int64)
    for i in range(steps):
        t0 = perf()
        engine.step()
        out[i] = perf() - t0
    return float(np.median(out))


def measure(num_running: int, pairs: int, steps: int = CHECK_INTERVAL_STEPS) -> dict:
    """``pairs`` pairs of blocks of ``steps`` steps, off and on, order alternating.
    Returns medians over the blocks of their median ns per step: ``off``, ``on``,
    ``diff`` (paired, on - off) and the quartiles of ``diff``, ``q1`` and ``q3``."""
    off, on = SteadyEngine(num_running, oracle=False), SteadyEngine(num_running, oracle=True)
    for engine in (off, on):  # warm-up, then the heap frozen as the loops do
        for _ in range(STEPS):
            engine.step()
    gc.collect()
    gc.freeze()
    try:
        times = {False: [], True: []}
        for i in range(pairs):
            for engine in ((off, on) if i % 2 == 0 else (on, off)):
                times[engine is on].append(block_ns(engine, steps))
    finally:
        gc.unfreeze()
    t_off, t_on = np.array(times[False]), np.array(times[True])
    diff = t_on - t_off
    return dict(off=float(np.median(t_off)), on=float(np.median(t_on)),
                diff=float(np.median(diff)), q1=float(np.percentile(diff, 25)),
                q3=float(np.percentile(diff, 75)))


class RunFailed(Exception):
    """A ``bench.py`` run that failed; the message says how, quoting bench.py's last
    line (``run_failure``)."""


def run_failure(code: int, stderr: str, out: Path) -> str:
    """How a ``bench.py`` run into ``out`` ended (``code``: its exit status, negative
    when a signal killed it) and its last error line (``bench.py: error: ...``; a
    warning is not a cause, and one killed before it said why has none), without the
    run folder it names (``; partial results: OUT``, ``; run folder (nothing measured):
    OUT``), which goes with the runs' temporary folder: ``bench.py exited 1: bench.py:
    error: num_running=4/send/msgpack#0: runner process 4242 was killed by SIGKILL,
    noticed while waiting for ModelRunnerOutput for step 1185``; ``bench.py was killed
    by SIGKILL`` where it wrote nothing."""
    how = (f"was killed by {signal.Signals(-code).name}" if code < 0
           else f"exited {code}")
    lines = [line.strip() for line in stderr.splitlines()
             if line.startswith("bench.py: error: ")]
    if not lines:  # killed before it said why: its warnings are not the cause
        return f"bench.py {how}"
    said = lines[-1]
    for pointer in (f"; partial results: {out}", f"; run folder (nothing measured): {out}"):
        said = said.removesuffix(pointer)
    return one_line(f"bench.py {how}: {said}")


def bench_run(out: Path, num_running: str, steps: int, oracle_on: bool) -> dict[str, dict]:
    """One ``bench.py --scenario decode-steady`` run into ``out`` with the input oracle
    on (the default interval) or off (``--input-oracle-interval 0``); its cases'
    summaries by case id. ``RunFailed`` (``run_failure``: bench.py's error line) if it
    fails. A signal meanwhile is passed on to ``bench.py``, which is reaped before the
    ``signals.Interrupted`` goes on (``signals.call``)."""
    cmd = [sys.executable, str(REPO / "bench.py"), "--scenario", "decode-steady",
           "--num-running", num_running, "--steps", str(steps), "--quiet",
           "--output", str(out)] + ([] if oracle_on else ["--input-oracle-interval", "0"])
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as err:
        code = signals.call(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err)
        err.seek(0)
        if code != 0:
            raise RunFailed(run_failure(code, err.read(), out))
    cases = json.loads((out / "summary.json").read_text())["cases"]
    return {c["case_id"]: c for c in cases}


def bench_pairs(num_running: str, steps: int, pairs: int,
                made: Optional[list[str]] = None) -> dict[str, dict]:
    """``pairs`` pairs of ``bench_run``s, off then on, then on then off, ...; per case
    id and ``BENCH_FIGURES`` key, ``{"off": [...], "on": [...]}`` in pair order. The
    runs go under a temporary folder, appended to ``made`` (if given) once made, and
    removed whatever ends them. A run that fails ends the rest: ``SystemExit``, line
    ``oracle_cost.py: error: the oracle-off run of pair 1 failed: bench.py exited 1:
    bench.py: error: ...; the runs' temporary folder is removed`` (exit 1)."""
    figures: dict[str, dict] = {}
    failed = None
    with tempfile.TemporaryDirectory(prefix="oracle-cost-") as tmp:
        if made is not None:
            made.append(tmp)
        try:
            _run_pairs(Path(tmp), num_running, steps, pairs, figures)
        except RunFailed as exc:
            failed = str(exc)
    if failed is not None:  # said once the folder is gone
        raise SystemExit(f"oracle_cost.py: error: {failed}; the runs' temporary folder "
                         "is removed")
    return figures


def _run_pairs(tmp: Path, num_running: str, steps: int, pairs: int,
               figures: dict[str, dict]) -> None:
    """``bench_pairs``' runs into ``tmp``, their figures added to ``figures``;
    ``RunFailed`` naming the run that failed (``the oracle-off run of pair 1 failed:
    ...``)."""
    for i in range(pairs):
        for on in ((False, True) if i % 2 == 0 else (True, False)):
            side = "on" if on else "off"
            try:
                run = bench_run(tmp / f"{i}-{side}", num_running, steps, on)
            except RunFailed as exc:
                raise RunFailed(f"the oracle-{side} run of pair {i + 1} failed: {exc}") \
                    from None
            for case_id, c in run.items():
                for key, _, _ in BENCH_FIGURES:
                    figures.setdefault(case_id, {}).setdefault(
                        key, {"off": [], "on": []})[side].append(c[key])
            print(f"pair {i + 1}/{pairs}: {side} done", file=sys.stderr, flush=True)


def print_bench(figures: dict[str, dict]) -> None:
    """One line per case: per figure the median off, on and on / off."""
    heads = "  ".join(f"{h + ' off':>12} {h + ' on':>12} {'on/off':>6}"
                      for _, h, _ in BENCH_FIGURES)
    width = max(len(c) for c in figures)
    print(f"{'case'.ljust(width)}  {heads}")
    for case_id, per_key in figures.items():
        cells = []
        for key, _, scale in BENCH_FIGURES:
            off = float(np.median(per_key[key]["off"]))
            on = float(np.median(per_key[key]["on"]))
            cells.append(f"{off * scale:>12.3f} {on * scale:>12.3f} {on / off:>6.3f}")
        print(f"{case_id.ljust(width)}  {'  '.join(cells)}", flush=True)


class _Parser(OnceParser):
    """Bad input: one line on stderr naming the option (``oracle_cost.py: error:
    --pairs: must be at least 1, got 0``), no usage banner, exit 2."""

    def error(self, message: str):
        print(one_line(f"oracle_cost.py: error: {message.removeprefix('argument ')}"),
              file=sys.stderr)
        raise SystemExit(2)


def _num_running(text: str) -> str:
    """``--num-running``: comma-separated running counts of 1 to ``MAX_NUM_SEQS``, no
    empty item (``list_items``), none given twice; kept as text, which ``--bench``
    passes on to ``bench.py``."""
    no_repeats([_parse_int(v, 1, MAX_NUM_SEQS) for v in list_items(text, "integers")])
    return text


def parse_args(argv=None) -> argparse.Namespace:
    doc = module_doc(sys.modules[__name__])  # also under python -OO
    p = _Parser(prog="oracle_cost.py", description=" ".join(doc.split("\n\n")[0].split()))
    p.add_argument("--num-running", type=_num_running, default="1,64,256", metavar="B[,B...]",
                   help=f"B values, comma-separated, each 1 to {MAX_NUM_SEQS:,} "
                   "(default 1,64,256)")
    p.add_argument("--pairs", type=_int_in(1, 100_000), default=None, metavar="N",
                   help="block pairs per B (default 30; with --bench, pairs of runs, "
                   "default 5)")
    p.add_argument("--bench", action="store_true",
                   help="paired bench.py runs with the oracle off and on instead")
    p.add_argument("--steps", type=_int_in(1, MAX_STEPS), default=None, metavar="N",
                   help="with --bench: counted steps per case (default 2000); refused "
                   f"without it (each block is {CHECK_INTERVAL_STEPS} steps)")
    args = p.parse_args(argv)
    if args.steps is not None and not args.bench:
        p.error(f"--steps applies to --bench (without it each block is "
                f"{CHECK_INTERVAL_STEPS} steps)")
    if args.pairs is None:
        args.pairs = 5 if args.bench else 30
    if args.steps is None:
        args.steps = 2000
    return args


def main(argv=None, exiting: bool = False) -> int:
    """Exit 0; 1 when a ``--bench`` run fails (one line, ``bench_pairs``); 2 on bad
    input (one line); 130 / 143 / 129 when interrupted by SIGINT / SIGTERM / SIGHUP
    (``ipc_bench.harness.signals``): with ``--bench`` the running ``bench.py`` gets the
    same signal and is reaped, and the temporary folder of the runs is removed; then
    one line on stderr saying what was printed (``interrupt_line``). ``exiting``: the
    process exits once this returns (the script run as a command): a signal leaves
    further ones ignored on its way out, as ``bench.py``'s; ``False`` (``main`` called
    in process) puts the caller's handlers back whatever happened
    (``signals.run_command``)."""
    done: list[int] = []  # B values whose row is printed
    made: list[str] = []  # with --bench, the runs' temporary folder once made
    return signals.run_command(lambda: parse_args(argv),
                               lambda args: _measure(args, done, made),
                               lambda exc, args: interrupt_line(exc, args, done, made),
                               exiting=exiting)


def interrupt_line(exc: signals.Interrupted, args: Optional[argparse.Namespace],
                   done: list[int], made: list[str]) -> str:
    """``oracle_cost.py: interrupted by SIGINT (exit 130)`` (``Interrupted.line``), with
    before ``(exit 130)`` what was printed:
    ``; rows printed for 1 of 3 B values (1)``, ``; no row printed (0 of 3 B values
    measured)``; with ``--bench``: ``; nothing printed``, and ``: the runs' temporary
    folder is removed`` where one was made (``made``: its path, once made)."""
    prog = "oracle_cost.py"
    if args is None:
        return exc.line(prog)
    if args.bench:
        return exc.line(prog, "nothing printed" + (
            ": the runs' temporary folder is removed" if made else ""))
    total = len(int_items(args.num_running))
    if not done:
        return exc.line(prog, f"no row printed (0 of {total} B values measured)")
    return exc.line(prog, f"rows printed for {len(done)} of {total} B values "
                    f"({', '.join(map(str, done))})")


def _measure(args: argparse.Namespace, done: list[int], made: list[str]) -> int:
    """``main``'s work: the table, each B value appended to ``done`` once its row is
    printed; with ``--bench`` the runs' temporary folder appended to ``made`` once
    made."""
    if args.bench:
        print_bench(bench_pairs(args.num_running, args.steps, args.pairs, made))
        return 0
    print(f"{'B':>5}  {'off us/step':>11}  {'on us/step':>10}  {'on - off us':>11}  "
          f"{'IQR of the difference':>22}  {'share':>6}", flush=True)
    for b in int_items(args.num_running):
        m = measure(b, args.pairs)
        print(f"{b:>5}  {m['off'] / 1e3:>11.1f}  {m['on'] / 1e3:>10.1f}  "
              f"{m['diff'] / 1e3:>11.1f}  {m['q1'] / 1e3:>10.1f} .. {m['q3'] / 1e3:>9.1f}  "
              f"{m['diff'] / m['off']:>6.1%}", flush=True)
        done.append(b)
    return 0


if __name__ == "__main__":
    sys.exit(script_main("oracle_cost.py", lambda: main(exiting=True), "the table"))
