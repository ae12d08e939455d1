"""docs/metrics.md says that sched_cpu_ns is read just outside the step's perf span, so
in the single process it exceeds the step, with the published decode-steady run's
figures."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUMMARY = ROOT / "results" / "published" / "decode-steady" / "decode-steady-r5.summary.json"


def test_metrics_md_says_sched_cpu_can_exceed_the_step():
    cases = [c for c in json.loads(SUMMARY.read_text())["cases"] if c["codec"] == "none"]
    over = [c for c in cases if c["sched_cpu_ns_per_step"] > c["step_ns_mean"]]
    assert (len(over), len(cases)) == (39, 40)
    (one,) = [c for c in cases if c["case_id"] == "num_running=1/cached/none#0"]
    assert (f"{one['sched_cpu_ns_per_step'] / 1e3:.2f}", f"{one['step_ns_mean'] / 1e3:.2f}"
            ) == ("21.74", "20.86")
    docs = re.sub(r"\s+", " ", (ROOT / "docs" / "metrics.md").read_text())
    assert ("Its two clock reads sit just outside the step's `perf_counter` span (the "
            "first CPU read before the step's start, the last after its end: "
            "`scheduler_loop`), so it covers those reads too and can exceed `step_ns` by a "
            "microsecond or two where the thread is busy throughout (the single process: "
            "39 of the published decode-steady run's 40 single-process cases, e.g. 21.74 µs "
            "of CPU against a 20.86 µs step)") in docs
