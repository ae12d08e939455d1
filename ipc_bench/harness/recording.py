"""What the scheduler side keeps of a case while it runs, and where it goes.

- ``StepFlusher``: writes the running case's rows to a ``CaseSink`` (the run folder)
  about once a second, between steps; a streamed case's rows and finished requests
  leave memory there (``CaseSpec.stream``), their sums kept in ``StreamStats``
  (``ipc_bench.analysis.soak`` turns them into the case summary); ``StepEnds`` and
  ``FinishedRequest`` are what it keeps between flushes.
- ``token_digest`` / ``InOrderDigest``: the correctness oracle's digest of every
  request's output token ids.
- ``request_record`` / ``record_requests``: per-request records (latencies on a timed
  clock) at the end of a case.
- ``GcCounter``: garbage collections of this process.
"""

from __future__ import annotations

import gc
import hashlib
import os
import tempfile
import time
from array import array
from typing import Any, Callable, Optional, Protocol

import numpy as np

from ipc_bench.engine.scheduler import RequestStatus, Scheduler
from ipc_bench.harness.signals import deferred, unraisable
from ipc_bench.harness.spec import SCHED_COLUMNS, CaseResult, CaseSpec
from ipc_bench.wire.control import no_beat

#: How often ``StepFlusher`` writes the running case's rows, in seconds.
FLUSH_INTERVAL_S = 1.0

_C = {name: i for i, name in enumerate(SCHED_COLUMNS)}
_NAN = float("nan")


class StreamStats:
    """Running sums over a streamed case's per-step rows, fed one chunk at a time.

    Totals over *counted* rows (what ``analysis.summary.summarize_case`` averages) and, per
    chunk (one flush window), the bytes of pure-decode steps for the drift figures
    (40 bytes a window). Per-request latencies (``add_request``) go to scratch files,
    not memory: three float64 per request (TTFT, TPOT, E2E in seconds; NaN where a
    request has none), and one per gap between two of its tokens (ITL, seconds), read
    back by ``latencies_s``.
    """

    LATENCIES = ("ttft_s", "tpot_s", "e2e_s")
    #: What ``latencies_s`` reads back: ``LATENCIES`` and the gaps, ``itl_s``.
    ALL_LATENCIES = LATENCIES + ("itl_s",)

    _SUM_COLUMNS = ("num_output_tokens", "step_ns", "num_reqs", "s2r_payload_bytes",
                    "r2s_payload_bytes", "sched_ns", "build_ns", "encode_ns", "send_ns",
                    "wait_ns", "decode_ns", "update_ns", "sched_cpu_ns", "gc_collections",
                    "gc_ns")

    def __init__(self) -> None:
        self.num_total_steps = 0
        self.num_warmup_steps = 0
        self.num_counted_steps = 0
        self.sums = {k: 0 for k in self._SUM_COLUMNS}
        self.s2r_bytes_total = 0
        self.r2s_bytes_total = 0
        # tokens scheduled over every row and over the warm-up rows
        # (``summary.warmup_token_share`` of a case kept whole)
        self.scheduled_tokens_total = 0
        self.scheduled_tokens_warmup = 0
        # one entry per chunk: end time (s), decode steps, their requests, their bytes
        self.win_t_s = array("d")
        self.win_decode_steps = array("q")
        self.win_decode_reqs = array("q")
        self.win_decode_s2r = array("q")
        self.win_decode_r2s = array("q")
        self._latencies = tempfile.TemporaryFile()  # removed when closed or collected
        self._itl = tempfile.TemporaryFile()
        self.num_requests = 0
        self.num_finished = 0
        self.num_rejected = 0
        self.num_cut_at_max_model_len = 0
        self.output_tokens_all = 0
        # a timed replay's pace (``analysis.pace``): over every row, warm-up included,
        # the requests left waiting summed and the rows with one left waiting; the
        # latest intended arrival of a request (s, replay clock)
        self.num_waiting_total = 0
        self.num_waiting_steps = 0
        self.last_arrival_s: Optional[float] = None

    def add_rows(self, rows) -> None:
        """Fold a chunk of rows in (one flush window): ``SCHED_COLUMNS`` tuples, or an
        int64 array ``[n, len(SCHED_COLUMNS)]``."""
        if len(rows) == 0:
            return
        a = np.asarray(rows, dtype=np.int64)
        self.num_total_steps += len(a)
        self.num_warmup_steps += int(a[:, _C["warmup"]].sum())
        counted = a[:, _C["counted"]] == 1
        c = a[counted]
        self.num_counted_steps += len(c)
        for k in self._SUM_COLUMNS:
            self.sums[k] += int(c[:, _C[k]].sum())
        tokens = a[:, _C["num_scheduled_tokens"]]
        self.scheduled_tokens_total += int(tokens.sum())
        self.scheduled_tokens_warmup += int(tokens[a[:, _C["warmup"]] == 1].sum())
        self.s2r_bytes_total += int(a[:, _C["s2r_payload_bytes"]].sum())
        self.r2s_bytes_total += int(a[:, _C["r2s_payload_bytes"]].sum())
        waiting = a[:, _C["num_waiting"]]
        self.num_waiting_total += int(waiting.sum())
        self.num_waiting_steps += int((waiting > 0).sum())
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
        self.num_cut_at_max_model_len += cut_at_max_model_len(record)
        self.output_tokens_all += int(record.get("num_output_tokens") or 0)
        if record.get("arrival_s") is not None:
            self.last_arrival_s = max(self.last_arrival_s or 0.0, float(record["arrival_s"]))
        if record.get("ttft_s") is not None or record.get("e2e_s") is not None:
            self._latencies.write(array("d", [
                _NAN if record.get(name) is None else record[name]
                for name in self.LATENCIES]).tobytes())
        if record.get("itl_s"):
            self._itl.write(array("d", record["itl_s"]).tobytes())

    def latencies_s(self, name: str) -> np.ndarray:
        """Every request's ``name`` latency so far (one of ``ALL_LATENCIES``), float64
        seconds in the order the requests were added, those without one left out;
        ``itl_s``: every gap between two steps that gave a request tokens (one per
        token without drafts: ``request_record``), request after request."""
        f = self._itl if name == "itl_s" else self._latencies
        f.flush()
        f.seek(0)
        values = np.fromfile(f, dtype=np.float64)
        f.seek(0, os.SEEK_END)
        if name == "itl_s":
            return values
        column = values.reshape(-1, len(self.LATENCIES))[:, self.LATENCIES.index(name)]
        return column[~np.isnan(column)]


class GcCounter:
    """Counts garbage collections of this process (``gc.callbacks``): ``count``, the
    collections started, and ``ns``, the time spent in those that ended, from the
    callback's ``start`` to its ``stop`` (``time.perf_counter_ns``: the collection,
    with any callback registered after this one; a few hundred ns each); ``close()``
    unregisters it. The clock is read only in a collection: a step that starts none
    pays an attribute read for each figure."""

    def __init__(self) -> None:
        self.count = 0
        self.ns = 0
        self._t0 = 0
        gc.callbacks.append(self._on_gc)

    @unraisable  # an exception raised here would be printed and dropped
    def _on_gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self.count += 1
            self._t0 = time.perf_counter_ns()
        elif self._t0:  # a stop whose start this counter saw
            self.ns += time.perf_counter_ns() - self._t0
            self._t0 = 0

    def close(self) -> None:
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)


def _digest_bytes(index: int, out: list[int]) -> bytes:
    return (np.array([index, len(out)], dtype="<i8").tobytes()
            + np.asarray(out, dtype="<i8").tobytes())


def cut_at_max_model_len(record: dict[str, Any]) -> bool:
    """Whether a request's record (``request_record``) finished before its
    ``max_tokens`` (the trace's ``GeneratedTokens``): ``max_model_len`` stopped it."""
    return (record.get("finish_reason") == "length"
            and (record.get("num_output_tokens") or 0) < (record.get("max_tokens") or 0))


def token_digest(requests, beat: Callable[[], None] = no_beat) -> str:
    """sha256 over each request's output token ids, in workload index order.

    Each request contributes its index, its output count and its ids (int64 LE), so
    a token moved between requests changes the digest. ``beat()`` after each request
    (``wire.control.Heartbeat.beat``: its cost grows with the case while the runner
    may wait).
    """
    h = hashlib.sha256()
    for req in sorted(requests, key=lambda r: r.index):
        h.update(_digest_bytes(req.index, req.output_token_ids))
        beat()
    return h.hexdigest()


class InOrderDigest:
    """``token_digest`` computed as requests finish, in any order: each request's bytes
    wait until every lower index is in, then go into the hash. Requests finish about
    in arrival order, so little waits. ``hexdigest()`` equals ``token_digest`` of the
    same requests."""

    def __init__(self) -> None:
        self._h = hashlib.sha256()
        self._next = 0
        self._waiting: dict[int, bytes] = {}

    def add(self, index: int, out: list[int]) -> None:
        self._waiting[index] = _digest_bytes(index, out)
        while self._next in self._waiting:
            self._h.update(self._waiting.pop(self._next))
            self._next += 1

    def hexdigest(self) -> str:
        h = self._h.copy()
        for index in sorted(self._waiting):  # gaps: indexes that never arrived
            h.update(self._waiting[index])
        return h.hexdigest()


class FinishedRequest:
    """What a request's record needs of a finished ``scheduler.Request``, without its
    token ids: a streamed case keeps this from the step the request finishes to the
    next flush, and drops the request itself at once."""

    __slots__ = ("index", "req_id", "num_prompt_tokens", "num_tokens", "max_tokens",
                 "arrival_step", "first_scheduled_step", "first_token_step", "finish_step",
                 "finish_reason", "num_preemptions", "token_steps")

    def __init__(self, r):
        for name in self.__slots__:
            setattr(self, name, getattr(r, name))


#: Rows ``StepEnds.of_rows`` reads between two beats (some 4 ms of work).
STEP_ENDS_CHUNK_ROWS = 4096


class StepEnds:
    """End time of each scheduler step, for the latencies of request records: step
    numbers (int64, increasing) and their ends (float64 seconds since the case's
    start), kept as two arrays rather than a Python object per step."""

    def __init__(self, steps=(), ends_s=()):
        self.steps = np.asarray(steps, dtype=np.int64)
        self.ends_s = np.asarray(ends_s, dtype=np.float64)

    @classmethod
    def of_rows(cls, rows, beat: Callable[[], None] = no_beat) -> "StepEnds":
        """From ``SCHED_COLUMNS`` rows (tuples or an int64 array), in step order, read
        ``STEP_ENDS_CHUNK_ROWS`` rows at a time with ``beat()`` after each chunk
        (``wire.control.Heartbeat.beat``: about 1 us per row, while the runner may
        wait)."""
        steps, ends_s = [], []
        for i in range(0, len(rows), STEP_ENDS_CHUNK_ROWS):
            a = np.asarray(rows[i:i + STEP_ENDS_CHUNK_ROWS],
                           dtype=np.int64).reshape(-1, len(SCHED_COLUMNS))
            steps.append(a[:, _C["step"]])
            ends_s.append(a[:, _C["t_end_ns"]] / 1e9)
            beat()
        if not steps:
            return cls()
        return cls(np.concatenate(steps), np.concatenate(ends_s))

    def __len__(self) -> int:
        return len(self.steps)

    def extend(self, other: "StepEnds") -> None:
        """Append later steps."""
        self.steps = np.concatenate([self.steps, other.steps])
        self.ends_s = np.concatenate([self.ends_s, other.ends_s])

    def drop_before(self, step: int) -> None:
        """Forget the steps before ``step``."""
        i = int(np.searchsorted(self.steps, step))
        self.steps, self.ends_s = self.steps[i:].copy(), self.ends_s[i:].copy()

    def times(self, steps) -> list[float]:
        """End times of ``steps`` (non-decreasing: a step once per token it gave) that
        are known, in order."""
        if not len(steps) or not len(self.steps):
            return []
        s = np.asarray(steps, dtype=np.int64)
        i = np.minimum(np.searchsorted(self.steps, s), len(self.steps) - 1)
        return self.ends_s[i[self.steps[i] == s]].tolist()


def request_record(r, step_ends: StepEnds, arrival_s: dict[int, float],
                   speedup: Optional[float]) -> dict[str, Any]:
    """One request's record; with a timed clock also latencies in seconds of wall time.

    ``r``: a ``scheduler.Request`` or a ``FinishedRequest``.
    ``step_ends``: end of each scheduler step, seconds since the case's start. With
    ``t_i`` the end of the step that sampled output token i (n tokens), ``s_1 < ... <
    s_m`` the distinct ends of the m steps that gave the request a token (m = n without
    drafts; fewer where a step accepted drafts: its tokens share its end) and ``a`` the
    request's intended arrival (trace time / speedup, so queueing counts), in seconds:
    ``ttft_s`` = t_1 - a, ``e2e_s`` = t_n - a, ``tpot_s`` = (e2e_s - ttft_s) / (n - 1)
    (``None`` for a one-token request), ``itl_s`` = [s_2 - s_1, ..., s_m - s_(m-1)]: one
    gap per step after the first, as vLLM streams a step's tokens in one chunk and
    benchmark_serving counts a gap per chunk. These are vLLM's benchmark_serving
    definitions (``metrics.LATENCY_MEANINGS``), taken in the engine, not at a client.
    """
    rec = dict(index=r.index, req_id=r.req_id, num_prompt_tokens=r.num_prompt_tokens,
               # (0 for a rejected prompt that was never built: it has no token ids at all)
               num_output_tokens=max(r.num_tokens - r.num_prompt_tokens, 0),
               max_tokens=r.max_tokens, arrival_step=r.arrival_step,
               first_scheduled_step=r.first_scheduled_step,
               first_token_step=r.first_token_step, finish_step=r.finish_step,
               finish_reason=r.finish_reason or "", preemptions=r.num_preemptions)
    if speedup is not None:
        arrive = arrival_s.get(r.index, 0.0) / speedup
        times = step_ends.times(r.token_steps)
        rec["arrival_s"] = arrive
        rec["ttft_s"] = times[0] - arrive if times else None
        rec["e2e_s"] = times[-1] - arrive if times else None
        rec["tpot_s"] = ((times[-1] - times[0]) / (len(times) - 1)
                         if len(times) > 1 else None)
        # A step's tokens share its end: one gap per step, not one per token.
        ends = step_ends.times(list(dict.fromkeys(r.token_steps)))
        rec["itl_s"] = [b - a for a, b in zip(ends, ends[1:])]
    return rec


def record_requests(result: CaseResult, sched: Scheduler, arrival_s: dict[int, float],
                    speedup: Optional[float], flusher: Optional["StepFlusher"] = None,
                    records: bool = True, beat=no_beat) -> None:
    """At the end of a case, however it ended: the token digest, the per-request
    records (a streamed case: the last flush, its running sums; none unless
    ``records``) and prompt lengths. ``beat()`` between these pieces, whose cost grows
    with the case (``wire.control.Heartbeat.beat``: the runner may be waiting)."""
    if not records:
        result.token_digest = token_digest(sched.requests.values(), beat)
    elif flusher is not None and flusher.stream:
        flusher.flush(sched, result, arrival_s, speedup, final=True)
        beat()
        result.token_digest = flusher.digest.hexdigest()
        result.stream_stats = flusher.stats
    else:
        result.token_digest = token_digest(sched.requests.values(), beat)
        # Step end times only for latencies (a timed clock): built from every row, they
        # would cost about 1 us per step of the case for nothing.
        t_end = (StepEnds.of_rows(result.sched_rows, beat) if speedup is not None
                 else StepEnds())
        result.requests = []
        for r in sorted(sched.requests.values(), key=lambda r: r.index):
            result.requests.append(request_record(r, t_end, arrival_s, speedup))
            beat()
    beat()
    result.prompt_lens = {r.req_id: r.num_prompt_tokens for r in sched.requests.values()}


class CaseSink(Protocol):
    """Where a case's records go while it runs (``run_folder.RunWriter`` implements it)."""

    def partial_steps(self, spec: CaseSpec, rows: list[tuple]) -> None:
        """Scheduler rows of the running case so far (a copy, replaced when it ends)."""

    def stream_steps(self, spec: CaseSpec, rows) -> None:
        """Final scheduler rows of a streamed case (no runner columns): an iterable of
        ``SCHED_COLUMNS`` sequences of ints, read once."""

    def stream_requests(self, spec: CaseSpec, records: list[dict]) -> None:
        """Final per-request records of a streamed case."""

    def stream_rss(self, spec: CaseSpec, samples: list[tuple]) -> None:
        """Memory samples in ``memory.SAMPLE_COLUMNS`` order."""


class StepFlusher:
    """Writes the running case's records every ``interval_s``, between steps.

    The scheduler loop calls ``due(t_ns)`` after each step, outside every timed
    segment (one comparison), and ``flush`` when it is due. Plain cases: the rows so
    far are appended to the sink's partial copy and stay in memory (the runner's
    columns arrive at the end and complete them). Streamed cases
    (``CaseSpec.stream``): rows and the records of finished requests go to their
    final files and leave memory, the token digest is kept in order as requests
    finish (``InOrderDigest``) and ``recording.StreamStats`` keeps the sums the summary
    needs. Between flushes a streamed case holds no Python object per step or per
    finished request: the loop records rows through ``record`` (packed int64) and
    hands finished requests to ``release_finished`` (which drops them from the
    scheduler at once); step end times for latencies are arrays (``StepEnds``). Held
    for a second, a Python tuple per row and the token ids of every request finished
    in that second made each process's allocator keep a second's worth of memory at
    a time, scattered among long-lived objects, and return little of it. A flush of N rows costs about 2 us per row on this machine's CPU, spent
    between two steps: the runner's idle time of the next step includes it.

    If this process is killed with SIGKILL, at most the last ``interval_s`` of rows
    is lost; every other way out (exception, SIGINT, SIGTERM) writes all of them. A
    file a flush appends to that was removed or replaced under the run ends it (the
    sink's ``RunFolderError``: ``run_folder.append_csv``'s ``same_as``, checked with
    the ``fstat`` the append takes anyway, here between steps like the flush itself).
    """

    def __init__(self, spec: CaseSpec, sink: Optional[CaseSink],
                 interval_s: Optional[float] = None, rss_source=None):
        self.spec = spec
        self.sink = sink
        self.stream = spec.stream
        self.interval_ns = int((FLUSH_INTERVAL_S if interval_s is None else interval_s) * 1e9)
        self.next_ns = 0
        self.n_partial = 0
        self.rss_source = rss_source  # callable(first) -> samples number first onwards
        self.n_rss = 0
        self.stats = StreamStats() if self.stream else None
        self.digest = InOrderDigest() if self.stream else None
        self.step_ends = StepEnds()  # streamed: of the steps live requests ran in
        # Streamed: the rows since the last flush, packed as int64 (SCHED_COLUMNS per
        # row), so no row holds Python objects for a flush interval (see ``record``),
        # and the requests finished since then, without their token ids.
        self._packed = array("q")
        self._finished: list[FinishedRequest] = []

    @property
    def record(self):
        """What the loop calls with each step's row: streamed, ``extend`` of the packed
        buffer (the row's tuple and ints are freed at once, so the allocator reuses
        the same memory every step instead of holding a second's worth of rows);
        else ``None`` (the loop appends to ``CaseResult.sched_rows``)."""
        return self._packed.extend if self.stream else None

    def start(self, t_ns: int) -> None:
        self.next_ns = t_ns + self.interval_ns

    def flush(self, sched: Scheduler, result: CaseResult, arrival_s: dict[int, float],
              speedup: Optional[float], final: bool = False) -> None:
        """Write what is new; ``final``: also every request still live (end of case)."""
        with deferred():
            if self.stream:
                self._flush_stream(sched, result, arrival_s, speedup, final)
            elif self.sink is not None and not final:
                rows = result.sched_rows
                if len(rows) > self.n_partial:
                    self.sink.partial_steps(self.spec, rows[self.n_partial:])
                    self.n_partial = len(rows)
            self.next_ns = time.perf_counter_ns() + self.interval_ns

    @property
    def num_pending_rows(self) -> int:
        """Streamed: rows recorded since the last flush (packed)."""
        return len(self._packed) // len(SCHED_COLUMNS)

    @property
    def num_pending_requests(self) -> int:
        """Streamed: requests released since the last flush, awaiting their records."""
        return len(self._finished)

    def release_finished(self, sched: Scheduler, finished) -> None:
        """Streamed cases, called by the loop with the requests that finished this
        step: their digest bytes and a ``FinishedRequest`` are kept and they leave
        ``sched.requests`` now, so their token ids are freed at once rather than at
        the next flush (as vLLM's scheduler frees a finished request)."""
        for r in finished:
            self.digest.add(r.index, r.output_token_ids)
            self._finished.append(FinishedRequest(r))
            del sched.requests[r.req_id]

    def _take_rows(self, result: CaseResult) -> np.ndarray:
        """The rows since the last flush, int64 ``[n, len(SCHED_COLUMNS)]``: the packed
        buffer's, then any the loop appended to ``result.sched_rows``; both emptied
        (the same objects: the loop holds their bound methods)."""
        packed = np.frombuffer(self._packed, dtype=np.int64).reshape(-1, len(SCHED_COLUMNS))
        rows = packed.copy()
        del packed  # release the buffer export before the buffer is emptied
        del self._packed[:]
        if result.sched_rows:
            rows = np.concatenate([rows, np.asarray(result.sched_rows, dtype=np.int64)])
            del result.sched_rows[:]
        return rows

    def _flush_stream(self, sched, result, arrival_s, speedup, final) -> None:
        chunk = self._take_rows(result)
        if len(chunk):
            self.stats.add_rows(chunk)
            if speedup is not None:  # latencies: end time of each step
                self.step_ends.extend(StepEnds.of_rows(chunk))
            if self.sink is not None:  # one row at a time: no burst of Python ints
                self.sink.stream_steps(self.spec, (row.tolist() for row in chunk))
        done = [r for r in sched.requests.values()
                if final or r.status in (RequestStatus.FINISHED, RequestStatus.REJECTED)]
        self.release_finished(sched, done)
        done, self._finished = self._finished, []
        done.sort(key=lambda r: r.index)
        records = [request_record(r, self.step_ends, arrival_s, speedup) for r in done]
        for rec in records:
            self.stats.add_request(rec)
            arrival_s.pop(rec["index"], None)
        if records and self.sink is not None:
            self.sink.stream_requests(self.spec, records)
        if self.rss_source is not None and self.sink is not None:
            samples = self.rss_source(self.n_rss)
            if samples:
                self.sink.stream_rss(self.spec, samples)
                self.n_rss += len(samples)
        # Step end times are needed until every live request has its record.
        live_first = min((r.arrival_step for r in sched.requests.values()), default=None)
        if live_first is None:
            self.step_ends = StepEnds()
        elif len(chunk):
            self.step_ends.drop_before(live_first)
