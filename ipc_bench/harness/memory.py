"""Memory of both processes while a case runs: ``RssSampler`` (a background thread).

``VmRSS`` also counts mapped file pages (shared libraries), which the kernel drops
under memory pressure from anything else on the machine; ``RssAnon`` (heap, numpy
buffers) is what a leak grows, so both are kept (``ipc_bench.analysis.soak`` judges
them). The sampler sleeps between samples and never touches the loop, so the hot
path is unchanged.
"""

from __future__ import annotations

import ctypes
import fnmatch
import gc
import os
import sys
import tempfile
import threading
import time
import tracemalloc
from array import array
from typing import Any, Optional, Sequence

from ipc_bench.engine.config import ConfigError

#: Columns of ``RssSampler`` samples of (scheduler, runner), as in ``rss.csv``.
SAMPLE_COLUMNS = ("t_s", "sched_rss_bytes", "sched_anon_bytes", "runner_rss_bytes",
                  "runner_anon_bytes", "sched_py_blocks")
#: Environment variable that turns ``HeapReport`` on: ``stats`` or frames per traceback.
HEAP_REPORT_ENV = "IPC_BENCH_HEAP_REPORT"
#: Set by the scheduler for its runner: the file the runner writes its heap report to.
HEAP_REPORT_OUT_ENV = "IPC_BENCH_HEAP_REPORT_OUT"
# Left out of the snapshots: tracemalloc's own blocks and those of the filtering itself.
_HEAP_FILTERS = (tracemalloc.Filter(False, tracemalloc.__file__, all_frames=True),
                 tracemalloc.Filter(False, fnmatch.__file__, all_frames=True),
                 tracemalloc.Filter(False, "<frozen importlib._bootstrap>"),
                 tracemalloc.Filter(False, "<unknown>"))


def freeze_heap() -> bool:
    """``gc.freeze()``: later collections skip every object alive now (vLLM's
    ``freeze_gc_heap``, after its collection). Returns whether the heap was unfrozen
    before (``gc.get_freeze_count() == 0``): only then does this call own the freeze and
    ``thaw_heap`` undo it. A heap its caller froze first (a program that embeds the
    harness, a Jupyter kernel, or the test suite, which freezes its own heap around each
    test) stays frozen: ``gc.unfreeze`` cannot tell the caller's objects from the case's,
    so the case's stay frozen with the caller's until the caller unfreezes."""
    owned = gc.get_freeze_count() == 0
    gc.freeze()
    return owned


def thaw_heap(owned: bool) -> None:
    """``gc.unfreeze()`` if ``owned`` (``freeze_heap``'s answer); else nothing."""
    if owned:
        gc.unfreeze()



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


class RssSampler:
    """Samples the RSS of ``pids`` every ``interval_s`` seconds in a daemon thread.

    ``samples``: one tuple per sample, ``(t_s, VmRSS of pids[0], RssAnon of pids[0],
    VmRSS of pids[1], RssAnon of pids[1], ..., py_blocks)`` (bytes; ``t_s`` from
    ``start()``; a gone process reads ``None``), where ``py_blocks`` is
    ``sys.getallocatedblocks()`` of this process: live Python allocations, which tell a
    leak (they grow) from allocator fragmentation (RSS grows, they do not). The first
    sample is taken at once. Samples are kept packed (8 bytes per value, some 50 bytes
    a sample for two processes) and made into tuples when read (``samples_since``).
    """

    def __init__(self, pids: Sequence[int], interval_s: float = 1.0):
        if not interval_s > 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        self.pids = list(pids)
        self.interval_s = interval_s
        self._width = 2 + 2 * len(self.pids)
        self._values = array("d")  # _width values per sample; nan: not read
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._t0 = 0.0

    def start(self) -> "RssSampler":
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def _run(self) -> None:
        nan = float("nan")
        while True:
            t = time.monotonic() - self._t0
            row = (t, *(nan if v is None else v for p in self.pids
                        for v in read_memory_bytes(p)), sys.getallocatedblocks())
            self._values.extend(row)  # one call: readers never see half a sample
            if self._stop.wait(self.interval_s):
                return

    def __len__(self) -> int:
        return len(self._values) // self._width

    def samples_since(self, first: int) -> list[tuple]:
        """Samples number ``first`` onwards, as tuples (see the class docstring)."""
        w = self._width
        values = self._values[first * w:len(self) * w]
        return [(values[i], *(None if v != v else int(v) for v in values[i + 1:i + w]))
                for i in range(0, len(values), w)]

    @property
    def samples(self) -> list[tuple]:
        """Every sample so far, as tuples."""
        return self.samples_since(0)

    def stop(self) -> None:
        """Stop and join the thread (takes at most one read of /proc)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5.0)


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


_PYMALLOC_FIELDS = {
    "# arenas allocated current": "pymalloc_arenas",
    "# arenas highwater mark": "pymalloc_arenas_highwater",
    "# bytes in allocated blocks": "pymalloc_used_bytes",
    "# bytes in available blocks": "pymalloc_free_block_bytes",
}


def allocator_stats() -> dict[str, int]:
    """Where this process's heap memory sits, in bytes (arena counts as counts).

    glibc (``mallinfo2``, glibc >= 2.33): ``malloc_heap_bytes`` (brk/arena space),
    ``malloc_used_bytes``, ``malloc_free_bytes`` (free but held: fragmentation),
    ``malloc_mmap_bytes`` (large blocks mapped on their own). pymalloc (parsed from
    ``sys._debugmallocstats()``, CPython): ``pymalloc_arenas`` (1 MiB each, returned to
    the OS only when wholly empty), ``pymalloc_arenas_highwater``,
    ``pymalloc_used_bytes`` (live small objects), ``pymalloc_free_block_bytes`` and
    ``pymalloc_unused_pool_bytes`` (held inside arenas: fragmentation). A figure that
    cannot be read is left out.
    """
    out: dict[str, int] = {}
    try:
        info = ctypes.CDLL(None).mallinfo2
        info.restype = _Mallinfo2
        m = info()
        out.update(malloc_heap_bytes=m.arena, malloc_used_bytes=m.uordblks,
                   malloc_free_bytes=m.fordblks, malloc_mmap_bytes=m.hblkhd)
    except (OSError, AttributeError):
        pass
    for line in _debugmallocstats().splitlines():
        key, _, value = line.partition("=")
        value = value.strip().replace(",", "")
        if not value.isdigit():
            continue
        if key.strip() in _PYMALLOC_FIELDS:
            out[_PYMALLOC_FIELDS[key.strip()]] = int(value)
        elif "unused pools *" in key:
            out["pymalloc_unused_pool_bytes"] = int(value)
    return out


def malloc_trim() -> bool:
    """Ask glibc to return the free memory it holds to the OS (``malloc_trim(0)``:
    the top of each heap and whole free pages inside it). Returns whether the call
    was made (False off glibc)."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        return False
    return True


def _debugmallocstats() -> str:
    """The text ``sys._debugmallocstats()`` writes to file descriptor 2 ("" when the
    interpreter has none)."""
    if not hasattr(sys, "_debugmallocstats"):
        return ""
    with tempfile.TemporaryFile() as tmp:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(tmp.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        return tmp.read().decode("ascii", "replace")


class HeapReport:
    """Where a process's heap went between the end of warm-up and the end of a case.

    Off unless the environment variable ``IPC_BENCH_HEAP_REPORT`` is set:

    - ``stats``: at each mark, ``VmRSS`` / ``RssAnon`` and ``allocator_stats()``
      (glibc and pymalloc): memory held by live objects versus memory the allocators
      keep after it was freed. Costs a few milliseconds per mark, nothing per step.
    - a number of frames (e.g. ``8``): the same, plus ``tracemalloc`` from the start
      of the case, snapshots at both marks and their difference grouped by traceback
      (the ``top`` largest growths). Tracing slows every allocation several times,
      so a traced timed replay falls behind its arrivals and batches differently: use
      a slower ``--trace-speedup``, and do not compare its figures with an untraced
      run. pymalloc's figures are not available while tracing.

    ``start()`` (tracing only), ``mark("warm")``, ``mark("end")`` (stops tracing, then
    calls ``malloc_trim`` and records the figures again as ``end+trim``: what glibc
    held free and gave back), then ``report(title)``: text, sizes in bytes. Mirrors the standard library's
    ``tracemalloc`` snapshot comparison.
    """

    def __init__(self, frames: int = 0, top: int = 25):
        if frames < 0:
            raise ValueError(f"frames must be >= 0, got {frames}")
        self.frames = frames
        self.top = top
        self.snapshots: dict[str, Any] = {}  # mark -> filtered tracemalloc snapshot
        self.figures: dict[str, dict[str, int]] = {}  # mark -> RSS and allocator bytes

    @classmethod
    def from_env(cls) -> Optional["HeapReport"]:
        """``None`` when ``IPC_BENCH_HEAP_REPORT`` is unset or empty; ``stats``: figures
        only; a positive integer: also tracemalloc with that many frames. Raises
        ``ConfigError`` (one line) on anything else."""
        value = os.environ.get(HEAP_REPORT_ENV, "").strip()
        if not value:
            return None
        if value == "stats":
            return cls(0)
        if not value.isdigit() or int(value) < 1:
            raise ConfigError(f"{HEAP_REPORT_ENV} must be 'stats' or a number of frames "
                              f"per traceback, got {value!r}")
        return cls(int(value))

    def start(self) -> "HeapReport":
        """Start tracing (with frames; blocks allocated earlier are not seen)."""
        if self.frames and not tracemalloc.is_tracing():
            tracemalloc.start(self.frames)
        return self

    def mark(self, name: str) -> None:
        """Record the figures (and, tracing, a snapshot) under ``name``; ``"end"``
        stops tracing. A name already recorded is left as it is."""
        if name in self.figures:
            return
        gc.collect()
        figures = dict(zip(("rss_bytes", "anon_bytes"), read_memory_bytes(os.getpid())))
        if tracemalloc.is_tracing():
            figures["traced_bytes"] = tracemalloc.get_traced_memory()[0]
            self.snapshots[name] = tracemalloc.take_snapshot().filter_traces(_HEAP_FILTERS)
        figures.update(allocator_stats())
        self.figures[name] = figures
        if name == "end":
            if tracemalloc.is_tracing():
                tracemalloc.stop()
            # What glibc gives back when asked: free pages it held (fragmentation).
            if malloc_trim():
                self.figures["end+trim"] = dict(zip(("rss_bytes", "anon_bytes"),
                                                    read_memory_bytes(os.getpid())),
                                                **allocator_stats())

    def report(self, title: str) -> str:
        """The figures at each mark (bytes; arenas as counts) and ``end - warm``,
        then (tracing) the growth of
        traced blocks from ``warm`` to ``end``, largest first, one block per traceback
        (``+size B, +count blocks`` then its frames, oldest first)."""
        mode = f"tracemalloc, {self.frames} frames per traceback" if self.frames else "stats"
        lines = [f"== {title}: heap report ({mode})"]
        names = list(self.figures)
        keys = [k for k in self.figures[names[0]]] if names else []
        both = "warm" in self.figures and "end" in self.figures
        lines.append("  " + f"{'figure':28s}" + "".join(f"{n:>16s}" for n in names)
                     + ("   end - warm" if both else ""))
        for k in keys:
            values = [self.figures[n].get(k) for n in names]
            row = "".join(f"{v:>16,}" if v is not None else f"{'-':>16s}" for v in values)
            warm, end = (self.figures.get(n, {}).get(k) for n in ("warm", "end"))
            if both and warm is not None and end is not None:
                row += f" {end - warm:>+13,}"
            lines.append(f"  {k:28s}{row}")
        if self.frames:
            lines.extend(self._traced_growth())
        return "\n".join(lines) + "\n"

    def _traced_growth(self) -> list[str]:
        warm, end = self.snapshots.get("warm"), self.snapshots.get("end")
        if warm is None or end is None:
            return ["  (no traced comparison: the loop ended before warm-up did)"]
        stats = end.compare_to(warm, "traceback")
        lines = [f"  traced blocks, warm -> end: {sum(s.size_diff for s in stats):+,} B in "
                 f"{sum(s.count_diff for s in stats):+,} blocks; top {self.top}:"]
        for s in sorted(stats, key=lambda s: s.size_diff, reverse=True)[:self.top]:
            lines.append(f"  {s.size_diff:+,} B, {s.count_diff:+,} blocks "
                         f"(now {s.size:,} B in {s.count:,})")
            lines.extend(f"      {f.filename}:{f.lineno}" for f in s.traceback)
        return lines


# ======================================================================================
# Memory a run's per-step records need (checked before the first case)

#: Peak memory of a case that keeps its per-step records (every scenario but soak, whose
#: cases stream them: ``CaseSpec.stream``), per step it runs (warm-up included), in
#: bytes: ``STEP_BYTES_SCHEDULER + STEP_BYTES_SCHEDULER_PER_RUNNING * running`` in the
#: scheduler (``bench.py``: its rows, both directions' frames of the counted steps,
#: the requests' token ids, and at the end the runner's report) and the ``RUNNER`` pair
#: in each runner process (its columns and every reply it sent). The floor decodes the
#: counted messages again a chunk of ``FLOOR_CHUNK_STEPS`` at a time (``harness.floor``):
#: one chunk's, however many steps, is ``FLOOR_CHUNK_BYTES_PER_RUNNING``. Each case's records
#: are dropped once its files are written, so repetitions and cases do not add up: the
#: run's peak is its largest case's. Measured as the growth of each process's peak
#: RssAnon (``/proc/PID/status``, read every 20 ms) from ``--steps 5000`` to ``--steps
#: 45000`` at 4 running and from ``--steps 2000`` to ``--steps 6000`` at 256, ``python
#: bench.py --scenario decode-steady --num-running B --steps N --codecs msgpack
#: --no-single-process`` (both policies, floor on), on the 2-core x86-64 development
#: machine (Python 3.11, 24 GB), the median peak of 3 to 6 runs at each point,
#: 2026-12-05: the scheduler 3,198 and 63,049 bytes a step, the runner 1,083 and
#: 32,903, the line through both points rounded up. While the floor decoded every
#: counted message up front, the measurement then gave 4,888 and 186,621, 2,562 and
#: 123,334 (``(2_000, 722, 642, 480)``). See docs/usage.md, "Memory per step".
STEP_BYTES_SCHEDULER = 2_250
STEP_BYTES_SCHEDULER_PER_RUNNING = 238
STEP_BYTES_RUNNER = 580
STEP_BYTES_RUNNER_PER_RUNNING = 127
#: The same four for a case that replays no floor (``--no-floor``, or a scenario whose
#: cases run none: ``CaseSpec.floor`` false), which decodes no counted message again at
#: its end: measured as above with ``--no-floor``, from ``--steps 20000`` to ``--steps
#: 60000`` at 4 running and from ``--steps 1000`` to ``--steps 4000`` at 256: the
#: scheduler 3,180 and 68,110 bytes a step, the runner 1,263 and 32,955, the line
#: through both points rounded up.
STEP_BYTES_NO_FLOOR = (2_200, 260, 760, 126)
#: The floor's decoded messages, bytes per counted step in its chunk per running
#: request, ``(scheduler, each runner process)``: what a counted step held with the
#: floor, when it decoded every counted message up front (``(2_000, 722, 642, 480)``,
#: measured as ``STEP_BYTES_*``), less what it holds without one (``STEP_BYTES_NO_FLOOR``),
#: per running request (the constants' differences, -200 and -118 bytes, dropped): 118
#: kB and 91 kB a step at 256 running, so a chunk of ``FLOOR_CHUNK_STEPS`` (4,096) holds
#: about 480 MB and 370 MB there (``floor_chunk_bytes``).
FLOOR_CHUNK_BYTES_PER_RUNNING = (462, 354)


#: ``--pp N`` cases (scenario ``pp``, which replays no floor, ``--no-floor`` or not), in
#: the requests of a micro-batch (``ceil(num_running / N)``: each step schedules one),
#: bytes a step: the scheduler ``(constant, per request, per stage)`` (it keeps each
#: stage's report), the last stage ``(constant, per request, per other stage)`` (its
#: replies; under ``direct`` every step's sampled-id sends to each other stage, which
#: it keeps until the case ends), each other stage ``(constant, per request)`` (its
#: columns; the hidden states it sent are dropped a window later,
#: ``wire.pp.StageLink.release_hidden``). Measured as ``STEP_BYTES_*``: ``python
#: bench.py --scenario pp --pp N --num-running B --steps S --codecs msgpack
#: --no-single-process`` (send and direct), on the same 2-core machine, ``--steps``
#: 20,000 against 60,000 at 4 running and 4,000 against 8,000 at 256: the scheduler
#: 2,874 and 31,939 bytes a step at N = 2 (micro-batches of 2 and 128), 3,870 and
#: 21,294 at N = 4 (1 and 64); the last stage 1,880 and 17,352 at N = 2, 4,315 at 4
#: running and N = 4 (at 256 its peak stayed its start-up's, 226 MB, until 4,000
#: steps: 11,052 from there to 8,000, a floor); each other stage 902 at 4 running and
#: N = 2, 1,028 at N = 4, at 256 its start-up's peak throughout, so there its RssAnon
#: at the case's end (``IPC_BENCH_HEAP_REPORT=stats``, ``--policies send``, 1,000
#: against 3,000 steps): 3,770. Lines covering every point (intercepts rounded up).
STEP_BYTES_PP_SCHEDULER = (0, 231, 1_628)
STEP_BYTES_PP_LAST_STAGE = (860, 123, 1_120)
STEP_BYTES_PP_OTHER_STAGE = (1_010, 23)
#: ``--num-spec-tokens K`` cases: ``(scheduler, per running, runner, per running)`` as
#: ``STEP_BYTES_*`` at K = 8, with a floor or without (the floor's chunk does not grow
#: with the steps); each draft over 8 adds ``STEP_BYTES_SPEC_PER_DRAFT`` (``(scheduler,
#: runner)`` bytes a step per running request); K of 8 or fewer are estimated at 8's
#: figures (an over-estimate: fewer drafts make smaller messages). Measured as
#: ``STEP_BYTES_*``: ``python bench.py --scenario decode-steady --num-spec-tokens 8
#: --num-running B --steps N --codecs msgpack --no-single-process --no-floor`` (both
#: policies, acceptance 0.7), on the same 2-core machine, ``--steps`` 20,000 against
#: 60,000 at 4 running and 1,000 against 4,000 at 256: the scheduler 3,415 and 150,790
#: bytes a step, the runner 1,576 and 82,820, a line covering both points (intercept
#: rounded up); at 24 drafts and 256 running (1,000 against 3,000 steps) 196,145 and
#: 129,790: 11.1 and 11.5 bytes a draft per running request over 8's, rounded up. (With
#: a floor, measured while it still decoded every counted message up front: 344,952 and
#: 295,177 at 8 drafts and 256 running, 3,339 and 1,378 at 4.)
STEP_BYTES_SPEC = (1_100, 585, 300, 323)
STEP_BYTES_SPEC_PER_DRAFT = (12, 12)
#: The draft count ``STEP_BYTES_SPEC`` were measured at.
SPEC_MEASURED_DRAFTS = 8


def case_steps(case: Any) -> Optional[int]:
    """The steps a case runs that its records keep: ``warmup_steps + counted_steps``
    (the uncounted mixed steps between the counted ones are in the bytes per step),
    capped by ``max_steps``; ``None`` for a case that keeps none (streamed, or the
    ``overhead`` scenario's bare loop, ``instrumentation`` ``"totals"``) or whose
    count is not known before it runs (a trace replay runs until its requests
    finish)."""
    if case.stream or case.counted_steps is None or case.instrumentation == "totals":
        return None
    steps = case.warmup_steps + case.counted_steps
    return steps if case.max_steps is None else min(steps, case.max_steps)


def _running(case: Any) -> int:
    """The case's running requests: its ``num_running`` label, else ``max_num_seqs``."""
    running = case.labels.get("num_running")
    return running if isinstance(running, int) else case.scheduler.max_num_seqs


def _pp_step_bytes(case: Any, local: bool) -> int:
    """``step_bytes`` of a ``--pp`` case (``STEP_BYTES_PP_*``)."""
    pp = case.pp
    batch = -(-_running(case) // pp)
    sched, sched_per, sched_per_stage = STEP_BYTES_PP_SCHEDULER
    total = sched + sched_per * batch + sched_per_stage * pp
    if local:
        last, last_per, last_per_other = STEP_BYTES_PP_LAST_STAGE
        other, other_per = STEP_BYTES_PP_OTHER_STAGE
        total += (last + last_per * batch + last_per_other * (pp - 1)
                  + (pp - 1) * (other + other_per * batch))
    return total


def _lines(case: Any) -> tuple[int, int, int, int]:
    """``(scheduler, per running, runner, per running)`` of a case without ``--pp``:
    the plain figures, or with drafts ``STEP_BYTES_SPEC`` and the drafts over 8."""
    k = case.scheduler.num_spec_tokens
    if not k:
        return ((STEP_BYTES_SCHEDULER, STEP_BYTES_SCHEDULER_PER_RUNNING, STEP_BYTES_RUNNER,
                 STEP_BYTES_RUNNER_PER_RUNNING) if case.floor else STEP_BYTES_NO_FLOOR)
    sched, sched_per, runner, runner_per = STEP_BYTES_SPEC
    more_sched, more_runner = STEP_BYTES_SPEC_PER_DRAFT
    extra = max(0, k - SPEC_MEASURED_DRAFTS)
    return sched, sched_per + extra * more_sched, runner, runner_per + extra * more_runner


def step_bytes(case: Any, remote_runners: bool = False) -> int:
    """Peak bytes a step of ``case`` holds on this machine: the scheduler's share and,
    unless its runners run elsewhere (``remote_runners``, not the single process), each
    runner process's (``--tp`` ranks; ``--pp`` stages: ``STEP_BYTES_PP``, in the
    requests of a micro-batch); the running requests are its ``num_running`` label,
    else its ``max_num_seqs``; a case without a floor holds about a third of what one
    with a floor does (``STEP_BYTES_NO_FLOOR``); one with drafts its own figures
    (``STEP_BYTES_SPEC``)."""
    local = not remote_runners or case.transport == "inproc"
    if case.pp:
        return _pp_step_bytes(case, local)
    running = _running(case)
    sched, sched_per_running, runner, runner_per_running = _lines(case)
    total = sched + sched_per_running * running
    if local:
        total += (case.tp or 1) * (runner + runner_per_running * running)
    return total


def floor_chunk_bytes(case: Any, remote_runners: bool = False,
                      counted: Optional[int] = None) -> int:
    """Peak bytes of ``case``'s floor chunk on this machine: its counted steps
    (``counted`` in their place where given) up to ``FLOOR_CHUNK_STEPS``, times
    ``FLOOR_CHUNK_BYTES_PER_RUNNING`` (the scheduler's and, unless its runners run
    elsewhere, each runner process's), 0 for a case that replays no floor
    (``CaseSpec.floor`` false, the single process, ``--pp``)."""
    if not case.floor or case.pp or case.transport == "inproc" or not case.counted_steps:
        return 0
    sched, runner = FLOOR_CHUNK_BYTES_PER_RUNNING
    per_step = sched + (0 if remote_runners else (case.tp or 1) * runner)
    return _chunk_steps(case, counted) * per_step * _running(case)


def _chunk_steps(case: Any, counted: Optional[int] = None) -> int:
    """The counted steps of ``case``'s largest floor chunk (of ``counted`` steps where
    given)."""
    from ipc_bench.wire.control import FLOOR_CHUNK_STEPS

    return min(case.counted_steps if counted is None else counted, FLOOR_CHUNK_STEPS)


def _room(case: Any, half: int, remote_runners: bool) -> int:
    """Steps, warm-up and counted together, of ``case`` whose records and floor chunk
    fit in ``half`` bytes. The chunk is the case's own (advice for fewer counted steps
    has no larger one), or, where more steps than it counts would fit (a warm-up too
    long for even one step: the advice may move steps from warm-up to counted), that of
    as many counted steps as would fit."""
    per_step = step_bytes(case, remote_runners)
    room = max(0, half - floor_chunk_bytes(case, remote_runners)) // per_step
    if room > (case.counted_steps or 0):
        room = max(0, half - floor_chunk_bytes(case, remote_runners, room)) // per_step
    return room


def _round_down(count: int) -> int:
    """``count`` rounded down to two significant digits (``225,965`` -> ``220,000``;
    under 100 as it is): the steps a refusal advises leave a margin below half the
    memory, which MemAvailable's moves from one run to the next would otherwise cross
    into the over-half warning."""
    if count < 100:
        return count
    scale = 10 ** (len(str(count)) - 2)
    return count // scale * scale


def size_text(num_bytes: float) -> str:
    """``3.2 TB``, ``1.9 GB``, ``512 MB``, ``0.8 MB``, ``33 kB`` (decimal units; kB
    below 0.1 MB, which one decimal of MB would show as 0.0 or 0.1)."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9)):
        if num_bytes >= scale:
            return f"{num_bytes / scale:,.1f} {unit}"
    if num_bytes < 1e5:
        return f"{num_bytes / 1e3:,.0f} kB"
    return f"{num_bytes / 1e6:,.{0 if num_bytes >= 1e7 else 1}f} MB"


def check_step_memory(cases: Sequence[Any], available: Optional[int],
                      remote_runners: bool = False) -> Optional[str]:
    """Before the first case: the peak memory of the run's largest case (``case_steps``
    x ``step_bytes``) against ``available`` (bytes, ``available_memory_bytes``; ``None``:
    no check). Raises ``ConfigError`` (one line: the estimate, the memory available, the
    largest ``--steps`` that fits in half of it, or the most warm-up and counted steps
    together where the warm-up alone does not fit, and the soak scenario for longer runs)
    when it exceeds ``available``; returns a warning
    line (the estimate's share of it) when it exceeds half of it, else ``None``. A case
    with a floor adds its chunk (``floor_chunk_bytes``), which the line names."""
    sized = [(steps * step_bytes(c, remote_runners) + floor_chunk_bytes(c, remote_runners),
              steps, c) for c in cases if (steps := case_steps(c)) is not None]
    if available is None or not sized:
        return None
    need, steps, case = max(sized, key=lambda s: s[0])
    chunk = floor_chunk_bytes(case, remote_runners)
    what = (f"the largest case, {case.case_id} ({steps:,} steps with warm-up), needs "
            f"about {size_text(need)} of memory for its per-step records "
            f"({step_bytes(case, remote_runners):,} bytes a step"
            + (f", and {size_text(chunk)} for its floor's chunk of "
               f"{_chunk_steps(case):,} decoded steps" if chunk else "") + ")")
    have = f"the {size_text(available)} available (MemAvailable)"
    if need > available:
        # advice for half of it: the estimate leaves out each process's own baseline
        # (60-300 MB) and MemAvailable moves from one run to the next
        room = min(_room(c, available // 2, remote_runners) for _, _, c in sized)
        fits = _round_down(min(room - c.warmup_steps for _, _, c in sized))
        room = _round_down(room)
        warm = max(c.warmup_steps for _, _, c in sized)
        if fits >= 1:
            advice = f"--steps {fits:,} or fewer fits in half of it"
        elif room >= 1:  # the warm-up alone is too long
            advice = (f"not even --steps 1 fits in half of it beside the {warm:,} warm-up "
                      f"steps: --warmup-steps plus --steps at most {room:,} fits, or fewer "
                      "running requests, or more memory")
        else:
            advice = ("not even --steps 1 fits in half of it: fewer running requests, or "
                      "more memory")
        raise ConfigError(f"{what}, more than {have}: {advice} (--scenario soak writes "
                          "its steps to disk as it goes and runs as long as asked)")
    if need > available / 2:
        return f"{what}, {100 * need / available:.0f} % of {have}"
    return None
