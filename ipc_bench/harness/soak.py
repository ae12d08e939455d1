"""Long runs: RSS sampling, streamed per-step statistics, memory growth and byte drift.

A soak run (``scenarios/soak.py``) replays a whole trace for minutes and asks two
questions: does either process's memory grow (a leak), and do the bytes per step
drift (state that piles up in the messages)? For the answer to mean anything, the
harness's own records must not grow with the run: a streamed case
(``CaseSpec.stream``) writes its per-step and per-request records to the run folder
as it goes and drops them (``processes.StepFlusher``), and ``StreamStats`` keeps the
running sums the case summary needs (a few numbers per flush window, float64 arrays
of per-request latencies: 24 bytes per request, plus about 400 bytes a second for the
RSS samples and window sums, some 70 KiB a minute at the soak's rates).

- ``RssSampler``: a background thread that reads ``VmRSS`` and ``RssAnon`` of this
  process and of the runner from ``/proc/<pid>/status`` every ``interval_s`` seconds.
  It sleeps between samples and never touches the loop, so the hot path is unchanged.
  ``VmRSS`` also counts mapped file pages (shared libraries), which the kernel drops
  under memory pressure from anything else on the machine; ``RssAnon`` (heap, numpy
  buffers) is what a leak grows, so both are kept and judged.
- ``rss_growth``: growth after warm-up. Warm-up is the first ``WARMUP_FRACTION`` of
  the samples' time span; the baseline is the mean RSS over the next
  ``WARMUP_FRACTION`` (so one sample's noise does not decide it), the end is the
  mean over the last ``WARMUP_FRACTION``; growth = end / baseline - 1. Also the
  largest sample after warm-up over the baseline, and a least-squares slope.
- ``StreamStats.drift``: the same windows applied to bytes per scheduled request in
  pure-decode steps (``s2r_payload_bytes / num_reqs``), per direction; a batch's
  size changes with the trace's load, bytes per request should not.
"""

from __future__ import annotations

import sys
import threading
import time
from array import array
from typing import Any, Optional, Sequence

import numpy as np

from ipc_bench.harness.spec import SCHED_COLUMNS

#: Share of a run counted as warm-up, and the width of the baseline and end windows.
WARMUP_FRACTION = 0.10

_C = {name: i for i, name in enumerate(SCHED_COLUMNS)}


def read_memory_bytes(pid: int) -> tuple[Optional[int], Optional[int]]:
    """``(VmRSS, RssAnon)`` of ``pid`` in bytes from ``/proc/<pid>/status``; ``None``
    for a value that cannot be read (process gone)."""
    rss = anon = None
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmRSS:"):
                    rss = int(line.split()[1]) * 1024  # kB
                elif line.startswith(b"RssAnon:"):
                    anon = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return rss, anon


def read_rss_bytes(pid: int) -> Optional[int]:
    """Resident set size (``VmRSS``) of ``pid`` in bytes, ``None`` if it is gone."""
    return read_memory_bytes(pid)[0]


class RssSampler:
    """Samples the RSS of ``pids`` every ``interval_s`` seconds in a daemon thread.

    ``samples``: one tuple per sample, ``(t_s, VmRSS of pids[0], RssAnon of pids[0],
    VmRSS of pids[1], RssAnon of pids[1], ..., py_blocks)`` (bytes; ``t_s`` from
    ``start()``; a gone process reads ``None``), where ``py_blocks`` is
    ``sys.getallocatedblocks()`` of this process: live Python allocations, which tell a
    leak (they grow) from allocator fragmentation (RSS grows, they do not). The first
    sample is taken at once.
    """

    def __init__(self, pids: Sequence[int], interval_s: float = 1.0):
        if not interval_s > 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        self.pids = list(pids)
        self.interval_s = interval_s
        self.samples: list[tuple] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._t0 = 0.0

    def start(self) -> "RssSampler":
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def _run(self) -> None:
        while True:
            t = time.monotonic() - self._t0
            self.samples.append((t, *(v for p in self.pids for v in read_memory_bytes(p)),
                                 sys.getallocatedblocks()))
            if self._stop.wait(self.interval_s):
                return

    def stop(self) -> None:
        """Stop and join the thread (takes at most one read of /proc)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5.0)


def _windows(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Masks of the warm-up, baseline and end windows over times ``t`` (sorted)."""
    t0, t1 = float(t[0]), float(t[-1])
    span = t1 - t0
    w = WARMUP_FRACTION * span
    warm = t < t0 + w
    base = (t >= t0 + w) & (t < t0 + 2 * w)
    end = t >= t1 - w
    return warm, base, end


def rss_growth(t_s: Sequence[float], rss: Sequence[Optional[int]]) -> dict[str, Any]:
    """Growth of one process's RSS after warm-up (see the module docstring).

    Returns ``rss_baseline_bytes``, ``rss_end_bytes``, ``rss_max_bytes`` (after
    warm-up), ``rss_growth_pct`` (end over baseline), ``rss_max_growth_pct``,
    ``rss_slope_bytes_per_min`` (least squares over the samples after warm-up) and
    ``rss_late_slope_bytes_per_min`` (over the second half of the run only: memory
    that rose with a peak of load and then stayed flat has a late slope near 0, a leak
    keeps climbing); empty when fewer than 10 samples have a value.
    """
    pairs = [(t, r) for t, r in zip(t_s, rss) if r is not None]
    if len(pairs) < 10:
        return {}
    t = np.array([p[0] for p in pairs], dtype=np.float64)
    r = np.array([p[1] for p in pairs], dtype=np.float64)
    warm, base, end = _windows(t)
    if not base.any() or not end.any():
        return {}
    after = ~warm
    late = t >= (t[0] + t[-1]) / 2
    baseline = float(r[base].mean())
    final = float(r[end].mean())
    peak = float(r[after].max())

    def slope(mask) -> float:
        return float(np.polyfit(t[mask], r[mask], 1)[0]) * 60.0 if mask.sum() > 1 else 0.0

    return dict(rss_baseline_bytes=baseline, rss_end_bytes=final, rss_max_bytes=peak,
                rss_growth_pct=100.0 * (final / baseline - 1.0),
                rss_max_growth_pct=100.0 * (peak / baseline - 1.0),
                rss_slope_bytes_per_min=slope(after),
                rss_late_slope_bytes_per_min=slope(late))


#: Columns of ``RssSampler`` samples of (scheduler, runner), as in ``rss.csv``.
SAMPLE_COLUMNS = ("t_s", "sched_rss_bytes", "sched_anon_bytes", "runner_rss_bytes",
                  "runner_anon_bytes", "sched_py_blocks")


def rss_summary(samples: list[tuple]) -> dict[str, Any]:
    """Growth figures (``rss_growth``) of sampler output in ``SAMPLE_COLUMNS`` order:
    ``sched_rss_*``, ``sched_anon_*`` (``RssAnon``), ``runner_rss_*``,
    ``runner_anon_*``, ``sched_py_*`` (live Python allocations: the ``_bytes`` fields
    count blocks), plus ``rss_num_samples``."""
    if not samples:
        return {}
    t = [s[0] for s in samples]
    out: dict[str, Any] = {"rss_num_samples": len(samples)}
    for i, name in enumerate(SAMPLE_COLUMNS[1:len(samples[0])], 1):
        who, kind = name.split("_")[:2]
        for k, v in rss_growth(t, [s[i] for s in samples]).items():
            out[f"{who}_{k.replace('rss_', kind + '_', 1)}"] = v
    return out


class StreamStats:
    """Running sums over a streamed case's per-step rows, fed one chunk at a time.

    Totals over *counted* rows (what ``metrics.summarize_case`` averages) and, per
    chunk (one flush window), the bytes of pure-decode steps for the drift figures.
    Per-request latencies (``add_request``) go into float64 arrays.
    """

    _SUM_COLUMNS = ("num_output_tokens", "step_ns", "num_reqs", "s2r_payload_bytes",
                    "r2s_payload_bytes", "sched_ns", "build_ns", "encode_ns", "send_ns",
                    "wait_ns", "decode_ns", "update_ns", "sched_cpu_ns", "gc_collections")

    def __init__(self) -> None:
        self.num_total_steps = 0
        self.num_warmup_steps = 0
        self.num_counted_steps = 0
        self.sums = {k: 0 for k in self._SUM_COLUMNS}
        self.s2r_bytes_total = 0
        self.r2s_bytes_total = 0
        # one entry per chunk: end time (s), decode steps, their requests, their bytes
        self.win_t_s = array("d")
        self.win_decode_steps = array("q")
        self.win_decode_reqs = array("q")
        self.win_decode_s2r = array("q")
        self.win_decode_r2s = array("q")
        self.ttft_s = array("d")
        self.tpot_s = array("d")
        self.e2e_s = array("d")
        self.num_requests = 0
        self.num_finished = 0
        self.num_rejected = 0
        self.output_tokens_all = 0

    def add_rows(self, rows: list[tuple]) -> None:
        """Fold a chunk of ``SCHED_COLUMNS`` tuples in (one flush window)."""
        if not rows:
            return
        a = np.asarray(rows, dtype=np.int64)
        self.num_total_steps += len(a)
        self.num_warmup_steps += int(a[:, _C["warmup"]].sum())
        counted = a[:, _C["counted"]] == 1
        c = a[counted]
        self.num_counted_steps += len(c)
        for k in self._SUM_COLUMNS:
            self.sums[k] += int(c[:, _C[k]].sum())
        self.s2r_bytes_total += int(a[:, _C["s2r_payload_bytes"]].sum())
        self.r2s_bytes_total += int(a[:, _C["r2s_payload_bytes"]].sum())
        dec = (counted & (a[:, _C["num_new_reqs"]] == 0)
               & (a[:, _C["num_scheduled_tokens"]] == a[:, _C["num_reqs"]])
               & (a[:, _C["num_reqs"]] > 0))
        d = a[dec]
        self.win_t_s.append(float(a[-1, _C["t_end_ns"]]) / 1e9)
        self.win_decode_steps.append(len(d))
        self.win_decode_reqs.append(int(d[:, _C["num_reqs"]].sum()))
        self.win_decode_s2r.append(int(d[:, _C["s2r_payload_bytes"]].sum()))
        self.win_decode_r2s.append(int(d[:, _C["r2s_payload_bytes"]].sum()))

    def add_request(self, record: dict[str, Any]) -> None:
        """Count one finished (or, at the end, unfinished) request's record."""
        self.num_requests += 1
        reason = record.get("finish_reason")
        self.num_finished += reason == "length"
        self.num_rejected += reason == "rejected"
        self.output_tokens_all += int(record.get("num_output_tokens") or 0)
        for name in ("ttft_s", "tpot_s", "e2e_s"):
            value = record.get(name)
            if value is not None:
                getattr(self, name).append(value)

    def drift(self) -> dict[str, Any]:
        """Bytes per scheduled request in pure-decode steps: baseline window (after
        warm-up) and end window, per direction, and their change in percent."""
        if len(self.win_t_s) < 10:
            return {}
        t = np.frombuffer(self.win_t_s, dtype=np.float64)
        reqs = np.frombuffer(self.win_decode_reqs, dtype=np.int64)
        _, base, end = _windows(t)
        out: dict[str, Any] = {}
        for name, arr in (("s2r", self.win_decode_s2r), ("r2s", self.win_decode_r2s)):
            b = np.frombuffer(arr, dtype=np.int64)
            if not reqs[base].sum() or not reqs[end].sum():
                return {}
            first = float(b[base].sum() / reqs[base].sum())
            last = float(b[end].sum() / reqs[end].sum())
            out[f"{name}_decode_bytes_per_req_baseline"] = first
            out[f"{name}_decode_bytes_per_req_end"] = last
            out[f"{name}_decode_bytes_per_req_drift_pct"] = 100.0 * (last / first - 1.0)
        return out

    def summary(self) -> dict[str, Any]:
        """The fields ``metrics.summarize_case`` gives a case, from the sums."""
        n = self.num_counted_steps
        out: dict[str, Any] = dict(
            num_steps=n, num_warmup_steps=self.num_warmup_steps,
            num_total_steps=self.num_total_steps, num_requests=self.num_requests,
            num_finished=self.num_finished,
            s2r_payload_bytes_total=self.s2r_bytes_total,
            r2s_payload_bytes_total=self.r2s_bytes_total)
        if n:
            s = self.sums
            step_s = s["step_ns"] / 1e9
            out.update(
                output_tokens=s["num_output_tokens"],
                busy_output_tokens_per_s=s["num_output_tokens"] / step_s if step_s else None,
                num_running_mean=s["num_reqs"] / n,
                step_ns_mean=s["step_ns"] / n,
                sched_to_runner_payload_bytes_per_step=s["s2r_payload_bytes"] / n,
                runner_to_sched_payload_bytes_per_step=s["r2s_payload_bytes"] / n,
                sched_ns_per_step=s["sched_ns"] / n,
                sched_build_ns_per_step=s["build_ns"] / n,
                sched_encode_ns_per_step=s["encode_ns"] / n,
                sched_send_ns_per_step=s["send_ns"] / n,
                sched_wait_ns_per_step=s["wait_ns"] / n,
                sched_decode_ns_per_step=s["decode_ns"] / n,
                sched_update_ns_per_step=s["update_ns"] / n,
                sched_cpu_ns_per_step=s["sched_cpu_ns"] / n,
                sched_gc_collections_per_step=s["gc_collections"] / n,
            )
        from ipc_bench.analysis.summary import percentiles_ms

        for name in ("ttft", "tpot", "e2e"):
            out.update(percentiles_ms(np.frombuffer(getattr(self, f"{name}_s"),
                                                    dtype=np.float64), name))
        out.update(self.drift())
        return out
