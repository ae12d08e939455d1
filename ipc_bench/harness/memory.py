"""Memory of both processes while a case runs: ``RssSampler`` (a background thread).

``VmRSS`` also counts mapped file pages (shared libraries), which the kernel drops
under memory pressure from anything else on the machine; ``RssAnon`` (heap, numpy
buffers) is what a leak grows, so both are kept (``ipc_bench.analysis.soak`` judges
them). The sampler sleeps between samples and never touches the loop, so the hot
path is unchanged.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Optional, Sequence

#: Columns of ``RssSampler`` samples of (scheduler, runner), as in ``rss.csv``.
SAMPLE_COLUMNS = ("t_s", "sched_rss_bytes", "sched_anon_bytes", "runner_rss_bytes",
                  "runner_anon_bytes", "sched_py_blocks")



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
