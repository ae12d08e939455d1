"""Text of ``bench.py microbench``: its progress while pyperf runs
(``MicrobenchProgress``) and its findings, the run's in-loop timing of captured
messages against pyperf's (``ipc_bench.analysis.microbench.in_loop_vs_pyperf``)."""

from __future__ import annotations

import sys
import time
from typing import IO, Any, Optional

from ipc_bench.analysis import cores
from ipc_bench.harness.progress import about_words, progress_enabled
from ipc_bench.report.tables import render


def format_time_per_op(seconds: float) -> str:
    """A pyperf value (seconds per message) in ns, us or ms, 3 significant digits."""
    for unit, scale in (("ns", 1e9), ("us", 1e6), ("ms", 1e3)):
        v = seconds * scale
        if v < 1000 or unit == "ms":
            return f"{v:.3g} {unit}" if v < 100 else f"{v:.0f} {unit}"
    return f"{seconds:.3g} s"


class MicrobenchProgress:
    """Progress of ``bench.py microbench`` on ``stream`` (default stderr), one call of
    ``done`` per finished benchmark out of ``total``: a tqdm bar on a terminal
    (``harness.progress.progress_enabled``), else one line per benchmark::

        microbench: benchmark 5/64 done (send num_running=16/s2r/msgpack/encode: 21.4 us
        +- 0.3 us), about 1 min 10 s left

    The time left is the mean time per finished benchmark so far (start-up included)
    times the benchmarks left.
    """

    def __init__(self, total: int, stream: Optional[IO] = None,
                 bar: Optional[bool] = None):
        self.total, self.n = total, 0
        self.stream = sys.stderr if stream is None else stream
        self.t0 = time.monotonic()
        self.bar = None
        if bar if bar is not None else progress_enabled(False, self.stream):
            from tqdm import tqdm

            self.bar = tqdm(total=total, file=self.stream, smoothing=0, leave=False,
                            dynamic_ncols=True, bar_format=(
                                "microbench: benchmark {n_fmt}/{total_fmt} {bar} "
                                "[{elapsed}, {remaining} left] {postfix}"))

    def left_s(self) -> Optional[float]:
        """Estimated seconds left; ``None`` before the first benchmark finished."""
        if self.n == 0:
            return None
        return (time.monotonic() - self.t0) / self.n * (self.total - self.n)

    def done(self, arm: str, name: str, mean_s: float, stdev_s: float) -> None:
        """One more benchmark finished: ``arm``, pyperf ``name``, its mean and standard
        deviation in seconds per message."""
        self.n += 1
        result = (f"{arm} {name}: {format_time_per_op(mean_s)} +- "
                  f"{format_time_per_op(stdev_s)}")
        if self.bar is not None:
            self.bar.set_postfix_str(result, refresh=False)
            self.bar.update(1)
            return
        left = self.left_s()
        tail = f"{about_words(left)} left" if self.n < self.total else "all done"
        print(f"microbench: benchmark {self.n}/{self.total} done ({result}), {tail}",
              file=self.stream, flush=True)

    def close(self) -> None:
        """Remove the bar, if any (safe to call more than once)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None


#: The cell of an in-loop timing the run withheld (``analysis.cores``), as the report's
#: side-by-side tables show a run's withheld cell.
WITHHELD_CELL = "-" + cores.MARK
#: Under the table, after the case tables' footnote (``cores.footnote``), when a row
#: shows ``WITHHELD_CELL``.
WITHHELD_NOTE = (f"{WITHHELD_CELL}: the run's in-loop timing of such a case, withheld as in "
                 "its own tables; a ratio drawn from it is - too (pyperf's, timed here "
                 "apart from the run, is shown)")


def format_in_loop_vs_pyperf(rows: list[dict[str, Any]]) -> str:
    """Plain-text table of ``in_loop_vs_pyperf`` rows (times in µs per message). A row
    whose case's timings the run withheld (``timings_withheld``: N readers on fewer than
    N + 2 cores, ``analysis.cores``) shows ``-*`` for the in-loop mean and median and
    ``-`` for their ratio to pyperf, under the case tables' footnote and
    ``WITHHELD_NOTE``, and is left out of the ratios' summary lines."""
    header = ["arm", "workload", "dir", "codec", "op", "bytes", "in-loop mean us",
              "in-loop median us", "pyperf us", "in-loop / pyperf"]
    body = []
    for r in rows:
        held = r.get("timings_withheld")
        loop = ([WITHHELD_CELL] * 2 if held else
                [f"{r['in_loop_mean_ns'] / 1e3:.2f}", f"{r['in_loop_median_ns'] / 1e3:.2f}"])
        ratio = (f"{r['in_loop_to_pyperf']:.2f}" if r["in_loop_to_pyperf"] and not held
                 else "-")
        body.append([r["arm"], r["workload"], r["direction"], r["codec"], r["op"],
                     f"{r['mean_payload_bytes']:,.0f}", *loop,
                     f"{r['pyperf_mean_ns'] / 1e3:.2f} +- {r['pyperf_stdev_ns'] / 1e3:.2f}",
                     ratio])
    lines = ["in-loop (the run's own timing of these messages) vs pyperf (isolated)",
             render(header, body, left=len(header)),
             "bytes: the mean payload of the captured messages timed here (a sample of "
             "the case's steps), not the case's mean over all its counted steps"]
    note = cores.footnote_of((r.get("readers_kind"), r["readers"], r["cores"]) for r in rows
                             if r.get("timings_withheld"))
    if note:
        lines += [note, WITHHELD_NOTE]
    for op in ("encode", "decode"):
        shown = [r for r in rows if r["op"] == op and r["in_loop_to_pyperf"]]
        ratios = sorted(r["in_loop_to_pyperf"] for r in shown if not r.get("timings_withheld"))
        held = len(shown) - len(ratios)
        left_out = f", {held} withheld ({cores.MARK}) left out" if held else ""
        if ratios:
            mid = ratios[len(ratios) // 2] if len(ratios) % 2 else (
                ratios[len(ratios) // 2 - 1] + ratios[len(ratios) // 2]) / 2
            lines.append(f"{op}: in-loop mean / pyperf mean: median {mid:.2f} "
                         f"(range {ratios[0]:.2f} .. {ratios[-1]:.2f}) over {len(ratios)} "
                         f"benchmarks{left_out}; > 1: the loop's calls run colder (caches, "
                         "branch predictors) and pay two clock reads")
        elif held:
            which = f"all {held} benchmarks" if held > 1 else "its one benchmark"
            lines.append(f"{op}: in-loop mean / pyperf mean: none shown, the run withheld "
                         f"the in-loop timings of {which} ({cores.MARK})")
    return "\n".join(lines)
